//! Writes a run as it goes: batched inserts, a commit at least once a second.

use std::path::Path;

use crate::model::{CounterValue, EventRecord, ProcessStats, RunMeta, Span, ThreadInfo};

pub struct RunWriter {}

impl RunWriter {
    /// Creates (or opens, for a multi-run file) `path` and starts a run with `meta`.
    pub fn create(_path: &Path, _meta: &RunMeta) -> anyhow::Result<RunWriter> {
        anyhow::bail!("store not implemented yet")
    }
    pub fn run_id(&self) -> i64 {
        0
    }
    pub fn add_stage(&mut self, _name: &str) -> anyhow::Result<u16> {
        anyhow::bail!("store not implemented yet")
    }
    pub fn add_counter_name(&mut self, _name: &str) -> anyhow::Result<u16> {
        anyhow::bail!("store not implemented yet")
    }
    pub fn add_event_name(&mut self, _name: &str) -> anyhow::Result<u16> {
        anyhow::bail!("store not implemented yet")
    }
    pub fn add_thread(&mut self, _thread: &ThreadInfo) -> anyhow::Result<u32> {
        anyhow::bail!("store not implemented yet")
    }
    pub fn set_thread_dropped(&mut self, _thread: u32, _dropped: u64) -> anyhow::Result<()> {
        anyhow::bail!("store not implemented yet")
    }
    pub fn spans(&mut self, _spans: &[Span]) -> anyhow::Result<()> {
        anyhow::bail!("store not implemented yet")
    }
    pub fn counters(&mut self, _values: &[CounterValue]) -> anyhow::Result<()> {
        anyhow::bail!("store not implemented yet")
    }
    pub fn events(&mut self, _events: &[EventRecord]) -> anyhow::Result<()> {
        anyhow::bail!("store not implemented yet")
    }
    pub fn processes(&mut self, _processes: &[ProcessStats]) -> anyhow::Result<()> {
        anyhow::bail!("store not implemented yet")
    }
    pub fn update_meta(&mut self, _meta: &RunMeta) -> anyhow::Result<()> {
        anyhow::bail!("store not implemented yet")
    }
    pub fn commit(&mut self) -> anyhow::Result<()> {
        anyhow::bail!("store not implemented yet")
    }
}
