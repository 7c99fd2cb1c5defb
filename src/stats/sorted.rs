//! A run's frame-level values (ns, sorted ascending) reduced to what its statistics read:
//! the count, the sum, a digest of the whole, and the values at the ranks a percentile
//! and its bootstrap redraws can reach. `compare` keeps this per run instead of every
//! value, so its memory does not grow with the number of runs (issue 29).
//!
//! A redraw of the type-7 percentile p of n values reads the value at rank ⌈n·U⌉ with
//! U ~ Beta(k, n − k + 1), k = ⌊p(n − 1)⌋ + 1, and the next rank up (`PercentileDraw`).
//! U's standard deviation is about √(p(1 − p)/n); the ranks held reach [`SPREADS`] of
//! them and [`MARGIN`] more ranks either side of k: for p50, p95 and p99 of 10M values,
//! about 52,000 of them (0.4 MB, not 80). A draw beyond that (a chance below 10⁻²⁰ per
//! draw) would read the nearest value held.

use crate::analyze::stats::{value_digest, Ns, Ranked};

/// Standard deviations of the redrawn rank held either side of a percentile's rank.
pub const SPREADS: f64 = 10.0;
/// Ranks held beyond the spreads: the next order statistic, and a skewed Beta (a tail
/// percentile of few values).
pub const MARGIN: usize = 64;

/// Sorted values, all of them or only the ranks near some percentiles.
#[derive(Clone, Debug, PartialEq)]
pub struct SortedValues {
    len: usize,
    /// The sum of the values, exact, as f64: what adding them as f64 in ascending order
    /// gives while the sum is below 2^53 (every partial sum is then exact).
    sum: f64,
    /// Whether two sets are the same: [`value_digest`] summed over the values (any order).
    digest: u64,
    /// Runs of consecutive ranks held: (first rank, values), ascending, disjoint.
    held: Vec<(usize, Vec<i64>)>,
}

impl Default for SortedValues {
    /// No values (as reduced from none).
    fn default() -> SortedValues {
        SortedValues::all::<i64>(&[])
    }
}

impl SortedValues {
    /// Every value of `sorted` (ascending).
    pub fn all<T: Ns>(sorted: &[T]) -> SortedValues {
        SortedValues::near(sorted, None)
    }

    /// The ranks of `sorted` (ascending) that percentiles `ps` (0–1) and their redraws
    /// read; every value when that is most of them.
    pub fn keeping<T: Ns>(sorted: &[T], ps: &[f64]) -> SortedValues {
        SortedValues::near(sorted, Some(ps))
    }

    fn near<T: Ns>(sorted: &[T], ps: Option<&[f64]>) -> SortedValues {
        let digest = (sorted.iter()).fold(0u64, |d, &v| d.wrapping_add(value_digest(v.into())));
        SortedValues::of_ranked(sorted, ps, digest)
    }

    /// [`SortedValues::keeping`] (or, without `ps`, [`SortedValues::all`]) of values read
    /// by rank, their digest given (the values' [`value_digest`]s summed).
    pub fn of_ranked<R: Ranked + ?Sized>(
        sorted: &R,
        ps: Option<&[f64]>,
        digest: u64,
    ) -> SortedValues {
        let n = sorted.count();
        let held = (held_ranges_of(n, ps).into_iter())
            .filter(|(from, to)| from < to)
            .map(|(from, to)| (from, (from..to).map(|rank| sorted.at(rank)).collect()))
            .collect();
        SortedValues {
            len: n,
            sum: exact_sum(n, sorted.total()),
            digest,
            held,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The sum of every value, added in ascending order.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// Every value, when all are held.
    pub fn values(&self) -> Option<&[i64]> {
        match self.held.as_slice() {
            [(0, all)] if all.len() == self.len => Some(all),
            [] if self.len == 0 => Some(&[]),
            _ => None,
        }
    }

    /// Whether both are the same values (same count, sum and digest).
    pub fn same_values(&self, other: &SortedValues) -> bool {
        (self.len, self.digest) == (other.len, other.digest) && self.sum == other.sum
    }

    /// The value at `rank` (0-based, below `len`), or the nearest one held.
    pub fn get(&self, rank: usize) -> i64 {
        let at = self.held.partition_point(|(first, _)| *first <= rank);
        let before = at.checked_sub(1).map(|i| &self.held[i]);
        if let Some((first, values)) = before {
            if let Some(&v) = values.get(rank - first) {
                return v;
            }
        }
        // Not held: the nearer of the last value below and the first above.
        let below = before.and_then(|(first, v)| Some((rank - (first + v.len() - 1), *v.last()?)));
        let above = (self.held.get(at)).and_then(|(first, v)| Some((first - rank, *v.first()?)));
        match (below, above) {
            (Some((d, v)), Some((e, _))) if d <= e => v,
            (_, Some((_, v))) | (Some((_, v)), None) => v,
            (None, None) => 0,
        }
    }

    /// The type-7 percentile `p` (`analyze::stats::percentile_of`'s arithmetic); `None`
    /// when empty.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        let n = self.len;
        if n == 0 {
            return None;
        }
        let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
        let h = p * (n - 1) as f64;
        let lo = (h.floor() as usize).min(n - 1);
        let hi = (lo + 1).min(n - 1);
        let frac = h - lo as f64;
        let (a, b) = (self.get(lo) as f64, self.get(hi) as f64);
        Some(a + frac * (b - a))
    }
}

/// The sum of `n` values as f64; of none, -0.0, as a sum of no f64 values is.
fn exact_sum(n: usize, total: i128) -> f64 {
    match n {
        0 => -0.0,
        _ => total as f64,
    }
}

/// The rank ranges [`SortedValues::of_ranked`] holds of `n` values: those `ps` and their
/// redraws read, or all.
pub fn held_ranges_of(n: usize, ps: Option<&[f64]>) -> Vec<(usize, usize)> {
    match ps {
        Some(ps) => held_ranges(n, ps),
        None => vec![(0, n)],
    }
}

/// The rank ranges percentiles `ps` of `n` values and their redraws read, merged; the
/// whole when they cover half of it or more.
fn held_ranges(n: usize, ps: &[f64]) -> Vec<(usize, usize)> {
    let mut ranges: Vec<(usize, usize)> = ps
        .iter()
        .map(|&p| {
            let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
            let lo = ((p * n.saturating_sub(1) as f64).floor() as usize).min(n.saturating_sub(1));
            // Beta(k, n − k + 1)'s standard deviation, in ranks.
            let (a, b) = ((lo + 1) as f64, (n - lo) as f64);
            let sd = n as f64 * (a * b / ((a + b) * (a + b) * (a + b + 1.0))).sqrt();
            let half = (SPREADS * sd).ceil() as usize + MARGIN;
            (lo.saturating_sub(half), (lo + half + 2).min(n))
        })
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (from, to) in ranges {
        match merged.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => merged.push((from, to)),
        }
    }
    let held: usize = merged.iter().map(|(from, to)| to - from).sum();
    if held * 2 >= n {
        return vec![(0, n)];
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::stats::percentile_sorted;

    fn spread(n: usize) -> Vec<i64> {
        let mut v: Vec<i64> = (0..n as i64)
            .map(|i| (i * 7919 % 100_003) * 13 + i % 5)
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn percentiles_of_the_ranks_held_are_those_of_all_values() {
        let v = spread(1_000_000);
        let ps = [0.5, 0.95, 0.99, 0.999];
        let kept = SortedValues::keeping(&v, &ps);
        assert!(kept.values().is_none(), "a part is held");
        let held: usize = kept.held.iter().map(|(_, v)| v.len()).sum();
        assert!(held < v.len() / 4, "{held} of {}", v.len());
        for p in ps {
            assert_eq!(kept.percentile(p), percentile_sorted(&v, p));
        }
        // Every rank a redraw can reach in practice: ±10 SD of the rank, and the next.
        for p in ps {
            let lo = (p * (v.len() - 1) as f64).floor() as usize;
            let sd = (v.len() as f64 * p * (1.0 - p)).sqrt();
            let reach = (10.0 * sd) as usize;
            for rank in [lo - reach, lo, lo + reach + 1] {
                assert_eq!(kept.get(rank), v[rank], "p {p}, rank {rank}");
            }
        }
        let sum: f64 = v.iter().map(|&x| x as f64).sum();
        assert_eq!((kept.len(), kept.sum()), (v.len(), sum));
        assert!(kept.same_values(&SortedValues::all(&v)));
        let mut other = v.clone();
        other[10] += 1;
        assert!(!kept.same_values(&SortedValues::keeping(&other, &ps)));
    }

    #[test]
    fn small_sets_are_held_whole() {
        let v = spread(500);
        let kept = SortedValues::keeping(&v, &[0.5]);
        assert_eq!(kept.values(), Some(v.as_slice()));
        let none: [u32; 0] = [];
        let empty = SortedValues::keeping(&none, &[0.5]);
        assert_eq!((empty.len(), empty.percentile(0.5)), (0, None));
        assert_eq!(empty.values(), Some(&[][..]));
    }

    #[test]
    fn a_rank_not_held_reads_the_nearest_value_held() {
        let v = spread(1_000_000);
        let kept = SortedValues::keeping(&v, &[0.5]);
        let (first, values) = &kept.held[0];
        assert_eq!(kept.get(0), values[0]);
        assert_eq!(kept.get(first + values.len() + 10), *values.last().unwrap());
    }
}
