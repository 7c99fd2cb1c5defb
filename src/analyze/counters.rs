//! Per-frame counters summed over the measured frames, and their rates over the window.
//! The pacer's lateness travels as a counter too; it is taken apart here (`pacer.rs`).

use super::frames::{Frames, Measured};
use super::pacer::{PacerLateness, PacerSummary};
use super::CounterSummary;
use crate::model::CounterValue;

/// Byte counters also get a bit rate: `bytes` itself or any name ending in `_bytes`.
pub fn is_byte_counter(name: &str) -> bool {
    name == "bytes" || name.ends_with("_bytes")
}

/// What a run's counter values give.
#[derive(Debug, Default)]
pub struct CounterFacts {
    /// In counter id order; counters with no measured value are left out.
    pub summaries: Vec<CounterSummary>,
    /// Values that belong to no frame with a span (not counted).
    pub orphans: u64,
    /// The pacer's lateness, when a pacer recorded it.
    pub pacer: Option<PacerSummary>,
}

/// Counters summed over measured frames, and the pacer's lateness apart from them.
pub fn counter_summaries(
    values: &[CounterValue],
    names: &[String],
    frames: &Frames,
    measured: &Measured,
    window_s: Option<f64>,
) -> CounterFacts {
    let mut totals = CounterTotals::new(frames.all.len(), names);
    for v in values {
        let frame = frames.index_of(v.frame);
        totals.add(
            v,
            frame,
            frame.is_some_and(|i| measured.in_window[i as usize]),
        );
    }
    totals.finish(names, window_s)
}

/// The sums behind [`counter_summaries`], fed one value at a time (a run file's counters
/// are streamed, not loaded).
pub struct CounterTotals {
    /// Frame indices range over `0..frames`.
    frames: usize,
    totals: Vec<i128>,
    values_seen: Vec<u64>,
    /// One bit per (counter, frame) so a counter recorded twice for a frame counts that
    /// frame once.
    seen: Vec<Vec<u64>>,
    frames_with: Vec<u64>,
    orphans: u64,
    pacer: PacerLateness,
}

impl CounterTotals {
    /// `names`: the run's counter names (to know the pacer's).
    pub fn new(frames: usize, names: &[String]) -> CounterTotals {
        CounterTotals {
            pacer: PacerLateness::new(names),
            frames,
            totals: Vec::new(),
            values_seen: Vec::new(),
            seen: Vec::new(),
            frames_with: Vec::new(),
            orphans: 0,
        }
    }

    /// `frame`: the index of the value's frame, `None` when no frame with a span has its id;
    /// `measured`: whether that frame is in the window.
    pub fn add(&mut self, v: &CounterValue, frame: Option<u32>, measured: bool) {
        if self.pacer.take(v, frame, measured) {
            return;
        }
        let Some(idx) = frame else {
            self.orphans += 1;
            return;
        };
        if !measured {
            return;
        }
        let c = v.counter as usize;
        if c >= self.totals.len() {
            self.totals.resize(c + 1, 0);
            self.values_seen.resize(c + 1, 0);
            self.seen.resize(c + 1, Vec::new());
            self.frames_with.resize(c + 1, 0);
        }
        self.totals[c] += v.value as i128;
        self.values_seen[c] += 1;
        let bits = &mut self.seen[c];
        if bits.is_empty() {
            bits.resize(self.frames.div_ceil(64), 0);
        }
        let (word, bit) = (idx as usize / 64, 1u64 << (idx % 64));
        if bits[word] & bit == 0 {
            bits[word] |= bit;
            self.frames_with[c] += 1;
        }
    }

    /// The summaries, in counter id order, the values that belong to no frame, the pacer's.
    pub fn finish(self, names: &[String], window_s: Option<f64>) -> CounterFacts {
        let rate = |x: f64| window_s.map_or(0.0, |s| x / s);
        let summaries = (0..self.totals.len())
            .filter(|&c| self.values_seen[c] > 0)
            .map(|c| {
                let name = names
                    .get(c)
                    .cloned()
                    .unwrap_or_else(|| format!("counter#{c}"));
                let total = self.totals[c].clamp(i64::MIN as i128, i64::MAX as i128) as i64;
                CounterSummary {
                    bits_per_second: is_byte_counter(&name).then(|| rate(total as f64 * 8.0)),
                    per_second: rate(total as f64),
                    name,
                    total,
                    frames: self.frames_with[c],
                }
            })
            .collect();
        CounterFacts {
            summaries,
            orphans: self.orphans,
            pacer: self.pacer.finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::frames::{measure, resolve_window};
    use crate::model::{RunMeta, Span};

    #[test]
    fn totals_rates_and_bits_by_hand() {
        // Frames 0 (warmup, ends at 50), 1 and 2 (measured); window [100, 2_000_000_100] = 2 s.
        let spans: Vec<Span> = [(0, 0), (1, 100), (2, 200)]
            .iter()
            .map(|&(frame, start_ns)| Span {
                frame,
                start_ns,
                dur_ns: 50,
                ..Span::default()
            })
            .collect();
        let frames = Frames::from_spans(&spans);
        let meta = RunMeta {
            window_start_ns: 100,
            window_end_ns: 2_000_000_100,
            ..RunMeta::default()
        };
        let window = resolve_window(&meta, frames.last_end_ns);
        let measured = measure(&frames, &window);
        let names = vec![
            "bytes".to_string(),
            "keyframe".to_string(),
            "nal_bytes".to_string(),
        ];
        let cv = |frame, counter, value| CounterValue {
            frame,
            counter,
            value,
        };
        let values = [
            cv(0, 0, 999_999), // warmup: not counted
            cv(1, 0, 1_000_000),
            cv(2, 0, 500_000),
            cv(2, 0, 500_000), // a second packet of frame 2: summed, frame counted once
            cv(1, 1, 1),
            cv(9, 1, 1), // frame 9 has no span
            cv(1, 3, 7), // a counter id with no name
        ];
        let facts = counter_summaries(&values, &names, &frames, &measured, window.seconds());
        let (s, orphans) = (facts.summaries, facts.orphans);
        assert!(facts.pacer.is_none());
        assert_eq!(orphans, 1);
        assert_eq!(s.len(), 3);
        assert_eq!(
            (s[0].name.as_str(), s[0].total, s[0].frames),
            ("bytes", 2_000_000, 2)
        );
        assert_eq!(s[0].per_second, 1_000_000.0);
        assert_eq!(s[0].bits_per_second, Some(8_000_000.0));
        assert_eq!(
            (s[1].name.as_str(), s[1].total, s[1].frames),
            ("keyframe", 1, 1)
        );
        assert_eq!(s[1].bits_per_second, None);
        assert_eq!(s[2].name, "counter#3");
    }

    #[test]
    fn byte_counter_names() {
        assert!(is_byte_counter("bytes"));
        assert!(is_byte_counter("payload_bytes"));
        assert!(!is_byte_counter("bytesize"));
        assert!(!is_byte_counter("keyframe"));
    }
}
