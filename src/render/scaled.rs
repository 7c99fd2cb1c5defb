//! A histogram's figures as people read them: the quantity its values measure (a time, a
//! size) and how many base units one value is, a value shown scaled to the unit that suits
//! it (`8.192 µs`, `16 KiB`), a share as a percentage, and a figure its buckets know only
//! between bounds (`[8.192 µs, 16.38 µs)`, `+0.50 pp to +2.10 pp`). The histogram's figures
//! (`crate::hist`) and the comparison of imported histograms (`Value::Between`) are shown
//! through it.

use serde::{Deserialize, Serialize};

/// What a histogram's values measure, as far as its unit tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    Time,
    Bytes,
}

/// A histogram's unit: the quantity and how many base units (ns, bytes) one value is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    pub quantity: Quantity,
    pub per_value: f64,
}

/// The scale of a histogram's unit (`ns`, `us`, `ms`, `s`, `bytes`); `None` when unknown.
pub fn scale_of(unit: &str) -> Option<Scale> {
    let (quantity, per_value) = match unit {
        "ns" => (Quantity::Time, 1.0),
        "us" | "µs" => (Quantity::Time, 1e3),
        "ms" => (Quantity::Time, 1e6),
        "s" => (Quantity::Time, 1e9),
        "bytes" => (Quantity::Bytes, 1.0),
        _ => return None,
    };
    Some(Scale {
        quantity,
        per_value,
    })
}

/// A value of a histogram as people read it: a time in ns, µs, ms or s, a size in B, KiB,
/// MiB or GiB (four significant digits), or the number itself when the unit is unknown.
pub fn show_value(value: f64, scale: Option<Scale>) -> String {
    let Some(scale) = scale else {
        return format!("{value}");
    };
    let base = value * scale.per_value;
    let steps: &[(f64, &str)] = match scale.quantity {
        Quantity::Time => &[(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")],
        Quantity::Bytes => &[
            (1024.0 * 1024.0 * 1024.0, "GiB"),
            (1024.0 * 1024.0, "MiB"),
            (1024.0, "KiB"),
            (1.0, "B"),
        ],
    };
    let (size, name) = steps
        .iter()
        .find(|(size, _)| base.abs() >= *size)
        .copied()
        .unwrap_or((1.0, steps[steps.len() - 1].1));
    format!("{} {name}", significant(base / size))
}

/// Four significant digits, trailing zeros cut: 8.192, 16.38, 1024.
fn significant(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let text = format!("{x:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// A share as a percentage with two decimals: `98.27%`.
pub fn show_share(share: f64) -> String {
    format!("{:.2}%", share * 100.0)
}

/// What a histogram's figure counts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Measure {
    /// Values: `1234`.
    Count,
    /// A share of the values, 0 to 1: `98.27%`.
    Share,
    /// A value in the histogram's unit, scaled for people (the number itself when the unit
    /// is unknown).
    Value(Option<Scale>),
}

/// What a figure between bounds ([`between`]) is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bounded {
    /// The figure itself: a value as the bucket `[lo, hi)` it lies in, a count or share
    /// as `lo to hi`.
    Figure(Measure),
    /// after − before, signed (a share's in percentage points: `+1.50 pp`).
    Difference(Measure),
    /// after ÷ before − 1 as a signed percentage: `+3.2%`.
    Change,
}

/// A figure known between `lo` and `hi` (`None`: unbounded): the one value when they are
/// equal, else both sides, an open one `−∞` or `∞`.
pub fn between(lo: Option<f64>, hi: Option<f64>, reading: &Bounded) -> String {
    let exact = lo.is_some() && lo == hi;
    let (one, open_high): (&dyn Fn(f64) -> String, &str) = match reading {
        Bounded::Figure(measure) => (&|v| shown(*measure, v), "∞"),
        Bounded::Difference(measure) => (&|v| signed(*measure, v), "+∞"),
        Bounded::Change => (&|v| super::cells::signed_pct(v + 1.0, 1), "+∞"),
    };
    if exact {
        return one(lo.unwrap_or(f64::NAN));
    }
    let side = |v: Option<f64>, open: &str| v.map_or(open.to_owned(), one);
    let (low, high) = (side(lo, "−∞"), side(hi, open_high));
    match reading {
        Bounded::Figure(Measure::Value(_)) => format!("[{low}, {high})"),
        _ => format!("{low} to {high}"),
    }
}

/// A bound as its measure reads.
fn shown(measure: Measure, v: f64) -> String {
    match measure {
        Measure::Count => format!("{v}"),
        Measure::Share => show_share(v),
        Measure::Value(scale) => show_value(v, scale),
    }
}

/// A signed bound: `+1.5 ms`, `−0.25 pp`; a zero without a sign.
fn signed(measure: Measure, v: f64) -> String {
    let sign = if v > 0.0 {
        "+"
    } else if v < 0.0 {
        "−"
    } else {
        ""
    };
    let magnitude = match measure {
        // A share's difference is in percentage points.
        Measure::Share => format!("{:.2} pp", v.abs() * 100.0),
        _ => shown(measure, v.abs()),
    };
    format!("{sign}{magnitude}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_between_bounds_shows_one_value_or_both_sides() {
        let ns = Measure::Value(scale_of("ns"));
        assert_eq!(
            between(Some(16384.0), Some(16384.0), &Bounded::Figure(ns)),
            "16.38 µs"
        );
        assert_eq!(
            between(Some(8192.0), None, &Bounded::Figure(ns)),
            "[8.192 µs, ∞)"
        );
        let share = Bounded::Figure(Measure::Share);
        assert_eq!(between(Some(0.3), Some(0.8), &share), "30.00% to 80.00%");
        let pp = Bounded::Difference(Measure::Share);
        assert_eq!(
            between(Some(-0.0025), Some(0.0), &pp),
            "−0.25 pp to 0.00 pp"
        );
        assert_eq!(between(Some(-1.0), None, &Bounded::Change), "−100.0% to +∞");
        assert_eq!(
            between(Some(3.0), Some(3.0), &Bounded::Figure(Measure::Count)),
            "3"
        );
    }
}
