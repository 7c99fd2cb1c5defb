//! Shared cell formatting: a value in its unit's usual precision, a unit's short name, a
//! ratio as a signed percentage, a difference with a true minus, a change with its
//! interval, a p-value, history's figures at its precisions. Typed cells (`render::Value`)
//! are shown through these, so the same number reads the same everywhere.

use crate::analyze::metrics::Unit;

/// A ratio as a signed percentage change with a true minus sign: "+3.2%", "−27%".
pub fn signed_pct(ratio: f64, decimals: usize) -> String {
    if !ratio.is_finite() {
        return "+∞%".into();
    }
    let pct = (ratio - 1.0) * 100.0;
    let text = format!("{:.*}", decimals, pct.abs());
    let zero = text.chars().all(|c| c == '0' || c == '.');
    let sign = if zero {
        "±"
    } else if pct < 0.0 {
        "−"
    } else {
        "+"
    };
    format!("{sign}{text}%")
}

/// A change in percent with its interval: `+3.2% [1.0, 5.1]`; without one (NaN bounds: one
/// run a side), the percentage alone.
pub fn change_with_interval(ratio: f64, low: f64, high: f64) -> String {
    if low.is_nan() || high.is_nan() {
        return signed_pct(ratio, 1);
    }
    format!(
        "{} [{}, {}]",
        signed_pct(ratio, 1),
        signed_pct(low, 1).trim_end_matches('%'),
        signed_pct(high, 1).trim_end_matches('%')
    )
}

/// An absolute change in `unit`, signed with a true minus: "+192.0", "−0.42", "±0.0".
pub fn difference(unit: &Unit, d: f64, resolution: Option<f64>) -> String {
    let shown = value_to(unit, d.abs(), resolution);
    let zero = shown.chars().all(|c| c == '0' || c == '.');
    let sign = if zero {
        "±"
    } else if d < 0.0 {
        "−"
    } else {
        "+"
    };
    format!("{sign}{shown}")
}

/// A number with `decimals` decimals, signed with a true minus: "+5.00", "−3.20", and
/// "±0.00" for one that shows as zero.
pub fn signed_fixed(v: f64, decimals: usize) -> String {
    let shown = format!("{:.decimals$}", v.abs());
    let zero = shown.chars().all(|c| c == '0' || c == '.');
    let sign = if zero {
        "±"
    } else if v < 0.0 {
        "−"
    } else {
        "+"
    };
    format!("{sign}{shown}")
}

/// Four significant digits, without an exponent for everyday magnitudes (`history
/// check`'s figures).
pub fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let magnitude = v.abs().log10().floor() as i32;
    if !(-4..=9).contains(&magnitude) {
        return format!("{v:.3e}");
    }
    let decimals = (3 - magnitude).max(0) as usize;
    format!("{v:.decimals$}")
}

/// A number with four significant digits or so, in `history show`'s grid.
pub fn grid_number(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// A p-value with four decimals, or `<0.0001`.
pub fn p_value(p: f64) -> String {
    if p < 0.0001 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
}

pub fn fixed(v: f64, decimals: usize) -> String {
    if v.is_infinite() {
        return "∞".into();
    }
    format!("{v:.decimals$}")
}

pub fn unit_name(unit: &Unit) -> &str {
    match unit {
        Unit::Fps => "fps",
        Unit::Microseconds => "µs",
        Unit::Seconds => "s",
        Unit::Percent => "%",
        Unit::Bytes => "MiB",
        Unit::Joules => "J",
        Unit::Watts => "W",
        Unit::Cores => "cores",
        Unit::Custom(text) => text,
    }
}

/// The unit of a metric's values as the machine formats (CSV, JSON) write them, unscaled:
/// bytes stay bytes there, while the tables print them as MiB ([`unit_name`]).
pub fn value_unit_name(unit: &Unit) -> &str {
    match unit {
        Unit::Bytes => "bytes",
        other => unit_name(other),
    }
}

/// The unit named `key` (as the history store keeps it) as the machine formats write values
/// in it: `microseconds` is `µs`, `bytes` stays bytes; empty for none.
pub fn shown_unit(key: &str) -> String {
    value_unit_name(&Unit::from_key(key)).to_owned()
}

/// A value in its unit's usual precision, but no finer than `resolution` (in the same
/// unit) when it is known: CPU seconds from clock ticks print two decimals, not three.
pub fn value_to(unit: &Unit, v: f64, resolution: Option<f64>) -> String {
    let usual = value(unit, v);
    match resolution {
        Some(r) if *unit != Unit::Bytes => {
            let decimals = usual.split_once('.').map_or(0, |(_, d)| d.len());
            crate::units::fixed_to_resolution(v, r, decimals)
        }
        _ => usual,
    }
}

/// A value in its unit's usual precision (bytes as MiB).
pub fn value(unit: &Unit, v: f64) -> String {
    match unit {
        Unit::Bytes => format!("{:.1}", v / (1024.0 * 1024.0)),
        // Milliseconds as usual; below one, three significant digits rather than a
        // "0.000" beside a change of thousands of percent.
        Unit::Seconds if v != 0.0 && v.abs() < 0.001 => {
            let decimals = (2 - v.abs().log10().floor() as i32).clamp(3, 12) as usize;
            format!("{v:.decimals$}")
        }
        Unit::Seconds => format!("{v:.3}"),
        Unit::Percent => format!("{v:.2}"),
        // Four decimals (a frame's joules), or three significant digits below 0.001 J
        // (a request's).
        Unit::Joules => {
            let small = v != 0.0 && v.abs() < 0.001;
            let decimals = if small {
                (2 - v.abs().log10().floor() as i32).clamp(4, 12) as usize
            } else {
                4
            };
            format!("{v:.decimals$}")
        }
        Unit::Cores => format!("{v:.2}"),
        Unit::Fps | Unit::Microseconds | Unit::Watts => {
            let a = v.abs();
            if a >= 1000.0 {
                format!("{v:.0}")
            } else if a >= 10.0 {
                format!("{v:.1}")
            } else {
                format!("{v:.2}")
            }
        }
        // A program's own number: at least three significant digits, whatever its scale.
        // A whole number (a count) as it is.
        Unit::Custom(_) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        Unit::Custom(_) => {
            let a = v.abs();
            let decimals = if a >= 1000.0 || a == 0.0 {
                if v.fract() == 0.0 {
                    0
                } else {
                    1
                }
            } else {
                (2 - a.log10().floor() as i32).clamp(1, 9) as usize
            };
            format!("{v:.decimals$}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_percentages_use_a_true_minus() {
        assert_eq!(signed_pct(0.73, 0), "−27%");
        assert_eq!(signed_pct(1.032, 1), "+3.2%");
        assert_eq!(signed_pct(1.0001, 1), "±0.0%");
        assert_eq!(signed_pct(f64::INFINITY, 1), "+∞%");
    }

    #[test]
    fn signed_numbers_use_a_true_minus_and_a_zero_no_sign_of_its_own() {
        assert_eq!(signed_fixed(5.0, 2), "+5.00");
        assert_eq!(signed_fixed(-3.2, 2), "−3.20");
        assert_eq!(signed_fixed(-0.001, 2), "±0.00");
    }

    #[test]
    fn historys_precisions() {
        assert_eq!(significant(12.345), "12.35");
        assert_eq!(significant(0.00001234), "1.234e-5");
        assert_eq!(grid_number(112.44), "112.4");
        assert_eq!(grid_number(0.123456), "0.1235");
        assert_eq!(grid_number(1234.4), "1234");
    }

    #[test]
    fn sub_millisecond_seconds_keep_three_significant_digits() {
        // A daemon that woke once in the baseline: not "0.000" beside "+6849%".
        assert_eq!(value_to(&Unit::Seconds, 0.000296, Some(1e-9)), "0.000296");
        assert_eq!(value(&Unit::Seconds, 0.0000412), "0.0000412");
        assert_eq!(value(&Unit::Seconds, 0.098), "0.098");
        assert_eq!(value(&Unit::Seconds, 0.0), "0.000");
        // From clock ticks there is nothing below 10 ms to show.
        assert_eq!(value_to(&Unit::Seconds, 0.0003, Some(0.01)), "0.00");
    }

    #[test]
    fn cpu_figures_print_no_finer_than_their_resolution() {
        // CPU seconds of runs read in clock ticks: `0.26`, never `0.260`.
        assert_eq!(value_to(&Unit::Seconds, 0.26, Some(0.01)), "0.26");
        // From the process CPU clock: the table's usual three decimals.
        assert_eq!(value_to(&Unit::Seconds, 0.261234, Some(1e-9)), "0.261");
        // A load over a 2 s window in ticks (0.5%): whole percent.
        assert_eq!(value_to(&Unit::Percent, 31.24, Some(0.5)), "31");
        // Unknown resolution (older files): as before.
        assert_eq!(value_to(&Unit::Seconds, 0.26, None), "0.260");
    }

    #[test]
    fn a_programs_own_numbers_keep_three_significant_digits() {
        let custom = Unit::Custom("req/s".into());
        assert_eq!(value(&custom, 14236.48), "14236.5");
        assert_eq!(value(&custom, 2000.0), "2000");
        assert_eq!(value(&custom, 123.456), "123.5");
        assert_eq!(value(&custom, 1.23456), "1.23");
        assert_eq!(value(&custom, 0.0123456), "0.0123");
        assert_eq!(value(&custom, 0.0), "0");
        assert_eq!(value(&custom, 118.0), "118");
        assert_eq!(value(&custom, -39.0), "-39");
        assert_eq!(unit_name(&custom), "req/s");
    }
}
