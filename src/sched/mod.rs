//! What the scheduler did with the threads of a run: when each was on a CPU, runnable but
//! waiting for one (preempted, or woken and not yet running), and blocked
//! (docs/metrics.md, "On-CPU, runnable and blocked").
//!
//! - `tracefs`: a tracepoint's id and raw field layout;
//! - `tracer`: `sched:sched_switch` and `sched:sched_wakeup` on every CPU through the shared
//!   perf-event layer (`crate::perf_event`), kept for the run's cgroup by the kernel where it
//!   can, folded into slices as they come; `waking`: when its thread drains them;
//! - `schedstat`: the fallback without permission, from the thread sampler's readings of
//!   `/proc/PID/task/TID/schedstat` (run time and run-queue wait), as coarse as its interval.
//!
//! Both give the same thing: [`SchedSlice`]s, from which the analysis splits every span.

pub mod schedstat;
pub mod tracefs;
pub mod tracer;
mod waking;

pub use crate::model::sched::{SchedSlice, SchedSource, SchedTimeline};

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
