//! Every frame of a run of one span a frame in end order, from one read and the small
//! reordering buffer the analysis uses ([`EndOrder`]): the HTML page's frame plots without
//! a frame table (issue 29: 8 bytes a frame, the page's peak). The frames are the frame
//! table's (its usable spans, one a frame), in its end order (end, then id).

use super::{completed, EndOrder, Ended, Scan, Stop};
use crate::analyze::frames::out_of_range;
use crate::model::SpanSource;

/// Each frame of `source`'s run to `frame` as (end, total, id) in end order, then id; false
/// (after some frames, maybe) when the run is not of one span a frame with ids counting up,
/// or its frames come too far out of end order for the buffer.
pub fn for_each_frame_by_end(
    source: &dyn SpanSource,
    frame: &mut dyn FnMut(i64, i64, u64),
) -> anyhow::Result<bool> {
    let mut scan = Scan::new(false);
    let mut order = EndOrder::default();
    let read = source.for_each_spans(&mut |chunk| {
        for s in chunk {
            // Ids counting up, as the analysis checks them.
            scan.span(s)?;
            if out_of_range(s.start_ns, s.dur_ns) {
                continue;
            }
            let ended = Ended {
                end_ns: s.start_ns + s.dur_ns,
                id: s.frame,
                start_ns: s.start_ns,
            };
            if let Some(f) = order.push(ended)? {
                frame(f.end_ns, f.total_ns(), f.id);
            }
        }
        Ok(())
    });
    if !completed(read)? {
        return Ok(false);
    }
    loop {
        match order.release() {
            Ok(Some(f)) => frame(f.end_ns, f.total_ns(), f.id),
            Ok(None) => return Ok(true),
            Err(Stop) => return Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::compact::read_frames;
    use crate::analyze::fixtures::{reference_run, span, MS};

    fn by_end(run: &crate::model::Run) -> Option<Vec<(i64, i64)>> {
        let mut frames = Vec::new();
        let whole = for_each_frame_by_end(run, &mut |end, total, _| frames.push((end, total)));
        whole.unwrap().then_some(frames)
    }

    /// The frames of the frame table, in its end order (then id): a frame that ends
    /// before the one before it, a span out of range (no frame), equal ends.
    #[test]
    fn the_frames_of_the_table_in_end_order() {
        let mut run = reference_run();
        run.spans = vec![
            span(0, 0, 0, 0, 10 * MS),
            span(1, 0, 1, 2 * MS, 3 * MS),
            span(2, 0, 0, 11 * MS, -5),
            span(3, 0, 0, 12 * MS, 3 * MS),
            span(4, 0, 1, 13 * MS, 2 * MS),
        ];
        let (table, _) = read_frames(&run).unwrap();
        let mut expected: Vec<(i64, u64, i64)> = (table.frames())
            .map(|i| (table.end_ns(i), table.id(i), table.total_ns(i)))
            .collect();
        expected.sort_unstable();
        let expected: Vec<(i64, i64)> = expected.iter().map(|&(e, _, t)| (e, t)).collect();
        assert_eq!(expected.len(), 4);
        assert_eq!(by_end(&run), Some(expected));
    }

    /// A frame of two spans, or ids going back: not this run's shape.
    #[test]
    fn refuses_a_frame_of_two_spans() {
        let mut run = reference_run();
        assert!(
            by_end(&run).is_none(),
            "the reference run has several stages a frame"
        );
        run.spans = vec![span(1, 0, 0, 0, MS), span(0, 0, 0, 2 * MS, MS)];
        assert!(by_end(&run).is_none());
    }

    /// A frame that ends before frames the buffer has let out (the last frame ends
    /// first); the same frame within the buffer's reach is put in its place.
    #[test]
    fn refuses_frames_far_out_of_end_order() {
        let mut run = reference_run();
        let far = 2 * super::super::REORDER_FRAMES as u64;
        for n in [far, 100] {
            run.spans = (0..n)
                .map(|i| match i {
                    i if i == n - 1 => span(i, 0, 0, 0, MS / 4),
                    i => span(i, 0, 0, i as i64 * MS, MS / 2),
                })
                .collect();
            let frames = by_end(&run);
            assert_eq!(frames.is_some(), n == 100, "{n} frames");
            if let Some(frames) = frames {
                assert_eq!(frames[0], (MS / 4, MS / 4));
            }
        }
    }
}
