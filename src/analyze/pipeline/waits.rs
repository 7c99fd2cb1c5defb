//! A frame's waits: the gaps between the end of one of its stages and the start of its
//! next, in start order across threads and processes (docs/metrics.md, "Waits").
//!
//! One sweep over the frame's spans sorted by start: `covered` is the latest end so far and
//! `last` the stage that reached it. The next span starting at or after `covered` opens a
//! wait `last→next` of `start − covered` (zero for stages recorded back to back); one starting
//! before `covered` overlaps the frame's earlier work: an overlap, counted, not a wait.
//! The frame's work is the time at least one of its stages ran (the union of its spans), so
//! total = work + Σ waits exactly.

/// One span of a frame, as the sweep needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct StageSpan {
    pub start_ns: i64,
    pub end_ns: i64,
    pub stage: u16,
    pub thread: u32,
}

impl From<&crate::model::Span> for StageSpan {
    fn from(s: &crate::model::Span) -> StageSpan {
        StageSpan {
            start_ns: s.start_ns,
            end_ns: s.end_ns(),
            stage: s.stage,
            thread: s.thread,
        }
    }
}

/// What a frame's sweep found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameWaits {
    /// Time at least one of the frame's stages ran.
    pub work_ns: i64,
    /// Σ of its waits.
    pub wait_ns: i64,
    /// `(from, to, ns)` in start order.
    pub waits: Vec<(u16, u16, i64)>,
    /// `(from, to)` pairs where `to` started before `from` (and everything before it) ended.
    pub overlaps: Vec<(u16, u16)>,
}

/// The waits of one frame; `spans` are sorted in place (by start, then end, stage, thread:
/// every field, so the result does not depend on the order they came in).
pub fn frame_waits(spans: &mut [StageSpan]) -> FrameWaits {
    spans.sort_unstable();
    let mut out = FrameWaits::default();
    let Some((first, rest)) = spans.split_first() else {
        return out;
    };
    let (mut covered, mut last) = (first.end_ns, first.stage);
    out.work_ns = first.end_ns.saturating_sub(first.start_ns);
    for s in rest {
        if s.start_ns >= covered {
            let gap = s.start_ns.saturating_sub(covered);
            out.waits.push((last, s.stage, gap));
            out.wait_ns = out.wait_ns.saturating_add(gap);
            out.work_ns = out
                .work_ns
                .saturating_add(s.end_ns.saturating_sub(s.start_ns));
        } else {
            out.overlaps.push((last, s.stage));
            out.work_ns = out
                .work_ns
                .saturating_add(s.end_ns.saturating_sub(covered).max(0));
        }
        if s.end_ns > covered {
            covered = s.end_ns;
            last = s.stage;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(stage: u16, thread: u32, start_ns: i64, end_ns: i64) -> StageSpan {
        StageSpan {
            start_ns,
            end_ns,
            stage,
            thread,
        }
    }

    #[test]
    fn gaps_between_stages_across_threads_are_waits() {
        // capture [0,10] on thread 0, convert [10,30] (back to back: a zero wait), encode
        // [50,90] on thread 1 (waited 20), send [95,100] (waited 5). Given out of order.
        let mut spans = [
            s(3, 1, 95, 100),
            s(0, 0, 0, 10),
            s(2, 1, 50, 90),
            s(1, 0, 10, 30),
        ];
        let w = frame_waits(&mut spans);
        assert_eq!(w.waits, vec![(0, 1, 0), (1, 2, 20), (2, 3, 5)]);
        assert_eq!((w.work_ns, w.wait_ns), (75, 25));
        assert_eq!(w.work_ns + w.wait_ns, 100, "total = work + waits");
        assert!(w.overlaps.is_empty());
    }

    #[test]
    fn overlapping_stages_are_counted_not_waited() {
        // a [0,50]; b [20,40] inside it (overlap); c [60,70] waits 10 after a (b ended
        // earlier, so the wait is a→c); d [65,80] overlaps c.
        let mut spans = [
            s(0, 0, 0, 50),
            s(1, 1, 20, 40),
            s(2, 0, 60, 70),
            s(3, 1, 65, 80),
        ];
        let w = frame_waits(&mut spans);
        assert_eq!(w.waits, vec![(0, 2, 10)]);
        assert_eq!(w.overlaps, vec![(0, 1), (2, 3)]);
        // Work: [0,50] ∪ [60,80] = 70; total 80 = 70 + 10.
        assert_eq!((w.work_ns, w.wait_ns), (70, 10));
    }

    #[test]
    fn one_span_has_work_and_no_wait() {
        let w = frame_waits(&mut [s(0, 0, 5, 12)]);
        assert_eq!((w.work_ns, w.wait_ns), (7, 0));
        assert!(w.waits.is_empty() && w.overlaps.is_empty());
        assert_eq!(frame_waits(&mut []), FrameWaits::default());
    }
}
