//! Pipelining insight: where each frame waited between its stages, what each thread was
//! busy with, and which one bounds the rate (docs/metrics.md, "Waits" and "Resources").
//!
//! One builder serves both analyses: the loaded run ([`crate::analyze::analyze`]) and the
//! columnar one (`compact`, which streams the spans past it once more). Each hands it every
//! span with the index of its frame when that frame is measured; nothing it computes depends
//! on the indices or on the order spans come in, so both give the same numbers.

pub mod resources;
pub mod waits;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use self::resources::{thread_busy, Intervals};
use self::waits::{frame_waits, StageSpan};
use super::stages::stage_name;
use super::{Dist, WorstFrame};
use crate::model::{Span, ThreadInfo};

/// A row of the wait table: the gaps from the end of `from` to the start of `to`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WaitRow {
    /// `from→to`.
    pub name: String,
    pub from: String,
    pub to: String,
    /// Of the waits (gap ≥ 0); `None` when the pair only ever overlapped.
    pub dist: Option<Dist>,
    /// Times `to` started before `from` ended in a frame: an overlap, not a wait.
    pub overlaps: u64,
}

/// A stage's share of a thread.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageBusy {
    pub stage: String,
    pub busy_ns: i64,
}

/// A thread as a resource over the measured window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResourceRow {
    /// The thread's name, with its tid where names repeat (`tid N` when it has none).
    pub name: String,
    pub busy_ns: i64,
    /// busy ÷ window × 100.
    pub busy_pct: f64,
    /// Largest first.
    pub stages: Vec<StageBusy>,
}

/// The busiest resource: what bounds the rate if nothing else does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bottleneck {
    pub resource: String,
    /// The stage that occupies it most.
    pub stage: String,
    pub busy_pct: f64,
    /// Measured frames ÷ its busy seconds: the rate it allows at 100% busy.
    pub fps_bound: f64,
}

/// Spans of one stage overlapping an earlier one of the same stage on one thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepeatedOverlap {
    pub stage: String,
    pub thread: String,
    pub spans: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PipelineSummary {
    /// In the order they first occur (the frame, then the place in it).
    pub waits: Vec<WaitRow>,
    /// Per measured frame: the time at least one of its stages ran (its critical path's busy
    /// time) and the sum of its waits; work + waits = total.
    pub work: Option<Dist>,
    pub waited: Option<Dist>,
    /// Every measured frame has a single span: there is nothing to wait between.
    pub single_stage: bool,
    /// Frames with a span recorded after a later-starting span of the same thread.
    pub reordered_frames: u64,
    /// Threads by busy time, largest first; empty without thread information.
    pub resources: Vec<ResourceRow>,
    pub bottleneck: Option<Bottleneck>,
    /// The run says nothing of threads (an import without thread ids).
    pub no_threads: bool,
    pub repeated_overlaps: Vec<RepeatedOverlap>,
}

impl PipelineSummary {
    /// One line for each thing a reader must know before trusting the tables.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.single_stage {
            notes.push(
                "Waits need two stages or more per frame: every measured frame has one span, \
                 so there are none to show (record each step of a frame as its own stage)."
                    .into(),
            );
        }
        if self.no_threads {
            notes.push(
                "The run has no thread information (imported without thread ids): thread \
                 utilisation and the bottleneck are not computed; import with a tid column."
                    .into(),
            );
        }
        for r in &self.repeated_overlaps {
            notes.push(format!(
                "{} {} of stage {} overlap an earlier span of {} on thread {} (recursion, or \
                 a begin without its end): the thread's busy time counts that time once.",
                r.spans,
                if r.spans == 1 { "span" } else { "spans" },
                r.stage,
                r.stage,
                r.thread
            ));
        }
        if self.reordered_frames > 0 {
            notes.push(format!(
                "{} {} recorded on one thread out of start order (nested or late-recorded \
                 spans): waits are taken in start order.",
                self.reordered_frames,
                if self.reordered_frames == 1 {
                    "frame had spans"
                } else {
                    "frames had spans"
                }
            ));
        }
        notes
    }
}

/// A worst frame's waits: its work, its waits' sum and the longest one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameBreakdown {
    pub work_ns: i64,
    pub wait_ns: i64,
    pub longest: Option<(String, i64)>,
}

impl FrameBreakdown {
    /// Puts the breakdown into its row of the worst frames.
    pub fn fill(self, row: &mut WorstFrame) {
        row.work_ns = Some(self.work_ns);
        row.wait_ns = Some(self.wait_ns);
        (row.longest_wait, row.longest_wait_ns) = self.longest.unzip();
    }
}

/// What the names in a summary come from.
pub struct Names<'a> {
    pub stages: &'a [String],
    pub threads: &'a [ThreadInfo],
}

/// Whether `threads` tell threads apart: an importer without thread ids leaves one of
/// pid 0, tid 0 (or none).
pub fn has_thread_info(threads: &[ThreadInfo]) -> bool {
    threads.iter().any(|t| t.pid != 0 || t.tid != 0)
}

/// Each thread's label: its name, with the tid where two threads share a name.
pub fn thread_labels(threads: &[ThreadInfo]) -> Vec<String> {
    threads
        .iter()
        .map(|t| {
            let shared = threads.iter().filter(|o| o.name == t.name).count() > 1;
            match (t.name.is_empty(), shared) {
                (true, _) => format!("tid {}", t.tid),
                (false, true) => format!("{} (tid {})", t.name, t.tid),
                (false, false) => t.name.clone(),
            }
        })
        .collect()
}

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
pub(crate) fn multi_span(rows: &[super::StageRow], measured_frames: u64) -> bool {
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

#[cfg(test)]
mod tests {
    use crate::analyze::analyze;
    use crate::analyze::fixtures::{pipeline_edge_runs, reference_run, MS, US};

    #[test]
    fn reference_run_waits_work_and_bottleneck() {
        let a = analyze(&reference_run());
        let p = a.pipeline.as_ref().unwrap();
        // Frames 2–9: capture ends 1 ms before encode starts (frame 7: 6 ms, the encoder
        // was busy with frame 6); send starts 1 ms after encode ends (0.5 ms for 6 and 7).
        let names: Vec<&str> = p.waits.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["capture→encode", "encode→send"]);
        let ce = p.waits[0].dist.as_ref().unwrap();
        assert_eq!((ce.count, ce.min_ns, ce.max_ns), (8, 1e6, 6e6));
        assert_eq!(ce.mean_ns, 13e6 / 8.0);
        let es = p.waits[1].dist.as_ref().unwrap();
        assert_eq!((es.min_ns, es.max_ns, es.mean_ns), (0.5e6, 1e6, 7e6 / 8.0));
        // Work + waits = total, frame by frame: 6.5 + 2, 16.5 + 1.5, 6.5 + 6.5.
        let (work, waited) = (p.work.as_ref().unwrap(), p.waited.as_ref().unwrap());
        assert_eq!(
            work.mean_ns + waited.mean_ns,
            a.total.as_ref().unwrap().mean_ns
        );
        assert_eq!((work.min_ns, work.max_ns), (6.5e6, 16.5e6));
        let w = &a.worst_frames[0];
        assert_eq!(
            (w.frame, w.work_ns, w.wait_ns),
            (6, Some(16_500 * US), Some(1_500 * US))
        );
        assert_eq!(w.longest_wait.as_deref(), Some("capture→encode"));
        let w = &a.worst_frames[1];
        assert_eq!((w.frame, w.longest_wait_ns), (7, Some(6 * MS)));
        // The encoder: 7 × 5 + 15 = 50 ms of the 80 ms window; 8 frames in 50 ms: 160 fps.
        let b = p.bottleneck.as_ref().unwrap();
        assert_eq!(
            (b.resource.as_str(), b.stage.as_str()),
            ("encoder", "encode")
        );
        assert_eq!(b.busy_pct, 62.5);
        assert_eq!(b.fps_bound, 160.0);
        // main: capture 1 ms × 8 (frame 2's at 20 ms) + send 0.5 ms × 8 = 12 of 80 ms.
        assert_eq!(p.resources[1].name, "main");
        assert_eq!(p.resources[1].busy_ns, 12 * MS);
        assert!(p.notes().is_empty());
    }

    #[test]
    fn each_edge_case_is_one_note() {
        let notes: Vec<(&str, Vec<String>)> = pipeline_edge_runs()
            .into_iter()
            .map(|(label, run)| (label, analyze(&run).pipeline.unwrap().notes()))
            .collect();
        let expect = [
            (
                "one span per frame",
                "Waits need two stages or more per frame",
            ),
            ("no thread ids", "no thread information"),
            (
                "recursion",
                "1 span of stage b overlap an earlier span of b on thread main",
            ),
            (
                "reordered",
                "1 frame had spans recorded on one thread out of start order",
            ),
        ];
        for ((label, notes), (want_label, want)) in notes.iter().zip(expect) {
            assert_eq!(*label, want_label);
            assert_eq!(notes.len(), 1, "{label}: {notes:?}");
            assert!(notes[0].contains(want), "{label}: {notes:?}");
        }
        let runs = pipeline_edge_runs();
        // One span per frame: no waits, still a bottleneck (20 × 0.2 ms of 30 ms).
        let p = analyze(&runs[0].1).pipeline.unwrap();
        assert!(p.waits.is_empty() && p.work.is_none());
        assert_eq!(p.bottleneck.unwrap().fps_bound, 20.0 / 4e-3);
        // No thread ids: waits (a→b, 0.1 ms each), no resources.
        let p = analyze(&runs[1].1).pipeline.unwrap();
        assert_eq!(p.waits[0].dist.as_ref().unwrap().p50_ns, 100e3);
        assert!(p.resources.is_empty() && p.bottleneck.is_none());
        // The recursing b overlaps its own frame's b: counted as an overlap b→b.
        let p = analyze(&runs[2].1).pipeline.unwrap();
        let bb = p.waits.iter().find(|w| w.name == "b→b").unwrap();
        assert_eq!((bb.overlaps, bb.dist.is_none()), (1, true));
        // Reordered spans give the same waits as in order.
        let p = analyze(&runs[3].1).pipeline.unwrap();
        assert_eq!(p.waits.len(), 1);
        assert_eq!(p.waits[0].dist.as_ref().unwrap().count, 20);
    }
}
