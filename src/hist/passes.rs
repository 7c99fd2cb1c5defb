//! The linear layout's figures of several series from reads of their values, none of them
//! held (issue 29: a 84M-span run's `hist --linear` held 4 bytes a span).
//!
//! The first read gives each series' count, sum, least and greatest value: the mean, and
//! the range its buckets cover. The second counts the buckets, the spread about the least
//! value (the variance, exact in integers where it fits) and the values in narrow ranges
//! of the series' range. The median's two ranks are then the least or greatest value of
//! their range, or one range to narrow; the next read keeps that range's values once they
//! are few, or splits it again. So a series' median takes two to four reads, and a read
//! holds at most one range's cells or values a series, a fraction of its count.

use super::layout::{LinearBuckets, LinearCounter, LinearSpec, Summary};
use crate::analyze::stats::Ns;

/// Cells a range is split into, at most; at least a cell for [`VALUES_A_CELL`] values.
const MOST_CELLS: u64 = 4096;
const VALUES_A_CELL: u64 = 32;
/// A range is kept value by value once it holds this many, or a [`VALUES_A_CELL`]th of
/// the series.
const KEEP_AT_MOST: u64 = 64;

/// A series' linear layout: its statistics and buckets.
#[derive(Clone, Debug)]
pub struct LinearFigures {
    pub summary: Summary,
    pub buckets: LinearBuckets,
}

/// [`LinearFigures`] of values held anyway (`hist --live`, a run in memory), by the
/// same reads as a run's file.
pub fn figures_of<T: Ns>(values: &[T], spec: &LinearSpec) -> Option<LinearFigures> {
    let read = &mut |visit: &mut dyn FnMut(usize, i64)| {
        values.iter().for_each(|&v| visit(0, v.into()));
        Ok(())
    };
    read_linear(1, spec, read).ok()?.pop()?
}

/// One read of several series' values: calls its visitor with (series, value) for each.
pub type SeriesRead<'a> = dyn FnMut(&mut dyn FnMut(usize, i64)) -> anyhow::Result<()> + 'a;

/// Each of `series` series' figures (`None` for one with no values), `read` giving the
/// same values each time it is called.
pub fn read_linear(
    series: usize,
    spec: &LinearSpec,
    read: &mut SeriesRead,
) -> anyhow::Result<Vec<Option<LinearFigures>>> {
    let mut passes: Vec<Passes> = (0..series).map(|_| Passes::default()).collect();
    let mut read_count = 0u32;
    loop {
        read(&mut |k, v| passes[k].add(v))?;
        read_count += 1;
        let mut more = false;
        for p in &mut passes {
            more |= p.end_read(read_count, spec)?;
        }
        if !more {
            break;
        }
    }
    Ok(passes.into_iter().map(Passes::figures).collect())
}

/// One series' reads (see the module's doc).
#[derive(Default)]
struct Passes {
    count: u64,
    total: i128,
    min: i64,
    max: i64,
    /// Values seen in the current read, checked against the first's.
    seen: u64,
    /// During the second read.
    second: Option<Second>,
    /// After it: the buckets and the variance.
    counted: Option<(LinearBuckets, Option<f64>)>,
    median: Option<MedianSearch>,
}

/// What the second read counts.
struct Second {
    buckets: LinearCounter,
    spread: Spread,
}

impl Passes {
    #[inline]
    fn add(&mut self, v: i64) {
        self.seen += 1;
        if self.median.is_none() {
            // The first read.
            if self.count == 0 {
                (self.min, self.max) = (v, v);
            }
            self.count += 1;
            self.total += i128::from(v);
            self.min = self.min.min(v);
            self.max = self.max.max(v);
            return;
        }
        if let Some(second) = &mut self.second {
            second.buckets.add(v);
            second.spread.add(v);
        }
        if let Some(median) = &mut self.median {
            median.add(v);
        }
    }

    /// Ends read number `read`: whether this series needs another.
    fn end_read(&mut self, read: u32, spec: &LinearSpec) -> anyhow::Result<bool> {
        let seen = std::mem::take(&mut self.seen);
        if read > 1 && seen != self.count {
            anyhow::bail!(
                "the run changed while it was read ({seen} values in one read, {} in the \
                 first): analyse it again once nothing writes it",
                self.count
            );
        }
        if self.count == 0 {
            return Ok(false);
        }
        match &mut self.median {
            None => {
                self.second = Some(Second {
                    buckets: LinearCounter::new(self.min, self.max, spec),
                    spread: Spread::about(self.min, self.mean()),
                });
                self.median = Some(MedianSearch::new(self.count, self.min, self.max));
                Ok(true)
            }
            Some(median) => {
                if let Some(second) = self.second.take() {
                    let variance = second.spread.variance(self.count);
                    self.counted = Some((second.buckets.finish(), variance));
                }
                median.end_read();
                Ok(!median.found())
            }
        }
    }

    fn mean(&self) -> f64 {
        self.total as f64 / self.count as f64
    }

    fn figures(self) -> Option<LinearFigures> {
        let mean = self.mean();
        let ((buckets, variance), median) = (self.counted?, self.median?);
        Some(LinearFigures {
            summary: Summary {
                count: self.count,
                min: self.min,
                max: self.max,
                mean,
                variance,
                median: median.median(),
            },
            buckets,
        })
    }
}

/// The sums the variance needs: of the distances from the least value and of their
/// squares, exact while they fit in 128 bits; of the squared distances from the mean in
/// floating point, for where they do not.
struct Spread {
    min: i64,
    mean: f64,
    sum: Option<u128>,
    squares: Option<u128>,
    float_squares: f64,
}

impl Spread {
    fn about(min: i64, mean: f64) -> Spread {
        Spread {
            min,
            mean,
            sum: Some(0),
            squares: Some(0),
            float_squares: 0.0,
        }
    }

    #[inline]
    fn add(&mut self, v: i64) {
        // At most 2^64 - 1, so its square fits.
        let d = (i128::from(v) - i128::from(self.min)) as u128;
        self.sum = self.sum.and_then(|s| s.checked_add(d));
        self.squares = self.squares.and_then(|s| s.checked_add(d * d));
        self.float_squares += (v as f64 - self.mean).powi(2);
    }

    /// With n − 1: n·Σd² − (Σd)² over n(n − 1), rounded once where it fits; none for
    /// fewer than two values.
    fn variance(&self, n: u64) -> Option<f64> {
        if n < 2 {
            return None;
        }
        let exact = (self.sum.zip(self.squares)).and_then(|(sum, squares)| {
            let scaled = squares.checked_mul(u128::from(n))?;
            scaled.checked_sub(sum.checked_mul(sum)?)
        });
        Some(match exact {
            Some(numerator) => numerator as f64 / (n as f64 * (n - 1) as f64),
            None => self.float_squares / (n - 1) as f64,
        })
    }
}

/// The values at ranks ⌊(n − 1)/2⌋ and ⌊n/2⌋ (the same one when n is odd), searched in a
/// range known to hold every rank not found yet.
struct MedianSearch {
    ranks: [u64; 2],
    found: [Option<i64>; 2],
    /// The range searched, both ends included; the values below it and in it.
    lo: i64,
    hi: i64,
    below: u64,
    inside: u64,
    /// A fraction of the series' values: what a read may keep.
    keep_at_most: u64,
    read: Read,
}

/// What a read learns of the range searched.
enum Read {
    Keep(Vec<i64>),
    /// Counts, least and greatest value in `cells.len()` ranges `width` wide from `lo`.
    Split {
        width: u128,
        cells: Vec<Cell>,
    },
}

#[derive(Clone, Copy)]
struct Cell {
    count: u64,
    min: i64,
    max: i64,
}

impl MedianSearch {
    fn new(n: u64, min: i64, max: i64) -> MedianSearch {
        let mut search = MedianSearch {
            ranks: [(n - 1) / 2, n / 2],
            found: [None, None],
            lo: min,
            hi: max,
            below: 0,
            inside: n,
            keep_at_most: KEEP_AT_MOST.max(n / VALUES_A_CELL),
            read: Read::Keep(Vec::new()),
        };
        if min == max {
            search.found = [Some(min); 2];
        }
        search.plan();
        search
    }

    /// What the next read collects of the range.
    fn plan(&mut self) {
        if self.found() || self.inside <= self.keep_at_most {
            self.read = Read::Keep(Vec::new());
            return;
        }
        let parts = (self.inside / VALUES_A_CELL).clamp(2, MOST_CELLS);
        let span = (i128::from(self.hi) - i128::from(self.lo)) as u128 + 1;
        let width = span.div_ceil(u128::from(parts));
        let empty = Cell {
            count: 0,
            min: i64::MAX,
            max: i64::MIN,
        };
        self.read = Read::Split {
            width,
            cells: vec![empty; span.div_ceil(width) as usize],
        };
    }

    #[inline]
    fn add(&mut self, v: i64) {
        if v < self.lo || v > self.hi || self.found() {
            return;
        }
        match &mut self.read {
            Read::Keep(values) => values.push(v),
            Read::Split { width, cells } => {
                let at = (i128::from(v) - i128::from(self.lo)) as u128 / *width;
                let cell = &mut cells[at as usize];
                cell.count += 1;
                cell.min = cell.min.min(v);
                cell.max = cell.max.max(v);
            }
        }
    }

    fn found(&self) -> bool {
        self.found.iter().all(Option::is_some)
    }

    /// Answers the ranks the read can; narrows the range to the one cell holding those it
    /// cannot (two consecutive ranks in two cells are the last of one and the first of the
    /// next, so they never need two).
    fn end_read(&mut self) {
        if self.found() {
            return;
        }
        match std::mem::replace(&mut self.read, Read::Keep(Vec::new())) {
            Read::Keep(mut values) => {
                values.sort_unstable();
                for (rank, found) in self.ranks.iter().zip(&mut self.found) {
                    if found.is_none() {
                        *found = Some(values[(rank - self.below) as usize]);
                    }
                }
            }
            Read::Split { cells, .. } => {
                let mut narrowed = None;
                let mut before = self.below;
                for cell in cells.iter().filter(|c| c.count > 0) {
                    for (&rank, found) in self.ranks.iter().zip(&mut self.found) {
                        if found.is_some() || rank < before || rank >= before + cell.count {
                            continue;
                        }
                        if cell.min == cell.max || rank == before {
                            *found = Some(cell.min);
                        } else if rank == before + cell.count - 1 {
                            *found = Some(cell.max);
                        } else {
                            narrowed = Some((*cell, before));
                        }
                    }
                    before += cell.count;
                }
                if let Some((cell, before)) = narrowed {
                    (self.lo, self.hi, self.below, self.inside) =
                        (cell.min, cell.max, before, cell.count);
                }
            }
        }
        self.plan();
    }

    fn median(&self) -> f64 {
        let [a, b] = self.found.map(|v| v.unwrap_or_default() as f64);
        if self.ranks[0] == self.ranks[1] {
            a
        } else {
            (a + b) / 2.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::xorshift;

    /// The summary from sorted values, as the layout computed it before it read passes.
    fn sorted_summary(values: &[i64]) -> Summary {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let n = sorted.len();
        let mean = values.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        let variance = (n > 1).then(|| {
            values
                .iter()
                .map(|&v| (v as f64 - mean).powi(2))
                .sum::<f64>()
                / (n - 1) as f64
        });
        let median = match n % 2 {
            1 => sorted[n / 2] as f64,
            _ => (sorted[n / 2 - 1] as f64 + sorted[n / 2] as f64) / 2.0,
        };
        Summary {
            count: n as u64,
            min: sorted[0],
            max: sorted[n - 1],
            mean,
            variance,
            median,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
    }

    /// Statistics, buckets and reads taken for one set of values.
    fn same_as_sorted(label: &str, values: &[i64]) -> u32 {
        let spec = LinearSpec::step(1000);
        let mut reads = 0;
        let got = read_linear(1, &spec, &mut |visit| {
            reads += 1;
            values.iter().for_each(|&v| visit(0, v));
            Ok(())
        })
        .unwrap()
        .pop()
        .unwrap()
        .unwrap();
        let want = sorted_summary(values);
        let s = &got.summary;
        assert_eq!(
            (s.count, s.min, s.max, s.median),
            (want.count, want.min, want.max, want.median),
            "{label}"
        );
        assert!(
            close(s.mean, want.mean),
            "{label}: mean {} against {}",
            s.mean,
            want.mean
        );
        let variances_agree = match (s.variance, want.variance) {
            (Some(got), Some(want)) => close(got, want),
            (got, want) => got == want,
        };
        assert!(
            variances_agree,
            "{label}: variance {:?} against {:?}",
            s.variance, want.variance
        );
        assert_eq!(
            got.buckets,
            super::super::layout::linear(values, &spec),
            "{label}"
        );
        reads
    }

    #[test]
    fn adversarial_sets_give_the_sorted_values_figures() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let mut outlier = vec![1000i64; 99_999];
        outlier.push(i64::MAX / 4);
        let mut ties = vec![5_000i64; 1980];
        ties.extend(vec![7_000i64; 20]);
        let clustered: Vec<i64> = (0..200_000)
            .map(|i| match i % 1000 {
                0 => 1_000_000_000,
                _ => 8_333_000 + (next() % 700) as i64,
            })
            .collect();
        let two_clusters: Vec<i64> = (0..60_000)
            .map(|i| match i % 2 {
                0 => 1_000_000 + (next() % 50) as i64,
                _ => 40_000_000 + (next() % 50_000) as i64,
            })
            .collect();
        let spread: Vec<i64> = (0..100_001).map(|_| (next() >> 24) as i64).collect();
        let negatives: Vec<i64> = (0..2001).map(|_| (next() % 2000) as i64 - 1500).collect();
        let sets: [(&str, Vec<i64>); 9] = [
            ("one value", vec![42]),
            ("two values", vec![7, 3]),
            ("all equal", vec![8_333_333; 50_000]),
            ("one huge outlier", outlier),
            ("ties at the median", ties),
            ("a cluster and a far tail", clustered),
            ("two clusters, the median between them", two_clusters),
            ("spread wide", spread),
            ("negative values", negatives),
        ];
        for (label, values) in &sets {
            let reads = same_as_sorted(label, values);
            assert!(reads <= 6, "{label}: {reads} reads");
        }
    }

    #[test]
    fn the_extremes_of_the_range_are_exact() {
        // Distances up to 2^64 - 1: the integer sums overflow, the floating ones answer.
        let values = [i64::MIN, -1, 0, 1, i64::MAX, i64::MAX, 3];
        let got = figures_of(&values, &LinearSpec::step(1 << 60)).unwrap();
        let want = sorted_summary(&values);
        assert_eq!((got.summary.min, got.summary.max), (i64::MIN, i64::MAX));
        assert_eq!(got.summary.median, want.median);
        assert!(close(got.summary.variance.unwrap(), want.variance.unwrap()));
    }

    #[test]
    fn a_small_variance_far_from_zero_is_exact() {
        // Floating sums of squares lose it: values near 2^40 that differ by one.
        let values: Vec<i64> = (0..1001).map(|i| (1i64 << 40) + i % 2).collect();
        let got = figures_of(&values, &LinearSpec::step(1)).unwrap();
        let exact = 250_500.0 / 1_001_000.0;
        assert_eq!(got.summary.variance, Some(exact));
    }

    #[test]
    fn series_are_read_together_and_kept_apart() {
        let spec = LinearSpec::step(10);
        let got = read_linear(3, &spec, &mut |visit| {
            (0..100).for_each(|v| visit(v as usize % 2 * 2, v));
            Ok(())
        })
        .unwrap();
        assert!(got[1].is_none());
        let even = got[0].as_ref().unwrap();
        let odd = got[2].as_ref().unwrap();
        assert_eq!(
            (even.summary.count, even.summary.min, even.summary.median),
            (50, 0, 49.0)
        );
        assert_eq!(
            (odd.summary.count, odd.summary.max, odd.summary.median),
            (50, 99, 50.0)
        );
    }

    #[test]
    fn a_run_that_changes_between_reads_is_refused() {
        let mut reads = 0;
        let err = read_linear(1, &LinearSpec::step(1), &mut |visit| {
            reads += 1;
            (0..10 + reads).for_each(|v| visit(0, v));
            Ok(())
        })
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("the run changed while it was read"),
            "{err}"
        );
    }
}
