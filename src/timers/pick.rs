//! Which strategy to use: the cheapest in CPU whose p99 lateness meets the need.

use serde::{Deserialize, Serialize};

use super::Row;

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pick {
    /// Index into the interval's rows.
    pub row: usize,
    /// Whether that row meets the need; when false it is the one with the lowest p99.
    pub meets: bool,
    /// Some p99 compared rests on fewer than [`P99_WAITS`] waits: the pick is an estimate.
    #[serde(default)]
    pub provisional: bool,
}

/// Among rows with p99 ≤ `need_ns`, the least CPU per wait (then the lower p99). When none
/// meets it, the lowest p99 (then the least CPU). `None` without rows.
pub fn cheapest(rows: &[Row], need_ns: f64) -> Option<Pick> {
    let by = |key: fn(&Row) -> (f64, f64)| {
        move |a: &(usize, &Row), b: &(usize, &Row)| {
            let (ka, kb) = (key(a.1), key(b.1));
            ka.0.total_cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
        }
    };
    let meeting = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.p99_ns <= need_ns)
        .min_by(by(|r| (r.cpu_per_wait_ns, r.p99_ns)));
    let provisional = provisional(rows).is_some();
    if let Some((row, _)) = meeting {
        return Some(Pick {
            row,
            meets: true,
            provisional,
        });
    }
    rows.iter()
        .enumerate()
        .min_by(by(|r| (r.p99_ns, r.cpu_per_wait_ns)))
        .map(|(row, _)| Pick {
            row,
            meets: false,
            provisional,
        })
}

/// Waits a percentile needs before it is more than the largest few values renamed.
pub const P99_WAITS: u64 = 100;
pub const P99_9_WAITS: u64 = 1000;

/// Why a pick rests on estimates: the p99s it compared that had fewer waits than a p99
/// needs (the starred ones), out of all it compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Provisional {
    pub starred: usize,
    pub compared: usize,
    /// The fewest waits of a starred row.
    pub fewest_waits: u64,
}

/// `Some` when any p99 the pick compares is starred: then a row could be picked, or passed
/// over, on a p99 that is nearly the maximum. A firm pick needs every p99 judged by
/// [`P99_WAITS`] waits or more.
pub fn provisional(rows: &[Row]) -> Option<Provisional> {
    let starred: Vec<&Row> = rows.iter().filter(|r| r.waits < P99_WAITS).collect();
    let fewest_waits = starred.iter().map(|r| r.waits).min()?;
    Some(Provisional {
        starred: starred.len(),
        compared: rows.len(),
        fewest_waits,
    })
}

/// The `--duration` that gives [`P99_WAITS`] waits of `interval_ns` with room for lateness
/// (5%), rounded up to 100 ms.
pub fn duration_for_firm_pick(interval_ns: u64) -> std::time::Duration {
    const STEP_NS: u128 = 100_000_000;
    let ns = interval_ns as u128 * P99_WAITS as u128 * 105 / 100;
    let ns = ns.div_ceil(STEP_NS) * STEP_NS;
    std::time::Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timers::strategy::Strategy;
    use crate::timers::thread::Sched;
    use crate::timers::Cell;

    fn row(strategy: Strategy, p99_us: f64, cpu_us: f64) -> Row {
        Row {
            cell: Cell {
                interval_ns: 1_000_000,
                strategy,
                slack: None,
                sched: Sched::Other,
            },
            waits: 1000,
            p50_ns: 0.0,
            p99_ns: p99_us * 1e3,
            p99_9_ns: 0.0,
            max_ns: 0.0,
            mean_ns: 0.0,
            cpu_per_wait_ns: cpu_us * 1e3,
            cpu_pct: 0.0,
        }
    }

    #[test]
    fn the_cheapest_that_meets_the_need() {
        let rows = [
            row(Strategy::Nanosleep, 60.0, 3.0),
            row(Strategy::Spin, 0.1, 1000.0),
            row(Strategy::Hybrid, 8.0, 40.0),
            row(Strategy::Timerfd, 20.0, 4.0), // exactly the need: meets it
        ];
        assert_eq!(
            cheapest(&rows, 20e3),
            Some(Pick {
                row: 3,
                meets: true,
                provisional: false
            })
        );
        // Tighter: only spin and hybrid; hybrid costs less.
        assert_eq!(
            cheapest(&rows, 10e3),
            Some(Pick {
                row: 2,
                meets: true,
                provisional: false
            })
        );
    }

    #[test]
    fn a_pick_is_provisional_when_any_p99_it_compares_is_starred() {
        let mut rows = vec![
            row(Strategy::Nanosleep, 60.0, 3.0),
            row(Strategy::Hybrid, 8.0, 40.0),
        ];
        // 1000 waits each: every p99 is judged, the pick is firm.
        assert_eq!(provisional(&rows), None);
        rows[1].waits = P99_WAITS;
        assert_eq!(provisional(&rows), None, "exactly enough is enough");
        // The default 400 ms at 5714 µs gave 64–71 waits a cell: one such row is enough to
        // make the pick an estimate, even when it is not the row picked.
        rows[0].waits = 64;
        assert_eq!(
            provisional(&rows),
            Some(Provisional {
                starred: 1,
                compared: 2,
                fewest_waits: 64
            })
        );
        rows[1].waits = 70;
        assert_eq!(provisional(&rows).map(|p| p.starred), Some(2));
        assert_eq!(provisional(&[]), None);
    }

    #[test]
    fn the_duration_for_a_firm_pick_leaves_room_for_lateness() {
        use std::time::Duration;
        // 100 waits of 5714 µs are 571.4 ms; with 5% for lateness, 600 ms.
        assert_eq!(
            duration_for_firm_pick(5_714_000),
            Duration::from_millis(600)
        );
        assert_eq!(
            duration_for_firm_pick(16_667_000),
            Duration::from_millis(1800)
        );
        assert_eq!(
            duration_for_firm_pick(1_000_000),
            Duration::from_millis(200)
        );
    }

    #[test]
    fn none_meets_it_then_the_most_precise() {
        let rows = [
            row(Strategy::Nanosleep, 60.0, 3.0),
            row(Strategy::Hybrid, 8.0, 40.0),
            row(Strategy::Condvar, 8.0, 5.0), // same p99, cheaper: wins the tie
        ];
        assert_eq!(
            cheapest(&rows, 1e3),
            Some(Pick {
                row: 2,
                meets: false,
                provisional: false
            })
        );
        assert_eq!(cheapest(&[], 1e3), None);
    }
}
