//! Pacing: how even the output cadence is. Interval jitter (standard deviation, the same
//! around a trailing 500 ms mean, mean distance from the budget) and the |Δ interval|
//! buckets frame-time tools show. Stutter is in `late.rs`. Definitions: docs/metrics.md.

use serde::{Deserialize, Serialize};

use super::stats::Ns;

/// The trailing window of the adaptive standard deviation.
pub const ADAPTIVE_WINDOW_NS: i64 = 500_000_000;

/// Upper bounds of the |Δ interval| buckets, ns: < 2, < 4, < 8, < 12 ms, then ≥ 12 ms.
pub const DELTA_BOUNDS_NS: [i64; 4] = [2_000_000, 4_000_000, 8_000_000, 12_000_000];

/// |Δ interval| values in `[from_ns, to_ns)`; `to_ns` is `None` for the last, open bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeltaBucket {
    pub from_ns: i64,
    pub to_ns: Option<i64>,
    pub count: u64,
    /// count ÷ number of Δ × 100 (0 with no Δ).
    pub pct: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PacingSummary {
    pub intervals: u64,
    /// Population standard deviation of the intervals (÷ N).
    pub interval_sd_ns: f64,
    /// √(mean of (interval − mean of the intervals in the trailing window)²).
    pub adaptive_sd_ns: f64,
    pub adaptive_window_ns: i64,
    /// Mean of |interval − budget|; `None` without a budget.
    pub mean_abs_budget_error_ns: Option<f64>,
    /// Number of |Δ interval| values: intervals − 1.
    pub deltas: u64,
    pub delta_buckets: Vec<DeltaBucket>,
}

/// The pacing summary of the measured intervals in end order; `None` without intervals.
pub fn pacing_summary(intervals_ns: &[i64], budget_ns: Option<i64>) -> Option<PacingSummary> {
    pacing_summary_of(intervals_ns, budget_ns)
}

/// [`pacing_summary`] of either width.
pub fn pacing_summary_of<T: Ns>(
    intervals_ns: &[T],
    budget_ns: Option<i64>,
) -> Option<PacingSummary> {
    if intervals_ns.is_empty() {
        return None;
    }
    let n = intervals_ns.len() as f64;
    let mean = intervals_ns.iter().map(|&x| x.into() as i128).sum::<i128>() as f64 / n;
    let variance = intervals_ns
        .iter()
        .map(|&x| (x.into() as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    let mean_abs_budget_error_ns = budget_ns.filter(|&b| b > 0).map(|b| {
        intervals_ns
            .iter()
            .map(|&x| (x.into() as i128 - b as i128).unsigned_abs() as f64)
            .sum::<f64>()
            / n
    });
    let (deltas, delta_buckets) = delta_buckets(intervals_ns);
    Some(PacingSummary {
        intervals: intervals_ns.len() as u64,
        interval_sd_ns: variance.sqrt(),
        adaptive_sd_ns: adaptive_sd_of(intervals_ns, ADAPTIVE_WINDOW_NS),
        adaptive_window_ns: ADAPTIVE_WINDOW_NS,
        mean_abs_budget_error_ns,
        deltas,
        delta_buckets,
    })
}

/// Interval i ends at the end of its frame. Its trailing window holds the intervals j ≤ i
/// that ended less than `window_ns` before it (i itself included): their mean is the local
/// cadence i is compared with, so a slow change of rate is not counted as jitter.
pub fn adaptive_sd(intervals_ns: &[i64], window_ns: i64) -> f64 {
    adaptive_sd_of(intervals_ns, window_ns)
}

fn adaptive_sd_of<T: Ns>(intervals_ns: &[T], window_ns: i64) -> f64 {
    if intervals_ns.is_empty() {
        return 0.0;
    }
    let (mut first, mut sum, mut since_first_end) = (0usize, 0i128, 0i128);
    let mut squares = 0.0;
    for (i, &x) in intervals_ns.iter().enumerate() {
        let x: i64 = x.into();
        sum += x as i128;
        if i > 0 {
            // Time from the end of interval `first` to the end of interval i.
            since_first_end += x as i128;
        }
        while first < i && since_first_end >= window_ns as i128 {
            sum -= intervals_ns[first].into() as i128;
            first += 1;
            since_first_end -= intervals_ns[first].into() as i128;
        }
        let local_mean = sum as f64 / (i - first + 1) as f64;
        squares += (x as f64 - local_mean).powi(2);
    }
    (squares / intervals_ns.len() as f64).sqrt()
}

/// The bucket of `DELTA_BOUNDS_NS` that holds an interval change of `delta` ns.
pub(crate) fn delta_bucket(delta: u128) -> usize {
    DELTA_BOUNDS_NS
        .iter()
        .position(|&bound| delta < bound as u128)
        .unwrap_or(DELTA_BOUNDS_NS.len())
}

/// Counts |interval_i − interval_(i−1)| into the buckets of `DELTA_BOUNDS_NS`.
fn delta_buckets<T: Ns>(intervals_ns: &[T]) -> (u64, Vec<DeltaBucket>) {
    let mut counts = [0u64; DELTA_BOUNDS_NS.len() + 1];
    for pair in intervals_ns.windows(2) {
        let delta = (pair[1].into() as i128 - pair[0].into() as i128).unsigned_abs();
        counts[delta_bucket(delta)] += 1;
    }
    buckets_of(&counts)
}

/// The buckets of `counts` (one a bound of `DELTA_BOUNDS_NS`, then the rest), each with its
/// share, and their total.
pub(crate) fn buckets_of(counts: &[u64]) -> (u64, Vec<DeltaBucket>) {
    let total: u64 = counts.iter().sum();
    let buckets = counts
        .iter()
        .enumerate()
        .map(|(k, &count)| DeltaBucket {
            from_ns: if k == 0 { 0 } else { DELTA_BOUNDS_NS[k - 1] },
            to_ns: DELTA_BOUNDS_NS.get(k).copied(),
            count,
            pct: if total == 0 {
                0.0
            } else {
                count as f64 * 100.0 / total as f64
            },
        })
        .collect();
    (total, buckets)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn jitter_by_hand() {
        // 8 12 8 12 ms, budget 10 ms: mean 10, every deviation 2 → SD 2 ms, mean |x − b| 2 ms.
        let p = pacing_summary(&[8 * MS, 12 * MS, 8 * MS, 12 * MS], Some(10 * MS)).unwrap();
        assert_eq!(p.intervals, 4);
        assert!(close(p.interval_sd_ns, 2e6));
        assert!(close(p.mean_abs_budget_error_ns.unwrap(), 2e6));
        // All four end within 40 ms, so each local mean is that of the intervals so far:
        // 8 − 8 = 0; 12 − 10 = 2; 8 − 28/3 = −4/3; 12 − 10 = 2.
        // √((0 + 4 + 16/9 + 4) / 4) ms = √(88/36) ms.
        assert!(close(p.adaptive_sd_ns, (88.0f64 / 36.0).sqrt() * 1e6));
        // Every |Δ| is 4 ms: the 4–8 ms bucket.
        assert_eq!(p.deltas, 3);
        let counts: Vec<u64> = p.delta_buckets.iter().map(|b| b.count).collect();
        assert_eq!(counts, [0, 0, 3, 0, 0]);
        assert_eq!(p.delta_buckets[2].pct, 100.0);
    }

    #[test]
    fn adaptive_sd_discounts_a_change_of_rate() {
        // 200 200 200 400 400 ms. Interval 3 ends 800 ms after interval 0 and 600 ms after
        // interval 1: its window is {2, 3}, mean 300 → deviation 100. Interval 4's is {3, 4},
        // mean 400 → 0. The others: windows of 200s → 0. √(100² / 5) = √2000 ms.
        let v = [200 * MS, 200 * MS, 200 * MS, 400 * MS, 400 * MS];
        assert!(close(
            adaptive_sd(&v, ADAPTIVE_WINDOW_NS),
            2000f64.sqrt() * 1e6
        ));
        // The plain SD sees the whole change: mean 280, (3·80² + 2·120²)/5 = 9600 → 97.98 ms.
        let p = pacing_summary(&v, None).unwrap();
        assert!(close(p.interval_sd_ns, 9600f64.sqrt() * 1e6));
        assert_eq!(p.mean_abs_budget_error_ns, None);
    }

    #[test]
    fn the_window_boundary_excludes_an_interval_exactly_500_ms_back() {
        // 100 then 500 ms: interval 1 ends exactly 500 ms after interval 0 → not in its
        // window: its local mean is itself. Deviations 0, 0.
        assert_eq!(adaptive_sd(&[100 * MS, 500 * MS], ADAPTIVE_WINDOW_NS), 0.0);
        // 1 ns less: inside. Local mean (600 ms − 1 ns) / 2, deviation 200 ms − 0.5 ns;
        // interval 0 deviates 0 → SD = (200 ms − 0.5 ns) / √2.
        let sd = adaptive_sd(&[100 * MS, 500 * MS - 1], ADAPTIVE_WINDOW_NS);
        assert!(close(sd, (200e6 - 0.5) / 2f64.sqrt()));
    }

    #[test]
    fn delta_buckets_by_hand_with_their_boundaries() {
        // 10 11 13 16.9 8.9 20.9 20.9 ms → |Δ| 1 2 3.9 8 12 0 ms.
        // < 2: {1, 0}; 2–4: {2, 3.9}; 4–8: none; 8–12: {8}; ≥ 12: {12}.
        let v: Vec<i64> = [10.0, 11.0, 13.0, 16.9, 8.9, 20.9, 20.9]
            .iter()
            .map(|ms| (ms * 1e6f64).round() as i64)
            .collect();
        let p = pacing_summary(&v, Some(10 * MS)).unwrap();
        assert_eq!(p.deltas, 6);
        let counts: Vec<u64> = p.delta_buckets.iter().map(|b| b.count).collect();
        assert_eq!(counts, [2, 2, 0, 1, 1]);
        assert!(close(p.delta_buckets[0].pct, 100.0 / 3.0));
        assert!(close(p.delta_buckets[4].pct, 100.0 / 6.0));
        let bounds: Vec<(i64, Option<i64>)> = p
            .delta_buckets
            .iter()
            .map(|b| (b.from_ns, b.to_ns))
            .collect();
        assert_eq!(
            bounds,
            [
                (0, Some(2 * MS)),
                (2 * MS, Some(4 * MS)),
                (4 * MS, Some(8 * MS)),
                (8 * MS, Some(12 * MS)),
                (12 * MS, None)
            ]
        );
    }

    #[test]
    fn the_reference_run_by_hand() {
        // Intervals 10 10 10 19.5 5 5.5 10 ms, budget 10 ms (fixtures.rs). Mean 10:
        // SD √((9.5² + 5² + 4.5²) / 7) = √(135.5 / 7); mean |x − 10| = 19 / 7.
        // All within 500 ms: local means 10 10 10 12.375 10.9 10 10, deviations 0 0 0 7.125
        // −5.9 −4.5 0 → √(105.825625 / 7). |Δ| 0 0 9.5 14.5 0.5 4.5.
        let a = crate::analyze::analyze(&crate::analyze::fixtures::reference_run());
        let p = a.pacing.unwrap();
        assert_eq!(p.intervals, 7);
        assert!(close(p.interval_sd_ns, (135.5f64 / 7.0).sqrt() * 1e6));
        assert!(close(p.mean_abs_budget_error_ns.unwrap(), 19e6 / 7.0));
        assert!(close(p.adaptive_sd_ns, (105.825625f64 / 7.0).sqrt() * 1e6));
        let counts: Vec<u64> = p.delta_buckets.iter().map(|b| b.count).collect();
        assert_eq!(counts, [3, 0, 1, 1, 1]);
        assert_eq!(p.delta_buckets[0].pct, 50.0);
    }

    #[test]
    fn nothing_one_interval_and_extremes_give_finite_numbers() {
        assert_eq!(pacing_summary(&[], Some(10)), None);
        let p = pacing_summary(&[5 * MS], Some(10 * MS)).unwrap();
        assert_eq!(
            (p.interval_sd_ns, p.adaptive_sd_ns, p.deltas),
            (0.0, 0.0, 0)
        );
        assert!(p.delta_buckets.iter().all(|b| b.count == 0 && b.pct == 0.0));
        assert_eq!(p.mean_abs_budget_error_ns, Some(5e6));
        let p = pacing_summary(&[i64::MAX, 0, i64::MAX], Some(i64::MAX)).unwrap();
        assert!(p.interval_sd_ns.is_finite() && p.adaptive_sd_ns.is_finite());
        assert_eq!(p.delta_buckets[4].count, 2);
    }
}
