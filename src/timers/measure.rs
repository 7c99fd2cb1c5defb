//! Measuring one cell: on a fresh thread with the cell's settings, wait again and again for
//! a deadline one interval after now, for the cell's duration.

use std::time::Duration;

use framelab_probe::monotonic_ns;

use super::strategy::Waiter;
use super::thread::{configure, thread_cpu_ns, Slack};
use super::{Cell, Row};
use crate::analyze::stats::{mean, percentile_sorted};

/// Lateness (wake − deadline) of each wait, and the thread's CPU and wall time over them.
struct Samples {
    lateness_ns: Vec<i64>,
    cpu_ns: u64,
    wall_ns: u64,
}

/// Measures `cell` for `duration` (plus at most one interval: the last wait is finished).
/// The first wait is not counted: it pays for first-touch costs.
pub fn measure_cell(cell: &Cell, duration: Duration) -> Result<Row, String> {
    let cell = *cell;
    let duration_ns = duration.as_nanos().min(u64::MAX as u128) as u64;
    let samples = std::thread::Builder::new()
        .name("framelab-timers".into())
        .spawn(move || -> Result<Samples, String> {
            configure(cell.slack.unwrap_or(Slack::Default), cell.sched)?;
            let mut waiter = Waiter::new(cell.strategy, cell.interval_ns)?;
            waiter.wait_until(monotonic_ns().saturating_add(cell.interval_ns));
            let expected = (duration_ns / cell.interval_ns.max(1)).min(1 << 24) as usize;
            let mut lateness_ns = Vec::with_capacity(expected + 1);
            let (cpu_start, start) = (thread_cpu_ns(), monotonic_ns());
            let mut now = start;
            // At least one wait, however the thread was scheduled.
            loop {
                let deadline = now.saturating_add(cell.interval_ns);
                waiter.wait_until(deadline);
                now = monotonic_ns();
                lateness_ns.push((now - deadline).min(i64::MAX as u64) as i64);
                if now - start >= duration_ns {
                    break;
                }
            }
            Ok(Samples {
                lateness_ns,
                cpu_ns: thread_cpu_ns() - cpu_start,
                wall_ns: monotonic_ns() - start,
            })
        })
        .map_err(|e| format!("cannot start a measuring thread: {e}"))?
        .join()
        .map_err(|_| "the measuring thread panicked".to_string())??;
    row(cell, samples).ok_or_else(|| "no wait completed".to_string())
}

fn row(cell: Cell, mut s: Samples) -> Option<Row> {
    s.lateness_ns.sort_unstable();
    let sorted = &s.lateness_ns;
    let waits = sorted.len() as u64;
    Some(Row {
        cell,
        waits,
        p50_ns: percentile_sorted(sorted, 0.5)?,
        p99_ns: percentile_sorted(sorted, 0.99)?,
        p99_9_ns: percentile_sorted(sorted, 0.999)?,
        max_ns: *sorted.last()? as f64,
        mean_ns: mean(sorted)?,
        cpu_per_wait_ns: s.cpu_ns as f64 / waits as f64,
        cpu_pct: if s.wall_ns > 0 {
            s.cpu_ns as f64 * 100.0 / s.wall_ns as f64
        } else {
            0.0
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timers::strategy::Strategy;
    use crate::timers::thread::Sched;

    #[test]
    fn a_row_from_known_samples() {
        // Lateness 1..=100 µs: p50 = 50.5, p99 = 99.01, p99.9 = 99.901, max 100, mean 50.5 µs.
        // 2 ms of CPU over 100 waits and 10 ms: 20 µs a wait, 20% of a core.
        let cell = Cell {
            interval_ns: 100_000,
            strategy: Strategy::Spin,
            slack: None,
            sched: Sched::Other,
        };
        let samples = Samples {
            lateness_ns: (1..=100).rev().map(|us| us * 1000).collect(),
            cpu_ns: 2_000_000,
            wall_ns: 10_000_000,
        };
        let r = row(cell, samples).unwrap();
        assert_eq!(r.waits, 100);
        assert_eq!(r.p50_ns, 50_500.0);
        assert!((r.p99_ns - 99_010.0).abs() < 1e-6);
        assert!((r.p99_9_ns - 99_901.0).abs() < 1e-6);
        assert_eq!((r.max_ns, r.mean_ns), (100_000.0, 50_500.0));
        assert_eq!((r.cpu_per_wait_ns, r.cpu_pct), (20_000.0, 20.0));
        let none = Samples {
            lateness_ns: vec![],
            cpu_ns: 0,
            wall_ns: 0,
        };
        assert_eq!(row(cell, none), None);
    }

    #[test]
    fn a_short_cell_measures_real_waits() {
        // What is checked is the bookkeeping, never how late the waits were.
        let cell = Cell {
            interval_ns: 1_000_000,
            strategy: Strategy::ClockNanosleep,
            slack: Some(Slack::OneNs),
            sched: Sched::Other,
        };
        let r = measure_cell(&cell, Duration::from_millis(20)).unwrap();
        assert!(r.waits >= 1 && r.waits <= 20, "{}", r.waits);
        assert!(r.p50_ns >= 0.0 && r.p50_ns <= r.p99_ns && r.p99_ns <= r.max_ns);
        assert_eq!(r.cell, cell);
    }
}
