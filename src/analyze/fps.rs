//! Output cadence as frames per second, from the intervals between frame ends.
//!
//! fps_p = 1e9 / Q(1 − p) of the interval in ns (= 1e6 / Q in µs): a high interval
//! percentile is a low fps percentile. A percentile p is reported only when there are at
//! least 1/p intervals; below that it would just be the slowest interval renamed.

use super::stats::{mean_ranked, percentile_ranked, Ns, Ranked};
use super::FpsSummary;

/// fps of an interval; `None` for a zero interval (two frames ending at the same instant).
fn fps_of(interval_ns: f64) -> Option<f64> {
    (interval_ns > 0.0).then(|| 1e9 / interval_ns)
}

/// fps at the `1/denominator` low percentile: 1e9 / Q(1 − 1/denominator).
fn fps_percentile<R: Ranked + ?Sized>(sorted: &R, denominator: usize) -> Option<f64> {
    if sorted.count() < denominator {
        return None;
    }
    fps_of(percentile_ranked(sorted, 1.0 - 1.0 / denominator as f64)?)
}

/// `low_avg`: 1e9 / mean of the intervals ≥ Q(1 − 1/denominator).
fn low_avg<R: Ranked + ?Sized>(sorted: &R, denominator: usize) -> Option<f64> {
    if sorted.count() < denominator {
        return None;
    }
    let threshold = percentile_ranked(sorted, 1.0 - 1.0 / denominator as f64)?;
    let (count, sum) = sorted.at_least(threshold);
    fps_of(sum as f64 / count as f64)
}

/// `low_int`: 1e9 / t(k), intervals taken longest first, k the first at which their running
/// sum reaches 1/denominator of the total time.
fn low_int<R: Ranked + ?Sized>(sorted: &R, denominator: usize) -> Option<f64> {
    if sorted.count() < denominator {
        return None;
    }
    fps_of(sorted.reaching_share(denominator)? as f64)
}

/// The fps summary of intervals sorted ascending; `None` without intervals or when their
/// mean is zero.
pub fn fps_summary(sorted_intervals_ns: &[i64]) -> Option<FpsSummary> {
    fps_summary_of(sorted_intervals_ns)
}

/// [`fps_summary`] of either width.
pub fn fps_summary_of<T: Ns>(sorted_intervals_ns: &[T]) -> Option<FpsSummary> {
    fps_summary_ranked(sorted_intervals_ns)
}

/// [`fps_summary`] of any [`Ranked`] intervals.
pub fn fps_summary_ranked<R: Ranked + ?Sized>(sorted_intervals_ns: &R) -> Option<FpsSummary> {
    let s = sorted_intervals_ns;
    let mean = fps_of(mean_ranked(s)?)?;
    Some(FpsSummary {
        mean,
        p50: fps_percentile(s, 2),
        p10: fps_percentile(s, 10),
        p5: fps_percentile(s, 20),
        p1: fps_percentile(s, 100),
        p0_1: fps_percentile(s, 1000),
        low1_avg: low_avg(s, 100),
        low1_int: low_int(s, 100),
        low0_1_avg: low_avg(s, 1000),
        low0_1_int: low_int(s, 1000),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9 * b.abs().max(1.0))
    }

    /// 990 intervals of 10 ms, then 12 14 16 … 30 ms (sorted ascending). Total 10110 ms.
    fn thousand() -> Vec<i64> {
        let mut v = vec![10 * MS; 990];
        v.extend((0..10).map(|k| (12 + 2 * k) * MS));
        v
    }

    #[test]
    fn fps_percentiles_by_hand() {
        let f = fps_summary(&thousand()).unwrap();
        // mean interval 10.11 ms.
        assert!(close(Some(f.mean), 1000.0 / 10.11));
        // Q0.5, Q0.9, Q0.95 all fall inside the 10 ms block.
        assert!(close(f.p50, 100.0));
        assert!(close(f.p10, 100.0));
        assert!(close(f.p5, 100.0));
        // Q0.99: h = 989.01 → 10 + 0.01·(12 − 10) = 10.02 ms.
        assert!(close(f.p1, 1000.0 / 10.02));
        // Q0.999: h = 998.001 → 28 + 0.001·(30 − 28) = 28.002 ms.
        assert!(close(f.p0_1, 1000.0 / 28.002));
    }

    #[test]
    fn one_percent_lows_by_hand() {
        let f = fps_summary(&thousand()).unwrap();
        // Intervals ≥ 10.02 ms: 12 … 30, mean 21 ms.
        assert!(close(f.low1_avg, 1000.0 / 21.0));
        // 1% of 10110 ms = 101.1 ms; 30, 58, 84, 108 → reached at 24 ms.
        assert!(close(f.low1_int, 1000.0 / 24.0));
        // Intervals ≥ 28.002 ms: just 30.
        assert!(close(f.low0_1_avg, 1000.0 / 30.0));
        // 0.1% = 10.11 ms: reached by the first, 30 ms.
        assert!(close(f.low0_1_int, 1000.0 / 30.0));
    }

    #[test]
    fn percentiles_need_one_over_p_intervals() {
        let f = fps_summary(&[10 * MS]).unwrap();
        assert!(close(Some(f.mean), 100.0));
        assert_eq!(f.p50, None);
        let f = fps_summary(&[10 * MS, 30 * MS]).unwrap();
        // Q0.5 of 10, 30 = 20 ms.
        assert!(close(f.p50, 50.0));
        assert_eq!(f.p10, None);
        let v = vec![10 * MS; 99];
        let f = fps_summary(&v).unwrap();
        assert!(f.p5.is_some() && f.p10.is_some());
        assert_eq!((f.p1, f.low1_avg, f.low1_int), (None, None, None));
        let v = vec![10 * MS; 100];
        let f = fps_summary(&v).unwrap();
        assert!(close(f.p1, 100.0) && close(f.low1_avg, 100.0) && close(f.low1_int, 100.0));
        assert_eq!(f.p0_1, None);
    }

    #[test]
    fn zero_intervals_give_no_infinite_fps() {
        assert_eq!(fps_summary(&[]), None);
        assert_eq!(fps_summary(&[0, 0]), None);
        // Half the frames end together: p50 interval is 0 → not reported, not infinite.
        let f = fps_summary(&[0, 0, 0, 10 * MS]).unwrap();
        assert_eq!(f.p50, None);
        assert!(close(Some(f.mean), 400.0));
    }
}
