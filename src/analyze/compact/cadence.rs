//! The measured frames' lateness, stutter and pacing taken one frame at a time, in end
//! order, as a read of the spans gives them: the numbers of `late::late_frames_of`,
//! `late::missed_slots_of`, `late::stutter_of` and `pacing::pacing_summary_of` over the
//! whole sequence (the same arithmetic in the same order), holding only the trailing
//! windows those look back over, never the sequence (issue 29).
//!
//! Stutter and pacing compare each interval with the mean of all of them: they are taken
//! in a read after the one that counted the intervals ([`Cadence::new`] needs their count
//! and sum).
//!
//! The trailing windows are rings written in place, not `VecDeque`s, and |interval −
//! budget| converts through u64 where it fits, not u128: about 0.8× the time of an
//! interval without a budget, 0.7× with one. The adaptive window ([`Adaptive`]) is taken
//! apart from the rest, on a thread of its own in a long read (issue 29, soak row;
//! BENCHMARKS.md).

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

/// |x − y| as f64: through u64 where the difference fits an i64, the same value (both
/// round the exact integer to the nearest f64) without the u128 conversion's library call
/// (a fifth of an interval's time with a budget).
#[inline]
fn abs_difference(x: i64, y: i64) -> f64 {
    match x.checked_sub(y) {
        Some(d) => d.unsigned_abs() as f64,
        None => (x as i128 - y as i128).unsigned_abs() as f64,
    }
}

/// The latest intervals, at most as many as the stutter's trailing window, and their
/// sum: a ring of the window's length, each interval written over the oldest.
#[derive(Debug)]
struct Trailing {
    ring: Box<[i64]>,
    /// Where the next interval goes: the oldest once the ring is full.
    at: usize,
    /// How many the ring holds: the window's length once full.
    held: usize,
    sum: i128,
}

impl Trailing {
    fn new(len: usize) -> Trailing {
        Trailing {
            ring: vec![0; len.max(1)].into_boxed_slice(),
            at: 0,
            held: 0,
            sum: 0,
        }
    }

    #[inline]
    fn push(&mut self, x: i64) {
        if self.held == self.ring.len() {
            self.sum -= self.ring[self.at] as i128;
        } else {
            self.held += 1;
        }
        self.ring[self.at] = x;
        self.sum += x as i128;
        self.at += 1;
        if self.at == self.ring.len() {
            self.at = 0;
        }
    }
}

/// A queue of intervals (the adaptive window: as long as its intervals take, no length
/// set) in a ring whose length is a power of two, doubled when full.
#[derive(Debug, Default)]
struct Queue {
    ring: Vec<i64>,
    first: usize,
    len: usize,
}

impl Queue {
    #[inline]
    fn push_back(&mut self, x: i64) {
        if self.len == self.ring.len() {
            self.grow();
        }
        let mask = self.ring.len() - 1;
        self.ring[(self.first + self.len) & mask] = x;
        self.len += 1;
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let mut ring = vec![0; (2 * self.ring.len()).max(16)];
        for (k, slot) in ring.iter_mut().take(self.len).enumerate() {
            *slot = self.ring[(self.first + k) & (self.ring.len() - 1)];
        }
        self.ring = ring;
        self.first = 0;
    }

    /// The oldest; 0 when empty.
    #[inline]
    fn front(&self) -> i64 {
        match self.len {
            0 => 0,
            _ => self.ring[self.first],
        }
    }

    /// Takes the oldest off; 0 when empty.
    #[inline]
    fn pop_front(&mut self) -> i64 {
        let x = self.front();
        if self.len > 0 {
            self.first = (self.first + 1) & (self.ring.len() - 1);
            self.len -= 1;
        }
        x
    }

    fn len(&self) -> usize {
        self.len
    }
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
    trailing: Trailing,
    stutters: u64,
    stutter_time: i128,
    // Pacing.
    squares: f64,
    abs_budget_error: f64,
    previous: Option<i64>,
    deltas: [u64; DELTA_BOUNDS_NS.len() + 1],
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
            trailing: Trailing::new(stutter_window(mean_interval)),
            stutters: 0,
            stutter_time: 0,
            squares: 0.0,
            abs_budget_error: 0.0,
            previous: None,
            deltas: [0; DELTA_BOUNDS_NS.len() + 1],
        }
    }

    /// The next interval; whether it is a stutter (the HTML page marks each). Its
    /// adaptive window's part is [`Adaptive`]'s, taken beside. Inlined into the loop over a
    /// batch's frames, its state stays in registers there.
    #[inline]
    pub fn interval(&mut self, x: i64) -> bool {
        self.seen += 1;

        // late::for_each_stutter_at: the mean of up to `stutter_window` intervals before.
        let previous = self.trailing.held;
        let stutter = previous > 0 && 2 * x as i128 * previous as i128 > 5 * self.trailing.sum;
        if stutter {
            self.stutters += 1;
            self.stutter_time += x as i128;
        }
        self.trailing.push(x);

        // pacing::pacing_summary_of.
        self.squares += (x as f64 - self.mean).powi(2);
        if let Some(b) = self.budget_ns {
            self.abs_budget_error += abs_difference(x, b);
        }
        if let Some(p) = self.previous {
            let delta = (x as i128 - p as i128).unsigned_abs();
            self.deltas[delta_bucket(delta)] += 1;
        }
        self.previous = Some(x);
        stutter
    }

    /// Stutter and pacing, with the adaptive window's part that `adaptive` took of the same
    /// intervals; `None` without intervals. An error when fewer or more came than were
    /// counted (the run changed between reads).
    pub fn finish(
        self,
        adaptive: &Adaptive,
    ) -> anyhow::Result<(Option<StutterSummary>, Option<PacingSummary>)> {
        if let Some(seen) = [self.seen, adaptive.seen]
            .into_iter()
            .find(|&n| n != self.count)
        {
            anyhow::bail!(
                "the run changed while it was read ({seen} intervals in one read, {} in \
                 another): analyse it again once nothing writes it",
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
            adaptive_sd_ns: (adaptive.squares / n).sqrt(),
            adaptive_window_ns: ADAPTIVE_WINDOW_NS,
            mean_abs_budget_error_ns: self.budget_ns.map(|_| self.abs_budget_error / n),
            deltas,
            delta_buckets,
        };
        Ok((Some(stutter), Some(pacing)))
    }
}

/// `pacing::adaptive_sd_of` one interval at a time: each interval against the mean of the
/// intervals of the trailing [`ADAPTIVE_WINDOW_NS`]. Apart from [`Cadence`] so that a
/// thread of its own may take it: its division and its window were half of an interval's
/// time, and the stutter and pacing taker bounded the report's read after the first at 84M
/// spans (issue 29, soak row).
#[derive(Debug, Default)]
pub struct Adaptive {
    seen: usize,
    /// The intervals from the first one in the window to the latest.
    window: Queue,
    sum: i128,
    since_first_end: i128,
    squares: f64,
}

impl Adaptive {
    #[inline]
    pub fn interval(&mut self, x: i64) {
        let i = self.seen;
        self.seen += 1;
        self.sum += x as i128;
        if i > 0 {
            self.since_first_end += x as i128;
        }
        self.window.push_back(x);
        while self.window.len() > 1 && self.since_first_end >= ADAPTIVE_WINDOW_NS as i128 {
            let gone = self.window.pop_front();
            self.sum -= gone as i128;
            let first = self.window.front();
            self.since_first_end -= first as i128;
        }
        let local_mean = f64_of(self.sum) / self.window.len() as f64;
        self.squares += (x as f64 - local_mean).powi(2);
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
mod ring_tests {
    use std::collections::VecDeque;

    use super::{abs_difference, Queue, Trailing};
    use crate::analyze::fixtures::below;

    /// The ring holds what a `VecDeque` cut to the window's length holds, with the same
    /// sum, as the window fills, at its edge and after it wraps.
    #[test]
    fn the_trailing_ring_holds_the_last_intervals_of_its_window() {
        let mut next = below(0x9e37_79b9_7f4a_7c15);
        for len in [1, 2, 3, 7, 29, 64] {
            let (mut ring, mut model) = (Trailing::new(len), VecDeque::new());
            for k in 0..5 * len + 3 {
                let x = match k % 5 {
                    0 => i64::MAX - next(1000) as i64,
                    1 => i64::MIN + next(1000) as i64,
                    _ => next(2_000_000) as i64 - 1_000_000,
                };
                ring.push(x);
                model.push_back(x);
                if model.len() > len {
                    model.pop_front();
                }
                assert_eq!(ring.held, model.len(), "len {len}, {k}");
                let sum: i128 = model.iter().map(|&v| v as i128).sum();
                assert_eq!(ring.sum, sum, "len {len}, {k}");
                let mut held: Vec<i64> = ring.ring[..ring.held].to_vec();
                let mut expected: Vec<i64> = model.iter().copied().collect();
                held.sort_unstable();
                expected.sort_unstable();
                assert_eq!(held, expected, "len {len}, {k}");
            }
        }
    }

    /// Pushes and pops in any mix (growing it past each power of two, emptying it) give
    /// what a `VecDeque` gives.
    #[test]
    fn the_queue_gives_what_a_vecdeque_gives() {
        let mut next = below(0x2545_f491_4f6c_dd1d);
        let (mut queue, mut model) = (Queue::default(), VecDeque::new());
        assert_eq!((queue.front(), queue.pop_front()), (0, 0), "empty");
        for k in 0..20_000 {
            // Pushes outnumber pops for a while (it grows), then pops do (it empties).
            let push = next(100) < if k < 12_000 { 70 } else { 25 };
            if push {
                let x = next(1 << 40) as i64 - (1 << 39);
                queue.push_back(x);
                model.push_back(x);
            } else {
                assert_eq!(queue.pop_front(), model.pop_front().unwrap_or(0), "{k}");
            }
            assert_eq!(queue.len(), model.len(), "{k}");
            assert_eq!(queue.front(), model.front().copied().unwrap_or(0), "{k}");
        }
        while let Some(x) = model.pop_front() {
            assert_eq!(queue.pop_front(), x);
        }
        assert_eq!(queue.len(), 0);
    }

    #[test]
    fn an_absolute_difference_is_the_wide_ones_value() {
        let edges = [
            0,
            1,
            -1,
            1 << 53,
            (1 << 53) + 1,
            i64::MAX,
            i64::MIN,
            i64::MAX - 1,
        ];
        for x in edges {
            for y in edges {
                let wide = (x as i128 - y as i128).unsigned_abs() as f64;
                assert_eq!(abs_difference(x, y).to_bits(), wide.to_bits(), "{x} {y}");
            }
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
        let mut adaptive = Adaptive::default();
        for &x in intervals {
            c.interval(x);
            adaptive.interval(x);
        }
        format!("{:?}", c.finish(&adaptive).unwrap())
    }

    fn whole(intervals: &[i64], budget: Option<i64>) -> String {
        format!(
            "{:?}",
            (stutter_of(intervals), pacing_summary_of(intervals, budget))
        )
    }

    #[test]
    fn one_interval_at_a_time_gives_the_whole_sequences_numbers() {
        let mut random = crate::analyze::fixtures::below(0x2545_f491_4f6c_dd1d);
        let mut next = move |bound: u64| random(bound) as i64;
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
        assert!(c.finish(&Adaptive::default()).is_err());
        // The adaptive window's part took fewer than the rest.
        let mut c = Cadence::new(2, 30, None);
        let mut adaptive = Adaptive::default();
        for x in [10, 20] {
            c.interval(x);
        }
        adaptive.interval(10);
        assert!(c.finish(&adaptive).is_err());
    }
}
