//! Rows whose times must not go back: the frames of one PresentMon swap chain, the rows of
//! one MangoHud log. A row kept at a time stepped back (an edited or damaged row) stretches
//! the window and becomes an "interval" of seconds in every fps low, so it is a bad record.

/// The latest kept time and the line it came from.
pub struct InOrder {
    /// How far back a time may be and still count as in order (the tool's rounding).
    tolerance_ns: i64,
    previous: Option<(i64, u64)>,
}

/// A time that went back: how far (ns) and the line of the time it went back from.
pub struct SteppedBack {
    pub back_ns: i64,
    pub from_line: u64,
}

impl SteppedBack {
    /// `back_ns` in seconds, for messages.
    pub fn seconds(&self) -> f64 {
        self.back_ns as f64 / 1e9
    }
}

impl InOrder {
    pub fn new(tolerance_ns: i64) -> InOrder {
        InOrder {
            tolerance_ns,
            previous: None,
        }
    }

    /// Takes the time of the row on `line`, or says how far it went back (and keeps the
    /// time before it, so that one bad row does not make the next good one look bad).
    pub fn check(&mut self, t_ns: i64, line: u64) -> Result<(), SteppedBack> {
        if let Some((previous, from_line)) = self.previous {
            let back_ns = previous.saturating_sub(t_ns);
            if back_ns > self.tolerance_ns {
                return Err(SteppedBack { back_ns, from_line });
            }
        }
        self.previous = Some((t_ns, line));
        Ok(())
    }

    /// Starts again: a new log whose clock restarts.
    pub fn restart(&mut self) {
        self.previous = None;
    }
}

#[cfg(test)]
mod tests {
    use super::InOrder;

    #[test]
    fn a_time_back_past_the_tolerance_names_the_line_it_went_back_from() {
        let mut order = InOrder::new(2);
        assert!(order.check(100, 2).is_ok());
        assert!(order.check(99, 3).is_ok(), "within the tolerance");
        let back = order.check(50, 4).unwrap_err();
        assert_eq!((back.back_ns, back.from_line), (49, 3));
        // The bad time was not taken: the next row is compared with line 3's.
        assert!(order.check(120, 5).is_ok());
        order.restart();
        assert!(order.check(0, 7).is_ok());
    }
}
