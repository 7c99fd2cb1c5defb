//! The measured frames' rate and the distributions of their totals and intervals alone,
//! as the analysis gives them: what `whatif` prints as the measurement beside its model,
//! without the rest of the analysis (stage tables, waits, the scheduler's timeline).

use super::intervals_over_order;
use super::table::FrameTable;
use super::values::{with_ns, NsValues};
use super::window::{end_order, MeasuredFrames};
use crate::analyze::fps::fps_summary_of;
use crate::analyze::{Dist, FpsSummary};
use crate::model::Run;

/// `Analysis::fps`, `total` and `interval`.
#[derive(Clone, Debug, Default)]
pub struct FrameRate {
    pub fps: Option<FpsSummary>,
    pub total: Option<Dist>,
    pub interval: Option<Dist>,
}

/// The figures [`super::analyze_from`] gives `head`'s run, its frames `table` measured as
/// `measured`.
pub fn frame_rate(head: &Run, table: &FrameTable, measured: &MeasuredFrames) -> FrameRate {
    // A trace imported without frames made each slice a frame: the analysis has none.
    if head.import.as_ref().is_some_and(|i| i.frames_undefined()) {
        return FrameRate::default();
    }
    // Totals are sorted whatever their order: taken straight from the measured frames'
    // bits, before the end order is made, so no two of these take memory at once.
    let frames = || measured.in_window.ones();
    let (min, max) = (frames().map(|i| table.total_ns(i)))
        .fold((0, 0), |(lo, hi): (i64, i64), v| (lo.min(v), hi.max(v)));
    let mut totals = NsValues::for_range(min, max, measured.count as usize);
    for i in frames() {
        totals.push(table.total_ns(i));
    }
    totals.sort();
    let total = totals.dist_of_sorted();
    drop(totals);
    let mut intervals = intervals_over_order(end_order(table, measured), table);
    intervals.sort();
    let fps = with_ns!(&intervals, v => fps_summary_of(v));
    FrameRate {
        fps,
        total,
        interval: intervals.dist_of_sorted(),
    }
}
