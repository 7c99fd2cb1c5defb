//! Which strategy to use: the cheapest in CPU whose p99 lateness meets the need.

use serde::{Deserialize, Serialize};

use super::Row;

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pick {
    /// Index into the interval's rows.
    pub row: usize,
    /// Whether that row meets the need; when false it is the one with the lowest p99.
    pub meets: bool,
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
    if let Some((row, _)) = meeting {
        return Some(Pick { row, meets: true });
    }
    rows.iter()
        .enumerate()
        .min_by(by(|r| (r.p99_ns, r.cpu_per_wait_ns)))
        .map(|(row, _)| Pick { row, meets: false })
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
                meets: true
            })
        );
        // Tighter: only spin and hybrid; hybrid costs less.
        assert_eq!(
            cheapest(&rows, 10e3),
            Some(Pick {
                row: 2,
                meets: true
            })
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
                meets: false
            })
        );
        assert_eq!(cheapest(&[], 1e3), None);
    }
}
