//! Converting the SDK's TSC ticks to CLOCK_MONOTONIC nanoseconds.
//!
//! The conversion must be a fixed function of the tick: the end of one lap and the start of the
//! next are the same tick, and they may be drained at different times. So it is piecewise linear:
//! each refresh starts a new segment at the current tick, continuous with the previous one (no
//! tick already seen can fall in it), with the slope measured over the whole run, nudged so that
//! any offset from CLOCK_MONOTONIC is worked off over the next second.
//!
//! Segments are only ever appended, and a record converts with the segments there were when
//! it was drained (`to_mono_ns_within`), so a spill folded after the run (`spill`) gives
//! every record the nanoseconds the drain would have. A spill carries the segments
//! (`encode_segments`), so a fold without the collector builds the same clock from them.

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
    /// The same line in integers, where the two floats are exact in it (always, for a
    /// clock of 0.5 to 16 ticks a nanosecond: 500 MHz to 16 GHz).
    fixed: Option<FixedLine>,
}

impl Segment {
    fn new(from_ticks: u64, mono_ns: f64, ns_per_tick: f64) -> Segment {
        Segment {
            from_ticks,
            mono_ns,
            ns_per_tick,
            fixed: FixedLine::of(mono_ns, ns_per_tick),
        }
    }

    fn convert(&self, ticks: u64) -> f64 {
        // i64 is ample (2^63 ticks is decades) and converts to f64 in one instruction.
        self.mono_ns + ticks.wrapping_sub(self.from_ticks) as i64 as f64 * self.ns_per_tick
    }

    /// The nearest nanosecond of `ticks` on this line: in integers where it can be, which is
    /// the exact value of the line rounded once (the floats round three times, and differ
    /// from it by 1 ns where the exact value lies within their rounding of a half ns).
    #[inline]
    fn nearest(&self, ticks: u64) -> i64 {
        let delta = ticks.wrapping_sub(self.from_ticks) as i64;
        // |delta| < MAX_DELTA, in one compare.
        let near = (delta as u64).wrapping_add(FixedLine::MAX_DELTA) < 2 * FixedLine::MAX_DELTA;
        match self.fixed {
            Some(line) if near => line.nearest(delta),
            _ => nearest_ns(self.convert(ticks)),
        }
    }
}

/// A segment as `ns × 2^FRACTION = base + delta × per_tick`, exactly: both floats are whole
/// multiples of 2^-FRACTION (checked when made), so the only rounding left is the last one.
#[derive(Clone, Copy, Debug)]
struct FixedLine {
    base: i128,
    per_tick: u64,
}

impl FixedLine {
    /// 56 fraction bits hold a slope of 1/16 ns a tick (a 16 GHz clock) exactly.
    const FRACTION: u32 = 56;
    /// Ticks either side of the segment's start the integers take (24 years at 3 GHz). With
    /// a slope under 2 ns a tick (`per_tick` < 2^57) and |mono_ns| under 2^61 ns (73 years)
    /// the sum stays under 2^119, so the rounded ns fit an i64 without a clamp.
    const MAX_DELTA: u64 = 1 << 61;

    fn of(mono_ns: f64, ns_per_tick: f64) -> Option<FixedLine> {
        let scale = (1u64 << Self::FRACTION) as f64;
        let per_tick = exact_integer(ns_per_tick * scale).filter(|&p| p > 0 && p < 1 << 57)?;
        let base = exact_integer(mono_ns * scale).filter(|b| b.unsigned_abs() < 1 << 117)?;
        Some(FixedLine {
            base,
            per_tick: per_tick as u64,
        })
    }

    #[inline]
    fn nearest(self, delta: i64) -> i64 {
        let exact = self.base + i128::from(delta) * i128::from(self.per_tick);
        // Round half up (as `nearest_ns`): add a half, then floor (the shift of a signed value).
        // Under 2^63 by the bounds above: the cast is exact.
        ((exact + (1 << (Self::FRACTION - 1))) >> Self::FRACTION) as i64
    }
}

/// `value` as an integer when it is one (scaling by a power of two is exact, so a float of the
/// line is exact in fixed point exactly when its scaled value has no fraction left).
fn exact_integer(value: f64) -> Option<i128> {
    (value.is_finite() && value.fract() == 0.0 && value.abs() < 2f64.powi(126))
        .then_some(value as i128)
}

#[derive(Clone)]
pub struct TickClock {
    first: Pair,
    segments: Vec<Segment>,
}

/// How far a segment may steer away from the measured slope (parts per million).
const MAX_STEER_PPM: f64 = 500.0;

impl TickClock {
    /// Calibrates over 10 ms; `refresh` keeps it close to CLOCK_MONOTONIC afterwards.
    // Not `Default`: making one calibrates against CLOCK_MONOTONIC for 10 ms.
    #[allow(clippy::new_without_default)]
    pub fn new() -> TickClock {
        let first = read_pair();
        std::thread::sleep(std::time::Duration::from_millis(10));
        let now = read_pair();
        let ns_per_tick = slope(first, now).unwrap_or(1.0);
        let segment = Segment::new(first.ticks, first.mono_ns as f64, ns_per_tick);
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
        self.segments
            .push(Segment::new(now.ticks, converted, measured * (1.0 + steer)));
    }

    /// A clock of no segment yet, built from a spill's (`push_encoded`); never refreshed.
    pub fn replayed() -> TickClock {
        TickClock {
            first: Pair {
                ticks: 0,
                mono_ns: 0,
            },
            segments: Vec::new(),
        }
    }

    /// How many segments the clock has: what a record drained now may pick from.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// CLOCK_MONOTONIC nanoseconds of `ticks`.
    #[inline]
    pub fn to_mono_ns(&self, ticks: u64) -> i64 {
        self.to_mono_ns_within(ticks, self.segments.len())
    }

    /// CLOCK_MONOTONIC nanoseconds of `ticks` on the clock's first `count` segments (at
    /// least one; the clock has one), as it converted when it had only those.
    #[inline]
    pub fn to_mono_ns_within(&self, ticks: u64, count: usize) -> i64 {
        let segments = &self.segments[..count.clamp(1, self.segments.len())];
        // Records are recent: search from the newest segment.
        let segment = segments
            .iter()
            .rev()
            .find(|s| s.from_ticks <= ticks)
            .unwrap_or(&segments[0]);
        segment.nearest(ticks)
    }

    /// Segments `from..` as bytes: each its first tick and its line's two floats, whose
    /// bits make the same segment again (`push_encoded`).
    pub fn encode_segments(&self, from: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(SEGMENT_BYTES * self.segments.len().saturating_sub(from));
        for s in self.segments.iter().skip(from) {
            out.extend_from_slice(&s.from_ticks.to_le_bytes());
            out.extend_from_slice(&s.mono_ns.to_bits().to_le_bytes());
            out.extend_from_slice(&s.ns_per_tick.to_bits().to_le_bytes());
        }
        out
    }

    /// Appends the segments `encode_segments(first)` gave, skipping those the clock has.
    /// False when they do not follow on (a gap, or bytes that are not whole segments).
    pub fn push_encoded(&mut self, first: usize, bytes: &[u8]) -> bool {
        if first > self.segments.len() || !bytes.len().is_multiple_of(SEGMENT_BYTES) {
            return false;
        }
        let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        for (index, b) in bytes.chunks_exact(SEGMENT_BYTES).enumerate() {
            if first + index < self.segments.len() {
                continue;
            }
            let (mono_ns, ns_per_tick) =
                (f64::from_bits(u64_at(b, 8)), f64::from_bits(u64_at(b, 16)));
            if !mono_ns.is_finite() || !ns_per_tick.is_finite() {
                return false;
            }
            self.segments
                .push(Segment::new(u64_at(b, 0), mono_ns, ns_per_tick));
        }
        true
    }
}

/// One segment in a spill: its first tick and two floats.
pub const SEGMENT_BYTES: usize = 24;

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

    /// `mono_ns + delta × ns_per_tick` with the floats taken as the rationals they are
    /// (`m × 2^e`, decoded from their bits), rounded half up; and how far that exact value
    /// lies from the nearest half nanosecond. An oracle that shares nothing with `FixedLine`.
    fn exact_nearest(mono_ns: f64, ns_per_tick: f64, delta: i64) -> (i64, f64) {
        fn decode(x: f64) -> (i128, i32) {
            let bits = x.to_bits();
            let (exponent, fraction) = (((bits >> 52) & 0x7ff) as i32, bits & ((1 << 52) - 1));
            let (m, e) = match exponent {
                0 => (fraction as i128, -1074),
                _ => ((fraction | 1 << 52) as i128, exponent - 1075),
            };
            (if x < 0.0 { -m } else { m }, e)
        }
        let (m_base, e_base) = decode(mono_ns);
        let (m_slope, e_slope) = decode(ns_per_tick);
        let e = e_base.min(e_slope);
        let product = i128::from(delta).checked_mul(m_slope).unwrap();
        let sum = product
            .checked_shl((e_slope - e) as u32)
            .unwrap()
            .checked_add(m_base.checked_shl((e_base - e) as u32).unwrap())
            .unwrap();
        assert!(e < 0 && e > -120, "the sample stays in i128");
        let one = 1i128 << -e;
        let shifted = sum + one / 2;
        let rounded = shifted.div_euclid(one);
        let above = shifted.rem_euclid(one);
        let to_half = above.min(one - above) as f64 / one as f64;
        (rounded as i64, to_half)
    }

    #[test]
    fn the_integer_conversion_is_the_exact_line_rounded_and_the_floats_within_their_rounding() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(29);
        // Clocks real TSCs run at (GHz), each steered as `refresh` may (±500 ppm) and not.
        let ghz = [
            1.0, 1.6, 2.0, 2.1, 2.399_998, 2.5, 2.9, 3.0, 3.312_345, 3.7, 4.2, 5.0,
        ];
        let day = 86_400e9;
        // Uptimes (CLOCK_MONOTONIC at the segment's start): seconds to a year.
        let uptimes = [
            1e9,
            600e9,
            3_600e9,
            day,
            7.0 * day,
            30.0 * day,
            52.0 * day,
            100.0 * day,
            365.0 * day,
        ];
        let (mut compared, mut fixed_used) = (0u64, 0u64);
        // Per uptime: how many records the floats round differently, within 2 s of the
        // segment's start (what a run sees: a segment lasts 0.5 s) and days from it.
        let (mut differ, mut worst) = (vec![[0u64; 2]; uptimes.len()], vec![0i64; uptimes.len()]);
        for &uptime in &uptimes {
            for &g in &ghz {
                for steer in [0.0, 431e-6, -500e-6, rng.random_range(-500e-6..500e-6)] {
                    // A segment's start as `refresh` makes it: a float of fractional ns.
                    let mono_ns = uptime + rng.random_range(0.0..1e9);
                    let ns_per_tick = (1.0 / g) * (1.0 + steer);
                    let segment =
                        Segment::new(rng.random_range(0..1u64 << 60), mono_ns, ns_per_tick);
                    let line = segment
                        .fixed
                        .expect("a TSC's slope is exact in the integers");
                    fixed_used += 1;
                    let ticks_a_second = (g * 1e9) as i64;
                    // Dense from the start and around half a second in (a refresh's reach),
                    // random over -1..2 s, and far: a record days from its segment.
                    let dense = (0..2_000).chain(ticks_a_second / 2..ticks_a_second / 2 + 2_000);
                    let week = 7 * 86_400 * ticks_a_second;
                    let mut random: Vec<i64> = (0..4_000)
                        .map(|_| rng.random_range(-ticks_a_second..2 * ticks_a_second))
                        .collect();
                    random.extend((0..200).map(|_| rng.random_range(-week..week)));
                    let near = 4_000 + 2 * 2_000;
                    for (n, delta) in dense.chain(random).enumerate() {
                        let ticks = segment.from_ticks.wrapping_add(delta as u64);
                        let (exact, to_half) = exact_nearest(mono_ns, ns_per_tick, delta);
                        assert_eq!(
                            line.nearest(delta),
                            exact,
                            "integers: {mono_ns} + {delta} × {ns_per_tick}"
                        );
                        assert_eq!(segment.nearest(ticks), exact);
                        let floats = nearest_ns(segment.convert(ticks));
                        compared += 1;
                        if floats != exact {
                            // The floats round the product, the sum and the half: each within
                            // half a unit in the last place of the largest of them.
                            let largest = mono_ns.abs() + (delta as f64 * ns_per_tick).abs() + 1.0;
                            let ulp = f64::from_bits(largest.to_bits() + 1) - largest;
                            let off = (floats - exact).abs();
                            if ulp < 0.25 {
                                // Below 2^50 ns (13 days): only near a half ns.
                                assert_eq!(off, 1, "off by more than 1 ns");
                                assert!(to_half <= 2.0 * ulp, "{to_half} from a half, ulp {ulp}");
                            } else {
                                // Above, the floats' steps are a quarter ns and more (from
                                // 2^52 ns, 52 days, a whole ns): off by up to two of them.
                                assert!(
                                    off as f64 <= 0.5 + 2.0 * ulp,
                                    "off by {off} ns, ulp {ulp}"
                                );
                            }
                            let band = uptimes.iter().position(|&u| u == uptime).unwrap();
                            differ[band][usize::from(n >= near)] += 1;
                            worst[band] = worst[band].max(off);
                        }
                    }
                }
            }
        }
        // What the docs quote: where the floats differ from the exact line, by uptime.
        let segments = (ghz.len() * 4) as u64;
        for ((uptime, [near, far]), off) in uptimes.iter().zip(&differ).zip(&worst) {
            eprintln!(
                "uptime {:>7.3} days: the floats differ in {near} of {} near and {far} of {} far, by up to {off} ns",
                uptime / day,
                segments * 8_000,
                segments * 200,
            );
        }
        assert_eq!(compared, uptimes.len() as u64 * segments * 8_200);
        assert_eq!(fixed_used, uptimes.len() as u64 * segments);
    }

    #[test]
    fn slopes_the_integers_cannot_hold_fall_back_to_the_floats() {
        // A 20 GHz clock's slope has bits below 2^-56; a 400 MHz clock's is over 2 ns a tick.
        for ns_per_tick in [1.0 / 20.0 + 1e-17, 2.5, 1000.0] {
            let segment = Segment::new(0, 1e9, ns_per_tick);
            assert!(segment.fixed.is_none(), "{ns_per_tick}");
            assert_eq!(segment.nearest(12_345), nearest_ns(segment.convert(12_345)));
        }
        // Beyond the integers' reach of ticks either side: the floats.
        let segment = Segment::new(1 << 63, 1e9, 0.3);
        let far = (1u64 << 63).wrapping_add(FixedLine::MAX_DELTA);
        assert_eq!(segment.nearest(far), nearest_ns(segment.convert(far)));
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
