//! The verdict on one metric of one comparison, and how many more runs would likely
//! settle an inconclusive one.
//!
//! - improved / regressed: p (Holm-corrected) < α and the whole interval beyond the
//!   noise band, on the better / worse side for this metric's direction;
//! - equivalent: the whole interval inside the band;
//! - inconclusive: anything else, and always below `MIN_RUNS_FOR_VERDICT` runs a side.

use serde::{Deserialize, Serialize};

use super::mann_whitney::smallest_p;

/// Below this many runs a side no verdict is given, not even equivalent: 3 vs 3 cannot
/// reach p < 0.05 (the smallest two-sided Mann–Whitney p is 2 / C(6, 3) = 0.1), and an
/// interval from three runs is too rough to call two builds the same.
pub const MIN_RUNS_FOR_VERDICT: usize = 4;

/// The fewest runs a side at which improved or regressed is reachable when `family`
/// metrics are judged together: the smallest possible p (all runs of one side beyond all of
/// the other), times `family` for Holm's first step, must be below `alpha`. At least
/// `MIN_RUNS_FOR_VERDICT`. At α = 0.05: 1 metric → 4, 2–6 → 5, 7–23 → 6, 24–85 → 7.
pub fn runs_for_significance(family: usize, alpha: f64) -> usize {
    (MIN_RUNS_FOR_VERDICT..=50)
        .find(|&n| smallest_p(n, n) * (family.max(1) as f64) < alpha)
        .unwrap_or(50)
}

/// Whether any data could pass Holm's correction with these runs and metrics.
pub fn significance_reachable(runs_a: usize, runs_b: usize, family: usize, alpha: f64) -> bool {
    smallest_p(runs_a, runs_b) * (family.max(1) as f64) < alpha
}

/// Past this many more runs a side the estimate says "many" instead of a number.
const MAX_MORE_RUNS: f64 = 1000.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// fps: a ratio above 1 is better.
    HigherIsBetter,
    /// Times, CPU, memory, late frames: a ratio above 1 is worse.
    LowerIsBetter,
    /// A metric from output recorded without `:higher` or `:lower`: a change beyond the
    /// noise band is never called improved or regressed, since which it is was not said.
    Unstated,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    Improved,
    Regressed,
    Equivalent,
    Inconclusive {
        /// Why, in words.
        reason: String,
        /// Likely runs to add to each side for a verdict; `None` when no estimate holds.
        more_runs: Option<u32>,
    },
}

impl Verdict {
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::Equivalent => "equivalent",
            Verdict::Inconclusive { .. } => "inconclusive",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VerdictInput {
    /// variant ÷ baseline of the medians, and the bootstrap interval.
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    /// The Mann–Whitney p-value after Holm's correction (NaN when no test was possible).
    pub p_adjusted: f64,
    pub runs_baseline: usize,
    pub runs_variant: usize,
    /// Metrics judged together (Holm's family): more need more runs for a p to pass.
    pub family: usize,
    pub direction: Direction,
    /// Significance level (0.05).
    pub alpha: f64,
    /// Half-width of the noise band as a fraction (0.02 for ±2%).
    pub noise: f64,
}

pub fn decide(input: &VerdictInput) -> Verdict {
    let fewest = input.runs_baseline.min(input.runs_variant);
    let band = (1.0 - input.noise, 1.0 + input.noise);
    let for_significance = runs_for_significance(input.family, input.alpha);
    if fewest < MIN_RUNS_FOR_VERDICT {
        return Verdict::Inconclusive {
            reason: format!(
                "{fewest} runs on a side: equivalent needs at least {MIN_RUNS_FOR_VERDICT} a side, \
                 improved or regressed at least {for_significance} with {} judged",
                metrics_judged(input.family)
            ),
            more_runs: Some(
                more_runs(input, fewest)
                    .unwrap_or(0)
                    .max((MIN_RUNS_FOR_VERDICT - fewest) as u32),
            ),
        };
    }
    if !(input.low.is_finite() || input.high.is_finite()) || input.low.is_nan() {
        return Verdict::Inconclusive {
            reason: "no interval could be computed (a side's median is 0 or missing)".into(),
            more_runs: None,
        };
    }
    if input.low >= band.0 && input.high <= band.1 {
        return Verdict::Equivalent;
    }
    let above = input.low > band.1;
    let below = input.high < band.0;
    let significant = input.p_adjusted < input.alpha;
    if significant && (above || below) && input.direction == Direction::Unstated {
        return Verdict::Inconclusive {
            reason: "the change is beyond the noise band and significant, but which way is \
                     better was not stated: record the metric as NAME:higher=... or \
                     NAME:lower=..."
                .into(),
            more_runs: None,
        };
    }
    if significant && (above || below) {
        let better = above == (input.direction == Direction::HigherIsBetter);
        return if better {
            Verdict::Improved
        } else {
            Verdict::Regressed
        };
    }
    // A true minus sign, as the tables print.
    let pct = |v: f64| format!("{:+.1}%", (v - 1.0) * 100.0).replace('-', "−");
    let reachable = significance_reachable(
        input.runs_baseline,
        input.runs_variant,
        input.family,
        input.alpha,
    );
    if (above || below) && !reachable {
        return Verdict::Inconclusive {
            reason: format!(
                "the interval is outside the ±{}% noise band, but with {} vs {} runs and {} \
                 judged no p-value can pass Holm's correction: improved or regressed needs at \
                 least {for_significance} runs a side (or fewer --show)",
                trim_float(input.noise * 100.0),
                input.runs_baseline,
                input.runs_variant,
                metrics_judged(input.family)
            ),
            more_runs: Some(for_significance.saturating_sub(fewest).max(1) as u32),
        };
    }
    let reason = if above || below {
        format!(
            "the interval is outside the ±{:.0}% noise band but p = {:.3} (Holm-corrected) is not \
             below {}",
            input.noise * 100.0,
            input.p_adjusted,
            input.alpha
        )
    } else {
        format!(
            "the 95% interval [{}, {}] reaches across the ±{}% noise band",
            pct(input.low),
            pct(input.high),
            trim_float(input.noise * 100.0)
        )
    };
    // An effect estimated outside the band also needs enough runs for its p to pass.
    let outside = input.ratio > band.1 || input.ratio < band.0;
    let for_p =
        (for_significance.saturating_sub(fewest) as u32).min(if outside { u32::MAX } else { 0 });
    Verdict::Inconclusive {
        reason,
        more_runs: more_runs(input, fewest)
            .map(|m| m.max(for_p))
            .or((for_p > 0).then_some(for_p)),
    }
}

/// Runs to add to each side so that an interval of the width seen, shrinking as
/// 1/√runs, would clear the band edge nearest to the estimate: outside the band when the
/// estimate is outside it, inside when it is inside. On a log scale, where ratios are
/// symmetric. `None` when the estimate sits on the band's edge or the interval is unusable.
pub fn more_runs(input: &VerdictInput, runs: usize) -> Option<u32> {
    let (low, high, ratio) = (input.low, input.high, input.ratio);
    if !(low > 0.0 && high.is_finite() && ratio > 0.0 && ratio.is_finite() && runs > 0) {
        return None;
    }
    let half_width = (high.ln() - low.ln()) / 2.0;
    let effect = ratio.ln().abs();
    let edge = (1.0 + input.noise).ln();
    let margin = (effect - edge).abs();
    if margin < 1e-9 {
        return None;
    }
    let needed = runs as f64 * (half_width / margin).powi(2);
    let more = (needed - runs as f64).ceil().max(1.0);
    (more <= MAX_MORE_RUNS).then_some(more as u32)
}

fn metrics_judged(family: usize) -> String {
    match family.max(1) {
        1 => "1 metric".to_owned(),
        n => format!("{n} metrics"),
    }
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(ratio: f64, low: f64, high: f64, p: f64) -> VerdictInput {
        VerdictInput {
            ratio,
            low,
            high,
            p_adjusted: p,
            runs_baseline: 6,
            runs_variant: 6,
            family: 1,
            direction: Direction::LowerIsBetter,
            alpha: 0.05,
            noise: 0.02,
        }
    }

    #[test]
    fn four_verdicts_direction_aware() {
        assert_eq!(decide(&input(1.10, 1.05, 1.15, 0.01)), Verdict::Regressed);
        assert_eq!(decide(&input(0.90, 0.85, 0.95, 0.01)), Verdict::Improved);
        let fps = VerdictInput {
            direction: Direction::HigherIsBetter,
            ..input(1.10, 1.05, 1.15, 0.01)
        };
        assert_eq!(decide(&fps), Verdict::Improved);
        // Which way is better was not said: never improved or regressed, still equivalent.
        let unstated = |i: VerdictInput| VerdictInput {
            direction: Direction::Unstated,
            ..i
        };
        match decide(&unstated(input(1.10, 1.05, 1.15, 0.01))) {
            Verdict::Inconclusive { reason, .. } => assert!(reason.contains(":higher"), "{reason}"),
            v => panic!("{v:?}"),
        }
        assert_eq!(
            decide(&unstated(input(1.0, 0.99, 1.01, 0.8))),
            Verdict::Equivalent
        );
        assert_eq!(decide(&input(1.0, 0.99, 1.01, 0.8)), Verdict::Equivalent);
        // Equivalent does not need p: a tight interval inside the band says it.
        assert_eq!(
            decide(&input(1.01, 0.985, 1.019, 0.01)),
            Verdict::Equivalent
        );
    }

    #[test]
    fn inconclusive_says_why_and_how_many_more() {
        // Interval crosses +2%: estimate 5%, half-width ln(1.08/1.02)/2 ≈ 0.0286, margin
        // ln(1.05) − ln(1.02) ≈ 0.0290 → 6·(0.0286/0.0290)² ≈ 5.8 → at least one more.
        match decide(&input(1.05, 1.01, 1.09, 0.01)) {
            Verdict::Inconclusive { reason, more_runs } => {
                assert!(reason.contains("noise band"), "{reason}");
                assert!(more_runs.unwrap() >= 1);
            }
            v => panic!("{v:?}"),
        }
        // Wide interval: many more runs.
        match decide(&input(1.05, 0.9, 1.2, 0.2)) {
            Verdict::Inconclusive { more_runs, .. } => {
                let m = more_runs.unwrap();
                // 6·(ln(1.2/0.9)/2 / ln(1.05/1.02))² − 6 ≈ 6·(0.1438/0.0290)² − 6 ≈ 141.
                assert!((130..=150).contains(&m), "{m}");
            }
            v => panic!("{v:?}"),
        }
        // Outside the band but not significant after correction.
        match decide(&input(1.10, 1.05, 1.15, 0.2)) {
            Verdict::Inconclusive { reason, .. } => assert!(reason.contains("p = 0.200")),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn fewer_than_four_runs_a_side_is_always_inconclusive() {
        let three = VerdictInput {
            runs_variant: 3,
            ..input(2.0, 1.9, 2.1, 0.0001)
        };
        match decide(&three) {
            Verdict::Inconclusive { reason, more_runs } => {
                assert!(reason.contains("3 runs on a side"), "{reason}");
                assert!(more_runs.unwrap() >= 1);
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn the_runs_needed_follow_the_metrics_judged() {
        // 4 vs 4 and a clear 10% change: one metric can pass (2/70 < 0.05), two cannot.
        // Holm-adjusted p: 2/70 for one metric, 2 × 2/70 for two.
        let clear = |family, p| VerdictInput {
            runs_baseline: 4,
            runs_variant: 4,
            family,
            ..input(1.10, 1.05, 1.15, p)
        };
        assert_eq!(decide(&clear(1, 0.029)), Verdict::Regressed);
        match decide(&clear(2, 0.057)) {
            Verdict::Inconclusive { reason, more_runs } => {
                assert!(reason.contains("2 metrics"), "{reason}");
                assert!(reason.contains("at least 5 runs a side"), "{reason}");
                assert_eq!(more_runs, Some(1));
            }
            v => panic!("{v:?}"),
        }
        // Equivalent needs no p-value: 4 a side are enough whatever the family.
        let same = VerdictInput {
            runs_baseline: 4,
            runs_variant: 4,
            family: 30,
            ..input(1.0, 0.99, 1.01, 1.0)
        };
        assert_eq!(decide(&same), Verdict::Equivalent);
        assert_eq!(runs_for_significance(30, 0.05), 7);
    }

    #[test]
    fn unusable_intervals() {
        let v = decide(&input(f64::INFINITY, f64::INFINITY, f64::INFINITY, 0.01));
        assert!(matches!(v, Verdict::Inconclusive { .. }), "{v:?}");
        assert_eq!(more_runs(&input(1.02, 1.0, 1.04, 0.5), 6), None);
    }
}
