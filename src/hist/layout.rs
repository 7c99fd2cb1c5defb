//! The two histogram layouts: their buckets, labels and summary lines, as bars the
//! writers draw (`render::chart`: bpftrace's bars in text, a table in Markdown).
//!
//! - Power of two, bpftrace's: a bucket per power of two (`[0]`, `[1]`, `[2, 4)`, …, `[1K, 2K)`
//!   with K = 1024). Empty buckets before the first and after the last non-empty one are
//!   left out, as bpftrace does.
//! - Linear: buckets `step` wide, and above them count, min, max, mean, standard
//!   deviation and median, so the shape and the numbers come together.

use crate::model::Bucket;
use crate::render::chart::Bar;

/// Power-of-two buckets of non-negative integer values: `[0]`, `[1]`, `[2, 4)`, ...
/// Negative values go to one `(..., 0)` bucket.
pub fn log2_buckets(values: &[i64]) -> Vec<Bucket> {
    log2_buckets_of(values.iter().copied())
}

/// [`log2_buckets`] of values as they come.
pub fn log2_buckets_of(values: impl Iterator<Item = i64>) -> Vec<Bucket> {
    let mut counts = Log2Counts::default();
    values.for_each(|v| counts.add(v));
    counts.buckets()
}

/// Power-of-two buckets counted as the values come, none of them held.
#[derive(Clone, Debug)]
pub struct Log2Counts {
    negative: u64,
    /// Index 0: the value 0; index k ≥ 1: [2^(k-1), 2^k).
    counts: [u64; 65],
}

impl Default for Log2Counts {
    fn default() -> Log2Counts {
        Log2Counts {
            negative: 0,
            counts: [0; 65],
        }
    }
}

impl Log2Counts {
    pub fn add(&mut self, v: i64) {
        if v < 0 {
            self.negative += 1;
        } else {
            self.counts[(64 - (v as u64).leading_zeros()) as usize] += 1;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.negative == 0 && self.counts.iter().all(|&c| c == 0)
    }

    /// Every bucket, empty ones included; negative values in one `(..., 0)` bucket first.
    pub fn buckets(&self) -> Vec<Bucket> {
        let mut buckets = Vec::new();
        if self.negative > 0 {
            buckets.push(Bucket {
                lo: None,
                hi: Some(0),
                count: self.negative,
            });
        }
        for (k, &count) in self.counts.iter().enumerate() {
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
}

/// Linear buckets drawn at most, unless `--buckets` asks for a count: a step that would
/// make more is widened (and the output says so).
pub const DEFAULT_MAX_BUCKETS: u64 = 400;
/// The most `--buckets` may ask for.
pub const MAX_BUCKETS: u64 = 10_000;
/// Buckets between `--min` and `--max` when neither `--linear` nor `--buckets` is given.
pub const DEFAULT_BUCKETS: u64 = 20;

/// What was asked of the linear layout: `--linear STEP` or `--buckets N`, and the range
/// `--min`/`--max` (values outside it are counted, not drawn).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinearSpec {
    pub step_ns: Option<i64>,
    pub buckets: Option<u64>,
    pub min_ns: Option<i64>,
    pub max_ns: Option<i64>,
}

impl LinearSpec {
    /// `--linear STEP` alone: buckets aligned to multiples of the step.
    pub fn step(step_ns: i64) -> LinearSpec {
        LinearSpec {
            step_ns: Some(step_ns),
            ..LinearSpec::default()
        }
    }

    /// Whether `--min` or `--max` bounds the range.
    pub fn bounded(&self) -> bool {
        self.min_ns.is_some() || self.max_ns.is_some()
    }
}

/// A step that would have made more than [`DEFAULT_MAX_BUCKETS`] buckets, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capped {
    pub asked_step_ns: i64,
    pub asked_buckets: u128,
}

/// The linear buckets of some values: `count` buckets `step_ns` wide from `origin_ns`,
/// values below `lo_ns` or at or above `end_ns` (the range) counted outside.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinearBuckets {
    pub step_ns: i64,
    pub buckets: Vec<Bucket>,
    /// The range drawn: `[lo_ns, end_ns)`.
    pub lo_ns: i64,
    pub end_ns: i64,
    pub below: u64,
    pub above: u64,
    pub capped: Option<Capped>,
}

/// The first step of 1, 2 or 5 × 10^k ns at least `at_least` (at most `i64::MAX`).
fn nice_step(at_least: i128) -> i128 {
    let mut decade: i128 = 1;
    loop {
        for m in [1, 2, 5] {
            if m * decade >= at_least {
                return (m * decade).min(i128::from(i64::MAX));
            }
        }
        if decade > i128::from(i64::MAX) {
            return i128::from(i64::MAX);
        }
        decade *= 10;
    }
}

/// Linear buckets of `values` as `spec` asks, the bucket count capped (see [`Capped`]).
/// Without `--min` the buckets are aligned to multiples of the step and start at the one
/// holding the smallest value; without `--max` they end with the one holding the largest.
pub fn linear(values: &[i64], spec: &LinearSpec) -> LinearBuckets {
    let (Some(&min), Some(&max)) = (values.iter().min(), values.iter().max()) else {
        return LinearBuckets::empty(spec);
    };
    let mut counter = LinearCounter::new(min, max, spec);
    values.iter().for_each(|&v| counter.add(v));
    counter.finish()
}

impl LinearBuckets {
    /// The buckets of no values.
    pub fn empty(spec: &LinearSpec) -> LinearBuckets {
        LinearBuckets {
            step_ns: spec.step_ns.unwrap_or(1).max(1),
            buckets: Vec::new(),
            lo_ns: 0,
            end_ns: 0,
            below: 0,
            above: 0,
            capped: None,
        }
    }
}

/// [`linear`]'s buckets counted as the values come, once their least and greatest value
/// are known (the range and the step depend on them).
#[derive(Clone, Debug)]
pub struct LinearCounter {
    step: i128,
    origin: i128,
    lo: i128,
    end: i128,
    /// The last bucket ends at `--max`.
    max_given: bool,
    counts: Vec<u64>,
    below: u64,
    above: u64,
    capped: Option<Capped>,
}

impl LinearCounter {
    /// The buckets `spec` asks for, for values from `min` to `max`.
    pub fn new(min: i64, max: i64, spec: &LinearSpec) -> LinearCounter {
        let lo = i128::from(spec.min_ns.unwrap_or(min));
        let end = spec.max_ns.map_or(i128::from(max) + 1, i128::from);
        // (origin, count) of buckets `step` wide covering [lo, end).
        let cover = |step: i128| {
            let origin = if spec.min_ns.is_some() {
                lo
            } else {
                lo.div_euclid(step) * step
            };
            let count = if end <= origin {
                0
            } else {
                (end - origin + step - 1) / step
            };
            (origin, count)
        };
        let mut capped = None;
        let (step, (origin, count)) = match spec.step_ns {
            Some(asked) => {
                let asked = i128::from(asked.max(1));
                let (origin, count) = cover(asked);
                let cap = i128::from(DEFAULT_MAX_BUCKETS);
                if count <= cap {
                    (asked, (origin, count))
                } else {
                    capped = Some(Capped {
                        asked_step_ns: asked as i64,
                        asked_buckets: count as u128,
                    });
                    let mut step = nice_step((end - lo + cap - 1) / cap);
                    // Aligning the first bucket down may need one more: widen again.
                    while cover(step).1 > cap && step < i128::from(i64::MAX) {
                        step = nice_step(step + 1);
                    }
                    (step, cover(step))
                }
            }
            None => {
                // N buckets: a whole number of ms or µs wide when they are at least 10 of it
                // (readable bounds), starting at --min or at the smallest value rounded down.
                let n = i128::from(spec.buckets.unwrap_or(DEFAULT_BUCKETS).max(1));
                let rough = (end - lo).max(1) / n;
                let unit = match rough {
                    r if r >= 10_000_000 => 1_000_000,
                    r if r >= 10_000 => 1_000,
                    _ => 1,
                };
                let origin = match spec.min_ns {
                    Some(_) => lo,
                    None => lo.div_euclid(unit) * unit,
                };
                let range = (end - origin).max(1);
                let step = ((range + n - 1) / n + unit - 1) / unit * unit;
                let step = step.clamp(1, i128::from(i64::MAX));
                let count = if end <= origin {
                    0
                } else {
                    (range + step - 1) / step
                };
                (step, (origin, count))
            }
        };
        LinearCounter {
            step,
            origin,
            lo,
            end,
            max_given: spec.max_ns.is_some(),
            counts: vec![0; count as usize],
            below: 0,
            above: 0,
            capped,
        }
    }

    #[inline]
    pub fn add(&mut self, v: i64) {
        let v = i128::from(v);
        if v < self.lo {
            self.below += 1;
        } else if v >= self.end {
            self.above += 1;
        } else {
            self.counts[((v - self.origin) / self.step) as usize] += 1;
        }
    }

    pub fn finish(self) -> LinearBuckets {
        let clamp = |v: i128| v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        let (origin, step, end) = (self.origin, self.step, self.end);
        let buckets = (self.counts.into_iter().enumerate())
            .map(|(i, count)| {
                let from = origin + i as i128 * step;
                Bucket {
                    lo: Some(clamp(from)),
                    // The last bucket ends at --max when one was given.
                    hi: Some(clamp(match self.max_given {
                        true => (from + step).min(end),
                        false => from + step,
                    })),
                    count,
                }
            })
            .collect();
        LinearBuckets {
            step_ns: clamp(step),
            buckets,
            lo_ns: clamp(self.lo),
            end_ns: clamp(end),
            below: self.below,
            above: self.above,
            capped: self.capped,
        }
    }
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

/// The bars of `buckets`, leading and trailing empty buckets left out.
pub fn bars(buckets: &[Bucket], label: &dyn Fn(&Bucket) -> String) -> Vec<Bar> {
    let first = buckets.iter().position(|b| b.count > 0);
    let last = buckets.iter().rposition(|b| b.count > 0);
    let (Some(first), Some(last)) = (first, last) else {
        return Vec::new();
    };
    all_bars(&buckets[first..=last], label)
}

/// The bars of every bucket (a range asked with `--min`/`--max` is drawn whole).
pub fn all_bars(shown: &[Bucket], label: &dyn Fn(&Bucket) -> String) -> Vec<Bar> {
    (shown.iter())
        .map(|b| Bar {
            label: label(b),
            count: b.count,
        })
        .collect()
}

/// The statistics above a linear histogram, as the wayland-debug histogram tool prints
/// them: the number of samples, min, max, mean, variance, standard deviation (both with
/// n − 1, so none for one value) and median, of every value (those outside `--min`/`--max`
/// included).
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub min: i64,
    pub max: i64,
    pub mean: f64,
    pub variance: Option<f64>,
    pub median: f64,
}

impl Summary {
    /// Its lines in `unit` (`per_unit` ns each); `None` for no values.
    pub fn lines(summary: Option<&Summary>, unit: &str, per_unit: f64) -> Vec<String> {
        let Some(s) = summary else {
            return vec!["NumSamples = 0".into()];
        };
        let show = |ns: f64| format_value(ns / per_unit);
        let (variance, sd) = match s.variance {
            Some(v) => (
                format!("{} {unit}²", format_value(v / (per_unit * per_unit))),
                format!("{} {unit}", show(v.sqrt())),
            ),
            None => ("undefined (one sample)".into(), "undefined".into()),
        };
        vec![
            format!(
                "NumSamples = {}; Min = {} {unit}; Max = {} {unit}",
                s.count,
                show(s.min as f64),
                show(s.max as f64),
            ),
            format!(
                "Mean = {} {unit}; Variance = {variance}; SD = {sd}; Median = {} {unit}",
                show(s.mean),
                show(s.median),
            ),
        ]
    }
}

/// A duration in `unit` for a header line: `4.5 ms`.
pub fn show_ns(ns: i64, unit: &str, per_unit: f64) -> String {
    format!("{} {unit}", format_value(ns as f64 / per_unit))
}

/// Four significant digits, no exponent: 0.8125, 12.34, 1234.
fn format_value(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{x:.digits$}")
}

/// The unit a linear step reads best in: `(name, ns per unit)`. A step that is a whole
/// number of ms or µs is in that unit; other steps of at least 10 of a unit are too.
pub fn unit_for_step(step_ns: i64) -> (&'static str, f64) {
    let fits = |unit: i64| step_ns >= unit && (step_ns % unit == 0 || step_ns >= 10 * unit);
    if fits(1_000_000) {
        ("ms", 1e6)
    } else if fits(1_000) {
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
        let b = linear(&[5, 15, 15, 39, -1], &LinearSpec::step(10));
        let got: Vec<(i64, u64)> = b.buckets.iter().map(|b| (b.lo.unwrap(), b.count)).collect();
        assert_eq!(got, vec![(-10, 1), (0, 1), (10, 2), (20, 0), (30, 1)]);
        assert_eq!((b.below, b.above, b.capped), (0, 0, None));
    }

    #[test]
    fn a_step_that_makes_too_many_buckets_is_widened_and_said() {
        // 118 values over 15.4 ms in 1 ns buckets: 15.4 million lines before the cap.
        let values: Vec<i64> = (0..118).map(|i| i * 131_356).collect();
        let b = linear(&values, &LinearSpec::step(1));
        assert!(
            b.buckets.len() as u64 <= DEFAULT_MAX_BUCKETS,
            "{}",
            b.buckets.len()
        );
        assert_eq!(b.step_ns, 50_000);
        assert_eq!(
            b.capped,
            Some(Capped {
                asked_step_ns: 1,
                asked_buckets: 15_368_653
            })
        );
        assert_eq!(b.buckets.iter().map(|b| b.count).sum::<u64>(), 118);
        // The largest step still fits: nothing overflows.
        let b = linear(&[i64::MIN, i64::MAX], &LinearSpec::step(1));
        assert!(b.buckets.len() as u64 <= DEFAULT_MAX_BUCKETS);
        assert_eq!(b.buckets.iter().map(|b| b.count).sum::<u64>(), 2);
    }

    #[test]
    fn values_outside_min_and_max_are_counted_not_drawn() {
        let spec = LinearSpec {
            step_ns: Some(10),
            min_ns: Some(10),
            max_ns: Some(35),
            ..LinearSpec::default()
        };
        let b = linear(&[0, 5, 10, 19, 20, 34, 35, 99], &spec);
        let got: Vec<(i64, i64, u64)> = (b.buckets.iter())
            .map(|b| (b.lo.unwrap(), b.hi.unwrap(), b.count))
            .collect();
        assert_eq!(got, vec![(10, 20, 2), (20, 30, 1), (30, 35, 1)]);
        assert_eq!((b.below, b.above), (2, 2));
    }

    #[test]
    fn a_bucket_count_divides_the_range() {
        let spec = LinearSpec {
            buckets: Some(4),
            ..LinearSpec::default()
        };
        let b = linear(&[100, 150, 180, 199], &spec);
        assert_eq!(b.step_ns, 25);
        let counts: Vec<u64> = b.buckets.iter().map(|b| b.count).collect();
        assert_eq!(counts, vec![1, 0, 1, 2]);
        assert_eq!(b.buckets[0].lo, Some(100));
    }

    #[test]
    fn bars_are_trimmed_to_the_non_empty_range() {
        let b = log2_buckets(&[3, 3, 3, 3, 9]);
        let got: Vec<(String, u64)> = (bars(&b, &label).into_iter())
            .map(|b| (b.label, b.count))
            .collect();
        assert_eq!(
            got,
            [("[2, 4)", 4), ("[4, 8)", 0), ("[8, 16)", 1)].map(|(l, c)| (l.to_owned(), c))
        );
    }

    #[test]
    fn summary_statistics() {
        let figures =
            crate::hist::passes::figures_of(&[1000i64, 2000, 3000, 4000], &LinearSpec::step(1000));
        let lines = Summary::lines(figures.map(|f| f.summary).as_ref(), "µs", 1e3);
        assert_eq!(
            lines,
            [
                "NumSamples = 4; Min = 1.000 µs; Max = 4.000 µs",
                "Mean = 2.500 µs; Variance = 1.667 µs²; SD = 1.291 µs; Median = 2.500 µs"
            ]
        );
    }

    #[test]
    fn one_value_has_no_variance() {
        let figures = crate::hist::passes::figures_of(&[4000i64], &LinearSpec::step(1000));
        let lines = Summary::lines(figures.map(|f| f.summary).as_ref(), "µs", 1e3);
        assert_eq!(
            lines[1],
            "Mean = 4.000 µs; Variance = undefined (one sample); SD = undefined; Median = 4.000 µs"
        );
    }
}
