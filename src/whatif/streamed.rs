//! The measured frames of a run whose frames have one span each (`testprog rate`'s shape)
//! read again from the run each time the model replays them, nothing of the spans held:
//! their columns (15 bytes a span beside the frame table's 8 a frame) were whatif's peak,
//! 23 bytes a span where the report, which reads the spans again too
//! (`analyze::compact::streamed`), holds 12.5 (issue 31 item 8). A read costs a few ns a
//! span (docs/run-file.md); the model reads the frames four or five times.
//!
//! The frames are those the columns would give ([`super::recorded::RecordedFrames`]): the
//! measured spans must be a stretch of the run in start order, frames starting together in
//! the run's order, as they are in a recording of one thread; else the caller reads the
//! columns.

use anyhow::Result;

use super::recorded::FrameSpans;
use super::recorded::ReplayFrames;
use crate::analyze::compact::columns::changed_between_reads;
use crate::analyze::compact::table::FrameTable;
use crate::analyze::compact::window::{measure_with, MeasuredFrames};
use crate::analyze::frames::{out_of_range, NO_FRAME};
use crate::analyze::pipeline::waits::StageSpan;
use crate::model::{RunMeta, Span, SpanSource};
use crate::read_ahead::for_each_read_ahead;

/// Every span of `source` in the run's order with its frame's index in `table` (NO_FRAME
/// for a duration out of range); an error when a span's frame is not in the table (the run
/// changed since the table was read).
pub(super) fn each_with_frame(
    source: &(dyn SpanSource + Sync),
    table: &FrameTable,
    visit: &mut dyn FnMut(&Span, u32),
) -> Result<()> {
    let mut unknown = 0u64;
    for_each_read_ahead(source, &mut |chunk| {
        for s in chunk {
            let frame = match out_of_range(s.start_ns, s.dur_ns) {
                true => NO_FRAME,
                false => table.index_of(s.frame).unwrap_or_else(|| {
                    unknown += 1;
                    NO_FRAME
                }),
            };
            visit(s, frame);
        }
        Ok(())
    })?;
    match unknown {
        0 => Ok(()),
        unknown => Err(changed_between_reads(unknown)),
    }
}

/// The frames of `table` measured in `meta`'s window, the spans read again only where the
/// run stopped mid-frame (for its last frames).
pub(super) fn measure_frames(
    table: &FrameTable,
    meta: &RunMeta,
    source: &(dyn SpanSource + Sync),
) -> Result<MeasuredFrames> {
    let (_, measured) = measure_with(table, meta, &mut |visit| {
        each_with_frame(source, table, &mut |s, frame| visit(frame, s.stage))
    })?;
    Ok(measured)
}

/// Measured frames of one span each, read again from the run as they are wanted.
pub(super) struct StreamedFrames<'a> {
    source: &'a (dyn SpanSource + Sync),
    /// The measured spans are rows `from..from + frames` of a read, in start order.
    from: usize,
    frames: usize,
    /// Spans a read gives: another count, and the run changed between reads.
    spans: usize,
}

impl<'a> StreamedFrames<'a> {
    /// The measured frames of `source` (`spans` in all, each its frame's only span; the
    /// frames of `table` measured as `measured` says), to be read again, when they are a
    /// stretch of its spans in start order; `None` otherwise. One read.
    pub fn of_stretch(
        source: &'a (dyn SpanSource + Sync),
        table: &FrameTable,
        measured: &MeasuredFrames,
        spans: usize,
    ) -> Result<Option<StreamedFrames<'a>>> {
        let (mut from, mut frames, mut row) = (None, 0usize, 0usize);
        let (mut last_start, mut stretch) = (i64::MIN, true);
        each_with_frame(source, table, &mut |s, frame| {
            if frame != NO_FRAME && measured.in_window.get(frame) {
                let from = *from.get_or_insert(row);
                // Frames starting together keep the run's order, as the columns' frames do.
                stretch &= row == from + frames && s.start_ns >= last_start;
                last_start = s.start_ns;
                frames += 1;
            }
            row += 1;
        })?;
        if row != spans {
            return Err(changed_in_between(spans, row));
        }
        Ok(stretch.then_some(StreamedFrames {
            source,
            from: from.unwrap_or(0),
            frames,
            spans,
        }))
    }
}

/// The error of a read that did not give the spans an earlier read gave.
pub(super) fn changed_in_between(
    before: impl std::fmt::Display,
    now: impl std::fmt::Display,
) -> anyhow::Error {
    anyhow::anyhow!(
        "the run had {before} spans when first read and {now} when read again: it changed \
         while whatif read it (run whatif again once the run is written)"
    )
}

impl ReplayFrames for StreamedFrames<'_> {
    fn len(&self) -> usize {
        self.frames
    }

    fn each(&self, visit: &mut dyn FnMut(&FrameSpans)) -> Result<()> {
        let (mut row, end, mut out_of_range_now) = (0usize, self.from + self.frames, 0u64);
        for_each_read_ahead(self.source, &mut |chunk| {
            // The chunk's rows within the stretch.
            let first = row;
            row += chunk.len();
            let (a, b) = (self.from.clamp(first, row), end.clamp(first, row));
            for s in &chunk[a - first..b - first] {
                if out_of_range(s.start_ns, s.dur_ns) {
                    out_of_range_now += 1;
                    continue;
                }
                visit(&[(StageSpan::from(s), 0)]);
            }
            Ok(())
        })?;
        if row != self.spans {
            return Err(changed_in_between(self.spans, row));
        }
        match out_of_range_now {
            0 => Ok(()),
            spans => Err(changed_between_reads(spans)),
        }
    }

    /// None to set: a frame's first span has no delay (the pacer's release is modelled
    /// instead), and these frames have no other.
    fn set_handover_delays(&mut self, _depth: usize, _pace: Option<u16>) {}

    fn held(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::compact::read_frames;
    use crate::model::{EndReason, Run};

    /// The frames of `spans` (one a frame) read again, and how many, where they are a
    /// stretch in start order.
    fn stretch_of(spans: Vec<Span>) -> Option<usize> {
        let mut run = Run {
            spans,
            ..Run::default()
        };
        run.meta.window_end_ns = 1_000_000;
        run.meta.end_reason = EndReason::Exited;
        let (table, spans) = read_frames(&run).unwrap();
        let measured = measure_frames(&table, &run.meta, &run).unwrap();
        let frames = StreamedFrames::of_stretch(&run, &table, &measured, spans).unwrap()?;
        let mut starts = Vec::new();
        frames
            .each(&mut |spans| starts.extend(spans.iter().map(|(s, _)| s.start_ns)))
            .unwrap();
        assert_eq!(starts.len(), frames.len());
        assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
        Some(frames.len())
    }

    /// A span of stage 0 on thread 0.
    fn span(frame: u64, start_ns: i64, dur_ns: i64) -> Span {
        crate::analyze::fixtures::span(frame, 0, 0, start_ns, dur_ns)
    }

    #[test]
    fn only_a_stretch_in_start_order_is_read_again() {
        // The window (from 0) leaves out the first frames: the stretch starts after them.
        let in_order: Vec<Span> = (0..40).map(|f| span(f, f as i64 * 100 - 500, 30)).collect();
        let measured = stretch_of(in_order.clone()).unwrap();
        assert!(measured > 2 && measured < 40, "{measured}");
        // Two frames starting together keep the run's order, whatever their ids.
        let mut tied = in_order.clone();
        tied[20].start_ns = tied[19].start_ns;
        assert_eq!(stretch_of(tied), Some(measured));
        // Out of start order, or a span out of range between two measured ones: the
        // columns' way.
        let mut swapped = in_order.clone();
        swapped.swap(20, 21);
        assert_eq!(stretch_of(swapped), None);
        let mut gap = in_order;
        gap.insert(20, span(99, 1_450, -1));
        assert_eq!(stretch_of(gap), None);
    }
}
