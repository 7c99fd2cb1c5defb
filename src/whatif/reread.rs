//! The measured frames of a run of one span a frame whose frame ids count up as they are
//! read and whose frames start in that order (`testprog rate`'s shape, a recording of one
//! thread), read again from the run each time the model replays them with nothing held by
//! frame: which spans are measured is told span by span by the report's shape of the run
//! (`compact::frameless::measured`), not by a frame table (8 bytes a frame, whatif's peak
//! once its figures were selected rather than held: issue 29, memory independent of the
//! run's length).
//!
//! The frames are those of [`super::recorded::RecordedFrames`]: in start order, frames
//! starting together in the run's order, which is then the order they are read in. A run
//! of another shape is left to the frame table (`None`).

use anyhow::Result;

use super::recorded::FrameSpans;
use super::recorded::ReplayFrames;
use super::streamed::changed_in_between;
use crate::analyze::compact::frameless::measured::MeasuredSpans;
use crate::analyze::pipeline::waits::StageSpan;
use crate::model::{Run, SpanSource};
use crate::read_ahead::for_each_read_ahead;

pub(super) struct RereadFrames<'a> {
    source: &'a (dyn SpanSource + Sync),
    measured: MeasuredSpans,
    frames: usize,
}

/// The read stopped: the run is not of the shape this module reads.
#[derive(Debug)]
struct OtherShape;

impl std::fmt::Display for OtherShape {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("read stopped: the run's frames are not one span each in start order")
    }
}

impl std::error::Error for OtherShape {}

impl<'a> RereadFrames<'a> {
    /// The measured frames of `head`'s run read from `source`, by one read (two where the
    /// metadata does not tell the window: the shape first); `None` when the run is not of
    /// this shape (the module's note).
    pub fn read(
        head: &Run,
        source: &'a (dyn SpanSource + Sync),
    ) -> Result<Option<RereadFrames<'a>>> {
        let Some(mut measured) = MeasuredSpans::read(head, source)? else {
            return Ok(None);
        };
        let (mut rows, mut frames, mut last_start) = (0u64, 0usize, i64::MIN);
        let read = for_each_read_ahead(source, &mut |chunk| {
            for s in chunk {
                rows += 1;
                if !measured.check(s) {
                    return Err(OtherShape.into());
                }
                if measured.is_measured(s) {
                    // Frames starting together keep the run's order, as the table's do.
                    if s.start_ns < last_start {
                        return Err(OtherShape.into());
                    }
                    last_start = s.start_ns;
                    frames += 1;
                }
            }
            Ok(())
        });
        match read {
            Err(e) if e.is::<OtherShape>() => return Ok(None),
            read => read?,
        }
        measured.checked();
        if rows != measured.spans() {
            return Err(changed_in_between(measured.spans(), rows));
        }
        Ok(Some(RereadFrames {
            source,
            measured,
            frames,
        }))
    }

    /// Spans of the run, usable or not.
    pub fn spans(&self) -> u64 {
        self.measured.spans()
    }
}

impl ReplayFrames for RereadFrames<'_> {
    fn len(&self) -> usize {
        self.frames
    }

    fn each(&self, visit: &mut dyn FnMut(&FrameSpans)) -> Result<()> {
        let (mut rows, mut frames) = (0u64, 0usize);
        for_each_read_ahead(self.source, &mut |chunk| {
            rows += chunk.len() as u64;
            for s in chunk {
                if !self.measured.is_measured(s) {
                    continue;
                }
                frames += 1;
                visit(&[(StageSpan::from(s), 0)]);
            }
            Ok(())
        })?;
        if rows != self.spans() {
            return Err(changed_in_between(self.spans(), rows));
        }
        if frames != self.frames {
            anyhow::bail!(
                "the run had {} measured frames when first read and {frames} when read again: \
                 it changed while whatif read it (run whatif again once the run is written)",
                self.frames
            );
        }
        Ok(())
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
    use crate::model::{EndReason, Span};
    use crate::whatif::streamed::measure_frames;

    /// A span of stage 0 on thread 0.
    fn span(frame: u64, start_ns: i64, dur_ns: i64) -> Span {
        crate::analyze::fixtures::span(frame, 0, 0, start_ns, dur_ns)
    }

    /// The frames of `spans` read again, and how many (as many as the frame table
    /// measures), where they are of this module's shape.
    fn reread(spans: Vec<Span>, end_reason: EndReason) -> Option<usize> {
        let mut run = Run {
            spans,
            ..Run::default()
        };
        run.meta.window_end_ns = 4_000;
        run.meta.end_reason = end_reason;
        let frames = RereadFrames::read(&run, &run).unwrap()?;
        let (table, spans) = read_frames(&run).unwrap();
        assert_eq!(frames.spans(), spans as u64);
        let measured = measure_frames(&table, &run.meta, &run).unwrap();
        assert_eq!(frames.len() as u64, measured.count);
        let mut starts = Vec::new();
        frames
            .each(&mut |spans| starts.extend(spans.iter().map(|(s, _)| s.start_ns)))
            .unwrap();
        assert_eq!(starts.len(), frames.len());
        Some(frames.len())
    }

    #[test]
    fn ids_counting_up_in_start_order_are_read_without_a_table() {
        // Frames every 100 ns from before the window (it starts at 0) to past its end.
        let in_order: Vec<Span> = (0..50).map(|f| span(f, f as i64 * 100 - 500, 30)).collect();
        let measured = reread(in_order.clone(), EndReason::Exited).unwrap();
        assert!(measured > 2 && measured < 50, "{measured}");
        // Stopped mid-frame (the window from the last end, the last frames left out), a
        // span out of range among them, two frames starting together: still read again.
        assert!(reread(in_order.clone(), EndReason::Duration).is_some());
        let mut gap = in_order.clone();
        gap.insert(20, span(99, 1_450, -1));
        gap[21..].iter_mut().for_each(|s| s.frame += 100);
        assert_eq!(reread(gap, EndReason::Exited), Some(measured));
        let mut tied = in_order.clone();
        tied[20].start_ns = tied[19].start_ns;
        assert_eq!(reread(tied, EndReason::Exited), Some(measured));
        // Ids going back (two frames swapped), or a frame starting before the one read
        // before it: the frame table's way.
        let mut swapped = in_order.clone();
        swapped.swap(20, 21);
        assert_eq!(reread(swapped, EndReason::Exited), None);
        let mut early = in_order;
        early[21].start_ns = early[20].start_ns - 1;
        assert_eq!(reread(early, EndReason::Exited), None);
    }
}
