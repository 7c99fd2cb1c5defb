//! The 95% interval of the ratio of per-variant medians of a per-run metric, by a
//! two-level bootstrap: each resample draws runs with replacement, then, for metrics
//! computed from frames, the frames within each drawn run with replacement.
//!
//! Resampling a run's frames and recomputing a percentile would cost O(frames) per run
//! per resample (10,000 × 20 runs × 100,000 frames). It is not needed: the k-th smallest
//! of n values drawn with replacement from x₍₁₎ ≤ … ≤ x₍ₙ₎ is x at index ⌈n·U₍ₖ₎⌉, where
//! U₍ₖ₎ is the k-th smallest of n uniform numbers, which is Beta(k, n − k + 1)
//! distributed; the next order statistic is U₍ₖ₎ + (1 − U₍ₖ₎)·(1 − V^(1/(n−k))), V
//! uniform. So a resampled type-7 percentile costs one or two random draws and has
//! exactly the distribution the naive resampling gives (checked against it in the tests
//! and against an independent implementation in tests/e2e/compare/stats_reference.rs).
//! A share of frames (late frames %) resamples as Binomial(n, share).

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Beta, Binomial, Distribution};
use serde::{Deserialize, Serialize};

use super::quantile::{median_in_place, quantile_sorted, quantile_sorted_i64, sort_f64};
use super::sorted::SortedValues;

/// One run's value of a metric, and what its within-run resampling draws from.
#[derive(Clone, Copy, Debug)]
pub enum RunValue<'a> {
    /// A number per run (observed fps, CPU per frame, peak RSS): only runs are resampled.
    Whole(f64),
    /// A type-7 percentile `p` of the run's frames, given sorted ascending (ns).
    Percentile { sorted: &'a [i64], p: f64 },
    /// The same from the ranks of them a run keeps (`SortedValues`): the same numbers.
    Ranked { sorted: &'a SortedValues, p: f64 },
    /// The percentage of the run's `of` frames that are `hits` (late frames %).
    Share { hits: u64, of: u64 },
}

impl RunValue<'_> {
    /// The run's value of the metric, as a report of that run shows it.
    pub fn value(&self) -> f64 {
        match *self {
            RunValue::Whole(v) => v,
            RunValue::Percentile { sorted, p } => {
                quantile_sorted_i64(sorted, p).unwrap_or(f64::NAN)
            }
            RunValue::Ranked { sorted, p } => sorted.percentile(p).unwrap_or(f64::NAN),
            RunValue::Share { hits, of } if of > 0 => hits as f64 / of as f64 * 100.0,
            RunValue::Share { .. } => f64::NAN,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BootstrapOptions {
    pub resamples: usize,
    pub seed: u64,
    /// Two-sided confidence of the interval (0.95).
    pub confidence: f64,
    /// Resample frames within runs for frame-based metrics (the second level).
    pub within_runs: bool,
}

impl Default for BootstrapOptions {
    fn default() -> Self {
        BootstrapOptions {
            resamples: 10_000,
            seed: 0x5eed,
            confidence: 0.95,
            within_runs: true,
        }
    }
}

/// The observed ratio variant ÷ baseline of the medians across runs, and its interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatioInterval {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
}

/// variant ÷ baseline, with 0 ÷ 0 = 1 (nothing changed) and x ÷ 0 = ∞.
pub fn ratio_of(variant: f64, baseline: f64) -> f64 {
    if baseline == 0.0 {
        if variant == 0.0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        variant / baseline
    }
}

/// The percentile-bootstrap interval of median(variant) ÷ median(baseline).
/// `None` when either side has no run or a run's value is not a number.
pub fn bootstrap_ratio(
    baseline: &[RunValue],
    variant: &[RunValue],
    options: &BootstrapOptions,
) -> Option<RatioInterval> {
    let observed = |runs: &[RunValue]| {
        let mut values: Vec<f64> = runs.iter().map(RunValue::value).collect();
        median_in_place(&mut values)
    };
    let (base, var) = (observed(baseline)?, observed(variant)?);
    if base.is_nan() || var.is_nan() {
        return None;
    }
    let ratio = ratio_of(var, base);
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let baseline = Resampler::new(baseline, options.within_runs, &mut rng);
    let variant = Resampler::new(variant, options.within_runs, &mut rng);
    let mut scratch = Vec::new();
    let mut ratios: Vec<f64> = (0..options.resamples.max(1))
        .map(|_| {
            let b = baseline.median(&mut rng, &mut scratch);
            let v = variant.median(&mut rng, &mut scratch);
            ratio_of(v, b)
        })
        .collect();
    sort_f64(&mut ratios);
    let tail = (1.0 - options.confidence.clamp(0.0, 1.0)) / 2.0;
    Some(RatioInterval {
        ratio,
        low: quantile_sorted(&ratios, tail)?,
        high: quantile_sorted(&ratios, 1.0 - tail)?,
    })
}

/// How one run's value is redrawn.
enum Redraw<'a> {
    Fixed,
    Percentile(PercentileDraw<'a>),
    Share(Binomial, u64),
}

/// Within-run draws used to estimate each run's within-run variance. Where that variance
/// is close to the spread across runs, the pull toward the median is sensitive to it: 256
/// draws made the pull, and so the interval's ends, depend on the seed well beyond the
/// resampling's own noise (the test `the_pull_toward_the_median_hardly_depends_on_the_seed`).
/// 4096 draws per run cost under half the draws of 10,000 resamples.
const VARIANCE_DRAWS: usize = 4096;

/// One side's runs, ready to resample.
///
/// Drawing runs, then frames within each drawn run, would count the within-run noise
/// twice: a run's value already carries it, and the spread across runs already shows it.
/// So each run's value is first pulled toward the median of the runs by
/// √(1 − within-run variance ÷ variance across runs), then redrawn from its frames: the
/// resampled values then spread as much as the runs did, with the frame-level shape.
struct Resampler<'a> {
    /// Each run's value after shrinking toward the median, and how to redraw it.
    runs: Vec<(f64, f64, Redraw<'a>)>,
    /// The least a resampled value may be: 0 where every run's value is (times, counts,
    /// shares), so that a run shrunk toward the median and then redrawn low from a skewed
    /// distribution cannot go negative (a negative median made ratio intervals below 0).
    floor: f64,
}

impl<'a> Resampler<'a> {
    fn new(runs: &[RunValue<'a>], within_runs: bool, rng: &mut ChaCha8Rng) -> Resampler<'a> {
        let redraws: Vec<Redraw<'a>> = runs
            .iter()
            .map(|run| match *run {
                RunValue::Percentile { sorted, p } if within_runs => {
                    PercentileDraw::new(sorted, p).map_or(Redraw::Fixed, Redraw::Percentile)
                }
                RunValue::Ranked { sorted, p } if within_runs => {
                    PercentileDraw::of(Ranks::Held(sorted), p)
                        .map_or(Redraw::Fixed, Redraw::Percentile)
                }
                RunValue::Share { hits, of } if within_runs && of > 0 => {
                    match Binomial::new(of, hits as f64 / of as f64) {
                        Ok(binomial) => Redraw::Share(binomial, of),
                        Err(_) => Redraw::Fixed,
                    }
                }
                _ => Redraw::Fixed,
            })
            .collect();
        let values: Vec<f64> = runs.iter().map(RunValue::value).collect();
        let floor = if values.iter().all(|&v| v >= 0.0) {
            0.0
        } else {
            f64::NEG_INFINITY
        };
        let center = super::quantile::median(&values).unwrap_or(f64::NAN);
        let within = redraws
            .iter()
            .zip(&values)
            .map(|(redraw, &value)| within_variance(redraw, value, rng))
            .sum::<f64>()
            / values.len().max(1) as f64;
        let across = sample_variance(&values);
        let shrink = if within > 0.0 && across > 0.0 {
            (1.0 - within / across).max(0.0).sqrt()
        } else {
            1.0
        };
        let runs = redraws
            .into_iter()
            .zip(values)
            .map(|(redraw, value)| (center + shrink * (value - center), value, redraw))
            .collect();
        Resampler { runs, floor }
    }

    /// The median across runs of one resample: runs drawn with replacement, each redrawn.
    fn median(&self, rng: &mut ChaCha8Rng, scratch: &mut Vec<f64>) -> f64 {
        let n = self.runs.len();
        scratch.clear();
        for _ in 0..n {
            let (shrunk, value, redraw) = &self.runs[rng.random_range(0..n)];
            let drawn = match redraw {
                Redraw::Fixed => *value,
                Redraw::Percentile(draw) => draw.sample(rng),
                Redraw::Share(binomial, of) => binomial.sample(rng) as f64 / *of as f64 * 100.0,
            };
            scratch.push((shrunk + (drawn - value)).max(self.floor));
        }
        median_in_place(scratch).unwrap_or(f64::NAN)
    }
}

/// The variance of a run's redrawn value: exact for a share, estimated from a few
/// draws for a percentile, 0 for a value that is not redrawn.
fn within_variance(redraw: &Redraw, value: f64, rng: &mut ChaCha8Rng) -> f64 {
    match redraw {
        Redraw::Fixed => 0.0,
        Redraw::Share(_, of) => {
            let p = value / 100.0;
            p * (1.0 - p) / *of as f64 * 100.0 * 100.0
        }
        Redraw::Percentile(draw) => {
            let draws: Vec<f64> = (0..VARIANCE_DRAWS).map(|_| draw.sample(rng)).collect();
            sample_variance(&draws)
        }
    }
}

/// Variance with the n − 1 denominator; 0 for fewer than two finite values.
fn sample_variance(values: &[f64]) -> f64 {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let n = finite.len();
    if n < 2 {
        return 0.0;
    }
    let mean = finite.iter().sum::<f64>() / n as f64;
    finite.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
}

/// Draws the type-7 percentile `p` of n values resampled with replacement from `sorted`,
/// through the order statistics of uniforms (see the module comment).
pub struct PercentileDraw<'a> {
    sorted: Ranks<'a>,
    /// 1-based rank of the lower order statistic the percentile interpolates from.
    rank: usize,
    frac: f64,
    beta: Beta<f64>,
}

impl<'a> PercentileDraw<'a> {
    /// `None` for fewer than two values (nothing to resample).
    pub fn new(sorted: &'a [i64], p: f64) -> Option<PercentileDraw<'a>> {
        PercentileDraw::of(Ranks::All(sorted), p)
    }

    /// [`PercentileDraw::new`] of values all held or held near their percentiles.
    fn of(sorted: Ranks<'a>, p: f64) -> Option<PercentileDraw<'a>> {
        let n = sorted.len();
        if n < 2 {
            return None;
        }
        let h = p.clamp(0.0, 1.0) * (n - 1) as f64;
        let lo = (h.floor() as usize).min(n - 1);
        let rank = lo + 1;
        let beta = Beta::new(rank as f64, (n - rank + 1) as f64).ok()?;
        Some(PercentileDraw {
            sorted,
            rank,
            frac: h - lo as f64,
            beta,
        })
    }

    pub fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
        let n = self.sorted.len();
        let u = self.beta.sample(rng);
        let lower = self.sorted.get(self.index(u)) as f64;
        if self.frac == 0.0 || self.rank >= n {
            return lower;
        }
        // The next of n uniforms above u: u plus the smallest of n − rank uniforms on (u, 1).
        let v: f64 = 1.0 - rng.random::<f64>();
        let next = u + (1.0 - u) * (1.0 - v.powf(1.0 / (n - self.rank) as f64));
        let upper = self.sorted.get(self.index(next)) as f64;
        lower + self.frac * (upper - lower)
    }

    /// Index of the value a uniform number `u` draws: ⌈n·u⌉ − 1, kept in range.
    fn index(&self, u: f64) -> usize {
        let n = self.sorted.len();
        ((u * n as f64).ceil() as usize).clamp(1, n) - 1
    }
}

/// Sorted values as a redraw reads them: a slice, or the ranks a run keeps.
#[derive(Clone, Copy)]
enum Ranks<'a> {
    All(&'a [i64]),
    Held(&'a SortedValues),
}

impl Ranks<'_> {
    fn len(&self) -> usize {
        match self {
            Ranks::All(v) => v.len(),
            Ranks::Held(v) => v.len(),
        }
    }

    fn get(&self, rank: usize) -> i64 {
        match self {
            Ranks::All(v) => v[rank],
            Ranks::Held(v) => v.get(rank),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The naive way: draw n frames with replacement, sort, take the percentile.
    fn naive_percentile(sorted: &[i64], p: f64, rng: &mut ChaCha8Rng) -> f64 {
        let n = sorted.len();
        let mut drawn: Vec<i64> = (0..n).map(|_| sorted[rng.random_range(0..n)]).collect();
        drawn.sort_unstable();
        quantile_sorted_i64(&drawn, p).unwrap()
    }

    fn mean_and_sd(values: &[f64]) -> (f64, f64) {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var.sqrt())
    }

    #[test]
    fn ratio_intervals_of_non_negative_figures_never_go_below_zero() {
        // A tail percentile of skewed runs (a pacer's p99: mostly tens of ns, now and then
        // tens of ms): a run shrunk toward the median and redrawn low once went negative.
        // 8 spikes in 608 frames: the run's p99 is a spike, a redraw's often is not.
        let quiet: Vec<i64> = (0..600).map(|i| 60 + i % 40).collect();
        let mut spiky = quiet.clone();
        spiky.extend((0..8).map(|i| 20_000_000 + i));
        spiky.sort_unstable();
        let side = |a: &'static [i64], b: &'static [i64]| {
            vec![
                RunValue::Percentile { sorted: a, p: 0.99 },
                RunValue::Percentile { sorted: b, p: 0.99 },
                RunValue::Percentile { sorted: a, p: 0.99 },
                RunValue::Percentile { sorted: b, p: 0.99 },
            ]
        };
        let (quiet, spiky): (&'static [i64], &'static [i64]) = (quiet.leak(), spiky.leak());
        for seed in 0..20 {
            let options = BootstrapOptions {
                seed,
                ..BootstrapOptions::default()
            };
            let r = bootstrap_ratio(&side(spiky, quiet), &side(quiet, spiky), &options).unwrap();
            assert!(r.low >= 0.0, "seed {seed}: {r:?}");
        }
    }

    /// The factor each run is pulled toward the median by rests on an estimate of the
    /// within-run variance. Where it is close to the spread across runs (a tail percentile
    /// of a few hundred frames), an estimate from 256 draws moved the factor by 0.1 to 0.2
    /// (SD over seeds), and with it the interval's ends by a few percent: a comparison page's
    /// p99 intervals fell outside the Monte-Carlo noise of an independent bootstrap with the
    /// variance known well (benches/validate/check_compare_html.py). It hardly moves now.
    #[test]
    fn the_pull_toward_the_median_hardly_depends_on_the_seed() {
        // Six runs of 400 frames, 1 ms plus an exponential tail (mean 0.2 ms), each run
        // 0.1 ms slower than the one before: the runs' p99s spread about as much as one
        // run's p99 does when its frames are redrawn (the pull is about 0.5).
        let runs: Vec<Vec<i64>> = (0..6u64)
            .map(|k| {
                let mut v: Vec<i64> = (0..400u64)
                    .map(|i| {
                        let u = ((i.wrapping_mul(2_654_435_761).wrapping_add(k * 40_503 + 7))
                            % (1 << 32)) as f64;
                        let u = (u + 0.5) / (1u64 << 32) as f64;
                        1_000_000 + k as i64 * 100_000 + (200_000.0 * -u.ln()) as i64
                    })
                    .collect();
                v.sort_unstable();
                v
            })
            .collect();
        let values: Vec<RunValue> = runs
            .iter()
            .map(|s| RunValue::Percentile { sorted: s, p: 0.99 })
            .collect();
        let shrinks: Vec<f64> = (0..40)
            .map(|seed| {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let side = Resampler::new(&values, true, &mut rng);
                let center = {
                    let mut v: Vec<f64> = values.iter().map(RunValue::value).collect();
                    median_in_place(&mut v).unwrap()
                };
                let (shrunk, value, _) = side
                    .runs
                    .iter()
                    .max_by(|a, b| (a.1 - center).abs().total_cmp(&(b.1 - center).abs()))
                    .unwrap();
                (shrunk - center) / (value - center)
            })
            .collect();
        let (mean, sd) = mean_and_sd(&shrinks);
        println!("shrink over 40 seeds: mean {mean:.3}, sd {sd:.3}");
        // 256 draws: an SD of 0.19 over seeds here; 4096: 0.04.
        assert!(
            sd < 0.08,
            "the pull toward the median varies with the seed: mean {mean:.3}, sd {sd:.3}"
        );
    }

    #[test]
    fn order_statistic_draws_match_naive_resampling() {
        // Skewed values, 200 of them; p99 interpolates between two order statistics.
        let sorted: Vec<i64> = (0..200).map(|i| 1000 + i * i * 3 + (i % 7) * 11).collect();
        for p in [0.5, 0.95, 0.99] {
            let draw = PercentileDraw::new(&sorted, p).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(7);
            let fast: Vec<f64> = (0..5_000).map(|_| draw.sample(&mut rng)).collect();
            let slow: Vec<f64> = (0..5_000)
                .map(|_| naive_percentile(&sorted, p, &mut rng))
                .collect();
            let (mf, sf) = mean_and_sd(&fast);
            let (ms, ss) = mean_and_sd(&slow);
            // Means within 4 standard errors; spreads within 5%.
            let se = ss / (5_000f64).sqrt() * 2f64.sqrt();
            assert!((mf - ms).abs() < 4.0 * se, "p{p}: {mf} vs {ms} (se {se})");
            assert!((sf / ss - 1.0).abs() < 0.05, "p{p}: sd {sf} vs {ss}");
        }
    }

    #[test]
    fn identical_sides_give_an_interval_around_one() {
        let runs: Vec<RunValue> = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2]
            .iter()
            .map(|&v| RunValue::Whole(v))
            .collect();
        let r = bootstrap_ratio(&runs, &runs, &BootstrapOptions::default()).unwrap();
        assert_eq!(r.ratio, 1.0);
        assert!(
            r.low < 1.0 && r.high > 1.0 && r.low > 0.98 && r.high < 1.02,
            "{r:?}"
        );
    }

    #[test]
    fn seeded_and_reproducible() {
        let a: Vec<RunValue> = [1.0, 2.0, 3.0, 4.0]
            .iter()
            .map(|&v| RunValue::Whole(v))
            .collect();
        let b: Vec<RunValue> = [2.0, 3.0, 4.0, 5.0]
            .iter()
            .map(|&v| RunValue::Whole(v))
            .collect();
        let options = BootstrapOptions {
            resamples: 500,
            ..Default::default()
        };
        let one = bootstrap_ratio(&a, &b, &options).unwrap();
        assert_eq!(one, bootstrap_ratio(&a, &b, &options).unwrap());
        assert_eq!(one.ratio, 3.5 / 2.5);
        let other = bootstrap_ratio(&a, &b, &BootstrapOptions { seed: 9, ..options }).unwrap();
        assert_ne!(one, other);
    }

    #[test]
    fn zero_baselines_and_empty_sides() {
        let zeros = [RunValue::Whole(0.0), RunValue::Whole(0.0)];
        let r = bootstrap_ratio(&zeros, &zeros, &BootstrapOptions::default()).unwrap();
        assert_eq!((r.ratio, r.low, r.high), (1.0, 1.0, 1.0));
        let some = [RunValue::Whole(1.0), RunValue::Whole(2.0)];
        let r = bootstrap_ratio(&zeros, &some, &BootstrapOptions::default()).unwrap();
        assert_eq!(r.ratio, f64::INFINITY);
        assert!(bootstrap_ratio(&[], &some, &BootstrapOptions::default()).is_none());
    }

    #[test]
    fn the_ranks_a_run_keeps_resample_as_all_its_values() {
        // compare keeps each run's values near the percentiles it reads (issue 29): the
        // interval must be the same to the last bit.
        let runs: Vec<Vec<i64>> = (0..5i64)
            .map(|k| {
                let mut v: Vec<i64> = (0..200_000i64)
                    .map(|i| 1_000 + (i * 7919 + k * 31) % 50_021 + k * 40)
                    .collect();
                v.sort_unstable();
                v
            })
            .collect();
        for p in [0.5, 0.99] {
            let kept: Vec<SortedValues> = (runs.iter())
                .map(|v| SortedValues::keeping(v, &[p]))
                .collect();
            assert!(kept.iter().all(|k| k.values().is_none()));
            let all: Vec<RunValue> = (runs.iter())
                .map(|s| RunValue::Percentile { sorted: s, p })
                .collect();
            let ranked: Vec<RunValue> = (kept.iter())
                .map(|s| RunValue::Ranked { sorted: s, p })
                .collect();
            let options = BootstrapOptions::default();
            let a = bootstrap_ratio(&all[..2], &all[2..], &options).unwrap();
            let b = bootstrap_ratio(&ranked[..2], &ranked[2..], &options).unwrap();
            assert_eq!(
                (a.ratio.to_bits(), a.low.to_bits(), a.high.to_bits()),
                (b.ratio.to_bits(), b.low.to_bits(), b.high.to_bits()),
                "p {p}"
            );
        }
    }

    #[test]
    fn shares_and_single_frames_resample_safely() {
        let runs = [
            RunValue::Share { hits: 0, of: 100 },
            RunValue::Share { hits: 3, of: 100 },
            RunValue::Share { hits: 0, of: 0 },
        ];
        assert_eq!(runs[1].value(), 3.0);
        assert!(runs[2].value().is_nan());
        let one = [5i64];
        let single = [RunValue::Percentile {
            sorted: &one,
            p: 0.99,
        }; 3];
        let r = bootstrap_ratio(&single, &single, &BootstrapOptions::default()).unwrap();
        assert_eq!((r.low, r.high), (1.0, 1.0));
    }
}
