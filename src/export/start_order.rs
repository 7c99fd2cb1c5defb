//! A run's spans handed on in start order (start, longest first, thread, then their place
//! in the run: the order a stable sort by the first three gives) whatever order the source
//! holds them in, without holding the run (issue 31 item 8: a run written thread by thread
//! was read whole and sorted, 40 bytes a span).
//!
//! A first read ([`OrderScan`]) says how the spans come, and that picks the way:
//! - **in order** (a recording of one thread): passed on as they are read;
//! - **nearly in order** (a collector's drains, a few threads interleaved in blocks): a
//!   heap holds the spans a later one may still precede;
//! - **a few sorted runs** (an import or a file written thread by thread): a k-way merge,
//!   one reader per run, each on its own thread, a few chunks ahead;
//! - **any other order**: passes over the spans, each keeping those starting in one
//!   window of time, sorted; the windows are cut from a histogram of the starts so that
//!   each holds a bounded number of spans.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::mpsc;

use crate::model::{Span, SpanSource};
use crate::read_ahead::{self, for_each_read_ahead};

/// A span as it is handed on: start, duration (longest first), thread, its place in the
/// run, frame, stage. Ordered as the spans are handed on.
pub type StartKey = (i64, Reverse<i64>, u32, u64, u64, u16);

fn key(s: &Span, index: u64) -> StartKey {
    (
        s.start_ns,
        Reverse(s.dur_ns),
        s.thread,
        index,
        s.frame,
        s.stage,
    )
}

/// The order of a span without its place: what decides whether two spans come in order.
fn rank(s: &Span) -> (i64, Reverse<i64>, u32) {
    (s.start_ns, Reverse(s.dur_ns), s.thread)
}

/// Sorted runs a k-way merge reads at most (a thread and a few chunks each).
const MAX_RUNS: usize = 8;
/// Spans one window holds at most: a fraction of the run, within these (40 bytes each).
#[cfg(not(test))]
const MIN_WINDOW_SPANS: u64 = 1 << 16;
/// Small enough that the tests' runs are cut into several windows.
#[cfg(test)]
const MIN_WINDOW_SPANS: u64 = 1 << 8;
const MAX_WINDOW_SPANS: u64 = 1 << 20;
/// Buckets of the histogram a window is cut from (8 bytes each).
const BUCKETS: usize = 1 << 12;

/// What a first read of the spans tells the one that hands them on.
#[derive(Debug, Default)]
pub struct OrderScan {
    pub earliest: Option<i64>,
    latest: Option<i64>,
    /// The most a span starts before one read ahead of it.
    lateness: i128,
    spans: u64,
    last: Option<(i64, Reverse<i64>, u32)>,
    /// Where each sorted run starts (its first span's place), up to `MAX_RUNS + 1`.
    run_starts: Vec<u64>,
}

impl OrderScan {
    pub fn see(&mut self, s: &Span) {
        self.earliest = Some(self.earliest.map_or(s.start_ns, |e| e.min(s.start_ns)));
        if let Some(latest) = self.latest {
            self.lateness = self.lateness.max(latest as i128 - s.start_ns as i128);
        }
        self.latest = Some(self.latest.map_or(s.start_ns, |l| l.max(s.start_ns)));
        let rank = rank(s);
        if self.last.is_none_or(|last| rank < last) && self.run_starts.len() <= MAX_RUNS {
            self.run_starts.push(self.spans);
        }
        self.last = Some(rank);
        self.spans += 1;
    }

    /// Whether spans come so far out of start order (a file written thread by thread, as
    /// an import can be) that most of them would wait in a heap (48 bytes and its slack a
    /// span): all of them do when they all start together.
    fn mostly_waiting(&self) -> bool {
        let range = match (self.earliest, self.latest) {
            (Some(e), Some(l)) => l as i128 - e as i128,
            _ => 0,
        };
        range == 0 || self.lateness.saturating_mul(8) > range
    }
}

/// Hands every span of `source` to `sink` in start order, `scan` being what a read of the
/// same spans saw. Returns the spans handed on.
pub fn for_each_in_start_order(
    source: &(dyn SpanSource + Sync),
    scan: &OrderScan,
    sink: &mut dyn FnMut(StartKey) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    if scan.run_starts.len() <= 1 {
        in_order(source, sink)
    } else if !scan.mostly_waiting() {
        nearly_in_order(source, scan.lateness, sink)
    } else if scan.run_starts.len() <= MAX_RUNS {
        merged(source, scan, sink)
    } else {
        by_windows(source, scan, sink)
    }
}

fn in_order(
    source: &(dyn SpanSource + Sync),
    sink: &mut dyn FnMut(StartKey) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let mut index = 0u64;
    for_each_read_ahead(source, &mut |chunk| {
        for s in chunk {
            sink(key(s, index))?;
            index += 1;
        }
        Ok(())
    })?;
    Ok(index)
}

/// Through a heap holding only the spans a later one may still precede: none still to
/// come starts more than `lateness` before the latest start read.
fn nearly_in_order(
    source: &dyn SpanSource,
    lateness: i128,
    sink: &mut dyn FnMut(StartKey) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let mut waiting: BinaryHeap<Reverse<StartKey>> = BinaryHeap::new();
    let (mut index, mut latest) = (0u64, i64::MIN);
    source.for_each_spans(&mut |chunk| {
        for s in chunk {
            waiting.push(Reverse(key(s, index)));
            index += 1;
            latest = latest.max(s.start_ns);
        }
        let due = latest as i128 - lateness;
        while (waiting.peek()).is_some_and(|Reverse(next)| (next.0 as i128) < due) {
            if let Some(Reverse(next)) = waiting.pop() {
                sink(next)?;
            }
        }
        Ok(())
    })?;
    while let Some(Reverse(next)) = waiting.pop() {
        sink(next)?;
    }
    Ok(index)
}

/// A k-way merge of the sorted runs `scan` found: each run read by its own reader of the
/// source on its own thread (it reads past the runs before it: the source reads from the
/// start only), a few chunks ahead of the merge. Where the threads cannot be had, by
/// windows.
fn merged(
    source: &(dyn SpanSource + Sync),
    scan: &OrderScan,
    sink: &mut dyn FnMut(StartKey) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let starts = &scan.run_starts;
    let outcome = std::thread::scope(|scope| {
        let mut runs = Vec::with_capacity(starts.len());
        let mut readers = Vec::with_capacity(starts.len());
        for (r, &from) in starts.iter().enumerate() {
            let to = starts.get(r + 1).copied().unwrap_or(scan.spans);
            let (full_tx, full_rx) = mpsc::sync_channel(read_ahead::AHEAD);
            let (back_tx, back_rx) = mpsc::channel::<Vec<Span>>();
            let reader = std::thread::Builder::new().spawn_scoped(scope, move || {
                read_ahead::send_spans(source, (from, to), full_tx, back_rx)
            });
            let Ok(reader) = reader else {
                return None;
            };
            readers.push(reader);
            runs.push(SortedRun {
                spans: read_ahead::Cursor::new(full_rx, back_tx),
                index: from,
            });
        }
        let outcome = merge(&mut runs, sink);
        // Readers still going stop at their next chunk.
        drop(runs);
        let mut panicked = false;
        for reader in readers {
            panicked |= reader.join().is_err();
        }
        Some(match outcome {
            Ok(_) if panicked => Err(anyhow::anyhow!(
                "reading the spans failed in a worker thread"
            )),
            outcome => outcome,
        })
    });
    match outcome {
        Some(outcome) => outcome,
        None => by_windows(source, scan, sink),
    }
}

/// One sorted run as the merge reads it.
struct SortedRun {
    spans: read_ahead::Cursor,
    /// The place in the run of the next span.
    index: u64,
}

impl SortedRun {
    /// The run's next span, `None` once it ended.
    fn next(&mut self) -> anyhow::Result<Option<StartKey>> {
        let Some(s) = self.spans.next_span()? else {
            return Ok(None);
        };
        self.index += 1;
        Ok(Some(key(&s, self.index - 1)))
    }
}

fn merge(
    runs: &mut [SortedRun],
    sink: &mut dyn FnMut(StartKey) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let mut heads: BinaryHeap<Reverse<(StartKey, usize)>> = BinaryHeap::new();
    for (r, run) in runs.iter_mut().enumerate() {
        if let Some(head) = run.next()? {
            heads.push(Reverse((head, r)));
        }
    }
    let mut handed = 0u64;
    while let Some(Reverse((head, r))) = heads.pop() {
        sink(head)?;
        handed += 1;
        if let Some(next) = runs[r].next()? {
            heads.push(Reverse((next, r)));
        }
    }
    Ok(handed)
}

/// Passes over the spans, each handing on those starting in its window of time, sorted.
fn by_windows(
    source: &dyn SpanSource,
    scan: &OrderScan,
    sink: &mut dyn FnMut(StartKey) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let (Some(earliest), Some(latest)) = (scan.earliest, scan.latest) else {
        return Ok(0);
    };
    let most = (scan.spans / 8).clamp(MIN_WINDOW_SPANS, MAX_WINDOW_SPANS);
    let mut window = Vec::new();
    windows_of(source, (earliest, latest), most, &mut window, sink)
}

/// The spans starting in `lo..=hi` handed on window after window: a range that holds more
/// than `most` spans is cut again (a narrower histogram each time), unless it is one start.
fn windows_of(
    source: &dyn SpanSource,
    range: (i64, i64),
    most: u64,
    window: &mut Vec<(Span, u64)>,
    sink: &mut dyn FnMut(StartKey) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let mut handed = 0;
    for (lo, hi, count) in cut(source, range, most)? {
        handed += if count > most && lo < hi {
            windows_of(source, (lo, hi), most, window, sink)?
        } else {
            hand_on(source, (lo, hi), window, sink)?
        };
    }
    Ok(handed)
}

/// The spans starting in `lo..=hi`, read, sorted and handed on.
fn hand_on(
    source: &dyn SpanSource,
    (lo, hi): (i64, i64),
    window: &mut Vec<(Span, u64)>,
    sink: &mut dyn FnMut(StartKey) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    window.clear();
    let mut index = 0u64;
    source.for_each_spans(&mut |chunk| {
        for s in chunk {
            if (lo..=hi).contains(&s.start_ns) {
                window.push((*s, index));
            }
            index += 1;
        }
        Ok(())
    })?;
    window.sort_unstable_by_key(|(s, index)| (rank(s), *index));
    for (s, index) in window.iter() {
        sink(key(s, *index))?;
    }
    Ok(window.len() as u64)
}

/// `lo..=hi` cut into ranges of starts, in order, each with the spans it holds: buckets of
/// a histogram of one read, joined while they hold at most `most` spans together.
fn cut(
    source: &dyn SpanSource,
    (lo, hi): (i64, i64),
    most: u64,
) -> anyhow::Result<Vec<(i64, i64, u64)>> {
    let width = ((hi as i128 - lo as i128) / BUCKETS as i128 + 1).max(1);
    let bucket_of = |t: i64| ((t as i128 - lo as i128) / width) as usize;
    let mut counts = vec![0u64; bucket_of(hi) + 1];
    source.for_each_spans(&mut |chunk| {
        for s in chunk.iter().filter(|s| (lo..=hi).contains(&s.start_ns)) {
            counts[bucket_of(s.start_ns)] += 1;
        }
        Ok(())
    })?;
    let start_of = |b: usize| (lo as i128 + b as i128 * width) as i64;
    let mut ranges: Vec<(i64, i64, u64)> = Vec::new();
    let mut open: Option<(usize, u64)> = None;
    for (b, &count) in counts.iter().enumerate() {
        if let Some((first, held)) = open {
            if held + count > most {
                ranges.push((start_of(first), start_of(b) - 1, held));
                open = None;
            }
        }
        let (first, held) = open.unwrap_or((b, 0));
        open = Some((first, held + count));
    }
    if let Some((first, held)) = open {
        ranges.push((start_of(first), hi, held));
    }
    ranges.retain(|r| r.2 > 0);
    Ok(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Run;

    /// Spans on three threads, nested and overlapping, some starting together, some
    /// before launch, ordered as `order` puts them.
    fn spans(order: impl FnOnce(&mut Vec<Span>)) -> Run {
        let mut spans: Vec<Span> = (0..6_000u64)
            .map(|i| Span {
                frame: i / 3,
                stage: (i % 4) as u16,
                thread: (i % 3) as u32,
                start_ns: (i as i64 / 3) * 1_000 + (i as i64 % 7) * 100 - 50_000,
                dur_ns: 50 + (i as i64 * 7919 % 2_500),
            })
            .collect();
        order(&mut spans);
        Run {
            spans,
            ..Run::default()
        }
    }

    /// What `for_each_in_start_order` hands on, and the way it took.
    fn handed(run: &Run) -> (Vec<StartKey>, &'static str) {
        let mut scan = OrderScan::default();
        run.spans.iter().for_each(|s| scan.see(s));
        let way = match scan.run_starts.len() {
            0 | 1 => "in order",
            _ if !scan.mostly_waiting() => "nearly in order",
            n if n <= MAX_RUNS => "merged",
            _ => "by windows",
        };
        let mut keys = Vec::new();
        let n = for_each_in_start_order(run, &scan, &mut |k| {
            keys.push(k);
            Ok(())
        })
        .unwrap();
        assert_eq!(n as usize, run.spans.len());
        (keys, way)
    }

    /// The order a stable sort by start, longest first, thread gives.
    fn sorted(run: &Run) -> Vec<StartKey> {
        let mut keys: Vec<StartKey> = (run.spans.iter().enumerate())
            .map(|(i, s)| key(s, i as u64))
            .collect();
        keys.sort();
        keys
    }

    #[test]
    fn every_order_is_handed_on_as_a_stable_sort_gives_it() {
        let by_start = |s: &mut Vec<Span>| s.sort_by_key(rank);
        let thread_by_thread = |s: &mut Vec<Span>| s.sort_by_key(|s| (s.thread, rank(s)));
        let drained = |s: &mut Vec<Span>| s.sort_by_key(|s| (s.start_ns / 20_000, s.thread));
        let reversed = |s: &mut Vec<Span>| {
            s.sort_by_key(rank);
            s.reverse()
        };
        let shuffled = |s: &mut Vec<Span>| {
            let n = s.len();
            for i in 0..n {
                s.swap(i, (i * 7_919 + 13) % n);
            }
        };
        let one_start = |s: &mut Vec<Span>| {
            s.iter_mut().for_each(|s| s.start_ns = 7);
            s.reverse()
        };
        let extremes = |s: &mut Vec<Span>| {
            s.iter_mut().enumerate().for_each(|(i, s)| {
                s.start_ns = [i64::MIN, i64::MAX, 0, -1][i % 4];
            });
        };
        type Disorder<'a> = &'a dyn Fn(&mut Vec<Span>);
        let cases: [(Disorder, &str); 7] = [
            (&by_start, "in order"),
            (&thread_by_thread, "merged"),
            (&drained, "nearly in order"),
            (&reversed, "by windows"),
            (&shuffled, "by windows"),
            (&one_start, "by windows"),
            (&extremes, "by windows"),
        ];
        for (order, way) in cases {
            let run = spans(order);
            let (keys, taken) = handed(&run);
            assert_eq!(taken, way);
            assert!(keys == sorted(&run), "{way}: not the sorted order");
        }
    }

    #[test]
    fn a_failing_sink_stops_every_way_with_its_error() {
        let thread_by_thread = spans(|s| s.sort_by_key(|s| (s.thread, rank(s))));
        let reversed = spans(|s| {
            s.sort_by_key(rank);
            s.reverse()
        });
        for run in [thread_by_thread, reversed] {
            let mut scan = OrderScan::default();
            run.spans.iter().for_each(|s| scan.see(s));
            let mut seen = 0;
            let err = for_each_in_start_order(&run, &scan, &mut |_| {
                seen += 1;
                anyhow::ensure!(seen < 100, "enough");
                Ok(())
            })
            .unwrap_err();
            assert_eq!(err.to_string(), "enough");
        }
    }
}
