//! Where a series of measurements changed level: E-divisive with means (Matteson & James,
//! "A Nonparametric Approach for Multiple Change Point Analysis of Multivariate Data", JASA
//! 2014), the method MongoDB runs over its performance history (Daly et al., "The Use of
//! Change Point Detection to Identify Software Performance Regressions in a Continuous
//! Integration System", ICPE 2020). docs/history.md, "How `history check` decides".
//!
//! Bisection: the split of a segment that maximises the energy statistic (α = 1) is a
//! candidate; the best candidate over all segments is kept when a permutation test says it
//! is significant, and the search goes on in the pieces. A kept change whose medians differ
//! by less than `min_relative_change` is dropped at the end: real but too small to act on.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::stats::quantile::median;

/// How sure a change must be, and how large, to be reported.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// A change is kept when its permutation p-value is at most this. Default 0.01: of
    /// series with no change, 0.4–1.5% report one (BENCHMARKS.md, "`history check`").
    pub significance: f64,
    /// Permutations per test. Default 199: p-values in steps of 0.005, enough to tell 0.01.
    pub permutations: usize,
    /// The fewest points on each side of a change. Default 5: a regression is found once
    /// five results show it, and a single outlier is never a segment.
    pub min_segment: usize,
    /// Changes of the median smaller than this share (0.01 = 1%) are not reported.
    pub min_relative_change: f64,
    /// The permutations' seed: the same series and options give the same answer.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            significance: 0.01,
            permutations: 199,
            min_segment: 5,
            min_relative_change: 0.01,
            seed: 0x0f1a_b17c,
        }
    }
}

impl Options {
    /// How many points a series needs before a change can be looked for.
    pub fn points_needed(&self) -> usize {
        2 * self.min_segment
    }

    fn check(&self) -> Result<(), DetectError> {
        let bad = |what: String| Err(DetectError::InvalidOptions(what));
        if !(self.significance > 0.0 && self.significance < 1.0) {
            return bad(format!(
                "significance {} must be between 0 and 1",
                self.significance
            ));
        }
        if (self.permutations as f64 + 1.0) * self.significance < 1.0 {
            return bad(format!(
                "{} permutations cannot reach significance {}: use at least {}",
                self.permutations,
                self.significance,
                (1.0 / self.significance).ceil() as usize - 1
            ));
        }
        if self.min_segment < 2 {
            return bad(format!(
                "the minimum segment of {} points must be at least 2",
                self.min_segment
            ));
        }
        if !(self.min_relative_change >= 0.0 && self.min_relative_change.is_finite()) {
            return bad(format!(
                "the minimum relative change {} must be 0 or more",
                self.min_relative_change
            ));
        }
        Ok(())
    }
}

/// A change of level: from `index` on, the series sits at `after` instead of `before`.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangePoint {
    /// The first point of the new level.
    pub index: usize,
    /// Median of the points since the previous reported change (or the start).
    pub before: f64,
    /// Median of the points up to the next reported change (or the end).
    pub after: f64,
    /// (after − before) ÷ |before|; `None` when before is 0.
    pub relative_change: Option<f64>,
    /// The permutation test's p-value when the change was found.
    pub p_value: f64,
}

impl ChangePoint {
    /// 1 − p: how sure the test is that the level changed here.
    pub fn confidence(&self) -> f64 {
        1.0 - self.p_value
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TooFewPoints {
    pub have: usize,
    pub need: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum DetectError {
    TooFewPoints(TooFewPoints),
    /// NaN or ±∞ at this index: a change point over it would mean nothing.
    NotFinite {
        index: usize,
        value: f64,
    },
    InvalidOptions(String),
}

impl std::fmt::Display for DetectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DetectError::TooFewPoints(t) => write!(
                f,
                "{}, need {} to look for a change ({} on each side)",
                crate::units::plural(t.have as u64, "point", "points"),
                t.need,
                t.need / 2
            ),
            DetectError::NotFinite { index, value } => write!(
                f,
                "value {value} at point {index} is not a finite number: remove it from the series"
            ),
            DetectError::InvalidOptions(what) => write!(f, "{what}"),
        }
    }
}

impl std::error::Error for DetectError {}

/// The changes of level in `values` (oldest first), in order of index.
pub fn detect(values: &[f64], opts: &Options) -> Result<Vec<ChangePoint>, DetectError> {
    opts.check()?;
    if let Some(index) = values.iter().position(|v| !v.is_finite()) {
        return Err(DetectError::NotFinite {
            index,
            value: values[index],
        });
    }
    if values.len() < opts.points_needed() {
        return Err(DetectError::TooFewPoints(TooFewPoints {
            have: values.len(),
            need: opts.points_needed(),
        }));
    }
    let found = bisect(values, opts);
    Ok(keep_large_enough(values, found, opts.min_relative_change))
}

/// The significant splits, as (index, p-value), sorted by index.
fn bisect(values: &[f64], opts: &Options) -> Vec<(usize, f64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let mut splitter = Splitter::default();
    let mut shuffled = Vec::with_capacity(values.len());
    // Segments as [start, end) with their best split, in order.
    let mut segments: Vec<(usize, usize, Option<Split>)> =
        vec![(0, values.len(), splitter.best(values, opts.min_segment))];
    let mut found = Vec::new();
    while let Some((s, best)) = segments
        .iter()
        .enumerate()
        .filter_map(|(s, seg)| seg.2.map(|split| (s, split)))
        .filter(|(_, split)| split.q > 0.0)
        .max_by(|a, b| a.1.q.total_cmp(&b.1.q))
    {
        // Under no change, any order within each segment is as likely as the one seen.
        let mut shuffle_reaches = || {
            let mut most = f64::NEG_INFINITY;
            for &(start, end, _) in segments.iter().filter(|seg| seg.2.is_some()) {
                shuffled.clear();
                shuffled.extend_from_slice(&values[start..end]);
                shuffled.shuffle(&mut rng);
                if let Some(split) = splitter.best(&shuffled, opts.min_segment) {
                    most = most.max(split.q);
                }
            }
            most >= best.q * (1.0 - 1e-12)
        };
        let Some(p_value) = permutation_p(opts, &mut shuffle_reaches) else {
            break;
        };
        let (start, end, _) = segments[s];
        let at = start + best.at;
        found.push((at, p_value));
        let left = splitter.best(&values[start..at], opts.min_segment);
        let right = splitter.best(&values[at..end], opts.min_segment);
        segments.splice(s..=s, [(start, at, left), (at, end, right)]);
    }
    found.sort_by_key(|&(at, _)| at);
    found
}

/// How far above the significance a first look's p-value may be and still earn a second.
const BORDERLINE: f64 = 3.0;

/// The shuffles of a second look after a first of `permutations`: ten times as many.
pub fn second_look(permutations: usize) -> usize {
    (permutations + 1) * 10 - 1
}

/// The permutation test's p-value, `None` above the significance. A first look of
/// `permutations` shuffles decides most candidates; one whose p-value lands near the
/// significance (up to [`BORDERLINE`] times it) is looked at again with ten times as many:
/// a clean step over 12 points has p 0.0025, and 199 shuffles alone missed it 9% of the
/// time (47% over 10 points, p 0.008). Counting stops as soon as the p-value cannot reach
/// what the look needs.
fn permutation_p(opts: &Options, shuffle_reaches: &mut dyn FnMut() -> bool) -> Option<f64> {
    let looks = [opts.permutations, second_look(opts.permutations)];
    let mut at_least = 1; // the observed arrangement itself
    let mut done = 0;
    for (i, &shuffles) in looks.iter().enumerate() {
        let last = i + 1 == looks.len();
        let reaches = |share: f64| ((shuffles + 1) as f64 * share).floor() as usize;
        let significant = reaches(opts.significance);
        let worth_going_on = match last {
            true => significant,
            false => reaches(opts.significance * BORDERLINE),
        };
        while done < shuffles {
            done += 1;
            if shuffle_reaches() {
                at_least += 1;
                if at_least > worth_going_on {
                    return None;
                }
            }
        }
        if at_least <= significant {
            return Some(at_least as f64 / (shuffles + 1) as f64);
        }
    }
    None
}

/// The changes with their medians, after dropping, smallest first, those whose medians
/// differ by less than `min_relative` (or not at all: a change of spread alone is no change
/// of level). Each drop merges two segments, so the medians around it are computed again.
fn keep_large_enough(
    values: &[f64],
    mut found: Vec<(usize, f64)>,
    min_relative: f64,
) -> Vec<ChangePoint> {
    loop {
        let changes = with_medians(values, &found);
        let size = |c: &ChangePoint| match c.relative_change {
            _ if c.before == c.after => 0.0,
            Some(relative) => relative.abs(),
            None => f64::INFINITY, // from 0 to anything else
        };
        let smallest = (changes.iter().enumerate())
            .map(|(i, c)| (i, size(c)))
            .filter(|&(_, size)| size == 0.0 || size < min_relative)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        match smallest {
            Some((i, _)) => {
                found.remove(i);
            }
            None => return changes,
        }
    }
}

fn with_medians(values: &[f64], found: &[(usize, f64)]) -> Vec<ChangePoint> {
    let mut bounds = vec![0];
    bounds.extend(found.iter().map(|&(at, _)| at));
    bounds.push(values.len());
    let medians: Vec<f64> = bounds
        .windows(2)
        .map(|w| median(&values[w[0]..w[1]]).unwrap_or(f64::NAN))
        .collect();
    found
        .iter()
        .enumerate()
        .map(|(i, &(index, p_value))| {
            let (before, after) = (medians[i], medians[i + 1]);
            ChangePoint {
                index,
                before,
                after,
                relative_change: (before != 0.0).then(|| (after - before) / before.abs()),
                p_value,
            }
        })
        .collect()
}

#[derive(Clone, Copy, Debug)]
struct Split {
    /// First index of the right-hand part, within the segment.
    at: usize,
    /// The scaled energy statistic Q̂ (Matteson & James, eq. 6 with α = 1).
    q: f64,
}

/// Finds a segment's best split in O(n log n): the sums of |xᵢ − xⱼ| over the pairs of a
/// prefix (or suffix) grow by one point at a time, each point's distances to those before
/// it read from a Fenwick tree over value ranks. Buffers are kept between calls.
#[derive(Default)]
struct Splitter {
    centred: Vec<f64>,
    order: Vec<usize>,
    rank: Vec<usize>,
    prefix_pairs: Vec<f64>,
    tree: RankTree,
}

impl Splitter {
    fn best(&mut self, x: &[f64], min_segment: usize) -> Option<Split> {
        let n = x.len();
        if n < 2 * min_segment {
            return None;
        }
        // Centred, so the tree's running sums stay small against the distances.
        let mean = x.iter().sum::<f64>() / n as f64;
        self.centred.clear();
        self.centred.extend(x.iter().map(|v| v - mean));
        let y = &self.centred;
        self.order.clear();
        self.order.extend(0..n);
        self.order.sort_by(|&a, &b| y[a].total_cmp(&y[b]));
        self.rank.resize(n, 0);
        for (r, &i) in self.order.iter().enumerate() {
            self.rank[i] = r;
        }

        // prefix_pairs[t]: Σ |yᵢ − yⱼ| over pairs i < j < t.
        self.tree.reset(n);
        self.prefix_pairs.clear();
        self.prefix_pairs.push(0.0);
        let mut within = 0.0;
        for (&value, &rank) in y.iter().zip(&self.rank) {
            within += self.tree.distance_sum(value, rank);
            self.tree.insert(value, rank);
            self.prefix_pairs.push(within);
        }
        let total = within;

        // From the right: after adding point t, `within` is the suffix [t, n)'s pair sum.
        self.tree.reset(n);
        let mut within = 0.0;
        let mut best: Option<Split> = None;
        let nf = n as f64;
        for t in (min_segment..n).rev() {
            within += self.tree.distance_sum(y[t], self.rank[t]);
            self.tree.insert(y[t], self.rank[t]);
            let (m, k) = (t as f64, (n - t) as f64);
            if n - t < min_segment {
                continue;
            }
            let left = self.prefix_pairs[t];
            let across = total - left - within;
            let q = 2.0 * across / nf
                - m * k / nf * (left / (m * (m - 1.0) / 2.0) + within / (k * (k - 1.0) / 2.0));
            if best.is_none_or(|b| q > b.q) {
                best = Some(Split { at: t, q });
            }
        }
        best
    }
}

/// Counts and sums of the values inserted so far, indexed by rank (a Fenwick tree).
#[derive(Default)]
struct RankTree {
    count: Vec<f64>,
    sum: Vec<f64>,
    inserted: f64,
    inserted_sum: f64,
}

impl RankTree {
    fn reset(&mut self, n: usize) {
        self.count.clear();
        self.count.resize(n + 1, 0.0);
        self.sum.clear();
        self.sum.resize(n + 1, 0.0);
        self.inserted = 0.0;
        self.inserted_sum = 0.0;
    }

    fn insert(&mut self, value: f64, rank: usize) {
        let mut i = rank + 1;
        while i < self.count.len() {
            self.count[i] += 1.0;
            self.sum[i] += value;
            i += i & i.wrapping_neg();
        }
        self.inserted += 1.0;
        self.inserted_sum += value;
    }

    /// Σ |value − v| over the values inserted (ranks are distinct; ties are 0 apart
    /// whichever side they fall).
    fn distance_sum(&self, value: f64, rank: usize) -> f64 {
        let (mut below, mut below_sum) = (0.0, 0.0);
        let mut i = rank;
        while i > 0 {
            below += self.count[i];
            below_sum += self.sum[i];
            i &= i - 1;
        }
        let above = self.inserted - below;
        let above_sum = self.inserted_sum - below_sum;
        (below * value - below_sum) + (above_sum - above * value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::{Distribution, Normal};

    /// `level` with Gaussian noise of `cv` (a share of the level), reproducibly.
    fn noisy(levels: &[(usize, f64)], cv: f64, seed: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let unit = Normal::new(0.0, 1.0).unwrap();
        levels
            .iter()
            .flat_map(|&(n, level)| vec![level; n])
            .map(|level| level * (1.0 + cv * unit.sample(&mut rng)))
            .collect()
    }

    fn indices(found: &[ChangePoint]) -> Vec<usize> {
        found.iter().map(|c| c.index).collect()
    }

    /// Q̂ of every split by the definition's double sums, O(n²) each.
    fn brute_force_best(x: &[f64], min_segment: usize) -> Option<Split> {
        let pairs = |a: &[f64], b: &[f64]| -> f64 {
            a.iter()
                .map(|u| b.iter().map(|v| (u - v).abs()).sum::<f64>())
                .sum()
        };
        let n = x.len();
        (min_segment..=n.saturating_sub(min_segment))
            .map(|t| {
                let (l, r) = x.split_at(t);
                let (m, k) = (l.len() as f64, r.len() as f64);
                let energy = 2.0 / (m * k) * pairs(l, r)
                    - pairs(l, l) / 2.0 / (m * (m - 1.0) / 2.0)
                    - pairs(r, r) / 2.0 / (k * (k - 1.0) / 2.0);
                Split {
                    at: t,
                    q: m * k / (m + k) * energy,
                }
            })
            .max_by(|a, b| a.q.total_cmp(&b.q))
    }

    #[test]
    fn a_clean_step_over_twelve_points_is_found_whatever_the_seed() {
        // x264 at `-preset veryfast`, then `medium` (fps): p = 2/C(12,5) = 0.0025, which
        // 199 shuffles alone put above 0.01 for about one seed in eleven.
        let fps = [
            141.6, 124.6, 118.4, 98.7, 128.7, 66.3, 71.2, 58.2, 64.4, 67.8, 68.2, 73.9,
        ];
        let missed: Vec<u64> = (0..200)
            .filter(|&seed| {
                let opts = Options {
                    seed,
                    ..Options::default()
                };
                let found = detect(&fps, &opts).unwrap();
                !found.iter().any(|c| c.index == 5)
            })
            .collect();
        assert!(missed.is_empty(), "missed with seeds {missed:?}");
    }

    #[test]
    fn the_fast_statistic_is_the_definition() {
        let mut splitter = Splitter::default();
        for (n, min_segment, seed) in [(10, 2, 1), (37, 5, 2), (120, 3, 3), (64, 30, 4)] {
            let mut x = noisy(&[(n / 2, 10.0), (n - n / 2, 10.4)], 0.03, seed);
            x[n / 3] = x[n / 4]; // a tie
            let fast = splitter.best(&x, min_segment).unwrap();
            let slow = brute_force_best(&x, min_segment).unwrap();
            assert_eq!(fast.at, slow.at, "n={n}");
            assert!(
                (fast.q - slow.q).abs() <= 1e-9 * slow.q.abs().max(1.0),
                "{} vs {}",
                fast.q,
                slow.q
            );
        }
    }

    #[test]
    fn a_clean_step_is_found_where_it_is() {
        let opts = Options::default();
        let exact = [vec![100.0; 40], vec![103.0; 30]].concat();
        let found = detect(&exact, &opts).unwrap();
        assert_eq!(indices(&found), [40]);
        assert_eq!((found[0].before, found[0].after), (100.0, 103.0));
        assert!((found[0].relative_change.unwrap() - 0.03).abs() < 1e-12);
        assert_eq!(found[0].p_value, 1.0 / 200.0);
        assert_eq!(found[0].confidence(), 0.995);

        let noisy = noisy(&[(40, 100.0), (30, 103.0)], 0.002, 7);
        assert_eq!(indices(&detect(&noisy, &opts).unwrap()), [40]);
    }

    #[test]
    fn a_flat_noisy_series_has_no_change() {
        for seed in [1, 2, 3] {
            let flat = noisy(&[(200, 50.0)], 0.02, seed);
            assert_eq!(detect(&flat, &Options::default()).unwrap(), []);
        }
    }

    #[test]
    fn two_steps_are_both_found() {
        let x = noisy(&[(30, 100.0), (30, 105.0), (30, 98.0)], 0.003, 11);
        let found = detect(&x, &Options::default()).unwrap();
        assert_eq!(indices(&found), [30, 60]);
        // Each side's median is of its own segment, not of everything before or after.
        assert!((found[0].after - 105.0).abs() < 0.5, "{found:?}");
        assert!((found[1].before - 105.0).abs() < 0.5, "{found:?}");
        assert!(found[1].relative_change.unwrap() < -0.06);
    }

    #[test]
    fn a_step_in_the_newest_five_results_is_found() {
        let x = noisy(&[(25, 100.0), (5, 104.0)], 0.002, 5);
        assert_eq!(indices(&detect(&x, &Options::default()).unwrap()), [25]);
    }

    #[test]
    fn too_few_points_says_how_many_are_needed() {
        let err = detect(&[1.0; 9], &Options::default()).unwrap_err();
        assert_eq!(
            err,
            DetectError::TooFewPoints(TooFewPoints { have: 9, need: 10 })
        );
        assert_eq!(
            err.to_string(),
            "9 points, need 10 to look for a change (5 on each side)"
        );
        assert_eq!(
            detect(&[], &Options::default()).unwrap_err().to_string(),
            "0 points, need 10 to look for a change (5 on each side)"
        );
        assert_eq!(
            detect(&[1.0], &Options::default()).unwrap_err().to_string(),
            "1 point, need 10 to look for a change (5 on each side)"
        );
    }

    #[test]
    fn a_constant_series_has_no_change() {
        assert_eq!(detect(&[42.0; 100], &Options::default()).unwrap(), []);
        assert_eq!(detect(&[0.0; 10], &Options::default()).unwrap(), []);
    }

    #[test]
    fn values_that_are_not_numbers_are_refused() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let mut x = vec![1.0; 20];
            x[7] = bad;
            let err = detect(&x, &Options::default()).unwrap_err();
            assert!(
                matches!(err, DetectError::NotFinite { index: 7, .. }),
                "{err:?}"
            );
            assert!(err
                .to_string()
                .contains("at point 7 is not a finite number"));
        }
    }

    #[test]
    fn a_change_smaller_than_the_minimum_is_not_reported() {
        // A 0.5% step the test finds easily under 0.01% noise.
        let x = noisy(&[(30, 100.0), (30, 100.5)], 0.0001, 3);
        assert_eq!(detect(&x, &Options::default()).unwrap(), []);
        let finer = Options {
            min_relative_change: 0.001,
            ..Options::default()
        };
        assert_eq!(indices(&detect(&x, &finer).unwrap()), [30]);
    }

    #[test]
    fn a_change_from_zero_has_no_relative_size_and_is_reported() {
        let x = [vec![0.0; 12], vec![2.5; 12]].concat();
        let found = detect(&x, &Options::default()).unwrap();
        assert_eq!(indices(&found), [12]);
        assert_eq!(found[0].relative_change, None);
    }

    #[test]
    fn the_same_series_gives_the_same_answer() {
        let x = noisy(&[(60, 10.0), (60, 10.2)], 0.01, 9);
        let opts = Options::default();
        assert_eq!(detect(&x, &opts).unwrap(), detect(&x, &opts).unwrap());
    }

    #[test]
    fn options_that_cannot_work_are_refused() {
        let x = vec![1.0; 50];
        let cases = [
            (
                Options {
                    significance: 0.0,
                    ..Options::default()
                },
                "between 0 and 1",
            ),
            (
                Options {
                    permutations: 50,
                    ..Options::default()
                },
                "use at least 99",
            ),
            (
                Options {
                    min_segment: 1,
                    ..Options::default()
                },
                "at least 2",
            ),
            (
                Options {
                    min_relative_change: -0.1,
                    ..Options::default()
                },
                "0 or more",
            ),
        ];
        for (opts, says) in cases {
            let err = detect(&x, &opts).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
    }
}
