//! What a comparison holds, in every format: the options it ran with, per group and variant
//! a row per metric (medians, spread, ratio, interval, p, verdict), the step and sweep
//! tables, the runs left out. Data only; `compute` fills it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::metrics::{Metric, Unit};
use crate::stats::mann_whitney::PMethod;
use crate::stats::{RatioInterval, Verdict};

/// `framelab compare`'s settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareOptions {
    pub baseline: Option<String>,
    /// `--baseline-value`: in a sweep of one variant, the parameter values every other
    /// value is compared with (`V`, or `KEY=V` per key); empty for the first values.
    #[serde(default)]
    pub baseline_values: Vec<String>,
    /// `--show` names; empty for the default set.
    pub metrics: Vec<String>,
    /// Half-width of the noise band (0.02 = ±2%).
    pub noise: f64,
    pub alpha: f64,
    pub resamples: usize,
    pub seed: u64,
    /// `--below`: shares of imported histograms' values below these (histogram-only runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub below: Vec<crate::hist::bounds::Threshold>,
    /// `--above`: shares at or above these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub above: Vec<crate::hist::bounds::Threshold>,
    /// `--unit`: the unit of imported histograms whose name does not say it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            baseline: None,
            baseline_values: Vec::new(),
            metrics: Vec::new(),
            noise: 0.02,
            alpha: 0.05,
            resamples: 10_000,
            seed: 0x5eed,
            below: Vec::new(),
            above: Vec::new(),
            unit: None,
        }
    }
}

/// A variant's runs of one group, summarised for one metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub runs: usize,
    /// Median across runs, in the metric's display unit (µs for times).
    pub median: f64,
    /// 1.4826 × median absolute deviation, as % of the median: a robust coefficient of
    /// variation across runs.
    pub spread_pct: f64,
    pub min: f64,
    pub max: f64,
    /// The coarsest resolution of the runs' values (CPU figures), in the display unit:
    /// tables print no finer. `None` when unknown or not a CPU figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<f64>,
}

/// One metric, one variant against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub metric: String,
    pub label: String,
    pub unit: Unit,
    pub direction: crate::stats::Direction,
    pub baseline: Option<Summary>,
    pub variant: Option<Summary>,
    /// variant ÷ baseline of the medians, with the 95% interval (with one run a side, no
    /// interval: `low` and `high` are NaN, null in JSON).
    pub ratio: Option<RatioInterval>,
    /// variant median − baseline median, in the medians' unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<f64>,
    pub u: Option<f64>,
    pub p_value: Option<f64>,
    pub p_method: Option<PMethod>,
    /// Adjusted by fixed-sequence gatekeeping (docs/metrics.md): for the primary metric its
    /// own p; for the others max(the primary's p, Holm's correction among them). The name
    /// is kept from schema 2, when it was Holm's correction across every metric.
    pub p_holm: Option<f64>,
    /// The metric this one is one measurement with by construction (a single stage's
    /// percentile and the total's; fps and wall at a fixed frame count): tested once, as it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tested_as: Option<String>,
    #[serde(flatten)]
    pub verdict: Verdict,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantComparison {
    pub variant: String,
    pub baseline: String,
    /// In a sweep of one variant: the parameter values this group is compared with
    /// (`res=720p`); empty when variants are compared at the same values.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub baseline_params: String,
    pub headline: String,
    /// A side has a single measured run: the rows hold both values and the change, with
    /// no interval, p-value or verdict.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_run_a_side: bool,
    pub rows: Vec<Row>,
}

/// Step-by-step benefit of variants in order (more than two variants).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    pub variant: String,
    pub median: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<f64>,
    /// Against the variant before it; `None` for the first.
    pub step: Option<RatioInterval>,
    /// Against the baseline; `None` for the baseline.
    pub cumulative: Option<RatioInterval>,
    /// The median − the previous variant's (`None` for the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_difference: Option<f64>,
    /// The median − the baseline's (`None` for the baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cumulative_difference: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Parameter values of this group (empty without parameters).
    pub params: BTreeMap<String, String>,
    pub label: String,
    pub comparisons: Vec<VariantComparison>,
    /// For the headline metric, when more than two variants.
    pub steps: Vec<StepRow>,
    /// Per variant: (name, runs measured, worst frame total µs with run and frame id).
    pub worst: Vec<Worst>,
}

/// The worst frame of a variant: shown, never used for a verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Worst {
    pub variant: String,
    pub total_us: f64,
    pub run_id: i64,
    pub frame: u64,
}

/// A change in a sweep table: the ratio of medians with its 95% interval, and the verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepChange {
    #[serde(flatten)]
    pub ratio: RatioInterval,
    /// The median − the one it is compared with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<f64>,
    pub verdict: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    pub params: String,
    /// Per variant in order: the median of the sweep metric (None when absent).
    pub medians: Vec<Option<f64>>,
    /// Per variant after the baseline, its change against the baseline at these values;
    /// in a sweep of one variant, one change: against the baseline values (`None` on the
    /// baseline values' own row).
    pub changes: Vec<Option<SweepChange>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    pub metric: String,
    pub label: String,
    pub unit: Unit,
    pub variants: Vec<String>,
    /// In a sweep of one variant, the values the changes are against (`res=720p`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub baseline_params: String,
    pub rows: Vec<SweepRow>,
    /// The coarsest resolution of every run's value (see `Summary::resolution`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Excluded {
    pub path: String,
    pub run_id: i64,
    pub variant: String,
    pub params: String,
    /// Excluded from this metric only (a metric from output it could not read); `None`:
    /// the whole run is excluded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    pub why: String,
}

/// Everything a comparison shows, in every format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub schema: String,
    pub sources: Vec<String>,
    pub options: CompareOptions,
    pub baseline: String,
    pub variants: Vec<String>,
    /// Each variant's command (of its first run; parameter values differ across groups).
    pub commands: BTreeMap<String, String>,
    /// Measured runs per variant (all groups).
    pub runs: BTreeMap<String, usize>,
    pub param_keys: Vec<String>,
    /// In a sweep of one variant: the parameter values the others are compared with.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub baseline_params: String,
    /// The metric of headlines and steps (and of the sweep, unless `--show` names more):
    /// the primary metric.
    pub headline_metric: String,
    /// The metric tested first, at the full α: the first `--show`, else the first metric
    /// from output (`--metric`), else fps, else the first shown. The others are tested
    /// only once it changed (fixed-sequence gatekeeping, docs/metrics.md).
    #[serde(default)]
    pub primary_metric: String,
    pub metrics: Vec<Metric>,
    pub groups: Vec<Group>,
    /// One per metric shown in the sweep table: the headline metric, or every `--show` one.
    pub sweeps: Vec<Sweep>,
    pub excluded: Vec<Excluded>,
    /// Fingerprint differences and other things to know before trusting the numbers.
    pub notes: Vec<String>,
    /// Why each variant differs from the baseline in stages, waits and bottleneck.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pipeline: Vec<String>,
    /// Runs of imported histograms only: each histogram both sides hold, compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histograms: Vec<super::histograms::HistogramComparison>,
}

/// 2: `sweep` became `sweeps` (one per metric), sweep changes carry their interval,
/// `baseline_params` for sweeps of one variant, per-metric `excluded` entries, units of
/// metrics from output as given.
/// 3: `p_holm` is the p adjusted by fixed-sequence gatekeeping, `primary_metric`, rows'
/// `tested_as`.
pub const SCHEMA: &str = "framelab.compare/3";

pub fn describe_params(params: &BTreeMap<String, String>) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}
