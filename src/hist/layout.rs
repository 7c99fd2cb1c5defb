//! The two histogram layouts, as text.
//!
//! - Power of two, bpftrace's: a bucket per power of two (`[0]`, `[1]`, `[2, 4)`, …, `[1K, 2K)`
//!   with K = 1024), the label left-aligned in 16 columns, the count right-aligned in 8,
//!   then a bar of `@` 52 wide scaled to the largest count. Empty buckets before the first
//!   and after the last non-empty one are left out, as bpftrace does.
//! - Linear: buckets `step` wide, and above them count, min, max, mean, standard
//!   deviation and median, so the shape and the numbers come together.

use crate::model::Bucket;

const BAR_WIDTH: u64 = 52;

/// Power-of-two buckets of non-negative integer values: `[0]`, `[1]`, `[2, 4)`, ...
/// Negative values go to one `(..., 0)` bucket.
pub fn log2_buckets(values: &[i64]) -> Vec<Bucket> {
    let mut negative = 0u64;
    // Index 0: the value 0; index k ≥ 1: [2^(k-1), 2^k).
    let mut counts = [0u64; 65];
    for &v in values {
        if v < 0 {
            negative += 1;
        } else {
            counts[(64 - (v as u64).leading_zeros()) as usize] += 1;
        }
    }
    let mut buckets = Vec::new();
    if negative > 0 {
        buckets.push(Bucket {
            lo: None,
            hi: Some(0),
            count: negative,
        });
    }
    for (k, &count) in counts.iter().enumerate() {
        let (lo, hi) = match k {
            0 => (0, 1),
            _ => (1i64 << (k - 1), (1i64 << (k - 1)).saturating_mul(2)),
        };
        buckets.push(Bucket {
            lo: Some(lo),
            hi: Some(hi),
            count,
        });
    }
    buckets
}

/// Buckets `step` wide from the one holding the smallest value to the one holding the largest.
pub fn linear_buckets(values: &[i64], step: i64) -> Vec<Bucket> {
    let step = step.max(1);
    let (Some(&min), Some(&max)) = (values.iter().min(), values.iter().max()) else {
        return Vec::new();
    };
    let first = min.div_euclid(step);
    let last = max.div_euclid(step);
    let mut counts = vec![0u64; (last - first + 1) as usize];
    for &v in values {
        counts[(v.div_euclid(step) - first) as usize] += 1;
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, count)| {
            let lo = (first + i as i64).saturating_mul(step);
            Bucket {
                lo: Some(lo),
                hi: Some(lo.saturating_add(step)),
                count,
            }
        })
        .collect()
}

/// `1K`, `16M`: bpftrace's bound labels, powers of 1024 with a suffix when exact.
fn bound(v: i64) -> String {
    const SUFFIXES: [&str; 6] = ["", "K", "M", "G", "T", "P"];
    let mut value = v;
    let mut i = 0;
    while i + 1 < SUFFIXES.len() && value != 0 && value % 1024 == 0 {
        value /= 1024;
        i += 1;
    }
    format!("{value}{}", SUFFIXES[i])
}

/// bpftrace's bucket label: `[0]`, `[2, 4)`, `[1K, 2K)`, `(..., 0)`, `[100, ...)`.
pub fn label(b: &Bucket) -> String {
    match (b.lo, b.hi) {
        (Some(lo), Some(hi)) if hi == lo.saturating_add(1) => format!("[{}]", bound(lo)),
        (Some(lo), Some(hi)) => format!("[{}, {})", bound(lo), bound(hi)),
        (None, Some(hi)) => format!("(..., {})", bound(hi)),
        (Some(lo), None) => format!("[{}, ...)", bound(lo)),
        (None, None) => "(..., ...)".into(),
    }
}

/// A linear bucket's label in `per_unit` units: `[800, 900)`.
pub fn scaled_label(b: &Bucket, per_unit: f64) -> String {
    let show = |v: Option<i64>| v.map_or("...".to_string(), |v| format!("{}", v as f64 / per_unit));
    format!("[{}, {})", show(b.lo), show(b.hi))
}

/// Bucket lines in bpftrace's layout, leading and trailing empty buckets left out.
pub fn bars(buckets: &[Bucket], label: &dyn Fn(&Bucket) -> String) -> String {
    let first = buckets.iter().position(|b| b.count > 0);
    let last = buckets.iter().rposition(|b| b.count > 0);
    let (Some(first), Some(last)) = (first, last) else {
        return String::new();
    };
    let shown = &buckets[first..=last];
    let largest = shown.iter().map(|b| b.count).max().unwrap_or(1).max(1);
    let mut out = String::new();
    for b in shown {
        let width = (b.count.saturating_mul(BAR_WIDTH) / largest) as usize;
        out.push_str(&format!(
            "{:<16}{:>8} |{}{}|\n",
            label(b),
            b.count,
            "@".repeat(width),
            " ".repeat(BAR_WIDTH as usize - width)
        ));
    }
    out
}

/// Count, min, max, mean, SD and median of `values` (in `unit`, `per_unit` ns each).
pub fn summary_line(values: &[i64], unit: &str, per_unit: f64) -> String {
    if values.is_empty() {
        return "count 0".into();
    }
    let n = values.len() as f64;
    let mean = values.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = if values.len() > 1 {
        values
            .iter()
            .map(|&v| (v as f64 - mean).powi(2))
            .sum::<f64>()
            / (n - 1.0)
    } else {
        0.0
    };
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let mid = sorted.len() / 2;
    let median = if sorted.len() % 2 == 1 {
        sorted[mid] as f64
    } else {
        (sorted[mid - 1] as f64 + sorted[mid] as f64) / 2.0
    };
    let show = |ns: f64| format_value(ns / per_unit);
    format!(
        "count {}  min {} {unit}  max {} {unit}  mean {} {unit}  sd {} {unit}  median {} {unit}",
        values.len(),
        show(sorted[0] as f64),
        show(sorted[sorted.len() - 1] as f64),
        show(mean),
        show(var.sqrt()),
        show(median),
    )
}

/// Four significant digits, no exponent: 0.8125, 12.34, 1234.
fn format_value(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{x:.digits$}")
}

/// The unit a linear step reads best in: `(name, ns per unit)`.
pub fn unit_for_step(step_ns: i64) -> (&'static str, f64) {
    if step_ns >= 1_000_000 && step_ns % 1_000_000 == 0 {
        ("ms", 1e6)
    } else if step_ns >= 1_000 && step_ns % 1_000 == 0 {
        ("µs", 1e3)
    } else {
        ("ns", 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_buckets_follow_bpftrace() {
        let b = log2_buckets(&[0, 1, 2, 3, 4, 7, 8, 1024, 2047, -5]);
        let nonzero: Vec<(Option<i64>, Option<i64>, u64)> = b
            .iter()
            .filter(|b| b.count > 0)
            .map(|b| (b.lo, b.hi, b.count))
            .collect();
        assert_eq!(
            nonzero,
            vec![
                (None, Some(0), 1),
                (Some(0), Some(1), 1),
                (Some(1), Some(2), 1),
                (Some(2), Some(4), 2),
                (Some(4), Some(8), 2),
                (Some(8), Some(16), 1),
                (Some(1024), Some(2048), 2),
            ]
        );
        assert_eq!(label(&b[12]), "[1K, 2K)");
    }

    #[test]
    fn the_largest_value_has_a_bucket() {
        let b = log2_buckets(&[i64::MAX]);
        assert_eq!(b.iter().map(|b| b.count).sum::<u64>(), 1);
    }

    #[test]
    fn linear_buckets_cover_min_to_max() {
        let b = linear_buckets(&[5, 15, 15, 39, -1], 10);
        let got: Vec<(i64, u64)> = b.iter().map(|b| (b.lo.unwrap(), b.count)).collect();
        assert_eq!(got, vec![(-10, 1), (0, 1), (10, 2), (20, 0), (30, 1)]);
    }

    #[test]
    fn bars_are_scaled_to_the_largest_and_trimmed() {
        let b = log2_buckets(&[3, 3, 3, 3, 9]);
        let text = bars(&b, &label);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(
            lines[0],
            format!("[2, 4)                 4 |{}|", "@".repeat(52))
        );
        assert_eq!(
            lines[1],
            format!("[4, 8)                 0 |{}|", " ".repeat(52))
        );
        assert_eq!(
            lines[2],
            format!(
                "[8, 16)                1 |{}{}|",
                "@".repeat(13),
                " ".repeat(39)
            )
        );
    }

    #[test]
    fn summary_statistics() {
        let line = summary_line(&[1000, 2000, 3000, 4000], "µs", 1e3);
        assert_eq!(
            line,
            "count 4  min 1.000 µs  max 4.000 µs  mean 2.500 µs  sd 1.291 µs  median 2.500 µs"
        );
    }
}
