//! One variant's runs against the baseline's, metric by metric: their values, the summary
//! of each side and, with one run a side, the plain ratio of the two (no interval).

use super::comparison::Summary;
use super::load::LoadedRun;
use super::metrics::Metric;
use crate::stats::quantile::median;
use crate::stats::{RatioInterval, RunValue};

/// One comparison to make: a variant's runs against the baseline's.
pub(super) struct Pair<'a> {
    pub variant: String,
    pub baseline: String,
    pub baseline_params: String,
    pub seed_label: String,
    pub base_runs: Vec<&'a LoadedRun>,
    pub var_runs: Vec<&'a LoadedRun>,
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
