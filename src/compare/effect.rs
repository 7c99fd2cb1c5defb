//! A row's change in words, as headlines and tables print it: "1.32× fps [1.27, 1.36]",
//! "total p99 −27%"; signed percentages with a true minus sign.

use super::comparison::Row;
use super::metrics::Unit;

/// "1.32× fps [1.27, 1.36]" for a rate, "−27% [−31, −22]" for the rest; without an
/// interval (one run a side), "1.32× fps" and "total p99 −27%".
pub fn effect_text(row: &Row) -> Option<String> {
    let r = row.ratio?;
    if r.low.is_nan() {
        return Some(if row.unit == Unit::Fps {
            format!("{}× {}", fixed(r.ratio, 2), row.label)
        } else {
            format!("{} {}", row.label, signed_pct(r.ratio, 0))
        });
    }
    Some(if row.unit == Unit::Fps {
        format!(
            "{}× {} [{}, {}]",
            fixed(r.ratio, 2),
            row.label,
            fixed(r.low, 2),
            fixed(r.high, 2)
        )
    } else {
        format!(
            "{} {} [{}, {}]",
            row.label,
            signed_pct(r.ratio, 0),
            signed_pct(r.low, 0).trim_end_matches('%'),
            signed_pct(r.high, 0).trim_end_matches('%')
        )
    })
}

/// The headline metric's change and one more (total p99, CPU per frame, wall or CPU).
pub(super) fn headline_effects(rows: &[Row], headline: Option<&str>) -> Vec<String> {
    let mut wanted: Vec<&str> = Vec::new();
    if let Some(h) = headline {
        wanted.push(h);
    }
    for key in ["total.p99", "cpu_per_frame", "wall", "cpu"] {
        if wanted.len() < 2 && rows.iter().any(|r| r.metric == key) && !wanted.contains(&key) {
            wanted.push(key);
        }
    }
    wanted
        .into_iter()
        .filter_map(|key| rows.iter().find(|r| r.metric == key).and_then(effect_text))
        .collect()
}

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

pub fn fixed(v: f64, decimals: usize) -> String {
    if v.is_infinite() {
        return "∞".into();
    }
    format!("{v:.decimals$}")
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
}
