//! The measured window's rules that `run` and `bench` both check before anything starts:
//! a warmup shorter than the run, and one way of saying when the window opens.

use std::time::Duration;

/// A warmup as long as the run leaves nothing to measure (`bench` checks it before its
/// `--setup`, `run` before launching).
pub fn window_conflict(warmup: Duration, duration: Duration) -> Option<String> {
    (warmup >= duration).then(|| {
        format!(
            "--warmup ({}) must be shorter than --duration ({}): the window measured is what comes after the warmup",
            humantime::format_duration(warmup),
            humantime::format_duration(duration)
        )
    })
}

/// Warmup options that cannot go together. `--frames N` says how much the whole command
/// did; no part of it can be set aside as warmup, so dividing N by the window after a
/// warmup would overstate the rate. A warmup is a time or a number of frames, not both.
pub fn warmup_conflict(
    frames: Option<u64>,
    warmup: Duration,
    warmup_frames: Option<u64>,
) -> Option<String> {
    if let (Some(n), Some(w)) = (frames, warmup_frames) {
        return Some(format!(
            "--frames {n} counts the whole run, so it cannot be split by --warmup-frames {w}: \
             drop --warmup-frames, or drop --frames and let the command record its frames"
        ));
    }
    if let (Some(w), false) = (warmup_frames, warmup.is_zero()) {
        return Some(format!(
            "--warmup {} and --warmup-frames {w} both say when the window opens: give one",
            humantime::format_duration(warmup)
        ));
    }
    let n = frames?;
    (!warmup.is_zero()).then(|| {
        format!(
            "--frames {n} counts the whole run, so it cannot be split by --warmup {}: drop \
             --warmup (the whole run is measured), or instrument the command so framelab sees \
             which frames came after the warmup",
            humantime::format_duration(warmup)
        )
    })
}
