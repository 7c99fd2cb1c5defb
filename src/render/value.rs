//! A table's typed cell: a value and what it is (a duration, a percentage, a count, a rate,
//! memory, a metric in its unit, a difference, a change with its interval, a p-value,
//! words). The feature says what a cell holds; the table shows it when a writer
//! lays it out, in the human form of `render::human` and `render::cells`, the same in text,
//! in Markdown and in the HTML page's data (a value serialises as the text it shows). The
//! figures for scripts stay numbers in CSV's typed cells (`render::csv::Cell`) and in each
//! command's JSON.

use serde::{Serialize, Serializer};

use super::{cells, human};
use crate::analyze::metrics::Unit;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Words as the feature wrote them: a name, a role, a label, a figure with its words
    /// (`capture→encode 1000`).
    Text(String),
    /// No value, shown as the mark given (`-`, `–`, `—`, or nothing).
    Missing(&'static str),
    /// A duration in ns, shown in µs at a precision that suits it (`human::us`).
    Micros(f64),
    /// A mean duration in ns, in µs with one decimal (`human::us_mean`).
    MeanMicros(f64),
    /// A whole count: frames, samples, overlaps.
    Count(i64),
    /// A number with a fixed count of decimals (a percentage, a rate, seconds), and what
    /// follows it (`%`, or nothing).
    Fixed {
        value: f64,
        decimals: usize,
        suffix: &'static str,
    },
    /// A number known only to `resolution` (in its own unit): `decimals` at most, fewer
    /// when coarser (CPU seconds from clock ticks, a load over a short window).
    Resolved {
        value: f64,
        resolution: f64,
        decimals: usize,
    },
    /// Memory in bytes, in binary units (`48.2 MiB`).
    Memory(u64),
    /// A telemetry reading with the precision its size deserves: `1980`, `61.5`, `0.42`.
    Reading(f64),
    /// A metric's value in its unit's usual precision, no finer than its resolution
    /// (`cells::value_to`), with the spread of its runs when there are several
    /// (`12.5 ±3.1%`).
    Metric {
        unit: Unit,
        value: f64,
        resolution: Option<f64>,
        spread_pct: Option<f64>,
    },
    /// A difference in a metric's unit, signed with a true minus (`−0.42`, `±0.0`).
    Difference {
        unit: Unit,
        value: f64,
        resolution: Option<f64>,
    },
    /// A ratio as a signed percentage change with its 95% interval (`+3.2% [1.0, 5.1]`),
    /// the percentage alone without one (NaN bounds).
    Change { ratio: f64, low: f64, high: f64 },
    /// A p-value: four decimals, or `<0.0001`.
    P(f64),
}

impl Value {
    /// A number with `decimals` decimals and nothing after it.
    pub fn fixed(value: f64, decimals: usize) -> Value {
        Value::Fixed {
            value,
            decimals,
            suffix: "",
        }
    }

    /// A percentage with `decimals` decimals and its sign: `12.5%`.
    pub fn percent(value: f64, decimals: usize) -> Value {
        Value::Fixed {
            value,
            decimals,
            suffix: "%",
        }
    }

    /// `value`, or the `missing` mark for none.
    pub fn or(value: Option<Value>, missing: &'static str) -> Value {
        value.unwrap_or(Value::Missing(missing))
    }

    /// The value as text and Markdown show it.
    pub fn shown(&self) -> String {
        match self {
            Value::Text(text) => text.clone(),
            Value::Missing(mark) => (*mark).to_owned(),
            Value::Micros(ns) => human::us(*ns),
            Value::MeanMicros(ns) => human::us_mean(*ns),
            Value::Count(n) => n.to_string(),
            Value::Fixed {
                value,
                decimals,
                suffix,
            } => format!("{value:.decimals$}{suffix}"),
            Value::Resolved {
                value,
                resolution,
                decimals,
            } => crate::units::fixed_to_resolution(*value, *resolution, *decimals),
            Value::Memory(bytes) => human::mem(*bytes),
            Value::Reading(v) => reading(*v),
            Value::Metric {
                unit,
                value,
                resolution,
                spread_pct,
            } => {
                let shown = cells::value_to(unit, *value, *resolution);
                match spread_pct {
                    Some(pct) => format!("{shown} ±{pct:.1}%"),
                    None => shown,
                }
            }
            Value::Difference {
                unit,
                value,
                resolution,
            } => cells::difference(unit, *value, *resolution),
            Value::Change { ratio, low, high } => cells::change_with_interval(*ratio, *low, *high),
            Value::P(p) => cells::p_value(*p),
        }
    }
}

/// A reading with the precision its size deserves: 1980, 61.5, 0.42.
pub fn reading(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

impl From<String> for Value {
    fn from(text: String) -> Value {
        Value::Text(text)
    }
}

impl From<&str> for Value {
    fn from(text: &str) -> Value {
        Value::Text(text.to_owned())
    }
}

impl From<&String> for Value {
    fn from(text: &String) -> Value {
        Value::Text(text.clone())
    }
}

/// As the text it shows: the HTML page's script lays the tables out from their words.
impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.shown())
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown())
    }
}

/// Rows of words as rows of values.
pub fn texts(rows: Vec<Vec<String>>) -> Vec<Vec<Value>> {
    (rows.into_iter())
        .map(|row| row.into_iter().map(Value::Text).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_shown_in_its_human_form() {
        assert_eq!(Value::Micros(12_400.0).shown(), "12");
        assert_eq!(Value::Micros(350.0).shown(), "0.35");
        assert_eq!(Value::MeanMicros(16_100.0).shown(), "16.1");
        assert_eq!(Value::Count(42).shown(), "42");
        assert_eq!(Value::fixed(62.5, 1).shown(), "62.5");
        assert_eq!(Value::percent(12.345, 1).shown(), "12.3%");
        assert_eq!(
            Value::Resolved {
                value: 0.26,
                resolution: 0.01,
                decimals: 3
            }
            .shown(),
            "0.26"
        );
        assert_eq!(Value::Memory(50_541_363).shown(), "48.2 MiB");
        assert_eq!(Value::Reading(1980.4).shown(), "1980");
        assert_eq!(Value::Reading(61.54).shown(), "61.5");
        assert_eq!(Value::or(None, "–").shown(), "–");
        assert_eq!(Value::from("encode").shown(), "encode");
    }

    #[test]
    fn a_comparisons_kinds_keep_their_unit_sign_and_interval() {
        let metric = |spread_pct| Value::Metric {
            unit: Unit::Fps,
            value: 119.96,
            resolution: None,
            spread_pct,
        };
        assert_eq!(metric(None).shown(), "120.0");
        assert_eq!(metric(Some(3.14)).shown(), "120.0 ±3.1%");
        let difference = |value| Value::Difference {
            unit: Unit::Microseconds,
            value,
            resolution: None,
        };
        assert_eq!(difference(-0.42).shown(), "−0.42");
        assert_eq!(difference(0.0001).shown(), "±0.00");
        let change = Value::Change {
            ratio: 1.032,
            low: 1.01,
            high: 1.051,
        };
        assert_eq!(change.shown(), "+3.2% [+1.0, +5.1]");
        let alone = Value::Change {
            ratio: 0.73,
            low: f64::NAN,
            high: f64::NAN,
        };
        assert_eq!(alone.shown(), "−27.0%");
        assert_eq!(Value::P(0.00002).shown(), "<0.0001");
        assert_eq!(Value::P(0.0312).shown(), "0.0312");
    }

    #[test]
    fn a_value_serialises_as_the_text_it_shows() {
        let row = vec![Value::from("encode"), Value::Micros(12_400.0)];
        assert_eq!(serde_json::to_string(&row).unwrap(), r#"["encode","12"]"#);
    }
}
