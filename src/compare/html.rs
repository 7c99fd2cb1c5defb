//! The plots of `framelab compare --format html`: per metric a forest plot (each variant's
//! change of the median against the baseline with its 95% interval, and every run as a
//! dot), the sweep tables as lines, and the variants' stage distributions overlaid. They
//! go in the comparison's document (`super::document`, whose words and tables the page
//! shows as text and Markdown do), rendered by `render::html_writer`.

use super::comparison::Comparison;
use super::load::Loaded;
use super::metrics::Metric;
use crate::analyze::stats::percentile_of;
use crate::experiment::RunStatus;
use crate::render::plot::{Forest, ForestRow, Plot, StageOverlay, SweepLines};
use crate::report::html::{percentile_grid, round};

/// Bump when a key is renamed, removed or changes meaning: version 2 has the comparison's
/// document (`blocks`: what text and Markdown show) for the version 1's own title, method
/// line, commands, verdict rows and notes.
pub const SCHEMA: &str = "framelab.html-compare/2";

/// The comparison's plots: the variants' colours, a forest per metric, the sweeps as
/// lines, the stage distributions overlaid.
pub fn plots(c: &Comparison, loaded: &Loaded) -> Vec<Plot> {
    let name = |s: &str| crate::display::name(s).into_owned();
    let sweeps = (c.sweeps.iter())
        .map(|s| SweepLines {
            label: s.label.clone(),
            unit: s.unit.key().to_owned(),
            params: s.rows.iter().map(|r| r.params.clone()).collect(),
            lines: (s.variants.iter().enumerate())
                .map(|(k, v)| {
                    let ys = s.rows.iter().map(|r| r.medians.get(k).copied().flatten());
                    (name(v), ys.collect())
                })
                .collect(),
        })
        .collect();
    vec![
        Plot::Variants {
            baseline: name(&c.baseline),
            variants: c.variants.iter().map(|v| name(v)).collect(),
        },
        Plot::Forests {
            noise_pct: c.options.noise * 100.0,
            forests: c.metrics.iter().map(|m| forest(m, c, loaded)).collect(),
        },
        Plot::Sweeps(sweeps),
        Plot::StageOverlays(stage_overlays(loaded, c.groups.first().map(|g| &g.params))),
    ]
}

/// The measured runs' values of `metric` for `variant` at `params`, in its display unit.
fn run_values(
    metric: &Metric,
    loaded: &Loaded,
    variant: &str,
    params: &std::collections::BTreeMap<String, String>,
) -> Vec<f64> {
    (loaded.runs.iter())
        .filter(|r| r.variant == variant && &r.params == params && r.status == RunStatus::Ok)
        .filter_map(|r| metric.value(r.data.as_ref()?))
        .map(|v| metric.display_value(v.value()))
        .filter(|v| v.is_finite())
        .collect()
}

fn forest(metric: &Metric, c: &Comparison, loaded: &Loaded) -> Forest {
    let mut rows = Vec::new();
    // In a sweep of one variant, every value is compared with the baseline's values: its
    // row comes first, once.
    let baseline_group = (!c.baseline_params.is_empty())
        .then(|| c.groups.iter().find(|g| g.label == c.baseline_params))
        .flatten();
    if let Some(g) = baseline_group {
        let base = (c.groups.iter())
            .flat_map(|g| &g.comparisons)
            .flat_map(|cmp| &cmp.rows)
            .find(|r| r.metric == metric.key)
            .and_then(|r| r.baseline.as_ref())
            .map(|s| s.median);
        rows.push(baseline_row(
            format!("{} [{}]", crate::display::name(&c.baseline), g.label),
            crate::display::name(&c.baseline).into_owned(),
            base,
            run_values(metric, loaded, &c.baseline, &g.params),
        ));
    }
    for g in &c.groups {
        let at = |v: &str| {
            if g.label.is_empty() {
                crate::display::name(v).into_owned()
            } else {
                format!("{} [{}]", crate::display::name(v), g.label)
            }
        };
        for (k, cmp) in g.comparisons.iter().enumerate() {
            let Some(row) = cmp.rows.iter().find(|r| r.metric == metric.key) else {
                continue;
            };
            let base = row.baseline.as_ref().map(|s| s.median);
            // The baseline's own row once per group, when it is measured at these values.
            if k == 0 && cmp.baseline_params.is_empty() {
                let runs = run_values(metric, loaded, &cmp.baseline, &g.params);
                let name = crate::display::name(&cmp.baseline).into_owned();
                rows.push(baseline_row(at(&cmp.baseline), name, base, runs));
            }
            let runs = run_values(metric, loaded, &cmp.variant, &g.params);
            rows.push(ForestRow {
                label: at(&cmp.variant),
                variant: crate::display::name(&cmp.variant).into_owned(),
                baseline: false,
                median: row.variant.as_ref().map(|s| s.median),
                baseline_median: base,
                ratio: row.ratio.map(|r| round(r.ratio, 5)),
                // One run a side: no interval.
                low: row.ratio.map(|r| round(r.low, 5)).filter(|x| x.is_finite()),
                high: row
                    .ratio
                    .map(|r| round(r.high, 5))
                    .filter(|x| x.is_finite()),
                verdict: row.verdict.word().into(),
                runs: per_median(runs, base),
            });
        }
    }
    Forest {
        metric: metric.key.clone(),
        label: crate::display::name(&metric.label).into_owned(),
        unit: metric.unit.key().to_owned(),
        higher_is_better: metric.direction == crate::stats::Direction::HigherIsBetter,
        rows,
    }
}

/// The baseline's own row: its runs against its median.
fn baseline_row(label: String, variant: String, median: Option<f64>, runs: Vec<f64>) -> ForestRow {
    ForestRow {
        label,
        variant,
        baseline: true,
        median,
        baseline_median: median,
        ratio: median.map(|_| 1.0),
        low: None,
        high: None,
        verdict: "baseline".into(),
        runs: per_median(runs, median),
    }
}

/// Each value ÷ `median` (none without a median, or of 0).
fn per_median(values: Vec<f64>, median: Option<f64>) -> Vec<f64> {
    let Some(m) = median.filter(|&m| m != 0.0) else {
        return Vec::new();
    };
    values.into_iter().map(|v| round(v / m, 5)).collect()
}

/// At `first`, the comparison's first group of parameter values (as docs/html.md says), not
/// the parameters of the first measured run: where a bench's first run failed or was
/// shuffled to another value, those were another group's.
fn stage_overlays(
    loaded: &Loaded,
    first: Option<&std::collections::BTreeMap<String, String>>,
) -> Vec<StageOverlay> {
    let measured = || {
        (loaded.runs.iter())
            .filter(|r| r.status == RunStatus::Ok)
            .filter_map(|r| Some((r, r.data.as_ref()?)))
    };
    let Some(params) = (first.cloned())
        .filter(|p| measured().any(|(r, _)| &r.params == p))
        .or_else(|| measured().next().map(|(r, _)| r.params.clone()))
    else {
        return Vec::new();
    };
    let mut stages: Vec<String> = Vec::new();
    for (_, d) in measured() {
        for (name, _) in &d.stages {
            if !stages.contains(name) {
                stages.push(name.clone());
            }
        }
    }
    let p = percentile_grid();
    stages
        .iter()
        .map(|stage| {
            let variants = (loaded.variants.iter())
                .filter_map(|v| {
                    let mut pooled: Vec<i64> = measured()
                        .filter(|(r, _)| &r.variant == v && r.params == params)
                        .flat_map(|(_, d)| d.stages.iter().filter(|(n, _)| n == stage))
                        // Loaded with every value kept (`Keep::All`).
                        .flat_map(|(_, values)| values.values().unwrap_or(&[]).iter().copied())
                        .collect();
                    if pooled.is_empty() {
                        return None;
                    }
                    crate::analyze::stats::sort_ns(&mut pooled);
                    let us = (p.iter())
                        .filter_map(|&q| percentile_of(&pooled, q / 100.0))
                        .map(|ns| round(ns / 1e3, 3))
                        .collect();
                    Some((crate::display::name(v).into_owned(), us))
                })
                .collect();
            StageOverlay {
                stage: crate::display::name(stage).into_owned(),
                group: super::comparison::describe_params(&params),
                p: p.clone(),
                variants,
            }
        })
        .collect()
}
