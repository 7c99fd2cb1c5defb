//! A table's typed cell: a value and what it is (a duration, a percentage, a count, a rate,
//! memory, a metric in its unit, a difference, a change with its interval and its verdict,
//! a p-value, a histogram's figure between bounds, a figure from the history store,
//! words). The feature says what a cell holds; the table shows it when a writer lays it
//! out, in the human form of `render::human`, `render::cells` and `render::scaled`, the
//! same in text, in Markdown and in the HTML page's data (a value serialises as the text
//! it shows), and names the unit its figures leave unsaid ([`Value::unit`]). The figures
//! for scripts stay numbers in CSV's typed cells (`render::csv::Cell`) and in each
//! command's JSON.

use serde::{Serialize, Serializer};

use super::scaled::Bounded;
use super::{cells, human};
use crate::analyze::metrics::Unit;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Words as the feature wrote them: a name, a role, a label, a figure with its words
    /// (`capture→encode 1000`).
    Text(String),
    /// No value, shown as the mark given (`-`, `–`, `—`, or nothing).
    Missing(&'static str),
    /// No value where the column holds figures in `unit` (a stage without a distribution
    /// in µs): shown as the mark, its unit still the table's to name.
    Absent {
        mark: &'static str,
        unit: &'static str,
    },
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
    /// A change with its interval (a [`Value::Change`]) and the verdict on it, a word
    /// after it: `+3.2% [+1.0, +5.1] slower`.
    Verdict { change: Box<Value>, verdict: String },
    /// A number with a fixed count of decimals, signed with a true minus (`+5.00`,
    /// `−3.20`, `±0.00` for a zero shown), and what follows it.
    Signed {
        value: f64,
        decimals: usize,
        suffix: &'static str,
    },
    /// Half a 95% interval with a fixed count of decimals, and whether the change it
    /// bounds lies inside it (noise): `±12.96~`, else `±12.96 ` (the mark's place kept).
    PlusMinus {
        half: f64,
        decimals: usize,
        noise: bool,
    },
    /// A value with a mark after it saying it rests on too little (`12*`).
    Marked {
        value: Box<Value>,
        mark: &'static str,
    },
    /// A value and what it is of, before it: a frame's longest wait `queue 12`.
    Labelled { label: String, value: Box<Value> },
    /// A value and who caused it, after it: `1.2 ms by kworker/0:1`.
    By { value: Box<Value>, by: String },
    /// A duration in ns, in ms with one decimal and its unit: `1.2 ms`.
    Millis(i64),
    /// A figure an imported histogram's buckets know only between bounds (`None`:
    /// unbounded): one value when they are equal, else both (`render::scaled::between`).
    Between {
        lo: Option<f64>,
        hi: Option<f64>,
        reading: Bounded,
    },
    /// A figure from the history store, in the unit the store keys it by (`microseconds`,
    /// `fps`; empty for none) and at the precision history shows it with.
    Stored {
        value: f64,
        unit: String,
        digits: StoreDigits,
    },
    /// Values side by side, a space apart: a telemetry source's raw readings.
    Several(Vec<Value>),
    /// A set of flags as a source gave them, in hexadecimal: `0x5`.
    Flags(i64),
    /// A place in a file (a function's first byte, a USDT probe's semaphore), in
    /// hexadecimal with at least `digits` digits: `0x001040`.
    Offset { offset: u64, digits: usize },
}

/// How history shows a figure from its store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreDigits {
    /// Four significant digits (an exponent outside 1e-4 to 1e10) and the unit after
    /// (`12.34 µs`): `history check`'s before and after.
    Significant,
    /// No decimal from 1000, one from 100, two from 1, four below; the unit left to the
    /// series' heading: `history show`'s grid.
    Grid,
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
            Value::Missing(mark) | Value::Absent { mark, .. } => (*mark).to_owned(),
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
            Value::Verdict { change, verdict } => match verdict.is_empty() {
                true => change.shown(),
                false => format!("{} {verdict}", change.shown()),
            },
            Value::Signed {
                value,
                decimals,
                suffix,
            } => format!("{}{suffix}", cells::signed_fixed(*value, *decimals)),
            Value::PlusMinus {
                half,
                decimals,
                noise,
            } => format!("±{half:.decimals$}{}", if *noise { "~" } else { " " }),
            Value::Marked { value, mark } => format!("{}{mark}", value.shown()),
            Value::Labelled { label, value } => format!("{label} {}", value.shown()),
            Value::By { value, by } => format!("{} by {by}", value.shown()),
            Value::Millis(ns) => human::ms_fine(*ns),
            Value::Between { lo, hi, reading } => super::scaled::between(*lo, *hi, reading),
            Value::Stored {
                value,
                unit,
                digits,
            } => match digits {
                StoreDigits::Significant => match cells::shown_unit(unit).as_str() {
                    "" => cells::significant(*value),
                    shown => format!("{} {shown}", cells::significant(*value)),
                },
                StoreDigits::Grid => cells::grid_number(*value),
            },
            Value::Several(values) => {
                let shown: Vec<String> = values.iter().map(Value::shown).collect();
                shown.join(" ")
            }
            Value::Flags(bits) => format!("{bits:#x}"),
            Value::Offset { offset, digits } => format!("{offset:#0width$x}", width = digits + 2),
        }
    }

    /// The unit the shown value leaves unsaid (`µs` for a duration in µs), which the table
    /// can name once; `None` for a value that says its unit, has none, or is words.
    pub fn unit(&self) -> Option<String> {
        match self {
            Value::Micros(_) | Value::MeanMicros(_) => Some("µs".into()),
            Value::Absent { unit, .. } => Some((*unit).to_owned()),
            Value::Metric { unit, .. } | Value::Difference { unit, .. } => {
                Some(cells::unit_name(unit).to_owned())
            }
            Value::Marked { value, .. } | Value::Labelled { value, .. } => value.unit(),
            Value::Stored {
                unit,
                digits: StoreDigits::Grid,
                ..
            } => Some(cells::shown_unit(unit)).filter(|u| !u.is_empty()),
            _ => None,
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
        assert_eq!(metric(Some(3.12)).shown(), "120.0 ±3.1%");
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
    fn composite_kinds_show_their_parts_and_keep_the_unit_they_leave_unsaid() {
        let verdict = Value::Verdict {
            change: Box::new(Value::Change {
                ratio: 1.032,
                low: 1.01,
                high: 1.051,
            }),
            verdict: "slower".into(),
        };
        assert_eq!(verdict.shown(), "+3.2% [+1.0, +5.1] slower");
        let wait = Value::Labelled {
            label: "queue".into(),
            value: Box::new(Value::Micros(12_400.0)),
        };
        assert_eq!(
            (wait.shown().as_str(), wait.unit()),
            ("queue 12", Some("µs".into()))
        );
        let by = Value::By {
            value: Box::new(Value::Millis(2_100_000)),
            by: "kworker/0:1".into(),
        };
        assert_eq!(
            (by.shown().as_str(), by.unit()),
            ("2.1 ms by kworker/0:1", None)
        );
        let marked = Value::Marked {
            value: Box::new(Value::Micros(12_400.0)),
            mark: "*",
        };
        assert_eq!(marked.shown(), "12*");
        let signed = |value| Value::Signed {
            value,
            decimals: 2,
            suffix: "",
        };
        assert_eq!(signed(-6.06).shown(), "−6.06");
        assert_eq!(signed(18.0).shown(), "+18.00");
        let plus_minus = |noise| Value::PlusMinus {
            half: 6.57,
            decimals: 2,
            noise,
        };
        assert_eq!(plus_minus(true).shown(), "±6.57~");
        assert_eq!(plus_minus(false).shown(), "±6.57 ");
        let readings = Value::Several(vec![Value::Count(1980), Value::Flags(5)]);
        assert_eq!(readings.shown(), "1980 0x5");
        let offset = |offset: u64, digits: usize| Value::Offset { offset, digits }.shown();
        assert_eq!(offset(0x1040, 6), "0x001040");
        assert_eq!(offset(0x683270, 0), "0x683270");
        assert_eq!(offset(0x1_0000_0000, 6), "0x100000000");
    }

    #[test]
    fn historys_figures_keep_the_stores_unit_and_historys_digits() {
        let stored = |digits| Value::Stored {
            value: 12.345,
            unit: "microseconds".into(),
            digits,
        };
        assert_eq!(stored(StoreDigits::Significant).shown(), "12.35 µs");
        assert_eq!(stored(StoreDigits::Significant).unit(), None);
        assert_eq!(stored(StoreDigits::Grid).shown(), "12.35");
        assert_eq!(stored(StoreDigits::Grid).unit(), Some("µs".into()));
    }

    #[test]
    fn a_value_serialises_as_the_text_it_shows() {
        let row = vec![Value::from("encode"), Value::Micros(12_400.0)];
        assert_eq!(serde_json::to_string(&row).unwrap(), r#"["encode","12"]"#);
    }
}
