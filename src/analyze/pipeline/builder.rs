//! Collecting a run's spans and computing the summary: each measured frame's waits, each
//! thread's busy time, the bottleneck.

use std::collections::BTreeMap;

use super::resources::{thread_busy, Intervals};
use super::waits::{frame_waits, StageSpan};
use super::{
    has_thread_info, thread_labels, Bottleneck, FrameBreakdown, Names, PipelineSummary,
    RepeatedOverlap, ResourceRow, StageBusy, WaitRow,
};
use crate::analyze::stages::stage_name;
use crate::analyze::{Dist, StageRow, WorstFrame};
use crate::model::Span;

/// A measured frame's span as kept for its waits: 24 bytes (no thread: waits don't need it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct FrameRow {
    frame: u32,
    start_ns: i64,
    end_ns: i64,
    stage: u16,
}

/// Collects spans; [`PipelineBuilder::finish`] computes the summary.
pub struct PipelineBuilder {
    window: (i64, i64),
    /// Keep measured frames' spans for their waits (not when each has one span).
    keep_frames: bool,
    rows: Vec<FrameRow>,
    /// Per frame index: the last (thread, start) pushed, to see spans out of order.
    last: Vec<(u32, i64)>,
    reordered: Vec<bool>,
    groups: BTreeMap<(u32, u16), Intervals>,
}

impl PipelineBuilder {
    /// `frame_slots`: frame indices run below it; `multi_span`: some measured frame has two
    /// spans or more.
    pub fn new(window: (i64, i64), frame_slots: usize, multi_span: bool) -> PipelineBuilder {
        let slots = if multi_span { frame_slots } else { 0 };
        PipelineBuilder {
            window,
            keep_frames: multi_span,
            rows: Vec::new(),
            last: vec![(u32::MAX, i64::MIN); slots],
            reordered: vec![false; slots],
            groups: BTreeMap::new(),
        }
    }

    /// A span of the run, in the order recorded; `measured_frame` is its frame's index when
    /// that frame is measured. Negative durations (counted elsewhere) are skipped.
    pub fn push(&mut self, span: &Span, measured_frame: Option<u32>) {
        if span.dur_ns < 0 {
            return;
        }
        let end = span.end_ns();
        let (from, to) = (span.start_ns.max(self.window.0), end.min(self.window.1));
        if from < to {
            (self.groups.entry((span.thread, span.stage)).or_default()).push((from, to));
        }
        if let (true, Some(frame)) = (self.keep_frames, measured_frame) {
            let slot = frame as usize;
            if let Some(last) = self.last.get_mut(slot) {
                if last.0 == span.thread && span.start_ns < last.1 {
                    self.reordered[slot] = true;
                }
                *last = (span.thread, span.start_ns);
            }
            self.rows.push(FrameRow {
                frame,
                start_ns: span.start_ns,
                end_ns: end,
                stage: span.stage,
            });
        }
    }

    /// The summary, and the breakdown of each of `worst` (frame indices, same order).
    pub fn finish(
        mut self,
        names: &Names,
        measured_frames: u64,
        worst: &[u32],
    ) -> (PipelineSummary, Vec<Option<FrameBreakdown>>) {
        let mut summary = PipelineSummary {
            single_stage: !self.keep_frames && measured_frames > 0,
            reordered_frames: self.reordered.iter().filter(|&&r| r).count() as u64,
            ..PipelineSummary::default()
        };
        let mut breakdowns = vec![None; worst.len()];
        if self.keep_frames {
            self.rows.sort_unstable();
            summary.waits_from(&self.rows, names, worst, &mut breakdowns);
        }
        drop(self.rows);
        summary.no_threads = !has_thread_info(names.threads);
        if !summary.no_threads {
            summary.resources_from(self.groups, names, self.window, measured_frames);
        }
        (summary, breakdowns)
    }
}

/// Finishes `builder` for a run with these names: the summary (`None` without measured
/// frames), each worst frame's breakdown put into its row.
pub(crate) fn summarize(
    builder: PipelineBuilder,
    names: &Names,
    measured_frames: u64,
    worst: &[u32],
    rows: &mut [WorstFrame],
) -> Option<PipelineSummary> {
    if measured_frames == 0 {
        return None;
    }
    let (summary, breakdowns) = builder.finish(names, measured_frames, worst);
    for (row, b) in rows.iter_mut().zip(breakdowns) {
        if let Some(b) = b {
            b.fill(row);
        }
    }
    Some(summary)
}

/// Whether some measured frame has two spans or more, from the stage table's counts.
pub(crate) fn multi_span(rows: &[StageRow], measured_frames: u64) -> bool {
    rows.iter().map(|r| r.dist.count).sum::<u64>() > measured_frames
}

/// Pair of stage ids → the waits between them, overlaps, and when they first happened.
#[derive(Default)]
struct PairTally {
    waits: Vec<i64>,
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
        first: at,
        ..PairTally::default()
    });
    t.first = t.first.min(at);
    t
}

impl PipelineSummary {
    fn waits_from(
        &mut self,
        rows: &[FrameRow],
        names: &Names,
        worst: &[u32],
        breakdowns: &mut [Option<FrameBreakdown>],
    ) {
        let mut pairs: BTreeMap<(u16, u16), PairTally> = BTreeMap::new();
        let (mut work, mut waited) = (Vec::new(), Vec::new());
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
        self.waits = ordered
            .into_iter()
            .map(|((from, to), mut t)| WaitRow {
                name: pair_name(names.stages, from, to),
                from: stage_name(names.stages, from.into()),
                to: stage_name(names.stages, to.into()),
                dist: Dist::from_unsorted(&mut t.waits),
                overlaps: t.overlaps,
            })
            .collect();
        self.work = Dist::from_unsorted(&mut work);
        self.waited = Dist::from_unsorted(&mut waited);
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
