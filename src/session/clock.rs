//! Converting the SDK's TSC ticks to CLOCK_MONOTONIC nanoseconds.
//!
//! The conversion must be a fixed function of the tick: the end of one lap and the start of the
//! next are the same tick, and they may be drained at different times. So it is piecewise linear:
//! each refresh starts a new segment at the current tick, continuous with the previous one (no
//! tick already seen can fall in it), with the slope measured over the whole run, nudged so that
//! any offset from CLOCK_MONOTONIC is worked off over the next second.

use framelab_probe::monotonic_ns;

#[derive(Clone, Copy, Debug)]
struct Pair {
    ticks: u64,
    mono_ns: u64,
}

#[derive(Clone, Copy, Debug)]
struct Segment {
    from_ticks: u64,
    mono_ns: f64,
    ns_per_tick: f64,
}

impl Segment {
    fn convert(&self, ticks: u64) -> f64 {
        // i64 is ample (2^63 ticks is decades) and converts to f64 in one instruction.
        self.mono_ns + ticks.wrapping_sub(self.from_ticks) as i64 as f64 * self.ns_per_tick
    }
}

pub struct TickClock {
    first: Pair,
    segments: Vec<Segment>,
}

/// How far a segment may steer away from the measured slope (parts per million).
const MAX_STEER_PPM: f64 = 500.0;

impl TickClock {
    /// Calibrates over 10 ms; `refresh` keeps it close to CLOCK_MONOTONIC afterwards.
    pub fn new() -> TickClock {
        let first = read_pair();
        std::thread::sleep(std::time::Duration::from_millis(10));
        let now = read_pair();
        let ns_per_tick = slope(first, now).unwrap_or(1.0);
        let segment = Segment {
            from_ticks: first.ticks,
            mono_ns: first.mono_ns as f64,
            ns_per_tick,
        };
        TickClock {
            first,
            segments: vec![segment],
        }
    }

    /// Starts a new segment at the current tick.
    pub fn refresh(&mut self) {
        let now = read_pair();
        let Some(measured) = slope(self.first, now) else {
            return;
        };
        let current = *self.segments.last().expect("at least one segment");
        if now.ticks <= current.from_ticks {
            return;
        }
        let converted = current.convert(now.ticks);
        let error_ns = now.mono_ns as f64 - converted;
        let steer = (error_ns / 1e9).clamp(-MAX_STEER_PPM * 1e-6, MAX_STEER_PPM * 1e-6);
        self.segments.push(Segment {
            from_ticks: now.ticks,
            mono_ns: converted,
            ns_per_tick: measured * (1.0 + steer),
        });
    }

    /// CLOCK_MONOTONIC nanoseconds of `ticks`.
    pub fn to_mono_ns(&self, ticks: u64) -> i64 {
        // Records are recent: search from the newest segment.
        let segment = self
            .segments
            .iter()
            .rev()
            .find(|s| s.from_ticks <= ticks)
            .unwrap_or(&self.segments[0]);
        nearest_ns(segment.convert(ticks))
    }
}

/// `(ns + 0.5).floor() as i64` without a call to libm's floor() per record (the baseline
/// x86-64 target has no rounding instruction): truncate, then one down where truncation
/// went up (negative non-integers).
fn nearest_ns(ns: f64) -> i64 {
    let x = ns + 0.5;
    let truncated = x as i64;
    truncated.saturating_sub(i64::from(truncated as f64 > x))
}

fn slope(a: Pair, b: Pair) -> Option<f64> {
    (b.ticks > a.ticks && b.mono_ns > a.mono_ns)
        .then(|| (b.mono_ns - a.mono_ns) as f64 / (b.ticks - a.ticks) as f64)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_ns_rounds_like_floor_of_half_up() {
        let values = [
            0.0,
            0.49,
            0.5,
            0.51,
            1.5,
            2.5,
            -0.5,
            -0.51,
            -1.5,
            -2.49,
            -2.5,
            -7.0,
            1e15 + 0.5,
            -1e15 - 0.5,
            123_456_789.999,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
        ];
        for ns in values {
            assert_eq!(nearest_ns(ns), (ns + 0.5).floor() as i64, "{ns}");
        }
    }

    #[test]
    fn a_tick_converts_the_same_before_and_after_a_refresh() {
        let mut clock = TickClock::new();
        let tick = raw_ticks();
        let before = clock.to_mono_ns(tick);
        std::thread::sleep(std::time::Duration::from_millis(5));
        clock.refresh();
        assert_eq!(clock.to_mono_ns(tick), before);
    }

    #[test]
    fn segments_join_without_a_step_and_stay_monotonic() {
        let mut clock = TickClock::new();
        for _ in 0..5 {
            std::thread::sleep(std::time::Duration::from_millis(2));
            clock.refresh();
        }
        for pair in clock.segments.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let at_join = a.convert(b.from_ticks);
            assert!((at_join - b.mono_ns).abs() < 1e-3, "no step at a join");
            assert!(b.convert(b.from_ticks + 1000) > b.mono_ns);
        }
    }

    #[test]
    fn conversion_tracks_clock_monotonic() {
        let mut clock = TickClock::new();
        std::thread::sleep(std::time::Duration::from_millis(20));
        clock.refresh();
        let pair = read_pair();
        let error = clock.to_mono_ns(pair.ticks) - pair.mono_ns as i64;
        // The point is "same clock": a wrong slope or offset is off by about the time since
        // the calibration, or more. A loaded machine stretches that time (the sleeps) and
        // can widen the calibration's reads, so the bound grows with it: 1% of it, at
        // least 200 µs.
        let since_ns = (pair.mono_ns - clock.first.mono_ns) as i64;
        let bound = (since_ns / 100).max(200_000);
        assert!(
            error.abs() < bound,
            "tick conversion is {error} ns off CLOCK_MONOTONIC, {since_ns} ns after calibrating"
        );
    }
}
