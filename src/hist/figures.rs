//! A histogram's figures read from its buckets (count, percentiles, shares below and at or
//! above values), as lines above its bars (text and Markdown) and in JSON. Each figure is what the buckets allow: exact
//! where a bound says it, else the bounds (`bounds`).

use serde::Serialize;

use super::bounds::{self, Quantity, Scale, Threshold, Within};
use crate::model::Bucket;
use crate::render::document::{plain, Line, Span};

/// A histogram to show: its name as the report prints it, its unit, its buckets.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    pub name: String,
    /// `ns`, `us`, `ms`, `s`, `bytes`, or "" when unknown.
    pub unit: String,
    /// Where the unit came from: `name` (the map's name), `--unit`, `framelab` (spans,
    /// drawn in µs), or "" when unknown.
    pub unit_from: &'static str,
    pub buckets: Vec<Bucket>,
    pub imported: bool,
}

/// The share of values below a threshold (or at or above it), as bounds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShareFigure {
    /// As given: `1ms`.
    pub value: String,
    /// Values certainly on this side, and at most (those of the bucket the value splits
    /// added).
    pub count_at_least: u64,
    pub count_at_most: u64,
    /// 0 to 1.
    pub share_at_least: f64,
    pub share_at_most: f64,
    /// The bucket the value falls inside, when it does: its values may lie either side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split_bucket: Option<Within>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PercentileFigure {
    /// `p99.9`.
    pub name: String,
    /// 0 to 1.
    pub p: f64,
    /// The percentile lies in `[lo, hi)`, in the histogram's unit; null: unbounded.
    pub lo: Option<i64>,
    pub hi: Option<i64>,
}

/// Everything shown of one histogram.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figures {
    pub name: String,
    pub unit: String,
    pub unit_from: &'static str,
    pub imported: bool,
    pub count: u64,
    pub percentiles: Vec<PercentileFigure>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub below: Vec<ShareFigure>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub at_or_above: Vec<ShareFigure>,
    /// Thresholds not applied, and why (another quantity, or the unit unknown).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_applied: Vec<String>,
    pub buckets: Vec<Bucket>,
}

/// `--below` and `--above` as asked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Thresholds {
    pub below: Vec<Threshold>,
    pub above: Vec<Threshold>,
}

impl Thresholds {
    pub fn is_empty(&self) -> bool {
        self.below.is_empty() && self.above.is_empty()
    }
}

/// Why a threshold cannot apply to a histogram of this scale, or `None` when it can.
fn mismatch(t: &Threshold, scale: Option<Scale>) -> Option<String> {
    let what = |q: Quantity| match q {
        Quantity::Time => "a time",
        Quantity::Bytes => "a size",
    };
    match scale {
        None => Some(format!(
            "{}: the histogram's unit is unknown (its name does not say it): give it with \
             --unit ({})",
            t.text,
            bounds::UNITS
        )),
        Some(s) if s.quantity != t.quantity => Some(format!(
            "{}: {} against a histogram of {}",
            t.text,
            what(t.quantity),
            match s.quantity {
                Quantity::Time => "times",
                Quantity::Bytes => "sizes",
            }
        )),
        Some(_) => None,
    }
}

/// The figures of `drawn` with the shares `thresholds` ask for.
pub fn figures(drawn: &Drawn, thresholds: &Thresholds) -> Figures {
    let scale = bounds::scale_of(&drawn.unit);
    let count = drawn.buckets.iter().map(|b| b.count).sum();
    let percentiles = bounds::PERCENTILES
        .iter()
        .filter_map(|&p| {
            let w = bounds::percentile(&drawn.buckets, p)?;
            Some(PercentileFigure {
                name: bounds::percentile_name(p),
                p,
                lo: w.lo,
                hi: w.hi,
            })
        })
        .collect();
    let mut not_applied = Vec::new();
    let mut share = |t: &Threshold, above: bool| -> Option<ShareFigure> {
        if let Some(why) = mismatch(t, scale) {
            not_applied.push(why);
            return None;
        }
        let per_value = scale.map_or(1.0, |s| s.per_value);
        let values = match drawn.imported {
            true => bounds::Values::Integers,
            false => bounds::Values::Continuous,
        };
        let b = bounds::below(&drawn.buckets, t.amount / per_value, values);
        let (least, most) = if above {
            (b.of - b.certain - b.split, b.of - b.certain)
        } else {
            (b.certain, b.certain + b.split)
        };
        let of = b.of.max(1) as f64;
        Some(ShareFigure {
            value: t.text.clone(),
            count_at_least: least,
            count_at_most: most,
            share_at_least: least as f64 / of,
            share_at_most: most as f64 / of,
            split_bucket: b.split_bucket.map(|s| Within { lo: s.lo, hi: s.hi }),
        })
    };
    let below = thresholds
        .below
        .iter()
        .filter_map(|t| share(t, false))
        .collect();
    let at_or_above = thresholds
        .above
        .iter()
        .filter_map(|t| share(t, true))
        .collect();
    Figures {
        name: drawn.name.clone(),
        unit: drawn.unit.clone(),
        unit_from: drawn.unit_from,
        imported: drawn.imported,
        count,
        percentiles,
        below,
        at_or_above,
        not_applied,
        buckets: drawn.buckets.clone(),
    }
}

/// How the figures' bounds are read, said once under a histogram's figures.
pub const HOW_BOUNDS: &str =
    "percentiles (interpolated at p·(N−1)) lie in the bucket bounds shown, [lo, hi); a share \
     whose value splits a bucket is given as a range";

/// `below 10us: 0.01% to 98.28% (2 to 17072 values: 10us splits the bucket [8.192 µs,
/// 16.38 µs) of 17070)`.
fn share_line(f: &ShareFigure, side: &str, scale: Option<Scale>) -> String {
    let shares = if f.count_at_least == f.count_at_most {
        format!(
            "{} ({} values)",
            bounds::show_share(f.share_at_least),
            f.count_at_least
        )
    } else {
        format!(
            "{} to {} ({} to {} values: {} splits the bucket {} of {})",
            bounds::show_share(f.share_at_least),
            bounds::show_share(f.share_at_most),
            f.count_at_least,
            f.count_at_most,
            f.value,
            f.split_bucket
                .map_or(String::new(), |w| bounds::show_within(w, scale)),
            f.count_at_most - f.count_at_least
        )
    };
    format!("{side} {}: {shares}", f.value)
}

/// The figures as lines above a histogram's bars (`# line` in text, a bullet each in
/// Markdown): the count and the unit, the percentiles, each share, each threshold not
/// applied.
pub fn summary(f: &Figures) -> Vec<Line> {
    let scale = bounds::scale_of(&f.unit);
    let unit = match (f.unit.as_str(), f.unit_from) {
        ("", _) => "unit unknown (give --unit)".to_owned(),
        (unit, "") => format!("in {unit}"),
        (unit, from) => format!("in {unit} (from {from})"),
    };
    let mut lines = vec![plain(format!("count {} · values {unit}", f.count))];
    if !f.percentiles.is_empty() {
        let shown: Vec<String> = (f.percentiles.iter())
            .map(|p| {
                format!(
                    "{} {}",
                    p.name,
                    bounds::show_within(Within { lo: p.lo, hi: p.hi }, scale)
                )
            })
            .collect();
        lines.push(plain(shown.join(" · ")));
    }
    for s in &f.below {
        lines.push(plain(share_line(s, "below", scale)));
    }
    for s in &f.at_or_above {
        lines.push(plain(share_line(s, "at or above", scale)));
    }
    for why in &f.not_applied {
        lines.push(vec![Span::plain("not applied: "), Span::name(why)]);
    }
    lines
}

/// What `hist --format json` prints.
#[derive(Serialize)]
pub struct HistJson<'a> {
    pub schema: &'static str,
    pub how_bounds: &'static str,
    pub histograms: &'a [Figures],
    pub notes: &'a [String],
}

pub const JSON_SCHEMA: &str = "framelab.hist/1";
