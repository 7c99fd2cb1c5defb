//! The measured frames' rate and the distributions of their totals and intervals alone,
//! as the analysis gives them: what `whatif` prints as the measurement beside its model,
//! without the rest of the analysis (stage tables, waits, the scheduler's timeline).

use super::table::FrameTable;
use super::values::with_ns;
use super::window::{end_order, MeasuredFrames};
use super::{intervals_in_order, values_in_order};
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
    // Totals are sorted whatever their order: taken before the end order is made, so
    // the two never take memory at once.
    let measured_frames: Vec<u32> = measured.in_window.ones().collect();
    let mut totals = values_in_order(&measured_frames, |i| table.total_ns(i));
    drop(measured_frames);
    totals.sort();
    let total = totals.dist_of_sorted();
    drop(totals);
    let order = end_order(table, measured);
    let mut intervals = intervals_in_order(&order, table);
    drop(order);
    intervals.sort();
    let fps = with_ns!(&intervals, v => fps_summary_of(v));
    FrameRate {
        fps,
        total,
        interval: intervals.dist_of_sorted(),
    }
}
