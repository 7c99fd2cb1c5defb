//! `framelab timers`: how precisely this machine waits. For each interval, every wait
//! mechanism (strategy.rs) is measured in each thread setting (thread.rs) for a fixed time,
//! one cell after another on a fresh thread: how late each wait returns against its deadline,
//! and the CPU each wait costs. Then the cheapest strategy that meets `--need`.

pub mod measure;
pub mod pick;
pub mod render;
pub mod strategy;
pub mod thread;

use std::time::{Duration, Instant};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::model::Host;
use crate::units::parse_duration;
use pick::{cheapest, Pick};
use strategy::{Strategy, STRATEGIES};
use thread::{Sched, Slack};

/// The defaults: 1 kHz, 175 fps and 60 fps, 400 ms a cell: about 24 s with SCHED_FIFO
/// permitted (60 cells), 17 s without (42).
pub const DEFAULT_INTERVALS: &str = "1ms,5714us,16.667ms";
pub const DEFAULT_DURATION: &str = "400ms";
pub const DEFAULT_NEED: &str = "20us";
/// Each cell must have room for this many waits of its interval.
pub const MIN_WAITS: u64 = 10;

#[derive(Clone, Debug, PartialEq)]
pub struct TimersOptions {
    /// Measuring time of each cell.
    pub duration: Duration,
    pub intervals: Vec<Duration>,
    /// The p99 lateness a strategy must reach to be picked.
    pub need: Duration,
}

/// A duration that must be longer than zero (`--interval`, `--need`, `--duration`).
pub fn parse_positive_duration(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d.is_zero() {
        return Err(format!(
            "'{text}' is zero: give a positive duration, e.g. 5714us"
        ));
    }
    Ok(d)
}

impl TimersOptions {
    /// One-line errors that say what to give instead: usage errors (exit 2).
    pub fn validate(&self) -> Result<()> {
        self.check()
            .map_err(|why| crate::usage::UsageError(why).into())
    }

    fn check(&self) -> Result<(), String> {
        let Some(longest) = self.intervals.iter().max() else {
            return Err("no --interval given: list one or more, e.g. --interval 1ms,5714us".into());
        };
        if self.intervals.iter().any(|i| i.is_zero()) || self.need.is_zero() {
            return Err("intervals and --need must be longer than zero".into());
        }
        for (i, interval) in self.intervals.iter().enumerate() {
            if self.intervals[..i].contains(interval) {
                return Err(format!(
                    "--interval {interval:?} is given twice: list each interval once"
                ));
            }
        }
        let needed = *longest * MIN_WAITS as u32;
        if self.duration < needed {
            return Err(format!(
                "--duration {:?} leaves room for fewer than {MIN_WAITS} waits of --interval {:?}: give --duration {:?} or more",
                self.duration, longest, needed
            ));
        }
        Ok(())
    }
}

/// One measurement: an interval, a strategy, a thread setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    pub interval_ns: u64,
    pub strategy: Strategy,
    /// `None` where slack does not apply: spinning, and SCHED_FIFO (the kernel ignores it).
    pub slack: Option<Slack>,
    pub sched: Sched,
}

/// Whether SCHED_FIFO rows are measured, and why not.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FifoStatus {
    pub permitted: bool,
    pub reason: Option<String>,
}

/// What will be measured, known before anything is.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub cells: Vec<Cell>,
    pub duration: Duration,
    pub fifo: FifoStatus,
}

impl Plan {
    /// Every cell of `opts`, SCHED_FIFO ones only when `fifo` permits.
    pub fn new(opts: &TimersOptions, fifo: FifoStatus) -> Plan {
        let mut cells = Vec::new();
        for interval in &opts.intervals {
            let interval_ns = interval.as_nanos().min(u64::MAX as u128) as u64;
            for strategy in STRATEGIES {
                let mut settings = if strategy.sleeps() {
                    vec![
                        (Some(Slack::Default), Sched::Other),
                        (Some(Slack::OneNs), Sched::Other),
                    ]
                } else {
                    vec![(None, Sched::Other)]
                };
                if fifo.permitted {
                    settings.push((None, Sched::Fifo));
                }
                cells.extend(settings.into_iter().map(|(slack, sched)| Cell {
                    interval_ns,
                    strategy,
                    slack,
                    sched,
                }));
            }
        }
        Plan {
            cells,
            duration: opts.duration,
            fifo,
        }
    }

    /// Measuring time, all cells together (each may run up to one interval longer).
    pub fn total(&self) -> Duration {
        self.duration * self.cells.len() as u32
    }

    /// The line said before measuring: what, how long.
    pub fn summary(&self, intervals: usize) -> String {
        let per_interval = self.cells.len() / intervals.max(1);
        let fifo = if self.fifo.permitted {
            "SCHED_FIFO rows included".to_string()
        } else {
            format!(
                "SCHED_FIFO rows skipped: {}",
                self.fifo.reason.as_deref().unwrap_or("not permitted")
            )
        };
        format!(
            "{intervals} interval{} × {per_interval} cells × {:.2} s = {:.1} s ({fifo})",
            if intervals == 1 { "" } else { "s" },
            self.duration.as_secs_f64(),
            self.total().as_secs_f64()
        )
    }
}

/// One measured cell: lateness (wake − deadline) and CPU per wait.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    #[serde(flatten)]
    pub cell: Cell,
    pub waits: u64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub p99_9_ns: f64,
    pub max_ns: f64,
    pub mean_ns: f64,
    /// Thread CPU time over the cell ÷ waits.
    pub cpu_per_wait_ns: f64,
    /// Thread CPU time ÷ wall time of the cell × 100: the share of one core.
    pub cpu_pct: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalResult {
    pub interval_ns: u64,
    pub rows: Vec<Row>,
    /// The cheapest row meeting `need`, or the most precise one when none does.
    pub pick: Option<Pick>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimersReport {
    pub host: Host,
    /// This process's timer slack, what `default` means here.
    pub default_slack_ns: u64,
    pub duration_per_cell_ns: u64,
    pub need_ns: u64,
    pub fifo: FifoStatus,
    pub cells: u64,
    pub planned_ns: u64,
    pub elapsed_ns: u64,
    pub intervals: Vec<IntervalResult>,
    /// Cells that could not be measured, and why.
    pub notes: Vec<String>,
}

/// Whether SCHED_FIFO can be used here, as a status for the plan.
pub fn fifo_status() -> FifoStatus {
    match thread::fifo_permitted() {
        Ok(()) => FifoStatus {
            permitted: true,
            reason: None,
        },
        Err(e) => FifoStatus {
            permitted: false,
            reason: Some(format!(
                "{e} (needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least {})",
                thread::FIFO_PRIORITY
            )),
        },
    }
}

/// Measures every cell of `plan` in turn; `progress(done, total, cell)` before each.
pub fn run(
    opts: &TimersOptions,
    plan: &Plan,
    mut progress: impl FnMut(usize, usize, &Cell),
) -> TimersReport {
    let started = Instant::now();
    let mut intervals: Vec<IntervalResult> = Vec::new();
    let mut notes = Vec::new();
    for (done, cell) in plan.cells.iter().enumerate() {
        progress(done, plan.cells.len(), cell);
        if intervals
            .last()
            .is_none_or(|r| r.interval_ns != cell.interval_ns)
        {
            intervals.push(IntervalResult {
                interval_ns: cell.interval_ns,
                rows: Vec::new(),
                pick: None,
            });
        }
        match measure::measure_cell(cell, plan.duration) {
            Ok(row) => intervals.last_mut().map_or((), |r| r.rows.push(row)),
            Err(e) => notes.push(format!(
                "{} ({}, {}) every {} µs not measured: {e}",
                cell.strategy.name(),
                cell.slack.map_or("–", |s| s.name()),
                cell.sched.name(),
                cell.interval_ns as f64 / 1e3
            )),
        }
    }
    let need_ns = opts.need.as_nanos().min(u64::MAX as u128) as u64;
    for result in &mut intervals {
        result.pick = cheapest(&result.rows, need_ns as f64);
    }
    TimersReport {
        host: crate::host::probe(),
        default_slack_ns: thread::current_slack_ns(),
        duration_per_cell_ns: plan.duration.as_nanos().min(u64::MAX as u128) as u64,
        need_ns,
        fifo: plan.fifo.clone(),
        cells: plan.cells.len() as u64,
        planned_ns: plan.total().as_nanos().min(u64::MAX as u128) as u64,
        elapsed_ns: started.elapsed().as_nanos().min(u64::MAX as u128) as u64,
        intervals,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(intervals: &[u64], duration_ms: u64) -> TimersOptions {
        TimersOptions {
            duration: Duration::from_millis(duration_ms),
            intervals: intervals
                .iter()
                .map(|&us| Duration::from_micros(us))
                .collect(),
            need: Duration::from_micros(20),
        }
    }

    #[test]
    fn the_default_plan_counts_its_cells_and_time() {
        let o = TimersOptions {
            duration: parse_positive_duration(DEFAULT_DURATION).unwrap(),
            intervals: DEFAULT_INTERVALS
                .split(',')
                .map(|s| parse_positive_duration(s).unwrap())
                .collect(),
            need: parse_positive_duration(DEFAULT_NEED).unwrap(),
        };
        o.validate().unwrap();
        let with = Plan::new(
            &o,
            FifoStatus {
                permitted: true,
                reason: None,
            },
        );
        // Per interval: 6 sleeping strategies × (default, 1 ns, fifo) + spin × (other, fifo).
        assert_eq!(with.cells.len(), 3 * 20);
        assert_eq!(with.total(), Duration::from_secs(24));
        assert_eq!(
            with.summary(3),
            "3 intervals × 20 cells × 0.40 s = 24.0 s (SCHED_FIFO rows included)"
        );
        let without = Plan::new(
            &o,
            FifoStatus {
                permitted: false,
                reason: Some("EPERM".into()),
            },
        );
        assert_eq!(without.cells.len(), 3 * 13);
        assert!(without.cells.iter().all(|c| c.sched == Sched::Other));
        assert!(without
            .summary(3)
            .ends_with("(SCHED_FIFO rows skipped: EPERM)"));
        // Slack is left out exactly where it does not apply.
        assert!(with
            .cells
            .iter()
            .all(|c| c.slack.is_none() == (c.sched == Sched::Fifo || !c.strategy.sleeps())));
        assert_eq!(with.cells[0].interval_ns, 1_000_000);
        assert_eq!(with.cells[20].interval_ns, 5_714_000);
    }

    #[test]
    fn bad_options_are_refused_with_the_fix() {
        let e = opts(&[100_000], 400).validate().unwrap_err().to_string();
        assert!(e.contains("fewer than 10 waits"), "{e}");
        assert!(e.contains("give --duration 1s or more"), "{e}");
        assert!(opts(&[], 400).validate().is_err());
        assert!(opts(&[0], 400).validate().is_err());
        let mut o = opts(&[1000], 400);
        o.need = Duration::ZERO;
        assert!(o.validate().is_err());
        assert!(opts(&[1000, 40_000], 400).validate().is_ok());
    }

    #[test]
    fn positive_durations() {
        assert_eq!(
            parse_positive_duration("5714us"),
            Ok(Duration::from_micros(5714))
        );
        assert!(parse_positive_duration("0ms").unwrap_err().contains("zero"));
        assert!(parse_positive_duration("-1ms").is_err());
        assert!(parse_positive_duration("fast").is_err());
        assert!(parse_positive_duration("5")
            .unwrap_err()
            .contains("no unit"));
    }
}
