//! Parsing and printing of durations and rates, with errors that say what to type instead.

use std::time::Duration;

/// `1 frame`, `2 frames`: a count and its noun, singular or plural.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Parses `250ms`, `5s`, `1.5s`, `16.667ms`, `100us`, `2m`, `1h`. A unit is required:
/// `5` is ambiguous (seconds? frames?) and refused with a hint.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return Err(format!(
            "'{text}' is not a duration: write a number and a unit, e.g. 5s or 250ms"
        ));
    }
    let value: f64 = number.parse().map_err(|_| {
        format!("'{text}' is not a duration: write a number and a unit, e.g. 5s or 250ms")
    })?;
    let scale_ns = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" | "sec" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        // A zero's example is not the user's own number: some options refuse zero.
        "" if value == 0.0 => {
            return Err(format!(
                "'{text}' has no unit: write a number and a unit, e.g. 5s or 250ms"
            ))
        }
        "" => {
            return Err(format!(
                "'{text}' has no unit: write e.g. {text}s or {text}ms"
            ))
        }
        other => {
            return Err(format!(
                "'{other}' is not a time unit in '{text}': use ns, us, ms, s, m or h"
            ))
        }
    };
    let ns = value * scale_ns;
    if !ns.is_finite() || ns > u64::MAX as f64 {
        return Err(format!("'{text}' is too long a duration"));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// Parses a frame rate: a positive, finite number.
pub fn parse_fps(text: &str) -> Result<f64, String> {
    let fps: f64 = text.trim().parse().map_err(|_| {
        format!("'{text}' is not a frame rate: write a positive number, e.g. 60 or 59.94")
    })?;
    if !fps.is_finite() || fps <= 0.0 {
        return Err(format!(
            "'{text}' is not a usable frame rate: it must be a positive number, e.g. 60"
        ));
    }
    Ok(fps)
}

/// A positive count (`--frames N`).
pub fn parse_count(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{text}' is not a positive whole number")),
    }
}

/// Seconds with two decimals, for headers (`25.00 s`).
pub fn seconds(ns: i64) -> String {
    format!("{:.2} s", ns as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_with_units() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(
            parse_duration("16.667ms").unwrap(),
            Duration::from_nanos(16_667_000)
        );
        assert_eq!(parse_duration("100us").unwrap(), Duration::from_micros(100));
        assert_eq!(parse_duration("100µs").unwrap(), Duration::from_micros(100));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration(" 3 s").unwrap(), Duration::from_secs(3));
    }

    #[test]
    fn bad_durations_say_what_to_type() {
        assert!(parse_duration("5").unwrap_err().contains("5s"));
        assert!(parse_duration("abc").unwrap_err().contains("e.g. 5s"));
        assert!(parse_duration("5parsecs")
            .unwrap_err()
            .contains("not a time unit"));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("-5s").is_err());
    }

    #[test]
    fn frame_rates() {
        assert_eq!(parse_fps("59.94").unwrap(), 59.94);
        for bad in ["0", "-5", "abc", "inf", "NaN", ""] {
            assert!(parse_fps(bad).is_err(), "{bad}");
        }
    }
}

/// How many decimals a value measured to `resolution` (in the unit printed) can show: the
/// last digit printed is never finer than the resolution (10 ms is 2 decimals of a second,
/// 0.5% is none), and at most `max`. An unknown resolution (0, negative, not finite) gets
/// `max`.
pub fn decimals_for(resolution: f64, max: usize) -> usize {
    if !(resolution > 0.0 && resolution.is_finite()) {
        return max;
    }
    // The epsilon keeps exact powers of ten (0.01) from landing a digit short.
    let digits = (-resolution.log10() + 1e-9).floor();
    if digits <= 0.0 {
        0
    } else {
        (digits as usize).min(max)
    }
}

/// `value` printed with no more precision than `resolution` (same unit) supports, and at
/// most `max` decimals: `98.2` at a resolution of 0.05 but `98` at 0.5; a resolution of ten
/// or more also rounds the whole part (`2822` at 333 prints `2800`).
pub fn fixed_to_resolution(value: f64, resolution: f64, max: usize) -> String {
    if !value.is_finite() {
        return format!("{value}");
    }
    if resolution.is_finite() && resolution >= 10.0 {
        let step = shown_step(resolution, max);
        return format!("{:.0}", (value / step).round() * step);
    }
    let decimals = decimals_for(resolution, max);
    format!("{value:.decimals$}")
}

/// The power of ten `fixed_to_resolution` shows a value of `resolution` to: 0.1 for 0.05,
/// 1 for 0.5, 100 for 333.
pub fn shown_step(resolution: f64, max: usize) -> f64 {
    if resolution.is_finite() && resolution >= 10.0 {
        10f64.powf((resolution.log10() + 1e-9).floor())
    } else {
        10f64.powi(-(decimals_for(resolution, max) as i32))
    }
}

#[cfg(test)]
mod resolution_tests {
    use super::*;

    #[test]
    fn no_more_digits_than_the_source_has() {
        // CPU seconds from clock ticks (10 ms): two decimals, never three.
        assert_eq!(decimals_for(0.01, 3), 2);
        assert_eq!(fixed_to_resolution(0.26, 0.01, 3), "0.26");
        // From the process CPU clock (1 ns): as many as the layout wants.
        assert_eq!(fixed_to_resolution(0.261234, 1e-9, 3), "0.261");
        // A load % from ticks over a 1.94 s window: one tick is 0.52%, so no decimal.
        assert_eq!(fixed_to_resolution(98.24, 0.01 / 1.94 * 100.0, 1), "98");
        // ... over 25 s, 0.04%: the one decimal the table prints.
        assert_eq!(fixed_to_resolution(98.24, 0.04, 1), "98.2");
        // A load from ticks over 50 ms (a tick is 20%) and its cores agree: 10 and 0.1.
        let load = crate::analyze::cpu::load_resolution_pct(10_000_000, 50_000_000);
        assert_eq!(fixed_to_resolution(12.0, load, 1), "10");
        let cores = crate::analyze::cpu::cores_resolution(load, 1);
        assert_eq!(fixed_to_resolution(0.12, cores, 2), "0.1");
        // CPU per frame, 10 ms over 30 frames = 333 µs: whole hundreds of µs.
        assert_eq!(fixed_to_resolution(2822.0, 333.3, 0), "2800");
        assert_eq!(fixed_to_resolution(2822.0, 3.3, 1), "2822");
        // Unknown: the layout's own precision.
        assert_eq!(fixed_to_resolution(1.23456, 0.0, 3), "1.235");
        assert_eq!(fixed_to_resolution(f64::INFINITY, 0.01, 2), "inf");
        assert_eq!(decimals_for(f64::NAN, 4), 4);
        assert_eq!(decimals_for(1.0, 4), 0);
        assert_eq!(decimals_for(0.1, 4), 1);
        assert_eq!(decimals_for(0.099, 4), 1, "0.01 would be finer than 0.099");
    }
}
