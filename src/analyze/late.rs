//! Frames against the budget: late frames, missed slots, streaks, stutter.

use super::stats::Ns;
use super::{LateSummary, StutterSummary};

/// Slots an interval skipped: round(interval / budget) − 1 when interval > 1.5 × budget.
pub fn missed_slots(interval_ns: i64, budget_ns: i64) -> u64 {
    if budget_ns <= 0 || interval_ns <= 0 {
        return 0;
    }
    let (i, b) = (interval_ns as i128, budget_ns as i128);
    if 2 * i <= 3 * b {
        return 0;
    }
    // round half up, in integers: ⌊(2i + b) / 2b⌋.
    let slots = (2 * i + b) / (2 * b);
    (slots - 1).max(0) as u64
}

/// Longest run of consecutive `true`s.
pub fn longest_streak(late: impl IntoIterator<Item = bool>) -> u64 {
    let (mut best, mut current) = (0u64, 0u64);
    for is_late in late {
        current = if is_late { current + 1 } else { 0 };
        best = best.max(current);
    }
    best
}

/// `totals_ns` are the measured frames' totals in end order; `intervals_ns` between them.
/// `None` without a positive budget.
pub fn late_summary(
    totals_ns: &[i64],
    intervals_ns: &[i64],
    budget_ns: i64,
) -> Option<LateSummary> {
    if budget_ns <= 0 {
        return None;
    }
    Some(LateSummary {
        missed_slots: missed_slots_of(intervals_ns, budget_ns),
        ..late_frames_of(totals_ns, budget_ns)
    })
}

/// The part of [`late_summary`] the totals give (late frames, their share, the longest
/// streak), `missed_slots` left 0: for an analysis that holds totals and intervals in turn.
pub fn late_frames_of<T: Ns>(totals_ns: &[T], budget_ns: i64) -> LateSummary {
    let late = |&t: &T| t.into() > budget_ns;
    let late_frames = totals_ns.iter().filter(|t| late(t)).count() as u64;
    let late_pct = if totals_ns.is_empty() {
        0.0
    } else {
        late_frames as f64 * 100.0 / totals_ns.len() as f64
    };
    LateSummary {
        budget_ns,
        late_frames,
        late_pct,
        missed_slots: 0,
        longest_streak: longest_streak(totals_ns.iter().map(late)),
    }
}

/// Σ missed slots over the intervals (the other part of [`late_summary`]).
pub fn missed_slots_of<T: Ns>(intervals_ns: &[T], budget_ns: i64) -> u64 {
    intervals_ns
        .iter()
        .map(|&i| missed_slots(i.into(), budget_ns))
        .sum()
}

/// How many previous intervals the stutter test averages: round(10·√(mean interval in ms)),
/// at least one.
pub fn stutter_window(mean_interval_ns: f64) -> usize {
    let ms = (mean_interval_ns / 1e6).max(0.0);
    ((10.0 * ms.sqrt()).round() as usize).max(1)
}

/// Intervals longer than 2.5 × the mean of the previous `stutter_window` intervals
/// (fewer at the start of the window; the first interval has nothing to compare with).
/// `None` without intervals.
pub fn stutter(intervals_ns: &[i64]) -> Option<StutterSummary> {
    stutter_of(intervals_ns)
}

/// [`stutter`] of either width.
pub fn stutter_of<T: Ns>(intervals_ns: &[T]) -> Option<StutterSummary> {
    if intervals_ns.is_empty() {
        return None;
    }
    let total: i128 = intervals_ns.iter().map(|&i| i.into() as i128).sum();
    let (mut count, mut stutter_time) = (0u64, 0i128);
    for_each_stutter_at(intervals_ns, |_, interval| {
        count += 1;
        stutter_time += interval as i128;
    });
    let n = intervals_ns.len() as f64;
    Some(StutterSummary {
        count,
        count_pct: count as f64 * 100.0 / n,
        time_pct: if total > 0 {
            stutter_time as f64 * 100.0 / total as f64
        } else {
            0.0
        },
    })
}

/// Per interval: whether it is a stutter (the HTML report marks them).
pub fn stutter_flags(intervals_ns: &[i64]) -> Vec<bool> {
    let mut flags = vec![false; intervals_ns.len()];
    for_each_stutter_at(intervals_ns, |i, _| flags[i] = true);
    flags
}

/// Calls `f(index, interval)` for each stutter, in order.
pub fn for_each_stutter_at<T: Ns>(intervals_ns: &[T], mut f: impl FnMut(usize, i64)) {
    if intervals_ns.is_empty() {
        return;
    }
    let total: i128 = intervals_ns.iter().map(|&i| i.into() as i128).sum();
    let window = stutter_window(total as f64 / intervals_ns.len() as f64);
    let mut trailing_sum: i128 = 0;
    for (i, &interval) in intervals_ns.iter().enumerate() {
        let interval: i64 = interval.into();
        let previous = i.min(window);
        // interval > 2.5 × sum / previous  ⇔  2·interval·previous > 5·sum (exact, no float).
        if previous > 0 && 2 * interval as i128 * previous as i128 > 5 * trailing_sum {
            f(i, interval);
        }
        trailing_sum += interval as i128;
        if i >= window {
            trailing_sum -= intervals_ns[i - window].into() as i128;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missed_slots_by_hand() {
        let b = 10_000;
        assert_eq!(missed_slots(10_000, b), 0);
        assert_eq!(missed_slots(15_000, b), 0); // exactly 1.5 × budget: not over
        assert_eq!(missed_slots(15_001, b), 1); // round(1.5001) − 1 = 1
        assert_eq!(missed_slots(24_999, b), 1); // round(2.4999) − 1
        assert_eq!(missed_slots(25_000, b), 2); // round(2.5) = 3 (half up) − 1
        assert_eq!(missed_slots(41_000, b), 3); // round(4.1) − 1
        assert_eq!(missed_slots(41_000, 0), 0);
        assert_eq!(missed_slots(-5, b), 0);
    }

    #[test]
    fn longest_streak_by_hand() {
        assert_eq!(longest_streak([]), 0);
        assert_eq!(longest_streak([false, false]), 0);
        assert_eq!(
            longest_streak([true, false, true, true, true, false, true, true]),
            3
        );
        assert_eq!(longest_streak([true, true]), 2);
    }

    #[test]
    fn late_frames_and_slots_by_hand() {
        // Budget 100. Totals: 90 150 101 100 200 → late: 150, 101, 200 (100 is not over).
        // Streak: 150, 101 → 2. Intervals: 100 160 (round 1.6 − 1 = 1) 310 (round 3.1 − 1 = 2) 90.
        let l = late_summary(&[90, 150, 101, 100, 200], &[100, 160, 310, 90], 100).unwrap();
        assert_eq!(l.late_frames, 3);
        assert_eq!(l.late_pct, 60.0);
        assert_eq!(l.missed_slots, 3);
        assert_eq!(l.longest_streak, 2);
        assert_eq!(l.budget_ns, 100);
    }

    #[test]
    fn no_budget_no_late_summary_and_no_frames_no_nan() {
        assert_eq!(late_summary(&[1, 2], &[1], 0), None);
        let l = late_summary(&[], &[], 100).unwrap();
        assert_eq!(l.late_frames, 0);
        assert_eq!(l.late_pct, 0.0);
    }

    #[test]
    fn stutter_window_by_hand() {
        // 4 ms → 10·2 = 20; 8.333 ms → 10·2.8868 = 28.87 → 29; 0.0001 ms → 0.1 → at least 1.
        assert_eq!(stutter_window(4e6), 20);
        assert_eq!(stutter_window(8_333_333.0), 29);
        assert_eq!(stutter_window(100.0), 1);
        assert_eq!(stutter_window(0.0), 1);
    }

    #[test]
    fn stutter_by_hand() {
        // Nine intervals of 1 ms and one of 10 ms: mean 1.9 ms → window round(10·1.378) = 14,
        // so every interval is compared with the mean of all the ones before it.
        // Only the 10 ms one exceeds 2.5 × 1 ms. count 1 of 10 = 10%, time 10 of 19 ms.
        let mut v = vec![1_000_000i64; 9];
        v.insert(5, 10_000_000);
        let s = stutter(&v).unwrap();
        assert_eq!(s.count, 1);
        assert!((s.count_pct - 10.0).abs() < 1e-12);
        assert!((s.time_pct - 1000.0 / 19.0).abs() < 1e-9);
    }

    #[test]
    fn stutter_uses_only_the_trailing_window() {
        // Intervals in µs: 10 10 26 10 25 63; mean 24 µs → window round(10·√0.024) = 2.
        // Trailing means: 10 → 10 no; (10+10)/2 = 10 → 26 > 25 stutter; (10+26)/2 = 18 → 10 no;
        // (26+10)/2 = 18 → 25 no; (10+25)/2 = 17.5 → 63 > 43.75 stutter.
        let v = [10_000, 10_000, 26_000, 10_000, 25_000, 63_000];
        let s = stutter(&v).unwrap();
        assert_eq!(s.count, 2);
        assert!((s.time_pct - 89.0 * 100.0 / 144.0).abs() < 1e-9);
        assert_eq!(
            stutter_flags(&v),
            [false, false, true, false, false, true],
            "the same two, where they are"
        );
    }

    #[test]
    fn stutter_of_nothing_and_of_zero_intervals() {
        assert_eq!(stutter(&[]), None);
        let s = stutter(&[0, 0, 0]).unwrap();
        assert_eq!(s.count, 0);
        assert_eq!(s.time_pct, 0.0);
    }
}
