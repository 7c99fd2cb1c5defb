//! Threads as resources: how much of the measured window each was busy, with which stages,
//! and which one bounds the rate (docs/metrics.md, "Resources and the bottleneck").
//!
//! A thread's busy time is the union of its spans clipped to the window: nested or
//! overlapping spans count once. Spans of one stage overlapping on one thread (recursion,
//! or a begin without its end) are counted and reported.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Intervals a chunk holds: a long run's spans never need one large block.
const CHUNK: usize = 8192;

/// Spans of one (thread, stage), clipped to the window, in chunks.
#[derive(Clone, Debug, Default)]
pub struct Intervals {
    chunks: Vec<Vec<(i64, i64)>>,
    /// Whether they came in start order (spans of one thread usually do).
    unsorted: bool,
}

impl Intervals {
    pub fn push(&mut self, span: (i64, i64)) {
        if let Some(&last) = self.chunks.last().and_then(|c| c.last()) {
            self.unsorted |= span < last;
        }
        match self.chunks.last_mut().filter(|c| c.len() < CHUNK) {
            Some(chunk) => chunk.push(span),
            None => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(span);
                self.chunks.push(chunk);
            }
        }
    }

    /// Sorts them by start (a copy of them all only when they came out of order).
    fn sort(&mut self) {
        if std::mem::take(&mut self.unsorted) {
            let mut all: Vec<(i64, i64)> = self.chunks.drain(..).flatten().collect();
            all.sort_unstable();
            self.chunks = all.chunks(CHUNK).map(<[_]>::to_vec).collect();
        }
    }

    fn get(&self, i: usize) -> Option<(i64, i64)> {
        self.chunks
            .get(i / CHUNK)
            .and_then(|c| c.get(i % CHUNK))
            .copied()
    }

    fn iter(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.chunks.iter().flatten().copied()
    }
}

/// The busy time of sorted, possibly overlapping intervals, and how many of them start
/// before an earlier one ended.
fn union_of_sorted(spans: impl Iterator<Item = (i64, i64)>) -> (i64, u64) {
    let (mut busy, mut overlapping, mut covered) = (0i64, 0u64, i64::MIN);
    for (start, end) in spans {
        if start < covered {
            overlapping += 1;
        }
        let from = start.max(covered);
        if end > from {
            busy = busy.saturating_add(end.saturating_sub(from));
        }
        covered = covered.max(end);
    }
    (busy, overlapping)
}

/// A list's next interval in a merge: the interval, the list, its index there.
type Cursor = Reverse<((i64, i64), usize, usize)>;

/// The union of several sorted lists, merged as they are walked (no copy).
fn union_of_lists(lists: &[&Intervals]) -> i64 {
    let mut heap: BinaryHeap<Cursor> = lists
        .iter()
        .enumerate()
        .filter_map(|(l, list)| list.get(0).map(|first| Reverse((first, l, 0))))
        .collect();
    let (mut busy, mut covered) = (0i64, i64::MIN);
    while let Some(Reverse(((start, end), l, at))) = heap.pop() {
        let from = start.max(covered);
        if end > from {
            busy = busy.saturating_add(end.saturating_sub(from));
        }
        covered = covered.max(end);
        if let Some(next) = lists[l].get(at + 1) {
            heap.push(Reverse((next, l, at + 1)));
        }
    }
    busy
}

/// One thread's busy time, and each stage's on it (ids), largest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadBusy {
    pub thread: u32,
    pub busy_ns: i64,
    /// (stage, busy ns), largest first, then by stage id.
    pub stages: Vec<(u16, i64)>,
    /// (stage, spans) overlapping an earlier span of the same stage on this thread.
    pub overlapping: Vec<(u16, u64)>,
}

/// Busy time by thread from the spans grouped by (thread, stage); threads in id order.
pub fn thread_busy(mut groups: BTreeMap<(u32, u16), Intervals>) -> Vec<ThreadBusy> {
    for g in groups.values_mut() {
        g.sort();
    }
    let mut out: Vec<ThreadBusy> = Vec::new();
    let mut keys = groups.keys().copied().peekable();
    while let Some(&(thread, _)) = keys.peek() {
        let stages: Vec<u16> = std::iter::from_fn(|| keys.next_if(|k| k.0 == thread))
            .map(|k| k.1)
            .collect();
        let lists: Vec<&Intervals> = (stages.iter()).map(|&s| &groups[&(thread, s)]).collect();
        let mut row = ThreadBusy {
            thread,
            busy_ns: union_of_lists(&lists),
            stages: Vec::new(),
            overlapping: Vec::new(),
        };
        for (&stage, list) in stages.iter().zip(&lists) {
            let (busy, overlapping) = union_of_sorted(list.iter());
            row.stages.push((stage, busy));
            if overlapping > 0 {
                row.overlapping.push((stage, overlapping));
            }
        }
        row.stages
            .sort_by_key(|&(stage, busy)| (Reverse(busy), stage));
        out.push(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(spans: &[(u32, u16, i64, i64)]) -> BTreeMap<(u32, u16), Intervals> {
        let mut g: BTreeMap<(u32, u16), Intervals> = BTreeMap::new();
        for &(thread, stage, start, end) in spans {
            g.entry((thread, stage)).or_default().push((start, end));
        }
        g
    }

    #[test]
    fn nested_stages_count_once_and_repeated_ones_are_reported() {
        // Thread 0: frame [0,100] wrapping encode [10,60] (nested: union 100); encode again
        // [50,70] overlapping the first encode (misuse: reported), and [200,210].
        // Thread 1: send [0,5], [10,15].
        let busy = thread_busy(groups(&[
            (0, 0, 0, 100),
            (0, 1, 10, 60),
            (0, 1, 50, 70),
            (0, 1, 200, 210),
            (1, 2, 10, 15),
            (1, 2, 0, 5),
        ]));
        assert_eq!(busy.len(), 2);
        assert_eq!(busy[0].thread, 0);
        assert_eq!(busy[0].busy_ns, 110);
        // encode: [10,70] ∪ [200,210] = 70; frame 100.
        assert_eq!(busy[0].stages, vec![(0, 100), (1, 70)]);
        assert_eq!(busy[0].overlapping, vec![(1, 1)]);
        assert_eq!(busy[1].busy_ns, 10);
        assert!(busy[1].overlapping.is_empty());
    }
}
