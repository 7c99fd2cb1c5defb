//! Order statistics and moments.
//!
//! Percentiles are Hyndman–Fan type 7 (the default of R, NumPy and most spreadsheets):
//! for N sorted values x₀…x₍N−1₎ and a probability p, h = p·(N−1) and
//! Q(p) = x⌊h⌋ + (h − ⌊h⌋)·(x⌊h⌋+1 − x⌊h⌋).

use super::Dist;

/// Integer nanoseconds as analysis keeps them: `i64`, or `u32` where every value of a set
/// is non-negative and fits (half the memory; the statistics are the same numbers).
pub trait Ns: Copy + Ord + Send + Sync + Into<i64> + 'static {}
impl Ns for i64 {}
impl Ns for u32 {}

/// Type-7 percentile of already sorted (ascending) values; `None` when empty.
/// `p` is clamped to [0, 1] so a caller's rounding cannot index out of bounds.
pub fn percentile_sorted(sorted: &[i64], p: f64) -> Option<f64> {
    percentile_of(sorted, p)
}

/// [`percentile_sorted`] of either width.
pub fn percentile_of<T: Ns>(sorted: &[T], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
    let h = p * (n - 1) as f64;
    let lo = h.floor() as usize;
    let lo = lo.min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let frac = h - lo as f64;
    let (a, b) = (sorted[lo].into() as f64, sorted[hi].into() as f64);
    Some(a + frac * (b - a))
}

/// Arithmetic mean; `None` when empty. Sums in i128 so 10M values of hours cannot overflow.
pub fn mean(values: &[i64]) -> Option<f64> {
    mean_of(values)
}

/// [`mean`] of either width.
pub fn mean_of<T: Ns>(values: &[T]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let sum: i128 = values.iter().map(|&v| v.into() as i128).sum();
    Some(sum as f64 / values.len() as f64)
}

/// Sorts u32 nanosecond values ascending: the radix sort of [`sort_ns`] at half the width
/// (its buffer too).
pub fn sort_u32(values: &mut [u32]) {
    const RADIX_THRESHOLD: usize = 4096;
    if values.len() < RADIX_THRESHOLD {
        values.sort_unstable();
        return;
    }
    let (mut and_all, mut or_all) = (u32::MAX, 0u32);
    for &v in values.iter() {
        and_all &= v;
        or_all |= v;
    }
    let varying = and_all ^ or_all;
    let mut buf = vec![0u32; values.len()];
    let mut src_is_values = true;
    for byte in 0..4 {
        let shift = byte * 8;
        if (varying >> shift) & 0xff == 0 {
            continue;
        }
        let (src, dst): (&[u32], &mut [u32]) = if src_is_values {
            (&*values, &mut buf[..])
        } else {
            (&buf[..], &mut *values)
        };
        let mut counts = [0usize; 256];
        for &v in src {
            counts[((v >> shift) & 0xff) as usize] += 1;
        }
        let mut offset = 0;
        for c in counts.iter_mut() {
            let here = *c;
            *c = offset;
            offset += here;
        }
        for &v in src {
            let slot = &mut counts[((v >> shift) & 0xff) as usize];
            dst[*slot] = v;
            *slot += 1;
        }
        src_is_values = !src_is_values;
    }
    if !src_is_values {
        values.copy_from_slice(&buf);
    }
}

/// Sorts nanosecond values ascending. Large inputs of non-negative values (durations,
/// intervals) use an LSD radix sort that skips the bytes all values share, which is
/// several times faster than a comparison sort on millions of spans.
pub fn sort_ns(values: &mut [i64]) {
    const RADIX_THRESHOLD: usize = 4096;
    if values.len() < RADIX_THRESHOLD || values.iter().any(|&v| v < 0) {
        values.sort_unstable();
        return;
    }
    radix_sort_non_negative(values);
}

fn radix_sort_non_negative(values: &mut [i64]) {
    let n = values.len();
    // Which byte positions vary at all: a pass over a constant byte is skipped.
    let (mut and_all, mut or_all) = (u64::MAX, 0u64);
    for &v in values.iter() {
        and_all &= v as u64;
        or_all |= v as u64;
    }
    let varying = and_all ^ or_all;
    let mut buf = vec![0i64; n];
    let mut src_is_values = true;
    for byte in 0..8 {
        let shift = byte * 8;
        if (varying >> shift) & 0xff == 0 {
            continue;
        }
        let (src, dst): (&[i64], &mut [i64]) = if src_is_values {
            (&*values, &mut buf[..])
        } else {
            (&buf[..], &mut *values)
        };
        let mut counts = [0usize; 256];
        for &v in src {
            counts[((v as u64 >> shift) & 0xff) as usize] += 1;
        }
        let mut offset = 0;
        for c in counts.iter_mut() {
            let here = *c;
            *c = offset;
            offset += here;
        }
        for &v in src {
            let slot = &mut counts[((v as u64 >> shift) & 0xff) as usize];
            dst[*slot] = v;
            *slot += 1;
        }
        src_is_values = !src_is_values;
    }
    if !src_is_values {
        values.copy_from_slice(&buf);
    }
}

impl Dist {
    /// Summary of already sorted (ascending) values; `None` when empty.
    pub fn from_sorted(sorted: &[i64]) -> Option<Dist> {
        Dist::of_sorted(sorted)
    }

    /// [`Dist::from_sorted`] of either width.
    pub fn of_sorted<T: Ns>(sorted: &[T]) -> Option<Dist> {
        let n = sorted.len();
        if n == 0 {
            return None;
        }
        let q = |p| percentile_of(sorted, p).unwrap_or(0.0);
        Some(Dist {
            count: n as u64,
            min_ns: sorted[0].into() as f64,
            p50_ns: q(0.50),
            p95_ns: q(0.95),
            p99_ns: q(0.99),
            max_ns: sorted[n - 1].into() as f64,
            mean_ns: mean_of(sorted).unwrap_or(0.0),
        })
    }

    /// Sorts `values` in place (once) and summarises them; `None` when empty.
    pub fn from_unsorted(values: &mut [i64]) -> Option<Dist> {
        sort_ns(values);
        Dist::from_sorted(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn percentile_of_nothing_is_none() {
        assert_eq!(percentile_sorted(&[], 0.5), None);
        assert_eq!(mean(&[]), None);
        assert_eq!(Dist::from_sorted(&[]), None);
    }

    #[test]
    fn percentile_of_one_value_is_that_value() {
        for p in [0.0, 0.01, 0.5, 0.99, 1.0] {
            assert_eq!(percentile_sorted(&[7], p), Some(7.0));
        }
    }

    #[test]
    fn percentile_of_two_values_interpolates_linearly() {
        // h = p·(2−1) = p: Q = 10 + p·(20 − 10).
        let x = [10, 20];
        assert_eq!(percentile_sorted(&x, 0.0), Some(10.0));
        assert_eq!(percentile_sorted(&x, 0.5), Some(15.0));
        assert!(close(percentile_sorted(&x, 0.95).unwrap(), 19.5));
        assert!(close(percentile_sorted(&x, 0.99).unwrap(), 19.9));
        assert_eq!(percentile_sorted(&x, 1.0), Some(20.0));
    }

    #[test]
    fn percentile_type7_on_five_values() {
        // x = 1 2 3 4 10, N−1 = 4.
        let x = [1, 2, 3, 4, 10];
        // p50: h = 2 → x₂ = 3.
        assert_eq!(percentile_sorted(&x, 0.5), Some(3.0));
        // p25: h = 1 → 2.
        assert_eq!(percentile_sorted(&x, 0.25), Some(2.0));
        // p95: h = 3.8 → 4 + 0.8·6 = 8.8.
        assert!(close(percentile_sorted(&x, 0.95).unwrap(), 8.8));
        // p99: h = 3.96 → 4 + 0.96·6 = 9.76.
        assert!(close(percentile_sorted(&x, 0.99).unwrap(), 9.76));
        // p10: h = 0.4 → 1 + 0.4·1 = 1.4.
        assert!(close(percentile_sorted(&x, 0.10).unwrap(), 1.4));
    }

    #[test]
    fn percentile_clamps_p_out_of_range() {
        let x = [1, 2, 3];
        assert_eq!(percentile_sorted(&x, -0.5), Some(1.0));
        assert_eq!(percentile_sorted(&x, 1.5), Some(3.0));
        assert_eq!(percentile_sorted(&x, f64::NAN), Some(1.0));
    }

    #[test]
    fn mean_is_exact_and_does_not_overflow() {
        assert_eq!(mean(&[1, 2, 3, 4]), Some(2.5));
        let big = [i64::MAX, i64::MAX];
        assert!(close(mean(&big).unwrap(), i64::MAX as f64));
    }

    #[test]
    fn dist_from_unsorted_values() {
        let mut v = vec![10, 1, 4, 3, 2];
        let d = Dist::from_unsorted(&mut v).unwrap();
        assert_eq!(v, vec![1, 2, 3, 4, 10]);
        assert_eq!(d.count, 5);
        assert_eq!(d.min_ns, 1.0);
        assert_eq!(d.p50_ns, 3.0);
        assert!(close(d.p95_ns, 8.8));
        assert!(close(d.p99_ns, 9.76));
        assert_eq!(d.max_ns, 10.0);
        assert_eq!(d.mean_ns, 4.0);
    }

    #[test]
    fn radix_sort_matches_comparison_sort() {
        // A deterministic pseudo-random sequence (xorshift), large enough for the radix path,
        // with values spread over several bytes plus duplicates and zeros.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut v: Vec<i64> = (0..20_000)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                match i % 5 {
                    0 => 0,
                    1 => (state % 1000) as i64,
                    _ => (state >> 20) as i64,
                }
            })
            .collect();
        let mut expected = v.clone();
        expected.sort_unstable();
        sort_ns(&mut v);
        assert_eq!(v, expected);
    }

    #[test]
    fn u32_radix_sort_matches_comparison_sort() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut v: Vec<u32> = (0..20_000)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                match i % 4 {
                    0 => 7,
                    1 => (state % 300) as u32,
                    _ => (state >> 32) as u32,
                }
            })
            .collect();
        let mut expected = v.clone();
        expected.sort_unstable();
        sort_u32(&mut v);
        assert_eq!(v, expected);
    }

    #[test]
    fn both_widths_give_the_same_dist() {
        let wide: Vec<i64> = (0..5000).map(|i| (i * 7919) % 100_003).collect();
        let mut narrow: Vec<u32> = wide.iter().map(|&v| v as u32).collect();
        let mut wide = wide;
        sort_ns(&mut wide);
        sort_u32(&mut narrow);
        assert_eq!(Dist::of_sorted(&narrow), Dist::of_sorted(&wide));
    }

    #[test]
    fn sort_handles_negative_values() {
        let mut v: Vec<i64> = (0..5000).map(|i| 2500 - i).collect();
        sort_ns(&mut v);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(v[0], -2499);
    }
}
