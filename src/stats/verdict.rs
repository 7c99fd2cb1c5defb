//! The verdict on one metric of one comparison, and how many more runs would likely
//! settle an inconclusive one.
//!
//! - improved / regressed: p < α after `gatekeeping` (the primary metric's own p; the
//!   others' Holm-corrected among themselves, and only once the primary changed) and the
//!   whole interval beyond the noise band, on the better / worse side for this metric's
//!   direction;
//! - equivalent: the whole interval inside the band;
//! - inconclusive: anything else, and always below `MIN_RUNS_FOR_VERDICT` runs a side.

use serde::{Deserialize, Serialize};

use super::mann_whitney::smallest_p;

/// Below this many runs a side no verdict is given, not even equivalent: 3 vs 3 cannot
/// reach p < 0.05 (the smallest two-sided Mann–Whitney p is 2 / C(6, 3) = 0.1), and an
/// interval from three runs is too rough to call two builds the same.
pub const MIN_RUNS_FOR_VERDICT: usize = 4;

/// The fewest runs a side at which improved or regressed is reachable for a metric judged in
/// a Holm family of `family` hypotheses (1 for the primary metric, tested alone): the
/// smallest possible p (all runs of one side beyond all of the other), times `family` for
/// Holm's first step, must be below `alpha`. At least `MIN_RUNS_FOR_VERDICT`. At α = 0.05:
/// 1 metric → 4, 2–6 → 5, 7–23 → 6, 24–85 → 7.
pub fn runs_for_significance(family: usize, alpha: f64) -> usize {
    (MIN_RUNS_FOR_VERDICT..=50)
        .find(|&n| smallest_p(n, n) * (family.max(1) as f64) < alpha)
        .unwrap_or(50)
}

/// Whether any data could pass Holm's correction with these runs and metrics.
pub fn significance_reachable(runs_a: usize, runs_b: usize, family: usize, alpha: f64) -> bool {
    smallest_p(runs_a, runs_b) * (family.max(1) as f64) < alpha
}

/// Past this many more runs a side no number is advised: none would be practical.
const MAX_MORE_RUNS: f64 = 1000.0;

/// What [`more_runs`] can say.
#[derive(Debug)]
enum MoreRuns {
    About(u32),
    /// More than [`MAX_MORE_RUNS`] a side.
    Impractical,
    /// The estimate sits on the band's edge, or the interval is unusable.
    Unknown,
}

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

/// Where a metric stands in the order of testing (`gatekeeping`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Gate<'a> {
    /// The primary metric (or one identical to it by construction): tested alone at α.
    Primary,
    /// Tested only once the primary metric changed: `primary` is its label, `primary_p` its
    /// own p (NaN when it had no test).
    After { primary: &'a str, primary_p: f64 },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VerdictInput<'a> {
    /// variant ÷ baseline of the medians, and the bootstrap interval.
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    /// The Mann–Whitney p-value adjusted by `gatekeeping` (NaN when no test was possible).
    pub p_adjusted: f64,
    pub runs_baseline: usize,
    pub runs_variant: usize,
    /// Hypotheses in this metric's Holm family: 1 for the primary metric; for the others,
    /// those tested after it. More need more runs for a p to pass.
    pub family: usize,
    pub gate: Gate<'a>,
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
                 improved or regressed at least {for_significance} {}",
                judged_as(input)
            ),
            more_runs: {
                let fewest_more = (MIN_RUNS_FOR_VERDICT - fewest) as u32;
                match estimate_more_runs(input, fewest) {
                    MoreRuns::About(n) => Some(n.max(fewest_more)),
                    MoreRuns::Impractical => None,
                    MoreRuns::Unknown => Some(fewest_more),
                }
            },
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
    let band_text = format!("±{}%", trim_float(input.noise * 100.0));
    if let Gate::After { primary, primary_p } = input.gate {
        #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is meant to take this branch
        if (above || below) && !(primary_p < input.alpha) {
            let why = if primary_p.is_nan() {
                "which could not be tested".to_owned()
            } else {
                format!("which did not change significantly (p = {primary_p:.3})")
            };
            return Verdict::Inconclusive {
                reason: format!(
                    "the interval is outside the {band_text} noise band, but the other metrics \
                     are tested only once the primary metric, {primary}, changed, {why}: to \
                     test this one at the full α, name it first with --show"
                ),
                more_runs: None,
            };
        }
    }
    let reachable = significance_reachable(
        input.runs_baseline,
        input.runs_variant,
        input.family,
        input.alpha,
    );
    if (above || below) && !reachable {
        return Verdict::Inconclusive {
            reason: format!(
                "the interval is outside the {band_text} noise band, but with {} vs {} runs no \
                 p-value {} can pass: improved or regressed needs at least {for_significance} \
                 runs a side (or fewer --show)",
                input.runs_baseline,
                input.runs_variant,
                match input.gate {
                    Gate::Primary => format!("of the primary metric can reach α = {}", input.alpha),
                    Gate::After { .. } => format!(
                        "among the {} tested after the primary metric, Holm-corrected,",
                        metrics(input.family)
                    ),
                }
            ),
            more_runs: Some(for_significance.saturating_sub(fewest).max(1) as u32),
        };
    }
    let reason = if above || below {
        format!(
            "the interval is outside the {band_text} noise band but p = {:.3}{} is not below {}",
            input.p_adjusted,
            match input.gate {
                Gate::Primary => "",
                Gate::After { .. } => " (Holm-corrected after the primary metric)",
            },
            input.alpha
        )
    } else {
        format!(
            "the 95% interval [{}, {}] reaches across the {band_text} noise band",
            pct(input.low),
            pct(input.high),
        )
    };
    // An effect estimated outside the band also needs enough runs for its p to pass.
    let outside = input.ratio > band.1 || input.ratio < band.0;
    let for_p =
        (for_significance.saturating_sub(fewest) as u32).min(if outside { u32::MAX } else { 0 });
    Verdict::Inconclusive {
        reason,
        // Beyond any practical number, none is advised (not the runs Holm needs alone).
        more_runs: match estimate_more_runs(input, fewest) {
            MoreRuns::About(n) => Some(n.max(for_p)),
            MoreRuns::Impractical => None,
            MoreRuns::Unknown => (for_p > 0).then_some(for_p),
        },
    }
}

/// Runs to add to each side so that an interval of the width seen, shrinking as
/// 1/√runs, would clear the band edge nearest to the estimate: outside the band when the
/// estimate is outside it, inside when it is inside. On a log scale, where ratios are
/// symmetric. `None` when the estimate sits on the band's edge or the interval is unusable.
pub fn more_runs(input: &VerdictInput, runs: usize) -> Option<u32> {
    match estimate_more_runs(input, runs) {
        MoreRuns::About(n) => Some(n),
        MoreRuns::Impractical | MoreRuns::Unknown => None,
    }
}

fn estimate_more_runs(input: &VerdictInput, runs: usize) -> MoreRuns {
    let (low, high, ratio) = (input.low, input.high, input.ratio);
    if !(low > 0.0 && high.is_finite() && ratio > 0.0 && ratio.is_finite() && runs > 0) {
        return MoreRuns::Unknown;
    }
    let half_width = (high.ln() - low.ln()) / 2.0;
    let effect = ratio.ln().abs();
    let edge = (1.0 + input.noise).ln();
    let margin = (effect - edge).abs();
    if margin < 1e-9 {
        return MoreRuns::Unknown;
    }
    let needed = runs as f64 * (half_width / margin).powi(2);
    let more = (needed - runs as f64).ceil().max(1.0);
    match more <= MAX_MORE_RUNS {
        true => MoreRuns::About(more as u32),
        false => MoreRuns::Impractical,
    }
}

/// How the metric is judged, for reasons: "as the primary metric, tested alone", "with 13
/// metrics tested after the primary metric, fps".
fn judged_as(input: &VerdictInput) -> String {
    match input.gate {
        Gate::Primary => "as the primary metric, tested alone".to_owned(),
        Gate::After { primary, .. } => format!(
            "with {} tested after the primary metric, {primary}",
            metrics(input.family)
        ),
    }
}

fn metrics(family: usize) -> String {
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

    fn input(ratio: f64, low: f64, high: f64, p: f64) -> VerdictInput<'static> {
        VerdictInput {
            ratio,
            low,
            high,
            p_adjusted: p,
            runs_baseline: 6,
            runs_variant: 6,
            family: 1,
            gate: Gate::Primary,
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
        let unstated = |i: VerdictInput<'static>| VerdictInput {
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
        // 4 vs 4 and a clear 10% change: the primary metric, tested alone, can pass (2/70 <
        // 0.05); a metric in a Holm family of two after it cannot (2 × 2/70).
        let clear = |family, gate, p| VerdictInput {
            runs_baseline: 4,
            runs_variant: 4,
            family,
            gate,
            ..input(1.10, 1.05, 1.15, p)
        };
        assert_eq!(decide(&clear(1, Gate::Primary, 0.029)), Verdict::Regressed);
        let after = Gate::After {
            primary: "fps",
            primary_p: 0.029,
        };
        match decide(&clear(2, after, 0.057)) {
            Verdict::Inconclusive { reason, more_runs } => {
                assert!(reason.contains("2 metrics tested after"), "{reason}");
                assert!(reason.contains("at least 5 runs a side"), "{reason}");
                assert_eq!(more_runs, Some(1));
            }
            v => panic!("{v:?}"),
        }
        // One metric after an open gate: Holm over one is its own p.
        assert_eq!(decide(&clear(1, after, 0.029)), Verdict::Regressed);
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
    fn a_shut_gate_says_the_primary_did_not_change_and_how_to_test_this_one() {
        // CPU 20% higher with p 0.002 on its own, but fps (the primary) did not move: the
        // adjusted p is the primary's, and the reason says what to do.
        let cpu = VerdictInput {
            gate: Gate::After {
                primary: "fps",
                primary_p: 0.394,
            },
            family: 3,
            ..input(1.20, 1.15, 1.25, 0.394)
        };
        match decide(&cpu) {
            Verdict::Inconclusive { reason, more_runs } => {
                assert!(reason.contains("primary metric, fps"), "{reason}");
                assert!(reason.contains("p = 0.394"), "{reason}");
                assert!(reason.contains("first with --show"), "{reason}");
                assert_eq!(more_runs, None);
            }
            v => panic!("{v:?}"),
        }
        // Equivalent is still said: it needs no p-value.
        let flat = VerdictInput {
            ratio: 1.0,
            low: 0.99,
            high: 1.01,
            ..cpu
        };
        assert_eq!(decide(&flat), Verdict::Equivalent);
    }

    #[test]
    fn no_number_of_runs_is_advised_past_any_practical_one() {
        // 4 runs a side behind a primary metric, Holm needing more: an estimate of about
        // 2000 runs was printed as "about 1 more run a side".
        let cpu = VerdictInput {
            runs_baseline: 4,
            runs_variant: 4,
            family: 3,
            gate: Gate::After {
                primary: "fps",
                primary_p: 0.01,
            },
            ..input(1.026, 0.906, 1.181, 0.2)
        };
        assert!(matches!(estimate_more_runs(&cpu, 4), MoreRuns::Impractical));
        match decide(&cpu) {
            Verdict::Inconclusive { more_runs, .. } => assert_eq!(more_runs, None),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn unusable_intervals() {
        let v = decide(&input(f64::INFINITY, f64::INFINITY, f64::INFINITY, 0.01));
        assert!(matches!(v, Verdict::Inconclusive { .. }), "{v:?}");
        assert_eq!(more_runs(&input(1.02, 1.0, 1.04, 0.5), 6), None);
    }
}
