//! The comparison itself: per group of parameter values, each variant against the
//! baseline on every metric (medians, spread, ratio and interval, p adjusted by
//! fixed-sequence gatekeeping (`crate::stats::gatekeeping`, docs/metrics.md), verdict), the step-by-step table for more than two variants, the sweep table, the
//! headlines. Pure: everything here works on runs already loaded.

use std::collections::BTreeMap;

use super::comparison::*;
use super::effect::headline_effects;
use super::load::{Loaded, LoadedRun};
use super::metrics::Metric;
use super::pair::{point_ratio, resolution, summary, values, Pair};
use crate::experiment::RunStatus;
use crate::stats::mann_whitney::{mann_whitney, smallest_p};
use crate::stats::seed::derive_seed;
use crate::stats::verdict::MIN_RUNS_FOR_VERDICT;
use crate::stats::{
    bootstrap_ratio, decide, gatekeep, runs_for_significance, significance_reachable,
    BootstrapOptions, Gate, RunValue, Verdict, VerdictInput,
};

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
            "{variant} vs {baseline}: {primary}, the primary metric, is tested alone at α = {alpha} (improved or regressed from {MIN_RUNS_FOR_VERDICT} runs a side); with {runs_base} vs {runs_var} runs no p-value of the {} tested after it can pass Holm's correction among them (the smallest possible is {:.3}): improved or regressed there needs at least {} runs a side (equivalent {MIN_RUNS_FOR_VERDICT}), or name fewer with --show",
            crate::units::plural(later as u64, "metric", "metrics"),
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

/// "v2: 1.32× fps [1.27, 1.36], total p99 −27% [−31, −22], improved: 2, regressed: none".
/// The regressed metrics are parted by semicolons: a label may hold a comma ("CPU, decoderd").
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
            regressed.join("; ")
        }
    ));
    format!("{variant}: {}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::metrics::Unit;

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
    fn regressed_metrics_are_parted_by_semicolons_as_labels_hold_commas() {
        let row = |metric: &str, label: &str, verdict: Verdict| Row {
            metric: metric.into(),
            label: label.into(),
            unit: Unit::Seconds,
            direction: crate::stats::Direction::LowerIsBetter,
            baseline: None,
            variant: None,
            ratio: None,
            difference: None,
            u: None,
            p_value: None,
            p_method: None,
            p_holm: None,
            tested_as: None,
            verdict,
        };
        let rows = [
            row("wall", "wall", Verdict::Regressed),
            row("cpu.command", "CPU, command", Verdict::Improved),
            row("cpu.decoderd", "CPU, decoderd", Verdict::Regressed),
        ];
        assert_eq!(
            headline_line("daemon", &rows, None),
            "daemon: improved: 1, regressed: wall; CPU, decoderd"
        );
        assert_eq!(
            headline_line("daemon", &rows[1..2], None),
            "daemon: improved: 1, regressed: none"
        );
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
