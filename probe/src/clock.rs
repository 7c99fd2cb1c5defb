//! The clock the hot path reads: the TSC on x86-64 (the collector converts ticks to
//! CLOCK_MONOTONIC with calibration pairs), CLOCK_MONOTONIC everywhere else.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use crate::wire::{CLOCK_MONO, CLOCK_TSC};

static CLOCK: AtomicU32 = AtomicU32::new(CLOCK_TSC);

pub(crate) fn select(clock: u32) {
    let clock = if cfg!(target_arch = "x86_64") {
        clock
    } else {
        CLOCK_MONO
    };
    CLOCK.store(clock, Relaxed);
}

pub(crate) fn selected() -> u32 {
    if cfg!(target_arch = "x86_64") {
        CLOCK.load(Relaxed)
    } else {
        CLOCK_MONO
    }
}

/// A timestamp in the session's clock.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if CLOCK.load(Relaxed) == CLOCK_TSC {
            // SAFETY: rdtsc has no preconditions on x86-64.
            return unsafe { core::arch::x86_64::_rdtsc() };
        }
    }
    crate::sys::monotonic_ns()
}
