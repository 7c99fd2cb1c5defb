//! What a histogram's buckets say about its values, and no more: the count exactly, and the
//! share below a value and each percentile as bounds. A bucket `[lo, hi)` holds integer
//! values `lo ..= hi - 1` (bpftrace's hist() and lhist() keep integers); where a value
//! falls is known to the bucket only, so a share whose threshold splits a bucket is an
//! interval, and a percentile is the bucket (or the two buckets) its ranks fall in.

use serde::{Deserialize, Serialize};

use crate::model::Bucket;

/// The percentiles every histogram shows (p50, p90, p99, p99.9).
pub const PERCENTILES: [f64; 4] = [0.50, 0.90, 0.99, 0.999];

pub use crate::render::scaled::{scale_of, show_share, show_value, Quantity, Scale};

/// The units `--unit` takes.
pub const UNITS: &str = "ns, us, ms, s or bytes";

/// `--unit`: the unit of imported histograms whose map name does not say it.
pub fn parse_unit(text: &str) -> Result<String, String> {
    let unit = match text.trim() {
        "µs" => "us",
        other => other,
    };
    match scale_of(unit) {
        Some(_) => Ok(unit.to_owned()),
        None => Err(format!(
            "'{text}' is not a unit framelab reads: give {UNITS}"
        )),
    }
}

/// `--below 1ms`, `--above 4KiB`: a value with its unit, in base units (ns or bytes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// As given: `1ms`.
    pub text: String,
    pub quantity: Quantity,
    /// In ns for a time, bytes for a size.
    pub amount: f64,
}

const THRESHOLD_UNITS: &str = "ns, us, ms or s for a time; B, KiB, MiB or GiB for a size";

/// Parses `1ms`, `250us`, `1.5s`, `4KiB`: a number and a unit, which is required (`1000`
/// alone could be any unit).
pub fn parse_threshold(text: &str) -> Result<Threshold, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let value: f64 = number.parse().map_err(|_| {
        format!("'{text}' is not a value: write a number and a unit ({THRESHOLD_UNITS}), e.g. 1ms")
    })?;
    let (quantity, per_unit) = match unit.trim() {
        "ns" => (Quantity::Time, 1.0),
        "us" | "µs" => (Quantity::Time, 1e3),
        "ms" => (Quantity::Time, 1e6),
        "s" => (Quantity::Time, 1e9),
        "B" => (Quantity::Bytes, 1.0),
        "KiB" => (Quantity::Bytes, 1024.0),
        "MiB" => (Quantity::Bytes, 1024.0 * 1024.0),
        "GiB" => (Quantity::Bytes, 1024.0 * 1024.0 * 1024.0),
        "" => {
            return Err(format!(
                "'{text}' has no unit: give one of {THRESHOLD_UNITS}, e.g. {trimmed}us"
            ))
        }
        other => {
            return Err(format!(
                "'{other}' in '{text}' is not a unit here: give one of {THRESHOLD_UNITS}"
            ))
        }
    };
    let amount = value * per_unit;
    if !amount.is_finite() || amount > i64::MAX as f64 {
        return Err(format!("'{text}' is too large"));
    }
    Ok(Threshold {
        text: trimmed.to_owned(),
        quantity,
        amount,
    })
}

/// How many values lie below a threshold: at least `certain`, at most `certain + split`,
/// `split` being the count of the bucket the threshold falls inside (0 when it falls on a
/// bucket bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Below {
    pub certain: u64,
    pub split: u64,
    pub of: u64,
    /// The bucket the threshold falls inside, when it does.
    #[serde(skip)]
    pub split_bucket: Option<Bucket>,
}

impl Below {
    /// The share as bounds, 0 to 1.
    pub fn share(&self) -> (f64, f64) {
        if self.of == 0 {
            return (f64::NAN, f64::NAN);
        }
        let of = self.of as f64;
        (
            self.certain as f64 / of,
            (self.certain + self.split) as f64 / of,
        )
    }
}

/// What a histogram's values are between its bucket bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values {
    /// Integers, as bpftrace's are: `v < 2.5` is `v < 3`.
    Integers,
    /// Any value in `[lo, hi)`: spans' µs buckets hold whole µs floored from ns, so
    /// bucket `[0, 1)` holds 0–999 ns and 0.5 µs lies inside it.
    Continuous,
}

/// The values below `threshold` (in the histogram's own values: `2.5` when the unit is µs
/// and the threshold 2.5 µs): exact when it falls on a bucket bound, else a range.
pub fn below(buckets: &[Bucket], threshold: f64, values: Values) -> Below {
    let t = match values {
        Values::Integers => threshold.ceil(),
        Values::Continuous => threshold,
    };
    let mut result = Below {
        certain: 0,
        split: 0,
        of: 0,
        split_bucket: None,
    };
    for b in buckets {
        result.of += b.count;
        let all_below = b.hi.is_some_and(|hi| hi as f64 <= t);
        let none_below = b.lo.is_some_and(|lo| lo as f64 >= t);
        if all_below {
            result.certain += b.count;
        } else if !none_below && b.count > 0 {
            result.split += b.count;
            result.split_bucket = Some(*b);
        }
    }
    result
}

/// Where a percentile lies: within `[lo, hi)` (`None`: unbounded on that side).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Within {
    pub lo: Option<i64>,
    pub hi: Option<i64>,
}

/// The bounds of the `p` percentile (0 to 1) as framelab defines it (linear interpolation
/// between the order statistics at h = p·(N−1), docs/metrics.md): between the lower bound
/// of the bucket holding rank ⌊h⌋ and the upper bound of the one holding rank ⌈h⌉.
/// `None` for an empty histogram.
pub fn percentile(buckets: &[Bucket], p: f64) -> Option<Within> {
    let n: u64 = buckets.iter().map(|b| b.count).sum();
    if n == 0 {
        return None;
    }
    let h = p.clamp(0.0, 1.0) * (n - 1) as f64;
    let (low_rank, high_rank) = (h.floor() as u64, h.ceil() as u64);
    let bucket_of = |rank: u64| {
        let mut seen = 0u64;
        buckets
            .iter()
            .find(|b| {
                seen += b.count;
                seen > rank
            })
            .copied()
    };
    let (low, high) = (bucket_of(low_rank)?, bucket_of(high_rank)?);
    Some(Within {
        lo: low.lo,
        hi: high.hi,
    })
}

/// `p50`, `p90`, `p99.9`.
pub fn percentile_name(p: f64) -> String {
    let pct = p * 100.0;
    if (pct - pct.round()).abs() < 1e-9 {
        format!("p{}", pct.round())
    } else {
        format!("p{}", (pct * 1000.0).round() / 1000.0)
    }
}

/// `[8.192 µs, 16.38 µs)`, `[100 ms, ∞)`: a bucket's bounds as people read them.
pub fn show_within(within: Within, scale: Option<Scale>) -> String {
    let lo = within
        .lo
        .map_or("−∞".to_owned(), |v| show_value(v as f64, scale));
    let hi = within
        .hi
        .map_or("∞".to_owned(), |v| show_value(v as f64, scale));
    format!("[{lo}, {hi})")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(lo: i64, hi: i64, count: u64) -> Bucket {
        Bucket {
            lo: Some(lo),
            hi: Some(hi),
            count,
        }
    }

    #[test]
    fn a_threshold_on_a_bound_is_exact_and_inside_a_bucket_an_interval() {
        let buckets = [b(0, 10, 3), b(10, 20, 5), b(20, 30, 2)];
        let on = below(&buckets, 10.0, Values::Integers);
        assert_eq!((on.certain, on.split, on.of), (3, 0, 10));
        let inside = below(&buckets, 15.0, Values::Integers);
        assert_eq!((inside.certain, inside.split), (3, 5));
        assert_eq!(inside.share(), (0.3, 0.8));
        // Integers: below 10.5 is below 11, still inside [10, 20).
        assert_eq!(below(&buckets, 10.5, Values::Integers).split, 5);
        // Values of [1] (= [1, 2)) are all below 1.5.
        assert_eq!(below(&[b(1, 2, 4)], 1.5, Values::Integers).certain, 4);
        // Continuous values (spans' floored µs): 0.5 lies inside [0, 1), 1.0 on its bound.
        let spans = [b(0, 1, 3), b(1, 2, 4)];
        let inside = below(&spans, 0.5, Values::Continuous);
        assert_eq!((inside.certain, inside.split), (0, 3));
        assert_eq!(below(&spans, 1.0, Values::Continuous).split, 0);
        let open = [
            Bucket {
                lo: Some(20),
                hi: None,
                count: 7,
            },
            b(0, 20, 1),
        ];
        assert_eq!(below(&open, 25.0, Values::Integers).split, 7);
        assert_eq!(below(&open, 20.0, Values::Integers).split, 0);
    }

    #[test]
    fn percentiles_are_the_buckets_their_ranks_fall_in() {
        let buckets = [b(0, 10, 5), b(10, 20, 5)];
        // h = 0.5 × 9 = 4.5: ranks 4 and 5, one in each bucket.
        assert_eq!(
            percentile(&buckets, 0.5),
            Some(Within {
                lo: Some(0),
                hi: Some(20)
            })
        );
        // h = 0.9 × 9 = 8.1: ranks 8 and 9, both in the second.
        assert_eq!(
            percentile(&buckets, 0.9),
            Some(Within {
                lo: Some(10),
                hi: Some(20)
            })
        );
        assert_eq!(percentile(&[b(0, 10, 0)], 0.5), None);
    }

    #[test]
    fn thresholds_need_a_unit() {
        assert_eq!(parse_threshold("1ms").unwrap().amount, 1e6);
        assert_eq!(parse_threshold("4KiB").unwrap().quantity, Quantity::Bytes);
        let err = parse_threshold("1000").unwrap_err();
        assert!(
            err.contains("no unit") && err.contains("ns, us, ms or s"),
            "{err}"
        );
        assert!(parse_threshold("1 parsec").is_err());
    }

    #[test]
    fn values_read_as_times_sizes_or_numbers() {
        let ns = scale_of("ns");
        assert_eq!(show_value(16384.0, ns), "16.38 µs");
        assert_eq!(show_value(2048.0, scale_of("bytes")), "2 KiB");
        assert_eq!(show_value(7.0, None), "7");
        assert_eq!(percentile_name(0.999), "p99.9");
        assert_eq!(percentile_name(0.5), "p50");
    }
}
