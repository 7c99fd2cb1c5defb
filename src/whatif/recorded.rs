//! The measured frames as the model replays them: rows of the run's span columns, frame
//! after frame in start order, each frame's sorted by start, and each span's hand-over
//! delay. 4 bytes a span for the order and 4 for the delay (8 where one passes 4.29 s)
//! beside the columns (start and thread kept), where a vector of spans per frame took
//! ~100 (issue 29).

use anyhow::{bail, Result};

use crate::analyze::compact::columns::SpanColumns;
use crate::analyze::compact::packed::PackedNs;
use crate::analyze::compact::table::FrameTable;
use crate::analyze::compact::values::NsValues;
use crate::analyze::compact::window::MeasuredFrames;
use crate::analyze::frames::NO_FRAME;
use crate::analyze::pipeline::waits::StageSpan;

pub(super) struct RecordedFrames<'a> {
    stage: &'a [u16],
    dur: &'a PackedNs,
    start: &'a PackedNs,
    thread: &'a [u32],
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
        // Each measured frame's first row: the tie-break between frames starting together.
        let mut slot = vec![u32::MAX; table.slots()];
        for (row, &f) in frame_of_row.iter().enumerate() {
            if measured_row(f) && slot[f as usize] == u32::MAX {
                slot[f as usize] = row as u32;
            }
        }
        let mut order: Vec<u32> = measured.in_window.ones().collect();
        order.sort_unstable_by_key(|&f| (table.start_ns(f), slot[f as usize]));
        // `slot` now holds each frame's place in start order.
        for (k, &f) in order.iter().enumerate() {
            slot[f as usize] = k as u32;
        }
        let frames = order.len();
        drop((order, table));
        // A counting sort of the rows by their frame's place.
        let mut first = vec![0u32; frames + 1];
        for &f in &frame_of_row {
            if measured_row(f) {
                first[slot[f as usize] as usize + 1] += 1;
            }
        }
        for k in 0..frames {
            first[k + 1] += first[k];
        }
        // `first[k]` is frame k's cursor while the rows are placed, then its end.
        let mut rows = vec![0u32; first[frames] as usize];
        for (row, &f) in frame_of_row.iter().enumerate() {
            if measured_row(f) {
                let at = &mut first[slot[f as usize] as usize];
                rows[*at as usize] = row as u32;
                *at += 1;
            }
        }
        drop((slot, frame_of_row));
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
            thread: self.thread[r],
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
        self.delays_ns = narrow;
    }
}
