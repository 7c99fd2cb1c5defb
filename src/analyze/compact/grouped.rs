//! A run's measured spans handed over frame by frame (each frame once, with all its measured
//! spans in the order recorded) from reads of the run rather than from columns: what the
//! waits need, a frame's spans side by side, for runs with several spans a frame.
//!
//! A read in the run's order ([`FrameOrder`], beside the counts of `streamed`) tells how the
//! frames come, and that picks the way:
//! - **nearly in order** (one thread, or a collector's blocks of a few threads interleaved):
//!   no span's frame index falls more than `lateness` below the greatest before it, so a
//!   frame is done once a span of a frame `lateness` beyond it has come: only the spans of the
//!   frames in between are held;
//! - **a few sorted stretches** (a file written thread by thread, as an import can be): each
//!   stretch in which frame indices never fall is read by its own reader on its own thread,
//!   and the stretches are merged by frame index (ties in the run's order);
//! - **any other order**: none; the caller reads columns ([`Grouping::of`] says which).
//!
//! Nothing here depends on the order frames are handed over in; within a frame the spans
//! keep the run's order (the waits' "reordered" count reads it).

use std::sync::mpsc;

use super::columns::changed_between_reads;
use super::table::FrameTable;
use super::window::MeasuredFrames;
use crate::analyze::frames::out_of_range;
use crate::model::{Span, SpanSource};
use crate::read_ahead::{self, for_each_read_ahead};

/// Sorted stretches merged at most (a reader and a few chunks of spans each).
pub const MAX_RUNS: usize = 8;

/// A measured span as it is handed over: its frame's index instead of its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupedSpan {
    pub frame: u32,
    pub thread: u32,
    pub stage: u16,
    pub start_ns: i64,
    pub dur_ns: i64,
}

/// What a read of the spans in the run's order says of how their frames come.
#[derive(Clone, Debug, Default)]
pub struct FrameOrder {
    /// Spans seen (measured or not): the place of the next.
    place: u64,
    /// The frame of the last measured span, and the greatest so far.
    last: Option<u32>,
    greatest: u32,
    /// The most a measured span's frame falls below the greatest before it.
    lateness: u32,
    /// Where each stretch of measured spans whose frames never fall starts (its place; the
    /// first at 0), up to `MAX_RUNS + 1` of them.
    run_starts: Vec<u64>,
    measured_spans: u64,
}

impl FrameOrder {
    /// The next span of the run: its frame's index when it is measured, else `None`.
    pub fn see(&mut self, measured_frame: Option<u32>) {
        if let Some(f) = measured_frame {
            match self.last {
                None => self.run_starts.push(0),
                Some(last) if f < last && self.run_starts.len() <= MAX_RUNS => {
                    self.run_starts.push(self.place)
                }
                Some(_) => {}
            }
            self.lateness = self.lateness.max(self.greatest.saturating_sub(f));
            self.greatest = self.greatest.max(f);
            self.last = Some(f);
            self.measured_spans += 1;
        }
        self.place += 1;
    }
}

/// How the measured spans are read to be grouped by frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grouping {
    /// In the run's order, frames `lateness` behind the greatest still open.
    InOrder { lateness: u32 },
    /// These stretches of places (`from..to`), each in frame order, merged.
    Merged(Vec<(u64, u64)>),
}

/// Spans held waiting for their frame to be done, at most, for `spans` measured spans:
/// beyond this the spans come too far out of order to group as they are read (about 2 bytes
/// a span at most).
pub fn most_held(spans: u64) -> usize {
    (spans / 16).max(1 << 16) as usize
}

impl Grouping {
    /// The way to group the spans `order` saw, `frames` measured frames among them; `None`
    /// where neither way holds few enough spans (the columns take them).
    pub fn of(order: &FrameOrder, frames: u64) -> Option<Grouping> {
        let most = most_held(order.measured_spans) as u64;
        // The spans of `lateness + 1` frames of the average size are held, about.
        let per_frame = order.measured_spans.div_ceil(frames.max(1));
        let held = (u64::from(order.lateness) + 1).saturating_mul(per_frame);
        if held <= most / 2 {
            return Some(Grouping::InOrder {
                lateness: order.lateness,
            });
        }
        if order.run_starts.len() <= MAX_RUNS {
            let starts = &order.run_starts;
            let runs = (starts.iter().enumerate())
                .map(|(r, &from)| (from, starts.get(r + 1).copied().unwrap_or(order.place)))
                .collect();
            return Some(Grouping::Merged(runs));
        }
        None
    }
}

/// The measured spans of the frames `table` holds, read from `source` as `grouping` says
/// and handed to `frame` a frame at a time. `Ok(false)` when they did not come as the read
/// that chose the grouping saw them (more held than [`most_held`] allows, or a frame
/// after it was done): nothing can be said of the frames handed over, and the caller reads
/// columns instead.
///
/// `shared` is `source` where threads may read it: without, the spans are read on this
/// thread, and stretches to merge give `Ok(false)`.
pub fn for_each_frame(
    (source, shared): (&dyn SpanSource, Option<&(dyn SpanSource + Sync)>),
    (table, measured): (&FrameTable, &MeasuredFrames),
    grouping: &Grouping,
    frame: &mut dyn FnMut(u32, &[GroupedSpan]),
) -> anyhow::Result<bool> {
    let most = most_held(measured_spans_hint(grouping, source));
    let lateness = match grouping {
        Grouping::InOrder { lateness } => *lateness,
        Grouping::Merged(_) => 0,
    };
    let mut groups = Groups::new(lateness, most, frame);
    let mut unknown = 0u64;
    let mut measured_of = |s: &Span| {
        if out_of_range(s.start_ns, s.dur_ns) {
            return None;
        }
        let Some(f) = table.index_of(s.frame) else {
            unknown += 1;
            return None;
        };
        measured.in_window.get(f).then_some(GroupedSpan {
            frame: f,
            thread: s.thread,
            stage: s.stage,
            start_ns: s.start_ns,
            dur_ns: s.dur_ns,
        })
    };
    let read = match (grouping, shared) {
        (Grouping::InOrder { .. }, shared) => {
            let mut each = |chunk: &[Span]| {
                for g in chunk.iter().filter_map(&mut measured_of) {
                    groups.add(g)?;
                }
                Ok(())
            };
            match shared {
                Some(shared) => for_each_read_ahead(shared, &mut each),
                None => source.for_each_spans(&mut each),
            }
        }
        (Grouping::Merged(runs), Some(shared)) => {
            merged(shared, runs, &mut measured_of, &mut groups)
        }
        (Grouping::Merged(_), None) => return Ok(false),
    };
    match read {
        Err(e) if e.is::<OutOfOrder>() => return Ok(false),
        read => read?,
    }
    if unknown > 0 {
        return Err(changed_between_reads(unknown));
    }
    groups.finish();
    Ok(true)
}

/// The measured spans to expect, about (the cap on those held is a share of them).
fn measured_spans_hint(grouping: &Grouping, source: &dyn SpanSource) -> u64 {
    match grouping {
        Grouping::Merged(runs) => runs.last().map_or(0, |r| r.1),
        Grouping::InOrder { .. } => source.span_count_hint() as u64,
    }
}

/// The spans did not come as the first read saw them.
#[derive(Debug)]
struct OutOfOrder;

impl std::fmt::Display for OutOfOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the spans came out of the order a first read saw")
    }
}

impl std::error::Error for OutOfOrder {}

/// Spans held until their frames are done, handed over a frame at a time.
struct Groups<'a> {
    lateness: u32,
    most: usize,
    held: Vec<GroupedSpan>,
    /// The greatest frame seen; frames below `done_below` are handed over.
    greatest: Option<u32>,
    done_below: u32,
    /// Handed over again once `greatest - lateness` reaches this (every `lateness / 2`
    /// frames, so the held spans are sorted a few times over, not once a span).
    next_hand_over: u32,
    frame: &'a mut dyn FnMut(u32, &[GroupedSpan]),
}

impl<'a> Groups<'a> {
    fn new(lateness: u32, most: usize, frame: &'a mut dyn FnMut(u32, &[GroupedSpan])) -> Self {
        Groups {
            lateness,
            most,
            held: Vec::new(),
            greatest: None,
            done_below: 0,
            next_hand_over: 0,
            frame,
        }
    }

    fn add(&mut self, g: GroupedSpan) -> anyhow::Result<()> {
        if g.frame < self.done_below {
            return Err(anyhow::Error::new(OutOfOrder));
        }
        if self.greatest.is_none_or(|greatest| g.frame > greatest) {
            self.greatest = Some(g.frame);
            let done = g.frame.saturating_sub(self.lateness);
            if done >= self.next_hand_over && done > self.done_below {
                self.hand_over(done);
                self.next_hand_over = done.saturating_add((self.lateness / 2).max(1));
            }
        }
        self.held.push(g);
        if self.held.len() > self.most {
            return Err(anyhow::Error::new(OutOfOrder));
        }
        Ok(())
    }

    /// Hands over every held frame below `below`.
    fn hand_over(&mut self, below: u32) {
        self.done_below = below;
        if self.lateness == 0 {
            // Frames come in order: what is held is one frame, and all of it is done.
            if let Some(first) = self.held.first() {
                (self.frame)(first.frame, &self.held);
                self.held.clear();
            }
            return;
        }
        // Stable: a frame's spans keep the order they came in.
        self.held.sort_by_key(|g| g.frame);
        let done = self.held.partition_point(|g| g.frame < below);
        for group in self.held[..done].chunk_by(|a, b| a.frame == b.frame) {
            (self.frame)(group[0].frame, group);
        }
        self.held.drain(..done);
    }

    fn finish(mut self) {
        self.hand_over(u32::MAX);
    }
}

/// Merges the sorted stretches `runs`, each read on a thread of its own (each reader reads
/// past the stretches before its own: the source reads from the start only), into `groups`.
fn merged(
    source: &(dyn SpanSource + Sync),
    runs: &[(u64, u64)],
    measured_of: &mut impl FnMut(&Span) -> Option<GroupedSpan>,
    groups: &mut Groups,
) -> anyhow::Result<()> {
    std::thread::scope(|scope| {
        let mut stretches = Vec::with_capacity(runs.len());
        let mut readers = Vec::with_capacity(runs.len());
        for &(from, to) in runs {
            let (full_tx, full_rx) = mpsc::sync_channel(read_ahead::AHEAD);
            let (back_tx, back_rx) = mpsc::channel::<Vec<Span>>();
            let reader = std::thread::Builder::new().spawn_scoped(scope, move || {
                read_ahead::send_spans(source, (from, to), full_tx, back_rx)
            });
            match reader {
                Ok(reader) => readers.push(reader),
                Err(e) => return Err(anyhow::anyhow!("starting a reader of the spans: {e}")),
            }
            stretches.push(Stretch {
                spans: read_ahead::Cursor::new(full_rx, back_tx),
            });
        }
        let outcome = merge(&mut stretches, measured_of, groups);
        // Readers still going stop at their next chunk.
        drop(stretches);
        let mut panicked = false;
        for reader in readers {
            panicked |= reader.join().is_err();
        }
        match outcome {
            Ok(()) if panicked => Err(anyhow::anyhow!(
                "reading the spans failed in a worker thread"
            )),
            outcome => outcome,
        }
    })
}

/// One stretch as the merge reads it.
struct Stretch {
    spans: read_ahead::Cursor,
}

impl Stretch {
    /// The stretch's next measured span, `None` once it ended.
    fn next(
        &mut self,
        measured_of: &mut impl FnMut(&Span) -> Option<GroupedSpan>,
    ) -> anyhow::Result<Option<GroupedSpan>> {
        while let Some(s) = self.spans.next_span()? {
            if let Some(g) = measured_of(&s) {
                return Ok(Some(g));
            }
        }
        Ok(None)
    }
}

/// Hands the stretches' measured spans to `groups` by frame, the earlier stretch first
/// among spans of one frame (the run's order).
fn merge(
    stretches: &mut [Stretch],
    measured_of: &mut impl FnMut(&Span) -> Option<GroupedSpan>,
    groups: &mut Groups,
) -> anyhow::Result<()> {
    let mut heads = Vec::with_capacity(stretches.len());
    for s in stretches.iter_mut() {
        heads.push(s.next(measured_of)?);
    }
    // A few stretches: the smallest head found by looking at each.
    while let Some(r) = (heads.iter().enumerate())
        .filter_map(|(r, h)| Some((h.as_ref()?.frame, r)))
        .min()
        .map(|(_, r)| r)
    {
        let next_other = (heads.iter().enumerate())
            .filter(|&(o, _)| o != r)
            .filter_map(|(o, h)| Some((h.as_ref()?.frame, o)))
            .min();
        // This stretch's spans go on while they come before every other stretch's head.
        while let Some(g) = heads[r] {
            if next_other.is_some_and(|other| (g.frame, r) > other) {
                break;
            }
            groups.add(g)?;
            heads[r] = stretches[r].next(measured_of)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::compact::columns::{columns_of, Keep};
    use crate::model::Run;

    fn span(frame: u64, stage: u16, thread: u32, start_ns: i64) -> Span {
        Span {
            frame,
            stage,
            thread,
            start_ns,
            dur_ns: 10,
        }
    }

    /// Every frame of `table` in the window.
    fn all_measured(table: &FrameTable) -> MeasuredFrames {
        let mut measured = MeasuredFrames {
            in_window: super::super::window::Bits::new(table.slots()),
            ..MeasuredFrames::default()
        };
        for i in table.frames() {
            measured.in_window.set(i);
            measured.count += 1;
        }
        measured
    }

    /// Every frame measured; the groups handed over, by frame index, and the grouping.
    fn grouped(spans: Vec<Span>) -> (Option<Grouping>, Vec<Vec<GroupedSpan>>) {
        let (_, table) = columns_of(&spans, Keep::default());
        let measured = all_measured(&table);
        let mut order = FrameOrder::default();
        for s in &spans {
            order.see(table.index_of(s.frame));
        }
        let grouping = Grouping::of(&order, measured.count);
        let mut groups: Vec<Vec<GroupedSpan>> = vec![Vec::new(); table.slots()];
        let run = Run {
            spans,
            ..Run::default()
        };
        if let Some(grouping) = &grouping {
            let sources = (&run as &dyn SpanSource, Some(&run as _));
            let read = for_each_frame(sources, (&table, &measured), grouping, &mut |f, g| {
                assert!(groups[f as usize].is_empty(), "frame {f} handed over twice");
                groups[f as usize] = g.to_vec();
            });
            assert!(read.unwrap());
        }
        (grouping, groups)
    }

    /// Each frame's spans in the run's order, as a grouping by hand gives them.
    fn expected(spans: &[Span]) -> Vec<Vec<(u64, u16, u32, i64)>> {
        let frames = spans.iter().map(|s| s.frame).max().map_or(0, |f| f + 1);
        let mut by_frame = vec![Vec::new(); frames as usize];
        for s in spans {
            by_frame[s.frame as usize].push((s.frame, s.stage, s.thread, s.start_ns));
        }
        by_frame
    }

    fn flat(groups: &[Vec<GroupedSpan>]) -> Vec<Vec<(u64, u16, u32, i64)>> {
        (groups.iter())
            .map(|g| {
                g.iter()
                    .map(|s| (u64::from(s.frame), s.stage, s.thread, s.start_ns))
                    .collect()
            })
            .collect()
    }

    /// Frames of three stages on two threads, `frames` of them.
    fn pipeline(frames: u64) -> Vec<Vec<Span>> {
        let mut by_thread = vec![Vec::new(), Vec::new()];
        for f in 0..frames {
            let t = f as i64 * 100;
            by_thread[0].push(span(f, 0, 0, t));
            by_thread[0].push(span(f, 1, 0, t + 20));
            by_thread[1].push(span(f, 2, 1, t + 40));
        }
        by_thread
    }

    #[test]
    fn frames_come_whole_however_the_threads_were_written() {
        // In blocks of 50 frames a thread in turn (a collector's drains): nearly in order.
        let threads = pipeline(30_000);
        let mut blocks = Vec::new();
        for f in (0..30_000).step_by(50) {
            for t in &threads {
                blocks.extend(t.iter().filter(|s| (f..f + 50).contains(&s.frame)));
            }
        }
        let (grouping, groups) = grouped(blocks.clone());
        assert!(matches!(grouping, Some(Grouping::InOrder { lateness }) if lateness > 0));
        assert_eq!(flat(&groups), expected(&blocks));

        // Thread by thread: two sorted stretches, merged.
        let by_thread: Vec<Span> = threads.concat();
        let (grouping, groups) = grouped(by_thread.clone());
        assert_eq!(
            grouping,
            Some(Grouping::Merged(vec![(0, 60_000), (60_000, 90_000)]))
        );
        assert_eq!(flat(&groups), expected(&by_thread));

        // A frame recorded out of order on one thread keeps that order within the frame.
        let mut late = threads.concat();
        late.swap(10, 11);
        let (_, groups) = grouped(late.clone());
        assert_eq!(flat(&groups), expected(&late));

        // Reversed: frames fall at every span, far beyond what may be held.
        let mut reversed = by_thread;
        reversed.reverse();
        assert_eq!(grouped(reversed).0, None);
    }

    #[test]
    fn spans_that_come_later_than_the_first_read_saw_are_refused() {
        let spans: Vec<Span> = pipeline(100).concat();
        let (_, table) = columns_of(&spans, Keep::default());
        let measured = all_measured(&table);
        let run = Run {
            spans,
            ..Run::default()
        };
        // Read as though in order: thread 1's spans come after their frames were done.
        let read = for_each_frame(
            (&run, Some(&run)),
            (&table, &measured),
            &Grouping::InOrder { lateness: 0 },
            &mut |_, _| {},
        );
        assert!(!read.unwrap());
    }
}
