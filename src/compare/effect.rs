//! A row's change in words, as headlines and tables print it: "1.32× fps [1.27, 1.36]",
//! "total p99 −27%"; signed percentages with a true minus sign.

use super::comparison::Row;
use super::metrics::Unit;
use crate::render::cells::{fixed, signed_pct};

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
