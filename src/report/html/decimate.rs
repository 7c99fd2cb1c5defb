//! Fewer points for a long series without losing its extremes: the values are split into
//! buckets of consecutive points and each bucket keeps its smallest and its largest, in
//! the order they came. A plot of the result has the same envelope as the whole series,
//! so the worst frame of a 10-million-span run is still drawn (an average per bucket, or
//! every n-th point, would hide it).

/// Points of a series kept for a plot: `(x, y)` in the order of the input.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decimated {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    /// Points per bucket; 1 when nothing was left out.
    pub bucket: usize,
}

/// `points` as at most about `2 × buckets` points: unchanged when they are that few, else
/// each bucket's minimum and maximum (one point when they are the same one).
pub fn min_max(points: impl ExactSizeIterator<Item = (f64, f64)>, buckets: usize) -> Decimated {
    let n = points.len();
    let buckets = buckets.max(1);
    let size = if n <= 2 * buckets {
        1
    } else {
        n.div_ceil(buckets)
    };
    by_bucket(points, size)
}

/// How many times finer each level of detail is than the one above it.
const FINER: usize = 16;

/// The levels of detail under `coarse` (a [`min_max`] of the same points), coarsest first,
/// each [`FINER`] times finer than the one above, while a level has at most `max_points`;
/// the last is every point when they are that few. Every level keeps every bucket's
/// extremes, so the worst point is drawn at each.
pub fn finer_levels<I>(
    points: impl Fn() -> I,
    coarse: &Decimated,
    max_points: usize,
) -> Vec<Decimated>
where
    I: ExactSizeIterator<Item = (f64, f64)>,
{
    let n = points().len();
    let mut levels = Vec::new();
    let mut size = coarse.bucket;
    while size > 1 {
        if n <= max_points {
            levels.push(by_bucket(points(), 1));
            break;
        }
        size = size.div_ceil(FINER);
        if 2 * n.div_ceil(size) > max_points {
            break;
        }
        levels.push(by_bucket(points(), size));
    }
    levels
}

/// Each bucket of `size` consecutive points as its minimum and maximum (1: every point).
fn by_bucket(points: impl ExactSizeIterator<Item = (f64, f64)>, size: usize) -> Decimated {
    let n = points.len();
    let capacity = if size == 1 { n } else { 2 * n.div_ceil(size) };
    let mut out = Decimated {
        x: Vec::with_capacity(capacity),
        y: Vec::with_capacity(capacity),
        bucket: size,
    };
    if size == 1 {
        points.for_each(|(x, y)| out.push(x, y));
        return out;
    }
    let mut lo: Option<(usize, f64, f64)> = None;
    let mut hi: Option<(usize, f64, f64)> = None;
    // Counted down: `(i + 1) % size` divided at every point, and this loop runs over every
    // frame of the run a few times (a tenth of the HTML report's CPU, issue 29).
    let mut left = size;
    for (i, (x, y)) in points.enumerate() {
        // NaN is never kept over a number, and a bucket of NaN keeps one.
        if lo.is_none_or(|(_, _, v)| y < v || v.is_nan()) {
            lo = Some((i, x, y));
        }
        if hi.is_none_or(|(_, _, v)| y > v || v.is_nan()) {
            hi = Some((i, x, y));
        }
        left -= 1;
        if left == 0 || i + 1 == n {
            out.push_bucket(lo.take(), hi.take());
            left = size;
        }
    }
    out
}

impl Decimated {
    fn push(&mut self, x: f64, y: f64) {
        self.x.push(x);
        self.y.push(y);
    }

    fn push_bucket(&mut self, lo: Option<(usize, f64, f64)>, hi: Option<(usize, f64, f64)>) {
        match (lo, hi) {
            (Some(a), Some(b)) if a.0 == b.0 => self.push(a.1, a.2),
            (Some(a), Some(b)) => {
                let (first, second) = if a.0 < b.0 { (a, b) } else { (b, a) };
                self.push(first.1, first.2);
                self.push(second.1, second.2);
            }
            (Some(a), None) | (None, Some(a)) => self.push(a.1, a.2),
            (None, None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(n: usize, spike_at: usize, spike: f64) -> Vec<(f64, f64)> {
        (0..n)
            .map(|i| {
                let y = if i == spike_at {
                    spike
                } else {
                    8.0 + (i % 7) as f64 * 0.1
                };
                (i as f64, y)
            })
            .collect()
    }

    #[test]
    fn short_series_are_kept_whole() {
        let s = series(100, 3, 50.0);
        let d = min_max(s.iter().copied(), 50);
        assert_eq!(d.x.len(), 100);
        assert_eq!(d.bucket, 1);
        assert_eq!(d.y[3], 50.0);
    }

    #[test]
    fn the_worst_and_the_best_point_survive_any_bucket_size() {
        let n = 1_000_003;
        for spike_at in [0, 1, 499_999, n - 1] {
            let mut s = series(n, spike_at, 1e6);
            s[77].1 = -5.0;
            let d = min_max(s.iter().copied(), 1000);
            assert!(d.x.len() <= 2 * 1000 + 2, "{}", d.x.len());
            let at =
                d.y.iter()
                    .position(|&y| y == 1e6)
                    .expect("the spike is kept");
            assert_eq!(d.x[at], spike_at as f64, "at its own x");
            assert!(d.y.contains(&-5.0), "the minimum is kept");
            // Order of the input is kept: x never goes back.
            assert!(d.x.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn every_bucket_keeps_its_own_extremes() {
        let s: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64, [3.0, 1.0, 2.0, 9.0, 5.0][i % 5]))
            .collect();
        let d = min_max(s.iter().copied(), 2);
        assert_eq!(d.bucket, 5);
        assert_eq!(d.x, vec![1.0, 3.0, 6.0, 8.0]);
        assert_eq!(d.y, vec![1.0, 9.0, 1.0, 9.0]);
    }

    #[test]
    fn finer_levels_go_down_to_every_point_and_keep_the_worst() {
        let n = 1_000_003;
        let s = series(n, 765_432, 1e6);
        let points = || s.iter().copied();
        let coarse = min_max(points(), 1000);
        // Each level 16 times finer while it holds at most 200k points: 1001, 63, then 4
        // (500k points) is too many.
        let levels = finer_levels(points, &coarse, 200_000);
        let buckets: Vec<usize> = levels.iter().map(|l| l.bucket).collect();
        assert_eq!((coarse.bucket, buckets), (1001, vec![63]));
        assert_eq!(levels[0].x.len(), 2 * n.div_ceil(63));
        for level in &levels {
            let at = level.y.iter().position(|&y| y == 1e6).expect("the spike");
            assert_eq!(level.x[at], 765_432.0);
        }
        // Few enough points for all of them: every point is the finest level.
        let short = series(50_000, 3, 9.0);
        let coarse = min_max(short.iter().copied(), 1000);
        let levels = finer_levels(|| short.iter().copied(), &coarse, 200_000);
        assert_eq!(levels.len(), 1);
        assert_eq!((levels[0].bucket, levels[0].x.len()), (1, 50_000));
        // Nothing left out: no finer level.
        let whole = min_max(short.iter().take(100).copied(), 1000);
        assert!(finer_levels(|| short.iter().take(100).copied(), &whole, 10).is_empty());
    }

    #[test]
    fn empty_stays_empty() {
        assert!(min_max(std::iter::empty::<(f64, f64)>(), 10).x.is_empty());
    }
}
