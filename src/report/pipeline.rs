//! The pipelining blocks of a report: the wait table (with each frame's work and waits),
//! the threads as resources, and the bottleneck line. Rows here, laid out by text and
//! Markdown alike.

use crate::analyze::pipeline::{Bottleneck, PipelineSummary};
use crate::analyze::{Analysis, Dist};
use crate::render::document::{plain, Line, Span};
use crate::render::human::ms;
use crate::render::value::Value;
use crate::sched::SchedSource;
use crate::units::plural;

/// A distribution's min, p50, p95, p99, max and mean, in µs (the stage table's cells too).
pub(crate) fn dist_cells(d: &Dist) -> [Value; 6] {
    [
        Value::Micros(d.min_ns),
        Value::Micros(d.p50_ns),
        Value::Micros(d.p95_ns),
        Value::Micros(d.p99_ns),
        Value::Micros(d.max_ns),
        Value::MeanMicros(d.mean_ns),
    ]
}

/// [`dist_cells`], or six dashes where there is no distribution (still µs columns).
fn dist_cells_or_dashes(d: Option<&Dist>) -> Vec<Value> {
    match d {
        Some(d) => dist_cells(d).into(),
        None => vec![
            Value::Absent {
                mark: "-",
                unit: "µs"
            };
            6
        ],
    }
}

/// Headers after the first column of the wait table.
pub const WAIT_HEADERS: [&str; 7] = ["min", "p50", "p95", "p99", "max", "mean", "overlaps"];

/// Each wait pair, then `frame work` and `frame waits` (per frame: the time its stages ran
/// and the sum of its waits); `None` when there are no waits.
pub fn wait_rows(p: &PipelineSummary) -> Option<Vec<Vec<Value>>> {
    if p.waits.is_empty() {
        return None;
    }
    let mut rows: Vec<Vec<Value>> = (p.waits.iter())
        .map(|w| {
            let mut row = vec![Value::Text(w.name.clone())];
            row.extend(dist_cells_or_dashes(w.dist.as_ref()));
            row.push(Value::Count(w.overlaps as i64));
            row
        })
        .collect();
    for (name, d) in [("frame work", &p.work), ("frame waits", &p.waited)] {
        let mut row = vec![Value::from(name)];
        row.extend(dist_cells_or_dashes(d.as_ref()));
        row.push(Value::Missing(""));
        rows.push(row);
    }
    Some(rows)
}

/// The first column of the resource table: `thread`, or `thread/queue` when the program
/// named queues (`Queue::new`) and they are listed too.
pub fn resource_header(a: &Analysis) -> &'static str {
    let queues = (a.pipeline.iter()).any(|p| p.resources.iter().any(|r| r.queue));
    if queues {
        "thread/queue"
    } else {
        "thread"
    }
}

/// Headers after the first column of the resource table.
pub const RESOURCE_HEADERS: [&str; 3] = ["busy %", "µs/frame", "stages (share of its busy time)"];

/// The resource table's headers after the first column, saying what busy means in this run.
pub fn resource_busy_headers(a: &Analysis) -> [&'static str; 3] {
    if busy_on_cpu(a) {
        [
            "busy % (on CPU)",
            "CPU µs/frame",
            "stages (share of its time on CPU)",
        ]
    } else {
        RESOURCE_HEADERS
    }
}

fn busy_on_cpu(a: &Analysis) -> bool {
    a.pipeline.as_ref().is_some_and(|p| p.busy_on_cpu)
}

/// Where the split of spans into on-CPU, runnable and blocked time comes from, and who
/// preempted the spans most; `None` for a run without a scheduler timeline.
pub fn sched_line(a: &Analysis) -> Option<Line> {
    let s = a.sched.as_ref()?;
    let line = match s.source {
        SchedSource::Tracepoints => {
            let mut l = "sched_switch tracepoints: busy = time on CPU".to_owned();
            if s.lost > 0 {
                l.push_str(&format!(
                    " · {} lost (ring full: times around them are uncertain)",
                    plural(s.lost, "switch record", "switch records")
                ));
            }
            l
        }
        SchedSource::Schedstat => format!(
            "schedstat every {}: busy = time on CPU, each reading's put in the spans first",
            humantime::format_duration(std::time::Duration::from_nanos(
                s.resolution_ns.max(0) as u64
            ))
        ),
        SchedSource::None => String::new(),
    };
    let mut line = plain(line);
    if !s.preempted_by.is_empty() {
        line.push(Span::plain(" · spans preempted by "));
        for (i, p) in s.preempted_by.iter().take(3).enumerate() {
            if i > 0 {
                line.push(Span::plain(", "));
            }
            line.extend([Span::name(&p.comm), Span::plain(format!(" {}", ms(p.ns)))]);
        }
    }
    if !s.detail.is_empty() {
        if line.iter().any(|span| !span.text.is_empty()) {
            line.push(Span::plain(" · "));
        }
        line.push(Span::plain(&s.detail));
    }
    Some(line)
}

/// One row per thread: busy %, busy µs per measured frame, its stages by share.
pub fn resource_rows(a: &Analysis) -> Option<Vec<Vec<Value>>> {
    let p = a.pipeline.as_ref()?;
    if p.resources.is_empty() {
        return None;
    }
    // Without frames each slice is counted alone: a per-frame figure would be per slice.
    let frames = !a.import.as_ref().is_some_and(|i| i.frames_undefined());
    let rows = (p.resources.iter())
        .map(|r| {
            let per_frame = if a.frames > 0 && frames {
                Value::Micros(r.busy_ns as f64 / a.frames as f64)
            } else {
                Value::Missing("-")
            };
            let stages: Vec<String> = (r.stages.iter())
                .take(4)
                .map(|s| {
                    let share = s.busy_ns as f64 / r.busy_ns.max(1) as f64 * 100.0;
                    format!("{} {share:.0}%", s.stage)
                })
                .collect();
            let more = r.stages.len().saturating_sub(4);
            let mut stages = stages.join(", ");
            if more > 0 {
                stages.push_str(&format!(", {more} more"));
            }
            let name = match r.queue {
                true => format!("{} (queue)", r.name),
                false => r.name.clone(),
            };
            vec![
                Value::Text(name),
                Value::fixed(r.busy_pct, 1),
                per_frame,
                Value::Text(stages),
            ]
        })
        .collect();
    Some(rows)
}

/// Whether the target, not the bottleneck, set the observed rate: the run kept to its target
/// (within 5%) with room to spare below the bound. A program that ran faster than its target
/// was not paced by it, whatever the bound.
fn paced_at(observed: f64, target: f64, bound: f64) -> bool {
    (observed - target).abs() <= target * 0.05 && observed < bound * 0.95
}

/// `thread main 78.1% busy (most: encode): allows 153.6 fps · observed 120.0 fps (…)`;
/// `busy (on CPU)` where busy is time on a CPU (a scheduler timeline).
pub fn bound_line(a: &Analysis) -> Option<Line> {
    let b: &Bottleneck = a.pipeline.as_ref()?.bottleneck.as_ref()?;
    let on_cpu = if busy_on_cpu(a) && !b.queue {
        " (on CPU)"
    } else {
        ""
    };
    let mut line = vec![
        Span::plain(if b.queue { "queue " } else { "thread " }),
        Span::name(&b.resource),
        Span::plain(format!(" {:.1}% busy{on_cpu} (most: ", b.busy_pct)),
        Span::name(&b.stage),
        Span::plain(format!(") allows {:.1} fps", b.fps_bound)),
    ];
    let wall_bound = wall_fps_bound(a, b).unwrap_or(b.fps_bound);
    if !on_cpu.is_empty() && wall_bound < b.fps_bound * 0.9 {
        // Time waiting for the CPU is not spare on a machine as loaded as this one was.
        line.push(Span::plain(format!(
            " with a CPU of its own, {wall_bound:.1} fps at its spans' wall time"
        )));
    }
    if let Some(observed) = a.observed_fps {
        line.push(Span::plain(format!(" · observed {observed:.1} fps")));
        // A thread whose spans filled the window was never idle, so never held back by the
        // pacer, however little of that time it ran (starved of CPU): its spans' wall time
        // must allow the rate too.
        if let Some(target) = (a.target_fps)
            .filter(|&t| paced_at(observed, t, b.fps_bound) && paced_at(observed, t, wall_bound))
        {
            line.push(Span::plain(format!(
                " (the target {} fps sets the rate)",
                crate::render::human::fps_target(target)
            )));
        }
    }
    Some(line)
}

/// The rate the bottleneck's spans' wall time allows, where busy is its time on CPU.
fn wall_fps_bound(a: &Analysis, b: &Bottleneck) -> Option<f64> {
    let row = (a.pipeline.as_ref()?.resources.iter()).find(|r| r.name == b.resource)?;
    let wall_s = row.wall_busy_ns? as f64 / 1e9;
    (wall_s > 0.0).then(|| a.frames as f64 / wall_s)
}

#[cfg(test)]
mod tests {
    use super::paced_at;

    #[test]
    fn the_target_sets_the_rate_only_when_the_run_kept_to_it_below_the_bound() {
        // Paced at 100 fps, able to do 160: the target sets the rate.
        assert!(paced_at(100.0, 100.0, 160.0));
        assert!(paced_at(103.9, 100.0, 200.0));
        // Unpaced at 325 fps with a 300 fps target: the bottleneck set it (the README's
        // example program), and so for any run well above its target.
        assert!(!paced_at(325.0, 300.0, 325.9));
        assert!(!paced_at(480.0, 100.0, 2000.0));
        // Kept to the target but at the bound: the pipeline could not go faster anyway.
        assert!(!paced_at(120.0, 120.0, 121.0));
        // Below the target: missed it.
        assert!(!paced_at(80.0, 100.0, 160.0));
    }
}
