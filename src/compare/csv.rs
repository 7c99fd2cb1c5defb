//! One row per (parameter values, variant, metric): for spreadsheets and scripts. Values
//! are written unscaled, in the unit the `unit` column names (`bytes`, not the tables' MiB).
//! In a sweep of one variant, `baseline` is the variant itself and `baseline_params` the
//! parameter values it is compared with (empty otherwise). `difference` is variant median −
//! baseline median; with one run a side `ratio_low`, `ratio_high` and the p-values are empty.

use super::comparison::Comparison;

const HEADER: &str = "params,variant,baseline,metric,unit,direction,baseline_runs,baseline_median,baseline_spread_pct,variant_runs,variant_median,variant_spread_pct,ratio,ratio_low,ratio_high,p_value,p_holm,p_method,verdict,more_runs,reason,baseline_params,difference";

/// Runs of imported histograms: one row per (variant, histogram, figure), each value as
/// its bounds (equal when exact; empty when unbounded).
const HISTOGRAM_HEADER: &str = "variant,baseline,histogram,unit,figure,kind,baseline_low,baseline_high,variant_low,variant_high,difference_low,difference_high,change_low,change_high";

fn histograms(c: &Comparison) -> String {
    let mut out = String::from(HISTOGRAM_HEADER);
    out.push('\n');
    let num = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for h in &c.histograms {
        for r in &h.rows {
            let kind = serde_json::to_value(r.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let fields = [
                h.variant.clone(),
                h.baseline.clone(),
                h.name.clone(),
                h.unit.clone(),
                r.figure.clone(),
                kind,
                num(r.baseline.lo),
                num(r.baseline.hi),
                num(r.variant.lo),
                num(r.variant.hi),
                num(r.difference.lo),
                num(r.difference.hi),
                num(r.change.lo),
                num(r.change.hi),
            ];
            let cells: Vec<String> = fields.iter().map(|f| quote(f)).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
    }
    out
}

pub fn render(c: &Comparison) -> String {
    if !c.histograms.is_empty() {
        return histograms(c);
    }
    let mut out = String::from(HEADER);
    out.push('\n');
    for g in &c.groups {
        for cmp in &g.comparisons {
            for r in &cmp.rows {
                // NaN: no value (the interval of one run a side).
                let num = |v: Option<f64>| {
                    v.filter(|v| !v.is_nan())
                        .map_or(String::new(), |v| v.to_string())
                };
                let (more, reason) = match &r.verdict {
                    crate::stats::Verdict::Inconclusive { reason, more_runs } => (
                        more_runs.map_or(String::new(), |m| m.to_string()),
                        reason.clone(),
                    ),
                    _ => (String::new(), String::new()),
                };
                let fields = [
                    g.label.clone(),
                    cmp.variant.clone(),
                    cmp.baseline.clone(),
                    r.metric.clone(),
                    crate::render::cells::value_unit_name(&r.unit).into(),
                    serde_json::to_value(r.direction)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    r.baseline
                        .as_ref()
                        .map_or(String::new(), |s| s.runs.to_string()),
                    num(r.baseline.as_ref().map(|s| s.median)),
                    num(r.baseline.as_ref().map(|s| s.spread_pct)),
                    r.variant
                        .as_ref()
                        .map_or(String::new(), |s| s.runs.to_string()),
                    num(r.variant.as_ref().map(|s| s.median)),
                    num(r.variant.as_ref().map(|s| s.spread_pct)),
                    num(r.ratio.map(|x| x.ratio)),
                    num(r.ratio.map(|x| x.low)),
                    num(r.ratio.map(|x| x.high)),
                    num(r.p_value),
                    num(r.p_holm),
                    r.p_method
                        .and_then(|m| serde_json::to_value(m).ok())
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    r.verdict.word().into(),
                    more,
                    reason,
                    cmp.baseline_params.clone(),
                    num(r.difference),
                ];
                let line: Vec<String> = fields.iter().map(|f| quote(f)).collect();
                out.push_str(&line.join(","));
                out.push('\n');
            }
        }
    }
    out
}

/// RFC 4180: quote fields holding a comma, quote or line break; double inner quotes.
fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}
