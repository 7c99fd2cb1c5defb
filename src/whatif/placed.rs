//! The measured frames of a run with several spans a frame held as the model takes them,
//! and nothing else of the run: each measured span placed at its frame's place in start
//! order by two reads of the run (count, then place), as its start's offset from its
//! frame's start and its duration (u32 each), its stage and its thread (a byte): 11 bytes a
//! measured span, where the run's columns (every span, its frame index among them) and
//! the rows into them took 19 (issue 31 item 8: whatif's peak). The hand-over delays are
//! taken as the frames are replayed rather than held.
//!
//! The frames and their order are those of [`super::recorded::RecordedFrames`]; where a
//! value does not fit (a span 4.29 s after its frame's start or as long, 256 threads or
//! more) or a thread's spans do not come in start order frame after frame (the delays
//! would need a sort), the caller reads the columns instead.

use std::collections::VecDeque;

use anyhow::Result;

use super::recorded::FrameSpans;
use super::recorded::{places_of, ReplayFrames};
use super::streamed::each_with_frame;
use crate::analyze::compact::table::FrameTable;
use crate::analyze::compact::window::MeasuredFrames;
use crate::analyze::frames::{out_of_range, NO_FRAME};
use crate::analyze::pipeline::waits::StageSpan;
use crate::model::{Span, SpanSource};
use crate::read_ahead::for_each_read_ahead;

/// Threads a span's byte can name.
const THREADS: usize = 1 << 8;

pub(super) struct PlacedFrames {
    /// Frame k's spans are at positions `first[k]..first[k + 1]`, by start.
    first: Vec<u32>,
    /// The first frame's start, and each later frame's start after the one before (frames
    /// come in start order): 4 bytes a frame where a packed column took 8 to 16.
    first_start: i64,
    start_step: Vec<u32>,
    /// Per position: the span's start after its frame's, its duration, stage and thread.
    offset: Vec<u32>,
    dur: Vec<u32>,
    stage: Vec<u16>,
    thread: Vec<u8>,
    /// The depth and the pacer's stage the hand-over delays are taken with, once set.
    delays: Option<(usize, Option<u16>)>,
}

impl PlacedFrames {
    /// The measured frames of `source` (its frames in `table`, measured as `measured` says),
    /// placed by two reads (three where frames start together); `None` where they cannot be
    /// held this way (the module's note). The table is dropped before the spans are placed
    /// where frame ids count up with indices (a frame's index is then its id's offset): at
    /// 120 fps its starts and ends do not pack (24 bytes a frame).
    pub fn read(
        source: &(dyn SpanSource + Sync),
        table: FrameTable,
        measured: &MeasuredFrames,
    ) -> Result<Option<PlacedFrames>> {
        let places = places_of(&table, measured, &mut |visit| {
            each_with_frame(source, &table, &mut |_, frame| visit(frame))
        })?;
        let frames = measured.count as usize;
        let is_measured = |f: u32| f != NO_FRAME && measured.in_window.get(f);
        // First read: how many spans each frame has, and whether each fits.
        let mut first = vec![0u32; frames + 1];
        let (mut fits, mut spans) = (true, 0u64);
        each_with_frame(source, &table, &mut |s, f| {
            if !is_measured(f) {
                return;
            }
            let offset = s.start_ns - table.start_ns(f);
            fits &= (0..=u32::MAX as i64).contains(&offset)
                && (0..=u32::MAX as i64).contains(&s.dur_ns)
                && (s.thread as usize) < THREADS;
            first[places.of(f) + 1] += 1;
            spans += 1;
        })?;
        // Each frame's start by place: frames in start order, each a step after the last.
        let mut start_by_place = vec![0i64; frames];
        for f in measured.in_window.ones() {
            start_by_place[places.of(f)] = table.start_ns(f);
        }
        let steps_fit = (start_by_place.windows(2)).all(|w| w[1] - w[0] <= u32::MAX as i64);
        if !fits || !steps_fit || u32::try_from(spans).is_err() {
            return Ok(None);
        }
        for k in 0..frames {
            first[k + 1] += first[k];
        }
        let (slots, first_id) = (
            table.slots(),
            table.indices_follow_ids().then(|| table.id(0)),
        );
        // Dropped here, not at the end of the function (a binding moved in one arm only).
        let table = match first_id {
            Some(_) => {
                drop(table);
                None
            }
            None => Some(table),
        };
        let index_of = |s: &Span| -> u32 {
            if out_of_range(s.start_ns, s.dur_ns) {
                return NO_FRAME;
            }
            let index = match (&table, first_id) {
                (Some(table), _) => table.index_of(s.frame),
                (None, first_id) => (s.frame.checked_sub(first_id.unwrap_or(0)))
                    .filter(|&i| i < slots as u64)
                    .map(|i| i as u32),
            };
            index.unwrap_or(NO_FRAME)
        };
        // Second read: each span at its frame's cursor (`first[k]`, then its end).
        let n = spans as usize;
        let (mut offset, mut dur) = (vec![0u32; n], vec![0u32; n]);
        let (mut stage, mut thread) = (vec![0u16; n], vec![0u8; n]);
        let mut placed = 0usize;
        for_each_read_ahead(source, &mut |chunk| {
            for s in chunk {
                let f = index_of(s);
                if !is_measured(f) {
                    continue;
                }
                let k = places.of(f);
                let at = &mut first[k];
                let j = *at as usize;
                // More spans than counted (the run changed) are counted, not placed.
                if j < n {
                    offset[j] = (s.start_ns - start_by_place[k]).clamp(0, u32::MAX as i64) as u32;
                    dur[j] = s.dur_ns.clamp(0, u32::MAX as i64) as u32;
                    stage[j] = s.stage;
                    thread[j] = s.thread as u8;
                    *at += 1;
                }
                placed += 1;
            }
            Ok(())
        })?;
        drop((places, table));
        if placed != n {
            anyhow::bail!(
                "the run had {n} measured spans when first read and {placed} when read again: \
                 it changed while whatif read it (run whatif again once the run is written)"
            );
        }
        first.copy_within(0..frames, 1);
        first[0] = 0;
        let first_start = start_by_place.first().copied().unwrap_or(0);
        let start_step = (start_by_place.windows(2))
            .map(|w| (w[1] - w[0]) as u32)
            .collect();
        drop(start_by_place);
        let mut frames = PlacedFrames {
            first,
            first_start,
            start_step,
            offset,
            dur,
            stage,
            thread,
            delays: None,
        };
        frames.sort_each_frame();
        Ok(frames.in_thread_order().then_some(frames))
    }

    /// Positions of frame `k`'s spans.
    fn range(&self, k: usize) -> (usize, usize) {
        (self.first[k] as usize, self.first[k + 1] as usize)
    }

    /// Each frame's start, in turn.
    fn starts(&self) -> impl Iterator<Item = i64> + '_ {
        let rest = self
            .start_step
            .iter()
            .scan(self.first_start, |start, &step| {
                *start += i64::from(step);
                Some(*start)
            });
        std::iter::once(self.first_start)
            .take(self.len().min(1))
            .chain(rest)
    }

    /// The span at position `j`, of a frame starting at `frame_start`.
    fn span(&self, frame_start: i64, j: usize) -> StageSpan {
        let start_ns = frame_start + i64::from(self.offset[j]);
        StageSpan {
            start_ns,
            end_ns: start_ns + i64::from(self.dur[j]),
            stage: self.stage[j],
            thread: u32::from(self.thread[j]),
        }
    }

    /// Each frame's spans by start (then end, stage, thread: every field a key, so the
    /// order does not depend on the one they were read in).
    fn sort_each_frame(&mut self) {
        let mut spans: Vec<(u32, u64, u16, u8)> = Vec::new();
        for k in 0..self.len() {
            let (a, b) = self.range(k);
            spans.clear();
            spans.extend((a..b).map(|j| {
                let (offset, dur) = (self.offset[j], self.dur[j]);
                (
                    offset,
                    u64::from(offset) + u64::from(dur),
                    self.stage[j],
                    self.thread[j],
                )
            }));
            spans.sort_unstable();
            for (j, &(offset, end, stage, thread)) in (a..b).zip(&spans) {
                self.offset[j] = offset;
                self.dur[j] = (end - u64::from(offset)) as u32;
                self.stage[j] = stage;
                self.thread[j] = thread;
            }
        }
    }

    /// Whether every thread's spans come in start order, frame after frame: then the span
    /// before each one on its thread is the last one seen there, and the delays are taken
    /// as the frames are replayed.
    fn in_thread_order(&self) -> bool {
        let mut last_start = vec![i64::MIN; THREADS];
        (0..self.len()).zip(self.starts()).all(|(k, frame_start)| {
            let (a, b) = self.range(k);
            (a..b).all(|j| {
                let s = self.span(frame_start, j);
                let last = &mut last_start[s.thread as usize];
                let in_order = s.start_ns >= *last;
                *last = s.start_ns;
                in_order
            })
        })
    }
}

impl ReplayFrames for PlacedFrames {
    fn len(&self) -> usize {
        self.first.len() - 1
    }

    /// Each frame's spans with the delays of `RecordedFrames::set_handover_delays` taken
    /// in thread order as they come: the end of the last span seen on each thread, and the
    /// latest ends of the last `depth` frames.
    fn each(&self, visit: &mut dyn FnMut(&FrameSpans)) -> Result<()> {
        let mut spans: Vec<(StageSpan, i64)> = Vec::new();
        let mut last_end: Vec<Option<i64>> = vec![None; THREADS];
        let depth = self.delays.map_or(0, |(depth, _)| depth);
        let mut recent_ends: VecDeque<i64> = VecDeque::with_capacity(depth.min(self.len()) + 1);
        for (k, frame_start) in (0..self.len()).zip(self.starts()) {
            let (a, b) = self.range(k);
            spans.clear();
            let gated = match self.delays {
                Some((_, pace)) => usize::from(pace == Some(self.stage[a]) && b - a > 1),
                None => usize::MAX,
            };
            for j in a..b {
                let this = self.span(frame_start, j);
                let thread_free = last_end[this.thread as usize].replace(this.end_ns);
                let delay = match spans.last() {
                    Some((before, _)) if self.delays.is_some() => {
                        let mut ready = before.end_ns.max(thread_free.unwrap_or(i64::MIN));
                        // The end of frame k − depth, when it is one of the last `depth`.
                        if j - a == gated && k >= depth {
                            ready = ready.max(recent_ends[0]);
                        }
                        this.start_ns.saturating_sub(ready).max(0)
                    }
                    _ => 0,
                };
                spans.push((this, delay));
            }
            visit(&spans);
            if depth > 0 {
                if recent_ends.len() == depth {
                    recent_ends.pop_front();
                }
                let end = spans.iter().map(|(s, _)| s.end_ns).max().unwrap_or(0);
                recent_ends.push_back(end);
            }
        }
        Ok(())
    }

    fn set_handover_delays(&mut self, depth: usize, pace: Option<u16>) {
        self.delays = Some((depth, pace));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::compact::columns::columns_of;
    use crate::analyze::compact::window::measure;
    use crate::analyze::compact::{read_frames, ANALYSIS_KEEPS};
    use crate::model::{EndReason, Run, Span};
    use crate::whatif::recorded::RecordedFrames;

    fn span(frame: u64, stage: u16, thread: u32, start_ns: i64, dur_ns: i64) -> Span {
        Span {
            frame,
            stage,
            thread,
            start_ns,
            dur_ns,
        }
    }

    /// Each frame's spans and delays, as `frames` gives them.
    fn replayed(frames: &dyn ReplayFrames) -> Vec<Vec<(StageSpan, i64)>> {
        let mut out = Vec::new();
        frames.each(&mut |spans| out.push(spans.to_vec())).unwrap();
        out
    }

    /// Placed from reads of `spans`, and held as rows of their columns: the same frames,
    /// spans and delays, at each depth and pacer's stage; `None` where they are not placed.
    fn placed_as_held(spans: Vec<Span>) -> Option<usize> {
        let mut run = Run {
            spans,
            ..Run::default()
        };
        // Past any span's end, 4.29 s long or not.
        run.meta.window_end_ns = 10_000_000_000;
        run.meta.end_reason = EndReason::Exited;
        let (table, _) = read_frames(&run).unwrap();
        let (_, measured) = measure(&table, &columns_of(&run.spans, ANALYSIS_KEEPS).0, &run.meta);
        let mut placed = PlacedFrames::read(&run, table, &measured).unwrap()?;

        let (mut columns, table) = columns_of(&run.spans, ANALYSIS_KEEPS);
        let frame_of_row = std::mem::take(&mut columns.frame);
        let mut held = RecordedFrames::new(&columns, frame_of_row, table, &measured).unwrap();
        assert_eq!(replayed(&placed), replayed(&held));
        for (depth, pace) in [(1, None), (2, Some(0)), (3, Some(1))] {
            placed.set_handover_delays(depth, pace);
            held.set_handover_delays(depth, pace);
            assert_eq!(replayed(&placed), replayed(&held), "depth {depth}");
        }
        Some(placed.len())
    }

    #[test]
    fn placed_frames_are_the_held_frames_with_their_delays() {
        // Three stages on two threads, two frames in flight, written thread by thread (a
        // frame's spans far apart in the run); the second stage waits a little.
        let mut by_thread: Vec<Span> = Vec::new();
        for thread in 0..2u32 {
            for f in 0..40u64 {
                let t = f as i64 * 100 - 500;
                match thread {
                    0 => by_thread.extend([span(f, 0, 0, t, 10), span(f, 1, 0, t + 10, 60)]),
                    _ => by_thread.push(span(f, 2, 1, t + 75 + (f as i64 % 3), 90)),
                }
            }
        }
        let frames = placed_as_held(by_thread.clone()).unwrap();
        assert!(frames > 2 && frames < 40, "{frames}");
        // Two frames starting together (frame 19's first stage of no length, frame 20 at
        // its start): the run's order settles which comes first.
        let mut tied = by_thread.clone();
        let t19 = tied[38].start_ns;
        tied[38].dur_ns = 0;
        tied[39].start_ns = t19;
        tied[40].start_ns = t19;
        tied[41].start_ns = t19 + 10;
        assert_eq!(placed_as_held(tied), Some(frames));
        // A thread's spans out of start order frame after frame: the columns' way, as is a
        // span too long for a u32.
        let mut out_of_order = by_thread.clone();
        assert_eq!((out_of_order[100].frame, out_of_order[100].thread), (20, 1));
        out_of_order[100].start_ns = out_of_order[101].start_ns + 10;
        assert_eq!(placed_as_held(out_of_order), None);
        let mut long = by_thread;
        long[40].dur_ns = 5_000_000_000;
        assert_eq!(placed_as_held(long), None);
    }
}
