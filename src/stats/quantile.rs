//! Type-7 percentiles (Hyndman–Fan, as in `analyze::stats`) and medians of f64 values.

use std::cmp::Ordering;

/// Type-7 percentile of values sorted ascending; `None` when empty.
pub fn quantile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let h = p.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = (h.floor() as usize).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let frac = h - lo as f64;
    let (a, b) = (sorted[lo], sorted[hi]);
    // Written so that infinite ends stay infinite instead of becoming NaN (∞ − ∞).
    Some(if frac == 0.0 || a == b {
        a
    } else {
        a + frac * (b - a)
    })
}

/// Type-7 percentile of integer values sorted ascending (nanoseconds); `None` when empty.
pub fn quantile_sorted_i64(sorted: &[i64], p: f64) -> Option<f64> {
    crate::analyze::stats::percentile_sorted(sorted, p)
}

/// The median, reordering `values` in place (selection, not a full sort); `None` when empty.
/// NaN sorts last, so a NaN only shows when most values are NaN.
pub fn median_in_place(values: &mut [f64]) -> Option<f64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let order = |a: &f64, b: &f64| a.total_cmp(b);
    let (_, &mut upper, _) = values.select_nth_unstable_by(n / 2, order);
    if n % 2 == 1 {
        return Some(upper);
    }
    // The lower middle is the largest of the lower half.
    let lower = values[..n / 2]
        .iter()
        .copied()
        .max_by(|a, b| a.total_cmp(b))
        .unwrap_or(upper);
    Some(middle(lower, upper))
}

/// The median of values left untouched.
pub fn median(values: &[f64]) -> Option<f64> {
    median_in_place(&mut values.to_vec())
}

fn middle(lower: f64, upper: f64) -> f64 {
    if lower == upper {
        lower
    } else {
        lower + (upper - lower) / 2.0
    }
}

/// Sorts ascending with NaN last.
pub fn sort_f64(values: &mut [f64]) {
    values.sort_unstable_by(|a, b| a.partial_cmp(b).unwrap_or_else(|| nan_last(a, b)));
}

fn nan_last(a: &f64, b: &f64) -> Ordering {
    a.is_nan().cmp(&b.is_nan())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(
            median(&[1.0, f64::INFINITY, f64::INFINITY]),
            Some(f64::INFINITY)
        );
    }

    #[test]
    fn type7_quantiles_by_hand() {
        let v = [1.0, 2.0, 3.0, 4.0, 10.0];
        // h = 0.9 · 4 = 3.6 → 4 + 0.6 · 6 = 7.6
        assert!((quantile_sorted(&v, 0.9).unwrap() - 7.6).abs() < 1e-12);
        assert_eq!(quantile_sorted(&v, 0.0), Some(1.0));
        assert_eq!(quantile_sorted(&v, 1.0), Some(10.0));
        assert_eq!(quantile_sorted(&[], 0.5), None);
        assert_eq!(
            quantile_sorted(&[1.0, f64::INFINITY], 0.5),
            Some(f64::INFINITY)
        );
    }
}
