//! Frames from spans: start, end, total; the measured window; intervals between frames.
//!
//! A frame is every span that carries its id, over all threads and processes:
//! start = earliest span start, end = latest span end, total = end − start
//! (docs/metrics.md, "Frames").

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::model::{EndReason, Run, RunMeta, Span};

/// Marks a span that belongs to no frame (it was skipped).
pub const NO_FRAME: u32 = u32::MAX;

/// The longest span taken as measured: 2^53 ns (104 days). No stage lasts that long, and
/// past it the f64 arithmetic of every statistic no longer holds a nanosecond exactly.
pub const MAX_SPAN_NS: i64 = 1 << 53;

/// A span no frame can use: a negative duration (a clock that went backwards), one over
/// [`MAX_SPAN_NS`], or one that ends past the clock's range (a corrupt record).
pub fn out_of_range(start_ns: i64, dur_ns: i64) -> bool {
    !(0..=MAX_SPAN_NS).contains(&dur_ns) || start_ns.checked_add(dur_ns).is_none()
}

/// The first span skipped as out of range, named in the report's note.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadSpan {
    pub frame: u64,
    pub start_ns: i64,
    pub dur_ns: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub id: u64,
    pub start_ns: i64,
    pub end_ns: i64,
}

impl Frame {
    /// End-to-end latency, including any time spent waiting between stages.
    pub fn total_ns(&self) -> i64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// splitmix64's finaliser: every input bit moves every output bit, so ids that differ only
/// in their high bits (timestamps, shifted counters) still spread over the table.
/// Not resistant to crafted collisions, which a run file has no reason to contain.
#[derive(Clone, Copy, Debug, Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0 ^ b as u64);
        }
    }
    fn write_u64(&mut self, id: u64) {
        let mut z = id.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        self.0 = z ^ (z >> 31);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type IdMap = HashMap<u64, u32, BuildHasherDefault<IdHasher>>;

/// Maps a frame id to its index in `Frames::all`.
#[derive(Clone, Debug)]
enum Lookup {
    /// Ids are dense enough for a table: `slots[id − min]`, NO_FRAME where absent.
    Dense { min: u64, slots: Vec<u32> },
    /// Sparse ids (hashes, timestamps): a hash map.
    Hashed { map: IdMap },
}

/// Every frame of a run, and which frame each span belongs to.
#[derive(Clone, Debug)]
pub struct Frames {
    /// Frames with at least one usable span, in the order their first span appears.
    pub all: Vec<Frame>,
    /// For each span of the run, the index of its frame in `all`, or `NO_FRAME`.
    pub span_frame: Vec<u32>,
    /// Spans skipped because their duration is out of range ([`out_of_range`]).
    pub negative_spans: u64,
    /// The first of them.
    pub first_bad_span: Option<BadSpan>,
    /// The latest end of any usable span.
    pub last_end_ns: Option<i64>,
    lookup: Lookup,
}

impl Frames {
    /// Groups spans by frame id in two passes, without per-span allocation.
    pub fn from_spans(spans: &[Span]) -> Frames {
        let usable = |s: &Span| !out_of_range(s.start_ns, s.dur_ns);
        let mut negative_spans = 0u64;
        let mut first_bad_span = None;
        let (mut min_id, mut max_id) = (u64::MAX, 0u64);
        // Runs of adjacent spans with one id: an upper bound of the distinct ids, to size a map.
        let (mut id_runs, mut previous) = (0usize, None);
        for s in spans {
            if usable(s) {
                min_id = min_id.min(s.frame);
                max_id = max_id.max(s.frame);
                if previous != Some(s.frame) {
                    id_runs += 1;
                    previous = Some(s.frame);
                }
            } else {
                negative_spans += 1;
                first_bad_span.get_or_insert(BadSpan {
                    frame: s.frame,
                    start_ns: s.start_ns,
                    dur_ns: s.dur_ns,
                });
            }
        }
        let usable_count = spans.len() as u64 - negative_spans;
        let mut span_frame = vec![NO_FRAME; spans.len()];
        let mut all: Vec<Frame> = Vec::new();
        let mut last_end_ns: Option<i64> = None;
        if usable_count == 0 {
            return Frames {
                all,
                span_frame,
                negative_spans,
                first_bad_span,
                last_end_ns,
                lookup: Lookup::Hashed {
                    map: IdMap::default(),
                },
            };
        }

        // A direct table costs 4 bytes per id in the range: worth it unless ids are sparse.
        let range = max_id - min_id;
        let dense = range < usable_count.saturating_mul(4).saturating_add(1024);
        let mut lookup = if dense {
            Lookup::Dense {
                min: min_id,
                slots: vec![NO_FRAME; range as usize + 1],
            }
        } else {
            // Capped: with many repeated ids in no order the bound is loose, and growing the
            // map later beats reserving memory for ids that never come.
            let capacity = id_runs.min(usable_count as usize / 2 + 1024);
            Lookup::Hashed {
                map: IdMap::with_capacity_and_hasher(capacity, Default::default()),
            }
        };

        // Spans of one frame are often adjacent: remember the last id looked up.
        let mut last: Option<(u64, u32)> = None;
        for (i, s) in spans.iter().enumerate() {
            if !usable(s) {
                continue;
            }
            let idx = match last {
                Some((id, idx)) if id == s.frame => idx,
                _ => {
                    let next = all.len() as u32;
                    let slot = match &mut lookup {
                        Lookup::Dense { min, slots } => &mut slots[(s.frame - *min) as usize],
                        Lookup::Hashed { map } => map.entry(s.frame).or_insert(NO_FRAME),
                    };
                    if *slot == NO_FRAME {
                        *slot = next;
                        all.push(Frame {
                            id: s.frame,
                            start_ns: i64::MAX,
                            end_ns: i64::MIN,
                        });
                    }
                    last = Some((s.frame, *slot));
                    *slot
                }
            };
            // Saturating: a corrupt record must not overflow (and panic in debug builds).
            let end = s.start_ns.saturating_add(s.dur_ns);
            let f = &mut all[idx as usize];
            f.start_ns = f.start_ns.min(s.start_ns);
            f.end_ns = f.end_ns.max(end);
            span_frame[i] = idx;
            last_end_ns = Some(last_end_ns.map_or(end, |l| l.max(end)));
        }
        Frames {
            all,
            span_frame,
            negative_spans,
            first_bad_span,
            last_end_ns,
            lookup,
        }
    }

    /// Index in `all` of the frame with this id, if it has a usable span.
    pub fn index_of(&self, id: u64) -> Option<u32> {
        match &self.lookup {
            Lookup::Dense { min, slots } => {
                let off = id.checked_sub(*min)?;
                let slot = *slots.get(usize::try_from(off).ok()?)?;
                (slot != NO_FRAME).then_some(slot)
            }
            Lookup::Hashed { map } => map.get(&id).copied(),
        }
    }
}

/// The measured window actually used, after repairing an unfinished run's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolvedWindow {
    pub start_ns: i64,
    pub end_ns: i64,
    /// The run was not finalised (end ≤ start), so the window ends at the last span end.
    pub end_from_last_span: bool,
}

impl ResolvedWindow {
    pub fn length_ns(&self) -> i64 {
        self.end_ns.saturating_sub(self.start_ns).max(0)
    }

    /// Window length in seconds, `None` when it is empty (nothing to divide by).
    pub fn seconds(&self) -> Option<f64> {
        let len = self.length_ns();
        (len > 0).then(|| len as f64 / 1e9)
    }
}

/// The window from the run's metadata. A run killed before its first commit has end ≤ start,
/// and then the last span end closes it; a finished run's window is as recorded, even empty
/// (a command that exited during the warmup).
pub fn resolve_window(meta: &RunMeta, last_span_end_ns: Option<i64>) -> ResolvedWindow {
    if meta.window_end_ns > meta.window_start_ns || meta.end_reason != EndReason::Unfinished {
        return ResolvedWindow {
            start_ns: meta.window_start_ns,
            end_ns: meta.window_end_ns,
            end_from_last_span: false,
        };
    }
    ResolvedWindow {
        start_ns: meta.window_start_ns,
        end_ns: last_span_end_ns
            .unwrap_or(meta.window_start_ns)
            .max(meta.window_start_ns),
        end_from_last_span: true,
    }
}

/// Frames split by the window: those whose end falls in [start, end] are measured.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// Indices into `Frames::all` of the measured frames, ordered by end (then id).
    pub order: Vec<u32>,
    /// Per frame index: measured or not.
    pub in_window: Vec<bool>,
    /// Frames that ended before the window opened.
    pub warmup_frames: u64,
    /// Frames that ended after it closed.
    pub after_frames: u64,
    /// Frames still open when the command stopped (see `open_at_stop`), left out of the
    /// window though they ended inside it.
    pub open_frames: u64,
    /// The stages those frames lack, by stage id, ascending.
    pub open_missing_stages: Vec<u16>,
}

impl Measured {
    /// The measured frames' totals, in end order.
    pub fn totals_ns(&self, frames: &Frames) -> Vec<i64> {
        self.order
            .iter()
            .map(|&i| frames.all[i as usize].total_ns())
            .collect()
    }

    /// The measured frames' ends, ascending.
    pub fn ends_ns(&self, frames: &Frames) -> Vec<i64> {
        self.order
            .iter()
            .map(|&i| frames.all[i as usize].end_ns)
            .collect()
    }
}

pub fn measure(frames: &Frames, window: &ResolvedWindow) -> Measured {
    let mut in_window = vec![false; frames.all.len()];
    let mut keyed: Vec<(i64, u64, u32)> = Vec::with_capacity(frames.all.len());
    let (mut warmup_frames, mut after_frames) = (0u64, 0u64);
    for (i, f) in frames.all.iter().enumerate() {
        if f.end_ns < window.start_ns {
            warmup_frames += 1;
        } else if f.end_ns > window.end_ns {
            after_frames += 1;
        } else {
            in_window[i] = true;
            keyed.push((f.end_ns, f.id, i as u32));
        }
    }
    // Frames usually arrive nearly in end order, which this sort handles in close to linear time.
    keyed.sort_unstable();
    Measured {
        order: keyed.into_iter().map(|(_, _, i)| i).collect(),
        in_window,
        warmup_frames,
        after_frames,
        ..Measured::default()
    }
}

/// The window and the frames measured in it, as every report and comparison must see them:
/// `measure`, less the frames still open when the command stopped.
pub fn measure_run(run: &Run, frames: &Frames) -> (ResolvedWindow, Measured) {
    let window = resolve_window(&run.meta, frames.last_end_ns);
    let mut measured = measure(frames, &window);
    let open = open_at_stop(&run.spans, frames, &run.meta);
    let mut excluded = false;
    for &i in &open.indices {
        if std::mem::take(&mut measured.in_window[i as usize]) {
            measured.open_frames += 1;
            excluded = true;
        }
    }
    if excluded {
        let in_window = &measured.in_window;
        measured.order.retain(|&i| in_window[i as usize]);
        measured.open_missing_stages = open.missing_stages;
    }
    (window, measured)
}

/// Whether the command may have been stopped in the middle of a frame: framelab stopped it,
/// it died, or the run was never finalised. A command that exited cleanly finished its frames.
pub(crate) fn stopped_mid_frame(meta: &RunMeta) -> bool {
    match meta.end_reason {
        EndReason::Exited => meta
            .exit
            .as_ref()
            .is_some_and(|e| e.crashed || e.signal.is_some() || e.code.is_some_and(|c| c != 0)),
        EndReason::Duration | EndReason::Interrupted | EndReason::Unfinished => true,
    }
}

/// Frames cut short by the command's stop, and the stages they lack.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenFrames {
    /// Indices into `Frames::all`.
    pub indices: Vec<u32>,
    pub missing_stages: Vec<u16>,
}

/// How many of the last frames (by start) can be open at once: a pipeline this deep.
pub(crate) const MAX_OPEN_FRAMES: usize = 8;
/// How many frames before those tell which stages a complete frame has.
pub(crate) const REFERENCE_FRAMES: usize = 16;

/// Frames still open when the command stopped: walking back from the last frame to start,
/// each that lacks a stage every one of the reference frames before the tail had, until one
/// that lacks none. A pipeline of depth d leaves up to d such frames; a frame in the middle
/// of the run that skips a stage is never one of them.
pub fn open_at_stop(spans: &[Span], frames: &Frames, meta: &RunMeta) -> OpenFrames {
    let mut by_start: Vec<(i64, u32)> = (frames.all.iter().enumerate())
        .map(|(i, f)| (f.start_ns, i as u32))
        .collect();
    if !stopped_mid_frame(meta) || by_start.len() < 2 {
        return OpenFrames::default();
    }
    by_start.sort_unstable();
    let tail = MAX_OPEN_FRAMES.min(by_start.len() / 2);
    let reference_from = by_start.len() - tail - REFERENCE_FRAMES.min(by_start.len() - tail);
    let looked_at = &by_start[reference_from..];
    // Stage sets of the few frames looked at, from one pass over the spans.
    let mut slot = vec![usize::MAX; frames.all.len()];
    for (k, &(_, i)) in looked_at.iter().enumerate() {
        slot[i as usize] = k;
    }
    let mut stages: Vec<Vec<u16>> = vec![Vec::new(); looked_at.len()];
    for (span, &frame) in spans.iter().zip(&frames.span_frame) {
        if let Some(&k) = slot.get(frame as usize).filter(|&&k| k != usize::MAX) {
            if !stages[k].contains(&span.stage) {
                stages[k].push(span.stage);
            }
        }
    }
    open_from_stages(&stages, tail, |k| looked_at[k].1)
}

/// The open frames among the last `tail` of `stages` (each frame's distinct stages, in start
/// order): those, from the end back, lacking a stage every earlier frame had. `index_of(k)` is
/// frame k's index into `Frames::all`. Shared by the loaded-run and the columnar analyses.
pub(crate) fn open_from_stages(
    stages: &[Vec<u16>],
    tail: usize,
    index_of: impl Fn(usize) -> u32,
) -> OpenFrames {
    let reference = &stages[..stages.len() - tail];
    let Some((first, rest)) = reference.split_first() else {
        return OpenFrames::default();
    };
    let required: Vec<u16> = (first.iter().copied())
        .filter(|stage| rest.iter().all(|other| other.contains(stage)))
        .collect();
    let mut open = OpenFrames::default();
    for k in (stages.len() - tail..stages.len()).rev() {
        let missing: Vec<u16> = (required.iter().copied())
            .filter(|stage| !stages[k].contains(stage))
            .collect();
        if missing.is_empty() {
            break;
        }
        open.indices.push(index_of(k));
        open.missing_stages.extend(missing);
    }
    open.missing_stages.sort_unstable();
    open.missing_stages.dedup();
    open
}

/// end_i − end_{i−1} over ends in ascending order: N ends give N − 1 intervals.
pub fn intervals_ns(ends_ns: &[i64]) -> Vec<i64> {
    ends_ns
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::span;

    #[test]
    fn frame_spans_threads_and_processes() {
        // Frame 7: capture on thread 0 [100, 150], encode on thread 1 (another process)
        // [300, 420], send on thread 0 [430, 440]. start 100, end 440, total 340, which
        // includes the 150 ns it waited between capture and encode.
        let spans = [
            span(7, 0, 0, 100, 50),
            span(8, 0, 0, 200, 50),
            span(7, 1, 1, 300, 120),
            span(7, 2, 0, 430, 10),
        ];
        let f = Frames::from_spans(&spans);
        assert_eq!(f.all.len(), 2);
        let i = f.index_of(7).unwrap() as usize;
        assert_eq!(f.all[i].start_ns, 100);
        assert_eq!(f.all[i].end_ns, 440);
        assert_eq!(f.all[i].total_ns(), 340);
        assert_eq!(f.span_frame, vec![0, 1, 0, 0]);
        assert_eq!(f.last_end_ns, Some(440));
        assert_eq!(f.index_of(9), None);
        assert_eq!(f.index_of(0), None);
    }

    #[test]
    fn sparse_ids_group_the_same_way() {
        let big = u64::MAX - 5;
        let spans = [
            span(big, 0, 0, 10, 5),
            span(3, 0, 0, 20, 5),
            span(big, 1, 0, 40, 10),
        ];
        let f = Frames::from_spans(&spans);
        assert_eq!(f.all.len(), 2);
        let i = f.index_of(big).unwrap() as usize;
        assert_eq!((f.all[i].start_ns, f.all[i].end_ns), (10, 50));
        assert_eq!(f.span_frame[0], f.span_frame[2]);
        assert_eq!(f.index_of(4), None);
    }

    #[test]
    fn ids_that_differ_only_in_high_bits_stay_apart() {
        // Ids k·2⁴⁰ (sparse: the hash map path), two spans each, interleaved.
        let mut spans = Vec::new();
        for k in 0..100u64 {
            spans.push(span(k << 40, 0, 0, k as i64 * 10, 3));
        }
        for k in 0..100u64 {
            spans.push(span(k << 40, 1, 1, k as i64 * 10 + 5, 4));
        }
        let f = Frames::from_spans(&spans);
        assert_eq!(f.all.len(), 100);
        for k in 0..100u64 {
            let fr = f.all[f.index_of(k << 40).unwrap() as usize];
            assert_eq!(
                (fr.id, fr.start_ns, fr.total_ns()),
                (k << 40, k as i64 * 10, 9)
            );
        }
        assert_eq!(f.index_of(1 << 40 | 1), None);
    }

    #[test]
    fn negative_durations_are_skipped_and_counted() {
        let spans = [
            span(1, 0, 0, 100, -5),
            span(1, 1, 0, 100, 20),
            span(2, 0, 0, 0, -1),
        ];
        let f = Frames::from_spans(&spans);
        assert_eq!(f.negative_spans, 2);
        assert_eq!(f.all.len(), 1);
        assert_eq!(f.all[0].total_ns(), 20);
        assert_eq!(f.span_frame, vec![NO_FRAME, 0, NO_FRAME]);
        assert_eq!(f.index_of(2), None);
    }

    #[test]
    fn no_spans_no_frames() {
        let f = Frames::from_spans(&[]);
        assert!(f.all.is_empty());
        assert_eq!(f.last_end_ns, None);
        assert_eq!(f.index_of(0), None);
    }

    fn meta(start: i64, end: i64) -> RunMeta {
        RunMeta {
            window_start_ns: start,
            window_end_ns: end,
            ..RunMeta::default()
        }
    }

    #[test]
    fn window_excludes_warmup_and_after_by_frame_end() {
        // Ends: 50 (warmup), 100 (boundary: counts), 150, 200 (boundary: counts), 201 (after).
        let spans = [
            span(0, 0, 0, 0, 50),
            span(1, 0, 0, 60, 40),
            span(2, 0, 0, 90, 60), // starts in warmup, ends inside: measured
            span(3, 0, 0, 160, 40),
            span(4, 0, 0, 170, 31),
        ];
        let f = Frames::from_spans(&spans);
        let w = resolve_window(&meta(100, 200), f.last_end_ns);
        assert!(!w.end_from_last_span);
        let m = measure(&f, &w);
        assert_eq!(m.warmup_frames, 1);
        assert_eq!(m.after_frames, 1);
        assert_eq!(m.ends_ns(&f), vec![100, 150, 200]);
        assert_eq!(m.totals_ns(&f), vec![40, 60, 40]);
        assert_eq!(m.in_window, vec![false, true, true, true, false]);
        assert_eq!(intervals_ns(&m.ends_ns(&f)), vec![50, 50]);
    }

    #[test]
    fn unfinished_run_ends_window_at_last_span() {
        let w = resolve_window(&meta(100, 0), Some(900));
        assert_eq!((w.start_ns, w.end_ns), (100, 900));
        assert!(w.end_from_last_span);
        assert_eq!(w.seconds(), Some(800e-9));
        // Nothing recorded after the window start: an empty window, not a negative one.
        let w = resolve_window(&meta(100, 100), Some(50));
        assert_eq!(w.length_ns(), 0);
        assert_eq!(w.seconds(), None);
        let w = resolve_window(&meta(100, 0), None);
        assert_eq!(w.length_ns(), 0);
    }

    #[test]
    fn measured_frames_are_ordered_by_end_not_id() {
        // Frame 1 ends after frame 2 (out of order completion).
        let spans = [
            span(1, 0, 0, 0, 300),
            span(2, 0, 0, 100, 100),
            span(3, 0, 0, 350, 10),
        ];
        let f = Frames::from_spans(&spans);
        let m = measure(&f, &resolve_window(&meta(0, 1000), f.last_end_ns));
        let ids: Vec<u64> = m.order.iter().map(|&i| f.all[i as usize].id).collect();
        assert_eq!(ids, vec![2, 1, 3]);
        assert_eq!(intervals_ns(&m.ends_ns(&f)), vec![100, 60]);
    }

    /// Frames 0..n of stages 0, 1, 2 back to back, 100 ns each, frames 1000 ns apart.
    fn pipeline(n: u64, skip: impl Fn(u64, u16) -> bool) -> Vec<Span> {
        let mut spans = Vec::new();
        for f in 0..n {
            for stage in 0..3u16 {
                if !skip(f, stage) {
                    spans.push(span(f, stage, 0, f as i64 * 1000 + stage as i64 * 100, 100));
                }
            }
        }
        spans
    }

    fn stopped() -> RunMeta {
        RunMeta {
            end_reason: EndReason::Duration,
            ..RunMeta::default()
        }
    }

    #[test]
    fn frames_cut_short_at_the_tail_are_open() {
        // Depth 2: the last frame reached stage 0 only, the one before it stages 0 and 1.
        let spans = pipeline(40, |f, s| (f == 39 && s > 0) || (f == 38 && s == 2));
        let frames = Frames::from_spans(&spans);
        let open = open_at_stop(&spans, &frames, &stopped());
        let ids: Vec<u64> = (open.indices.iter())
            .map(|&i| frames.all[i as usize].id)
            .collect();
        assert_eq!(ids, vec![39, 38]);
        assert_eq!(open.missing_stages, vec![1, 2]);
        // A command that exited by itself finished its frames.
        let clean = RunMeta {
            end_reason: EndReason::Exited,
            ..RunMeta::default()
        };
        assert_eq!(open_at_stop(&spans, &frames, &clean), OpenFrames::default());
    }

    #[test]
    fn frames_that_skip_a_stage_mid_run_are_not_open() {
        // Every fifth frame skips stage 1 (a keyframe-only stage, say): the reference frames
        // do not all have it, so no frame is open for lacking it.
        let spans = pipeline(40, |f, s| f % 5 == 4 && s == 1);
        let frames = Frames::from_spans(&spans);
        assert!(open_at_stop(&spans, &frames, &stopped()).indices.is_empty());
        // One mid-run frame lacking stage 2 is not at the tail: it stays.
        let spans = pipeline(40, |f, s| f == 20 && s == 2);
        let frames = Frames::from_spans(&spans);
        assert!(open_at_stop(&spans, &frames, &stopped()).indices.is_empty());
    }

    #[test]
    fn open_frames_leave_the_measured_window() {
        let spans = pipeline(40, |f, s| f == 39 && s > 0);
        let run = Run {
            spans,
            stages: vec!["a".into(), "b".into(), "c".into()],
            meta: RunMeta {
                window_start_ns: 0,
                window_end_ns: 1_000_000,
                ..stopped()
            },
            ..Run::default()
        };
        let frames = Frames::from_spans(&run.spans);
        let (_, m) = measure_run(&run, &frames);
        assert_eq!((m.order.len(), m.open_frames), (39, 1));
        assert_eq!(m.open_missing_stages, vec![1, 2]);
        assert!(!m.in_window[frames.index_of(39).unwrap() as usize]);
    }

    #[test]
    fn intervals_of_fewer_than_two_ends_are_empty() {
        assert!(intervals_ns(&[]).is_empty());
        assert!(intervals_ns(&[5]).is_empty());
        assert_eq!(intervals_ns(&[5, 5, 9]), vec![0, 4]);
    }
}
