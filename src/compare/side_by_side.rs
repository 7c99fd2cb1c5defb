//! A comparison where a side has a single measured run (the usual before/after of one run
//! each): both values of every metric and the change, with no interval, p-value or
//! verdict, since one run says nothing of how much a run varies.

use super::comparison::{Row, Summary, VariantComparison};
use super::effect::headline_effects;
use super::metrics::Metric;
use super::pair::{point_ratio, resolution, summary, values, Pair};
use crate::stats::Verdict;

/// Why a row of one run a side has no verdict (the CSV's and JSON's `reason`).
pub const NO_VERDICT: &str = "one run a side: no interval or verdict";

/// The note a comparison with one run a side prints once.
pub fn note(variants: &[&str]) -> String {
    format!(
        "{} {} a single measured run: the tables show both values, the difference and the \
         change, with no interval, p-value or verdict (record 2 runs a side for an interval, \
         4 for a verdict)",
        variants.join(", "),
        if variants.len() == 1 { "has" } else { "have" }
    )
}

pub fn side_by_side(pair: &Pair, metrics: &[Metric], headline: Option<&str>) -> VariantComparison {
    let rows: Vec<Row> = metrics
        .iter()
        .map(|metric| {
            let (b, v) = (
                values(metric, &pair.base_runs),
                values(metric, &pair.var_runs),
            );
            let with_resolution = |s: Summary, runs| Summary {
                resolution: resolution(metric, runs),
                ..s
            };
            Row {
                metric: metric.key.clone(),
                label: metric.label.clone(),
                unit: metric.unit.clone(),
                direction: metric.direction,
                baseline: summary(metric, &b).map(|s| with_resolution(s, &pair.base_runs)),
                variant: summary(metric, &v).map(|s| with_resolution(s, &pair.var_runs)),
                ratio: point_ratio(&b, &v),
                difference: None,
                u: None,
                p_value: None,
                p_method: None,
                p_holm: None,
                tested_as: None,
                verdict: Verdict::Inconclusive {
                    reason: NO_VERDICT.into(),
                    more_runs: None,
                },
            }
        })
        .collect();
    let mut parts = headline_effects(&rows, headline);
    parts.push("one run a side, no verdict".into());
    VariantComparison {
        variant: pair.variant.clone(),
        baseline: pair.baseline.clone(),
        baseline_params: pair.baseline_params.clone(),
        headline: format!("{}: {}", pair.variant, parts.join(", ")),
        one_run_a_side: true,
        rows,
    }
}
