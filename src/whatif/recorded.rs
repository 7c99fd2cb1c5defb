//! The measured frames as the model replays them: rows of the run's span columns, frame
//! after frame in start order, each frame's sorted by start, and each span's hand-over
//! delay. 4 bytes a span for the order and 4 for the delay (8 where one passes 4.29 s)
//! beside the columns (start and thread kept), where a vector of spans per frame took
//! ~100 (issue 29).

use std::collections::HashMap;

use anyhow::{bail, Result};

use crate::analyze::compact::columns::SpanColumns;
use crate::analyze::compact::narrow::NarrowIds;
use crate::analyze::compact::packed::PackedNs;
use crate::analyze::compact::table::FrameTable;
use crate::analyze::compact::values::NsValues;
use crate::analyze::compact::window::{MeasuredFrames, Ranks};
use crate::analyze::frames::NO_FRAME;
use crate::analyze::pipeline::waits::StageSpan;

pub(super) struct RecordedFrames<'a> {
    stage: &'a [u16],
    dur: &'a PackedNs,
    start: &'a PackedNs,
    thread: &'a NarrowIds,
    /// Rows of the columns, frame after frame.
    rows: Vec<u32>,
    /// Frame k's spans are `rows[first[k]..first[k + 1]]`.
    first: Vec<u32>,
    /// Per position of `rows`: its hand-over delay, once set (u32 while they fit).
    delays_ns: NsValues,
}

impl<'a> RecordedFrames<'a> {
    /// The measured frames of `columns` (read with starts and threads; `frame_of_row` is
    /// their frame column, taken out of them), ordered by start, frames starting together
    /// in the order they first appear in the run (as the loaded run's frames are). The
    /// frame column and the table are dropped as soon as they are done with.
    pub fn new(
        columns: &'a SpanColumns,
        frame_of_row: Vec<u32>,
        table: FrameTable,
        measured: &MeasuredFrames,
    ) -> Result<RecordedFrames<'a>> {
        let (Some(start), Some(thread)) = (&columns.start, &columns.thread) else {
            bail!("whatif needs the spans' starts and threads (columns read without)");
        };
        if u32::try_from(frame_of_row.len()).is_err() {
            bail!(
                "the run has {} spans: whatif replays at most {} (record a shorter run)",
                frame_of_row.len(),
                u32::MAX
            );
        }
        let measured_row = |f: u32| f != NO_FRAME && measured.in_window.get(f);
        let frames = measured.in_window.ones().count();
        // Each measured frame's place in start order: its rank among them when indices
        // already follow that order (ids counting up as frames start), else listed.
        let places = match starts_follow_indices(&table, measured, &frame_of_row) {
            true => Places::Ranked(measured.in_window.ranks()),
            false => Places::Listed(places_by_start(&table, measured, &frame_of_row)),
        };
        drop(table);
        // A counting sort of the rows by their frame's place.
        let mut first = vec![0u32; frames + 1];
        for &f in &frame_of_row {
            if measured_row(f) {
                first[places.of(f) + 1] += 1;
            }
        }
        for k in 0..frames {
            first[k + 1] += first[k];
        }
        // `first[k]` is frame k's cursor while the rows are placed, then its end.
        let mut rows = vec![0u32; first[frames] as usize];
        for (row, &f) in frame_of_row.iter().enumerate() {
            if measured_row(f) {
                let at = &mut first[places.of(f)];
                rows[*at as usize] = row as u32;
                *at += 1;
            }
        }
        drop((places, frame_of_row));
        first.copy_within(0..frames, 1);
        first[0] = 0;
        let mut recorded = RecordedFrames {
            stage: &columns.stage,
            dur: &columns.dur,
            start,
            thread,
            rows,
            first,
            delays_ns: NsValues::Narrow(Vec::new()),
        };
        // Every field is a key: the order does not depend on the one the rows came in.
        for k in 0..frames {
            let (a, b) = recorded.range(k);
            let mut spans = std::mem::take(&mut recorded.rows);
            spans[a..b].sort_unstable_by_key(|&r| recorded.row_span(r));
            recorded.rows = spans;
        }
        Ok(recorded)
    }

    /// Measured frames.
    pub fn len(&self) -> usize {
        self.first.len() - 1
    }

    /// Positions of frame `k`'s spans.
    fn range(&self, k: usize) -> (usize, usize) {
        (self.first[k] as usize, self.first[k + 1] as usize)
    }

    fn row_span(&self, row: u32) -> StageSpan {
        let r = row as usize;
        let start_ns = self.start.get(r);
        StageSpan {
            start_ns,
            end_ns: start_ns.saturating_add(self.dur.get(r)),
            stage: self.stage[r],
            thread: self.thread.get(r),
        }
    }

    /// The span at position `j` (frame after frame).
    fn span(&self, j: usize) -> StageSpan {
        self.row_span(self.rows[j])
    }

    /// Frame `k`'s spans, by start.
    pub fn spans(&self, k: usize) -> impl Iterator<Item = StageSpan> + '_ {
        let (a, b) = self.range(k);
        (a..b).map(|j| self.span(j))
    }

    /// Frame `k`'s spans with their hand-over delays (zero until set).
    pub fn spans_with_delays(&self, k: usize) -> impl Iterator<Item = (StageSpan, i64)> + '_ {
        let (a, b) = self.range(k);
        (a..b).map(|j| (self.span(j), self.delays_ns.get(j).unwrap_or(0)))
    }

    /// The latest end of frame `k`'s spans.
    fn end_ns(&self, k: usize) -> i64 {
        self.spans(k).map(|s| s.end_ns).max().unwrap_or(0)
    }

    /// Each span's hand-over delay as recorded: how long after it could have started (the
    /// frame's previous stage ended, its thread's previous span ended and, for the stage
    /// the depth gates, the frame `depth` before ended) it started. A frame's first span
    /// has none (the pacer's release is modelled instead).
    pub fn set_handover_delays(&mut self, depth: usize, pace: Option<u16>) {
        self.delays_ns = match self.delays_in_thread_order(depth, pace) {
            Some(delays) => delays,
            None => self.delays_by_sorting(depth, pace),
        };
    }

    /// The delays, the span before each one on its thread found by sorting positions by
    /// thread and start (4 bytes a span) and its end kept (8 more) meanwhile.
    fn delays_by_sorting(&self, depth: usize, pace: Option<u16>) -> NsValues {
        let n = self.rows.len();
        // Positions by thread, then start: the span before each one on its thread.
        let mut by_thread: Vec<u32> = (0..n as u32).collect();
        by_thread.sort_unstable_by_key(|&j| {
            let s = self.span(j as usize);
            (s.thread, s.start_ns, j)
        });
        // First the end of the span before on the thread, then the delay, in place.
        let mut delays = vec![i64::MIN; n];
        for w in by_thread.windows(2) {
            let (a, b) = (self.span(w[0] as usize), self.span(w[1] as usize));
            if a.thread == b.thread {
                delays[w[1] as usize] = a.end_ns;
            }
        }
        drop(by_thread);
        for k in 0..self.len() {
            let (a, b) = self.range(k);
            let gated = usize::from(pace == Some(self.span(a).stage) && b - a > 1);
            delays[a] = 0;
            for j in a + 1..b {
                let (before, this) = (self.span(j - 1), self.span(j));
                let mut ready = before.end_ns.max(delays[j]);
                if j - a == gated && k >= depth {
                    ready = ready.max(self.end_ns(k - depth));
                }
                delays[j] = this.start_ns.saturating_sub(ready).max(0);
            }
        }
        // Mostly zero or small: 4 bytes a span rather than 8.
        let max = delays.iter().copied().max().unwrap_or(0);
        let mut narrow = NsValues::for_range(0, max, n);
        for d in delays {
            narrow.push(d);
        }
        narrow
    }

    /// The delays of [`RecordedFrames::set_handover_delays`] without a sort or a vector of
    /// ends, when every thread's spans come in start order position after position (as
    /// they do unless frames overlap on a thread): the span before each one on its
    /// thread is then the last one seen there. `None` otherwise, or with thread indices
    /// too large to index by.
    fn delays_in_thread_order(&self, depth: usize, pace: Option<u16>) -> Option<NsValues> {
        let threads = match self.thread {
            NarrowIds::U8(_) => 1 << 8,
            NarrowIds::U16(_) => 1 << 16,
            NarrowIds::U32(_) => return None,
        };
        let mut last_start = vec![i64::MIN; threads];
        for j in 0..self.rows.len() {
            let s = self.span(j);
            let last = &mut last_start[s.thread as usize];
            if s.start_ns < *last {
                return None;
            }
            *last = s.start_ns;
        }
        drop(last_start);
        // The end of the last span seen on each thread.
        let mut last_end: Vec<Option<i64>> = vec![None; threads];
        let mut delays = NsValues::for_range(0, 0, self.rows.len());
        for k in 0..self.len() {
            let (a, b) = self.range(k);
            let gated = usize::from(pace == Some(self.span(a).stage) && b - a > 1);
            for j in a..b {
                let this = self.span(j);
                let thread_free = last_end[this.thread as usize].replace(this.end_ns);
                if j == a {
                    delays.push(0);
                    continue;
                }
                let before = self.span(j - 1);
                let mut ready = before.end_ns.max(thread_free.unwrap_or(i64::MIN));
                if j - a == gated && k >= depth {
                    ready = ready.max(self.end_ns(k - depth));
                }
                delays.push(this.start_ns.saturating_sub(ready).max(0));
            }
        }
        Some(delays)
    }
}

/// A measured frame's place in start order.
enum Places<'a> {
    /// Its rank among the measured frames' indices.
    Ranked(Ranks<'a>),
    /// By frame index.
    Listed(Vec<u32>),
}

impl Places<'_> {
    fn of(&self, frame: u32) -> usize {
        match self {
            Places::Ranked(ranks) => ranks.rank(frame) as usize,
            Places::Listed(places) => places[frame as usize] as usize,
        }
    }
}

/// Ties at most between frames starting together that are settled by their first rows;
/// past it the places are listed.
const MAX_TIES: usize = 1 << 16;

/// Whether the measured frames by index are in start order, frames starting together in
/// the order their first spans come (the order [`places_by_start`] lists).
fn starts_follow_indices(
    table: &FrameTable,
    measured: &MeasuredFrames,
    frame_of_row: &[u32],
) -> bool {
    let mut ties: Vec<(u32, u32)> = Vec::new();
    let mut before: Option<(u32, i64)> = None;
    for f in measured.in_window.ones() {
        let start = table.start_ns(f);
        if let Some((b, b_start)) = before {
            if start < b_start || (start == b_start && ties.len() == MAX_TIES) {
                return false;
            }
            if start == b_start {
                ties.push((b, f));
            }
        }
        before = Some((f, start));
    }
    if ties.is_empty() {
        return true;
    }
    let mut first_row: HashMap<u32, u32> = (ties.iter())
        .flat_map(|&(a, b)| [(a, u32::MAX), (b, u32::MAX)])
        .collect();
    for (row, f) in frame_of_row.iter().enumerate() {
        if let Some(first) = first_row.get_mut(f) {
            if *first == u32::MAX {
                *first = row as u32;
            }
        }
    }
    ties.iter().all(|(a, b)| first_row[a] < first_row[b])
}

/// Each measured frame's place in start order, by frame index; frames starting together
/// in the order their first spans come (as the loaded run's frames are).
fn places_by_start(
    table: &FrameTable,
    measured: &MeasuredFrames,
    frame_of_row: &[u32],
) -> Vec<u32> {
    // Each measured frame's first row: the tie-break between frames starting together.
    let mut slot = vec![u32::MAX; table.slots()];
    for (row, &f) in frame_of_row.iter().enumerate() {
        if f != NO_FRAME && measured.in_window.get(f) && slot[f as usize] == u32::MAX {
            slot[f as usize] = row as u32;
        }
    }
    let mut order: Vec<u32> = measured.in_window.ones().collect();
    order.sort_unstable_by_key(|&f| (table.start_ns(f), slot[f as usize]));
    // `slot` now holds each frame's place in start order.
    for (k, &f) in order.iter().enumerate() {
        slot[f as usize] = k as u32;
    }
    slot
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::compact::columns::{columns_of, Keep};
    use crate::analyze::compact::window::measure;
    use crate::model::{EndReason, RunMeta, Span};

    fn span(frame: u64, thread: u32, start_ns: i64, dur_ns: i64) -> Span {
        Span {
            frame,
            stage: thread as u16,
            thread,
            start_ns,
            dur_ns,
        }
    }

    fn read(spans: &[Span]) -> (SpanColumns, FrameTable, MeasuredFrames) {
        let keep = Keep {
            start: true,
            thread: true,
        };
        let (columns, table) = columns_of(spans, keep);
        let meta = RunMeta {
            window_end_ns: 1_000_000,
            end_reason: EndReason::Exited,
            ..RunMeta::default()
        };
        let (_, measured) = measure(&table, &columns, &meta);
        (columns, table, measured)
    }

    #[test]
    fn places_by_rank_are_the_places_by_start_whenever_they_are_taken() {
        // Frames 2 and 3 start together; the first span of 3 comes first in one run (the
        // listed order puts 3 first: ranks would not) and last in the other.
        for three_first in [true, false] {
            let mut spans = vec![span(0, 0, 0, 5), span(1, 0, 10, 5)];
            let (two, three) = (span(2, 0, 20, 5), span(3, 1, 20, 5));
            spans.extend(if three_first {
                [three, two]
            } else {
                [two, three]
            });
            spans.extend([span(4, 0, 40, 5), span(5, 0, 50, 5)]);
            let (columns, table, measured) = read(&spans);
            let by_rank = starts_follow_indices(&table, &measured, &columns.frame);
            assert_eq!(by_rank, !three_first);
            let listed = places_by_start(&table, &measured, &columns.frame);
            let ranks = measured.in_window.ranks();
            for f in measured.in_window.ones() {
                if by_rank {
                    assert_eq!(ranks.rank(f), listed[f as usize], "frame index {f}");
                }
            }
            // A frame starting before the one indexed before it: listed.
            let mut late = spans.clone();
            late.push(span(6, 0, 45, 1));
            let (columns, table, measured) = read(&late);
            assert!(!starts_follow_indices(&table, &measured, &columns.frame));
        }
    }

    #[test]
    fn delays_without_a_sort_are_the_delays_sorting_finds() {
        // Two stages on two threads, each frame's second stage waiting a little; the
        // threads' spans in start order, then one frame overlapping the next on thread 0.
        let mut spans = Vec::new();
        for f in 0..20u64 {
            let t = f as i64 * 100;
            spans.push(span(f, 0, t, 30));
            spans.push(span(f, 1, t + 30 + (f as i64 % 7), 40));
        }
        let (mut columns, table, measured) = read(&spans);
        let frame_of_row = std::mem::take(&mut columns.frame);
        let frames = RecordedFrames::new(&columns, frame_of_row, table, &measured).unwrap();
        for (depth, pace) in [(1, None), (2, Some(1)), (3, Some(0))] {
            let fast = frames.delays_in_thread_order(depth, pace);
            assert_eq!(fast, Some(frames.delays_by_sorting(depth, pace)));
        }
        spans.push(span(20, 0, 1_950, 200));
        spans.push(span(21, 0, 2_000, 10));
        let (mut columns, table, measured) = read(&spans);
        let frame_of_row = std::mem::take(&mut columns.frame);
        let frames = RecordedFrames::new(&columns, frame_of_row, table, &measured).unwrap();
        // Frame 21 starts on thread 0 before frame 20's span there ends, but after it
        // starts: still in start order.
        assert!(frames.delays_in_thread_order(2, None).is_some());
        // Frame 23 starts after 22 but runs on thread 1 before it.
        let mut out_of_order = spans.clone();
        out_of_order.extend([
            span(22, 0, 2_100, 5),
            span(22, 1, 2_500, 10),
            span(23, 0, 2_200, 5),
            span(23, 1, 2_300, 10),
        ]);
        let (mut columns, table, measured) = read(&out_of_order);
        let frame_of_row = std::mem::take(&mut columns.frame);
        let frames = RecordedFrames::new(&columns, frame_of_row, table, &measured).unwrap();
        assert!(frames.delays_in_thread_order(2, None).is_none());
        assert_eq!(frames.delays_by_sorting(2, None).len(), out_of_order.len());
    }
}
