//! Pacing: frame n starts at the absolute deadline `start + n × period`, so sleep error does
//! not accumulate. A late frame starts at once; when the pipeline is more than one slot
//! behind the grid moves forward, so at most one slot is caught up (no burst of frames).
//! Everything about waiting lives here so a more precise pacer can replace it.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Longest single sleep, so a stop request is noticed promptly even at a very low fps.
const MAX_SLEEP: Duration = Duration::from_millis(50);

pub struct Pacer {
    period: Duration,
    next: Instant,
}

impl Pacer {
    /// The first deadline is now.
    pub fn new(period: Duration) -> Pacer {
        Pacer {
            period,
            next: Instant::now(),
        }
    }

    /// Waits for the next frame's deadline and advances it by one period. Returns false,
    /// early, when `stop` becomes true.
    pub fn wait(&mut self, stop: &AtomicBool) -> bool {
        loop {
            if stop.load(Relaxed) {
                return false;
            }
            let now = Instant::now();
            if now >= self.next {
                // Behind by more than one slot: move the grid so the next frame is at most
                // one period early relative to the old one (catch up one slot, no more).
                if now.duration_since(self.next) > self.period {
                    self.next = now;
                }
                break;
            }
            std::thread::sleep((self.next - now).min(MAX_SLEEP));
        }
        self.next = self.next.checked_add(self.period).unwrap_or(self.next);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_request_ends_the_wait() {
        let mut pacer = Pacer::new(Duration::from_secs(3600));
        let stop = AtomicBool::new(false);
        assert!(pacer.wait(&stop)); // the first deadline is now
        stop.store(true, Relaxed);
        assert!(!pacer.wait(&stop));
    }

    #[test]
    fn a_late_pipeline_does_not_burst() {
        let period = Duration::from_millis(1);
        let mut pacer = Pacer::new(period);
        let stop = AtomicBool::new(false);
        pacer.wait(&stop);
        std::thread::sleep(Duration::from_millis(20)); // twenty slots late
        let before = Instant::now();
        pacer.wait(&stop);
        // The grid moved to "now": the next deadline is about one period after this frame,
        // not twenty slots in the past.
        assert!(pacer.next >= before + period);
    }
}
