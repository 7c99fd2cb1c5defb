//! Scheduler tracing for a run (`crate::sched`): the tracepoints where the kernel allows
//! them, else the thread sampler's `schedstat` readings, said in one line with what to
//! change to get the tracepoints.

use std::path::Path;
use std::time::Duration;

use super::executor::Executor;
use crate::sample::{SamplingOptions, SourceKind};
use crate::sched::tracer::Tracer;
use crate::sched::{SchedSource, SchedTimeline};

pub struct SchedRecording {
    tracer: Option<Tracer>,
    fallback: SchedTimeline,
    /// What the fallback is, said after why it was taken.
    instead: String,
}

/// How often the thread sampler reads `schedstat`: the fallback's resolution.
fn schedstat_every(sampling: &SamplingOptions) -> Option<Duration> {
    (!sampling.disabled.contains(&SourceKind::Threads))
        .then(|| sampling.every.max(crate::sample::threads::MIN_EVERY))
}

/// Starts tracing what `wanted` asks for (`FRAMELAB_SCHED`); prints one line when the
/// tracepoints were wanted and refused.
pub fn start(
    wanted: SchedSource,
    watched: &[u32],
    run_cgroup: Option<&Path>,
    sampling: &SamplingOptions,
    exec: &mut impl Executor,
) -> SchedRecording {
    let every = schedstat_every(sampling);
    let fallback = move |detail: String| SchedTimeline {
        source: if every.is_some() {
            SchedSource::Schedstat
        } else {
            SchedSource::None
        },
        detail,
        resolution_ns: every.map_or(0, |e| e.as_nanos() as i64),
        ..SchedTimeline::default()
    };
    let instead = match every {
        Some(e) => format!(
            "on-CPU time comes from per-thread schedstat read every {} instead (coarser)",
            humantime::format_duration(e)
        ),
        None => "and the threads are not sampled (--no-sample threads): busy time is the \
                 spans' wall time"
            .to_owned(),
    };
    match wanted {
        SchedSource::Tracepoints => match exec.start_sched_tracer(watched, run_cgroup) {
            Ok(tracer) => SchedRecording {
                tracer: Some(tracer),
                fallback: fallback(String::new()),
                instead,
            },
            Err(why) => {
                let detail = format!("scheduler tracepoints unavailable: {why}");
                log::warn!("{detail}; {instead}");
                // The report's line names the schedstat fallback already.
                let recorded = match every {
                    Some(_) => detail,
                    None => format!("{detail}; {instead}"),
                };
                SchedRecording {
                    tracer: None,
                    fallback: fallback(recorded),
                    instead,
                }
            }
        },
        SchedSource::Schedstat => SchedRecording {
            tracer: None,
            fallback: fallback(format!(
                "scheduler tracepoints not used (FRAMELAB_SCHED=schedstat); {instead}"
            )),
            instead,
        },
        SchedSource::None => SchedRecording {
            tracer: None,
            fallback: SchedTimeline {
                detail: "not traced (FRAMELAB_SCHED=none): busy time is the spans' \
                         wall time"
                    .to_owned(),
                ..SchedTimeline::default()
            },
            instead,
        },
    }
}

impl SchedRecording {
    /// Stops tracing: what to store with the run.
    /// A traced timeline that missed many of the threads' returns to a CPU (`Unseen`) is
    /// not used: its on-CPU time would be short by whole runs of them.
    pub fn finish(self, origin_mono_ns: i64) -> SchedTimeline {
        let Some(tracer) = self.tracer else {
            return self.fallback;
        };
        let (timeline, unseen) = tracer.finish(origin_mono_ns);
        if !unseen.too_many() {
            return timeline;
        }
        let detail = format!(
            "the sched_switch tracepoints missed {} of {} returns of the run's threads to a \
             CPU (this kernel does not report switches out of the idle task on some CPUs); {}",
            unseen.unseen_returns, unseen.switch_outs, self.instead
        );
        log::warn!("{detail}");
        SchedTimeline {
            detail,
            lost: timeline.lost,
            ..self.fallback
        }
    }
}
