//! One series' readings sorted by time, and the questions asked of them: the value at an
//! instant, the reading nearest a frame, rates between readings, display units.

use crate::model::{Sample, SampleSeries, SeriesKind};

/// (t_ns, value) pairs of one series, ascending in time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Points(pub Vec<(i64, i64)>);

/// Every series' points, indexed by series id.
pub fn group(series: &[SampleSeries], samples: &[Sample]) -> Vec<Points> {
    let mut points = vec![Points::default(); series.len()];
    for s in samples {
        if let Some(p) = points.get_mut(s.series as usize) {
            p.0.push((s.t_ns, s.value));
        }
    }
    for p in &mut points {
        // Already in order from the run file; fixtures and merges may not be.
        if !p.0.windows(2).all(|w| w[0].0 <= w[1].0) {
            p.0.sort_by_key(|&(t, _)| t);
        }
    }
    points
}

impl Points {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Readings with `start ≤ t ≤ end`.
    pub fn within(&self, start: i64, end: i64) -> &[(i64, i64)] {
        let lo = self.0.partition_point(|&(t, _)| t < start);
        let hi = self.0.partition_point(|&(t, _)| t <= end);
        &self.0[lo..hi.max(lo)]
    }

    /// A counter's value at `t` (the last reading at or before it: counters are written
    /// when they change, so the value holds until the next row). Before the first reading
    /// it is that reading's value: nothing is known of what it counted before (a thing born
    /// during the run, a thread, has a 0 reading at its birth); 0 without readings.
    pub fn step_at(&self, t: i64) -> i64 {
        let i = self.0.partition_point(|&(at, _)| at <= t);
        match i {
            0 => self.0.first().map_or(0, |&(_, v)| v),
            _ => self.0[i - 1].1,
        }
    }

    /// A counter's value at `t` when it is read every `every_ns`: a row's change since the
    /// row before is taken to have come evenly over the reading interval before it (a
    /// counter is written only when it changed, so the row before may be much older). A
    /// window opening between two readings of a busy thread then counts its time from the
    /// opening, not from the reading before it (up to a whole interval more: a thread
    /// busier than its process, over 100% of the window). Before the first reading and
    /// after the last, as [`Points::step_at`].
    pub fn counter_at(&self, t: i64, every_ns: i64) -> f64 {
        let i = self.0.partition_point(|&(at, _)| at <= t);
        let (Some(&(t0, v0)), Some(&(t1, v1))) =
            (i.checked_sub(1).map(|i| &self.0[i]), self.0.get(i))
        else {
            return self.step_at(t) as f64;
        };
        let from = t0.max(t1.saturating_sub(every_ns));
        if t <= from {
            return v0 as f64;
        }
        v0 as f64 + (v1 - v0) as f64 * (t - from) as f64 / (t1 - from) as f64
    }

    /// Linear interpolation at `t`, clamped to the first and last readings.
    pub fn interpolate(&self, t: i64) -> Option<f64> {
        let first = *self.0.first()?;
        let last = *self.0.last()?;
        if t <= first.0 {
            return Some(first.1 as f64);
        }
        if t >= last.0 {
            return Some(last.1 as f64);
        }
        let i = self.0.partition_point(|&(at, _)| at <= t);
        let (t0, v0) = self.0[i - 1];
        let (t1, v1) = self.0[i];
        let f = (t - t0) as f64 / (t1 - t0) as f64;
        Some(v0 as f64 + f * (v1 - v0) as f64)
    }

    /// The index of the reading nearest the span [start, end]: inside it, the latest one;
    /// outside, the closest to either edge (on a tie, the one closer to the end).
    pub fn nearest(&self, start: i64, end: i64) -> Option<usize> {
        if self.0.is_empty() {
            return None;
        }
        let after = self.0.partition_point(|&(t, _)| t <= end);
        if after > 0 && self.0[after - 1].0 >= start {
            return Some(after - 1);
        }
        let before = after.checked_sub(1);
        let next = (after < self.0.len()).then_some(after);
        match (before, next) {
            (Some(b), Some(n)) => {
                let gap_before = start - self.0[b].0;
                let gap_after = self.0[n].0 - end;
                // On a tie the later reading is the nearer to the frame's end.
                Some(if gap_after <= gap_before { n } else { b })
            }
            (Some(b), None) => Some(b),
            (None, Some(n)) => Some(n),
            (None, None) => None,
        }
    }

    /// The rate per second of a counter over the interval between the readings around
    /// reading `i` that best covers [start, end]: the interval ending at or after `end`.
    pub fn rate_near(&self, start: i64, end: i64) -> Option<(f64, i64)> {
        if self.0.len() < 2 {
            return None;
        }
        // The first reading at or after the frame's end closes the interval that holds it.
        let after = self
            .0
            .partition_point(|&(t, _)| t < end)
            .clamp(1, self.0.len() - 1);
        let (t0, v0) = self.0[after - 1];
        let (t1, v1) = self.0[after];
        if t1 <= t0 {
            return None;
        }
        let rate = (v1 - v0) as f64 * 1e9 / (t1 - t0) as f64;
        Some((rate, distance(t1, start, end).max(distance(t0, start, end))))
    }

    /// Rates per second between consecutive readings, both inside [start, end].
    pub fn rates_within(&self, start: i64, end: i64) -> Vec<f64> {
        self.within(start, end)
            .windows(2)
            .filter(|w| w[1].0 > w[0].0)
            .map(|w| (w[1].1 - w[0].1) as f64 * 1e9 / (w[1].0 - w[0].0) as f64)
            .collect()
    }
}

/// How far `t` is from the span [start, end]: 0 inside.
pub fn distance(t: i64, start: i64, end: i64) -> i64 {
    if t < start {
        start - t
    } else if t > end {
        t - end
    } else {
        0
    }
}

/// How a stored unit is shown: (factor to multiply by, shown unit).
pub fn display_unit(unit: &str) -> (f64, &'static str) {
    match unit {
        "kHz" => (1e-3, "MHz"),
        "MHz" => (1.0, "MHz"),
        "%" => (1.0, "%"),
        "m%" => (1e-3, "%"),
        "mW" => (1e-3, "W"),
        "uW" => (1e-6, "W"),
        "C" => (1.0, "°C"),
        "mC" => (1e-3, "°C"),
        "B" => (1.0 / (1024.0 * 1024.0), "MiB"),
        "mJ" => (1e-3, "J"),
        "uJ" => (1e-6, "J"),
        // Durations read per frame (imported PresentMon, ffmpeg columns) are µs-sized.
        "ns" => (1e-3, "µs"),
        _ => (1.0, ""),
    }
}

/// Joules per stored unit of an energy counter; `None` for other units.
pub fn joules_per_unit(unit: &str) -> Option<f64> {
    match unit {
        "mJ" => Some(1e-3),
        "uJ" => Some(1e-6),
        _ => None,
    }
}

/// Watts per stored unit of a power gauge; `None` for other units.
pub fn watts_per_unit(unit: &str) -> Option<f64> {
    match unit {
        "mW" => Some(1e-3),
        "uW" => Some(1e-6),
        "W" => Some(1.0),
        _ => None,
    }
}

/// Whether a series is an energy counter.
pub fn is_energy(s: &SampleSeries) -> bool {
    s.kind == SeriesKind::Counter && joules_per_unit(&s.unit).is_some()
}

/// Type-7 percentile of sorted floats (the definition of `stats::percentile_sorted`).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    let h = p.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = (h.floor() as usize).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(v: &[(i64, i64)]) -> Points {
        Points(v.to_vec())
    }

    #[test]
    fn nearest_prefers_the_latest_inside_then_the_closest_edge() {
        let p = points(&[(0, 0), (50, 1), (100, 2), (150, 3)]);
        // Inside [40, 120]: 50 and 100; the latest wins.
        assert_eq!(p.nearest(40, 120), Some(2));
        // [60, 80] holds none: 50 is 10 before, 100 is 20 after.
        assert_eq!(p.nearest(60, 80), Some(1));
        // [65, 85]: 15 before, 15 after: the later one.
        assert_eq!(p.nearest(65, 85), Some(2));
        // Before the first and after the last.
        assert_eq!(p.nearest(-30, -10), Some(0));
        assert_eq!(p.nearest(300, 400), Some(3));
        assert_eq!(points(&[]).nearest(0, 1), None);
    }

    #[test]
    fn step_and_interpolation() {
        let p = points(&[(10, 100), (20, 300)]);
        assert_eq!(
            p.step_at(5),
            100,
            "before the first reading: unknown, taken as it"
        );
        assert_eq!(p.step_at(10), 100);
        assert_eq!(p.step_at(19), 100);
        assert_eq!(p.step_at(25), 300);
        assert_eq!(p.interpolate(15), Some(200.0));
        assert_eq!(p.interpolate(0), Some(100.0));
        assert_eq!(p.interpolate(99), Some(300.0));
    }

    #[test]
    fn rates_between_readings() {
        // 1 J (1e6 µJ) per 100 ms = 10 W, then 2 J per 100 ms = 20 W.
        let p = points(&[(0, 0), (100_000_000, 1_000_000), (200_000_000, 3_000_000)]);
        assert_eq!(p.rates_within(0, 200_000_000), vec![1e7, 2e7]);
        // A frame ending at 150 ms lies in the second interval.
        let (rate, dist) = p.rate_near(120_000_000, 150_000_000).unwrap();
        assert_eq!(rate, 2e7);
        assert_eq!(dist, 50_000_000);
    }

    #[test]
    fn percentiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.5), 2.5);
        assert_eq!(percentile(&v, 1.0), 4.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
