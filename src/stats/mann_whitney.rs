//! Mann–Whitney U test (Wilcoxon rank-sum), two-sided, on per-run values.
//!
//! The p-value is exact when both samples have at most `EXACT_MAX_RUNS` values: without
//! ties the null distribution of U is counted exactly (integers); with ties it is the
//! permutation distribution of U given the tied ranks, counted over every split of the runs
//! (the normal approximation there gave 0.047 for 3 runs a side, below the 0.1 that no
//! split of 6 runs can go under). Larger samples take the normal approximation with the tie
//! correction of the variance and a continuity correction of 0.5. `PMethod` says which one
//! a result used.

use serde::{Deserialize, Serialize};

/// Largest sample size (each side) for the exact distribution. Counting is exact in i128
/// up to C(100, 50) ≈ 1e29 arrangements, and costs well under a millisecond there.
pub const EXACT_MAX_RUNS: usize = 50;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PMethod {
    /// The exact null distribution of U (small samples; with ties, given the tied ranks).
    Exact,
    /// Normal approximation with tie and continuity corrections.
    Normal,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U of the first sample: pairs (x, y) with x > y, ties counting one half.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    pub method: PMethod,
    /// Whether any values were tied (across or within the samples).
    pub ties: bool,
}

/// Tests whether `x` and `y` come from one distribution. `None` when either is empty or a
/// value is NaN.
pub fn mann_whitney(x: &[f64], y: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 || x.iter().chain(y).any(|v| v.is_nan()) {
        return None;
    }
    let ranked = midranks(x, y);
    let rank_sum_x: f64 = ranked.ranks[..n1].iter().sum();
    let u = rank_sum_x - (n1 * (n1 + 1)) as f64 / 2.0;
    let ties = ranked.tie_term > 0.0;
    let (p_value, method) = if n1 <= EXACT_MAX_RUNS && n2 <= EXACT_MAX_RUNS {
        let p = if ties {
            exact_p_with_ties(&ranked.ranks, n1)
        } else {
            exact_p(u.round() as usize, n1, n2)
        };
        (p, PMethod::Exact)
    } else {
        (normal_p(u, n1, n2, ranked.tie_term), PMethod::Normal)
    };
    Some(MannWhitney {
        u,
        p_value,
        method,
        ties,
    })
}

/// The smallest two-sided p-value any data can give with these sample sizes (all of one
/// sample above all of the other, no ties): 2 / C(n1 + n2, n1).
pub fn smallest_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let mut arrangements = 1.0f64;
    for i in 1..=n1.min(n2) {
        arrangements = arrangements * (n1 + n2 + 1 - i) as f64 / i as f64;
    }
    (2.0 / arrangements).min(1.0)
}

struct Ranked {
    /// Midranks (1-based) of x's values then y's, in input order.
    ranks: Vec<f64>,
    /// Σ (t³ − t) over groups of t tied values.
    tie_term: f64,
}

fn midranks(x: &[f64], y: &[f64]) -> Ranked {
    let all: Vec<f64> = x.iter().chain(y).copied().collect();
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|&a, &b| all[a].total_cmp(&all[b]));
    let mut ranks = vec![0.0; all.len()];
    let mut tie_term = 0.0;
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        // -0.0 and 0.0 are one value here, as for any rank test.
        while end < order.len() && all[order[end]] == all[order[start]] {
            end += 1;
        }
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        let t = (end - start) as f64;
        tie_term += t * t * t - t;
        start = end;
    }
    Ranked { ranks, tie_term }
}

/// Counts of each U under the null: the coefficients of the Gaussian binomial
/// [n1 + n2 choose n1](q) = Π_{i=1..n1} (1 − q^(n2+i)) / (1 − q^i).
fn u_counts(n1: usize, n2: usize) -> Vec<i128> {
    let max_u = n1 * n2;
    let mut c = vec![0i128; max_u + 1];
    c[0] = 1;
    for i in 1..=n1 {
        // × (1 − q^(n2+i)), from the top so each coefficient is read before it changes.
        let shift = n2 + i;
        for k in (shift..=max_u).rev() {
            c[k] -= c[k - shift];
        }
        // ÷ (1 − q^i): a running sum with stride i.
        for k in i..=max_u {
            c[k] += c[k - i];
        }
    }
    c
}

fn exact_p(u: usize, n1: usize, n2: usize) -> f64 {
    let counts = u_counts(n1, n2);
    let total: i128 = counts.iter().sum();
    let u = u.min(counts.len() - 1);
    let at_most: i128 = counts[..=u].iter().sum();
    let at_least: i128 = counts[u..].iter().sum();
    let tail = at_most.min(at_least);
    (2.0 * tail as f64 / total as f64).min(1.0)
}

/// The two-sided p of the rank sum of the first `n1` of `ranks` (midranks, so halves at
/// most) among every choice of `n1` of them: counts by size and doubled rank sum, in f64
/// (C(100, 50) ≈ 1e29 arrangements keep 15 significant digits).
fn exact_p_with_ties(ranks: &[f64], n1: usize) -> f64 {
    let doubled: Vec<usize> = ranks.iter().map(|r| (r * 2.0).round() as usize).collect();
    let observed: usize = doubled[..n1].iter().sum();
    let max_sum: usize = doubled.iter().sum();
    // counts[k][s]: the ways to choose k of the ranks seen so far with doubled sum s.
    let mut counts = vec![vec![0.0f64; max_sum + 1]; n1 + 1];
    counts[0][0] = 1.0;
    for (seen, &rank) in doubled.iter().enumerate() {
        for k in (1..=n1.min(seen + 1)).rev() {
            let (fewer, this) = counts.split_at_mut(k);
            for s in (rank..=max_sum).rev() {
                this[0][s] += fewer[k - 1][s - rank];
            }
        }
    }
    let sums = &counts[n1];
    let total: f64 = sums.iter().sum();
    let at_most: f64 = sums[..=observed].iter().sum();
    let at_least: f64 = sums[observed..].iter().sum();
    (2.0 * at_most.min(at_least) / total).min(1.0)
}

fn normal_p(u: f64, n1: usize, n2: usize, tie_term: f64) -> f64 {
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let n = n1f + n2f;
    let mean = n1f * n2f / 2.0;
    let variance = n1f * n2f / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if variance.is_nan() || variance <= 0.0 {
        // Every value tied: nothing tells the samples apart.
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    libm::erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_counts_are_the_gaussian_binomial() {
        // n1 = n2 = 2: U ∈ {0..4} with counts 1 1 2 1 1 (C(4,2) = 6).
        assert_eq!(u_counts(2, 2), vec![1, 1, 2, 1, 1]);
        // n1 = 3, n2 = 2: 1 1 2 2 2 1 1 (C(5,3) = 10).
        assert_eq!(u_counts(3, 2), vec![1, 1, 2, 2, 2, 1, 1]);
        let total: i128 = u_counts(50, 50).iter().sum();
        // C(100, 50)
        assert_eq!(total, 100_891_344_545_564_193_334_812_497_256);
    }

    #[test]
    fn fully_separated_samples_by_hand() {
        // 4 vs 4, all of x above y: U = 16, p = 2 / C(8,4) = 2/70.
        let r = mann_whitney(&[5.0, 6.0, 7.0, 8.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(r.u, 16.0);
        assert_eq!(r.method, PMethod::Exact);
        assert!((r.p_value - 2.0 / 70.0).abs() < 1e-15);
        assert!((smallest_p(4, 4) - 2.0 / 70.0).abs() < 1e-15);
        // 3 vs 3 cannot go below 2/20 = 0.1.
        assert!((smallest_p(3, 3) - 0.1).abs() < 1e-15);
    }

    #[test]
    fn ties_are_counted_exactly_and_all_tied_is_p_one() {
        let r = mann_whitney(&[1.0, 2.0, 2.0], &[2.0, 3.0]).unwrap();
        assert_eq!(r.method, PMethod::Exact);
        assert!(r.ties);
        // Ranks 1, 3, 3 | 3, 5: x's sum is 7; the 10 splits' sums are 7 three times, 9
        // four times, 11 three times (by hand): P(sum ≤ 7) = 3/10, two-sided 0.6.
        assert!((r.p_value - 0.6).abs() < 1e-12, "{}", r.p_value);
        // 3 vs 3 with a tie across the samples: x holds the top ranks 3.5, 5, 6, as 2 of
        // the 20 splits do (either 3.5): 0.2, never below the untied floor of 0.1.
        let r = mann_whitney(&[10.0, 11.0, 12.0], &[7.0, 8.0, 10.0]).unwrap();
        assert!((r.p_value - 0.2).abs() < 1e-12, "{}", r.p_value);
        let r = mann_whitney(&[5.0, 5.0], &[5.0, 5.0, 5.0]).unwrap();
        assert_eq!(r.p_value, 1.0);
        assert!(mann_whitney(&[], &[1.0]).is_none());
        assert!(mann_whitney(&[f64::NAN], &[1.0]).is_none());
    }
}
