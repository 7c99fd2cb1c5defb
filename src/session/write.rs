//! The run file writer on a thread of its own, so draining never waits for SQLite (a commit or
//! a WAL checkpoint can take tens of milliseconds, long enough for a busy ring to fill).

use std::sync::atomic::{
    AtomicI64, AtomicU64,
    Ordering::{Relaxed, Release},
};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{anyhow, Result};

use crate::model::{
    CounterValue, EventRecord, ProcessStats, RunMeta, SourceStatus, Span, ThreadInfo,
};
use crate::sample::Batch;
use crate::store::{DiskFull, RunWriter};

/// One write, applied in order. Ids are the store's: 0, 1, 2, ... per kind, in the order added.
pub enum Write {
    Stage(String),
    CounterName(String),
    EventName(String),
    Thread(ThreadInfo),
    ThreadDropped(u32, u64),
    Spans(Vec<Span>),
    Counters(Vec<CounterValue>),
    Events(Vec<EventRecord>),
    Processes(Vec<ProcessStats>),
    SampleSources(Vec<SourceStatus>),
    Meta(Box<RunMeta>),
    /// Commits what was written; `drained_mono_ns` is the CLOCK_MONOTONIC ns at which the
    /// last drain before it began (0 when none counts: before the first, or spilling).
    Commit {
        drained_mono_ns: i64,
    },
}

pub struct WriterThread {
    sender: Option<Sender<Write>>,
    /// Telemetry from the sampler's thread: written when the writer wakes for anything else
    /// (a commit, every 500 ms, at the latest), so a batch alone never wakes it.
    samples: Sender<Batch>,
    /// Span batches the writer is done with, emptied, their memory kept for the next ones.
    spare_spans: Receiver<Vec<Span>>,
    /// Span batches sent and not handed back yet.
    spans_in_flight: usize,
    handle: Option<JoinHandle<Result<RunWriter>>>,
    run_id: i64,
    progress: Arc<Committed>,
    /// The error the writer stopped on, said again by every later call: a second failure
    /// must never hide the first ("already stopped" instead of "the disk is full").
    failure: Option<Failure>,
}

/// What is safely in the file: spans committed, when the last commit was, and how far
/// back the file is complete.
#[derive(Debug, Default)]
pub struct Committed {
    pub spans: AtomicU64,
    /// CLOCK_MONOTONIC ns of the last successful commit; 0 before the first.
    pub at_mono_ns: AtomicI64,
    /// CLOCK_MONOTONIC ns at which the drain began whose records the last commit holds:
    /// every record in a ring before then is in the file (`--live` prints an interval once
    /// this passes its end). Set after the commit, with Release; 0 before the first, and
    /// left as it was while spilling.
    pub drained_mono_ns: AtomicI64,
}

#[derive(Clone)]
enum Failure {
    DiskFull(DiskFull),
    Other(String),
}

impl Failure {
    fn of(e: &anyhow::Error) -> Failure {
        match e.downcast_ref::<DiskFull>() {
            Some(full) => Failure::DiskFull(full.clone()),
            None => Failure::Other(format!("{e:#}")),
        }
    }

    fn error(&self) -> anyhow::Error {
        match self {
            Failure::DiskFull(full) => anyhow::Error::new(full.clone()),
            Failure::Other(message) => anyhow!("{message}"),
        }
    }
}

impl WriterThread {
    pub fn start(mut writer: RunWriter) -> WriterThread {
        let run_id = writer.run_id();
        let (sender, receiver) = channel::<Write>();
        let (hand_back, spare_spans) = channel::<Vec<Span>>();
        let (samples, queued_samples) = channel::<Batch>();
        let progress = Arc::new(Committed::default());
        let committed = Arc::clone(&progress);
        let handle = std::thread::Builder::new()
            .name("framelab-writer".into())
            .spawn(move || {
                let mut pending_spans = 0u64;
                for write in receiver {
                    // Before the write that woke it: a commit holds every batch sent before
                    // it, and the sources' final statuses follow their last readings.
                    write_samples(&mut writer, &queued_samples)?;
                    match write {
                        Write::Spans(mut spans) => {
                            writer.spans(&spans)?;
                            pending_spans += spans.len() as u64;
                            // Back to the drain for its next batch: a batch of fresh memory
                            // is a page fault every 128 spans on the thread reading the rings.
                            spans.clear();
                            let _ = hand_back.send(spans);
                        }
                        Write::Commit { drained_mono_ns } => {
                            writer.commit()?;
                            committed.spans.fetch_add(pending_spans, Relaxed);
                            committed
                                .at_mono_ns
                                .store(framelab_probe::monotonic_ns() as i64, Relaxed);
                            if drained_mono_ns > 0 {
                                committed.drained_mono_ns.store(drained_mono_ns, Release);
                            }
                            pending_spans = 0;
                        }
                        write => apply(&mut writer, write)?,
                    }
                }
                // Sent after the last write: `finish` commits them.
                write_samples(&mut writer, &queued_samples)?;
                Ok(writer)
            })
            .expect("spawning the writer thread");
        WriterThread {
            sender: Some(sender),
            samples,
            spare_spans,
            spans_in_flight: 0,
            handle: Some(handle),
            run_id,
            progress,
            failure: None,
        }
    }

    /// An emptied batch the writer handed back, if one is waiting: the next batch's memory.
    pub fn spare_spans(&mut self) -> Option<Vec<Span>> {
        let spare = self.spare_spans.try_recv().ok();
        self.spans_in_flight -= usize::from(spare.is_some());
        spare
    }

    /// Batches of spans sent and not yet handed back.
    pub fn spans_in_flight(&self) -> usize {
        self.spans_in_flight
    }

    /// Waits until the writer hands a batch back (it has written one more): a fold that
    /// converts faster than the writer writes keeps only a few batches queued, not the
    /// whole spill. `None` when the writer stopped.
    pub fn wait_for_spare_spans(&mut self) -> Option<Vec<Span>> {
        let spare = self.spare_spans.recv().ok();
        self.spans_in_flight -= usize::from(spare.is_some());
        spare
    }

    /// What the writer has committed so far, updated as it goes.
    pub fn committed(&self) -> Arc<Committed> {
        Arc::clone(&self.progress)
    }

    pub fn run_id(&self) -> i64 {
        self.run_id
    }

    /// Where the sampler's thread sends its readings; `None` once the writer stopped.
    pub fn samples_sender(&self) -> Option<Sender<Batch>> {
        self.sender.as_ref().map(|_| self.samples.clone())
    }

    /// Queues a write. Fails only when the writer stopped on an error, which it then returns.
    pub fn send(&mut self, write: Write) -> Result<()> {
        self.spans_in_flight += usize::from(matches!(write, Write::Spans(_)));
        let sent = self.sender.as_ref().is_some_and(|s| s.send(write).is_ok());
        if sent {
            Ok(())
        } else {
            Err(self
                .stop()
                .err()
                .unwrap_or_else(|| anyhow!("the run file writer stopped")))
        }
    }

    /// Waits for every queued write and hands the writer back. After a failure, every call
    /// returns the error the writer stopped on.
    pub fn stop(&mut self) -> Result<RunWriter> {
        self.sender = None;
        if let Some(failure) = &self.failure {
            return Err(failure.error());
        }
        let result = match self.handle.take() {
            Some(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(anyhow!("the run file writer crashed"))),
            None => Err(anyhow!("the run file writer already stopped")),
        };
        if let Err(e) = &result {
            self.failure = Some(Failure::of(e));
        }
        result
    }
}

/// The telemetry batches queued so far, in the order sent.
fn write_samples(writer: &mut RunWriter, queued: &Receiver<Batch>) -> Result<()> {
    for batch in queued.try_iter() {
        writer.sample_series(&batch.series)?;
        writer.samples(&batch.samples)?;
    }
    Ok(())
}

fn apply(writer: &mut RunWriter, write: Write) -> Result<()> {
    match write {
        Write::Stage(name) => writer.add_stage(&name).map(drop),
        Write::CounterName(name) => writer.add_counter_name(&name).map(drop),
        Write::EventName(name) => writer.add_event_name(&name).map(drop),
        Write::Thread(thread) => writer.add_thread(&thread).map(drop),
        Write::ThreadDropped(thread, dropped) => writer.set_thread_dropped(thread, dropped),
        Write::Spans(spans) => writer.spans(&spans),
        Write::Counters(values) => writer.counters(&values),
        Write::Events(events) => writer.events(&events),
        Write::Processes(processes) => writer.processes(&processes),
        Write::SampleSources(sources) => writer.sample_sources(&sources),
        Write::Meta(meta) => writer.update_meta(&meta),
        Write::Commit { .. } => writer.commit(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_reading(series: u32, t_ns: i64) -> Batch {
        Batch {
            series: vec![(
                series,
                crate::model::SampleSeries {
                    source: "threads".into(),
                    metric: "cpu_time".into(),
                    entity: format!("1/{series}"),
                    unit: "ns".into(),
                    ..Default::default()
                },
            )],
            samples: vec![crate::model::Sample {
                series,
                t_ns,
                value: 7,
            }],
        }
    }

    #[test]
    fn telemetry_waits_for_the_next_write_and_none_is_lost_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.framelab");
        let mut thread =
            WriterThread::start(RunWriter::create(&path, &RunMeta::default()).unwrap());
        let samples = thread.samples_sender().unwrap();
        samples.send(one_reading(0, 1_000)).unwrap();
        thread.send(Write::Commit { drained_mono_ns: 0 }).unwrap();
        let committed = thread.committed();
        while committed.at_mono_ns.load(Relaxed) == 0 {
            std::thread::yield_now();
        }
        // After the last write: written when the writer stops, committed by `finish`.
        samples.send(one_reading(1, 2_000)).unwrap();
        let writer = thread.stop().unwrap();
        assert!(
            thread.samples_sender().is_none(),
            "nothing to send to once stopped"
        );
        writer.finish().unwrap();
        let run = crate::store::load_run(&path, None).unwrap();
        let read: Vec<(u32, i64)> = (run.telemetry.samples.iter())
            .map(|s| (s.series, s.t_ns))
            .collect();
        assert_eq!(read, vec![(0, 1_000), (1, 2_000)]);
        assert_eq!(run.telemetry.series.len(), 2);
    }

    #[test]
    fn a_batch_of_spans_comes_back_empty_with_its_memory_once_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.framelab");
        let mut writer = RunWriter::create(&path, &RunMeta::default()).unwrap();
        writer.add_stage("s").unwrap();
        writer.add_thread(&ThreadInfo::default()).unwrap();
        let mut thread = WriterThread::start(writer);
        assert!(thread.spare_spans().is_none(), "nothing written yet");
        let spans: Vec<Span> = (0..1_000u64)
            .map(|i| Span {
                frame: i,
                stage: 0,
                thread: 0,
                start_ns: i as i64 * 1_000,
                dur_ns: 500,
            })
            .collect();
        let capacity = spans.capacity();
        thread.send(Write::Spans(spans)).unwrap();
        thread.send(Write::Commit { drained_mono_ns: 0 }).unwrap();
        let writer = thread.stop().unwrap();
        let spare = thread.spare_spans().expect("the batch handed back");
        assert!(spare.is_empty());
        assert_eq!(spare.capacity(), capacity);
        assert_eq!(thread.committed().spans.load(Relaxed), 1_000);
        writer.finish().unwrap();
        let run = crate::store::load_run(&path, None).unwrap();
        assert_eq!(run.spans.len(), 1_000);
    }
}
