//! The comparison itself: per group of parameter values, each variant against the
//! baseline on every metric (medians, spread, ratio and interval, p adjusted by
//! fixed-sequence gatekeeping (`crate::stats::gatekeeping`, docs/metrics.md), verdict), the step-by-step table for more than two variants, the sweep table, the
//! headlines. Pure: everything here works on runs already loaded.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::load::{Loaded, LoadedRun};
use super::metrics::{Metric, Unit};
use crate::experiment::RunStatus;
use crate::stats::mann_whitney::{mann_whitney, smallest_p, PMethod};
use crate::stats::quantile::median;
use crate::stats::seed::derive_seed;
use crate::stats::verdict::MIN_RUNS_FOR_VERDICT;
use crate::stats::{
    bootstrap_ratio, decide, gatekeep, runs_for_significance, significance_reachable,
    BootstrapOptions, Gate, RatioInterval, RunValue, Verdict, VerdictInput,
};

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

/// The comparison of loaded runs with `metrics` already chosen. `baseline_combo`: in a
/// sweep of one variant, the parameter values every other value is compared with.
pub fn compute(
    loaded: &Loaded,
    metrics: Vec<Metric>,
    baseline: String,
    baseline_combo: Option<BTreeMap<String, String>>,
    options: &CompareOptions,
    notes: Vec<String>,
    sources: Vec<String>,
) -> Comparison {
    let measured = |r: &&LoadedRun| r.status == RunStatus::Ok && r.data.is_some();
    let combos = combinations(loaded);
    let headline = primary_metric(&metrics, options);
    let baseline_params = baseline_combo
        .as_ref()
        .map(describe_params)
        .unwrap_or_default();
    let mut groups = Vec::new();
    let mut holm_notes: Vec<String> = Vec::new();
    for combo in &combos {
        let runs_here = |variant: &str| runs_of(loaded, variant, combo);
        let label = describe_params(combo);
        let mut comparisons = Vec::new();
        let pair = |variant: &str, base_runs, var_runs| Pair {
            variant: variant.to_owned(),
            baseline: baseline.clone(),
            baseline_params: if baseline_combo.is_some() {
                baseline_params.clone()
            } else {
                String::new()
            },
            seed_label: format!("{label}|{baseline_params}|{baseline}|{variant}"),
            base_runs,
            var_runs,
        };
        match &baseline_combo {
            // A sweep of one variant: this value against the baseline value.
            Some(base_combo) if base_combo != combo => {
                let variant = &loaded.variants[0];
                let (b, v) = (runs_of(loaded, variant, base_combo), runs_here(variant));
                if !b.is_empty() && !v.is_empty() {
                    comparisons.push(compare_or_list(
                        &pair(variant, b, v),
                        &metrics,
                        options,
                        headline.as_deref(),
                        &mut holm_notes,
                    ));
                }
            }
            Some(_) => {}
            None => {
                let base_runs = runs_here(&baseline);
                for variant in loaded.variants.iter().filter(|v| **v != baseline) {
                    let var_runs = runs_here(variant);
                    if var_runs.is_empty() || base_runs.is_empty() {
                        continue;
                    }
                    comparisons.push(compare_or_list(
                        &pair(variant, base_runs.clone(), var_runs),
                        &metrics,
                        options,
                        headline.as_deref(),
                        &mut holm_notes,
                    ));
                }
            }
        }
        let steps = match headline
            .as_deref()
            .and_then(|k| metrics.iter().find(|m| m.key == k))
        {
            Some(metric) if loaded.variants.len() > 2 => {
                steps(metric, loaded, combo, &baseline, options, &label)
            }
            _ => Vec::new(),
        };
        let worst = loaded
            .variants
            .iter()
            .filter_map(|v| worst_of(v, &runs_here(v)))
            .collect();
        groups.push(Group {
            params: combo.clone(),
            label,
            comparisons,
            steps,
            worst,
        });
    }
    // The sweep shows the headline metric, or every metric `--show` named.
    let sweep_metrics: Vec<&Metric> = if options.metrics.is_empty() {
        headline
            .as_deref()
            .and_then(|k| metrics.iter().find(|m| m.key == k))
            .into_iter()
            .collect()
    } else {
        metrics.iter().collect()
    };
    let sweeps = if loaded.param_keys.is_empty() {
        Vec::new()
    } else {
        sweep_metrics
            .into_iter()
            .map(|m| sweep(m, &groups, loaded, &baseline, &baseline_params))
            .collect()
    };
    let mut runs = BTreeMap::new();
    for r in loaded.runs.iter().filter(measured) {
        *runs.entry(r.variant.clone()).or_insert(0) += 1;
    }
    let mut excluded: Vec<Excluded> = loaded
        .runs
        .iter()
        .filter(|r| r.status != RunStatus::Ok)
        .map(|r| Excluded {
            path: r.path.display().to_string(),
            run_id: r.run_id,
            variant: r.variant.clone(),
            params: describe_params(&r.params),
            metric: None,
            why: r.failure.clone().unwrap_or_else(|| r.status.name().into()),
        })
        .collect();
    excluded.extend(unread_metrics(loaded, &metrics));
    let mut notes = notes;
    if (groups.iter().flat_map(|g| &g.comparisons)).any(|c| c.one_run_a_side) {
        let single: Vec<&str> = (loaded.variants.iter())
            .filter(|v| combos.iter().any(|c| runs_of(loaded, v, c).len() == 1))
            .map(String::as_str)
            .collect();
        notes.push(super::side_by_side::note(&single));
    }
    for n in holm_notes {
        if !notes.contains(&n) {
            notes.push(n);
        }
    }
    let mut commands = BTreeMap::new();
    for r in &loaded.runs {
        let argv = loaded.templates.get(&r.variant).unwrap_or(&r.command);
        // An imported run has no command: its source file is said instead.
        let imported = (r.data.as_ref()).and_then(|d| d.imported_from.clone());
        let command = match imported {
            Some(source) if argv.is_empty() => source,
            _ => {
                shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "))
            }
        };
        commands.entry(r.variant.clone()).or_insert(command);
    }
    Comparison {
        commands,
        schema: SCHEMA.into(),
        sources,
        options: options.clone(),
        baseline,
        variants: loaded.variants.clone(),
        runs,
        param_keys: loaded.param_keys.clone(),
        baseline_params,
        headline_metric: headline.clone().unwrap_or_default(),
        primary_metric: headline.unwrap_or_default(),
        metrics,
        groups,
        sweeps,
        excluded,
        notes,
        pipeline: Vec::new(),
        histograms: Vec::new(),
    }
}

/// The combinations of parameter values the measured runs have, in the order the
/// experiment listed the values.
pub fn combinations(loaded: &Loaded) -> Vec<BTreeMap<String, String>> {
    let mut combos: Vec<BTreeMap<String, String>> = Vec::new();
    for r in loaded
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Ok && r.data.is_some())
    {
        if !combos.contains(&r.params) {
            combos.push(r.params.clone());
        }
    }
    let rank = |combo: &BTreeMap<String, String>| -> Vec<usize> {
        loaded
            .param_keys
            .iter()
            .map(|k| {
                let v = combo.get(k);
                loaded
                    .param_values
                    .get(k)
                    .and_then(|vs| v.and_then(|v| vs.iter().position(|x| x == v)))
                    .unwrap_or(usize::MAX)
            })
            .collect()
    };
    combos.sort_by_key(|c| rank(c));
    combos
}

/// Measured runs whose metric from output could not be read: excluded from that metric
/// only, and listed with the reason.
fn unread_metrics(loaded: &Loaded, metrics: &[Metric]) -> Vec<Excluded> {
    let mut out = Vec::new();
    for r in loaded.runs.iter().filter(|r| r.status == RunStatus::Ok) {
        let Some(data) = &r.data else {
            continue;
        };
        for metric in metrics {
            let super::metrics::Kind::Output { name } = &metric.kind else {
                continue;
            };
            if let Some(failure) = data
                .output_metrics
                .iter()
                .find(|m| &m.name == name)
                .and_then(|m| m.failure.clone())
            {
                out.push(Excluded {
                    path: r.path.display().to_string(),
                    run_id: r.run_id,
                    variant: r.variant.clone(),
                    params: describe_params(&r.params),
                    metric: Some(name.clone()),
                    why: failure,
                });
            }
        }
    }
    out
}

/// The comparison of a pair, or, where a side has a single measured run, the two side by
/// side (one run allows no interval or verdict), each row with its difference.
fn compare_or_list(
    pair: &Pair,
    metrics: &[Metric],
    options: &CompareOptions,
    headline: Option<&str>,
    holm_notes: &mut Vec<String>,
) -> VariantComparison {
    let mut comparison = if pair.base_runs.len() < 2 || pair.var_runs.len() < 2 {
        super::side_by_side::side_by_side(pair, metrics, headline)
    } else {
        compare_pair(pair, metrics, options, headline, holm_notes)
    };
    for row in &mut comparison.rows {
        row.difference = difference(row.variant.as_ref(), row.baseline.as_ref());
    }
    comparison
}

/// variant median − baseline median.
fn difference(variant: Option<&Summary>, baseline: Option<&Summary>) -> Option<f64> {
    Some(variant?.median - baseline?.median)
}

/// One comparison to make: a variant's runs against the baseline's.
pub(super) struct Pair<'a> {
    pub variant: String,
    pub baseline: String,
    pub baseline_params: String,
    seed_label: String,
    pub base_runs: Vec<&'a LoadedRun>,
    pub var_runs: Vec<&'a LoadedRun>,
}

fn compare_pair(
    pair: &Pair,
    metrics: &[Metric],
    options: &CompareOptions,
    headline: Option<&str>,
    holm_notes: &mut Vec<String>,
) -> VariantComparison {
    let mut rows = compare_metrics(
        metrics,
        &pair.base_runs,
        &pair.var_runs,
        options,
        &pair.seed_label,
    );
    let measured: Vec<&super::extract::RunData> = (pair.base_runs.iter())
        .chain(&pair.var_runs)
        .filter_map(|r| r.data.as_ref())
        .collect();
    let (hypothesis, merged) = super::identical::hypotheses(metrics, &measured);
    let primary = headline
        .and_then(|k| metrics.iter().position(|m| m.key == k))
        .unwrap_or(0);
    let p_values: Vec<f64> = (rows.iter())
        .map(|r| r.p_value.unwrap_or(f64::NAN))
        .collect();
    let gated = gatekeep(&p_values, &hypothesis, primary);
    let primary_label = metrics.get(primary).map_or("", |m| m.label.as_str());
    for (i, row) in rows.iter_mut().enumerate() {
        let p = gated.adjusted[i];
        row.p_holm = (!p.is_nan()).then_some(p);
        row.tested_as = (hypothesis[i] != i).then(|| metrics[hypothesis[i]].key.clone());
        let (gate, family) = if hypothesis[i] == hypothesis[primary] {
            (Gate::Primary, 1)
        } else {
            let after = Gate::After {
                primary: primary_label,
                primary_p: gated.primary_p,
            };
            (after, gated.later)
        };
        row.verdict = verdict_of(row, p, family, gate, options);
    }
    for m in &merged {
        holm_notes.push(format!(
            "{} is tested as {}, counted once: {}",
            metrics[m.metric].label, metrics[m.with].label, m.why
        ));
    }
    let (name, against) = if pair.baseline_params.is_empty() {
        (pair.variant.clone(), pair.baseline.clone())
    } else {
        (
            format!("{} at each value", pair.variant),
            pair.baseline_params.clone(),
        )
    };
    holm_notes.extend(gate_note(
        &name,
        &against,
        primary_label,
        pair.base_runs.len(),
        pair.var_runs.len(),
        gated.later,
        options.alpha,
    ));
    VariantComparison {
        variant: pair.variant.clone(),
        baseline: pair.baseline.clone(),
        baseline_params: pair.baseline_params.clone(),
        headline: headline_line(&pair.variant, &rows, headline),
        one_run_a_side: false,
        rows,
    }
}

/// The primary metric, the question asked first: the first `--show` (`metrics` are in its
/// order), else the command's own first metric from output (the honest throughput), else
/// fps, else the first metric shown.
fn primary_metric(metrics: &[Metric], options: &CompareOptions) -> Option<String> {
    let first_shown = (!options.metrics.is_empty())
        .then(|| metrics.first())
        .flatten();
    first_shown
        .or_else(|| {
            (metrics.iter()).find(|m| matches!(m.kind, super::metrics::Kind::Output { .. }))
        })
        .or_else(|| metrics.iter().find(|m| m.key == "fps"))
        .or_else(|| metrics.first())
        .map(|m| m.key.clone())
}

pub(super) fn values<'a>(metric: &Metric, runs: &[&'a LoadedRun]) -> Vec<RunValue<'a>> {
    runs.iter()
        .filter_map(|r| metric.value(r.data.as_ref()?))
        .filter(|v| !v.value().is_nan())
        .collect()
}

/// The coarsest resolution of `runs`' values of `metric`; `None` if any is unknown.
pub(super) fn resolution(metric: &Metric, runs: &[&LoadedRun]) -> Option<f64> {
    runs.iter()
        .filter_map(|r| r.data.as_ref())
        .filter(|d| metric.value(d).is_some())
        .map(|d| metric.resolution(d))
        .try_fold(None, |coarsest: Option<f64>, r| {
            let r = r?;
            Some(Some(coarsest.map_or(r, |c| c.max(r))))
        })
        .flatten()
}

pub(super) fn summary(metric: &Metric, values: &[RunValue]) -> Option<Summary> {
    let shown: Vec<f64> = values
        .iter()
        .map(|v| metric.display_value(v.value()))
        .collect();
    let mid = median(&shown)?;
    let deviations: Vec<f64> = shown.iter().map(|v| (v - mid).abs()).collect();
    let mad = median(&deviations).unwrap_or(0.0);
    Some(Summary {
        runs: shown.len(),
        median: mid,
        spread_pct: if mid != 0.0 {
            1.4826 * mad / mid.abs() * 100.0
        } else {
            0.0
        },
        min: shown.iter().copied().fold(f64::INFINITY, f64::min),
        max: shown.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        resolution: None,
    })
}

fn bootstrap_options(options: &CompareOptions, label: &str) -> BootstrapOptions {
    BootstrapOptions {
        resamples: options.resamples,
        seed: derive_seed(options.seed, label),
        ..BootstrapOptions::default()
    }
}

/// Every metric's row, the metrics shared out over the cores: each bootstrap is
/// independent and seeded by its own label, so the result does not depend on the split.
fn compare_metrics(
    metrics: &[Metric],
    base_runs: &[&LoadedRun],
    var_runs: &[&LoadedRun],
    options: &CompareOptions,
    seed_label: &str,
) -> Vec<Row> {
    crate::parallel::map(metrics.iter().collect(), usize::MAX, |m| {
        compare_metric(m, base_runs, var_runs, options, seed_label)
    })
}

/// The label a metric's resampling is seeded by: its key, except that `cores` is `load` ÷ 100
/// and must show the same interval, so it resamples as `load` does.
fn resampling_key(metric: &Metric) -> String {
    match metric.key.strip_prefix("cores") {
        Some(role) if role.is_empty() || role.starts_with('.') => format!("load{role}"),
        _ => metric.key.clone(),
    }
}

fn compare_metric(
    metric: &Metric,
    base_runs: &[&LoadedRun],
    var_runs: &[&LoadedRun],
    options: &CompareOptions,
    seed_label: &str,
) -> Row {
    let (b, v) = (values(metric, base_runs), values(metric, var_runs));
    let numbers = |vals: &[RunValue]| -> Vec<f64> { vals.iter().map(RunValue::value).collect() };
    let test = mann_whitney(&numbers(&v), &numbers(&b));
    let ratio = if b.is_empty() || v.is_empty() {
        None
    } else {
        bootstrap_ratio(
            &b,
            &v,
            &bootstrap_options(options, &format!("{seed_label}|{}", resampling_key(metric))),
        )
    };
    Row {
        metric: metric.key.clone(),
        label: metric.label.clone(),
        unit: metric.unit.clone(),
        direction: metric.direction,
        baseline: summary(metric, &b).map(|s| Summary {
            resolution: resolution(metric, base_runs),
            ..s
        }),
        variant: summary(metric, &v).map(|s| Summary {
            resolution: resolution(metric, var_runs),
            ..s
        }),
        ratio,
        difference: None,
        u: test.map(|t| t.u),
        p_value: test.map(|t| t.p_value),
        p_method: test.map(|t| t.method),
        p_holm: None,
        tested_as: None,
        verdict: Verdict::Equivalent,
    }
}

fn verdict_of(
    row: &Row,
    p_adjusted: f64,
    family: usize,
    gate: Gate,
    options: &CompareOptions,
) -> Verdict {
    let (Some(ratio), Some(b), Some(v)) = (row.ratio, &row.baseline, &row.variant) else {
        return Verdict::Inconclusive {
            reason: "a side has no value of this metric".into(),
            more_runs: None,
        };
    };
    decide(&VerdictInput {
        ratio: ratio.ratio,
        low: ratio.low,
        high: ratio.high,
        p_adjusted,
        runs_baseline: b.runs,
        runs_variant: v.runs,
        family,
        gate,
        direction: row.direction,
        alpha: options.alpha,
        noise: options.noise,
    })
}

/// A note when the runs are too few for improved or regressed on the metrics tested after
/// the primary one (`later` hypotheses, Holm-corrected among themselves).
fn gate_note(
    variant: &str,
    baseline: &str,
    primary: &str,
    runs_base: usize,
    runs_var: usize,
    later: usize,
    alpha: f64,
) -> Option<String> {
    let best = smallest_p(runs_base, runs_var) * later as f64;
    (later > 0 && !significance_reachable(runs_base, runs_var, later, alpha)).then(|| {
        format!(
            "{variant} vs {baseline}: {primary}, the primary metric, is tested alone at α = {alpha} (improved or regressed from {MIN_RUNS_FOR_VERDICT} runs a side); with {runs_base} vs {runs_var} runs no p-value of the {later} metrics tested after it can pass Holm's correction among them (the smallest possible is {:.3}): they need at least {} runs a side for improved or regressed (equivalent {MIN_RUNS_FOR_VERDICT}), or name fewer with --show",
            best.min(1.0),
            runs_for_significance(later, alpha)
        )
    })
}

/// The measured runs of one variant at one combination of parameter values.
fn runs_of<'a>(
    loaded: &'a Loaded,
    variant: &str,
    combo: &BTreeMap<String, String>,
) -> Vec<&'a LoadedRun> {
    loaded
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Ok && r.data.is_some())
        .filter(|r| r.variant == variant && &r.params == combo)
        .collect()
}

fn steps(
    metric: &Metric,
    loaded: &Loaded,
    combo: &BTreeMap<String, String>,
    baseline: &str,
    options: &CompareOptions,
    label: &str,
) -> Vec<StepRow> {
    let mut rows = Vec::new();
    let mut previous: Option<&str> = None;
    for variant in &loaded.variants {
        let runs = runs_of(loaded, variant, combo);
        let v = values(metric, &runs);
        let Some(s) = summary(metric, &v) else {
            continue;
        };
        let against = |other: &str| {
            let o = values(metric, &runs_of(loaded, other, combo));
            if o.len() < 2 || v.len() < 2 {
                return point_ratio(&o, &v);
            }
            bootstrap_ratio(
                &o,
                &v,
                &bootstrap_options(
                    options,
                    &format!("{label}|{other}|{variant}|{}", metric.key),
                ),
            )
        };
        let difference_from = |other: &str| {
            let o = summary(metric, &values(metric, &runs_of(loaded, other, combo)))?;
            Some(s.median - o.median)
        };
        rows.push(StepRow {
            variant: variant.clone(),
            median: s.median,
            resolution: resolution(metric, &runs),
            step: previous.and_then(against),
            cumulative: (variant != baseline).then(|| against(baseline)).flatten(),
            step_difference: previous.and_then(difference_from),
            cumulative_difference: (variant != baseline)
                .then(|| difference_from(baseline))
                .flatten(),
        });
        previous = Some(variant);
    }
    rows
}

fn worst_of(variant: &str, runs: &[&LoadedRun]) -> Option<Worst> {
    runs.iter()
        .filter_map(|r| {
            let (frame, total) = r.data.as_ref()?.worst_frame?;
            Some(Worst {
                variant: variant.to_owned(),
                total_us: total as f64 / 1e3,
                run_id: r.run_id,
                frame,
            })
        })
        .max_by(|a, b| a.total_us.total_cmp(&b.total_us))
}

/// The sweep table of one metric: a row per combination of parameter values, the median
/// of each variant, and each change with its interval and verdict (against the baseline
/// variant at those values, or, in a sweep of one variant, against `baseline_params`).
fn sweep(
    metric: &Metric,
    groups: &[Group],
    loaded: &Loaded,
    baseline: &str,
    baseline_params: &str,
) -> Sweep {
    let others: Vec<&String> = loaded.variants.iter().filter(|v| *v != baseline).collect();
    let mut order = vec![baseline.to_owned()];
    order.extend(others.iter().map(|s| s.to_string()));
    let change = |c: &VariantComparison| {
        let r = c.rows.iter().find(|r| r.metric == metric.key)?;
        Some(SweepChange {
            ratio: r.ratio?,
            difference: difference(r.variant.as_ref(), r.baseline.as_ref()),
            verdict: if c.one_run_a_side {
                String::new()
            } else {
                r.verdict.word().to_owned()
            },
        })
    };
    let rows = groups
        .iter()
        .map(|g| {
            let median_of = |variant: &str| {
                summary(
                    metric,
                    &values(metric, &runs_of(loaded, variant, &g.params)),
                )
                .map(|s| s.median)
            };
            let medians = order.iter().map(|v| median_of(v)).collect();
            let changes = if baseline_params.is_empty() {
                others
                    .iter()
                    .map(|v| {
                        g.comparisons
                            .iter()
                            .find(|c| &c.variant == *v)
                            .and_then(change)
                    })
                    .collect()
            } else {
                vec![g.comparisons.first().and_then(change)]
            };
            SweepRow {
                params: g.label.clone(),
                medians,
                changes,
            }
        })
        .collect();
    let all_runs: Vec<&LoadedRun> = loaded
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Ok && r.data.is_some())
        .collect();
    Sweep {
        metric: metric.key.clone(),
        label: metric.label.clone(),
        unit: metric.unit.clone(),
        variants: order,
        baseline_params: baseline_params.to_owned(),
        rows,
        resolution: resolution(metric, &all_runs),
    }
}

/// The ratio of the medians of one run a side: no interval (`low` and `high` NaN).
pub(super) fn point_ratio(baseline: &[RunValue], variant: &[RunValue]) -> Option<RatioInterval> {
    let middle = |runs: &[RunValue]| median(&runs.iter().map(RunValue::value).collect::<Vec<_>>());
    let ratio = crate::stats::bootstrap::ratio_of(middle(variant)?, middle(baseline)?);
    Some(RatioInterval {
        ratio,
        low: f64::NAN,
        high: f64::NAN,
    })
}

/// "1.32× fps [1.27, 1.36]" for a rate, "−27% [−31, −22]" for the rest; without an
/// interval (one run a side), "1.32× fps" and "total p99 −27%".
pub fn effect_text(row: &Row) -> Option<String> {
    let r = row.ratio?;
    if r.low.is_nan() {
        return Some(if row.unit == Unit::Fps {
            format!("{}× {}", fixed(r.ratio, 2), row.label)
        } else {
            format!("{} {}", row.label, signed_pct(r.ratio, 0))
        });
    }
    Some(if row.unit == Unit::Fps {
        format!(
            "{}× {} [{}, {}]",
            fixed(r.ratio, 2),
            row.label,
            fixed(r.low, 2),
            fixed(r.high, 2)
        )
    } else {
        format!(
            "{} {} [{}, {}]",
            row.label,
            signed_pct(r.ratio, 0),
            signed_pct(r.low, 0).trim_end_matches('%'),
            signed_pct(r.high, 0).trim_end_matches('%')
        )
    })
}

/// "v2: 1.32× fps [1.27, 1.36], total p99 −27% [−31, −22], regressed: none".
fn headline_line(variant: &str, rows: &[Row], headline: Option<&str>) -> String {
    let mut parts = headline_effects(rows, headline);
    let regressed: Vec<&str> = rows
        .iter()
        .filter(|r| r.verdict == Verdict::Regressed)
        .map(|r| r.label.as_str())
        .collect();
    let improved = rows
        .iter()
        .filter(|r| r.verdict == Verdict::Improved)
        .count();
    parts.push(format!("improved: {improved}"));
    parts.push(format!(
        "regressed: {}",
        if regressed.is_empty() {
            "none".to_owned()
        } else {
            regressed.join(", ")
        }
    ));
    format!("{variant}: {}", parts.join(", "))
}

/// The headline metric's change and one more (total p99, CPU per frame, wall or CPU).
pub(super) fn headline_effects(rows: &[Row], headline: Option<&str>) -> Vec<String> {
    let mut wanted: Vec<&str> = Vec::new();
    if let Some(h) = headline {
        wanted.push(h);
    }
    for key in ["total.p99", "cpu_per_frame", "wall", "cpu"] {
        if wanted.len() < 2 && rows.iter().any(|r| r.metric == key) && !wanted.contains(&key) {
            wanted.push(key);
        }
    }
    wanted
        .into_iter()
        .filter_map(|key| rows.iter().find(|r| r.metric == key).and_then(effect_text))
        .collect()
}

/// A ratio as a signed percentage change with a true minus sign: "+3.2%", "−27%".
pub fn signed_pct(ratio: f64, decimals: usize) -> String {
    if !ratio.is_finite() {
        return "+∞%".into();
    }
    let pct = (ratio - 1.0) * 100.0;
    let text = format!("{:.*}", decimals, pct.abs());
    let zero = text.chars().all(|c| c == '0' || c == '.');
    let sign = if zero {
        "±"
    } else if pct < 0.0 {
        "−"
    } else {
        "+"
    };
    format!("{sign}{text}%")
}

pub fn fixed(v: f64, decimals: usize) -> String {
    if v.is_infinite() {
        return "∞".into();
    }
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_percentages_use_a_true_minus() {
        assert_eq!(signed_pct(0.73, 0), "−27%");
        assert_eq!(signed_pct(1.032, 1), "+3.2%");
        assert_eq!(signed_pct(1.0001, 1), "±0.0%");
        assert_eq!(signed_pct(f64::INFINITY, 1), "+∞%");
    }

    #[test]
    fn cores_resample_as_load_does() {
        let metric = |key: &str| Metric {
            key: key.into(),
            label: key.into(),
            unit: Unit::Cores,
            direction: crate::stats::Direction::LowerIsBetter,
            kind: crate::compare::metrics::Kind::Cores,
        };
        assert_eq!(resampling_key(&metric("cores")), "load");
        assert_eq!(resampling_key(&metric("cores.decoderd")), "load.decoderd");
        assert_eq!(resampling_key(&metric("coresmith")), "coresmith");
        assert_eq!(resampling_key(&metric("fps")), "fps");
    }

    #[test]
    fn runs_needed_for_holm() {
        // One metric: 4 a side reach 2/70 ≈ 0.029.
        assert_eq!(runs_for_significance(1, 0.05), 4);
        // Two metrics: 4 a side give 0.057, 5 give 0.016; six metrics: 6 · 2/252 ≈ 0.048.
        assert_eq!(runs_for_significance(2, 0.05), 5);
        assert_eq!(runs_for_significance(6, 0.05), 5);
        assert_eq!(runs_for_significance(7, 0.05), 6);
        // Fourteen metrics: 6 a side give 14 · 2/924 ≈ 0.030; 24 need 7 (24 · 2/924 ≈ 0.052).
        assert_eq!(runs_for_significance(14, 0.05), 6);
        assert_eq!(runs_for_significance(23, 0.05), 6);
        assert_eq!(runs_for_significance(24, 0.05), 7);
        let note = gate_note("b", "a", "fps", 4, 4, 14, 0.05).unwrap();
        assert!(note.contains("at least 6 runs"), "{note}");
        assert!(note.contains("fps, the primary metric"), "{note}");
        assert!(gate_note("b", "a", "fps", 6, 6, 14, 0.05).is_none());
    }
}
