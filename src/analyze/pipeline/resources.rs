//! Threads as resources: how much of the measured window each was busy, with which stages,
//! and which one bounds the rate (docs/metrics.md, "Resources and the bottleneck").
//!
//! A thread's busy time is the union of its spans clipped to the window: nested or
//! overlapping spans count once. Spans of one stage overlapping on one thread (recursion,
//! or a begin without its end) are counted and reported.

use std::cmp::Reverse;

/// A span's time on its thread, clipped to the window (`from < to`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clipped {
    pub thread: u32,
    pub stage: u16,
    pub from: i64,
    pub to: i64,
}

/// The union of intervals given in start order, and how many of them start before an
/// earlier one ended.
#[derive(Clone, Copy, Debug)]
struct Union {
    busy: i64,
    overlapping: u64,
    covered: i64,
}

impl Union {
    const EMPTY: Union = Union {
        busy: 0,
        overlapping: 0,
        covered: i64::MIN,
    };

    fn add(&mut self, (start, end): (i64, i64)) {
        if start < self.covered {
            self.overlapping += 1;
        }
        let from = start.max(self.covered);
        if end > from {
            self.busy = self.busy.saturating_add(end.saturating_sub(from));
        }
        self.covered = self.covered.max(end);
    }
}

/// One thread's unions as its spans come: the thread's and each stage's on it, valid
/// while they come in (start, end) order (spans of one thread usually do).
#[derive(Clone, Debug)]
struct ThreadSweep {
    last: (i64, i64),
    in_order: bool,
    all: Union,
    /// By stage id; `None` for a stage with no span on the thread.
    stages: Vec<Option<Union>>,
}

impl ThreadSweep {
    fn new() -> ThreadSweep {
        ThreadSweep {
            last: (i64::MIN, i64::MIN),
            in_order: true,
            all: Union::EMPTY,
            stages: Vec::new(),
        }
    }

    // Inlined into each sweep's loop: a call a span was a tenth of the analysing thread's
    // time in a read of one span a frame (issue 29).
    #[inline(always)]
    fn add(&mut self, stage: u16, span: (i64, i64)) {
        self.in_order &= span >= self.last;
        self.last = span;
        if !self.in_order {
            return;
        }
        self.all.add(span);
        let s = stage as usize;
        if s >= self.stages.len() {
            self.stages.resize(s + 1, None);
        }
        self.stages[s].get_or_insert(Union::EMPTY).add(span);
    }

    fn row(&self, thread: u32) -> ThreadBusy {
        let mut row = ThreadBusy {
            thread,
            busy_ns: self.all.busy,
            stages: Vec::new(),
            overlapping: Vec::new(),
        };
        for (stage, u) in self.stages.iter().enumerate() {
            let Some(u) = u else { continue };
            row.stages.push((stage as u16, u.busy));
            if u.overlapping > 0 {
                row.overlapping.push((stage as u16, u.overlapping));
            }
        }
        row.stages
            .sort_by_key(|&(stage, busy)| (Reverse(busy), stage));
        row
    }
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

/// Threads swept at once, at most: each takes the threads whose index it is, modulo this.
const SWEEPS_AT_ONCE: usize = 4;

/// Busy time by thread of spans `0..spans` (`thread_of` gives each one's thread index,
/// cheaply; `clipped` its time in the window, `None` for none); threads in index order.
/// One pass over the spans, and for a thread whose spans did not come in start order,
/// two more over that thread's (`sorted_sweep`); threads apart, a few at once.
pub fn thread_busy(
    spans: usize,
    thread_of: &(impl Fn(usize) -> u32 + Sync),
    clipped: &(impl Fn(usize) -> Option<Clipped> + Sync),
) -> Vec<ThreadBusy> {
    let buckets: Vec<usize> = (0..SWEEPS_AT_ONCE).collect();
    let swept = crate::parallel::map(buckets, SWEEPS_AT_ONCE, |bucket| {
        let ours = |i: usize| thread_of(i) as usize % SWEEPS_AT_ONCE == bucket;
        threads_busy(spans, &|i| ours(i).then(|| clipped(i)).flatten())
    });
    let mut rows: Vec<ThreadBusy> = swept.into_iter().flatten().collect();
    rows.sort_by_key(|r| r.thread);
    rows
}

/// [`thread_busy`] of spans handed over one at a time in the run's order, as a read of
/// the run file gives them: nothing of them is held but each thread's sweep, and the spans
/// that break their thread's start order (a span that wraps others is recorded after
/// them), set aside as [`sorted_sweep`] sets them aside, to be merged in by a second read
/// ([`LateSpans`]).
pub struct BusySweep {
    /// By thread index: the sweep of the spans that keep the order, and the last of them.
    threads: Vec<Option<(ThreadSweep, (i64, i64))>>,
    /// By thread index: the spans set aside.
    late: Vec<Vec<Clipped>>,
    /// Spans set aside, in all, and the most that may be.
    late_spans: usize,
    most_late: usize,
}

/// What a [`BusySweep`] found.
pub enum Busy {
    /// Busy time by thread, threads in index order, as [`thread_busy`] gives it.
    Done(Vec<ThreadBusy>),
    /// Some threads' spans broke their start order: a second read merges them in.
    Late(LateSpans),
    /// More spans broke it than may be held: sorting them takes the spans in memory.
    TooLate,
}

/// A sweep that sets no span aside: a thread out of start order is one it cannot sweep.
impl Default for BusySweep {
    fn default() -> BusySweep {
        BusySweep::new(0)
    }
}

impl BusySweep {
    /// A sweep that sets aside at most `most_late` spans.
    pub fn new(most_late: usize) -> BusySweep {
        BusySweep {
            threads: Vec::new(),
            late: Vec::new(),
            late_spans: 0,
            most_late,
        }
    }

    pub fn add(&mut self, c: Clipped) {
        let t = c.thread as usize;
        if t >= self.threads.len() {
            self.threads.resize(t + 1, None);
        }
        let (sweep, last) =
            (self.threads[t]).get_or_insert_with(|| (ThreadSweep::new(), (i64::MIN, i64::MIN)));
        if keeps_order(last, &c) {
            sweep.add(c.stage, (c.from, c.to));
        } else if self.late_spans < self.most_late {
            if t >= self.late.len() {
                self.late.resize(t + 1, Vec::new());
            }
            self.late[t].push(c);
            self.late_spans += 1;
        } else {
            self.late_spans = usize::MAX;
        }
    }

    /// Busy time by thread, threads in index order, as [`thread_busy`] gives it; `None`
    /// when a thread's spans did not come in start order (sorting them takes the spans in
    /// memory, or [`BusySweep::finish_late`]).
    pub fn finish(self) -> Option<Vec<ThreadBusy>> {
        match self.finish_late() {
            Busy::Done(busy) => Some(busy),
            Busy::Late(_) | Busy::TooLate => None,
        }
    }

    /// What the sweep found, spans set aside included.
    pub fn finish_late(self) -> Busy {
        if self.late_spans == usize::MAX {
            return Busy::TooLate;
        }
        let sweeps = (self.threads.into_iter()).map(|t| t.map(|(sweep, _)| sweep));
        let mut threads: Vec<Option<ThreadSweep>> = sweeps.collect();
        if self.late_spans == 0 {
            return Busy::Done(rows(&threads));
        }
        let mut late = self.late;
        late.resize(threads.len(), Vec::new());
        // Threads with spans set aside are swept again, from the start.
        let merging = (threads.iter_mut().zip(&mut late))
            .map(|(sweep, late)| {
                if late.is_empty() {
                    return None;
                }
                *sweep = Some(ThreadSweep::new());
                late.sort_unstable_by_key(|c| (c.from, c.to));
                Some(Merging {
                    late: std::mem::take(late),
                    next: 0,
                    last: (i64::MIN, i64::MIN),
                })
            })
            .collect();
        Busy::Late(LateSpans { threads, merging })
    }
}

/// Whether `c` keeps its thread's start order after `last` (the last span that kept it),
/// moving `last` on when it does: decided the same way by both reads.
fn keeps_order(last: &mut (i64, i64), c: &Clipped) -> bool {
    let keeps = (c.from, c.to) >= *last;
    if keeps {
        *last = (c.from, c.to);
    }
    keeps
}

/// The second read of a [`BusySweep`] whose threads set spans aside: the same spans, in
/// the same order, swept again on those threads with the spans set aside merged in.
pub struct LateSpans {
    threads: Vec<Option<ThreadSweep>>,
    /// By thread index: where its spans set aside are merged in (`None`: swept already).
    merging: Vec<Option<Merging>>,
}

/// One thread's spans set aside, sorted, and how far they are merged in.
struct Merging {
    late: Vec<Clipped>,
    next: usize,
    last: (i64, i64),
}

impl LateSpans {
    pub fn add(&mut self, c: Clipped) {
        let t = c.thread as usize;
        let (Some(Some(m)), Some(Some(sweep))) = (self.merging.get_mut(t), self.threads.get_mut(t))
        else {
            return;
        };
        if !keeps_order(&mut m.last, &c) {
            return;
        }
        while let Some(l) = m
            .late
            .get(m.next)
            .filter(|l| (l.from, l.to) < (c.from, c.to))
        {
            sweep.add(l.stage, (l.from, l.to));
            m.next += 1;
        }
        sweep.add(c.stage, (c.from, c.to));
    }

    /// Busy time by thread, threads in index order, as [`thread_busy`] gives it.
    pub fn finish(mut self) -> Vec<ThreadBusy> {
        for (sweep, m) in self.threads.iter_mut().zip(&self.merging) {
            if let (Some(sweep), Some(m)) = (sweep, m) {
                for l in &m.late[m.next..] {
                    sweep.add(l.stage, (l.from, l.to));
                }
            }
        }
        rows(&self.threads)
    }
}

/// The rows of the threads swept, in index order.
fn rows(threads: &[Option<ThreadSweep>]) -> Vec<ThreadBusy> {
    (threads.iter().enumerate())
        .filter_map(|(t, sweep)| Some(sweep.as_ref()?.row(t as u32)))
        .collect()
}

/// [`thread_busy`] of the spans `clipped` gives, on this thread.
fn threads_busy(spans: usize, clipped: &impl Fn(usize) -> Option<Clipped>) -> Vec<ThreadBusy> {
    // By thread index (the run's thread table: small).
    let mut threads: Vec<Option<ThreadSweep>> = Vec::new();
    for c in (0..spans).filter_map(clipped) {
        let t = c.thread as usize;
        if t >= threads.len() {
            threads.resize(t + 1, None);
        }
        (threads[t].get_or_insert_with(ThreadSweep::new)).add(c.stage, (c.from, c.to));
    }
    let mut out = Vec::new();
    for (t, sweep) in threads.iter_mut().enumerate() {
        let Some(sweep) = sweep else { continue };
        if !sweep.in_order {
            *sweep = sorted_sweep(spans, clipped, t as u32);
        }
        out.push(sweep.row(t as u32));
    }
    out
}

/// The sweep of `thread`'s spans taken in (start, end) order.
///
/// A thread's spans come nearly in that order (a span is recorded when it ends: one that
/// wraps others, or one overlapping the next frame's, comes late), so the spans that keep
/// the order are swept where they are and the few that break it are sorted and merged in:
/// two passes and no copy of the thread's spans. When many break it, all are sorted.
fn sorted_sweep(
    spans: usize,
    clipped: &impl Fn(usize) -> Option<Clipped>,
    thread: u32,
) -> ThreadSweep {
    let on_thread = |i: usize| clipped(i).filter(|c| c.thread == thread);
    let key = |c: &Clipped| (c.from, c.to);
    let most_late = (spans / 16).max(1024);
    let mut late: Vec<Clipped> = Vec::new();
    let mut last = (i64::MIN, i64::MIN);
    for c in (0..spans).filter_map(on_thread) {
        if !keeps_order(&mut last, &c) {
            late.push(c);
            if late.len() > most_late {
                return fully_sorted_sweep(spans, &on_thread);
            }
        }
    }
    late.sort_unstable_by_key(key);
    let mut sweep = ThreadSweep::new();
    let mut late = late.into_iter().peekable();
    let mut last = (i64::MIN, i64::MIN);
    for c in (0..spans).filter_map(on_thread) {
        if !keeps_order(&mut last, &c) {
            continue;
        }
        while let Some(l) = late.next_if(|l| key(l) < key(&c)) {
            sweep.add(l.stage, key(&l));
        }
        sweep.add(c.stage, key(&c));
    }
    for l in late {
        sweep.add(l.stage, key(&l));
    }
    sweep
}

/// [`sorted_sweep`] by sorting the indices of all the thread's spans (4 bytes a span).
fn fully_sorted_sweep(spans: usize, on_thread: &impl Fn(usize) -> Option<Clipped>) -> ThreadSweep {
    let mut rows: Vec<u32> = (0..spans)
        .filter(|&i| on_thread(i).is_some())
        .map(|i| i as u32)
        .collect();
    rows.sort_unstable_by_key(|&i| on_thread(i as usize).map(|c| (c.from, c.to)));
    let mut sweep = ThreadSweep::new();
    for c in rows.into_iter().filter_map(|i| on_thread(i as usize)) {
        sweep.add(c.stage, (c.from, c.to));
    }
    sweep
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Busy time of `(thread, stage, start, end)` spans.
    fn busy_of(spans: &[(u32, u16, i64, i64)]) -> Vec<ThreadBusy> {
        thread_busy(spans.len(), &|i| spans[i].0, &|i| {
            let (thread, stage, from, to) = spans[i];
            Some(Clipped {
                thread,
                stage,
                from,
                to,
            })
        })
    }

    #[test]
    fn nested_stages_count_once_and_repeated_ones_are_reported() {
        // Thread 0: frame [0,100] wrapping encode [10,60] (nested: union 100); encode again
        // [50,70] overlapping the first encode (misuse: reported), and [200,210].
        // Thread 1: send [0,5], [10,15].
        let busy = busy_of(&[
            (0, 0, 0, 100),
            (0, 1, 10, 60),
            (0, 1, 50, 70),
            (0, 1, 200, 210),
            (1, 2, 10, 15),
            (1, 2, 0, 5),
        ]);
        assert_eq!(busy.len(), 2);
        assert_eq!(busy[0].thread, 0);
        assert_eq!(busy[0].busy_ns, 110);
        // encode: [10,70] ∪ [200,210] = 70; frame 100.
        assert_eq!(busy[0].stages, vec![(0, 100), (1, 70)]);
        assert_eq!(busy[0].overlapping, vec![(1, 1)]);
        assert_eq!(busy[1].busy_ns, 10);
        assert!(busy[1].overlapping.is_empty());
        // Given in any order (the wrapping span recorded after what it wraps), the same.
        let reversed = busy_of(&[
            (1, 2, 0, 5),
            (1, 2, 10, 15),
            (0, 1, 200, 210),
            (0, 1, 50, 70),
            (0, 1, 10, 60),
            (0, 0, 0, 100),
        ]);
        assert_eq!(reversed, busy);
    }

    /// The same busy time whatever order a thread's spans come in: in order, a few late
    /// (swept in place, the late ones merged in), most late (all sorted), on four threads.
    #[test]
    fn any_recording_order_gives_the_same_busy_time() {
        // Per thread: 3000 frames of two stages, the second nested in the first every 7th
        // frame, with gaps; a span overlapping the next frame's every 100th.
        let mut spans = Vec::new();
        for thread in 0..4u32 {
            for f in 0..3000i64 {
                let at = f * 100;
                let long = if f % 100 == 0 { 150 } else { 60 };
                spans.push((thread, 0u16, at, at + long));
                let inner = if f % 7 == 0 {
                    (at + 10, at + 30)
                } else {
                    (at + 70, at + 90)
                };
                spans.push((thread, 1, inner.0, inner.1));
            }
        }
        let in_order = busy_of(&spans);
        // Recorded when they end: nested and overlapping spans come late.
        let mut by_end = spans.clone();
        by_end.sort_by_key(|&(t, s, from, to)| (to, from, t, s));
        assert_eq!(busy_of(&by_end), in_order);
        // Reversed: more late than the merge takes; every span sorted.
        let mut reversed = spans.clone();
        reversed.reverse();
        assert_eq!(busy_of(&reversed), in_order);
        // Thread 0's busy time against a plain union of its intervals.
        let mut intervals: Vec<(i64, i64)> = (spans.iter())
            .filter(|s| s.0 == 0)
            .map(|s| (s.2, s.3))
            .collect();
        intervals.sort_unstable();
        let (mut union, mut covered) = (0, i64::MIN);
        for (from, to) in intervals {
            union += (to - from.max(covered)).max(0);
            covered = covered.max(to);
        }
        assert_eq!((in_order[0].thread, in_order[0].busy_ns), (0, union));
    }
}
