//! The run file writer on a thread of its own, so draining never waits for SQLite (a commit or
//! a WAL checkpoint can take tens of milliseconds, long enough for a busy ring to fill).

use std::sync::mpsc::{channel, Sender};
use std::thread::JoinHandle;

use anyhow::{anyhow, Result};

use crate::model::{
    CounterValue, EventRecord, ProcessStats, RunMeta, SourceStatus, Span, ThreadInfo,
};
use crate::sample::Batch;
use crate::store::RunWriter;

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
}

impl WriterThread {
    pub fn start(mut writer: RunWriter) -> WriterThread {
        let run_id = writer.run_id();
        let (sender, receiver) = channel::<Write>();
        let handle = std::thread::Builder::new()
            .name("framelab-writer".into())
            .spawn(move || {
                for write in receiver {
                    apply(&mut writer, write)?;
                }
                Ok(writer)
            })
            .expect("spawning the writer thread");
        WriterThread {
            sender: Some(sender),
            handle: Some(handle),
            run_id,
        }
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

    /// Waits for every queued write and hands the writer back.
    pub fn stop(&mut self) -> Result<RunWriter> {
        self.sender = None;
        match self.handle.take() {
            Some(handle) => handle
                .join()
                .map_err(|_| anyhow!("the run file writer crashed"))?,
            None => Err(anyhow!("the run file writer already stopped")),
        }
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
