//! libwayland's timestamps wrap: it prints `(tv_sec * 1000000 + tv_nsec / 1000)` (wall
//! clock microseconds) stored in a 32-bit `unsigned int`, divided by 1000, so the printed
//! milliseconds go from 4294967.295 back to 0 every 2^32 µs (71 min 35 s).

/// One turn of the printed counter: 2^32 µs, in ns.
pub const WRAP_NS: i64 = (1 << 32) * 1000;

/// A timestamp this much before the previous one is taken as printed late. Threads print
/// out of order by the time between taking the stamp and writing the line: microseconds,
/// a few milliseconds when a thread is preempted, some 100 ms on a badly overloaded
/// machine. A second is ten times that worst case, and small enough that a line stamped
/// further back (an NTP step, an edited or corrupt line) is a bad record instead of a
/// time that stretches the window: a line 30 s back once divided observed fps by 6.8.
pub const BACKWARD_TOLERANCE_NS: i64 = 1_000_000_000;

/// A step back is a wrap of the counter only where the counter can wrap: from a stamp at
/// most this far before 2^32 µs to one at most this far past 0 (together). Anything else
/// further back than the tolerance is a stamp gone backwards (a stepped clock, an edited
/// or corrupt line), never 71 minutes forward: one such line once stretched a 3 s log
/// over 72 minutes.
pub const WRAP_MARGIN_NS: i64 = 10 * 60 * 1_000_000_000;

/// A printed stamp as a time, or a step back that is neither late printing nor a wrap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    At(i64),
    /// This far before the latest stamp (ns).
    Backwards(i64),
}

/// Turns the printed counter into a time that keeps going up past each wrap.
#[derive(Default)]
pub struct Unwrapper {
    /// The latest unwrapped time seen.
    latest: Option<i64>,
}

impl Unwrapper {
    /// The unwrapped time of a printed stamp (ns). Stamps of a turn or more (which
    /// libwayland never prints) are taken as they are.
    pub fn unwrap(&mut self, printed_ns: i64) -> Stamp {
        if !(0..WRAP_NS).contains(&printed_ns) {
            return Stamp::At(printed_ns);
        }
        let Some(latest) = self.latest else {
            self.latest = Some(printed_ns);
            return Stamp::At(printed_ns);
        };
        let latest_printed = latest.rem_euclid(WRAP_NS);
        let ahead = (printed_ns - latest_printed).rem_euclid(WRAP_NS);
        // Late printing, across the wrap or not.
        if ahead > WRAP_NS - BACKWARD_TOLERANCE_NS {
            return Stamp::At(latest.saturating_sub(WRAP_NS - ahead));
        }
        if printed_ns < latest_printed && ahead > WRAP_MARGIN_NS {
            return Stamp::Backwards(latest_printed - printed_ns);
        }
        // Back across a wrap already taken (printed before it, after lines printed past
        // it): a step back, not a turn forward less that step.
        let back_across_wrap = WRAP_NS - ahead;
        if printed_ns > latest_printed && latest >= WRAP_NS && back_across_wrap <= WRAP_MARGIN_NS {
            return Stamp::Backwards(back_across_wrap);
        }
        let now = latest.saturating_add(ahead);
        self.latest = Some(now);
        Stamp::At(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    /// The time of a stamp that must be one.
    fn at(clock: &mut Unwrapper, printed: i64) -> i64 {
        match clock.unwrap(printed) {
            Stamp::At(t) => t,
            other => panic!("{printed}: {other:?}"),
        }
    }

    #[test]
    fn a_wrap_adds_one_turn() {
        let mut clock = Unwrapper::default();
        assert_eq!(at(&mut clock, 4_294_960_000 * 1000), 4_294_960_000 * 1000);
        // 4294967.296 - 4294960.000 = 7.296 ms to the wrap, then 12 ms past it.
        let after = at(&mut clock, 12 * MS);
        assert_eq!(after - 4_294_960_000 * 1000, 19_296_000);
        assert_eq!(at(&mut clock, 13 * MS), WRAP_NS + 13 * MS);
    }

    #[test]
    fn a_late_line_goes_back_without_moving_the_clock() {
        let mut clock = Unwrapper::default();
        clock.unwrap(5 * MS);
        assert_eq!(at(&mut clock, 4 * MS), 4 * MS);
        assert_eq!(at(&mut clock, 6 * MS), 6 * MS);
        // Late across the wrap: printed just before it, after one printed just after.
        let mut clock = Unwrapper::default();
        clock.unwrap(WRAP_NS - MS);
        clock.unwrap(MS);
        assert_eq!(at(&mut clock, WRAP_NS - 2 * MS), WRAP_NS - 2 * MS);
    }

    #[test]
    fn a_step_back_far_from_the_wrap_is_no_wrap() {
        let mut clock = Unwrapper::default();
        at(&mut clock, 1_081_336 * MS);
        // A stamp set to 0 mid-log: 18 minutes back, not 53 forward.
        assert_eq!(clock.unwrap(0), Stamp::Backwards(1_081_336 * MS));
        // The clock did not move: the next line goes on from where it was.
        assert_eq!(at(&mut clock, 1_081_337 * MS), 1_081_337 * MS);
        // 33 minutes back in print, from 5 minutes before the wrap: 38 minutes forward is
        // too far to be a wrap.
        let mut clock = Unwrapper::default();
        at(&mut clock, 4_000_000 * MS);
        assert!(matches!(clock.unwrap(2_000_000 * MS), Stamp::Backwards(_)));
        // 4 minutes before the wrap to 5 minutes past it: a wrap.
        let mut clock = Unwrapper::default();
        let before = WRAP_NS - 240_000 * MS;
        at(&mut clock, before);
        assert_eq!(at(&mut clock, 300_000 * MS), WRAP_NS + 300_000 * MS);
    }

    #[test]
    fn a_step_back_past_the_tolerance_is_a_bad_stamp_wrap_or_not() {
        let mut clock = Unwrapper::default();
        at(&mut clock, 3_435_555 * MS);
        assert_eq!(at(&mut clock, 3_435_554_100_000), 3_435_554_100_000);
        assert_eq!(clock.unwrap(3_405_555 * MS), Stamp::Backwards(30_000 * MS));
        // Printed 30 s before the wrap after a line printed 5 s past it.
        let mut clock = Unwrapper::default();
        at(&mut clock, WRAP_NS - MS);
        at(&mut clock, 5_000 * MS);
        assert_eq!(
            clock.unwrap(WRAP_NS - 25_000 * MS),
            Stamp::Backwards(30_000 * MS)
        );
    }

    #[test]
    fn never_overflows() {
        let mut clock = Unwrapper::default();
        clock.unwrap(i64::MAX);
        clock.unwrap(-1);
        for i in 0..10_000 {
            clock.unwrap((i % 2) * (WRAP_NS / 2 + 1));
        }
        clock.latest = Some(i64::MAX - 5);
        for printed in [0, 1, WRAP_NS / 2, WRAP_NS - 1] {
            if let Stamp::At(t) = clock.unwrap(printed) {
                assert!(t > 0);
            }
        }
    }
}
