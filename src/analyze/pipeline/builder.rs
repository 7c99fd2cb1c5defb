//! The summary from a run's spans, however they are held (a loaded run's `Vec<Span>`, the
//! columns of `compact`): each measured frame's waits, each thread's busy time, the
//! bottleneck. The spans are read by index, in memory: no second read of the run file.

use std::collections::BTreeMap;

use super::resources::{thread_busy, Clipped, ThreadBusy};
use super::waits::{frame_waits, StageSpan};
use super::{
    has_thread_info, is_queue, thread_labels, Bottleneck, FrameBreakdown, Names, PipelineSummary,
    RepeatedOverlap, ResourceRow, StageBusy, WaitRow,
};
use crate::analyze::compact::values::NsValues;
use crate::analyze::frames::{Frames, Measured, NO_FRAME};
use crate::analyze::stages::stage_name;
use crate::analyze::{StageRow, WorstFrame};
use crate::model::Run;

/// A span as the summary reads it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpanRow {
    /// The index of its frame when that frame is measured.
    pub measured_frame: Option<u32>,
    pub thread: u32,
    pub stage: u16,
    pub start_ns: i64,
    pub dur_ns: i64,
}

/// What the summary needs besides the spans.
pub(crate) struct PipelineInput<'a> {
    pub names: Names<'a>,
    /// The measured window: busy time is counted inside it.
    pub window: (i64, i64),
    /// Frame indices are below this.
    pub frame_slots: usize,
    pub measured_frames: u64,
    /// Some measured frame has two spans or more (else there are no waits to look for).
    pub multi_span: bool,
    /// Frame indices of the worst frames, whose breakdown goes into their rows.
    pub worst: &'a [u32],
}

/// Each wait pair's name and its waits, sorted.
pub type WaitValues = Vec<(String, Vec<i64>)>;

/// The summary, and each worst frame's breakdown to put into its row.
pub(crate) struct Pipeline {
    summary: PipelineSummary,
    /// In the order of [`PipelineInput::worst`].
    breakdowns: Vec<Option<FrameBreakdown>>,
}

impl Pipeline {
    /// The summary, each worst frame's breakdown put into its row of `rows`.
    pub fn into_summary(self, rows: &mut [WorstFrame]) -> PipelineSummary {
        for (row, b) in rows.iter_mut().zip(self.breakdowns) {
            if let Some(b) = b {
                b.fill(row);
            }
        }
        self.summary
    }
}

/// The summary of spans `0..spans`, read by `row`; `None` without measured frames.
pub(crate) fn summarize(
    input: &PipelineInput,
    spans: usize,
    row: impl Fn(usize) -> SpanRow,
) -> Option<Pipeline> {
    if input.measured_frames == 0 {
        return None;
    }
    let mut summary = PipelineSummary {
        single_stage: !input.multi_span,
        no_threads: !has_thread_info(input.names.threads),
        ..PipelineSummary::default()
    };
    let breakdowns = if input.multi_span {
        summary.waits_from(input, spans, &row, None)
    } else {
        Vec::new()
    };
    if !summary.no_threads {
        let (from, to) = input.window;
        let busy = thread_busy(spans, |i| {
            let r = row(i);
            let clipped = Clipped {
                thread: r.thread,
                stage: r.stage,
                from: r.start_ns.max(from),
                to: r.start_ns.saturating_add(r.dur_ns).min(to),
            };
            (r.dur_ns >= 0 && clipped.from < clipped.to).then_some(clipped)
        });
        summary.resources_from(busy, &input.names, input.window, input.measured_frames);
    }
    Some(Pipeline {
        summary,
        breakdowns,
    })
}

/// A loaded run's span `i` for [`summarize`].
pub(crate) fn loaded_row(run: &Run, frames: &Frames, measured: &Measured, i: usize) -> SpanRow {
    let (span, f) = (&run.spans[i], frames.span_frame[i]);
    SpanRow {
        measured_frame: (f != NO_FRAME && measured.in_window[f as usize]).then_some(f),
        thread: span.thread,
        stage: span.stage,
        start_ns: span.start_ns,
        dur_ns: span.dur_ns,
    }
}

/// Each wait pair's waits over the measured frames of a loaded run, sorted ascending, in
/// the wait table's order (what `compare` resamples for `--show 'convert→encode.p99'`).
pub fn wait_values(run: &Run, frames: &Frames, measured: &Measured) -> WaitValues {
    let input = PipelineInput {
        names: Names {
            stages: &run.stages,
            threads: &run.threads,
        },
        window: (i64::MIN, i64::MAX),
        frame_slots: frames.all.len(),
        measured_frames: measured.order.len() as u64,
        multi_span: true,
        worst: &[],
    };
    let mut values = WaitValues::new();
    let row = |i| loaded_row(run, frames, measured, i);
    let mut summary = PipelineSummary::default();
    summary.waits_from(&input, run.spans.len(), &row, Some(&mut values));
    values
}

/// Whether some measured frame has two spans or more, from the stage table's counts.
pub(crate) fn multi_span(rows: &[StageRow], measured_frames: u64) -> bool {
    rows.iter().map(|r| r.dist.count).sum::<u64>() > measured_frames
}

/// The measured spans (non-negative ones of measured frames) grouped by frame, by a
/// counting sort: `rows[ends[f - 1]..ends[f]]` are frame `f`'s, in the order recorded.
/// 4 bytes a span and 4 a frame, where a copy of the spans would take 24 a span.
struct ByFrame {
    rows: Vec<u32>,
    ends: Vec<u32>,
}

impl ByFrame {
    fn frame(&self, f: usize) -> &[u32] {
        let from = if f == 0 { 0 } else { self.ends[f - 1] };
        &self.rows[from as usize..self.ends[f] as usize]
    }
}

/// Groups the measured spans by frame; also counts the frames whose spans were recorded
/// on one thread out of start order.
fn by_frame(spans: usize, row: &impl Fn(usize) -> SpanRow, slots: usize) -> (ByFrame, u64) {
    let measured = |i: usize| {
        let r = row(i);
        r.measured_frame.filter(|_| r.dur_ns >= 0).map(|f| (f, r))
    };
    let mut ends = vec![0u32; slots];
    // By thread index (the run's thread table: small): the (frame, start) of its last span.
    let mut last_on_thread: Vec<Option<(u32, i64)>> = Vec::new();
    let mut reordered: Vec<u32> = Vec::new();
    for i in 0..spans {
        let Some((f, r)) = measured(i) else {
            continue;
        };
        ends[f as usize] += 1;
        let t = r.thread as usize;
        if t >= last_on_thread.len() {
            last_on_thread.resize(t + 1, None);
        }
        let last = last_on_thread[t].replace((f, r.start_ns));
        if last.is_some_and(|(lf, start)| lf == f && r.start_ns < start) {
            reordered.push(f);
        }
    }
    reordered.sort_unstable();
    reordered.dedup();
    // Counts → starts; placing a frame's rows moves its start to its end.
    let mut sum = 0u32;
    for e in &mut ends {
        (*e, sum) = (sum, sum + *e);
    }
    let mut rows = vec![0u32; sum as usize];
    for i in 0..spans {
        if let Some((f, _)) = measured(i) {
            let at = &mut ends[f as usize];
            rows[*at as usize] = i as u32;
            *at += 1;
        }
    }
    (ByFrame { rows, ends }, reordered.len() as u64)
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
    /// The waits of every measured frame, the wait table, and the worst frames'
    /// breakdowns (in `input.worst`'s order); with `values`, each pair's waits too.
    fn waits_from(
        &mut self,
        input: &PipelineInput,
        spans: usize,
        row: &impl Fn(usize) -> SpanRow,
        mut values: Option<&mut WaitValues>,
    ) -> Vec<Option<FrameBreakdown>> {
        let (names, worst) = (&input.names, input.worst);
        let (grouped, reordered) = by_frame(spans, row, input.frame_slots);
        self.reordered_frames = reordered;
        let mut breakdowns = vec![None; worst.len()];
        let mut pairs: BTreeMap<(u16, u16), PairTally> = BTreeMap::new();
        let frames = input.measured_frames as usize;
        let (mut work, mut waited) = (
            NsValues::for_range(0, 0, frames),
            NsValues::for_range(0, 0, frames),
        );
        let mut spans: Vec<StageSpan> = Vec::new();
        for frame in 0..input.frame_slots {
            let rows = grouped.frame(frame);
            if rows.is_empty() {
                continue;
            }
            spans.clear();
            spans.extend(rows.iter().map(|&i| {
                let r = row(i as usize);
                StageSpan {
                    start_ns: r.start_ns,
                    end_ns: r.start_ns.saturating_add(r.dur_ns),
                    stage: r.stage,
                    thread: 0,
                }
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
            if let Some(pos) = worst.iter().position(|&f| f as usize == frame) {
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
        drop(grouped);
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
        breakdowns
    }

    fn resources_from(
        &mut self,
        busy: Vec<ThreadBusy>,
        names: &Names,
        window: (i64, i64),
        measured_frames: u64,
    ) {
        let labels = thread_labels(names.threads);
        let label =
            |t: u32| (labels.get(t as usize).cloned()).unwrap_or_else(|| format!("thread #{t}"));
        let window_ns = window.1.saturating_sub(window.0);
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
