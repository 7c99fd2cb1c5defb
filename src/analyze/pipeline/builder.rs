//! Collecting a run's spans and computing the summary: each measured frame's waits, each
//! thread's busy time, the bottleneck.

use std::collections::BTreeMap;

use super::resources::{thread_busy, Intervals};
use super::waits::{frame_waits, StageSpan};
use super::{
    has_thread_info, is_queue, thread_labels, Bottleneck, FrameBreakdown, Names, PipelineSummary,
    RepeatedOverlap, ResourceRow, StageBusy, WaitRow,
};
use crate::analyze::compact::values::NsValues;
use crate::analyze::frames::{Frames, Measured, NO_FRAME};
use crate::analyze::stages::stage_name;
use crate::analyze::{StageRow, WorstFrame};
use crate::model::{Run, Span};

/// A measured frame's span as kept for its waits: 24 bytes (no thread: waits don't need it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct FrameRow {
    frame: u32,
    start_ns: i64,
    end_ns: i64,
    stage: u16,
}

/// Collects spans in two passes over them, so what each keeps is never held together:
/// measured frames' spans for their waits ([`PipelineBuilder::push_frame_span`], then
/// [`PipelineBuilder::end_waits`]), then every span's busy interval
/// ([`PipelineBuilder::push_busy`]); [`summarize`] computes the rest.
pub struct PipelineBuilder {
    window: (i64, i64),
    /// Keep measured frames' spans for their waits (not when each has one span).
    keep_frames: bool,
    rows: Vec<FrameRow>,
    /// Per thread: the (frame, start) of its last span, to see a frame's spans recorded
    /// out of start order on one thread.
    last_on_thread: BTreeMap<u32, (u32, i64)>,
    reordered: Vec<u32>,
    groups: BTreeMap<(u32, u16), Intervals>,
    summary: PipelineSummary,
    breakdowns: Vec<Option<FrameBreakdown>>,
    /// Each wait pair's values, sorted, when asked for (`compare` resamples them).
    wait_values: Option<WaitValues>,
}

/// Each wait pair's name and its waits, sorted.
pub type WaitValues = Vec<(String, Vec<i64>)>;

impl PipelineBuilder {
    /// `measured_spans`: the measured frames' spans (sizes what is kept of them);
    /// `multi_span`: some measured frame has two spans or more.
    pub fn new(window: (i64, i64), measured_spans: u64, multi_span: bool) -> PipelineBuilder {
        let capacity = if multi_span {
            measured_spans as usize
        } else {
            0
        };
        PipelineBuilder {
            window,
            keep_frames: multi_span,
            rows: Vec::with_capacity(capacity),
            last_on_thread: BTreeMap::new(),
            reordered: Vec::new(),
            groups: BTreeMap::new(),
            summary: PipelineSummary::default(),
            breakdowns: Vec::new(),
            wait_values: None,
        }
    }

    /// Pass 1: a span of the run, in the order recorded; `measured_frame` is its frame's
    /// index when that frame is measured. Negative durations (counted elsewhere) are skipped.
    pub fn push_frame_span(&mut self, span: &Span, measured_frame: Option<u32>) {
        let (true, Some(frame), true) = (self.keep_frames, measured_frame, span.dur_ns >= 0) else {
            return;
        };
        let last = self
            .last_on_thread
            .insert(span.thread, (frame, span.start_ns));
        if last.is_some_and(|(f, start)| f == frame && span.start_ns < start) {
            self.reordered.push(frame);
        }
        self.rows.push(FrameRow {
            frame,
            start_ns: span.start_ns,
            end_ns: span.end_ns(),
            stage: span.stage,
        });
    }

    /// The end of pass 1: each frame's waits, and the breakdown of each of `worst` (frame
    /// indices); what pass 1 kept is dropped.
    pub fn end_waits(&mut self, names: &Names, measured_frames: u64, worst: &[u32]) {
        self.summary.single_stage = !self.keep_frames && measured_frames > 0;
        self.reordered.sort_unstable();
        self.reordered.dedup();
        self.summary.reordered_frames = self.reordered.len() as u64;
        self.breakdowns = vec![None; worst.len()];
        let mut rows = std::mem::take(&mut self.rows);
        if self.keep_frames {
            rows.sort_unstable();
            let values = self.wait_values.as_mut();
            let out = (self.breakdowns.as_mut_slice(), values);
            (self.summary).waits_from(&rows, names, measured_frames, worst, out);
        }
    }

    /// Pass 2: a span of the run, its time in the window counted to its thread.
    pub fn push_busy(&mut self, span: &Span) {
        if span.dur_ns < 0 {
            return;
        }
        let (from, to) = (
            span.start_ns.max(self.window.0),
            span.end_ns().min(self.window.1),
        );
        if from < to {
            (self.groups.entry((span.thread, span.stage)).or_default()).push((from, to));
        }
    }
}

/// Each wait pair's waits over the measured frames of a loaded run, sorted ascending, in
/// the wait table's order (what `compare` resamples for `--show 'convert→encode.p99'`).
pub fn wait_values(run: &Run, frames: &Frames, measured: &Measured) -> WaitValues {
    let window = (i64::MIN, i64::MAX);
    let mut builder = PipelineBuilder::new(window, run.spans.len() as u64, true);
    builder.wait_values = Some(Vec::new());
    for (span, &f) in run.spans.iter().zip(&frames.span_frame) {
        let measured_frame = (f != NO_FRAME && measured.in_window[f as usize]).then_some(f);
        builder.push_frame_span(span, measured_frame);
    }
    let names = Names {
        stages: &run.stages,
        threads: &run.threads,
    };
    builder.end_waits(&names, measured.order.len() as u64, &[]);
    builder.wait_values.unwrap_or_default()
}

/// The summary of a builder both passes went through (`None` without measured frames),
/// each worst frame's breakdown put into its row.
pub(crate) fn summarize(
    builder: PipelineBuilder,
    names: &Names,
    measured_frames: u64,
    rows: &mut [WorstFrame],
) -> Option<PipelineSummary> {
    if measured_frames == 0 {
        return None;
    }
    let mut summary = builder.summary;
    summary.no_threads = !has_thread_info(names.threads);
    if !summary.no_threads {
        summary.resources_from(builder.groups, names, builder.window, measured_frames);
    }
    for (row, b) in rows.iter_mut().zip(builder.breakdowns) {
        if let Some(b) = b {
            b.fill(row);
        }
    }
    Some(summary)
}

/// The measured frames' spans, from the stage table's counts.
pub(crate) fn measured_spans(rows: &[StageRow]) -> u64 {
    rows.iter().map(|r| r.dist.count).sum()
}

/// Whether some measured frame has two spans or more.
pub(crate) fn multi_span(rows: &[StageRow], measured_frames: u64) -> bool {
    measured_spans(rows) > measured_frames
}

/// Pair of stage ids → the waits between them, overlaps, and when they first happened.
struct PairTally {
    waits: NsValues,
    overlaps: u64,
    /// The first frame it occurred in (its start) and where in that frame.
    first: (i64, usize),
}

/// The tally of a pair, first seen at `at` unless seen earlier.
fn tally(
    pairs: &mut BTreeMap<(u16, u16), PairTally>,
    pair: (u16, u16),
    at: (i64, usize),
) -> &mut PairTally {
    let t = pairs.entry(pair).or_insert_with(|| PairTally {
        waits: NsValues::for_range(0, 0, 0),
        overlaps: 0,
        first: at,
    });
    t.first = t.first.min(at);
    t
}

impl PipelineSummary {
    fn waits_from(
        &mut self,
        rows: &[FrameRow],
        names: &Names,
        measured_frames: u64,
        worst: &[u32],
        (breakdowns, mut values): (&mut [Option<FrameBreakdown>], Option<&mut WaitValues>),
    ) {
        let mut pairs: BTreeMap<(u16, u16), PairTally> = BTreeMap::new();
        let frames = measured_frames as usize;
        let (mut work, mut waited) = (
            NsValues::for_range(0, 0, frames),
            NsValues::for_range(0, 0, frames),
        );
        let mut spans: Vec<StageSpan> = Vec::new();
        for frame_rows in rows.chunk_by(|a, b| a.frame == b.frame) {
            spans.clear();
            spans.extend(frame_rows.iter().map(|r| StageSpan {
                start_ns: r.start_ns,
                end_ns: r.end_ns,
                stage: r.stage,
                thread: 0,
            }));
            let w = frame_waits(&mut spans);
            let frame_start = spans[0].start_ns;
            for (k, &(from, to, ns)) in w.waits.iter().enumerate() {
                tally(&mut pairs, (from, to), (frame_start, k))
                    .waits
                    .push(ns);
            }
            for (k, &(from, to)) in w.overlaps.iter().enumerate() {
                let at = (frame_start, w.waits.len() + k);
                tally(&mut pairs, (from, to), at).overlaps += 1;
            }
            if let Some(pos) = worst.iter().position(|&f| f == frame_rows[0].frame) {
                breakdowns[pos] = Some(FrameBreakdown {
                    work_ns: w.work_ns,
                    wait_ns: w.wait_ns,
                    longest: (w.waits.iter())
                        .max_by_key(|&&(from, to, ns)| (ns, std::cmp::Reverse((from, to))))
                        .map(|&(from, to, ns)| (pair_name(names.stages, from, to), ns)),
                });
            }
            work.push(w.work_ns);
            waited.push(w.wait_ns);
        }
        let mut ordered: Vec<((u16, u16), PairTally)> = pairs.into_iter().collect();
        ordered.sort_by_key(|(pair, t)| (t.first, *pair));
        for ((from, to), mut t) in ordered {
            t.waits.sort();
            let name = pair_name(names.stages, from, to);
            if let Some(values) = values.as_mut() {
                values.push((name.clone(), t.waits.to_i64()));
            }
            self.waits.push(WaitRow {
                name,
                from: stage_name(names.stages, from.into()),
                to: stage_name(names.stages, to.into()),
                dist: t.waits.dist_of_sorted(),
                overlaps: t.overlaps,
            });
        }
        work.sort();
        waited.sort();
        self.work = work.dist_of_sorted();
        self.waited = waited.dist_of_sorted();
    }

    fn resources_from(
        &mut self,
        groups: BTreeMap<(u32, u16), Intervals>,
        names: &Names,
        window: (i64, i64),
        measured_frames: u64,
    ) {
        let labels = thread_labels(names.threads);
        let label =
            |t: u32| (labels.get(t as usize).cloned()).unwrap_or_else(|| format!("thread #{t}"));
        let window_ns = window.1.saturating_sub(window.0);
        let busy = thread_busy(groups);
        for t in &busy {
            for &(stage, spans) in &t.overlapping {
                self.repeated_overlaps.push(RepeatedOverlap {
                    stage: stage_name(names.stages, stage.into()),
                    thread: label(t.thread),
                    spans,
                });
            }
        }
        let mut rows: Vec<(i64, u32, ResourceRow)> = busy
            .iter()
            .filter(|t| t.busy_ns > 0 || window_ns == 0)
            .map(|t| {
                let row = ResourceRow {
                    name: label(t.thread),
                    queue: (names.threads.get(t.thread as usize)).is_some_and(is_queue),
                    busy_ns: t.busy_ns,
                    busy_pct: if window_ns > 0 {
                        t.busy_ns as f64 / window_ns as f64 * 100.0
                    } else {
                        0.0
                    },
                    stages: (t.stages.iter())
                        .map(|&(stage, busy_ns)| StageBusy {
                            stage: stage_name(names.stages, stage.into()),
                            busy_ns,
                        })
                        .collect(),
                };
                (t.busy_ns, t.thread, row)
            })
            .collect();
        rows.sort_by_key(|(busy, thread, _)| (std::cmp::Reverse(*busy), *thread));
        self.resources = rows.into_iter().map(|r| r.2).collect();
        self.bottleneck = (self.resources.first())
            .filter(|r| r.busy_ns > 0 && measured_frames > 0 && window_ns > 0)
            .map(|r| Bottleneck {
                resource: r.name.clone(),
                queue: r.queue,
                stage: r
                    .stages
                    .first()
                    .map(|s| s.stage.clone())
                    .unwrap_or_default(),
                busy_pct: r.busy_pct,
                fps_bound: measured_frames as f64 / (r.busy_ns as f64 / 1e9),
            });
    }
}

/// `from→to`.
pub fn pair_name(stages: &[String], from: u16, to: u16) -> String {
    format!(
        "{}→{}",
        stage_name(stages, from.into()),
        stage_name(stages, to.into())
    )
}
