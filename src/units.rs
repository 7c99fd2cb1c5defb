//! Parsing and printing of durations and rates, with errors that say what to type instead.

use std::time::Duration;

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
