//! The analysis of a run whose spans are streamed rather than loaded: the same numbers as
//! [`crate::analyze::analyze`] (its tests compare the two on the same runs), in
//! about a third of the memory.
//!
//! A loaded run holds 32 bytes a span and the analysis about 70 more. Here the frames are
//! read first (a start and an end, packed: about 8 bytes a frame, ids implicit while they
//! count up), then the spans are read again for each thing they give ([`streamed`]) and
//! each statistic's values are made, used and dropped in turn, u32 where they fit. Where
//! that cannot be done (spans far out of order), and for `whatif`, the spans
//! become columns (frame index, stage, packed duration and start, thread: about 15 bytes a
//! span; start and thread dropped once the waits and busy time are taken from them). The
//! HTML page reads the run as the report does, and keeps the frame table for its plots
//! (none for a run of one span a frame: [`frameless`] shows it what its plots need).

pub mod cadence;
pub mod columns;
pub mod frameless;
pub mod grouped;
pub mod growing;
pub mod narrow;
pub mod nearly_sorted;
pub mod packed;
pub mod rate;
pub mod select;
pub mod streamed;
pub mod table;
pub mod values;
pub mod window;

#[cfg(test)]
mod tests;

use self::columns::{ColumnsBuilder, FramesReader, Keep, SpanColumns};
use self::narrow::NarrowIds;
use self::packed::PackedNs;
use self::table::FrameTable;
use self::values::{with_ns, NsValues, SORTS_AT_ONCE};
use self::window::{end_order, measure, Bits, MeasuredFrames};
use super::counters::CounterTotals;
use super::fps::fps_summary_of;
use super::frames::ResolvedWindow;
use super::frames::NO_FRAME;
use super::late::{late_frames_of, missed_slots_of, stutter_of};
use super::pacing::pacing_summary_of;
use super::pipeline::{summarize, Names, Pipeline, PipelineInput, SpanRow, SpanRows};
use super::sched::{Prepared, SplitOf, Splits};
use super::stages::{StageTable, WORST_FRAMES};
use super::summary::{assemble, budget_ns, SpanFacts};
use super::telemetry::FrameSpan;
use super::{Analysis, Dist, StageRow, WorstFrame};
use crate::model::{Run, SpanSource};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

/// The analysis of `head` (a run's metadata, names, processes, telemetry: its `spans` and
/// `counters` are not read) with its spans and counter values from `source`.
pub fn analyze_from(head: &Run, source: &(dyn SpanSource + Sync)) -> anyhow::Result<Analysis> {
    let analysed = split_beside(
        head,
        source,
        |tell| unsplit_from(head, source, tell).map(Some),
        |analysis| analysis,
    )?;
    // `unsplit_from` gives an analysis or an error.
    analysed.ok_or_else(|| anyhow::anyhow!("the analysis gave no figures"))
}

/// `analyse(tell)`'s result (an analysis without the scheduler's split, `None` when it
/// could not give one), its analysis (`analysis_of`) split. The split reads the spans once
/// for what needs nothing of the analysis, then again for what needs its window and worst
/// frames: both on a thread beside the analysis' reads, the second from when `analyse`
/// tells them (issue 29); after it, as before, when it does not, or where no second core
/// or thread is to be had.
pub fn split_beside<T>(
    head: &Run,
    source: &(dyn SpanSource + Sync),
    analyse: impl FnOnce(&mut dyn FnMut(SplitOf)) -> anyhow::Result<Option<T>>,
    analysis_of: impl Fn(&mut T) -> &mut Analysis,
) -> anyhow::Result<Option<T>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 || head.sched.is_none() {
        let Some(mut analysed) = analyse(&mut |_| {})? else {
            return Ok(None);
        };
        super::sched::apply(analysis_of(&mut analysed), head, source)?;
        return Ok(Some(analysed));
    }
    std::thread::scope(|scope| {
        let (ask, asked) = mpsc::channel::<SplitOf>();
        let beside = std::thread::Builder::new().spawn_scoped(scope, move || {
            let prepared = super::sched::prepare(head, source)?;
            // Told to find the worst frames of one span a frame, where they are not: wait
            // for what the analysis tells next.
            anyhow::Ok(loop {
                match asked.recv() {
                    Ok(of) => match super::sched::split(head, &prepared, &of, source)? {
                        Some(splits) => break Beside::Split(splits),
                        None => continue,
                    },
                    // Not told: split after the analysis.
                    Err(_) => break Beside::Prepared(prepared),
                }
            })
        });
        let Ok(beside) = beside else {
            // No thread to be had: one after the other.
            let Some(mut analysed) = analyse(&mut |_| {})? else {
                return Ok(None);
            };
            super::sched::apply(analysis_of(&mut analysed), head, source)?;
            return Ok(Some(analysed));
        };
        let analysed = analyse(&mut |of| {
            // A split gone (it failed) is said when it is joined.
            let _ = ask.send(of);
        });
        drop(ask);
        let split = beside
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let Some(mut analysed) = analysed? else {
            return Ok(None);
        };
        let analysis = analysis_of(&mut analysed);
        match split? {
            Beside::Split(splits) if splits.of == SplitOf::of(analysis, head) => {
                if splits.found_worst {
                    SPLITS_BEFORE_FIRST_READ.with(|n| n.set(n.get() + 1));
                }
                splits.write(analysis)
            }
            // The analysis ended other than its first reads said (its worst frames left
            // out of a run without frames): split again with what it gives.
            Beside::Split(..) => super::sched::apply(analysis, head, source)?,
            Beside::Prepared(prepared) => {
                super::sched::apply_prepared(analysis, head, prepared, source)?
            }
        }
        Ok(Some(analysed))
    })
}

thread_local! {
    /// Analyses on this thread whose scheduler's split started before their first read
    /// and was used (it found the worst frames itself): the tests count them.
    static SPLITS_BEFORE_FIRST_READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many analyses on this thread used a split that started before their first read.
pub fn splits_before_first_read() -> u64 {
    SPLITS_BEFORE_FIRST_READ.with(|n| n.get())
}

/// What the thread beside the analysis gives: the spans split over what the analysis
/// told, or only the slices it prepared.
enum Beside<'a> {
    Split(Splits),
    Prepared(Prepared<'a>),
}

/// [`analyze_from`] without the scheduler's split; `tell` told what the split needs as
/// soon as the analysis knows it, where it can tell it early.
fn unsplit_from(
    head: &Run,
    source: &(dyn SpanSource + Sync),
    tell: &mut dyn FnMut(SplitOf),
) -> anyhow::Result<Analysis> {
    // One span a frame, ids counting up: nothing held that grows with the run.
    if let Some(analysis) = frameless::analyze_unsplit(head, source, tell)? {
        return Ok(analysis);
    }
    let (table, spans) = read_frames(source)?;
    // Nothing of the spans is held: what they give is taken as they are read again.
    let unsplit = streamed::analyze_unsplit(head, table, spans, source, &mut |_| {}, tell)?;
    if let Some(analysis) = unsplit {
        return Ok(analysis);
    }
    // A thread's spans came out of order (sorting them takes the columns), or frames came
    // in no order a read can group.
    count_column_fallback();
    let (columns, table) = load_columns(source, ANALYSIS_KEEPS)?;
    let columns = Columns::Owned(Box::new(columns));
    let facts = span_facts(head, columns, &table, source, &mut |_| {})?;
    Ok(assemble(head, facts))
}

/// Analyses of this process that read the columns after a read without them could not
/// give the numbers ([`streamed`]'s cases): the scale tests print it by phase.
static COLUMN_FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// How many analyses fell back to the columns so far in this process.
pub fn column_fallbacks() -> u64 {
    COLUMN_FALLBACKS.load(Ordering::Relaxed)
}

/// Counts an analysis that reads columns after [`streamed`] said it cannot do without.
pub fn count_column_fallback() {
    COLUMN_FALLBACKS.fetch_add(1, Ordering::Relaxed);
}

/// Values the analysis has sorted, shown to the caller before they are dropped: the HTML
/// report draws its curves from them rather than collecting and sorting them again.
/// First, what it has read: the HTML report takes the worst frames' spans from the columns
/// before their starts and threads are dropped, so it need not keep them.
pub enum Sorted<'a> {
    /// The columns as read, the measured window and frames, and the worst frames'
    /// indices (worst first).
    Read {
        columns: &'a SpanColumns,
        window: &'a ResolvedWindow,
        measured: &'a MeasuredFrames,
        worst: &'a [u32],
    },
    /// A stage's span durations in measured frames, by stage id.
    Stage(usize, &'a NsValues),
    /// The intervals between the measured frames' ends.
    Intervals(&'a NsValues),
    /// Spans of one of the worst frames (`rank` among them, worst first; `frame` its
    /// index) in the run's order, shown by the reads without columns as they pass (with
    /// columns, [`Sorted::Read`] holds them): the HTML page draws their timelines.
    WorstFrame {
        rank: usize,
        frame: u32,
        spans: &'a [grouped::GroupedSpan],
    },
}

/// The optional columns the analysis needs: starts (stage order, waits, busy time) and
/// threads (busy time).
pub const ANALYSIS_KEEPS: Keep = Keep {
    start: true,
    thread: true,
};

/// Columns the analysis owns, and drops as soon as it is done with each, or borrows from
/// a caller that keeps them (the HTML report did; it now takes what its plots need from
/// [`Sorted::Read`]).
pub enum Columns<'a> {
    Owned(Box<SpanColumns>),
    Shared(&'a SpanColumns),
}

impl Columns<'_> {
    fn get(&self) -> &SpanColumns {
        match self {
            Columns::Owned(c) => c,
            Columns::Shared(c) => c,
        }
    }

    /// Drops the starts and threads, when owned.
    fn drop_starts_and_threads(&mut self) {
        if let Columns::Owned(c) = self {
            c.start = None;
            c.thread = None;
        }
    }
}

/// [`analyze_from`] with the spans already read into `columns` (kept as
/// [`ANALYSIS_KEEPS`] says) and `table`; only the counter values are read from `source`.
/// The HTML report reads the spans once for its plots and this; `sorted` is shown the
/// values the analysis sorts.
pub fn analyze_columns(
    head: &Run,
    columns: Columns,
    table: &FrameTable,
    source: &dyn SpanSource,
    sorted: &mut dyn FnMut(Sorted),
) -> anyhow::Result<Analysis> {
    let facts = span_facts(head, columns, table, source, sorted)?;
    let mut analysis = assemble(head, facts);
    super::sched::apply(&mut analysis, head, source)?;
    Ok(analysis)
}

/// Reads `source` into columns and frames, in two reads of its spans: the frame table
/// first (16 bytes a frame while it is built, 8 once packed), then the columns beside the
/// packed table. One read held both at once: with one span a frame, 12 bytes a span more
/// at the peak of every subcommand that reads columns (issue 29).
pub fn load_columns(
    source: &dyn SpanSource,
    keep: Keep,
) -> anyhow::Result<(SpanColumns, FrameTable)> {
    let (table, _) = read_frames(source)?;
    columns_beside(table, source, keep)
}

/// The first read of [`load_columns`]: the frame table, and how many spans were read.
pub fn read_frames(source: &dyn SpanSource) -> anyhow::Result<(FrameTable, usize)> {
    let mut frames = FramesReader::expecting(source.span_count_hint());
    let mut spans = 0;
    source.for_each_spans(&mut |chunk| {
        frames.push(chunk);
        spans += chunk.len();
        Ok(())
    })?;
    Ok((frames.finish(), spans))
}

/// The second read of [`load_columns`]: the columns of spans whose frames `table` holds.
pub fn columns_beside(
    table: FrameTable,
    source: &dyn SpanSource,
    keep: Keep,
) -> anyhow::Result<(SpanColumns, FrameTable)> {
    let mut builder = ColumnsBuilder::with_frames(keep, source.span_count_hint(), table);
    source.for_each_spans(&mut |chunk| {
        builder.push(chunk);
        Ok(())
    })?;
    builder.finish()
}

fn span_facts(
    head: &Run,
    mut columns: Columns,
    table: &FrameTable,
    source: &dyn SpanSource,
    sorted: &mut dyn FnMut(Sorted),
) -> anyhow::Result<SpanFacts> {
    let meta = &head.meta;
    let spans = columns.get().len() as u64;
    let (window, measured) = measure(table, columns.get(), meta);
    let counts = count_stages(columns.get(), &measured);
    let worst = pick_worst(table, &measured, WORST_FRAMES);
    let names = Names {
        stages: &head.stages,
        threads: &head.threads,
    };
    let pipeline = pipeline(
        columns.get(),
        table,
        &measured,
        &counts,
        (&window, &names, &worst),
    )?;
    sorted(Sorted::Read {
        columns: columns.get(),
        window: &window,
        measured: &measured,
        worst: &worst,
    });
    // Starts and threads are done with: gone before anything else is allocated.
    columns.drop_starts_and_threads();

    let frames = (table, &measured);
    let stage_table = stage_table(columns, &head.stages, frames, &counts, &worst, sorted);
    let parts = SpanParts {
        window,
        measured,
        spans,
        worst,
        pipeline,
        stage_table,
        total: None,
    };
    frame_facts(head, table, parts, source, sorted)
}

/// What the spans give besides their frames' starts and ends, however they were read.
struct SpanParts {
    window: ResolvedWindow,
    measured: MeasuredFrames,
    spans: u64,
    /// Frame indices, worst first.
    worst: Vec<u32>,
    pipeline: Option<Pipeline>,
    stage_table: StageTable,
    /// The totals' distribution, where the spans gave it: with one span a frame and one
    /// stage, the totals are that stage's durations (sorted once, not twice).
    total: Option<Option<Dist>>,
}

/// The facts from the frames (totals, intervals, lateness, rate) and the counters, with
/// the parts the spans gave.
fn frame_facts(
    head: &Run,
    table: &FrameTable,
    parts: SpanParts,
    source: &dyn SpanSource,
    sorted: &mut dyn FnMut(Sorted),
) -> anyhow::Result<SpanFacts> {
    let meta = &head.meta;
    let SpanParts {
        window,
        measured,
        spans,
        worst,
        pipeline,
        mut stage_table,
        total: known_total,
    } = parts;
    let pipeline = pipeline.map(|p| p.into_summary(&mut stage_table.worst));

    let budget = budget_ns(meta);
    let mut late = None;
    let (total, late_spans, order) = match budget {
        Some(b) => {
            let order = end_order(table, &measured);
            let mut totals = values_in_order(&order, |i| table.total_ns(i));
            if measured.count > 0 {
                late = Some(with_ns!(&totals, t => late_frames_of(t, b)));
            }
            // Telemetry looks at the late frames' readings.
            let late_spans: Vec<FrameSpan> = match head.telemetry.series.is_empty() {
                false => (order.iter())
                    .filter(|&&i| table.total_ns(i) > b)
                    .map(|&i| frame_span(table, i))
                    .collect(),
                true => Vec::new(),
            };
            let total = known_total.unwrap_or_else(|| {
                totals.sort();
                totals.dist_of_sorted()
            });
            (total, late_spans, order)
        }
        None if known_total.is_some() => {
            let total = known_total.flatten();
            (total, Vec::new(), end_order(table, &measured))
        }
        None => {
            // Without a budget the totals' order does not matter: taken by index, before
            // the end order is held beside them (4 bytes a frame less at the peak).
            let mut totals = values_of_frames(&measured, |i| table.total_ns(i));
            totals.sort();
            let total = totals.dist_of_sorted();
            drop(totals);
            (total, Vec::new(), end_order(table, &measured))
        }
    };
    let (interval, fps, stutter, pacing) = {
        // Written over the end order, which nothing reads after.
        let mut intervals = intervals_over_order(order, table);
        if let (Some(late), Some(b)) = (&mut late, budget) {
            late.missed_slots = with_ns!(&intervals, v => missed_slots_of(v, b));
        }
        let stutter = with_ns!(&intervals, v => stutter_of(v));
        let pacing = with_ns!(&intervals, v => pacing_summary_of(v, budget));
        intervals.sort();
        sorted(Sorted::Intervals(&intervals));
        let fps = with_ns!(&intervals, v => fps_summary_of(v));
        (intervals.dist_of_sorted(), fps, stutter, pacing)
    };

    let mut counters = CounterTotals::new(table.slots(), &head.counter_names);
    source.for_each_counters(&mut |chunk| {
        for v in chunk {
            let frame = table.index_of(v.frame);
            counters.add(v, frame, frame.is_some_and(|i| measured.in_window.get(i)));
        }
        Ok(())
    })?;
    let counters = counters.finish(&head.counter_names, window.seconds());

    Ok(SpanFacts {
        window,
        warmup_frames: measured.warmup_frames,
        after_frames: measured.after_frames,
        open_frames: measured.open_frames,
        open_missing_stages: measured.open_missing_stages,
        measured_frames: measured.count,
        spans,
        negative_spans: table.negative_spans,
        first_bad_span: table.first_bad_span,
        late,
        stutter,
        pacing,
        total,
        interval,
        fps,
        worst_spans: worst.iter().map(|&i| frame_span(table, i)).collect(),
        table: stage_table,
        pipeline,
        counters,
        late_spans,
    })
}

/// The waits and busy time from the columns (their starts and threads kept), in memory.
fn pipeline(
    columns: &SpanColumns,
    table: &FrameTable,
    measured: &MeasuredFrames,
    counts: &StageCounts,
    (window, names, worst): (&ResolvedWindow, &Names, &[u32]),
) -> anyhow::Result<Option<Pipeline>> {
    let (Some(start), Some(thread)) = (&columns.start, &columns.thread) else {
        anyhow::bail!("the analysis needs the spans' starts and threads (columns read without)");
    };
    let measured_spans: usize = counts.count.iter().sum();
    let input = PipelineInput {
        names: *names,
        window: (window.start_ns, window.end_ns),
        frame_slots: table.slots(),
        measured_frames: measured.count,
        multi_span: measured_spans as u64 > measured.count,
        worst,
    };
    let rows = ColumnRows {
        columns,
        measured,
        start,
        thread,
    };
    Ok(summarize(&input, &rows))
}

/// Each wait pair's waits over the measured frames of `columns` (read with starts and
/// threads), sorted, as `pipeline::wait_values` gives them from a loaded run (`compare`).
pub fn wait_values(
    head: &Run,
    columns: &SpanColumns,
    table: &FrameTable,
    measured: &MeasuredFrames,
) -> anyhow::Result<super::pipeline::WaitValues> {
    let (Some(start), Some(thread)) = (&columns.start, &columns.thread) else {
        anyhow::bail!("the waits need the spans' starts and threads (columns read without)");
    };
    let names = Names {
        stages: &head.stages,
        threads: &head.threads,
    };
    let rows = ColumnRows {
        columns,
        measured,
        start,
        thread,
    };
    Ok(super::pipeline::wait_values_of(
        names,
        table.slots(),
        measured.count,
        &rows,
    ))
}

/// The columns' spans for the pipeline's summary.
struct ColumnRows<'a> {
    columns: &'a SpanColumns,
    measured: &'a MeasuredFrames,
    start: &'a PackedNs,
    thread: &'a NarrowIds,
}

impl SpanRows for ColumnRows<'_> {
    fn len(&self) -> usize {
        self.columns.len()
    }

    fn frame(&self, i: usize) -> u32 {
        self.columns.frame[i]
    }

    fn thread(&self, i: usize) -> u32 {
        self.thread.get(i)
    }

    fn row(&self, i: usize) -> SpanRow {
        let frame = self.columns.frame[i];
        SpanRow {
            measured_frame: (frame != NO_FRAME && self.measured.in_window.get(frame))
                .then_some(frame),
            thread: self.thread.get(i),
            stage: self.columns.stage[i],
            start_ns: self.start.get(i),
            dur_ns: self.columns.dur.get(i),
        }
    }
}

/// `stages::pick_worst` without the end order: its insertion over frames in (end, id)
/// order keeps equal totals in that order, so this is largest total, then earliest end,
/// then smallest id.
fn pick_worst(table: &FrameTable, measured: &MeasuredFrames, k: usize) -> Vec<u32> {
    let key = |i: u32| {
        (
            std::cmp::Reverse(table.total_ns(i)),
            table.end_ns(i),
            table.id(i),
        )
    };
    let mut worst: Vec<u32> = Vec::with_capacity(k + 1);
    for i in measured.in_window.ones() {
        if k == 0 || (worst.len() == k && key(i) >= key(worst[k - 1])) {
            continue;
        }
        let at = worst.partition_point(|&w| key(w) < key(i));
        worst.insert(at, i);
        worst.truncate(k);
    }
    worst
}

fn frame_span(table: &FrameTable, i: u32) -> FrameSpan {
    FrameSpan {
        frame: table.id(i),
        start_ns: table.start_ns(i),
        end_ns: table.end_ns(i),
    }
}

/// `value(i)` for each measured frame, by index, as narrow as they fit.
pub fn values_of_frames(measured: &MeasuredFrames, value: impl Fn(u32) -> i64) -> NsValues {
    let (min, max) = (measured.in_window.ones())
        .map(&value)
        .fold((0, 0), |(lo, hi): (i64, i64), v| (lo.min(v), hi.max(v)));
    let mut values = NsValues::for_range(min, max, measured.count as usize);
    for i in measured.in_window.ones() {
        values.push(value(i));
    }
    values
}

/// `value(i)` for each frame of `order`, in that order, as narrow as they fit.
pub fn values_in_order(order: &[u32], value: impl Fn(u32) -> i64) -> NsValues {
    let (min, max) = (order.iter())
        .map(|&i| value(i))
        .fold((0, 0), |(lo, hi): (i64, i64), v| (lo.min(v), hi.max(v)));
    let mut values = NsValues::for_range(min, max, order.len());
    for &i in order {
        values.push(value(i));
    }
    values
}

/// end_i − end_{i−1} over the frames of `order` (`frames::intervals_ns`).
pub fn intervals_in_order(order: &[u32], table: &FrameTable) -> NsValues {
    let between = |w: &[u32]| table.end_ns(w[1]).saturating_sub(table.end_ns(w[0]));
    let (min, max) = (order.windows(2))
        .map(between)
        .fold((0, 0), |(lo, hi): (i64, i64), v| (lo.min(v), hi.max(v)));
    let mut values = NsValues::for_range(min, max, order.len().saturating_sub(1));
    for w in order.windows(2) {
        values.push(between(w));
    }
    values
}

/// [`intervals_in_order`] written over `order` itself when every interval fits a u32 (as
/// they do unless frames end 4.29 s apart): the order's 4 bytes a frame are not held beside
/// the intervals' (issue 29: whatif's measured figures were its peak).
pub fn intervals_over_order(mut order: Vec<u32>, table: &FrameTable) -> NsValues {
    let between = |a: u32, b: u32| table.end_ns(b).saturating_sub(table.end_ns(a));
    let narrow = (order.windows(2)).all(|w| (0..=u32::MAX as i64).contains(&between(w[0], w[1])));
    if !narrow {
        return intervals_in_order(&order, table);
    }
    // Interval k is written where frame k was, once frames k and k + 1 are read.
    for k in 0..order.len().saturating_sub(1) {
        order[k] = between(order[k], order[k + 1]) as u32;
    }
    order.pop();
    NsValues::Narrow(order)
}

/// Per stage id, over the spans of measured frames: how many, the longest, and (with
/// starts kept) the earliest start.
pub struct StageCounts {
    pub count: Vec<usize>,
    pub max_dur: Vec<i64>,
    pub first_start: Vec<i64>,
}

pub fn count_stages(columns: &SpanColumns, measured: &MeasuredFrames) -> StageCounts {
    let stages = u16::MAX as usize + 1;
    let mut c = StageCounts {
        count: vec![0; stages],
        max_dur: vec![0; stages],
        first_start: vec![i64::MAX; stages],
    };
    for (row, (&frame, &stage)) in columns.frame.iter().zip(&columns.stage).enumerate() {
        if frame == NO_FRAME || !measured.in_window.get(frame) {
            continue;
        }
        let st = stage as usize;
        c.count[st] += 1;
        c.max_dur[st] = c.max_dur[st].max(columns.dur.get(row));
        if let Some(start) = &columns.start {
            c.first_start[st] = c.first_start[st].min(start.get(row));
        }
    }
    c
}

/// `stages::stage_table` over columns, which it drops once the durations are out of them.
fn stage_table(
    columns: Columns,
    stage_names: &[String],
    (table, measured): (&FrameTable, &MeasuredFrames),
    counts: &StageCounts,
    worst: &[u32],
    sorted: &mut dyn FnMut(Sorted),
) -> StageTable {
    let order = stage_order(counts);
    let mut is_worst = Bits::new(table.slots());
    for &f in worst {
        is_worst.set(f);
    }
    // Each stage's durations and its share of the worst frames, a few stages at once
    // (each sorted in place).
    let cols = columns.get();
    let stage_of = |c: usize| {
        let s = order[c];
        let mut durations = NsValues::for_range(0, counts.max_dur[s], counts.count[s]);
        let mut worst_ns: Vec<Option<i64>> = vec![None; worst.len()];
        for (row, (&frame, &stage)) in cols.frame.iter().zip(&cols.stage).enumerate() {
            if usize::from(stage) != s || frame == NO_FRAME || !measured.in_window.get(frame) {
                continue;
            }
            let dur = cols.dur.get(row);
            durations.push(dur);
            if is_worst.get(frame) {
                if let Some(pos) = worst.iter().position(|&w| w == frame) {
                    worst_ns[pos] = Some(worst_ns[pos].unwrap_or(0).saturating_add(dur));
                }
            }
        }
        durations.sort();
        (durations, worst_ns)
    };
    let done = crate::parallel::map((0..order.len()).collect(), SORTS_AT_ONCE, stage_of);
    drop(columns);
    stage_rows(&order, stage_names, done, (table, worst), sorted)
}

/// The stages in the table's order: by their first measured start, then id.
fn stage_order(counts: &StageCounts) -> Vec<usize> {
    let mut order: Vec<usize> = (0..counts.count.len())
        .filter(|&s| counts.count[s] > 0)
        .collect();
    order.sort_by_key(|&s| (counts.first_start[s], s));
    order
}

/// The stage table from each stage's sorted durations and its sums in the worst frames
/// (by worst frame), stages in `order`.
fn stage_rows(
    order: &[usize],
    stage_names: &[String],
    done: Vec<(NsValues, Vec<Option<i64>>)>,
    (table, worst): (&FrameTable, &[u32]),
    sorted: &mut dyn FnMut(Sorted),
) -> StageTable {
    let mut worst_sums: Vec<Vec<Option<i64>>> = vec![Vec::with_capacity(order.len()); worst.len()];
    let mut durations = Vec::with_capacity(order.len());
    for (d, worst_ns) in done {
        durations.push(d);
        for (sums, ns) in worst_sums.iter_mut().zip(worst_ns) {
            sums.push(ns);
        }
    }

    let names: Vec<String> = order
        .iter()
        .map(|&s| super::stages::stage_name(stage_names, s))
        .collect();
    let rows = (order.iter().zip(&names))
        .zip(durations)
        .filter_map(|((&stage, name), d)| {
            sorted(Sorted::Stage(stage, &d));
            Some(StageRow {
                name: name.clone(),
                dist: d.dist_of_sorted()?,
            })
        })
        .collect();
    let worst = worst
        .iter()
        .zip(worst_sums)
        .map(|(&f, stage_ns)| WorstFrame {
            frame: table.id(f),
            t_s: table.end_ns(f) as f64 / 1e9,
            total_ns: table.total_ns(f),
            stage_ns,
            ..WorstFrame::default()
        })
        .collect();
    StageTable { names, rows, worst }
}
