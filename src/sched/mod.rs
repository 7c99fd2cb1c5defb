//! What the scheduler did with the threads of a run: when each was on a CPU, runnable but
//! waiting for one (preempted, or woken and not yet running), and blocked
//! (docs/metrics.md, "On-CPU, runnable and blocked").
//!
//! - `tracefs`: a tracepoint's id and raw field layout;
//! - `tracer`: `sched:sched_switch` and `sched:sched_wakeup` on every CPU through the shared
//!   perf-event layer (`crate::perf_event`), folded into slices as they come;
//! - `schedstat`: the fallback without permission, from the thread sampler's readings of
//!   `/proc/PID/task/TID/schedstat` (run time and run-queue wait), as coarse as its interval.
//!
//! Both give the same thing: [`SchedSlice`]s, from which the analysis splits every span.

pub mod schedstat;
pub mod tracefs;
pub mod tracer;

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

/// `FRAMELAB_SCHED`: `tracepoints` (the default: schedstat where refused), `schedstat`
/// (force the fallback), `none` (neither). Anything else is an error said in one line.
pub fn wanted() -> Result<SchedSource, String> {
    match std::env::var("FRAMELAB_SCHED") {
        Err(_) => Ok(SchedSource::Tracepoints),
        Ok(v) => SchedSource::parse(v.trim()).ok_or_else(|| {
            format!(
                "FRAMELAB_SCHED={v} is not known: use tracepoints, schedstat or none \
                 (or leave it unset)"
            )
        }),
    }
}

/// A timeline as stored, made whole: the schedstat fallback's slices are the telemetry's.
pub fn complete(mut timeline: SchedTimeline, telemetry: &crate::model::Telemetry) -> SchedTimeline {
    if timeline.source == SchedSource::Schedstat && timeline.slices.is_empty() {
        timeline.slices = schedstat::slices(telemetry);
    }
    timeline
}
