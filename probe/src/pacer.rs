//! Pacer: starts frames on a grid of absolute deadlines, `anchor + n × period`, so wake-up
//! errors never accumulate into drift.
//!
//! ```no_run
//! use framelab_probe::pacer::{LatePolicy, Pacer};
//!
//! let mut pacer = Pacer::new(175.0, LatePolicy::Skip).expect("a valid frame rate");
//! for frame in 0..1000u64 {
//!     pacer.wait(frame); // returns at frame's slot; records how late it woke (not a stage)
//!     // ... capture, encode, send ...
//! }
//! ```
//!
//! How it waits (the hybrid method, the default): it sleeps with an absolute
//! `clock_nanosleep` until `deadline − spin window`, then spins on the clock until the
//! deadline. The spin window follows how late this thread's sleeps actually wake up (a
//! decaying maximum of the observed overshoot plus a margin, bounded), so it costs little CPU
//! where sleeps are precise and still hits the deadline where they are not. When the deadline
//! has already passed it makes no sleep call at all.
//!
//! A frame that reaches `wait` after its deadline is late; the [`LatePolicy`] says what
//! happens to the grid. All the logic runs against a [`PaceClock`], so tests drive it with a
//! fake clock.
//!
//! What it records: how late it woke for each frame, as the counter
//! [`PACER_LATE_COUNTER`](crate::wire::PACER_LATE_COUNTER) of that frame. Waiting for a
//! slot is not work of the frame, so it is no stage: the frame starts at its first real
//! stage, and the report gives the pacer's lateness a line of its own.

use std::fmt;

use crate::{sys, Counter};

/// The clock and the sleep the pacer uses. [`MonotonicClock`] is the real one; tests
/// implement it with a fake time that moves only when told.
pub trait PaceClock {
    /// CLOCK_MONOTONIC, nanoseconds.
    fn now_ns(&mut self) -> u64;
    /// Sleeps until the absolute time `deadline_ns`. May return early (a signal) or late.
    fn sleep_until_ns(&mut self, deadline_ns: u64);
    /// One turn of a busy-wait loop.
    fn spin(&mut self) {
        std::hint::spin_loop();
    }
}

/// CLOCK_MONOTONIC, slept on with `clock_nanosleep(TIMER_ABSTIME)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct MonotonicClock;

impl PaceClock for MonotonicClock {
    #[inline]
    fn now_ns(&mut self) -> u64 {
        sys::monotonic_ns()
    }

    fn sleep_until_ns(&mut self, deadline_ns: u64) {
        let ts = sys::Timespec {
            tv_sec: (deadline_ns / 1_000_000_000) as _,
            tv_nsec: (deadline_ns % 1_000_000_000) as _,
        };
        // SAFETY: ts is valid; a null remainder is allowed with TIMER_ABSTIME. An error (EINTR)
        // returns early, and the caller checks the clock again.
        unsafe {
            sys::clock_nanosleep(
                sys::CLOCK_MONOTONIC,
                sys::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
    }
}

/// What happens when a frame reaches [`Pacer::wait`] after its deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LatePolicy {
    /// The late frame starts now and the grid stays: the frames after it run back to back
    /// until they are on their slots again. Keeps the frame count; bursts after a stall.
    CatchUp,
    /// The late frame starts now in the latest slot already due; the slots missed before it
    /// are given up and the next frame waits for the next slot of the same grid. No burst,
    /// no phase change: what a display or a fixed-rate stream wants.
    Skip,
    /// The late frame starts now and the grid restarts from now. No burst; the phase moves
    /// by the lateness every time a frame is late.
    Reanchor,
}

impl LatePolicy {
    /// The C ABI's numbering: `FL_PACE_CATCH_UP` 0, `FL_PACE_SKIP` 1, `FL_PACE_REANCHOR` 2.
    pub fn from_c(policy: i32) -> Option<LatePolicy> {
        match policy {
            0 => Some(LatePolicy::CatchUp),
            1 => Some(LatePolicy::Skip),
            2 => Some(LatePolicy::Reanchor),
            _ => None,
        }
    }
}

/// How the pacer waits for a deadline in the future.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitMethod {
    /// One absolute `clock_nanosleep` to the deadline: least CPU, late by the timer slack
    /// and the wake-up latency.
    Sleep,
    /// Sleep until the spin window before the deadline, then spin to it.
    Hybrid,
}

/// Lowest and highest rates accepted: a period from one hour down to one microsecond.
pub const MIN_FPS: f64 = 1.0 / 3600.0;
pub const MAX_FPS: f64 = 1e6;

/// A frame rate the pacer cannot keep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InvalidRate(pub f64);

impl fmt::Display for InvalidRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot pace at {} fps: give a rate between one frame an hour ({MIN_FPS:.6}) and {MAX_FPS} fps",
            self.0
        )
    }
}

impl std::error::Error for InvalidRate {}

/// The spin window: how long before a deadline the hybrid wait stops sleeping and starts
/// spinning. It is an estimate of the recent sleep overshoot plus a margin. The estimate is a
/// decaying maximum: it loses 1/128 a sleep (a raised estimate halves in about 88 frames, half
/// a second at 175 fps, so it sits near the largest overshoot of the last hundred or so: a p99)
/// and takes any larger overshoot, but grows at most twofold per sleep, so one stray wake-up
/// (a preemption) does not make the pacer spin for the next second while an overshoot that
/// recurs is reached within a few. The window is capped at a tenth of the period (and
/// 1 ms): spinning never costs more than about 10% of a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpinWindow {
    estimate_ns: u64,
    max_ns: u64,
}

impl SpinWindow {
    /// Before any sleep was observed: about what the default 50 µs timer slack costs.
    pub const INITIAL_ESTIMATE_NS: u64 = 60_000;
    /// Covers the wake-ups a little later than any seen recently. 50 µs: on the 2-core
    /// development VM, 20 µs left a pooled p99 of 23 µs at 175 fps and 50 µs gave 13 µs,
    /// for 0.9% more of a core (BENCHMARKS.md).
    pub const MARGIN_NS: u64 = 50_000;
    /// The most a window may be, whatever the period.
    pub const MAX_NS: u64 = 1_000_000;
    /// The estimate loses estimate >> DECAY_SHIFT at each observation.
    pub const DECAY_SHIFT: u32 = 7;

    /// A window for frames `period_ns` apart: at most a tenth of the period, and at most
    /// [`Self::MAX_NS`].
    pub fn for_period(period_ns: u64) -> SpinWindow {
        SpinWindow {
            estimate_ns: Self::INITIAL_ESTIMATE_NS,
            max_ns: (period_ns / 10).min(Self::MAX_NS),
        }
    }

    /// How long before the deadline to stop sleeping.
    pub fn window_ns(&self) -> u64 {
        (self.estimate_ns + Self::MARGIN_NS).min(self.max_ns)
    }

    /// The overshoot estimate the window is built on.
    pub fn estimate_ns(&self) -> u64 {
        self.estimate_ns
    }

    /// Feeds how late one sleep woke up after the time it was asked for.
    pub fn observe(&mut self, overshoot_ns: u64) {
        let decayed = self.estimate_ns - (self.estimate_ns >> Self::DECAY_SHIFT);
        let grown = overshoot_ns
            .min(self.estimate_ns.max(1).saturating_mul(2))
            .min(self.max_ns);
        self.estimate_ns = grown.max(decayed);
    }
}

/// What one wait did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Woke {
    /// When it returned.
    pub woke_ns: u64,
    /// Whether a sleep call was made (false: spun only, or the deadline had passed).
    pub slept: bool,
}

/// Waits until `deadline_ns` with `method`; with [`WaitMethod::Hybrid`] the spin window
/// learns from the sleep's overshoot. Returns at once, with no sleep call, when the deadline
/// has passed. Never returns before the deadline.
pub fn wait_until<C: PaceClock>(
    clock: &mut C,
    deadline_ns: u64,
    method: WaitMethod,
    spin: &mut SpinWindow,
) -> Woke {
    let mut now = clock.now_ns();
    if now >= deadline_ns {
        return Woke {
            woke_ns: now,
            slept: false,
        };
    }
    let wake_at = match method {
        WaitMethod::Sleep => deadline_ns,
        WaitMethod::Hybrid => deadline_ns.saturating_sub(spin.window_ns()),
    };
    let slept = now < wake_at;
    if slept {
        // An early return (a signal) sleeps again to the same absolute time.
        while now < wake_at {
            clock.sleep_until_ns(wake_at);
            now = clock.now_ns();
        }
        if method == WaitMethod::Hybrid {
            spin.observe(now - wake_at);
        }
    }
    while now < deadline_ns {
        clock.spin();
        now = clock.now_ns();
    }
    Woke {
        woke_ns: now,
        slept,
    }
}

/// What [`Pacer::wait`] did for one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wake {
    /// The deadline of the slot that was due when `wait` was called.
    pub deadline_ns: u64,
    /// When `wait` returned.
    pub woke_ns: u64,
    /// `woke_ns − deadline_ns`: how late this frame starts against the grid.
    pub late_ns: u64,
    /// How late the pacer itself woke: `woke_ns` − the deadline, or − the call when the
    /// frame came late (then about 0: it passes straight through). What it records.
    pub overshoot_ns: u64,
    /// The frame reached `wait` after its deadline (the policy applied; no sleep was made).
    pub was_late: bool,
    /// A sleep call was made.
    pub slept: bool,
    /// Slots given up under [`LatePolicy::Skip`].
    pub skipped_slots: u64,
    /// The grid restarted at this frame ([`LatePolicy::Reanchor`]).
    pub reanchored: bool,
}

/// Fractional bits of the period: the grid is exact to 2⁻²⁰ ns per frame, under 1 ns of
/// drift in a million frames whatever the rate.
const PERIOD_FRAC_BITS: u32 = 20;

/// Paces a loop at a fixed rate on absolute deadlines. One thread at a time.
pub struct Pacer<C: PaceClock = MonotonicClock> {
    clock: C,
    /// Period in ns × 2^PERIOD_FRAC_BITS.
    period_fp: u64,
    policy: LatePolicy,
    method: WaitMethod,
    spin: SpinWindow,
    /// Grid origin: set by the first `wait`, moved by `Reanchor`.
    anchor_ns: Option<u64>,
    /// Index of the next slot due on the grid.
    slot: u64,
    /// Where the pacer records its lateness; `None`: not recorded.
    lateness: Option<Counter>,
}

impl Pacer<MonotonicClock> {
    /// A pacer at `fps` on CLOCK_MONOTONIC, waiting with the hybrid method and recording how
    /// late it woke (counter `pacer_late_ns`). The first `wait` returns at once and anchors
    /// the grid.
    pub fn new(fps: f64, policy: LatePolicy) -> Result<Pacer, InvalidRate> {
        Pacer::with_clock(MonotonicClock, fps, policy)
    }
}

impl<C: PaceClock> Pacer<C> {
    /// A pacer on `clock` (tests pass a fake one).
    pub fn with_clock(clock: C, fps: f64, policy: LatePolicy) -> Result<Pacer<C>, InvalidRate> {
        if !fps.is_finite() || !(MIN_FPS..=MAX_FPS).contains(&fps) {
            return Err(InvalidRate(fps));
        }
        let period_fp = (1e9 * (1u64 << PERIOD_FRAC_BITS) as f64 / fps).round() as u64;
        Ok(Pacer {
            clock,
            period_fp,
            policy,
            method: WaitMethod::Hybrid,
            spin: SpinWindow::for_period(period_fp >> PERIOD_FRAC_BITS),
            anchor_ns: None,
            slot: 0,
            lateness: Some(Counter::new(crate::wire::PACER_LATE_COUNTER)),
        })
    }

    /// Waits with `method` instead of the hybrid default.
    pub fn with_method(mut self, method: WaitMethod) -> Self {
        self.method = method;
        self
    }

    /// Whether to record how late the pacer woke (the default) or nothing.
    pub fn recording(mut self, record: bool) -> Self {
        self.lateness = record.then(|| Counter::new(crate::wire::PACER_LATE_COUNTER));
        self
    }

    pub fn policy(&self) -> LatePolicy {
        self.policy
    }

    pub fn method(&self) -> WaitMethod {
        self.method
    }

    /// The period, nanoseconds (fractional: 175 fps is 5714285.714 ns).
    pub fn period_ns(&self) -> f64 {
        self.period_fp as f64 / (1u64 << PERIOD_FRAC_BITS) as f64
    }

    /// The current spin window of the hybrid method.
    pub fn spin_window_ns(&self) -> u64 {
        self.spin.window_ns()
    }

    /// The deadline the next `wait` waits for; `None` before the first (which anchors the grid).
    pub fn next_deadline_ns(&self) -> Option<u64> {
        self.anchor_ns
            .map(|anchor| self.deadline(anchor, self.slot))
    }

    pub fn clock(&self) -> &C {
        &self.clock
    }

    pub fn clock_mut(&mut self) -> &mut C {
        &mut self.clock
    }

    fn deadline(&self, anchor_ns: u64, slot: u64) -> u64 {
        let offset = (slot as u128 * self.period_fp as u128) >> PERIOD_FRAC_BITS;
        anchor_ns.saturating_add(offset.min(u64::MAX as u128) as u64)
    }

    /// The latest slot whose deadline is at or before `now_ns`.
    fn slot_at(&self, anchor_ns: u64, now_ns: u64) -> u64 {
        let elapsed = (now_ns.saturating_sub(anchor_ns) as u128) << PERIOD_FRAC_BITS;
        (elapsed / self.period_fp as u128).min(u64::MAX as u128) as u64
    }

    /// Returns at the deadline of the next slot, or at once when that deadline has passed
    /// (then the late policy decides the following deadlines). Records for `frame` how late
    /// the pacer woke ([`Wake::overshoot_ns`]): the error the pacer itself added, a wait
    /// before the frame rather than a stage of it.
    pub fn wait(&mut self, frame: u64) -> Wake {
        let entry = self.clock.now_ns();
        let anchor = *self.anchor_ns.get_or_insert(entry);
        let deadline = self.deadline(anchor, self.slot);
        let mut wake = Wake {
            deadline_ns: deadline,
            ..Wake::default()
        };
        if entry == deadline {
            // Exactly on time (the first frame always is): nothing to wait for.
            wake.woke_ns = entry;
            self.slot += 1;
        } else if entry > deadline {
            // Late: no timer, no spin (that would be pure overhead).
            wake.was_late = true;
            wake.woke_ns = entry;
            match self.policy {
                LatePolicy::CatchUp => self.slot += 1,
                LatePolicy::Skip => {
                    let due = self.slot_at(anchor, entry).max(self.slot);
                    wake.skipped_slots = due - self.slot;
                    self.slot = due + 1;
                }
                LatePolicy::Reanchor => {
                    wake.reanchored = true;
                    self.anchor_ns = Some(entry);
                    self.slot = 1;
                }
            }
        } else {
            let woke = wait_until(&mut self.clock, deadline, self.method, &mut self.spin);
            wake.woke_ns = woke.woke_ns;
            wake.slept = woke.slept;
            self.slot += 1;
        }
        wake.late_ns = wake.woke_ns.saturating_sub(deadline);
        wake.overshoot_ns = wake.woke_ns.saturating_sub(entry.max(deadline));
        if let Some(lateness) = self.lateness {
            lateness.add(frame, wake.overshoot_ns.min(i64::MAX as u64) as i64);
        }
        wake
    }
}
