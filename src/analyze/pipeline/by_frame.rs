//! Every measured frame's waits (`waits::frame_waits`), tallied by stage pair: the spans
//! grouped by frame and swept frame by frame, over a few ranges of frames at once.
//!
//! Each range's worker reads the cheap frame column of every span and groups its own
//! frames' spans with a counting sort (4 bytes a span, 4 a frame): over all ranges, the
//! memory of one grouping, where a copy of the spans would take 24 bytes a span.

use std::collections::HashMap;
use std::ops::Range;

use super::input::{PipelineInput, SpanRow, SpanRows};
use super::waits::{frame_waits, FrameWaits, StageSpan};
use crate::analyze::compact::values::NsValues;

/// Ranges of frames swept at once.
const RANGES: usize = 4;

/// The waits between one pair of stages, its overlaps, and where they first happened.
pub struct PairTally {
    pub waits: NsValues,
    pub overlaps: u64,
    /// The first frame it occurred in (its start) and where in that frame.
    pub first: (i64, usize),
}

/// What the sweep of the measured frames found.
pub struct FramesWaits {
    /// By stage pair `(from, to)`, in no set order.
    pub pairs: Vec<((u16, u16), PairTally)>,
    /// Each measured frame's work and the sum of its waits, in no set order.
    pub work: NsValues,
    pub waited: NsValues,
    /// The waits of the worst frames, in `PipelineInput::worst`'s order.
    pub worst: Vec<Option<FrameWaits>>,
    /// Frames with a span recorded after a later-starting span of theirs on its thread.
    pub reordered: u64,
}

/// Sweeps every measured frame of `spans`.
pub fn sweep(input: &PipelineInput, spans: &impl SpanRows) -> FramesWaits {
    let slots = input.frame_slots;
    let per_range = slots.div_ceil(RANGES).max(1);
    let ranges: Vec<Range<usize>> = (0..slots)
        .step_by(per_range)
        .map(|from| from..(from + per_range).min(slots))
        .collect();
    let parts = crate::parallel::map(ranges, RANGES, |range| sweep_range(input, spans, range));
    merge(parts.into_iter(), input)
}

/// The parts of ranges in frame order, as one.
fn merge(parts: impl Iterator<Item = FramesWaits>, input: &PipelineInput) -> FramesWaits {
    let frames = input.measured_frames as usize;
    let mut all = FramesWaits {
        pairs: Vec::new(),
        work: NsValues::for_range(0, 0, frames),
        waited: NsValues::for_range(0, 0, frames),
        worst: vec![None; input.worst.len()],
        reordered: 0,
    };
    let mut index: HashMap<(u16, u16), usize> = HashMap::new();
    for part in parts {
        for (pair, t) in part.pairs {
            match index.get(&pair) {
                Some(&i) => {
                    let into = &mut all.pairs[i].1;
                    into.waits.append(t.waits);
                    into.overlaps += t.overlaps;
                    into.first = into.first.min(t.first);
                }
                None => {
                    index.insert(pair, all.pairs.len());
                    all.pairs.push((pair, t));
                }
            }
        }
        all.work.append(part.work);
        all.waited.append(part.waited);
        for (into, w) in all.worst.iter_mut().zip(part.worst) {
            if w.is_some() {
                *into = w;
            }
        }
        all.reordered += part.reordered;
    }
    all
}

/// The sweep of the measured frames with indices in `range`.
fn sweep_range(input: &PipelineInput, spans: &impl SpanRows, range: Range<usize>) -> FramesWaits {
    let grouped = ByFrame::group(spans, range.clone());
    let mut sweep = FrameSweep::new(input.worst, grouped.frames);
    for frame in range {
        let rows = grouped.frame(frame);
        if !rows.is_empty() {
            sweep.frame(frame, rows.iter().map(|&i| spans.row(i as usize)));
        }
    }
    sweep.finish()
}

/// The sweep of measured frames handed over one at a time, each with all its measured
/// spans in the order recorded: by the grouping above, or by a read of the run file that
/// groups them as it goes (`compact::grouped`).
pub struct FrameSweep<'a> {
    worst: &'a [u32],
    out: FramesWaits,
    tallies: Tallies,
    /// By thread index (the run's thread table: small): the frame and start of the last
    /// span taken on it.
    last_on_thread: Vec<(usize, i64)>,
    frame_spans: Vec<StageSpan>,
}

impl<'a> FrameSweep<'a> {
    /// A sweep of about `frames` frames; `worst` are the worst frames' indices.
    pub fn new(worst: &'a [u32], frames: usize) -> FrameSweep<'a> {
        FrameSweep {
            worst,
            out: FramesWaits {
                pairs: Vec::new(),
                work: NsValues::for_range(0, 0, frames),
                waited: NsValues::for_range(0, 0, frames),
                worst: vec![None; worst.len()],
                reordered: 0,
            },
            tallies: Tallies::default(),
            last_on_thread: Vec::new(),
            frame_spans: Vec::new(),
        }
    }

    /// Frame `frame`'s measured spans (at least one), in the order recorded; each frame
    /// once.
    pub fn frame(&mut self, frame: usize, rows: impl Iterator<Item = SpanRow>) {
        self.frame_spans.clear();
        let mut reordered = false;
        for r in rows {
            let t = r.thread as usize;
            if t >= self.last_on_thread.len() {
                self.last_on_thread.resize(t + 1, (usize::MAX, 0));
            }
            let (last_frame, last_start) = self.last_on_thread[t];
            reordered |= last_frame == frame && r.start_ns < last_start;
            self.last_on_thread[t] = (frame, r.start_ns);
            self.frame_spans.push(StageSpan {
                start_ns: r.start_ns,
                end_ns: r.start_ns.saturating_add(r.dur_ns),
                stage: r.stage,
                thread: 0,
            });
        }
        if self.frame_spans.is_empty() {
            return;
        }
        let out = &mut self.out;
        out.reordered += u64::from(reordered);
        let w = frame_waits(&mut self.frame_spans);
        let frame_start = self.frame_spans[0].start_ns;
        for (k, &(from, to, ns)) in w.waits.iter().enumerate() {
            self.tallies
                .tally((from, to), (frame_start, k))
                .waits
                .push(ns);
        }
        for (k, &(from, to)) in w.overlaps.iter().enumerate() {
            let at = (frame_start, w.waits.len() + k);
            self.tallies.tally((from, to), at).overlaps += 1;
        }
        out.work.push(w.work_ns);
        out.waited.push(w.wait_ns);
        if let Some(pos) = self.worst.iter().position(|&f| f as usize == frame) {
            out.worst[pos] = Some(w);
        }
    }

    pub fn finish(mut self) -> FramesWaits {
        self.out.pairs = self.tallies.pairs;
        self.out
    }
}

/// The measured spans (non-negative ones of measured frames) of a range of frames grouped
/// by frame: `rows[ends[f - 1]..ends[f]]` are frame `range.start + f`'s, in the order
/// recorded.
struct ByFrame {
    first: usize,
    rows: Vec<u32>,
    ends: Vec<u32>,
    /// Frames with a span.
    frames: usize,
}

impl ByFrame {
    fn group(spans: &impl SpanRows, range: Range<usize>) -> ByFrame {
        let ours = |i: usize| {
            let f = spans.frame(i) as usize;
            let measured = || {
                let r = spans.row(i);
                r.measured_frame.is_some() && r.dur_ns >= 0
            };
            (range.contains(&f) && measured()).then(|| f - range.start)
        };
        let mut ends = vec![0u32; range.len()];
        for i in 0..spans.len() {
            if let Some(f) = ours(i) {
                ends[f] += 1;
            }
        }
        let frames = ends.iter().filter(|&&n| n > 0).count();
        // Counts → starts; placing a frame's rows moves its start to its end.
        let mut sum = 0u32;
        for e in &mut ends {
            (*e, sum) = (sum, sum + *e);
        }
        let mut rows = vec![0u32; sum as usize];
        for i in 0..spans.len() {
            if let Some(f) = ours(i) {
                rows[ends[f] as usize] = i as u32;
                ends[f] += 1;
            }
        }
        ByFrame {
            first: range.start,
            rows,
            ends,
            frames,
        }
    }

    fn frame(&self, frame: usize) -> &[u32] {
        let f = frame - self.first;
        let from = if f == 0 { 0 } else { self.ends[f - 1] };
        &self.rows[from as usize..self.ends[f] as usize]
    }
}

/// Each wait pair's tally, in the order first met. Frames of a pipeline repeat the same
/// pairs in the same places, so the pair last seen at a place in the frame is tried first.
#[derive(Default)]
struct Tallies {
    pairs: Vec<((u16, u16), PairTally)>,
    index: HashMap<(u16, u16), usize>,
    /// By place in the frame: the index of the pair last seen there.
    recent: Vec<usize>,
}

impl Tallies {
    /// The tally of `pair`, first seen at `at` (the frame's start, the place in the frame)
    /// unless seen earlier.
    fn tally(&mut self, pair: (u16, u16), at: (i64, usize)) -> &mut PairTally {
        let place = at.1;
        let cached = (self.recent.get(place)).filter(|&&i| self.pairs[i].0 == pair);
        let i = match cached {
            Some(&i) => i,
            None => {
                let pairs = &mut self.pairs;
                let i = *self.index.entry(pair).or_insert_with(|| {
                    pairs.push((
                        pair,
                        PairTally {
                            waits: NsValues::for_range(0, 0, 0),
                            overlaps: 0,
                            first: at,
                        },
                    ));
                    pairs.len() - 1
                });
                if place >= self.recent.len() {
                    self.recent.resize(place + 1, i);
                }
                self.recent[place] = i;
                i
            }
        };
        let t = &mut self.pairs[i].1;
        t.first = t.first.min(at);
        t
    }
}
