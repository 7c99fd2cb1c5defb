//! Pipelining insight: where each frame waited between its stages, what each thread was
//! busy with, and which one bounds the rate (docs/metrics.md, "Waits" and "Resources").
//!
//! One computation serves both analyses: the loaded run ([`crate::analyze::analyze`]) and
//! the columnar one (`compact`, from the columns it read the spans into). Each lets it read
//! every span by index, with the index of its frame when that frame is measured; nothing it
//! computes depends on the indices or on the order spans come in, so both give the same
//! numbers.

mod builder;
pub(crate) mod by_frame;
mod input;
pub mod resources;
pub mod waits;

use serde::{Deserialize, Serialize};

pub(crate) use self::builder::{
    multi_span, summarize, summarize_single_spans, summarize_swept, wait_values_of, LoadedRows,
    Pipeline,
};
pub use self::builder::{pair_name, wait_values, WaitValues};
pub(crate) use self::input::{PipelineInput, SpanRow, SpanRows};
use super::{Dist, WorstFrame};
use crate::model::ThreadInfo;
use crate::units::plural;

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

/// A thread, or a queue the program named (a GPU stream), as a resource over the window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResourceRow {
    /// The thread's or queue's name, with its tid where names repeat (`tid N` when it has none).
    pub name: String,
    /// A queue (`Queue` in the SDK), not a thread of the program.
    #[serde(default)]
    pub queue: bool,
    /// Its index in the run's threads.
    #[serde(skip)]
    pub thread: Option<u32>,
    /// Busy time: time on a CPU inside its spans where the run has a scheduler timeline
    /// (`PipelineSummary::busy_on_cpu`), else the union of its spans.
    pub busy_ns: i64,
    /// The union of its spans' wall time, when `busy_ns` is time on a CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_busy_ns: Option<i64>,
    /// busy ÷ window × 100.
    pub busy_pct: f64,
    /// Largest first.
    pub stages: Vec<StageBusy>,
}

/// The busiest resource: what bounds the rate if nothing else does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bottleneck {
    pub resource: String,
    /// The resource is a queue the program named, not a thread.
    #[serde(default)]
    pub queue: bool,
    /// The stage that occupies it most.
    pub stage: String,
    pub busy_pct: f64,
    /// Measured frames ÷ its busy seconds: the rate it allows at 100% busy.
    pub fps_bound: f64,
}

impl Bottleneck {
    /// The first of `resources` (sorted busiest first), when it was busy and frames were
    /// measured in a window.
    pub fn of(resources: &[ResourceRow], frames: u64, window_ns: i64) -> Option<Bottleneck> {
        (resources.first())
            .filter(|r| r.busy_ns > 0 && frames > 0 && window_ns > 0)
            .map(|r| Bottleneck {
                resource: r.name.clone(),
                queue: r.queue,
                stage: (r.stages.first())
                    .map(|s| s.stage.clone())
                    .unwrap_or_default(),
                busy_pct: r.busy_pct,
                fps_bound: frames as f64 / (r.busy_ns as f64 / 1e9),
            })
    }
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
    /// Frames with a span recorded after a later-starting span of theirs on the same thread.
    pub reordered_frames: u64,
    /// Threads and queues by busy time, largest first; empty without thread information.
    pub resources: Vec<ResourceRow>,
    pub bottleneck: Option<Bottleneck>,
    /// Threads' busy time is their time on a CPU (from the scheduler), not their spans'
    /// wall time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub busy_on_cpu: bool,
    /// The run says nothing of threads (an import without thread ids).
    pub no_threads: bool,
    pub repeated_overlaps: Vec<RepeatedOverlap>,
}

impl PipelineSummary {
    /// One line for each thing a reader must know before trusting the tables.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        match (self.single_stage, self.no_threads) {
            (true, true) => notes.push(
                "Frame times only (one span a frame, no thread ids, as in PresentMon and \
                 MangoHud logs): no waits, thread utilisation or bottleneck to compute."
                    .into(),
            ),
            (single_stage, no_threads) => {
                if single_stage {
                    notes.push(
                        "Waits need two stages or more per frame: every measured frame has one \
                         span, so there are none to show (record each step of a frame as its \
                         own stage)."
                            .into(),
                    );
                }
                if no_threads {
                    notes.push(
                        "The run has no thread ids: thread utilisation and the bottleneck are \
                         not computed (a CSV or JSONL import takes a tid column)."
                            .into(),
                    );
                }
            }
        }
        for r in &self.repeated_overlaps {
            notes.push(format!(
                "{} of stage {} {} an earlier span of {} on thread {} (recursion, or a begin \
                 without its end): the thread's busy time counts that time once.",
                plural(r.spans, "span", "spans"),
                r.stage,
                if r.spans == 1 { "overlaps" } else { "overlap" },
                r.stage,
                r.thread
            ));
        }
        if self.reordered_frames > 0 {
            notes.push(format!(
                "{} recorded on one thread out of start order (nested or late-recorded \
                 spans): waits are taken in start order.",
                plural(self.reordered_frames, "frame had spans", "frames had spans"),
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
#[derive(Clone, Copy)]
pub struct Names<'a> {
    pub stages: &'a [String],
    pub threads: &'a [ThreadInfo],
}

/// Whether `threads` tell threads apart: an importer without thread ids leaves tid 0 (no
/// thread of a process has it), with the process's pid where it knows it (PresentMon) or 0.
pub fn has_thread_info(threads: &[ThreadInfo]) -> bool {
    threads.iter().any(|t| t.tid != 0)
}

/// Whether a thread of the run is a queue the program named (`Queue` in the SDK): the SDK
/// stores a queue as a thread with a pseudo tid, so the run file has no column for it.
pub fn is_queue(thread: &ThreadInfo) -> bool {
    framelab_probe::wire::is_queue_tid(thread.tid)
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
            ("no thread ids", "The run has no thread ids"),
            (
                "recursion",
                "1 span of stage b overlaps an earlier span of b on thread main",
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

    /// A frame is out of start order by its own spans on a thread, whatever spans of other
    /// frames the thread recorded between them.
    #[test]
    fn a_frame_is_reordered_by_its_own_spans() {
        let (label, mut run) = pipeline_edge_runs().remove(3);
        assert_eq!(label, "reordered");
        // In order again, then frame 7's a recorded after frame 8's a: frame 7 is b, a.
        run.spans.sort_by_key(|s| (s.frame, s.start_ns));
        let a7 = run.spans.remove(14);
        assert_eq!((a7.frame, a7.stage), (7, 0));
        run.spans.insert(15, a7);
        let p = analyze(&run).pipeline.unwrap();
        assert_eq!(p.reordered_frames, 1);
        assert_eq!(p.waits[0].dist.as_ref().unwrap().count, 20);
        assert_eq!(p.resources[0].busy_ns, 20 * 300 * US);
    }
}
