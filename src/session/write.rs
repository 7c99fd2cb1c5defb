//! The run file writer on a thread of its own, so draining never waits for SQLite (a commit or
//! a WAL checkpoint can take tens of milliseconds, long enough for a busy ring to fill).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{channel, Sender};
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
    /// Telemetry series and readings from the sampler thread.
    Samples(Batch),
    SampleSources(Vec<SourceStatus>),
    Meta(Box<RunMeta>),
    Commit,
}

pub struct WriterThread {
    sender: Option<Sender<Write>>,
    handle: Option<JoinHandle<Result<RunWriter>>>,
    run_id: i64,
    progress: Arc<Committed>,
    /// The error the writer stopped on, said again by every later call: a second failure
    /// must never hide the first ("already stopped" instead of "the disk is full").
    failure: Option<Failure>,
}

/// What is safely in the file: spans committed, and when the last commit was.
#[derive(Debug, Default)]
pub struct Committed {
    pub spans: AtomicU64,
    /// CLOCK_MONOTONIC ns of the last successful commit; 0 before the first.
    pub at_mono_ns: AtomicI64,
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
        let progress = Arc::new(Committed::default());
        let committed = Arc::clone(&progress);
        let handle = std::thread::Builder::new()
            .name("framelab-writer".into())
            .spawn(move || {
                let mut pending_spans = 0u64;
                for write in receiver {
                    match &write {
                        Write::Spans(spans) => pending_spans += spans.len() as u64,
                        Write::Commit => {
                            apply(&mut writer, write)?;
                            committed.spans.fetch_add(pending_spans, Relaxed);
                            committed
                                .at_mono_ns
                                .store(framelab_probe::monotonic_ns() as i64, Relaxed);
                            pending_spans = 0;
                            continue;
                        }
                        _ => {}
                    }
                    apply(&mut writer, write)?;
                }
                Ok(writer)
            })
            .expect("spawning the writer thread");
        WriterThread {
            sender: Some(sender),
            handle: Some(handle),
            run_id,
            progress,
            failure: None,
        }
    }

    /// What the writer has committed so far, updated as it goes.
    pub fn committed(&self) -> Arc<Committed> {
        Arc::clone(&self.progress)
    }

    pub fn run_id(&self) -> i64 {
        self.run_id
    }

    /// Another handle for queueing writes (the sampler thread's); `stop` waits for it to
    /// be dropped, so drop it first.
    pub fn sender(&self) -> Option<Sender<Write>> {
        self.sender.clone()
    }

    /// Queues a write. Fails only when the writer stopped on an error, which it then returns.
    pub fn send(&mut self, write: Write) -> Result<()> {
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
        Write::Samples(batch) => {
            writer.sample_series(&batch.series)?;
            writer.samples(&batch.samples)
        }
        Write::SampleSources(sources) => writer.sample_sources(&sources),
        Write::Meta(meta) => writer.update_meta(&meta),
        Write::Commit => writer.commit(),
    }
}
