//! The measured frames' lateness, stutter and pacing taken one frame at a time, in end
//! order, as a read of the spans gives them: the numbers of `late::late_frames_of`,
//! `late::missed_slots_of`, `late::stutter_of` and `pacing::pacing_summary_of` over the
//! whole sequence (the same arithmetic in the same order), holding only the trailing
//! windows those look back over, never the sequence (issue 29).
//!
//! Stutter and pacing compare each interval with the mean of all of them: they are taken
//! in a read after the one that counted the intervals ([`Cadence::new`] needs their count
//! and sum).

use std::collections::VecDeque;

use crate::analyze::late::{missed_slots, stutter_window};
use crate::analyze::pacing::{
    buckets_of, delta_bucket, PacingSummary, ADAPTIVE_WINDOW_NS, DELTA_BOUNDS_NS,
};
use crate::analyze::{LateSummary, StutterSummary};

/// Frames over budget (totals in end order) and the slots the intervals missed.
#[derive(Debug)]
pub struct Lateness {
    budget_ns: i64,
    frames: u64,
    late: u64,
    streak: u64,
    longest: u64,
    missed_slots: u64,
}

impl Lateness {
    pub fn new(budget_ns: i64) -> Lateness {
        Lateness {
            budget_ns,
            frames: 0,
            late: 0,
            streak: 0,
            longest: 0,
            missed_slots: 0,
        }
    }

    pub fn budget_ns(&self) -> i64 {
        self.budget_ns
    }

    pub fn total(&mut self, total_ns: i64) {
        self.frames += 1;
        if total_ns > self.budget_ns {
            self.late += 1;
            self.streak += 1;
            self.longest = self.longest.max(self.streak);
        } else {
            self.streak = 0;
        }
    }

    pub fn interval(&mut self, interval_ns: i64) {
        self.missed_slots += missed_slots(interval_ns, self.budget_ns);
    }

    pub fn finish(self) -> LateSummary {
        LateSummary {
            budget_ns: self.budget_ns,
            late_frames: self.late,
            late_pct: match self.frames {
                0 => 0.0,
                n => self.late as f64 * 100.0 / n as f64,
            },
            missed_slots: self.missed_slots,
            longest_streak: self.longest,
        }
    }
}

/// `v as f64`, through i64 where it fits: the same value (both round the exact integer
/// to the nearest f64), without the i128 conversion's library call (3% of the report of
/// a 10M-span run, issue 29).
#[inline]
fn f64_of(v: i128) -> f64 {
    match i64::try_from(v) {
        Ok(v) => v as f64,
        Err(_) => wide_f64_of(v),
    }
}

/// Out of line: the compiler folds the two conversions of `f64_of` back into the i128
/// one when it sees both.
#[cold]
#[inline(never)]
fn wide_f64_of(v: i128) -> f64 {
    v as f64
}

/// Stutter and pacing over intervals whose count and sum are known.
#[derive(Debug)]
pub struct Cadence {
    count: usize,
    total: i128,
    budget_ns: Option<i64>,
    mean: f64,
    seen: usize,
    // Stutter: the trailing window of intervals and its sum.
    stutter_window: usize,
    trailing: VecDeque<i64>,
    trailing_sum: i128,
    stutters: u64,
    stutter_time: i128,
    // Pacing.
    squares: f64,
    abs_budget_error: f64,
    previous: Option<i64>,
    deltas: [u64; DELTA_BOUNDS_NS.len() + 1],
    // The adaptive window: intervals from the first one in it to the latest.
    adaptive: VecDeque<i64>,
    adaptive_sum: i128,
    since_first_end: i128,
    adaptive_squares: f64,
}

impl Cadence {
    /// For `count` intervals summing to `total` ns.
    pub fn new(count: usize, total: i128, budget_ns: Option<i64>) -> Cadence {
        let mean_interval = match count {
            0 => 0.0,
            n => total as f64 / n as f64,
        };
        Cadence {
            count,
            total,
            budget_ns: budget_ns.filter(|&b| b > 0),
            // As `pacing_summary_of` has it: the exact sum over the count.
            mean: mean_interval,
            seen: 0,
            stutter_window: stutter_window(mean_interval),
            trailing: VecDeque::new(),
            trailing_sum: 0,
            stutters: 0,
            stutter_time: 0,
            squares: 0.0,
            abs_budget_error: 0.0,
            previous: None,
            deltas: [0; DELTA_BOUNDS_NS.len() + 1],
            adaptive: VecDeque::new(),
            adaptive_sum: 0,
            since_first_end: 0,
            adaptive_squares: 0.0,
        }
    }

    /// The next interval; whether it is a stutter (the HTML page marks each).
    pub fn interval(&mut self, x: i64) -> bool {
        let i = self.seen;
        self.seen += 1;

        // late::for_each_stutter_at.
        let previous = i.min(self.stutter_window);
        let stutter = previous > 0 && 2 * x as i128 * previous as i128 > 5 * self.trailing_sum;
        if stutter {
            self.stutters += 1;
            self.stutter_time += x as i128;
        }
        self.trailing_sum += x as i128;
        self.trailing.push_back(x);
        if self.trailing.len() > self.stutter_window {
            let gone = self.trailing.pop_front().unwrap_or(0);
            self.trailing_sum -= gone as i128;
        }

        // pacing::pacing_summary_of.
        self.squares += (x as f64 - self.mean).powi(2);
        if let Some(b) = self.budget_ns {
            self.abs_budget_error += (x as i128 - b as i128).unsigned_abs() as f64;
        }
        if let Some(p) = self.previous {
            let delta = (x as i128 - p as i128).unsigned_abs();
            self.deltas[delta_bucket(delta)] += 1;
        }
        self.previous = Some(x);

        // pacing::adaptive_sd_of.
        self.adaptive_sum += x as i128;
        if i > 0 {
            self.since_first_end += x as i128;
        }
        self.adaptive.push_back(x);
        while self.adaptive.len() > 1 && self.since_first_end >= ADAPTIVE_WINDOW_NS as i128 {
            let gone = self.adaptive.pop_front().unwrap_or(0);
            self.adaptive_sum -= gone as i128;
            let first = self.adaptive.front().copied().unwrap_or(0);
            self.since_first_end -= first as i128;
        }
        let local_mean = f64_of(self.adaptive_sum) / self.adaptive.len() as f64;
        self.adaptive_squares += (x as f64 - local_mean).powi(2);
        stutter
    }

    /// Stutter and pacing; `None` without intervals. An error when fewer or more came than
    /// were counted (the run changed between reads).
    pub fn finish(self) -> anyhow::Result<(Option<StutterSummary>, Option<PacingSummary>)> {
        if self.seen != self.count {
            anyhow::bail!(
                "the run changed while it was read ({} intervals in one read, {} in another): \
                 analyse it again once nothing writes it",
                self.seen,
                self.count
            );
        }
        if self.count == 0 {
            return Ok((None, None));
        }
        let n = self.count as f64;
        let stutter = StutterSummary {
            count: self.stutters,
            count_pct: self.stutters as f64 * 100.0 / n,
            time_pct: if self.total > 0 {
                self.stutter_time as f64 * 100.0 / self.total as f64
            } else {
                0.0
            },
        };
        let (deltas, delta_buckets) = buckets_of(&self.deltas);
        let pacing = PacingSummary {
            intervals: self.count as u64,
            interval_sd_ns: (self.squares / n).sqrt(),
            adaptive_sd_ns: (self.adaptive_squares / n).sqrt(),
            adaptive_window_ns: ADAPTIVE_WINDOW_NS,
            mean_abs_budget_error_ns: self.budget_ns.map(|_| self.abs_budget_error / n),
            deltas,
            delta_buckets,
        };
        Ok((Some(stutter), Some(pacing)))
    }
}

#[cfg(test)]
mod f64_tests {
    use super::f64_of;

    #[test]
    fn an_i128_converts_as_the_i64_it_fits_in() {
        let edges = [
            0i128,
            1,
            -1,
            (1 << 53) + 1,
            (1 << 62) + 3,
            i64::MAX as i128,
            i64::MIN as i128,
        ];
        for v in edges
            .into_iter()
            .chain([i64::MAX as i128 + 1, i128::MAX / 3, -(1i128 << 90) - 7])
        {
            assert_eq!(f64_of(v).to_bits(), (v as f64).to_bits(), "{v}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::late::{late_frames_of, missed_slots_of, stutter_of};
    use crate::analyze::pacing::pacing_summary_of;

    fn streamed(intervals: &[i64], budget: Option<i64>) -> String {
        let total: i128 = intervals.iter().map(|&x| x as i128).sum();
        let mut c = Cadence::new(intervals.len(), total, budget);
        for &x in intervals {
            c.interval(x);
        }
        format!("{:?}", c.finish().unwrap())
    }

    fn whole(intervals: &[i64], budget: Option<i64>) -> String {
        format!(
            "{:?}",
            (stutter_of(intervals), pacing_summary_of(intervals, budget))
        )
    }

    #[test]
    fn one_interval_at_a_time_gives_the_whole_sequences_numbers() {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |below: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % below) as i64
        };
        let steady: Vec<i64> = (0..5000).map(|_| 8_333_000 + next(2000)).collect();
        let spiky: Vec<i64> = (0..5000)
            .map(|i| match i % 97 {
                0 => 60_000_000 + next(1000),
                _ => 4_000_000 + next(300_000),
            })
            .collect();
        // Fast frames: the adaptive window holds many of them at once.
        let fast: Vec<i64> = (0..20_000).map(|_| 5_000 + next(3000)).collect();
        let slow: Vec<i64> = (0..50).map(|_| 900_000_000 + next(500_000_000)).collect();
        let sets = [
            ("steady", steady),
            ("spiky", spiky),
            ("fast", fast),
            ("slow", slow),
            ("zeros", vec![0; 100]),
            ("one", vec![7]),
            ("none", vec![]),
        ];
        for (label, v) in sets {
            for budget in [None, Some(8_333_333), Some(0)] {
                assert_eq!(
                    streamed(&v, budget),
                    whole(&v, budget),
                    "{label} {budget:?}"
                );
            }
            let mut late = Lateness::new(8_333_333);
            for &x in &v {
                late.total(x);
                late.interval(x);
            }
            let expected = LateSummary {
                missed_slots: missed_slots_of(&v, 8_333_333),
                ..late_frames_of(&v, 8_333_333)
            };
            assert_eq!(late.finish(), expected, "{label}");
        }
    }

    #[test]
    fn a_read_with_other_intervals_is_an_error() {
        let c = Cadence::new(3, 30, None);
        assert!(c.finish().is_err());
    }
}
