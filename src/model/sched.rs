//! What a run holds of the scheduler: the types `crate::sched` fills and the store and
//! analysis read (docs/metrics.md, "On-CPU, runnable and blocked").

use serde::{Deserialize, Serialize};

/// Where a run's scheduler times come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedSource {
    /// `sched_switch` / `sched_wakeup`: every switch, to the nanosecond.
    Tracepoints,
    /// Per-thread `schedstat` read by the sampler: totals between two readings.
    Schedstat,
    /// Neither (turned off, or a run without thread readings).
    #[default]
    None,
}

impl SchedSource {
    pub fn name(self) -> &'static str {
        match self {
            SchedSource::Tracepoints => "tracepoints",
            SchedSource::Schedstat => "schedstat",
            SchedSource::None => "none",
        }
    }

    pub fn parse(text: &str) -> Option<SchedSource> {
        [
            SchedSource::Tracepoints,
            SchedSource::Schedstat,
            SchedSource::None,
        ]
        .into_iter()
        .find(|s| s.name() == text)
    }
}

/// A stretch of one thread's time: how much of it was on a CPU and how much runnable
/// (the rest was blocked). From tracepoints a slice is wholly one or the other; from
/// `schedstat` it is the time between two readings, with the totals that moved in it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedSlice {
    pub tid: u32,
    /// ns after launch.
    pub start_ns: i64,
    pub dur_ns: i64,
    pub on_cpu_ns: i64,
    pub runnable_ns: i64,
    /// The task that held the CPU while this thread waited for it (tracepoints only).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub by: String,
}

/// What a run holds of the scheduler (run file schema 7: `sched_status`, `sched_slices`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SchedTimeline {
    pub source: SchedSource,
    /// One line: what was unavailable and how to get it, when tracepoints were not used.
    #[serde(default)]
    pub detail: String,
    /// The finest time the source tells apart (1 for tracepoints; the sampling interval
    /// for schedstat).
    pub resolution_ns: i64,
    /// Switch records the kernel could not write (its ring was full).
    #[serde(default)]
    pub lost: u64,
    /// By thread, then time; stored for tracepoints, rebuilt from telemetry for schedstat.
    #[serde(default)]
    pub slices: Vec<SchedSlice>,
}
