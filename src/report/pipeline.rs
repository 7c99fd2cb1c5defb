//! The pipelining blocks of a report: the wait table (with each frame's work and waits),
//! the threads as resources, and the bottleneck line. Rows here, laid out by text and
//! Markdown alike.

use super::facts::Style;
use super::format::{us, us_mean};
use crate::analyze::pipeline::{Bottleneck, PipelineSummary};
use crate::analyze::{Analysis, Dist};

fn dist_cells(d: Option<&Dist>) -> Vec<String> {
    match d {
        Some(d) => vec![
            us(d.min_ns),
            us(d.p50_ns),
            us(d.p95_ns),
            us(d.p99_ns),
            us(d.max_ns),
            us_mean(d.mean_ns),
        ],
        None => vec!["-".into(); 6],
    }
}

/// Headers after the first column of the wait table.
pub const WAIT_HEADERS: [&str; 7] = ["min", "p50", "p95", "p99", "max", "mean", "overlaps"];

/// Each wait pair, then `frame work` and `frame waits` (per frame: the time its stages ran
/// and the sum of its waits); `None` when there are no waits.
pub fn wait_rows(p: &PipelineSummary) -> Option<Vec<Vec<String>>> {
    if p.waits.is_empty() {
        return None;
    }
    let mut rows: Vec<Vec<String>> = (p.waits.iter())
        .map(|w| {
            let mut row = vec![w.name.clone()];
            row.extend(dist_cells(w.dist.as_ref()));
            row.push(w.overlaps.to_string());
            row
        })
        .collect();
    for (name, d) in [("frame work", &p.work), ("frame waits", &p.waited)] {
        let mut row = vec![name.to_string()];
        row.extend(dist_cells(d.as_ref()));
        row.push(String::new());
        rows.push(row);
    }
    Some(rows)
}

/// Headers after the first column of the resource table.
pub const RESOURCE_HEADERS: [&str; 3] = ["busy %", "µs/frame", "stages (share of its busy time)"];

/// One row per thread: busy %, busy µs per measured frame, its stages by share.
pub fn resource_rows(a: &Analysis) -> Option<Vec<Vec<String>>> {
    let p = a.pipeline.as_ref()?;
    if p.resources.is_empty() {
        return None;
    }
    let rows = (p.resources.iter())
        .map(|r| {
            let per_frame = if a.frames > 0 {
                us(r.busy_ns as f64 / a.frames as f64)
            } else {
                "-".into()
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
            vec![name, format!("{:.1}", r.busy_pct), per_frame, stages]
        })
        .collect();
    Some(rows)
}

/// `thread main 78.1% busy (most: encode): allows 153.6 fps · observed 120.0 fps (…)`
pub fn bound_line(a: &Analysis, st: &Style) -> Option<String> {
    let b: &Bottleneck = a.pipeline.as_ref()?.bottleneck.as_ref()?;
    let mut line = format!(
        "{} {} {:.1}% busy (most: {}) allows {:.1} fps",
        if b.queue { "queue" } else { "thread" },
        st.name(&b.resource),
        b.busy_pct,
        st.name(&b.stage),
        b.fps_bound
    );
    if let Some(observed) = a.observed_fps {
        line.push_str(&format!(" · observed {observed:.1} fps"));
        if let Some(target) = a.target_fps.filter(|&t| t < b.fps_bound * 0.95) {
            if observed >= target * 0.95 {
                line.push_str(&format!(
                    " (the target {} fps sets the rate)",
                    super::format::fps_target(target)
                ));
            }
        }
    }
    Some(line)
}
