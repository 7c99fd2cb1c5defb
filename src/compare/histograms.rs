//! Runs that are only imported histograms (bpftrace prints), compared one run a side: per
//! histogram both runs hold, the count, the shares below (and at or above) the values
//! asked, and the percentiles, each as the bounds its buckets allow (`crate::hist::bounds`),
//! with the change between them as bounds too. No verdict: one run a side
//! (`side_by_side`).

use serde::{Deserialize, Serialize};

use super::load::{Loaded, LoadedRun};
use crate::experiment::RunStatus;
use crate::hist::bounds::{self, Threshold};
use crate::hist::figures::{self, Drawn, Thresholds};
use crate::model::Histogram;
use crate::render::scaled::{Bounded, Measure};
use crate::render::{Table, Value};

/// A figure's value as bounds: exactly `lo` when `lo == hi`; `None`: unbounded.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

impl Bounds {
    fn exact(v: f64) -> Bounds {
        Bounds {
            lo: Some(v),
            hi: Some(v),
        }
    }

    fn is_exact(&self) -> bool {
        self.lo.is_some() && self.lo == self.hi
    }

    /// `after − before` at its smallest and largest.
    fn minus(after: Bounds, before: Bounds) -> Bounds {
        let sub = |a: Option<f64>, b: Option<f64>| Some(a? - b?);
        Bounds {
            lo: sub(after.lo, before.hi),
            hi: sub(after.hi, before.lo),
        }
    }

    /// `after ÷ before − 1` at its smallest and largest, for values that are not negative;
    /// unbounded above when `before` may be 0.
    fn change(after: Bounds, before: Bounds) -> Bounds {
        // 0 before and 0 after is no change; from an exact 0 to more, +∞ (null in JSON).
        if before.is_exact() && before.lo == Some(0.0) {
            let zero_or_more = |zero: bool| Some(if zero { 0.0 } else { f64::INFINITY });
            return Bounds {
                lo: zero_or_more(after.lo == Some(0.0)),
                hi: zero_or_more(after.is_exact() && after.lo == Some(0.0)),
            };
        }
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 && a >= 0.0 => Some(a / b - 1.0),
            _ => None,
        };
        Bounds {
            lo: ratio(after.lo, before.hi).or(Some(-1.0)),
            hi: ratio(after.hi, before.lo),
        }
    }
}

/// What a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    Count,
    /// 0 to 1.
    Share,
    /// In the histogram's unit.
    Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistogramRow {
    /// `count`, `below 1ms`, `at or above 1ms`, `p99`.
    pub figure: String,
    pub kind: FigureKind,
    pub baseline: Bounds,
    pub variant: Bounds,
    /// variant − baseline at its smallest and largest.
    pub difference: Bounds,
    /// variant ÷ baseline − 1 at its smallest and largest.
    pub change: Bounds,
}

/// One histogram both runs hold: the variant's against the baseline's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistogramComparison {
    pub name: String,
    pub unit: String,
    pub variant: String,
    pub baseline: String,
    pub rows: Vec<HistogramRow>,
}

/// Whether a run is only imported histograms (no spans to measure).
pub fn histogram_only(run: &LoadedRun) -> bool {
    run.data
        .as_ref()
        .is_some_and(|d| d.histogram_only && !d.histograms.is_empty())
}

/// Every variant's histograms against the baseline's, and notes on the histograms only one
/// side holds and the thresholds that could not apply.
pub fn compare(
    loaded: &Loaded,
    baseline: &str,
    thresholds: &Thresholds,
    unit: Option<&str>,
) -> anyhow::Result<(Vec<HistogramComparison>, Vec<String>)> {
    let run_of = |variant: &str| -> anyhow::Result<&LoadedRun> {
        let runs: Vec<&LoadedRun> = (loaded.runs.iter())
            .filter(|r| r.variant == variant && r.status == RunStatus::Ok)
            .collect();
        match runs.as_slice() {
            [one] => Ok(*one),
            several => anyhow::bail!(
                "variant '{variant}' has {} imported runs: imported histograms are compared one \
                 run a side; name one, e.g. --variant {variant}={}:{}",
                several.len(),
                several[0].path.display(),
                several[several.len() - 1].run_id
            ),
        }
    };
    let histograms = |run: &LoadedRun| -> Vec<Histogram> {
        run.data
            .as_ref()
            .map_or(Vec::new(), |d| d.histograms.clone())
    };
    let base = histograms(run_of(baseline)?);
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for variant in loaded.variants.iter().filter(|v| *v != baseline) {
        let other = histograms(run_of(variant)?);
        let names = |hs: &[Histogram]| hs.iter().map(|h| h.name.clone()).collect::<Vec<_>>();
        let only = |a: &[Histogram], b: &[Histogram]| -> Vec<String> {
            (names(a).into_iter())
                .filter(|n| !b.iter().any(|h| &h.name == n))
                .map(|n| format!("'{}'", crate::display::name(&n)))
                .collect()
        };
        for (side, list) in [
            (baseline, only(&base, &other)),
            (variant.as_str(), only(&other, &base)),
        ] {
            if !list.is_empty() {
                notes.push(format!(
                    "only {side} holds {} (not compared): {}",
                    crate::units::plural(list.len() as u64, "histogram", "histograms"),
                    list.join(", ")
                ));
            }
        }
        for b in &base {
            let Some(v) = other.iter().find(|h| h.name == b.name) else {
                continue;
            };
            let (table, not_applied) = one(b, v, thresholds, unit);
            for why in not_applied {
                let note = format!("'{}': {why}", crate::display::name(&b.name));
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
            out.push(HistogramComparison {
                name: b.name.clone(),
                unit: table.0,
                variant: variant.clone(),
                baseline: baseline.to_owned(),
                rows: table.1,
            });
        }
    }
    if out.is_empty() {
        anyhow::bail!(
            "the runs hold no histogram of the same name to compare ({}); compare prints of \
             the same bpftrace script",
            notes.join("; ")
        );
    }
    Ok((out, notes))
}

/// The rows of one histogram, its unit, and the thresholds that could not apply.
fn one(
    base: &Histogram,
    var: &Histogram,
    thresholds: &Thresholds,
    unit: Option<&str>,
) -> ((String, Vec<HistogramRow>), Vec<String>) {
    let drawn = |h: &Histogram| {
        let (unit, unit_from) = match (h.unit.as_str(), unit) {
            ("", Some(given)) => (given.to_owned(), "--unit"),
            ("", None) => (String::new(), ""),
            (u, _) => (u.to_owned(), "name"),
        };
        Drawn {
            name: h.name.clone(),
            unit,
            unit_from,
            buckets: h.buckets.clone(),
            imported: true,
        }
    };
    let (b, v) = (drawn(base), drawn(var));
    let (fb, fv) = (
        figures::figures(&b, thresholds),
        figures::figures(&v, thresholds),
    );
    let row = |figure: String, kind, before: Bounds, after: Bounds| HistogramRow {
        figure,
        kind,
        baseline: before,
        variant: after,
        difference: Bounds::minus(after, before),
        change: Bounds::change(after, before),
    };
    let mut rows = vec![row(
        "count".into(),
        FigureKind::Count,
        Bounds::exact(fb.count as f64),
        Bounds::exact(fv.count as f64),
    )];
    let share = |s: &figures::ShareFigure| Bounds {
        lo: Some(s.share_at_least),
        hi: Some(s.share_at_most),
    };
    for (side, before, after) in [
        ("below", &fb.below, &fv.below),
        ("at or above", &fb.at_or_above, &fv.at_or_above),
    ] {
        for (x, y) in before.iter().zip(after) {
            rows.push(row(
                format!("{side} {}", x.value),
                FigureKind::Share,
                share(x),
                share(y),
            ));
        }
    }
    let value = |p: &figures::PercentileFigure| Bounds {
        lo: p.lo.map(|v| v as f64),
        hi: p.hi.map(|v| v as f64),
    };
    for (x, y) in fb.percentiles.iter().zip(&fv.percentiles) {
        rows.push(row(x.name.clone(), FigureKind::Value, value(x), value(y)));
    }
    ((b.unit, rows), fb.not_applied)
}

/// The table of one histogram comparison (text or Markdown).
pub fn table(h: &HistogramComparison) -> Table {
    let scale = bounds::scale_of(&h.unit);
    let mut t = Table::new(&["figure", &h.baseline, &h.variant, "difference", "change"])
        .with_names(&[1, 2], &[]);
    for r in &h.rows {
        let measure = match r.kind {
            FigureKind::Count => Measure::Count,
            FigureKind::Share => Measure::Share,
            FigureKind::Value => Measure::Value(scale),
        };
        let cell = |b: Bounds, reading| Value::Between {
            lo: b.lo,
            hi: b.hi,
            reading,
        };
        t.push(vec![
            Value::Text(r.figure.clone()),
            cell(r.baseline, Bounded::Figure(measure)),
            cell(r.variant, Bounded::Figure(measure)),
            cell(r.difference, Bounded::Difference(measure)),
            cell(r.change, Bounded::Change),
        ]);
    }
    t
}

/// The title of one histogram's table: `@read_ns[4096] (ns): after vs before`.
pub fn title(h: &HistogramComparison) -> String {
    let unit = if h.unit.is_empty() {
        "unit unknown".to_owned()
    } else {
        h.unit.clone()
    };
    format!(
        "{} ({unit}): {} vs {}",
        crate::display::name(&h.name),
        h.variant,
        h.baseline
    )
}

/// How to read the tables, said once.
pub const HOW_TO_READ: &str = "imported histograms: each figure is read from the buckets; a \
    percentile is the bucket bounds [lo, hi) it lies in, a share whose value splits a bucket a \
    range, and difference (pp: percentage points) and change span every value the bounds allow";

/// `--below` and `--above` of the histogram comparison, kept in the options.
pub fn thresholds_of(below: &[Threshold], above: &[Threshold]) -> Thresholds {
    Thresholds {
        below: below.to_vec(),
        above: above.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::{table, Bounds, FigureKind, HistogramComparison, HistogramRow};
    use crate::render::Value;

    /// Each figure is a typed cell between its bounds, shown in the histogram's unit.
    #[test]
    fn the_tables_figures_are_typed_cells_in_the_histograms_unit() {
        let p99 = HistogramRow {
            figure: "p99".into(),
            kind: FigureKind::Value,
            baseline: b(8192.0, 16384.0),
            variant: b(16384.0, 32768.0),
            difference: Bounds::minus(b(16384.0, 32768.0), b(8192.0, 16384.0)),
            change: Bounds::change(b(16384.0, 32768.0), b(8192.0, 16384.0)),
        };
        let t = table(&HistogramComparison {
            name: "@read_ns".into(),
            unit: "ns".into(),
            variant: "after".into(),
            baseline: "before".into(),
            rows: vec![p99],
        });
        assert!(t.rows[0][1..]
            .iter()
            .all(|cell| matches!(cell, Value::Between { .. })));
        let shown: Vec<String> = t.rows[0].iter().map(Value::shown).collect();
        assert_eq!(
            shown,
            [
                "p99",
                "[8.192 µs, 16.38 µs)",
                "[16.38 µs, 32.77 µs)",
                "0 ns to +24.58 µs",
                "±0.0% to +300.0%"
            ]
        );
    }

    fn b(lo: f64, hi: f64) -> Bounds {
        Bounds {
            lo: Some(lo),
            hi: Some(hi),
        }
    }

    #[test]
    fn changes_span_every_value_the_bounds_allow() {
        // [8, 16) before, [16, 32) after: after − before from 0 to 24, ÷ from 0% to +300%.
        let (before, after) = (b(8.0, 16.0), b(16.0, 32.0));
        assert_eq!(Bounds::minus(after, before), b(0.0, 24.0));
        assert_eq!(Bounds::change(after, before), b(0.0, 3.0));
        // Exact values: an exact change.
        assert_eq!(Bounds::change(b(3.0, 3.0), b(2.0, 2.0)), b(0.5, 0.5));
        // From 0: none stays none, anything more is +∞.
        assert_eq!(Bounds::change(b(0.0, 0.0), b(0.0, 0.0)), b(0.0, 0.0));
        let up = Bounds::change(b(0.0, 0.5), b(0.0, 0.0));
        assert_eq!((up.lo, up.hi), (Some(0.0), Some(f64::INFINITY)));
        // Unbounded above before: the change may be down to −100%.
        let open = Bounds {
            lo: Some(100.0),
            hi: None,
        };
        let c = Bounds::change(open, open);
        assert_eq!((c.lo, c.hi), (Some(-1.0), None));
    }
}
