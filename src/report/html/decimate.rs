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
    let size = coarse_size(n, buckets);
    let kept = levels(points.map(|p| (p, p.1)), n, &[size])
        .into_iter()
        .next();
    kept.map_or_else(Decimated::default, |k| k.points(|p| p))
}

/// Points per bucket of [`min_max`]: 1 when `n` points are at most `2 × buckets`.
fn coarse_size(n: usize, buckets: usize) -> usize {
    let buckets = buckets.max(1);
    if n <= 2 * buckets {
        1
    } else {
        n.div_ceil(buckets)
    }
}

/// How many times finer each level of detail is than the one above it.
const FINER: usize = 16;

/// Bucket sizes for `n` points: the whole view's ([`min_max`] with `buckets`), then its
/// levels of detail, each [`FINER`] times finer than the one above, while a level has at
/// most `max_points`; the last is every point (1) when they are that few.
pub fn level_sizes(n: usize, buckets: usize, max_points: usize) -> Vec<usize> {
    let mut size = coarse_size(n, buckets);
    let mut sizes = vec![size];
    while size > 1 {
        if n <= max_points {
            sizes.push(1);
            break;
        }
        size = size.div_ceil(FINER);
        if 2 * n.div_ceil(size) > max_points {
            break;
        }
        sizes.push(size);
    }
    sizes
}

/// The points kept of a level: the keys they came with, in their order.
#[derive(Clone, Debug, PartialEq)]
pub struct Kept<K> {
    pub keys: Vec<K>,
    /// Points per bucket; 1 when nothing was left out.
    pub bucket: usize,
}

impl<K: Copy> Kept<K> {
    /// The kept points, each `(x, y)` as `point` gives it of its key.
    pub fn points(&self, point: impl Fn(K) -> (f64, f64)) -> Decimated {
        let (x, y) = self.keys.iter().map(|&k| point(k)).unzip();
        Decimated {
            x,
            y,
            bucket: self.bucket,
        }
    }
}

/// The `n` `points` (a key and its y) decimated at each of `sizes` (bucket sizes, 1: every
/// point), in one pass: each level keeps every bucket's extremes, so the worst point is
/// drawn at each. The points are kept by key: a frame plot walks millions of frames and
/// keeps a few hundred thousand, whose x and y its frame's index gives (4 bytes a point
/// where x and y took 16, while the analysis holds its peak beside it: issue 29).
pub fn levels<K: Copy>(
    points: impl Iterator<Item = (K, f64)>,
    n: usize,
    sizes: &[usize],
) -> Vec<Kept<K>> {
    let mut buckets: Vec<Buckets<K>> = sizes.iter().map(|&size| Buckets::new(n, size)).collect();
    // One level is the common case (telemetry): its loop without the inner one.
    if let [only] = &mut buckets[..] {
        (points.enumerate()).for_each(|(i, (k, y))| only.add(i, k, y, n));
    } else {
        for (i, (k, y)) in points.enumerate() {
            for level in &mut buckets {
                level.add(i, k, y, n);
            }
        }
    }
    (buckets.into_iter())
        .map(|mut b| {
            // Fewer points than `n`: the last bucket is cut short there.
            b.push_bucket();
            b.out
        })
        .collect()
}

/// [`levels`] given one point at a time, where the points come from a callback (a read
/// of the run's frames in end order) rather than an iterator.
pub struct Levels<K> {
    buckets: Vec<Buckets<K>>,
    n: usize,
    i: usize,
}

impl<K: Copy> Levels<K> {
    /// For `n` points, at each of `sizes`.
    pub fn new(n: usize, sizes: &[usize]) -> Levels<K> {
        Levels {
            buckets: sizes.iter().map(|&size| Buckets::new(n, size)).collect(),
            n,
            i: 0,
        }
    }

    /// The next point: its key and its y.
    #[inline]
    pub fn add(&mut self, k: K, y: f64) {
        for level in &mut self.buckets {
            level.add(self.i, k, y, self.n);
        }
        self.i += 1;
    }

    /// Points added so far.
    pub fn added(&self) -> usize {
        self.i
    }

    /// The levels, as [`levels`] gives them.
    pub fn finish(self) -> Vec<Kept<K>> {
        (self.buckets.into_iter())
            .map(|mut b| {
                b.push_bucket();
                b.out
            })
            .collect()
    }
}

/// A level being filled: each bucket of `out.bucket` consecutive points as its minimum
/// and maximum (1: every point), by their index, key and y.
struct Buckets<K> {
    out: Kept<K>,
    /// Points left in the current bucket; counted down: `(i + 1) % size` divided at every
    /// point, over every frame of the run (a tenth of the HTML report's CPU, issue 29).
    left: usize,
    lo: Option<(usize, K, f64)>,
    hi: Option<(usize, K, f64)>,
}

impl<K: Copy> Buckets<K> {
    fn new(n: usize, size: usize) -> Self {
        let capacity = if size == 1 { n } else { 2 * n.div_ceil(size) };
        Buckets {
            out: Kept {
                keys: Vec::with_capacity(capacity),
                bucket: size,
            },
            left: size,
            lo: None,
            hi: None,
        }
    }

    #[inline]
    fn add(&mut self, i: usize, k: K, y: f64, n: usize) {
        if self.out.bucket == 1 {
            self.out.keys.push(k);
            return;
        }
        // NaN is never kept over a number, and a bucket of NaN keeps one.
        if self.lo.is_none_or(|(_, _, v)| y < v || v.is_nan()) {
            self.lo = Some((i, k, y));
        }
        if self.hi.is_none_or(|(_, _, v)| y > v || v.is_nan()) {
            self.hi = Some((i, k, y));
        }
        self.left -= 1;
        if self.left == 0 || i + 1 == n {
            self.push_bucket();
            self.left = self.out.bucket;
        }
    }

    fn push_bucket(&mut self) {
        let keys = &mut self.out.keys;
        match (self.lo.take(), self.hi.take()) {
            (Some(a), Some(b)) if a.0 == b.0 => keys.push(a.1),
            (Some(a), Some(b)) => {
                let (first, second) = if a.0 < b.0 { (a, b) } else { (b, a) };
                keys.extend([first.1, second.1]);
            }
            (Some(a), None) | (None, Some(a)) => keys.push(a.1),
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
        // Each level 16 times finer while it holds at most 200k points: 1001, 63, then 4
        // (500k points) is too many.
        let sizes = level_sizes(n, 1000, 200_000);
        assert_eq!(sizes, [1001, 63]);
        let all: Vec<Decimated> = (levels(s.iter().map(|&p| (p, p.1)), n, &sizes).iter())
            .map(|kept| kept.points(|p| p))
            .collect();
        assert_eq!(all[0], min_max(s.iter().copied(), 1000), "the whole view");
        assert_eq!(all[1].x.len(), 2 * n.div_ceil(63));
        for level in &all {
            let at = level.y.iter().position(|&y| y == 1e6).expect("the spike");
            assert_eq!(level.x[at], 765_432.0);
        }
        // Few enough points for all of them: every point is the finest level.
        let short = series(50_000, 3, 9.0);
        let sizes = level_sizes(50_000, 1000, 200_000);
        assert_eq!(sizes, [50, 1]);
        let all = levels(short.iter().map(|&p| (p, p.1)), 50_000, &sizes);
        assert_eq!((all[1].bucket, &all[1].keys), (1, &short));
        // Nothing left out: no finer level.
        assert_eq!(level_sizes(100, 1000, 10), [1]);
    }

    /// Points kept by key are the points kept by value.
    #[test]
    fn points_kept_by_key_are_those_kept_by_value() {
        let y = |k: u32| ((k * 7919) % 1000) as f64;
        let kept = levels((0..10_000u32).map(|k| (k, y(k))), 10_000, &[100, 10]);
        let by_value: Vec<(f64, f64)> = (0..10_000u32).map(|k| (k as f64 / 10.0, y(k))).collect();
        assert_eq!(
            kept[0].points(|k| (k as f64 / 10.0, y(k))),
            min_max(by_value.iter().copied(), 100)
        );
        assert_eq!(kept[1].keys.len(), 2 * 1000);
    }

    /// Points given one at a time keep what the iterator's levels keep: one level or
    /// several, a last bucket cut short, none.
    #[test]
    fn points_given_one_at_a_time_are_levelled_alike() {
        let y = |k: u32| ((k * 7919) % 1000) as f64 + if k == 4321 { 1e6 } else { 0.0 };
        for (n, sizes) in [(10_007, vec![100, 10]), (10_007, vec![7]), (0, vec![1])] {
            let expected = levels((0..n as u32).map(|k| (k, y(k))), n, &sizes);
            let mut one_at_a_time = Levels::new(n, &sizes);
            (0..n as u32).for_each(|k| one_at_a_time.add(k, y(k)));
            assert_eq!(one_at_a_time.added(), n);
            assert_eq!(one_at_a_time.finish(), expected, "{n} points at {sizes:?}");
        }
    }

    #[test]
    fn empty_stays_empty() {
        assert!(min_max(std::iter::empty::<(f64, f64)>(), 10).x.is_empty());
    }
}
