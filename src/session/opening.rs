//! When the measured window opens while the run goes: after the warmup, counted from the
//! launch, from the first frame, or in frames (`--warmup-frames`).

use crate::model::WarmupFrom;

use super::options::WindowOptions;

/// Where the window stands while the run goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    Closed,
    /// Opened at launch + warmup because no frame had started yet; opens again at the
    /// first frame + warmup if one comes.
    Provisional,
    Open,
}

/// Whether the window is due to open now (`now_ns` after launch), and where it starts:
/// `(start_ns, provisional)`. `--warmup-frames N`: once frame N+1 has begun (the first
/// stage of N+1 frames was recorded). From the first frame: warmup after the first span's
/// start, or, while no span has come, provisionally at launch + warmup. From launch, or
/// without a warmup: launch + warmup.
/// A window that would start at or after the end of `--duration` never opens, however late
/// framelab looks (a loaded machine): the run ended inside its warmup.
pub fn window_due(
    window: &WindowOptions,
    now_ns: i64,
    first_span_ns: Option<i64>,
    opening_frame_start_ns: Option<i64>,
) -> Option<(i64, bool)> {
    let due = due_after_warmup(window, now_ns, first_span_ns, opening_frame_start_ns)?;
    let before_the_end = window.duration.is_none_or(|d| due.0 < d.as_nanos() as i64);
    before_the_end.then_some(due)
}

/// When the window will open (ns after launch), where that is known ahead: a warmup in
/// time, counted from the launch or from a first frame already seen. `None` with
/// `--warmup-frames` (frame N+1 tells) and while a first frame is awaited.
pub fn opens_at(window: &WindowOptions, first_span_ns: Option<i64>) -> Option<i64> {
    match due_after_warmup(window, i64::MAX, first_span_ns, None)? {
        (_, true) => None,
        (start_ns, false) => Some(start_ns),
    }
}

fn due_after_warmup(
    window: &WindowOptions,
    now_ns: i64,
    first_span_ns: Option<i64>,
    opening_frame_start_ns: Option<i64>,
) -> Option<(i64, bool)> {
    let warmup_ns = window.warmup.as_nanos() as i64;
    // Where frame N+1 began, not when framelab next looked: the N frames that ended before
    // it are the warmup, however late the look.
    if window.warmup_frames.is_some() {
        return opening_frame_start_ns.map(|start| (start.min(now_ns), false));
    }
    if window.warmup_from == WarmupFrom::Launch || warmup_ns == 0 {
        return (now_ns >= warmup_ns).then_some((warmup_ns, false));
    }
    match first_span_ns {
        Some(first) => {
            let start = first.max(0).saturating_add(warmup_ns);
            (now_ns >= start).then_some((start, false))
        }
        None => (now_ns >= warmup_ns).then_some((warmup_ns, true)),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_window_opens_after_the_warmup_from_where_it_counts() {
        const S: i64 = 1_000_000_000;
        let opts = |from, warmup_s: u64, frames| WindowOptions {
            warmup: Duration::from_secs(warmup_s),
            warmup_from: from,
            warmup_frames: frames,
            ..WindowOptions::default()
        };
        let launch = opts(WarmupFrom::Launch, 3, None);
        assert_eq!(window_due(&launch, 2 * S, Some(S), None), None);
        assert_eq!(window_due(&launch, 3 * S, None, None), Some((3 * S, false)));
        // From the first frame: provisional at launch + warmup while no frame has come ...
        let first = opts(WarmupFrom::FirstFrame, 3, None);
        assert_eq!(window_due(&first, 3 * S, None, None), Some((3 * S, true)));
        // ... and warmup after the first span's start once one has.
        assert_eq!(window_due(&first, 8 * S, Some(6 * S), None), None);
        assert_eq!(
            window_due(&first, 9 * S, Some(6 * S), None),
            Some((9 * S, false))
        );
        // No warmup: the window is the whole run, whatever it counts from.
        assert_eq!(
            window_due(&opts(WarmupFrom::FirstFrame, 0, None), 0, None, None),
            Some((0, false))
        );
        // Frames: once frame N+1 has begun, where it began (seen later).
        let frames = opts(WarmupFrom::FirstFrame, 0, Some(5));
        assert_eq!(window_due(&frames, 7 * S, Some(S), None), None);
        assert_eq!(
            window_due(&frames, 7 * S, Some(S), Some(6 * S)),
            Some((6 * S, false))
        );
    }

    #[test]
    fn a_window_due_after_the_duration_never_opens_however_late_the_look() {
        const MS: i64 = 1_000_000;
        // --warmup 900ms --duration 1s, first frame at 118 ms: due at 1018 ms, after the
        // end. A look at 1019 ms (a late tick) opened it there, for 0.5 ms and no frame.
        let window = WindowOptions {
            warmup: Duration::from_millis(900),
            warmup_from: WarmupFrom::FirstFrame,
            duration: Some(Duration::from_secs(1)),
            ..WindowOptions::default()
        };
        assert_eq!(window_due(&window, 1019 * MS, Some(118 * MS), None), None);
        // Due before the end: opens, even when seen after it.
        assert_eq!(
            window_due(&window, 1019 * MS, Some(90 * MS), None),
            Some((990 * MS, false))
        );
    }
}
