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

/// Values in ascending order as the statistics read them: by rank, and sums over ranks.
/// A sorted slice is one; `compact::select` answers the same questions exactly from
/// re-reads of a run without holding every value (issue 29). The statistics below are
/// written once over this, so both give the same numbers.
pub trait Ranked {
    fn count(&self) -> usize;
    /// The value at `rank` (0-based, below [`Ranked::count`]).
    fn at(&self, rank: usize) -> i64;
    /// The sum of every value.
    fn total(&self) -> i128;
    /// How many values `v` have `v as f64 >= threshold`, and their sum.
    fn at_least(&self, threshold: f64) -> (usize, i128);
    /// Taking the values largest first, the first at which their running sum times
    /// `denominator` reaches the total; `None` when none does (no values).
    fn reaching_share(&self, denominator: usize) -> Option<i64>;
}

impl<T: Ns> Ranked for [T] {
    fn count(&self) -> usize {
        self.len()
    }

    fn at(&self, rank: usize) -> i64 {
        self[rank].into()
    }

    fn total(&self) -> i128 {
        self.iter().map(|&v| v.into() as i128).sum()
    }

    fn at_least(&self, threshold: f64) -> (usize, i128) {
        // Sorted ascending, so the values at or above the threshold are a suffix.
        let from = self.partition_point(|&v| (v.into() as f64) < threshold);
        let tail = &self[from..];
        (tail.len(), tail.total())
    }

    fn reaching_share(&self, denominator: usize) -> Option<i64> {
        let total = self.total();
        let mut running: i128 = 0;
        for &v in self.iter().rev() {
            let v: i64 = v.into();
            running += v as i128;
            // running ≥ total / denominator, in integers.
            if running * denominator as i128 >= total {
                return Some(v);
            }
        }
        None
    }
}

/// A value's share of the digest of a set of values: the digest is the wrapping sum of
/// these (splitmix64's finaliser), the same whatever order the values are taken in, so a
/// set read in any order (`compact::select`) gets the digest of its sorted values.
pub fn value_digest(v: i64) -> u64 {
    let mut z = (v as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Type-7 percentile of already sorted (ascending) values; `None` when empty.
/// `p` is clamped to [0, 1] so a caller's rounding cannot index out of bounds.
pub fn percentile_sorted(sorted: &[i64], p: f64) -> Option<f64> {
    percentile_of(sorted, p)
}

/// [`percentile_sorted`] of either width.
pub fn percentile_of<T: Ns>(sorted: &[T], p: f64) -> Option<f64> {
    percentile_ranked(sorted, p)
}

/// [`percentile_sorted`] of any [`Ranked`] values.
pub fn percentile_ranked<R: Ranked + ?Sized>(sorted: &R, p: f64) -> Option<f64> {
    let n = sorted.count();
    if n == 0 {
        return None;
    }
    let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
    let h = p * (n - 1) as f64;
    let lo = h.floor() as usize;
    let lo = lo.min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let frac = h - lo as f64;
    let (a, b) = (sorted.at(lo) as f64, sorted.at(hi) as f64);
    Some(a + frac * (b - a))
}

/// [`mean_of`] of any [`Ranked`] values.
pub fn mean_ranked<R: Ranked + ?Sized>(values: &R) -> Option<f64> {
    if values.count() == 0 {
        return None;
    }
    Some(values.total() as f64 / values.count() as f64)
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

/// Sorts u32 nanosecond values ascending, in place: the radix sort of [`sort_ns`] at half
/// the width.
pub fn sort_u32(values: &mut [u32]) {
    if values.len() < RADIX_THRESHOLD {
        values.sort_unstable();
        return;
    }
    radix_sort_in_place(values);
}

/// Sorts nanosecond values ascending. Large inputs of non-negative values (durations,
/// intervals) use a radix sort that skips the bytes all values share, several times faster
/// than a comparison sort on millions of spans, and in place: no buffer the size of the
/// values (issue 29: a sort took twice the memory of its values).
pub fn sort_ns(values: &mut [i64]) {
    if values.len() < RADIX_THRESHOLD || values.iter().any(|&v| v < 0) {
        values.sort_unstable();
        return;
    }
    radix_sort_in_place(values);
}

/// Below this many values a comparison sort is as fast.
const RADIX_THRESHOLD: usize = 4096;

/// A non-negative value's bits, most significant byte first for the radix sort.
trait RadixKey: Copy + Ord {
    fn bits(self) -> u64;
}

impl RadixKey for u32 {
    fn bits(self) -> u64 {
        u64::from(self)
    }
}

impl RadixKey for i64 {
    /// Only called on non-negative values.
    fn bits(self) -> u64 {
        self as u64
    }
}

/// An MSD radix sort that moves values into their buckets by swapping (American flag
/// sort), byte after byte from the most significant one that varies.
fn radix_sort_in_place<T: RadixKey>(values: &mut [T]) {
    let (mut and_all, mut or_all) = (u64::MAX, 0u64);
    for &v in values.iter() {
        and_all &= v.bits();
        or_all |= v.bits();
    }
    let varying = and_all ^ or_all;
    if varying == 0 {
        return;
    }
    let top = (63 - varying.leading_zeros()) / 8 * 8;
    sort_by_byte(values, top, varying);
}

/// Buckets smaller than this are sorted by comparison.
const BUCKET_SORTED_BY_COMPARISON: usize = 64;

/// Sorts `values`, whose bytes above `shift` are all equal, by the byte at `shift` and
/// then, bucket by bucket, by the bytes below it that vary somewhere (`varying`).
fn sort_by_byte<T: RadixKey>(values: &mut [T], shift: u32, varying: u64) {
    if values.len() < BUCKET_SORTED_BY_COMPARISON {
        values.sort_unstable();
        return;
    }
    let lower = (0..shift)
        .step_by(8)
        .rev()
        .find(|&s| (varying >> s) & 0xff != 0);
    if (varying >> shift) & 0xff == 0 {
        if let Some(s) = lower {
            sort_by_byte(values, s, varying);
        }
        return;
    }
    let byte = |v: T| ((v.bits() >> shift) & 0xff) as usize;
    let mut counts = [0usize; 256];
    for &v in values.iter() {
        counts[byte(v)] += 1;
    }
    let (mut next, mut end) = ([0usize; 256], [0usize; 256]);
    let mut at = 0;
    for b in 0..256 {
        next[b] = at;
        at += counts[b];
        end[b] = at;
    }
    let starts = next;
    for b in 0..256 {
        // Each value taken from bucket b's unsorted part is swapped into its own bucket,
        // and the value there carried on, until one belongs in b.
        while next[b] < end[b] {
            let mut v = values[next[b]];
            let mut d = byte(v);
            while d != b {
                std::mem::swap(&mut v, &mut values[next[d]]);
                next[d] += 1;
                d = byte(v);
            }
            values[next[b]] = v;
            next[b] += 1;
        }
    }
    if let Some(s) = lower {
        for b in 0..256 {
            if end[b] - starts[b] > 1 {
                sort_by_byte(&mut values[starts[b]..end[b]], s, varying);
            }
        }
    }
}

impl Dist {
    /// Summary of already sorted (ascending) values; `None` when empty.
    pub fn from_sorted(sorted: &[i64]) -> Option<Dist> {
        Dist::of_sorted(sorted)
    }

    /// [`Dist::from_sorted`] of either width.
    pub fn of_sorted<T: Ns>(sorted: &[T]) -> Option<Dist> {
        Dist::of_ranked(sorted)
    }

    /// [`Dist::from_sorted`] of any [`Ranked`] values.
    pub fn of_ranked<R: Ranked + ?Sized>(sorted: &R) -> Option<Dist> {
        let n = sorted.count();
        if n == 0 {
            return None;
        }
        let q = |p| percentile_ranked(sorted, p).unwrap_or(0.0);
        Some(Dist {
            count: n as u64,
            min_ns: sorted.at(0) as f64,
            p50_ns: q(0.50),
            p95_ns: q(0.95),
            p99_ns: q(0.99),
            max_ns: sorted.at(n - 1) as f64,
            mean_ns: mean_ranked(sorted).unwrap_or(0.0),
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
    use crate::analyze::fixtures::xorshift;

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
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut v: Vec<i64> = (0..20_000)
            .map(|i| {
                let state = next();
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
    fn the_in_place_radix_sort_matches_a_comparison_sort_at_every_depth() {
        // Buckets big enough to be split again byte after byte, bytes that never vary,
        // runs of one value, and values near the top of each width.
        let mut next = xorshift(0x1234_5678_9abc_def1);
        let mut wide: Vec<i64> = (0..300_000)
            .map(|i| match i % 6 {
                0 => 42,
                1 => (next() >> 1) as i64,
                2 => ((next() % 5000) << 24) as i64,
                3 => i64::MAX - (next() % 3) as i64,
                _ => (next() % 70_000_000) as i64,
            })
            .collect();
        let mut expected = wide.clone();
        expected.sort_unstable();
        sort_ns(&mut wide);
        assert_eq!(wide, expected);
        let mut narrow: Vec<u32> = (0..300_000)
            .map(|i| match i % 4 {
                0 => u32::MAX,
                1 => (next() % 256) as u32,
                _ => (next() >> 40) as u32,
            })
            .collect();
        let mut expected = narrow.clone();
        expected.sort_unstable();
        sort_u32(&mut narrow);
        assert_eq!(narrow, expected);
    }

    #[test]
    fn u32_radix_sort_matches_comparison_sort() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let mut v: Vec<u32> = (0..20_000)
            .map(|i| {
                let state = next();
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
