//! The pacer's own lateness: how late the SDK's pacer woke for each frame's slot, recorded
//! as the counter `pacer_late_ns` (`framelab_probe::wire::PACER_LATE_COUNTER`). Waiting for
//! a slot is not work of the frame, so it is in no stage, total or thread: it is summarised
//! here, for the report's `pacer` line (docs/metrics.md, "pacer").

use serde::{Deserialize, Serialize};

use super::stats::sort_ns;
use super::Dist;
use crate::model::CounterValue;

pub use framelab_probe::wire::PACER_LATE_COUNTER;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PacerSummary {
    /// How late the pacer woke for each measured frame (one value per wait), ns.
    pub late: Dist,
    /// Waits for frames with no span (a loop that ended after its last wait): not in `late`.
    #[serde(default)]
    pub unmatched: u64,
}

/// The pacer's values, fed one at a time beside the other counters.
#[derive(Debug, Default)]
pub struct PacerLateness {
    /// The counter id of `pacer_late_ns` in this run; `None` when no pacer recorded.
    counter: Option<u16>,
    values_ns: Vec<i64>,
    unmatched: u64,
}

impl PacerLateness {
    pub fn new(counter_names: &[String]) -> PacerLateness {
        PacerLateness {
            counter: (counter_names.iter().position(|n| n == PACER_LATE_COUNTER))
                .and_then(|c| u16::try_from(c).ok()),
            ..PacerLateness::default()
        }
    }

    /// Takes `v` when it is the pacer's (true), else leaves it to the counters (false).
    /// `frame` and `measured` as for `CounterTotals::add`.
    pub fn take(&mut self, v: &CounterValue, frame: Option<u32>, measured: bool) -> bool {
        if self.counter != Some(v.counter) {
            return false;
        }
        match frame {
            None => self.unmatched += 1,
            Some(_) if measured => self.values_ns.push(v.value),
            Some(_) => {}
        }
        true
    }

    pub fn finish(mut self) -> Option<PacerSummary> {
        sort_ns(&mut self.values_ns);
        let late = Dist::from_sorted(&self.values_ns)?;
        Some(PacerSummary {
            late,
            unmatched: self.unmatched,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pacer_counter_is_taken_the_others_are_left() {
        let names = ["bytes".to_string(), PACER_LATE_COUNTER.to_string()];
        let mut p = PacerLateness::new(&names);
        let v = |counter, value| CounterValue {
            frame: 0,
            counter,
            value,
        };
        assert!(!p.take(&v(0, 1500), Some(0), true));
        assert!(p.take(&v(1, 20), Some(0), true));
        assert!(p.take(&v(1, 3_341_000), Some(1), true));
        assert!(p.take(&v(1, 999), Some(2), false)); // warmup: taken, not summarised
        assert!(p.take(&v(1, 5), None, true)); // no frame: counted apart
        let s = p.finish().unwrap();
        assert_eq!(
            (s.late.count, s.late.max_ns, s.unmatched),
            (2, 3_341_000.0, 1)
        );
        // A run without a pacer has no summary, and leaves every counter alone.
        let mut none = PacerLateness::new(&names[..1]);
        assert!(!none.take(&v(1, 20), Some(0), true));
        assert!(none.finish().is_none());
    }
}
