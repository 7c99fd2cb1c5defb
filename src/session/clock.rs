//! Converting the SDK's TSC ticks to CLOCK_MONOTONIC nanoseconds.
//!
//! The collector reads both clocks back to back now and then. The slope comes from the first
//! and the latest pair (a long baseline, so little error), the offset from the latest pair
//! (records are drained within milliseconds of being written, so any slope error barely moves them).

use framelab_probe::monotonic_ns;

#[derive(Clone, Copy, Debug)]
struct Pair {
    ticks: u64,
    mono_ns: u64,
}

pub struct TickClock {
    first: Pair,
    latest: Pair,
    ns_per_tick: f64,
}

impl TickClock {
    /// Takes the first pair; call `refresh` later to get a slope.
    pub fn new() -> TickClock {
        let first = read_pair();
        std::thread::sleep(std::time::Duration::from_millis(10));
        let mut clock = TickClock {
            first,
            latest: first,
            ns_per_tick: 1.0,
        };
        clock.refresh();
        clock
    }

    pub fn refresh(&mut self) {
        let pair = read_pair();
        if pair.ticks > self.first.ticks && pair.mono_ns > self.first.mono_ns {
            self.ns_per_tick =
                (pair.mono_ns - self.first.mono_ns) as f64 / (pair.ticks - self.first.ticks) as f64;
            self.latest = pair;
        }
    }

    /// CLOCK_MONOTONIC nanoseconds of `ticks`.
    pub fn to_mono_ns(&self, ticks: u64) -> i64 {
        let delta = ticks as i128 - self.latest.ticks as i128;
        self.latest.mono_ns as i64 + (delta as f64 * self.ns_per_tick).round() as i64
    }
}

/// A (ticks, mono) pair read as close together as this machine allows: the tightest of a few tries.
fn read_pair() -> Pair {
    let mut best = (
        u64::MAX,
        Pair {
            ticks: 0,
            mono_ns: 0,
        },
    );
    for _ in 0..5 {
        let before = monotonic_ns();
        let ticks = raw_ticks();
        let after = monotonic_ns();
        let width = after - before;
        if width < best.0 {
            best = (
                width,
                Pair {
                    ticks,
                    mono_ns: before + width / 2,
                },
            );
        }
    }
    best.1
}

/// The TSC where there is one (the SDK's `tsc` clock); elsewhere the SDK stamps CLOCK_MONOTONIC.
fn raw_ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc has no preconditions on x86-64.
    return unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    return monotonic_ns();
}
