//! The report's analysis of a run whose frames have one span each, in memory that does
//! not grow with the run (issue 29: ≤ 150 MB at any length). `streamed` held no columns
//! but the frame table (8 bytes a frame) and each stage's durations (4 or 8 bytes a span)
//! while it sorted them; here a frame is its span, so nothing is held by frame:
//!
//! 1. a read checks the run's shape (ids counting up, so no frame has two spans) and takes
//!    what decides the window (the last end) and the frames cut short by the stop (the
//!    last few by start); where the metadata decides both (a recorded window, a command
//!    that finished its frames), the shape is checked in the next read instead;
//! 2. a read takes what is counted or bounded (frames by window, stage counts, busy time,
//!    the worst frames, lateness) and counts each set of values into the buckets of a
//!    [`Selection`]; the intervals come from the frames put in end order by a small
//!    reordering buffer;
//! 3. further reads take stutter and pacing (they need the mean interval) and the values
//!    of the few buckets the percentiles and lows fall in, until every statistic is exact.
//!
//! The numbers are those of the other analyses (`compact::tests` compares them on the same
//! runs). A run this does not fit (a frame id repeated or going back, frames too far out
//! of end order for the buffer, a thread's spans out of start order, counters) is left to
//! `streamed` or the columns: `None`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Mutex;

use super::cadence::{Adaptive, Cadence, Lateness};
use super::select::{Selection, KEEP_LIMIT};
use super::{stage_order, StageCounts};
use crate::analyze::counters::CounterTotals;
use crate::analyze::fps::fps_summary_ranked;
use crate::analyze::frames::{
    open_from_stages, out_of_range, resolve_window, stopped_mid_frame, BadSpan, ResolvedWindow,
    MAX_OPEN_FRAMES, REFERENCE_FRAMES,
};
use crate::analyze::handoff;
use crate::analyze::pipeline::resources::{BusySweep, Clipped};
use crate::analyze::pipeline::{has_thread_info, summarize_single_spans, Names, PipelineInput};
use crate::analyze::sched::SplitOf;
use crate::analyze::stages::{stage_name, StageTable, WORST_FRAMES};
use crate::analyze::stats::Ranked;
use crate::analyze::summary::{assemble, budget_ns, SpanFacts};
use crate::analyze::telemetry::FrameSpan;
use crate::analyze::{Analysis, Dist, StageRow, WorstFrame};
use crate::model::{Run, Span, SpanSource, BESIDE_WORKERS};

pub mod by_end;
pub mod measured;

/// Frames held to put them in end order: they come in it but for a few (a frame that
/// ended earlier than the one before it, on another thread); a run further out of order
/// is left to the frame table.
const REORDER_FRAMES: usize = 4096;

/// The analysis of `head`'s run from reads of `source`; `None` when the run is not of one
/// span a frame in the order this needs (see the module's doc).
pub fn analyze(head: &Run, source: &dyn SpanSource) -> anyhow::Result<Option<Analysis>> {
    Ok(analyze_asking(head, source, None)?.map(|(analysis, _)| analysis))
}

/// A stage's durations or the totals, in measured frames.
pub type Values = Selection;

/// Each stage's durations (by stage id, in the stage table's order), the totals and the
/// intervals, exact for what the caller asked of them.
pub struct AskedValues {
    pub stages: Vec<(usize, Values)>,
    /// `None` with one stage: its durations are the totals.
    pub totals: Option<Values>,
    /// Between the measured frames' ends, in end order.
    pub intervals: Values,
}

/// What the caller asks of the values besides what the report asks: each set's
/// selection then answers it exactly.
#[derive(Clone, Copy, Default)]
pub struct Asked<'a> {
    /// Asked of each stage's durations.
    pub stages: AlsoAsked<'a>,
    /// Asked of the totals (with one stage, its durations are the totals).
    pub totals: AlsoAsked<'a>,
    /// Asked of the intervals.
    pub intervals: AlsoAsked<'a>,
    /// Whether the durations' and totals' digests are taken ([`Selection::digest`]).
    pub digests: bool,
}

/// What the reads show the caller of the measured frames as they pass them, in end order
/// (the HTML page's markers and timelines): nothing held for it.
pub trait FrameWatch {
    /// A frame whose total is over the budget (the first read of the values).
    fn late(&mut self, end_ns: i64, total_ns: i64);
    /// A stutter: the interval that ends at `end_ns` (the read after the first).
    fn stutter(&mut self, end_ns: i64, interval_ns: i64);
    /// The worst frames, worst first, each its one span (once the first read found them).
    fn worst(&mut self, spans: &[Span]);
}

/// A caller that is shown nothing.
pub struct Unwatched;

impl FrameWatch for Unwatched {
    fn late(&mut self, _: i64, _: i64) {}
    fn stutter(&mut self, _: i64, _: i64) {}
    fn worst(&mut self, _: &[Span]) {}
}

/// [`analyze`], with `also` asked of each stage's durations and of the totals besides what
/// the report asks (`compare` asks for the ranks its percentiles' redraws read); their
/// selections, which then answer it exactly and know their digest.
pub fn analyze_asking(
    head: &Run,
    source: &dyn SpanSource,
    also: AlsoAsked,
) -> anyhow::Result<Option<(Analysis, AskedValues)>> {
    let asked = Asked {
        stages: also,
        totals: also,
        intervals: None,
        digests: also.is_some(),
    };
    let unsplit = analyze_unsplit_asking(head, source, asked, &mut Unwatched, &mut |_| {})?;
    let Some((mut analysis, values)) = unsplit else {
        return Ok(None);
    };
    crate::analyze::sched::apply(&mut analysis, head, source)?;
    Ok(Some((analysis, values)))
}

/// [`analyze`] without the scheduler's split, which the caller applies (`analyze_from`
/// splits the spans beside this): `tell` is told what the split needs of the analysis as
/// soon as the first read of the values has found it, and only where the analysis then
/// gives one.
pub fn analyze_unsplit(
    head: &Run,
    source: &dyn SpanSource,
    tell: &mut dyn FnMut(SplitOf),
) -> anyhow::Result<Option<Analysis>> {
    let unsplit = analyze_unsplit_asking(head, source, Asked::default(), &mut Unwatched, tell)?;
    Ok(unsplit.map(|(analysis, _)| analysis))
}

/// [`analyze_unsplit`], `asked` asked of the values and `watch` shown the frames as the
/// reads pass them (the HTML page: its curves, markers and timelines without a frame
/// table).
pub fn analyze_unsplit_asking(
    head: &Run,
    source: &dyn SpanSource,
    asked: Asked,
    watch: &mut (dyn FrameWatch + Send),
    tell: &mut dyn FnMut(SplitOf),
) -> anyhow::Result<Option<(Analysis, AskedValues)>> {
    if !head.counter_names.is_empty() || has_counters(source)? {
        return Ok(None);
    }
    let (shape, scan) = match Shape::known_before_reading(head) {
        true => (Shape::known(head), Some(Scan::new(false))),
        false => match Shape::read(head, source)? {
            Some(shape) => (shape, None),
            None => return Ok(None),
        },
    };
    // The window and the frames cut short are known: the scheduler's split may read the
    // spans now, beside the first read of the values, finding the worst frames as that
    // read does.
    tell(SplitOf {
        window: (shape.window.start_ns, shape.window.end_ns),
        stage_count: head.stages.len(),
        worst: Vec::new(),
        find_worst: true,
        open: shape.open.clone(),
    });
    let tell: &mut dyn FnMut(SplitOf) = &mut |_| {};
    let Some((facts, values)) = facts(head, shape, scan, source, (asked, watch, tell))? else {
        return Ok(None);
    };
    Ok(Some((assemble(head, facts), values)))
}

/// Whether the run may be one this analyses, from its first chunk of spans alone (no
/// counters, ids counting up): a caller that starts work beside the analysis (the
/// scheduler's split, the HTML page's read for its plots) starts none for a run of several
/// spans a frame, which the first read of the values would refuse.
pub fn may_fit(head: &Run, source: &dyn SpanSource) -> anyhow::Result<bool> {
    if !head.counter_names.is_empty() {
        return Ok(false);
    }
    let mut scan = Scan::new(false);
    let mut fits = true;
    completed(source.for_each_spans(&mut |chunk| {
        fits = chunk.iter().all(|s| scan.span(s).is_ok());
        Err(Stop.into())
    }))?;
    Ok(fits)
}

/// An error a read returns to stop early; told apart from the source's own.
#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("read stopped: the run is not of one span a frame in order")
    }
}

impl std::error::Error for Stop {}

/// Runs `read`; false when it stopped early with [`Stop`].
fn completed(read: anyhow::Result<()>) -> anyhow::Result<bool> {
    match read {
        Ok(()) => Ok(true),
        Err(e) if e.is::<Stop>() => Ok(false),
        Err(e) => Err(e),
    }
}

fn has_counters(source: &dyn SpanSource) -> anyhow::Result<bool> {
    let none = completed(
        source.for_each_counters(&mut |chunk| match chunk.is_empty() {
            true => Ok(()),
            false => Err(Stop.into()),
        }),
    )?;
    Ok(!none)
}

/// A frame: its one span.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Frame {
    end_ns: i64,
    id: u64,
    start_ns: i64,
    stage: u16,
    /// In the padding after `stage`: the worst frames' timelines draw it.
    thread: u32,
}

impl Frame {
    fn total_ns(&self) -> i64 {
        self.end_ns - self.start_ns
    }

    /// Its one span.
    fn span(&self) -> Span {
        Span {
            frame: self.id,
            stage: self.stage,
            thread: self.thread,
            start_ns: self.start_ns,
            dur_ns: self.total_ns(),
        }
    }

    /// The frame as the end order holds it (its span, without the stage).
    fn ended(&self) -> Ended {
        Ended {
            end_ns: self.end_ns,
            id: self.id,
            start_ns: self.start_ns,
        }
    }
}

/// A measured frame as the end order needs it: its stage is not (no two frames have one
/// id, so the order is the same). 24 bytes without padding, built where it is stored: a
/// [`Frame`] taken out of a [`Place`] was copied through the stack in pieces and read back
/// whole, a store-forwarding stall that took half of the ordered read's loop (issue 29).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Ended {
    end_ns: i64,
    id: u64,
    start_ns: i64,
}

impl Ended {
    fn total_ns(&self) -> i64 {
        self.end_ns - self.start_ns
    }

    fn span(&self) -> FrameSpan {
        FrameSpan {
            frame: self.id,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
        }
    }
}

/// What the first read tells: the run's shape, its window, the frames cut short.
struct Shape {
    spans: u64,
    negative_spans: u64,
    first_bad_span: Option<BadSpan>,
    window: ResolvedWindow,
    /// Ids of the frames cut short by the stop, and the stages they lack.
    open: Vec<u64>,
    open_missing_stages: Vec<u16>,
}

/// The latest starts (start, row, id, stage) of a run stopped mid-frame, least first.
type LatestStarts = BinaryHeap<Reverse<(i64, u64, u64, u16)>>;

/// The shape taken span by span.
struct Scan {
    spans: u64,
    frames: u64,
    negative_spans: u64,
    first_bad_span: Option<BadSpan>,
    last_id: Option<u64>,
    last_end_ns: Option<i64>,
    /// With a stop mid-frame: the latest starts (start, row, id, stage), least first.
    latest: Option<LatestStarts>,
}

impl Scan {
    fn new(stopped: bool) -> Scan {
        Scan {
            spans: 0,
            frames: 0,
            negative_spans: 0,
            first_bad_span: None,
            last_id: None,
            last_end_ns: None,
            latest: stopped.then(BinaryHeap::new),
        }
    }

    /// Takes `s`: [`Stop`] when it is usable and its frame id is not above the one before
    /// (a frame may have two spans). Inlined into the read's loop: out of line, its entry
    /// and return took a third of its samples (it was 11-13% of the analysing thread at 84M
    /// spans; the thread's CPU moved within the VM's noise).
    #[inline(always)]
    fn span(&mut self, s: &Span) -> Result<(), Stop> {
        let row = self.spans;
        self.spans += 1;
        if out_of_range(s.start_ns, s.dur_ns) {
            self.negative_spans += 1;
            self.first_bad_span.get_or_insert(BadSpan {
                frame: s.frame,
                start_ns: s.start_ns,
                dur_ns: s.dur_ns,
            });
            return Ok(());
        }
        if self.last_id.is_some_and(|l| s.frame <= l) {
            return Err(Stop);
        }
        self.last_id = Some(s.frame);
        self.frames += 1;
        let end = s.start_ns + s.dur_ns;
        self.last_end_ns = Some(self.last_end_ns.map_or(end, |l| l.max(end)));
        if let Some(latest) = &mut self.latest {
            latest.push(Reverse((s.start_ns, row, s.frame, s.stage)));
            if latest.len() > MAX_OPEN_FRAMES + REFERENCE_FRAMES {
                latest.pop();
            }
        }
        Ok(())
    }
}

impl Shape {
    /// Whether the shape need not be read first: the window is the metadata's and no
    /// frame can have been cut short (the command finished its frames), so one read
    /// checks the shape and takes the first values.
    fn known_before_reading(head: &Run) -> bool {
        !stopped_mid_frame(&head.meta) && !resolve_window(&head.meta, None).end_from_last_span
    }

    /// The shape of [`Shape::known_before_reading`]: its counts filled by [`Shape::scanned`].
    fn known(head: &Run) -> Shape {
        Shape {
            spans: 0,
            negative_spans: 0,
            first_bad_span: None,
            window: resolve_window(&head.meta, None),
            open: Vec::new(),
            open_missing_stages: Vec::new(),
        }
    }

    /// The counts of a read that also took the values.
    fn scanned(&mut self, scan: &Scan) {
        self.spans = scan.spans;
        self.negative_spans = scan.negative_spans;
        self.first_bad_span = scan.first_bad_span;
    }

    /// `None` when a usable span's frame id is not above the one before.
    fn read(head: &Run, source: &dyn SpanSource) -> anyhow::Result<Option<Shape>> {
        let mut scan = Scan::new(stopped_mid_frame(&head.meta));
        let read = source.for_each_spans(&mut |chunk| {
            for s in chunk {
                scan.span(s)?;
            }
            Ok(())
        });
        if !completed(read)? {
            return Ok(None);
        }
        let window = resolve_window(&head.meta, scan.last_end_ns);
        // `window::open_at_stop_with`: the last frames by start (then by first row).
        let mut open = Vec::new();
        let mut open_missing_stages = Vec::new();
        let n = scan.frames as usize;
        if let Some(latest) = scan.latest.take().filter(|_| n >= 2) {
            let tail = MAX_OPEN_FRAMES.min(n / 2);
            let look = tail + REFERENCE_FRAMES.min(n - tail);
            let mut by_start: Vec<(i64, u64, u64, u16)> = latest.into_iter().map(|r| r.0).collect();
            by_start.sort_unstable();
            let looked_at = &by_start[by_start.len() - look..];
            let stages: Vec<Vec<u16>> = looked_at.iter().map(|f| vec![f.3]).collect();
            let found = open_from_stages(&stages, tail, |k| k as u32);
            open = (found.indices.iter())
                .map(|&k| looked_at[k as usize].2)
                .collect();
            open_missing_stages = found.missing_stages;
        }
        let mut shape = Shape {
            window,
            open,
            open_missing_stages,
            ..Shape::known(head)
        };
        shape.scanned(&scan);
        Ok(Some(shape))
    }
}

/// Where a usable span's frame falls.
enum Place {
    Warmup,
    After,
    Open,
    Measured(Frame),
}

impl Shape {
    /// Whether a frame (one span) that ends at `end_ns` is measured: [`Shape::place`]'s
    /// `Measured`.
    fn measured_end(&self, end_ns: i64, id: u64) -> bool {
        (self.window.start_ns..=self.window.end_ns).contains(&end_ns) && !self.open.contains(&id)
    }

    fn place(&self, s: &Span) -> Place {
        let end_ns = s.start_ns + s.dur_ns;
        if end_ns < self.window.start_ns {
            Place::Warmup
        } else if end_ns > self.window.end_ns {
            Place::After
        } else if self.open.contains(&s.frame) {
            Place::Open
        } else {
            Place::Measured(Frame {
                end_ns,
                id: s.frame,
                start_ns: s.start_ns,
                stage: s.stage,
                thread: s.thread,
            })
        }
    }
}

/// Measured frames in, the same frames out in (end, id) order, held back only while
/// [`REORDER_FRAMES`] are; [`Stop`] (the run is left to the frame table) when a frame
/// comes after one it should precede was let out. The frames held are kept sorted: they
/// nearly always come in order, so each goes at the back (a heap cost twelve steps a
/// frame and made the report 25% slower). They are held in a ring of fixed size, each
/// written in its slot: a `VecDeque`'s push, which may grow it, had the frame copied
/// through the stack in pieces and read back whole, a store-forwarding stall that took
/// half of this read's loop (issue 29).
#[derive(Default)]
struct EndOrder {
    /// [`RING`] slots (allocated at the first frame); those held are `len` from `head`
    /// on, around the end.
    ring: Vec<Ended>,
    head: usize,
    len: usize,
    last: Option<(i64, u64)>,
}

/// Slots of [`EndOrder`]'s ring: a power of two above the frames it holds.
const RING: usize = (REORDER_FRAMES + 1).next_power_of_two();

impl EndOrder {
    fn slot(&self, k: usize) -> usize {
        (self.head + k) & (RING - 1)
    }

    /// Takes `f`; the frame let out to make room, if one was. Inlined: with a second
    /// caller (the HTML page's `by_end`) it was called out of line from the analysis' loop,
    /// 8% of the text report's CPU on 10M spans.
    #[inline(always)]
    fn push(&mut self, f: Ended) -> Result<Option<Ended>, Stop> {
        if self.ring.is_empty() {
            self.ring = vec![Ended::default(); RING];
        }
        let mut at = self.len;
        if self.len > 0 && f < self.ring[self.slot(self.len - 1)] {
            // Before some held: after those that precede it, the rest moved up one.
            let (mut lo, mut hi) = (0, self.len);
            while lo < hi {
                let mid = (lo + hi) / 2;
                match self.ring[self.slot(mid)] < f {
                    true => lo = mid + 1,
                    false => hi = mid,
                }
            }
            for k in (lo..self.len).rev() {
                let (to, from) = (self.slot(k + 1), self.slot(k));
                self.ring[to] = self.ring[from];
            }
            at = lo;
        }
        let slot = self.slot(at);
        self.ring[slot] = f;
        self.len += 1;
        match self.len > REORDER_FRAMES {
            true => self.release(),
            false => Ok(None),
        }
    }

    /// The earliest frame held.
    fn release(&mut self) -> Result<Option<Ended>, Stop> {
        if self.len == 0 {
            return Ok(None);
        }
        let f = self.ring[self.head];
        self.head = self.slot(1);
        self.len -= 1;
        if self.last.is_some_and(|l| (f.end_ns, f.id) < l) {
            return Err(Stop);
        }
        self.last = Some((f.end_ns, f.id));
        Ok(Some(f))
    }
}

/// The intervals between the measured frames' ends, as far as the reads so far tell them.
#[derive(Default)]
struct Intervals {
    values: Selection,
    open: bool,
}

/// What one read takes of the measured frames in end order: the order, and what takes
/// the frames it lets out.
struct InEndOrder<'a> {
    order: EndOrder,
    taken: Taken<'a>,
}

impl<'a> InEndOrder<'a> {
    fn new(taken: Taken<'a>) -> InEndOrder<'a> {
        InEndOrder {
            order: EndOrder::default(),
            taken,
        }
    }
}

/// What takes the measured frames one at a time in end order (the intervals between their
/// ends, lateness, stutter and pacing) and, in the first read, each thread's busy time.
struct Taken<'a> {
    /// Only in the first read: every span, clipped to the window, in the run's order.
    busy: Option<&'a mut BusySweep>,
    last_end_ns: Option<i64>,
    intervals: &'a mut Intervals,
    /// Only in the first read of the values.
    late: Option<&'a mut Lateness>,
    late_spans: Option<&'a mut Vec<FrameSpan>>,
    /// Only in the read after it.
    cadence: Option<&'a mut Cadence>,
    /// With `cadence`: its adaptive window's part, which takes the intervals on a thread
    /// of its own in a long read (`read_values`).
    adaptive: Option<&'a mut Adaptive>,
    /// Shown the late frames (first read) and the stutters (the read after it).
    watch: &'a mut (dyn FrameWatch + Send),
}

impl Taken<'_> {
    /// Whether anything is taken of the frames in end order this read.
    fn in_end_order(&self) -> bool {
        self.intervals.open || self.late.is_some() || self.cadence.is_some()
    }

    /// What a chunk handed over, in its order; with an adaptive window to take, its
    /// intervals left in `adaptive` for it.
    fn take_batch(&mut self, batch: &Batch, adaptive: &mut Vec<i64>) {
        if let Some(busy) = self.busy.as_deref_mut() {
            for &c in &batch.clipped {
                busy.add(c);
            }
        }
        for &f in &batch.frames {
            if let Some(x) = self.take(f) {
                adaptive.push(x);
            }
        }
    }

    /// Takes `f`; the interval to it that the adaptive window is to take, if it has one.
    fn take(&mut self, f: Ended) -> Option<i64> {
        if let Some(late) = self.late.as_deref_mut() {
            late.total(f.total_ns());
            if f.total_ns() > late.budget_ns() {
                if let Some(spans) = self.late_spans.as_deref_mut() {
                    spans.push(f.span());
                }
                self.watch.late(f.end_ns, f.total_ns());
            }
        }
        let last = self.last_end_ns.replace(f.end_ns)?;
        let x = f.end_ns.saturating_sub(last);
        if self.intervals.open {
            self.intervals.values.add(x);
        }
        if let Some(late) = self.late.as_deref_mut() {
            late.interval(x);
        }
        if let Some(cadence) = self.cadence.as_deref_mut() {
            if cadence.interval(x) {
                self.watch.stutter(f.end_ns, x);
            }
            return Some(x);
        }
        None
    }
}

thread_local! {
    /// Reads on this thread whose frames in end order were taken on a thread beside it:
    /// the tests count them.
    static TAKEN_BESIDE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many reads on this thread had their frames in end order taken on a thread beside.
#[cfg(test)]
pub(super) fn reads_taken_beside() -> u64 {
    TAKEN_BESIDE.with(|n| n.get())
}

/// What one chunk of a read hands to [`Taken`]: its spans clipped to the window (the first
/// read's busy sweep) and the frames it let out of the end order, each in the run's order.
#[derive(Default)]
struct Batch {
    clipped: Vec<Clipped>,
    frames: Vec<Ended>,
}

impl Batch {
    fn clear(&mut self) {
        self.clipped.clear();
        self.frames.clear();
    }
}

/// The statistics asked of each set of values.
fn dist_only(r: &dyn Ranked) {
    Dist::of_ranked(r);
}

fn intervals_stats(r: &dyn Ranked) {
    Dist::of_ranked(r);
    fps_summary_ranked(r);
}

/// Each stage's durations and the totals, as far as the reads so far tell them; or the
/// part of a read's that one reader thread took ([`Durations::part`]).
struct Durations {
    /// By stage id.
    stages: Vec<Option<Selection>>,
    totals: Selection,
    stages_open: bool,
    totals_open: bool,
    /// Whether the values' digests are taken (the caller asks more of them).
    digesting: bool,
    /// Whether the reader threads take the values, each its part: only for a few stages,
    /// each part's first buckets being ~1 MB a stage.
    beside: bool,
}

/// Stages of a run whose durations the reader threads take (see [`Durations::beside`]).
const STAGES_BESIDE: usize = 8;

impl Durations {
    /// The first read adds stages as they come; later ones find them.
    fn add(&mut self, stage: u16, total: i64, first: bool) -> Result<(), Stop> {
        let s = stage as usize;
        let digesting = self.digesting;
        if first && s >= self.stages.len() {
            self.stages.resize_with(s + 1, || None);
        }
        if first || self.stages_open {
            let slot = self.stages.get_mut(s).ok_or(Stop)?;
            let values = match first {
                true => slot.get_or_insert_with(|| new_set(digesting)),
                false => slot.as_mut().ok_or(Stop)?,
            };
            if !values.is_resolved() {
                values.add(total);
            }
        }
        if self.totals_open {
            self.totals.add(total);
        }
        Ok(())
    }

    /// An empty part of this read's values, for a reader thread ([`Selection::part`]).
    fn part(&self) -> Durations {
        Durations {
            stages: (self.stages.iter())
                .map(|s| s.as_ref().map(Selection::part))
                .collect(),
            totals: self.totals.part(),
            ..*self
        }
    }

    /// Adds the values a [`Durations::part`] of this read took.
    fn absorb(&mut self, part: Durations) {
        if part.stages.len() > self.stages.len() {
            self.stages.resize_with(part.stages.len(), || None);
        }
        for (mine, theirs) in self.stages.iter_mut().zip(part.stages) {
            match (mine, theirs) {
                (Some(mine), Some(theirs)) => mine.absorb(theirs),
                (mine @ None, theirs) => *mine = theirs,
                (Some(_), None) => {}
            }
        }
        self.totals.absorb(part.totals);
    }

    /// Ends a read; whether another is needed. `asked` says what is asked of each set
    /// besides its distribution.
    fn end_pass(&mut self, asked: Asked) -> anyhow::Result<bool> {
        let (of_stages, of_totals) = (with_dist(asked.stages), with_dist(asked.totals));
        let mut open = false;
        for values in self.stages.iter_mut().flatten() {
            if !values.is_resolved() {
                open |= !values.end_pass(&of_stages)?;
            }
        }
        self.stages_open = open;
        if self.totals_open {
            self.totals_open = !self.totals.end_pass(&of_totals)?;
        }
        Ok(self.stages_open || self.totals_open)
    }
}

/// What the caller asks of each set of values besides its distribution (`compare`, the
/// HTML page).
type AlsoAsked<'a> = Option<&'a dyn Fn(&dyn Ranked)>;

/// A set's distribution and `also`.
fn with_dist(also: AlsoAsked<'_>) -> impl Fn(&dyn Ranked) + '_ {
    move |r| {
        dist_only(r);
        if let Some(also) = also {
            also(r);
        }
    }
}

/// A set of values; digesting them when the caller asks for it (`compare`).
fn new_set(digesting: bool) -> Selection {
    match digesting {
        true => Selection::digesting(KEEP_LIMIT),
        false => Selection::default(),
    }
}

/// What the first read of the values counts besides them, in any order: taken where the
/// spans are read, a part on each reader thread ([`Counted::absorb`]).
struct Counted {
    warmup_frames: u64,
    after_frames: u64,
    open_frames: u64,
    measured: u64,
    counts: StageCounts,
    /// Worst first: largest total, then earliest end, then smallest id.
    worst: Vec<Frame>,
}

impl Counted {
    fn new() -> Counted {
        Counted {
            warmup_frames: 0,
            after_frames: 0,
            open_frames: 0,
            measured: 0,
            counts: StageCounts {
                count: Vec::new(),
                max_dur: Vec::new(),
                first_start: Vec::new(),
            },
            worst: Vec::with_capacity(WORST_FRAMES + 1),
        }
    }

    fn count(&mut self, place: &Place) {
        match place {
            Place::Warmup => self.warmup_frames += 1,
            Place::After => self.after_frames += 1,
            Place::Open => self.open_frames += 1,
            Place::Measured(f) => {
                self.measured += 1;
                count_stage(&mut self.counts, f);
                keep_worst(&mut self.worst, *f);
            }
        }
    }

    /// Adds what `part` counted of other spans: the same counts, bounds and worst frames
    /// (their order is total: no two frames have one id) as one count of all of them.
    fn absorb(&mut self, part: Counted) {
        self.warmup_frames += part.warmup_frames;
        self.after_frames += part.after_frames;
        self.open_frames += part.open_frames;
        self.measured += part.measured;
        let (mine, theirs) = (&mut self.counts, part.counts);
        if theirs.count.len() > mine.count.len() {
            let n = theirs.count.len();
            mine.count.resize(n, 0);
            mine.max_dur.resize(n, 0);
            mine.first_start.resize(n, i64::MAX);
        }
        for (s, count) in theirs.count.iter().enumerate() {
            mine.count[s] += count;
            mine.max_dur[s] = mine.max_dur[s].max(theirs.max_dur[s]);
            mine.first_start[s] = mine.first_start[s].min(theirs.first_start[s]);
        }
        for f in part.worst {
            keep_worst(&mut self.worst, f);
        }
    }
}

/// What one reader thread takes of a read: its part of the counts and of the values.
struct Part {
    counted: Option<Counted>,
    durations: Durations,
}

/// One read of the spans: the values asked for, into `durations` and `end_order`; the
/// first read's counts into `counted` and each thread's busy time into the taker's sweep.
/// What needs no order (the counts, the durations' buckets) is taken on the threads that
/// read the spans where the source has them (issue 29: a third of this thread's time); this
/// thread puts the frames in end order and hands them, with the spans clipped for the busy
/// sweep, to what takes them in that order (`handoff`: on a thread of its own in a long
/// read). False when the read stopped (a frame out of end order, or, after the first, a run
/// that changed).
fn read_values(
    shape: &Shape,
    source: &dyn SpanSource,
    durations: &mut Durations,
    (mut scan, counted): (Option<&mut Scan>, Option<&mut Counted>),
    end_order: InEndOrder,
) -> anyhow::Result<bool> {
    let first = counted.is_some();
    let (from, to) = (shape.window.start_ns, shape.window.end_ns);
    let parts: Vec<Mutex<Part>> = (0..BESIDE_WORKERS)
        .map(|_| {
            Mutex::new(Part {
                counted: first.then(Counted::new),
                durations: durations.part(),
            })
        })
        .collect();
    let beside = |worker: usize, chunk: &[Span]| -> anyhow::Result<()> {
        // Each worker locks only its own part: never waited for.
        let mut part = parts[worker]
            .lock()
            .map_err(|_| anyhow::anyhow!("a thread reading the spans failed"))?;
        let Part { counted, durations } = &mut *part;
        for s in chunk {
            if out_of_range(s.start_ns, s.dur_ns) {
                continue;
            }
            let place = shape.place(s);
            if let Some(c) = counted.as_mut() {
                c.count(&place);
            }
            if let (true, Place::Measured(f)) = (durations.beside, place) {
                durations.add(f.stage, f.total_ns(), first)?;
            }
        }
        Ok(())
    };
    let InEndOrder {
        mut order,
        mut taken,
    } = end_order;
    let in_end_order = taken.in_end_order();
    let sweeping = taken.busy.is_some();
    let beside_the_read =
        (in_end_order || sweeping) && handoff::beside_for(source.span_count_hint());
    if beside_the_read {
        TAKEN_BESIDE.with(|n| n.set(n.get() + 1));
    }
    // The adaptive window's part of stutter and pacing, beside the taker as the taker is
    // beside this thread (half of the taker's time, which bounded this read at 84M spans).
    let mut adaptive = taken.adaptive.take();
    let mut take_adaptive = |intervals: &mut Vec<i64>| {
        if let Some(adaptive) = adaptive.as_deref_mut() {
            intervals.iter().for_each(|&x| adaptive.interval(x));
        }
        intervals.clear();
    };
    let adaptive_beside = beside_the_read && taken.cadence.is_some();
    let read = |hand: &mut handoff::Hand<'_, Batch>| {
        let mut batch = Batch::default();
        let read = source.for_each_spans_beside(&beside, &mut |chunk| {
            for s in chunk {
                if let Some(scan) = scan.as_deref_mut() {
                    scan.span(s)?;
                }
                if sweeping {
                    // `streamed::counts_and_busy`: every span, clipped to the window.
                    let clipped = Clipped {
                        thread: s.thread,
                        stage: s.stage,
                        from: s.start_ns.max(from),
                        to: s.start_ns.saturating_add(s.dur_ns).min(to),
                    };
                    if s.dur_ns >= 0 && clipped.from < clipped.to {
                        batch.clipped.push(clipped);
                    }
                }
                if out_of_range(s.start_ns, s.dur_ns) {
                    continue;
                }
                // Measured, as `Shape::place` has it.
                let end_ns = s.start_ns + s.dur_ns;
                if end_ns < from || end_ns > to || shape.open.contains(&s.frame) {
                    continue;
                }
                if !durations.beside {
                    durations.add(s.stage, end_ns - s.start_ns, first)?;
                }
                if in_end_order {
                    let f = Ended {
                        end_ns,
                        id: s.frame,
                        start_ns: s.start_ns,
                    };
                    if let Some(out) = order.push(f)? {
                        batch.frames.push(out);
                    }
                }
            }
            hand.hand(&mut batch);
            Ok(())
        });
        // The frames still held, once every span is read.
        let ordered = loop {
            match order.release() {
                Ok(Some(f)) => batch.frames.push(f),
                Ok(None) => break true,
                Err(Stop) => break false,
            }
        };
        hand.hand(&mut batch);
        (read, ordered)
    };
    let (read, ordered) = handoff::handing(adaptive_beside, &mut take_adaptive, |adaptive_hand| {
        let mut intervals = Vec::new();
        let mut take = |batch: &mut Batch| {
            taken.take_batch(batch, &mut intervals);
            adaptive_hand.hand(&mut intervals);
            batch.clear();
        };
        handoff::handing(beside_the_read, &mut take, read)
    });
    let completed = completed(read)?;
    let mut counted = counted;
    for part in parts {
        let part = part
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let (Some(counted), Some(theirs)) = (counted.as_deref_mut(), part.counted) {
            counted.absorb(theirs);
        }
        durations.absorb(part.durations);
    }
    Ok(completed && ordered)
}

const CHANGED: &str = "the run changed while it was read: analyse it again once nothing writes it";

fn facts(
    head: &Run,
    mut shape: Shape,
    mut scan: Option<Scan>,
    source: &dyn SpanSource,
    (asked, watch, tell): (Asked, &mut (dyn FrameWatch + Send), &mut dyn FnMut(SplitOf)),
) -> anyhow::Result<Option<(SpanFacts, AskedValues)>> {
    let budget = budget_ns(&head.meta);
    let names = Names {
        stages: &head.stages,
        threads: &head.threads,
    };
    let with_threads = has_thread_info(names.threads);
    let mut counted = Counted::new();
    let mut busy = with_threads.then(BusySweep::default);
    let mut durations = Durations {
        stages: Vec::new(),
        totals: new_set(asked.digests),
        stages_open: false,
        totals_open: false,
        digesting: asked.digests,
        beside: head.stages.len() <= STAGES_BESIDE,
    };
    let mut intervals = Intervals {
        open: true,
        ..Intervals::default()
    };
    let mut late = budget.map(Lateness::new);
    let mut late_spans = Vec::new();
    let want_late_spans = !head.telemetry.series.is_empty();
    let first = InEndOrder::new(Taken {
        busy: busy.as_mut(),
        last_end_ns: None,
        intervals: &mut intervals,
        late: late.as_mut(),
        late_spans: want_late_spans.then_some(&mut late_spans),
        cadence: None,
        adaptive: None,
        watch: &mut *watch,
    });
    let firsts = (scan.as_mut(), Some(&mut counted));
    if !read_values(&shape, source, &mut durations, firsts, first)? {
        return Ok(None);
    }
    if let Some(scan) = &scan {
        shape.scanned(scan);
    }
    let shape = &shape;
    let busy = match busy.map(BusySweep::finish) {
        // A thread's spans out of start order: sorting them takes the spans in memory.
        Some(None) => return Ok(None),
        Some(Some(busy)) => Some(busy),
        None => None,
    };
    let order = stage_order(&counted.counts);
    // The window, the stages and the worst frames are known: the scheduler's split may
    // read the spans beside the reads below.
    tell(SplitOf {
        window: (shape.window.start_ns, shape.window.end_ns),
        stage_count: order.len().max(head.stages.len()),
        worst: counted.worst.iter().map(|f| f.id).collect(),
        find_worst: false,
        open: Vec::new(),
    });
    watch.worst(&counted.worst.iter().map(Frame::span).collect::<Vec<_>>());
    let mut more = durations.end_pass(asked)?;
    // With one stage its durations are the totals; with more, the totals are counted from
    // the next read (the first did not take them: most runs of one span a frame have one).
    durations.totals_open = order.len() != 1;
    more |= durations.totals_open;
    let of_intervals = |r: &dyn Ranked| {
        intervals_stats(r);
        if let Some(also) = asked.intervals {
            also(r);
        }
    };
    intervals.open = !intervals.values.end_pass(&of_intervals)?;
    // Stutter and pacing look at each interval against their mean: a read after the one
    // that counted them, with the values still asked for.
    let mut cadence = Cadence::new(intervals.values.count(), intervals.values.total(), budget);
    let mut adaptive = Adaptive::default();
    let mut cadence_read = false;
    while !cadence_read || more || intervals.open {
        let end_order = InEndOrder::new(Taken {
            busy: None,
            last_end_ns: None,
            intervals: &mut intervals,
            late: None,
            late_spans: None,
            cadence: (!cadence_read).then_some(&mut cadence),
            adaptive: (!cadence_read).then_some(&mut adaptive),
            watch: &mut *watch,
        });
        if !read_values(shape, source, &mut durations, (None, None), end_order)? {
            anyhow::bail!(CHANGED);
        }
        cadence_read = true;
        more = durations.end_pass(asked)?;
        if intervals.open {
            intervals.open = !intervals.values.end_pass(&of_intervals)?;
        }
    }
    let (stutter, pacing) = cadence.finish(&adaptive)?;

    let stage_dists: Vec<Dist> = (order.iter())
        .filter_map(|&s| durations.stages.get(s)?.as_ref())
        .filter_map(Dist::of_ranked)
        .collect();
    let total = match order.len() {
        1 => stage_dists.first().cloned(),
        _ => Dist::of_ranked(&durations.totals),
    };
    let mut table = stage_table(&order, &head.stages, stage_dists, &counted.worst);
    let input = PipelineInput {
        names,
        window: (shape.window.start_ns, shape.window.end_ns),
        frame_slots: 0,
        measured_frames: counted.measured,
        multi_span: false,
        worst: &[],
    };
    let pipeline = summarize_single_spans(&input, busy).map(|p| p.into_summary(&mut table.worst));
    let counters = CounterTotals::new(0, &head.counter_names)
        .finish(&head.counter_names, shape.window.seconds());
    let measured = counted.measured;
    let (interval, fps) = (
        Dist::of_ranked(&intervals.values),
        fps_summary_ranked(&intervals.values),
    );
    let values = AskedValues {
        totals: (order.len() != 1).then_some(durations.totals),
        stages: (order.iter())
            .filter_map(|&s| Some((s, durations.stages.get_mut(s)?.take()?)))
            .collect(),
        intervals: intervals.values,
    };
    let facts = SpanFacts {
        window: shape.window,
        warmup_frames: counted.warmup_frames,
        after_frames: counted.after_frames,
        open_frames: counted.open_frames,
        open_missing_stages: match counted.open_frames {
            0 => Vec::new(),
            _ => shape.open_missing_stages.clone(),
        },
        measured_frames: measured,
        spans: shape.spans,
        negative_spans: shape.negative_spans,
        first_bad_span: shape.first_bad_span,
        late: late.filter(|_| measured > 0).map(Lateness::finish),
        stutter,
        pacing,
        total,
        interval,
        fps,
        worst_spans: counted.worst.iter().map(|f| f.ended().span()).collect(),
        table,
        pipeline,
        counters,
        late_spans,
    };
    Ok(Some((facts, values)))
}

/// `stage_rows` from each stage's distribution (stages in `order`) and the worst frames.
fn stage_table(
    order: &[usize],
    stage_names: &[String],
    dists: Vec<Dist>,
    worst: &[Frame],
) -> StageTable {
    let names: Vec<String> = order.iter().map(|&s| stage_name(stage_names, s)).collect();
    let rows = (names.iter().zip(dists))
        .map(|(name, dist)| StageRow {
            name: name.clone(),
            dist,
        })
        .collect();
    let worst = (worst.iter())
        .map(|f| WorstFrame {
            frame: f.id,
            t_s: f.end_ns as f64 / 1e9,
            total_ns: f.total_ns(),
            // Its one span, in its stage's column.
            stage_ns: (order.iter())
                .map(|&s| (s == usize::from(f.stage)).then(|| f.total_ns()))
                .collect(),
            ..WorstFrame::default()
        })
        .collect();
    StageTable { names, rows, worst }
}

/// `count_stages` of one measured span.
fn count_stage(counts: &mut StageCounts, f: &Frame) {
    let s = f.stage as usize;
    if s >= counts.count.len() {
        counts.count.resize(s + 1, 0);
        counts.max_dur.resize(s + 1, 0);
        counts.first_start.resize(s + 1, i64::MAX);
    }
    counts.count[s] += 1;
    counts.max_dur[s] = counts.max_dur[s].max(f.total_ns());
    counts.first_start[s] = counts.first_start[s].min(f.start_ns);
}

/// `pick_worst` of one more measured frame: largest total, then earliest end, then
/// smallest id.
fn keep_worst(worst: &mut Vec<Frame>, f: Frame) {
    let key = |f: &Frame| (Reverse(f.total_ns()), f.end_ns, f.id);
    if worst.len() == WORST_FRAMES && key(&f) >= key(&worst[WORST_FRAMES - 1]) {
        return;
    }
    let at = worst.partition_point(|w| key(w) < key(&f));
    worst.insert(at, f);
    worst.truncate(WORST_FRAMES);
}
