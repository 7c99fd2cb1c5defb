//! Pacing: the SDK's pacer (`framelab_probe::pacer`) starts frame n at `anchor + n × period`,
//! records how late it woke (a wait before the frame, not one of its stages), and skips the
//! slots a late pipeline missed (no burst of frames after a stall). `--pacer sleep` waits
//! with one absolute sleep per frame; `--pacer hybrid` sleeps, then spins the last few tens
//! of µs: compare the two reports' `pacer` line.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use anyhow::Result;
use framelab_probe::monotonic_ns;
use framelab_probe::pacer::{LatePolicy, Pacer as SdkPacer, WaitMethod};

/// Longest single sleep before the pacer's own wait, so a stop request is noticed promptly
/// even at a very low fps.
const MAX_SLEEP: Duration = Duration::from_millis(50);

/// How the demo waits for each frame's slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PacerKind {
    /// One absolute `clock_nanosleep` per frame.
    Sleep,
    /// Sleep, then spin for an adaptive window before the deadline.
    #[default]
    Hybrid,
}

impl PacerKind {
    pub fn name(self) -> &'static str {
        match self {
            PacerKind::Sleep => "sleep",
            PacerKind::Hybrid => "hybrid",
        }
    }

    fn method(self) -> WaitMethod {
        match self {
            PacerKind::Sleep => WaitMethod::Sleep,
            PacerKind::Hybrid => WaitMethod::Hybrid,
        }
    }
}

pub struct Pacer {
    inner: SdkPacer,
}

impl Pacer {
    /// The first deadline is the first `wait`.
    pub fn new(fps: f64, kind: PacerKind) -> Result<Pacer> {
        let inner = SdkPacer::new(fps, LatePolicy::Skip)?.with_method(kind.method());
        Ok(Pacer { inner })
    }

    /// Waits for `frame`'s slot. Returns false, early, when `stop` becomes true.
    pub fn wait(&mut self, frame: u64, stop: &AtomicBool) -> bool {
        // Far from the deadline: short plain sleeps, checking `stop`, until the pacer's
        // precise wait has at most MAX_SLEEP left.
        while let Some(deadline) = self.inner.next_deadline_ns() {
            if stop.load(Relaxed) {
                return false;
            }
            let left = deadline.saturating_sub(monotonic_ns());
            let step = MAX_SLEEP.as_nanos() as u64;
            if left <= step {
                break;
            }
            std::thread::sleep(Duration::from_nanos((left - step).min(step)));
        }
        if stop.load(Relaxed) {
            return false;
        }
        self.inner.wait(frame);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_request_ends_the_wait() {
        // One frame an hour: the first wait anchors the grid and returns at once; the second
        // would wait an hour, and returns at its first check of `stop`.
        let mut pacer = Pacer::new(1.0 / 3600.0, PacerKind::Hybrid).unwrap();
        let stop = AtomicBool::new(false);
        assert!(pacer.wait(0, &stop));
        stop.store(true, Relaxed);
        assert!(!pacer.wait(1, &stop));
    }

    #[test]
    fn the_kind_chooses_the_wait_method() {
        let sleep = Pacer::new(60.0, PacerKind::Sleep).unwrap();
        assert_eq!(sleep.inner.method(), WaitMethod::Sleep);
        assert_eq!(sleep.inner.policy(), LatePolicy::Skip);
        let hybrid = Pacer::new(60.0, PacerKind::default()).unwrap();
        assert_eq!(hybrid.inner.method(), WaitMethod::Hybrid);
        assert!(Pacer::new(0.0, PacerKind::Sleep).is_err());
    }
}
