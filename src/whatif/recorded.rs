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

/// A frame's spans by start, each with its hand-over delay (ns).
pub(super) type FrameSpans = [(StageSpan, i64)];

/// The measured frames as the model replays them, frame after frame in start order, each
/// its spans by start with their hand-over delays: held ([`RecordedFrames`]), or read again
/// from the run each time they are wanted (`super::streamed`).
pub(super) trait ReplayFrames: Sync {
    /// Measured frames.
    fn len(&self) -> usize;

    /// `visit(spans)` for each frame in turn, its spans with their delays (zero until set).
    fn each(&self, visit: &mut dyn FnMut(&FrameSpans)) -> Result<()>;

    /// Sets each span's hand-over delay as recorded: how long after it could have started
    /// it started.
    fn set_handover_delays(&mut self, depth: usize, pace: Option<u16>);

    /// Whether the frames are held (else read again each time, and the model's figures
    /// are selected from reads rather than held too: `super::selected`).
    fn held(&self) -> bool {
        true
    }
}

pub(super) struct RecordedFrames<'a> {
    stage: &'a [u16],
    dur: &'a PackedNs,
    start: &'a PackedNs,
    thread: &'a NarrowIds,
    /// Rows of the columns, frame after frame.
    rows: Rows,
    /// Frame k's spans are at positions `first[k]..first[k + 1]`; `None`: one span a frame
    /// (frame k's at position k).
    first: Option<Vec<u32>>,
    /// Measured frames.
    frames: usize,
    /// Per position of a span after its frame's first (position j of frame k at j − k − 1):
    /// its hand-over delay, once set (u32 while they fit). A frame's first span has none.
    delays_ns: NsValues,
}

/// The row of the columns at each position.
enum Rows {
    Listed(Vec<u32>),
    /// Position j is row `from + j`: the measured spans are a stretch of the run already
    /// in the order the model takes them (one span a frame, frames in start order: a
    /// recording of one thread), and no list is held (issue 31 item 8: 4 bytes a span).
    Stretch {
        from: u32,
    },
}

impl Rows {
    fn get(&self, j: usize) -> u32 {
        match self {
            Rows::Listed(rows) => rows[j],
            Rows::Stretch { from } => from + j as u32,
        }
    }
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
        let places = places_of(&table, measured, &mut frames_of_rows(&frame_of_row))?;
        drop(table);
        let stretch = match one_span_a_frame(&frame_of_row, frames, &measured_row) {
            true => stretch_in_place_order(&frame_of_row, &places, &measured_row),
            false => None,
        };
        let (rows, first) = match stretch {
            Some(from) => (Rows::Stretch { from }, None),
            None => {
                let (rows, first) = by_place(&frame_of_row, frames, &places, &measured_row);
                let first = (first.len() != rows.len() + 1).then_some(first);
                (Rows::Listed(rows), first)
            }
        };
        drop((places, frame_of_row));
        let mut recorded = RecordedFrames {
            stage: &columns.stage,
            dur: &columns.dur,
            start,
            thread,
            rows,
            first,
            frames,
            delays_ns: NsValues::Narrow(Vec::new()),
        };
        // Every field is a key: the order does not depend on the one the rows came in.
        if let Rows::Listed(mut rows) =
            std::mem::replace(&mut recorded.rows, Rows::Stretch { from: 0 })
        {
            for k in 0..frames {
                let (a, b) = recorded.range(k);
                rows[a..b].sort_unstable_by_key(|&r| recorded.row_span(r));
            }
            recorded.rows = Rows::Listed(rows);
        }
        Ok(recorded)
    }

    /// Positions of frame `k`'s spans.
    fn range(&self, k: usize) -> (usize, usize) {
        match &self.first {
            Some(first) => (first[k] as usize, first[k + 1] as usize),
            None => (k, k + 1),
        }
    }

    /// Spans of measured frames.
    fn positions(&self) -> usize {
        match self.frames {
            0 => 0,
            frames => self.range(frames - 1).1,
        }
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
        self.row_span(self.rows.get(j))
    }

    /// Frame `k`'s spans, by start.
    pub fn spans(&self, k: usize) -> impl Iterator<Item = StageSpan> + '_ {
        let (a, b) = self.range(k);
        (a..b).map(|j| self.span(j))
    }

    /// Frame `k`'s spans with their hand-over delays (zero until set).
    fn spans_with_delays(&self, k: usize) -> impl Iterator<Item = (StageSpan, i64)> + '_ {
        let (a, b) = self.range(k);
        (a..b).map(move |j| {
            let delay = match j > a {
                true => self.delays_ns.get(j - k - 1).unwrap_or(0),
                false => 0,
            };
            (self.span(j), delay)
        })
    }

    /// The latest end of frame `k`'s spans.
    fn end_ns(&self, k: usize) -> i64 {
        self.spans(k).map(|s| s.end_ns).max().unwrap_or(0)
    }

    /// Each span's hand-over delay as recorded: how long after it could have started (the
    /// frame's previous stage ended, its thread's previous span ended and, for the stage
    /// the depth gates, the frame `depth` before ended) it started. A frame's first span
    /// has none (the pacer's release is modelled instead).
    fn set_delays(&mut self, depth: usize, pace: Option<u16>) {
        self.delays_ns = match self.delays_in_thread_order(depth, pace) {
            Some(delays) => delays,
            None => self.delays_by_sorting(depth, pace),
        };
    }

    /// The delays, the span before each one on its thread found by sorting positions by
    /// thread and start (4 bytes a span) and its end kept (8 more) meanwhile.
    fn delays_by_sorting(&self, depth: usize, pace: Option<u16>) -> NsValues {
        let n = self.positions();
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
            // `j` numbers the span, its predecessor and its delay alike.
            #[allow(clippy::needless_range_loop)]
            for j in a + 1..b {
                let (before, this) = (self.span(j - 1), self.span(j));
                let mut ready = before.end_ns.max(delays[j]);
                if j - a == gated && k >= depth {
                    ready = ready.max(self.end_ns(k - depth));
                }
                delays[j] = this.start_ns.saturating_sub(ready).max(0);
            }
        }
        // Mostly zero or small: 4 bytes a span rather than 8, a frame's first span left out.
        let max = delays.iter().copied().max().unwrap_or(0);
        let mut narrow = NsValues::for_range(0, max, n - self.len());
        for k in 0..self.len() {
            let (a, b) = self.range(k);
            (a + 1..b).for_each(|j| narrow.push(delays[j]));
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
        for j in 0..self.positions() {
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
        let mut delays = NsValues::for_range(0, 0, self.positions() - self.len());
        for k in 0..self.len() {
            let (a, b) = self.range(k);
            let gated = usize::from(pace == Some(self.span(a).stage) && b - a > 1);
            for j in a..b {
                let this = self.span(j);
                let thread_free = last_end[this.thread as usize].replace(this.end_ns);
                if j == a {
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

impl ReplayFrames for RecordedFrames<'_> {
    fn len(&self) -> usize {
        self.frames
    }

    fn each(&self, visit: &mut dyn FnMut(&FrameSpans)) -> Result<()> {
        let mut spans = Vec::new();
        for k in 0..self.frames {
            spans.clear();
            spans.extend(self.spans_with_delays(k));
            visit(&spans);
        }
        Ok(())
    }

    fn set_handover_delays(&mut self, depth: usize, pace: Option<u16>) {
        self.set_delays(depth, pace);
    }
}

/// Each span's frame index (NO_FRAME for none), in the run's order, handed to the visitor:
/// from the frame column, or from another read of the spans.
pub(super) type RowFrames<'a> = dyn FnMut(&mut dyn FnMut(u32)) -> Result<()> + 'a;

/// The frame column as [`RowFrames`].
fn frames_of_rows(frame_of_row: &[u32]) -> impl FnMut(&mut dyn FnMut(u32)) -> Result<()> + '_ {
    move |visit| {
        frame_of_row.iter().for_each(|&f| visit(f));
        Ok(())
    }
}

/// Each measured frame's place in start order, frames starting together in the order
/// their first spans come (as the loaded run's frames are): their ranks where indices
/// already follow that order, else listed. `rows` read once where frames start together.
pub(super) fn places_of<'m>(
    table: &FrameTable,
    measured: &'m MeasuredFrames,
    rows: &mut RowFrames,
) -> Result<Places<'m>> {
    Ok(match starts_follow_indices(table, measured, rows)? {
        true => Places::Ranked(measured.in_window.ranks()),
        false => Places::Listed(places_by_start(table, measured, rows)?),
    })
}

/// A measured frame's place in start order.
pub(super) enum Places<'a> {
    /// Its rank among the measured frames' indices.
    Ranked(Ranks<'a>),
    /// By frame index.
    Listed(Vec<u32>),
}

impl Places<'_> {
    pub fn of(&self, frame: u32) -> usize {
        match self {
            Places::Ranked(ranks) => ranks.rank(frame) as usize,
            Places::Listed(places) => places[frame as usize] as usize,
        }
    }
}

/// Whether each measured frame has one measured span: as many such spans as frames (a
/// frame of the table has at least one span).
fn one_span_a_frame(frame_of_row: &[u32], frames: usize, measured: &dyn Fn(u32) -> bool) -> bool {
    frame_of_row.iter().filter(|&&f| measured(f)).count() == frames
}

/// With one span a frame: the first row of the measured spans when they are a stretch of
/// rows, frame after frame in place order (the positions would be those rows in order).
fn stretch_in_place_order(
    frame_of_row: &[u32],
    places: &Places,
    measured: &dyn Fn(u32) -> bool,
) -> Option<u32> {
    let mut from = None;
    for (row, &f) in frame_of_row.iter().enumerate() {
        if !measured(f) {
            continue;
        }
        let from = *from.get_or_insert(row);
        if row - from != places.of(f) {
            return None;
        }
    }
    from.map(|row| row as u32)
}

/// The measured rows in place order, by a counting sort (rows of a frame in the run's
/// order), and where each frame's start (`frames + 1` of them: the last is the end).
fn by_place(
    frame_of_row: &[u32],
    frames: usize,
    places: &Places,
    measured: &dyn Fn(u32) -> bool,
) -> (Vec<u32>, Vec<u32>) {
    let mut first = vec![0u32; frames + 1];
    for &f in frame_of_row {
        if measured(f) {
            first[places.of(f) + 1] += 1;
        }
    }
    for k in 0..frames {
        first[k + 1] += first[k];
    }
    // `first[k]` is frame k's cursor while the rows are placed, then its end.
    let mut rows = vec![0u32; first[frames] as usize];
    for (row, &f) in frame_of_row.iter().enumerate() {
        if measured(f) {
            let at = &mut first[places.of(f)];
            rows[*at as usize] = row as u32;
            *at += 1;
        }
    }
    first.copy_within(0..frames, 1);
    first[0] = 0;
    (rows, first)
}

/// Ties at most between frames starting together that are settled by their first rows;
/// past it the places are listed.
const MAX_TIES: usize = 1 << 16;

/// Whether the measured frames by index are in start order, frames starting together in
/// the order their first spans come (the order [`places_by_start`] lists).
fn starts_follow_indices(
    table: &FrameTable,
    measured: &MeasuredFrames,
    rows: &mut RowFrames,
) -> Result<bool> {
    let mut ties: Vec<(u32, u32)> = Vec::new();
    let mut before: Option<(u32, i64)> = None;
    for f in measured.in_window.ones() {
        let start = table.start_ns(f);
        if let Some((b, b_start)) = before {
            if start < b_start || (start == b_start && ties.len() == MAX_TIES) {
                return Ok(false);
            }
            if start == b_start {
                ties.push((b, f));
            }
        }
        before = Some((f, start));
    }
    if ties.is_empty() {
        return Ok(true);
    }
    let mut first_row: HashMap<u32, u32> = (ties.iter())
        .flat_map(|&(a, b)| [(a, u32::MAX), (b, u32::MAX)])
        .collect();
    let mut row = 0u32;
    rows(&mut |f| {
        if let Some(first) = first_row.get_mut(&f) {
            if *first == u32::MAX {
                *first = row;
            }
        }
        row = row.wrapping_add(1);
    })?;
    Ok(ties.iter().all(|(a, b)| first_row[a] < first_row[b]))
}

/// Each measured frame's place in start order, by frame index; frames starting together
/// in the order their first spans come (as the loaded run's frames are).
fn places_by_start(
    table: &FrameTable,
    measured: &MeasuredFrames,
    rows: &mut RowFrames,
) -> Result<Vec<u32>> {
    // Each measured frame's first row: the tie-break between frames starting together.
    let mut slot = vec![u32::MAX; table.slots()];
    let mut row = 0u32;
    rows(&mut |f| {
        if f != NO_FRAME && measured.in_window.get(f) && slot[f as usize] == u32::MAX {
            slot[f as usize] = row;
        }
        row = row.wrapping_add(1);
    })?;
    // Sized once: collected, the vector grew by doubling (up to twice what it holds).
    let mut order: Vec<u32> = Vec::with_capacity(measured.count as usize);
    order.extend(measured.in_window.ones());
    order.sort_unstable_by_key(|&f| (table.start_ns(f), slot[f as usize]));
    // `slot` now holds each frame's place in start order.
    for (k, &f) in order.iter().enumerate() {
        slot[f as usize] = k as u32;
    }
    Ok(slot)
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
            let mut rows = frames_of_rows(&columns.frame);
            let by_rank = starts_follow_indices(&table, &measured, &mut rows).unwrap();
            assert_eq!(by_rank, !three_first);
            let listed = places_by_start(&table, &measured, &mut rows).unwrap();
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
            let mut rows = frames_of_rows(&columns.frame);
            assert!(!starts_follow_indices(&table, &measured, &mut rows).unwrap());
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
        // A frame's first span has no delay kept.
        assert_eq!(
            frames.delays_by_sorting(2, None).len(),
            out_of_order.len() - frames.len()
        );
    }

    #[test]
    fn one_span_a_frame_in_start_order_holds_no_rows_nor_frame_bounds() {
        // A recording of one thread: the measured spans (the window cuts the first frames
        // and the last) are a stretch of rows. Swapped, two frames need the rows listed;
        // two spans in one frame need the frames' bounds too.
        let in_order: Vec<Span> = (0..40u64)
            .map(|f| span(f, 0, f as i64 * 100 - 500, 30))
            .collect();
        let mut swapped = in_order.clone();
        swapped.swap(10, 11);
        let mut two_in_one = in_order.clone();
        two_in_one[11].frame = 10;
        for (spans, stretch, one_a_frame) in [
            (&in_order, true, true),
            (&swapped, false, true),
            (&two_in_one, false, false),
        ] {
            let (mut columns, table, measured) = read(spans);
            let frame_of_row = std::mem::take(&mut columns.frame);
            let frames = RecordedFrames::new(&columns, frame_of_row, table, &measured).unwrap();
            assert_eq!(matches!(frames.rows, Rows::Stretch { .. }), stretch);
            assert_eq!(frames.first.is_none(), one_a_frame);
            // Frames by start, each its spans by start, whichever way they are held.
            let mut starts = Vec::new();
            for k in 0..frames.len() {
                starts.extend(frames.spans(k).map(|s| s.start_ns));
            }
            assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
            assert_eq!(starts.len() as u64, measured.count + (!one_a_frame) as u64);
        }
    }
}
