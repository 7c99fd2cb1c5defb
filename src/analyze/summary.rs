//! The whole analysis of one run: every number a report shows, computed once.

use super::counters::counter_summaries;
use super::cpu::{cpu_summary, process_rows};
use super::fps::fps_summary;
use super::frames::{intervals_ns, measure, resolve_window, Frames};
use super::late::{late_summary, stutter};
use super::notes::{notes, NoteFacts};
use super::stages::{pick_worst, stage_table, WORST_FRAMES};
use super::stats::sort_ns;
use super::{Analysis, Dist, StageRow, WindowSummary};
use crate::model::{Run, RunMeta};

/// The frame budget: `--budget`, else 1/fps rounded to the nanosecond; `None` when neither
/// is a positive number.
pub fn budget_ns(meta: &RunMeta) -> Option<i64> {
    if let Some(b) = meta.budget_ns.filter(|&b| b > 0) {
        return Some(b);
    }
    meta.target_fps
        .filter(|f| f.is_finite() && *f > 0.0)
        .map(|f| (1e9 / f).round() as i64)
        .filter(|&b| b > 0)
}

pub fn analyze(run: &Run) -> Analysis {
    let meta = &run.meta;
    let frames = Frames::from_spans(&run.spans);
    let window = resolve_window(meta, frames.last_end_ns);
    let measured = measure(&frames, &window);
    let measured_frames = measured.order.len() as u64;
    let seconds = window.seconds();

    // In end order: late frames, streaks, missed slots and stutter need the sequence.
    let mut totals = measured.totals_ns(&frames);
    let mut intervals = intervals_ns(&measured.ends_ns(&frames));
    let budget = budget_ns(meta);
    let late = budget
        .filter(|_| measured_frames > 0)
        .and_then(|b| late_summary(&totals, &intervals, b));
    let stutter = stutter(&intervals);

    sort_ns(&mut totals);
    sort_ns(&mut intervals);
    let total = Dist::from_sorted(&totals);
    let interval = Dist::from_sorted(&intervals);
    let fps = fps_summary(&intervals);

    let worst = pick_worst(&frames, &measured, WORST_FRAMES);
    let table = stage_table(&run.spans, &run.stages, &frames, &measured, &worst);
    let mut stages = table.rows;
    stages.extend(total.clone().map(|dist| StageRow {
        name: "total".into(),
        dist,
    }));
    stages.extend(interval.clone().map(|dist| StageRow {
        name: "interval".into(),
        dist,
    }));

    let (counters, orphan_counter_values) = counter_summaries(
        &run.counters,
        &run.counter_names,
        &frames,
        &measured,
        seconds,
    );

    // An uninstrumented command: `--frames N` stands in for the frames it did.
    let hint = meta.frames_hint.filter(|&n| n > 0);
    let frames_from_hint = run.spans.is_empty() && hint.is_some();
    let frame_count = if frames_from_hint {
        hint.unwrap_or(0)
    } else {
        measured_frames
    };
    let observed_fps = seconds
        .filter(|_| frame_count > 0)
        .map(|s| frame_count as f64 / s);

    let facts = NoteFacts {
        spans: run.spans.len() as u64,
        measured_frames,
        negative_spans: frames.negative_spans,
        orphan_counter_values,
        frames_from_hint,
        hint_ignored: hint.is_some() && !run.spans.is_empty(),
    };

    Analysis {
        run_id: meta.id,
        name: meta.name.clone(),
        command: meta.command.clone(),
        started_at: meta.started_at.clone(),
        host: meta.host.clone(),
        clock: meta.clock.clone(),
        target_fps: meta.target_fps,
        budget_ns: budget,
        window: WindowSummary {
            start_ns: window.start_ns,
            end_ns: window.end_ns,
            length_ns: window.length_ns(),
            warmup_frames: measured.warmup_frames,
            after_frames: measured.after_frames,
        },
        end_reason: meta.end_reason,
        exit: meta.exit.clone(),
        frames: frame_count,
        frames_from_hint,
        observed_fps,
        spans: run.spans.len() as u64,
        negative_spans: frames.negative_spans,
        dropped_events: meta.dropped_events,
        invalid_records: meta.invalid_records,
        names_refused: meta.names_refused,
        counters,
        late,
        stages,
        stage_names: table.names,
        total,
        interval,
        fps,
        stutter,
        processes: process_rows(&run.processes),
        cpu: cpu_summary(&run.processes, window.length_ns(), frame_count),
        worst_frames: table.worst,
        notes: notes(meta, &window, &facts),
    }
}
