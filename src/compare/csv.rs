//! The comparison's data table, what `--format csv` writes (`render::csv`): one row per
//! (parameter values, variant, metric), for spreadsheets and scripts. Values are written
//! unscaled, in the unit the `unit` column names (`bytes`, not the tables' MiB). In a sweep
//! of one variant, `baseline` is the variant itself and `baseline_params` the parameter
//! values it is compared with (empty otherwise). `difference` is variant median − baseline
//! median; with one run a side `ratio_low`, `ratio_high` and the p-values are empty.

use super::comparison::Comparison;
use crate::render::csv::{Cell, DataTable};

const COLUMNS: &[&str] = &[
    "params",
    "variant",
    "baseline",
    "metric",
    "unit",
    "direction",
    "baseline_runs",
    "baseline_median",
    "baseline_spread_pct",
    "variant_runs",
    "variant_median",
    "variant_spread_pct",
    "ratio",
    "ratio_low",
    "ratio_high",
    "p_value",
    "p_holm",
    "p_method",
    "verdict",
    "more_runs",
    "reason",
    "baseline_params",
    "difference",
];

/// Runs of imported histograms: one row per (variant, histogram, figure), each value as
/// its bounds (equal when exact; empty when unbounded).
const HISTOGRAM_COLUMNS: &[&str] = &[
    "variant",
    "baseline",
    "histogram",
    "unit",
    "figure",
    "kind",
    "baseline_low",
    "baseline_high",
    "variant_low",
    "variant_high",
    "difference_low",
    "difference_high",
    "change_low",
    "change_high",
];

fn columns(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// A serde enum's word (`lower_is_better`), empty for none.
fn word<T: serde::Serialize>(value: Option<T>) -> Cell {
    let word = value
        .and_then(|v| serde_json::to_value(v).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    Cell::Text(word)
}

fn histograms(c: &Comparison) -> DataTable {
    let mut rows = Vec::new();
    for h in &c.histograms {
        for r in &h.rows {
            rows.push(vec![
                Cell::text(&h.variant),
                Cell::text(&h.baseline),
                Cell::text(&h.name),
                Cell::text(&h.unit),
                Cell::text(&r.figure),
                word(Some(r.kind)),
                Cell::number(r.baseline.lo),
                Cell::number(r.baseline.hi),
                Cell::number(r.variant.lo),
                Cell::number(r.variant.hi),
                Cell::number(r.difference.lo),
                Cell::number(r.difference.hi),
                Cell::number(r.change.lo),
                Cell::number(r.change.hi),
            ]);
        }
    }
    DataTable {
        columns: columns(HISTOGRAM_COLUMNS),
        rows,
    }
}

pub fn table(c: &Comparison) -> DataTable {
    if !c.histograms.is_empty() {
        return histograms(c);
    }
    let mut rows = Vec::new();
    for g in &c.groups {
        for cmp in &g.comparisons {
            for r in &cmp.rows {
                let (more, reason) = match &r.verdict {
                    crate::stats::Verdict::Inconclusive { reason, more_runs } => {
                        (Cell::count(more_runs.map(|m| m as usize)), reason.clone())
                    }
                    _ => (Cell::Empty, String::new()),
                };
                rows.push(vec![
                    Cell::text(&g.label),
                    Cell::text(&cmp.variant),
                    Cell::text(&cmp.baseline),
                    Cell::text(&r.metric),
                    Cell::text(crate::render::cells::value_unit_name(&r.unit)),
                    word(Some(r.direction)),
                    Cell::count(r.baseline.as_ref().map(|s| s.runs)),
                    Cell::number(r.baseline.as_ref().map(|s| s.median)),
                    Cell::number(r.baseline.as_ref().map(|s| s.spread_pct)),
                    Cell::count(r.variant.as_ref().map(|s| s.runs)),
                    Cell::number(r.variant.as_ref().map(|s| s.median)),
                    Cell::number(r.variant.as_ref().map(|s| s.spread_pct)),
                    Cell::number(r.ratio.map(|x| x.ratio)),
                    Cell::number(r.ratio.map(|x| x.low)),
                    Cell::number(r.ratio.map(|x| x.high)),
                    Cell::number(r.p_value),
                    Cell::number(r.p_holm),
                    word(r.p_method),
                    Cell::text(r.verdict.word()),
                    more,
                    Cell::Text(reason),
                    Cell::text(&cmp.baseline_params),
                    Cell::number(r.difference),
                ]);
            }
        }
    }
    DataTable {
        columns: columns(COLUMNS),
        rows,
    }
}
