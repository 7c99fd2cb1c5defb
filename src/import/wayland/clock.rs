//! libwayland's timestamps wrap: it prints `(tv_sec * 1000000 + tv_nsec / 1000)` (wall
//! clock microseconds) stored in a 32-bit `unsigned int`, divided by 1000, so the printed
//! milliseconds go from 4294967.295 back to 0 every 2^32 µs (71 min 35 s).

/// One turn of the printed counter: 2^32 µs, in ns.
pub const WRAP_NS: i64 = (1 << 32) * 1000;

/// A timestamp this much before the previous one is taken as printed late (threads print
/// out of order; the wall clock may be stepped back a little); further back, the counter
/// wrapped. Why not half a turn: a log with no message for over 36 minutes (an idle
/// client) is more likely than a clock stepped back by minutes, and a 71-minute gap
/// cannot be told from no gap at all either way.
pub const BACKWARD_TOLERANCE_NS: i64 = 60 * 1_000_000_000;

/// Turns the printed counter into a time that keeps going up past each wrap.
#[derive(Default)]
pub struct Unwrapper {
    /// The latest unwrapped time seen.
    latest: Option<i64>,
}

impl Unwrapper {
    /// The unwrapped time of a printed stamp (ns). Stamps of a turn or more (which
    /// libwayland never prints) are taken as they are.
    pub fn unwrap(&mut self, printed_ns: i64) -> i64 {
        if !(0..WRAP_NS).contains(&printed_ns) {
            return printed_ns;
        }
        let Some(latest) = self.latest else {
            self.latest = Some(printed_ns);
            return printed_ns;
        };
        let ahead = (printed_ns - latest.rem_euclid(WRAP_NS)).rem_euclid(WRAP_NS);
        if ahead > WRAP_NS - BACKWARD_TOLERANCE_NS {
            return latest.saturating_sub(WRAP_NS - ahead);
        }
        let now = latest.saturating_add(ahead);
        self.latest = Some(now);
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    #[test]
    fn a_wrap_adds_one_turn() {
        let mut clock = Unwrapper::default();
        assert_eq!(clock.unwrap(4_294_960_000 * 1000), 4_294_960_000 * 1000);
        // 4294967.296 - 4294960.000 = 7.296 ms to the wrap, then 12 ms past it.
        let after = clock.unwrap(12 * MS);
        assert_eq!(after - 4_294_960_000 * 1000, 19_296_000);
        assert_eq!(clock.unwrap(13 * MS), WRAP_NS + 13 * MS);
    }

    #[test]
    fn a_late_line_goes_back_without_moving_the_clock() {
        let mut clock = Unwrapper::default();
        clock.unwrap(5 * MS);
        assert_eq!(clock.unwrap(4 * MS), 4 * MS);
        assert_eq!(clock.unwrap(6 * MS), 6 * MS);
        // Late across the wrap: printed just before it, after one printed just after.
        let mut clock = Unwrapper::default();
        clock.unwrap(WRAP_NS - MS);
        clock.unwrap(MS);
        assert_eq!(clock.unwrap(WRAP_NS - 2 * MS), WRAP_NS - 2 * MS);
    }

    #[test]
    fn long_gaps_go_forward() {
        let mut clock = Unwrapper::default();
        clock.unwrap(4_000_000 * MS);
        // 33 minutes back in print is 38 minutes forward through a wrap.
        assert_eq!(clock.unwrap(2_000_000 * MS), 2_000_000 * MS + WRAP_NS);
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
            assert!(clock.unwrap(printed) > 0);
        }
    }
}
