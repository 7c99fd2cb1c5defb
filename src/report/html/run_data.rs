//! What the HTML report of one run plots, computed from the run's frames, the values its
//! analysis sorts or selects (read as the text report's analysis reads them: no columns
//! where that needs none, no frame table for a run of one span a frame), with the worst
//! frames' spans as those reads pass them. Every number here is embedded in the page as
//! JSON; the page's script only draws it.

mod one_span;

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap};

use super::decimate::{level_sizes, levels, min_max, Decimated, Kept};
use super::{percentile_grid, round};
use crate::analyze::compact::columns::SpanColumns;
use crate::analyze::compact::grouped::GroupedSpan;
use crate::analyze::compact::nearly_sorted::sort_nearly_sorted;
use crate::analyze::compact::streamed::{analyze_measured_with_waits, Shown};
use crate::analyze::compact::table::FrameTable;
use crate::analyze::compact::values::with_ns;
use crate::analyze::compact::window::{end_order, MeasuredFrames};
use crate::analyze::compact::{
    analyze_columns, columns_beside, count_column_fallback, intervals_over_order, read_frames,
    Columns, Sorted, ANALYSIS_KEEPS,
};
use crate::analyze::frames::{resolve_window, ResolvedWindow, NO_FRAME};
use crate::analyze::late::for_each_stutter_at;
use crate::analyze::metrics::FPS_LOWS;
use crate::analyze::stats::{percentile_ranked, Ranked};
use crate::analyze::{Analysis, FpsSummary};
use crate::model::{Run, SeriesKind, SpanSource};
use crate::render::document::{Block, Document};
use crate::render::plot::{
    FpsCurve, FrameSeries, FrameTimes, GanttFrame, Histogram, Level, Markers, NamedValues, Plot,
    QuantileCurves, Series,
};
use crate::render::Format;

/// Bump when a key is renamed, removed or changes meaning.
pub const SCHEMA: &str = "framelab.html-run/1";

/// Buckets of a frame-time plot: at most twice as many points are drawn.
const FRAME_BUCKETS: usize = 4000;
/// Points of a frame plot's finest level of detail at most: 16 times the whole run's view
/// (16 × 2 × [`FRAME_BUCKETS`] = 128k) fits, so 2M frames keep a level 16 times finer, and
/// up to 131k frames every point. About 20 bytes a point in the page.
const MAX_DETAIL_POINTS: usize = 1 << 17;
/// Buckets of each telemetry plot.
const TELEMETRY_BUCKETS: usize = 2000;
/// Late frames and stutters marked at most (the worst ones when there are more).
const MAX_MARKERS: usize = 2000;
/// Telemetry series plotted at most (the others are counted on the page).
const MAX_TELEMETRY_SERIES: usize = 16;
/// Worst frames drawn as a stage timeline.
const GANTT_FRAMES: usize = 5;

/// A run read and analysed for its page: its frames, what the page takes of the spans as
/// the analysis reads them, and the curves of the values it sorts or selects.
pub struct RunData<'a> {
    pub head: &'a Run,
    frames: Frames,
    curves: Curves,
}

/// What the frame plots, their markers and the worst frames' timelines are drawn from.
enum Frames {
    /// The frame table (8 bytes a frame) and what the analysis' reads passed beside it.
    Table(Box<WithTable>),
    /// A run of one span a frame: all of it made as reads passed the frames, no frame
    /// table ([`one_span`]).
    Passed(Box<one_span::Passed>),
}

/// The frame table, what the reads passed of the spans, and the frame plots when they were
/// made beside the analysis ([`frame_plots`]; else made with the page).
struct WithTable {
    table: FrameTable,
    read: FromSpans,
    plots: Option<FramePlots>,
}

/// What the page draws of the frames, however it was read.
struct Drawn {
    window: ResolvedWindow,
    /// Totals and intervals, by end.
    plots: (Series, Series),
    late: Markers,
    stutters: Markers,
    gantt: Vec<GanttFrame>,
}

/// What the page needs of the spans beside the frames: the measured window and frames,
/// and the spans of the worst frames its timelines draw.
struct FromSpans {
    window: ResolvedWindow,
    measured: MeasuredFrames,
    /// By frame index: (stage id, thread, start, dur) of each span.
    worst_spans: Vec<(u32, Vec<WorstSpan>)>,
}

type WorstSpan = (u16, u32, i64, i64);

/// `spans` of the worst frame `frame` (shown by the reads without columns, in the run's
/// order) added to that frame's.
fn add_worst_spans(
    worst_spans: &mut Vec<(u32, Vec<WorstSpan>)>,
    frame: u32,
    spans: &[GroupedSpan],
) {
    let at = match worst_spans.iter().position(|(f, _)| *f == frame) {
        Some(at) => at,
        None => {
            worst_spans.push((frame, Vec::new()));
            worst_spans.len() - 1
        }
    };
    let to = &mut worst_spans[at].1;
    to.extend(
        spans
            .iter()
            .map(|s| (s.stage, s.thread, s.start_ns, s.dur_ns)),
    );
}

impl FromSpans {
    fn from_columns(
        columns: &SpanColumns,
        window: &ResolvedWindow,
        measured: &MeasuredFrames,
        worst: &[u32],
    ) -> FromSpans {
        let worst = &worst[..worst.len().min(GANTT_FRAMES)];
        let mut worst_spans: Vec<(u32, Vec<WorstSpan>)> = Vec::new();
        // Without starts and threads there is no timeline to draw.
        if let (Some(starts), Some(threads)) = (&columns.start, &columns.thread) {
            worst_spans = worst.iter().map(|&i| (i, Vec::new())).collect();
            for (row, &frame) in columns.frame.iter().enumerate() {
                if frame == NO_FRAME {
                    continue;
                }
                if let Some(k) = worst.iter().position(|&i| i == frame) {
                    worst_spans[k].1.push((
                        columns.stage[row],
                        threads.get(row),
                        starts.get(row),
                        columns.dur.get(row),
                    ));
                }
            }
        }
        FromSpans {
            window: *window,
            measured: measured.clone(),
            worst_spans,
        }
    }
}

impl<'a> RunData<'a> {
    /// The run's analysis, read as the text report reads it (issues 29 and 31): a run of
    /// one span a frame without a frame table ([`one_span`]); any other, the frame
    /// table first, then the spans streamed for each figure and no columns at all (with
    /// several spans a frame, each frame's spans grouped as a read gives them for the
    /// waits); the columns beside the table only where the text report reads them too,
    /// counted as it counts them, and dropped as the analysis goes. The page's curves are
    /// taken from the values the analysis sorts and the worst frames' spans as its reads
    /// pass them (one read less than reading them again); counter values are read from
    /// `source`.
    pub fn analyze(
        head: &'a Run,
        source: &(dyn SpanSource + Sync),
    ) -> anyhow::Result<(Self, Analysis)> {
        if let Some((passed, curves, analysis)) = one_span::analyze(head, source)? {
            let frames = Frames::Passed(Box::new(passed));
            let data = RunData {
                head,
                frames,
                curves,
            };
            return Ok((data, analysis));
        }
        Self::analyze_with_table(head, source)
    }

    /// [`RunData::analyze`] of a run that is not of one span a frame (or not in the order
    /// that needs): the frame table read first.
    fn analyze_with_table(
        head: &'a Run,
        source: &(dyn SpanSource + Sync),
    ) -> anyhow::Result<(Self, Analysis)> {
        let (table, spans) = read_frames(source)?;
        // The frame plots need the frames alone: beside the analysis, where that holds
        // little (frames already in end order; else the order of every frame, 4 bytes a
        // frame, is written once the analysis has dropped what it held).
        let (frame_plots, analysed) = std::thread::scope(|scope| {
            let plots = || plots_if_indexed_by_end(&table);
            let beside = std::thread::Builder::new().spawn_scoped(scope, plots).ok();
            let analysed = Self::analyze_measured(head, &table, spans, source);
            let plots = beside.and_then(|plots| {
                plots
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            });
            (plots, analysed)
        });
        let Some((read, curves, analysis)) = analysed? else {
            // A thread's spans came far out of start order (sorting them takes the
            // columns), or frames came in no order a read can group: as for the text report.
            count_column_fallback();
            let (mut data, analysis) = Self::from_columns(head, table, source)?;
            if let Frames::Table(with) = &mut data.frames {
                with.plots = frame_plots;
            }
            return Ok((data, analysis));
        };
        let frames = Frames::Table(Box::new(WithTable {
            table,
            read,
            plots: frame_plots,
        }));
        let data = RunData {
            head,
            frames,
            curves,
        };
        Ok((data, analysis))
    }

    /// The analysis of [`RunData::analyze`] without columns, with what the page takes of
    /// the spans and the curves; `None` where it needs the columns.
    fn analyze_measured(
        head: &Run,
        table: &FrameTable,
        spans: usize,
        source: &(dyn SpanSource + Sync),
    ) -> anyhow::Result<Option<(FromSpans, Curves, Analysis)>> {
        let mut curves = Curves::default();
        let mut worst_spans: Vec<(u32, Vec<WorstSpan>)> = Vec::new();
        let mut sorted = |sorted: Sorted| match sorted {
            Sorted::WorstFrame { rank, frame, spans } if rank < GANTT_FRAMES => {
                add_worst_spans(&mut worst_spans, frame, spans)
            }
            sorted => curves.take(sorted),
        };
        let shown: Shown = (&mut sorted, &mut |_, _| {});
        let Some((analysis, measured)) =
            analyze_measured_with_waits(head, table, spans, source, shown)?
        else {
            return Ok(None);
        };
        let read = FromSpans {
            window: resolve_window(&head.meta, table.last_end_ns),
            measured,
            worst_spans,
        };
        Ok(Some((read, curves, analysis)))
    }

    /// [`RunData::analyze`] from the columns read beside `table`: what the page takes of
    /// the spans is taken from them before the analysis drops their starts and threads.
    fn from_columns(
        head: &'a Run,
        table: FrameTable,
        source: &dyn SpanSource,
    ) -> anyhow::Result<(Self, Analysis)> {
        let (columns, table) = columns_beside(table, source, ANALYSIS_KEEPS)?;
        let mut curves = Curves::default();
        let mut read = None;
        let analysis = analyze_columns(
            head,
            Columns::Owned(Box::new(columns)),
            &table,
            source,
            &mut |sorted| match sorted {
                Sorted::Read {
                    columns,
                    window,
                    measured,
                    worst,
                } => read = Some(FromSpans::from_columns(columns, window, measured, worst)),
                sorted => curves.take(sorted),
            },
        )?;
        let read = read.unwrap_or_else(|| FromSpans {
            window: resolve_window(&head.meta, table.last_end_ns),
            measured: MeasuredFrames::default(),
            worst_spans: Vec::new(),
        });
        let frames = Frames::Table(Box::new(WithTable {
            table,
            read,
            plots: None,
        }));
        let data = RunData {
            head,
            frames,
            curves,
        };
        Ok((data, analysis))
    }

    /// The report's document for the page with its plots, the run analysed as
    /// `analysis` (by [`RunData::analyze`]): the frame plots, distributions, timelines and
    /// telemetry before the tables, the imported histograms after them. The frame plots
    /// need the frames alone, and beside the frame table hold 4 bytes a frame at a time
    /// (an order of frames, then the intervals written over it).
    pub fn document(self, analysis: &Analysis) -> Document {
        let mut document = crate::report::document(analysis, Format::Html, false);
        let at = (document.blocks.iter())
            .position(|b| !matches!(b, Block::Title(_) | Block::Facts(_)))
            .unwrap_or(document.blocks.len());
        let (before, after) = self.plots(analysis);
        document
            .blocks
            .splice(at..at, before.into_iter().map(Block::Plot));
        document.blocks.extend(after.into_iter().map(Block::Plot));
        document
    }

    /// The plots before the tables, and those after them.
    fn plots(self, analysis: &Analysis) -> (Vec<Plot>, Vec<Plot>) {
        let RunData {
            head,
            frames,
            curves,
        } = self;
        let stage_order = stage_order(head, analysis);
        let budget_ns = analysis.budget_ns.filter(|&b| b > 0);
        let drawn = match frames {
            Frames::Table(with) => with.drawn(head, analysis, &stage_order, budget_ns),
            Frames::Passed(passed) => passed.drawn(head, analysis, &stage_order),
        };
        let Drawn {
            window,
            plots,
            late,
            stutters,
            gantt,
        } = drawn;
        let (telemetry, telemetry_left_out) = telemetry(head);
        let frames = FrameTimes {
            budget_us: budget_ns.map(|b| us(b as f64)),
            window_start_s: secs(window.start_ns),
            window_end_s: secs(window.end_ns),
            frames: frame_series(plots, late, stutters),
        };
        let histograms = (head.histograms.iter())
            .map(|h| Histogram {
                name: h.name.clone(),
                unit: h.unit.clone(),
                buckets: h.buckets.iter().map(|b| (b.lo, b.hi, b.count)).collect(),
            })
            .collect();
        let before = vec![
            Plot::FrameTimes(Box::new(frames)),
            Plot::Stages(stage_curves(curves.stages, &stage_order)),
            Plot::Fps(fps_curve(curves.fps, analysis.fps.as_ref())),
            Plot::Timelines(gantt),
            Plot::Telemetry {
                series: telemetry,
                left_out: telemetry_left_out,
            },
        ];
        (before, vec![Plot::Histograms(histograms)])
    }
}

impl WithTable {
    /// The frame plots, markers and timelines, from the frame table.
    fn drawn(
        self,
        head: &Run,
        analysis: &Analysis,
        stage_order: &[(usize, String)],
        budget_ns: Option<i64>,
    ) -> Drawn {
        let WithTable { table, read, plots } = self;
        let table = &table;
        let (window, measured) = (read.window, read.measured);
        let worst_spans = &read.worst_spans;
        let spans_of = |frame: u64| {
            let i = table.index_of(frame)?;
            let spans = (worst_spans.iter())
                .find(|(f, _)| *f == i)
                .map(|(_, spans)| spans.clone())
                .unwrap_or_default();
            Some((table.start_ns(i), spans))
        };
        let gantt = match worst_spans.is_empty() {
            true => Vec::new(),
            false => gantt(spans_of, head, analysis, stage_order),
        };
        let in_window = end_order(table, &measured);
        drop(measured);
        let (late, stutters) = late_and_stutters(table, in_window, budget_ns);
        let plots = plots.unwrap_or_else(|| frame_plots(table)).series(table);
        Drawn {
            window,
            plots,
            late,
            stutters,
            gantt,
        }
    }
}

fn secs(ns: i64) -> f64 {
    round(ns as f64 / 1e9, 6)
}

fn us(ns: f64) -> f64 {
    round(ns / 1e3, 2)
}

/// µs to the nanosecond, for the few values drawn one by one (distribution curves, the worst
/// frames' spans): a stage of 23 ns is 0.023 there, not 0.02 (13% off).
fn us_exact(ns: f64) -> f64 {
    round(ns / 1e3, 3)
}

fn series(label: &str, unit: &str, points: usize, d: Decimated, y_round: i32) -> Series {
    Series {
        label: label.to_owned(),
        unit: unit.to_owned(),
        points,
        bucket: d.bucket,
        x: d.x,
        y: d.y.into_iter().map(|v| round(v, y_round)).collect(),
        finest_bucket: None,
        detail: Vec::new(),
    }
}

/// The frame-time plots' points kept at each level of detail, by frame index: each total
/// by its frame, each interval by its frame and the one before it in end order. Made in
/// one pass over the frames each ([`frame_plots`]), beside the analysis, and drawn from the
/// frame table after it ([`FramePlots::series`]). A level of every point is not kept but
/// walked again then: what is held beside the analysis stays small whatever the run's
/// length (at most 12 bytes for each of 2 × 131k points).
struct FramePlots {
    total: (usize, Vec<Kept<u32>>),
    interval: (usize, Vec<Kept<(u32, u32)>>),
    /// Whether each series' finest level (totals, intervals) is every point.
    every_point: (bool, bool),
}

impl FramePlots {
    /// The two series (totals, intervals) of `table`'s frames.
    fn series(self, table: &FrameTable) -> (Series, Series) {
        let (total_whole, interval_whole) = self.every_point;
        let every = (total_whole || interval_whole).then(|| every_point(table));
        let (every_total, every_interval) = every.unzip();
        let every_total = every_total.filter(|_| total_whole);
        let every_interval = every_interval.filter(|_| interval_whole);
        let end_s = |i: u32| secs(table.end_ns(i));
        let total = frame_plot("total", self.total, every_total, |i| {
            (end_s(i), table.total_ns(i) as f64 / 1e3)
        });
        let interval = frame_plot("interval", self.interval, every_interval, |(before, i)| {
            let between = table.end_ns(i).saturating_sub(table.end_ns(before));
            (end_s(i), between as f64 / 1e3)
        });
        (total, interval)
    }
}

/// A frame plot's series of `n` points (`levels`, then `every` point when that is the
/// finest: the whole run's view, then the finer levels for zooming), each point of its
/// key as `point` gives it.
fn frame_plot<K: Copy>(
    label: &str,
    (n, levels): (usize, Vec<Kept<K>>),
    every: Option<Decimated>,
    point: impl Fn(K) -> (f64, f64),
) -> Series {
    let mut all = (levels.iter().map(|kept| kept.points(&point))).chain(every);
    let mut s = series(label, "µs", n, all.next().unwrap_or_default(), 2);
    s.detail = all
        .map(|d| Level {
            bucket: d.bucket,
            x: d.x,
            y: d.y.into_iter().map(|v| round(v, 2)).collect(),
        })
        .collect();
    s.finest_bucket = s.detail.last().map(|d| d.bucket);
    s
}

/// Every frame in end order (then id), the window's frames and the others alike.
fn all_by_end(table: &FrameTable) -> Vec<u32> {
    // Sized once: collected from a filter, it grew by doubling (5.8 bytes a frame at the
    // page's peak for 12M frames, not 4).
    let mut order: Vec<u32> = Vec::with_capacity(table.count());
    order.extend(table.frames());
    sort_nearly_sorted(&mut order, |i| (table.end_ns(i), table.id(i)));
    order
}

/// Whether the frames by index are already in end order (then id), as [`all_by_end`]
/// would leave them: then that order is not written out (4 bytes a frame) nor sorted.
fn indexed_by_end(table: &FrameTable) -> bool {
    let mut keys = table.frames().map(|i| (table.end_ns(i), table.id(i)));
    let Some(mut last) = keys.next() else {
        return true;
    };
    keys.all(|key| {
        let in_order = last <= key;
        last = key;
        in_order
    })
}

/// The frame-time plots of every frame by end: end-to-end totals and the intervals
/// between ends.
fn frame_plots(table: &FrameTable) -> FramePlots {
    plots_if_indexed_by_end(table).unwrap_or_else(|| {
        let order = all_by_end(table);
        plots_in_order(table, order.len(), || order.iter().copied())
    })
}

/// [`frame_plots`] where the frames by index are in end order: none else.
fn plots_if_indexed_by_end(table: &FrameTable) -> Option<FramePlots> {
    indexed_by_end(table).then(|| plots_in_order(table, table.count(), || table.frames()))
}

/// [`frame_plots`] of the `n` frames `order` gives, but a level of every point.
fn plots_in_order<I: Iterator<Item = u32>>(
    table: &FrameTable,
    n: usize,
    order: impl Fn() -> I + Sync,
) -> FramePlots {
    let sizes = |n| {
        let mut sizes = level_sizes(n, FRAME_BUCKETS, MAX_DETAIL_POINTS);
        let every_point = sizes.last() == Some(&1);
        sizes.retain(|&size| size > 1);
        (sizes, every_point)
    };
    let (total_sizes, total_whole) = sizes(n);
    let (interval_sizes, interval_whole) = sizes(n.saturating_sub(1));
    // Two passes over every frame each, apart: side by side where a second core is to be
    // had (issue 29).
    let (total, interval) = crate::parallel::join(
        || {
            let totals = order().map(|i| (i, table.total_ns(i) as f64 / 1e3));
            levels(totals, n, &total_sizes)
        },
        || {
            let mut before: Option<(u32, i64)> = None;
            let intervals = order().filter_map(move |i| {
                let end = table.end_ns(i);
                let (b, before_end) = before.replace((i, end))?;
                Some(((b, i), end.saturating_sub(before_end) as f64 / 1e3))
            });
            levels(intervals, n.saturating_sub(1), &interval_sizes)
        },
    );
    FramePlots {
        total: (n, total),
        interval: (n.saturating_sub(1), interval),
        every_point: (total_whole, interval_whole),
    }
}

/// Every frame's total and every interval, by end: a plot's finest level when the frames
/// are few enough (at most [`MAX_DETAIL_POINTS`]).
fn every_point(table: &FrameTable) -> (Decimated, Decimated) {
    if indexed_by_end(table) {
        every_point_in_order(table, table.frames())
    } else {
        every_point_in_order(table, all_by_end(table).into_iter())
    }
}

fn every_point_in_order(
    table: &FrameTable,
    order: impl Iterator<Item = u32>,
) -> (Decimated, Decimated) {
    let (mut total, mut interval) = (Decimated::default(), Decimated::default());
    (total.bucket, interval.bucket) = (1, 1);
    let mut before: Option<i64> = None;
    for i in order {
        let end = table.end_ns(i);
        total.x.push(secs(end));
        total.y.push(table.total_ns(i) as f64 / 1e3);
        if let Some(before) = before.replace(end) {
            interval.x.push(secs(end));
            interval.y.push(end.saturating_sub(before) as f64 / 1e3);
        }
    }
    (total, interval)
}

/// The frame-time plots (`plots`, from [`frame_plots`]) with the measured frames' `late`
/// ones and `stutters`.
fn frame_series(plots: (Series, Series), late: Markers, stutters: Markers) -> FrameSeries {
    let (total, interval) = plots;
    FrameSeries {
        total,
        interval,
        late,
        stutters,
    }
}

/// The markers of the measured frames (`in_window`, by end) over the budget, and of the
/// stutters among the intervals between them, written over the order (4 bytes a frame,
/// not 8 for both): a stutter's frame end is the first end plus the intervals up to it.
fn late_and_stutters(
    table: &FrameTable,
    in_window: Vec<u32>,
    budget_ns: Option<i64>,
) -> (Markers, Markers) {
    let end_s = |i: u32| secs(table.end_ns(i));
    let mut late = WorstPoints::default();
    if let Some(b) = budget_ns {
        for &i in in_window.iter().filter(|&&i| table.total_ns(i) > b) {
            late.push(end_s(i), us(table.total_ns(i) as f64));
        }
    }
    let first_end = in_window.first().map(|&i| table.end_ns(i));
    let intervals = intervals_over_order(in_window, table);
    let mut stutters = WorstPoints::default();
    if let Some(first_end) = first_end {
        with_ns!(&intervals, v => {
            // The end of frame k + 1 of the order: the first end and intervals 0..=k.
            let (mut end, mut summed) = (first_end, 0);
            for_each_stutter_at(v, |k, interval| {
                while summed <= k {
                    #[allow(clippy::useless_conversion)] // u32 and i64 alike, through `with_ns!`
                    let between: i64 = v[summed].into();
                    end = end.saturating_add(between);
                    summed += 1;
                }
                stutters.push(secs(end), us(interval as f64));
            });
        });
    }
    (late.markers(), stutters.markers())
}

/// The worst [`MAX_MARKERS`] points (largest y; of equal ones the earlier) of those pushed
/// in x order, and how many were pushed: bounded, however many frames are late.
#[derive(Default)]
struct WorstPoints {
    of: usize,
    kept: BinaryHeap<Reverse<Marked>>,
}

/// A point with its place in the order pushed.
struct Marked {
    y: f64,
    seq: usize,
    x: f64,
}

impl Ord for Marked {
    /// By y, and of equal ones the later is less (dropped first).
    fn cmp(&self, other: &Self) -> Ordering {
        (self.y.total_cmp(&other.y)).then(other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for Marked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Marked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Marked {}

impl WorstPoints {
    fn push(&mut self, x: f64, y: f64) {
        let point = Marked { y, seq: self.of, x };
        self.of += 1;
        if self.kept.len() < MAX_MARKERS {
            self.kept.push(Reverse(point));
        } else if self.kept.peek().is_some_and(|least| point > least.0) {
            self.kept.pop();
            self.kept.push(Reverse(point));
        }
    }

    /// The kept points in the order pushed (x order).
    fn markers(self) -> Markers {
        let mut kept: Vec<Marked> = self.kept.into_iter().map(|p| p.0).collect();
        kept.sort_unstable_by_key(|p| p.seq);
        Markers {
            of: self.of,
            x: kept.iter().map(|p| p.x).collect(),
            y: kept.iter().map(|p| p.y).collect(),
        }
    }
}

/// Stage ids in the report's order (`Analysis::stage_names`), with their names as shown.
fn stage_order(head: &Run, analysis: &Analysis) -> Vec<(usize, String)> {
    let id_of = |name: &str| {
        (head.stages.iter().position(|s| s == name))
            .or_else(|| name.strip_prefix("stage#")?.parse().ok())
    };
    (analysis.stage_names.iter())
        .filter_map(|name| Some((id_of(name)?, crate::display::name(name).into_owned())))
        .filter(|(id, _)| *id <= u16::MAX as usize)
        .collect()
}

/// The distribution curves, from the analysis's sorted values: each stage's durations at
/// the percentile grid, and the fps at each percentile of frames.
#[derive(Default)]
pub struct Curves {
    /// By stage id: (spans, µs at each percentile of the grid).
    stages: BTreeMap<usize, (usize, Vec<f64>)>,
    /// fps at each of [`fps_grid`]'s percentiles.
    fps: Vec<f64>,
}

impl Curves {
    fn take(&mut self, sorted: Sorted) {
        match sorted {
            Sorted::Read { .. } | Sorted::WorstFrame { .. } => {}
            Sorted::Stage(id, values) => with_ns!(values, v => self.stage(id, &v[..])),
            Sorted::Intervals(values) => with_ns!(values, v => self.intervals(&v[..])),
        }
    }

    /// Stage `id`'s durations, sorted or selected.
    fn stage<R: Ranked + ?Sized>(&mut self, id: usize, values: &R) {
        self.stages
            .insert(id, (values.count(), stage_curve(values)));
    }

    /// The intervals between the measured frames' ends, sorted or selected.
    fn intervals<R: Ranked + ?Sized>(&mut self, values: &R) {
        self.fps = fps_at_grid(values);
    }
}

/// A stage's durations at each percentile of the grid, in µs; what a selection is asked
/// ([`one_span`]) is what this reads of it.
fn stage_curve<R: Ranked + ?Sized>(values: &R) -> Vec<f64> {
    (percentile_grid().iter())
        .filter_map(|&q| percentile_ranked(values, q / 100.0))
        .map(us_exact)
        .collect()
}

/// The fps at each of [`fps_grid`]'s percentiles of frames: percentile p runs at
/// fps_p = 1e9 / Q(1 − p) ns of the intervals (p0 is the slowest).
fn fps_at_grid<R: Ranked + ?Sized>(intervals: &R) -> Vec<f64> {
    (fps_grid().iter())
        .filter_map(|&q| percentile_ranked(intervals, 1.0 - q / 100.0))
        .map(|ns| round(1e9 / ns, 2))
        .collect()
}

fn stage_curves(
    mut by_stage: BTreeMap<usize, (usize, Vec<f64>)>,
    order: &[(usize, String)],
) -> QuantileCurves {
    let series = (order.iter())
        .map(|(id, name)| {
            let (count, us) = by_stage.remove(id).unwrap_or_default();
            NamedValues {
                name: name.clone(),
                count,
                us,
            }
        })
        .collect();
    QuantileCurves {
        p: percentile_grid(),
        series,
    }
}

/// The percentiles of frames the fps curve is drawn at (the grid without its ends).
fn fps_grid() -> Vec<f64> {
    (percentile_grid().into_iter())
        .filter(|&q| q > 0.0 && q < 100.0)
        .collect()
}

/// `fps_at`: at [`fps_grid`]'s percentiles (empty without intervals).
fn fps_curve(fps_at: Vec<f64>, fps: Option<&FpsSummary>) -> Option<FpsCurve> {
    if fps_at.is_empty() {
        return None;
    }
    let named = fps
        .map(|f| {
            (FPS_LOWS.iter())
                .filter(|low| low.on_curve)
                .filter_map(|low| Some((low.name.to_owned(), round((low.read)(f)?, 2))))
                .collect()
        })
        .unwrap_or_default();
    Some(FpsCurve {
        p: fps_grid(),
        fps: fps_at,
        named,
    })
}

/// The timelines of the analysis' worst frames, each frame's start and spans (stage id,
/// thread, start, dur) as `spans_of` gives them by frame id (`None`: not drawn).
fn gantt(
    spans_of: impl Fn(u64) -> Option<(i64, Vec<WorstSpan>)>,
    head: &Run,
    analysis: &Analysis,
    order: &[(usize, String)],
) -> Vec<GanttFrame> {
    let worst: Vec<(&crate::analyze::WorstFrame, i64, Vec<WorstSpan>)> = analysis
        .worst_frames
        .iter()
        .take(GANTT_FRAMES)
        .filter_map(|w| {
            let (start, spans) = spans_of(w.frame)?;
            Some((w, start, spans))
        })
        .collect();
    let stage_names: Vec<String> = order.iter().map(|(_, n)| n.clone()).collect();
    let column_of = |stage: u16| order.iter().position(|(id, _)| *id == stage as usize);
    worst
        .into_iter()
        .map(|(w, start, mut spans)| {
            spans.sort_unstable_by_key(|s| (s.2, s.1));
            let mut thread_ids: Vec<u32> = spans.iter().map(|s| s.1).collect();
            thread_ids.sort_unstable();
            thread_ids.dedup();
            GanttFrame {
                frame: w.frame,
                t_s: round(w.t_s, 6),
                total_us: us(w.total_ns as f64),
                threads: thread_ids.iter().map(|&t| thread_label(head, t)).collect(),
                spans: spans
                    .iter()
                    .filter_map(|&(stage, thread, s, d)| {
                        let row = thread_ids.binary_search(&thread).ok()?;
                        Some((
                            column_of(stage)?,
                            row,
                            us_exact(s.saturating_sub(start) as f64),
                            us_exact(d as f64),
                        ))
                    })
                    .collect(),
                stage_names: stage_names.clone(),
            }
        })
        .collect()
}

fn thread_label(head: &Run, thread: u32) -> String {
    match head.threads.get(thread as usize) {
        Some(t) if !t.name.is_empty() => format!("{} ({})", crate::display::name(&t.name), t.tid),
        Some(t) => format!("tid {}", t.tid),
        None => format!("thread {thread}"),
    }
}

/// Gauges as read, running totals as their rate per second; bit masks are left out, and
/// per-thread readings, which the thread table shows.
fn telemetry(head: &Run) -> (Vec<Series>, usize) {
    let t = &head.telemetry;
    let mut out = Vec::new();
    let mut left_out = 0;
    let mut by_series: Vec<Vec<&crate::model::Sample>> = vec![Vec::new(); t.series.len()];
    for sample in &t.samples {
        if let Some(readings) = by_series.get_mut(sample.series as usize) {
            readings.push(sample);
        }
    }
    for (s, readings) in t.series.iter().zip(&by_series) {
        if s.source == "threads" || readings.is_empty() {
            continue;
        }
        if s.kind == SeriesKind::Bitmask || out.len() >= MAX_TELEMETRY_SERIES {
            left_out += 1;
            continue;
        }
        let label = if s.label.is_empty() || s.label == s.entity {
            format!("{} {} {}", s.source, s.metric, s.entity)
        } else {
            format!("{} {} {} ({})", s.source, s.metric, s.entity, s.label)
        };
        let label = crate::display::name(&label).into_owned();
        let (points, unit): (Vec<(f64, f64)>, String) = match s.kind {
            SeriesKind::Counter => (
                readings
                    .windows(2)
                    .filter(|w| w[1].t_ns > w[0].t_ns)
                    .map(|w| {
                        // In floating point: readings from a file can be anything.
                        let dt = (w[1].t_ns as f64 - w[0].t_ns as f64) / 1e9;
                        (
                            secs(w[1].t_ns),
                            (w[1].value as f64 - w[0].value as f64) / dt,
                        )
                    })
                    .collect(),
                format!("{}/s", s.unit),
            ),
            _ => (
                readings
                    .iter()
                    .map(|r| (secs(r.t_ns), r.value as f64))
                    .collect(),
                s.unit.clone(),
            ),
        };
        let n = points.len();
        out.push(series(
            &label,
            &unit,
            n,
            min_max(points.into_iter(), TELEMETRY_BUCKETS),
            3,
        ));
    }
    (out, left_out)
}

/// The page's data of hand-built runs: snapshots of the JSON (not the HTML, so a change of
/// layout or style does not break them), and the decimation seen through a whole page.
/// Regenerate with `UPDATE_SNAPSHOTS=1 cargo test --lib report::html` and review the diff.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::{reference_run, MS};
    use crate::model::{Bucket, Sample, SampleSeries};

    fn page_of(run: &Run) -> Document {
        let (data, analysis) = RunData::analyze(run, run).unwrap();
        data.document(&analysis)
    }

    /// What the page shows of a document, by plot.
    struct View<'a> {
        budget_us: Option<f64>,
        frames: &'a FrameSeries,
        stages: &'a QuantileCurves,
        gantt: &'a [GanttFrame],
        telemetry: &'a [Series],
        telemetry_left_out: usize,
        histograms: &'a [Histogram],
        tables: Vec<crate::render::Table>,
    }

    fn view(document: &Document) -> View<'_> {
        let plots: Vec<&Plot> = (document.blocks.iter())
            .filter_map(|b| match b {
                Block::Plot(p) => Some(p),
                _ => None,
            })
            .collect();
        let [Plot::FrameTimes(f), Plot::Stages(stages), Plot::Fps(_), Plot::Timelines(gantt), Plot::Telemetry { series, left_out }, Plot::Histograms(histograms)] =
            plots[..]
        else {
            panic!("the run page's plots, in order");
        };
        View {
            budget_us: f.budget_us,
            frames: &f.frames,
            stages,
            gantt,
            telemetry: series,
            telemetry_left_out: *left_out,
            histograms,
            tables: crate::render::html_writer::page_text(document).tables,
        }
    }

    /// The reference run with a GPU clock (a gauge), an energy counter, a bit mask and
    /// an imported histogram.
    pub(super) fn with_telemetry() -> Run {
        let mut run = reference_run();
        let series = |metric: &str, unit: &str, kind| SampleSeries {
            source: "nvml".into(),
            metric: metric.into(),
            entity: "0".into(),
            label: "Test GPU".into(),
            unit: unit.into(),
            kind,
        };
        run.telemetry.series = vec![
            series("sm_clock", "MHz", SeriesKind::Gauge),
            series("energy", "mJ", SeriesKind::Counter),
            series("throttle", "flags", SeriesKind::Bitmask),
        ];
        for k in 0..=10i64 {
            let t_ns = k * 10 * MS;
            let clock = if k == 6 { 900 } else { 1800 };
            for (series, value) in [(0, clock), (1, k * 2_000), (2, 0)] {
                run.telemetry.samples.push(Sample {
                    series,
                    t_ns,
                    value,
                });
            }
        }
        run.histograms = vec![crate::model::Histogram {
            name: "@usecs".into(),
            unit: "us".into(),
            buckets: vec![
                Bucket {
                    lo: None,
                    hi: Some(0),
                    count: 1,
                },
                Bucket {
                    lo: Some(0),
                    hi: Some(8),
                    count: 30,
                },
            ],
        }];
        run
    }

    #[test]
    fn reference_page_data() {
        let document = page_of(&with_telemetry());
        let data = crate::render::html_writer::page(&document, SCHEMA, "run");
        let json = serde_json::to_string_pretty(&data).unwrap() + "\n";
        let page = view(&document);
        crate::snapshot::check("html_reference.json", &json);
        // What the snapshot must hold, by hand: 11 frames, the two late ones marked.
        assert_eq!(page.frames.total.x.len(), 11);
        assert_eq!(page.frames.late.x, vec![0.078, 0.083]);
        assert_eq!(page.frames.late.y, vec![18_000.0, 13_000.0]);
        assert_eq!(page.budget_us, Some(10_000.0));
        assert_eq!(page.gantt[0].frame, 6);
        assert_eq!(page.gantt[0].threads, ["main (100)", "encoder (201)"]);
        // Frame 6: capture 0–1 ms on main, encode 2–17 ms on the encoder, send at 17.5.
        assert_eq!(
            page.gantt[0].spans,
            vec![
                (0, 0, 0.0, 1000.0),
                (1, 1, 2000.0, 15_000.0),
                (2, 0, 17_500.0, 500.0)
            ]
        );
        // The clock as read, the energy as mJ per second, the bit mask left out.
        assert_eq!(page.telemetry.len(), 2);
        assert_eq!(page.telemetry[0].y[6], 900.0);
        assert_eq!(page.telemetry[1].unit, "mJ/s");
        assert_eq!(page.telemetry[1].y[0], 200_000.0);
        assert_eq!(page.telemetry_left_out, 1);
        assert_eq!(page.histograms[0].buckets[1], (Some(0), Some(8), 30));
    }

    /// Stage curves and the worst frames' spans keep every nanosecond: a 1234 ns send was
    /// 1.23 µs on the page (and a 23 ns stage 0.02, 13% off the text report's figure).
    #[test]
    fn short_stages_are_drawn_to_the_nanosecond() {
        let mut run = reference_run();
        for span in run.spans.iter_mut().filter(|s| s.stage == 2) {
            span.dur_ns = 1_234;
        }
        let document = page_of(&run);
        let page = view(&document);
        let send = &page.stages.series[2];
        assert_eq!(send.name, "send");
        assert!(send.us.iter().all(|&v| v == 1.234), "{:?}", send.us);
        let frame = &page.gantt[0];
        let send_span = frame.spans.iter().find(|s| s.0 == 2).unwrap();
        assert_eq!(send_span.3, 1.234);
    }

    /// Every table of the page has a header for each cell: the worst frames' work, waits
    /// and longest wait had none. The text report's tables are all there, waits and busy
    /// time included.
    #[test]
    fn each_table_has_a_header_per_cell() {
        let document = page_of(&with_telemetry());
        let page = view(&document);
        for t in &page.tables {
            for row in &t.rows {
                assert_eq!(row.len(), t.headers.len(), "{}: {row:?}", t.title);
            }
        }
        let titles: Vec<&str> = page.tables.iter().map(|t| t.title.as_str()).collect();
        for title in [
            "Waits between stages",
            "Busy time (what bounds the rate)",
            "Worst frames",
        ] {
            assert!(titles.contains(&title), "{titles:?}");
        }
        let worst = page
            .tables
            .iter()
            .find(|t| t.title == "Worst frames")
            .unwrap();
        assert_eq!(worst.headers.last().unwrap(), "longest wait");
    }

    #[test]
    fn the_worst_frame_of_a_long_run_is_on_the_plot() {
        let mut run = reference_run();
        run.spans.clear();
        run.meta.window_start_ns = 0;
        let frames = 300_000u64;
        run.meta.window_end_ns = frames as i64 * 10 * MS;
        let worst = 123_457u64;
        for i in 0..frames {
            let dur = if i == worst {
                95 * MS
            } else {
                4 * MS + (i % 13) as i64 * 1000
            };
            run.spans.push(crate::model::Span {
                frame: i,
                stage: 0,
                thread: 0,
                start_ns: i as i64 * 10 * MS,
                dur_ns: dur,
            });
        }
        let document = page_of(&run);
        let page = view(&document);
        let total = &page.frames.total;
        assert_eq!(total.points, frames as usize);
        assert!(total.x.len() <= 2 * FRAME_BUCKETS, "{}", total.x.len());
        let at = total
            .y
            .iter()
            .position(|&y| y == 95_000.0)
            .expect("the worst frame is drawn");
        assert_eq!(total.x[at], secs(worst as i64 * 10 * MS + 95 * MS));
        // 300k frames: 75 a bucket for the whole run, a level of 5 a bucket (120k points)
        // for a zoom, and the worst frame at its own time on it as well.
        assert_eq!(total.bucket, 75);
        let buckets: Vec<(usize, usize)> = (total.detail.iter())
            .map(|l| (l.bucket, l.x.len()))
            .collect();
        assert_eq!(buckets, [(5, 120_000)]);
        let fine = &total.detail[0];
        let at = fine.y.iter().position(|&y| y == 95_000.0).expect("drawn");
        assert_eq!(
            fine.x[at],
            total.x[total.y.iter().position(|&y| y == 95_000.0).unwrap()]
        );
        assert!(fine.x.windows(2).all(|w| w[0] <= w[1]), "in time order");
        // Its late marker too, and the intervals around it keep their extremes.
        assert_eq!(page.frames.late.y, vec![95_000.0]);
        let mut ends: Vec<i64> = run.spans.iter().map(|s| s.end_ns()).collect();
        ends.sort_unstable();
        let longest = ends.windows(2).map(|w| w[1] - w[0]).max().unwrap();
        let plotted = page.frames.interval.y.iter().cloned().fold(0.0, f64::max);
        assert_eq!(plotted, longest as f64 / 1e3);
    }

    /// The frame plots, made by key in one pass (beside the analysis) with every point
    /// walked again, are the plain decimation of every point at each level: frames in end
    /// order or not, ids with gaps, one point more than a level of every point holds (the
    /// totals decimated, the intervals not).
    #[test]
    fn frame_plots_are_every_points_decimation() {
        use crate::analyze::fixtures::span;
        let run_of = |frames: u64, shape: &dyn Fn(u64) -> Option<(i64, i64)>| {
            let mut run = reference_run();
            run.spans = (0..frames)
                .filter_map(|i| shape(i).map(|(start, dur)| span(i, 0, 0, start, dur)))
                .collect();
            run
        };
        let wobble = |i: u64| 4 * MS + (i * 7919 % 13) as i64 * 1000;
        let runs = [
            // In end order, one point more than the finest level may hold.
            run_of(MAX_DETAIL_POINTS as u64 + 1, &|i| {
                Some((i as i64 * 10 * MS, wobble(i)))
            }),
            // Every 50th frame ends after the next one; ids with gaps.
            run_of(300_000, &|i| {
                let late = if i % 50 == 7 { 25 * MS } else { 0 };
                (i % 1000 != 3).then(|| (i as i64 * 10 * MS, wobble(i) + late))
            }),
            run_of(5_000, &|i| Some((i as i64 * 10 * MS, wobble(i)))),
        ];
        for run in &runs {
            let (table, _) = read_frames(run).unwrap();
            let order = all_by_end(&table);
            let ends = |w: &[u32]| (table.end_ns(w[0]), table.end_ns(w[1]));
            let totals: Vec<(f64, f64)> = (order.iter())
                .map(|&i| (secs(table.end_ns(i)), table.total_ns(i) as f64 / 1e3))
                .collect();
            let intervals: Vec<(f64, f64)> = (order.windows(2).map(ends))
                .map(|(a, b)| (secs(b), b.saturating_sub(a) as f64 / 1e3))
                .collect();
            let (total, interval) = frame_plots(&table).series(&table);
            for (series, points) in [(total, totals), (interval, intervals)] {
                let mut levels = vec![(series.bucket, series.x, series.y)];
                levels.extend(series.detail.into_iter().map(|l| (l.bucket, l.x, l.y)));
                let sizes = level_sizes(points.len(), FRAME_BUCKETS, MAX_DETAIL_POINTS);
                let expected: Vec<(usize, Vec<f64>, Vec<f64>)> = (sizes.iter())
                    .map(|&size| {
                        let kept =
                            super::levels(points.iter().map(|&p| (p, p.1)), points.len(), &[size]);
                        let d = kept[0].points(|p| p);
                        (
                            d.bucket,
                            d.x,
                            d.y.into_iter().map(|v| round(v, 2)).collect(),
                        )
                    })
                    .collect();
                assert_eq!(levels, expected, "{} points", points.len());
            }
        }
    }

    /// The whole page of `run`, from `data` analysed as `analysis`.
    pub(super) fn html_of(data: RunData, analysis: &Analysis) -> String {
        let document = data.document(analysis);
        crate::report::html::render_document(&document, SCHEMA, "run").unwrap()
    }

    /// Frames of the run [`by_thread`]: enough that one thread's spans are too many to hold
    /// while the other's come, so its two stretches are merged.
    const BY_THREAD_FRAMES: u64 = 12_000;

    /// Three stages on two threads, a late frame every 7th, written thread by thread as an
    /// import can be: two stretches in frame order, merged by the grouped read.
    pub(super) fn by_thread() -> Run {
        use crate::analyze::fixtures::span;
        let mut run = reference_run();
        run.spans.clear();
        for thread in 0..2u32 {
            for i in 0..BY_THREAD_FRAMES {
                let t = i as i64 * 10 * MS;
                let slow = if i % 7 == 3 { 9 * MS } else { 0 };
                if thread == 0 {
                    run.spans.push(span(i, 0, 0, t, MS));
                    run.spans.push(span(i, 2, 0, t + 8 * MS + slow, MS / 2));
                } else {
                    run.spans.push(span(i, 1, 1, t + 2 * MS, 5 * MS + slow));
                }
            }
        }
        run.meta.window_end_ns = BY_THREAD_FRAMES as i64 * 10 * MS;
        run.counters.clear();
        run
    }

    /// The page read without columns (several spans a frame grouped by the reads, stretches
    /// merged) is the page the columns gave, byte for byte: plots, curves, timelines and
    /// tables.
    #[test]
    fn the_page_without_columns_is_the_page_the_columns_gave() {
        use crate::analyze::compact::grouped::{FrameOrder, Grouping};
        use crate::analyze::fixtures::{crashed_run, degenerate_runs};
        // With whether the reads must give the analysis without columns.
        let mut runs = vec![(with_telemetry(), true), (by_thread(), true)];
        runs.push((crashed_run(), false));
        runs.extend(degenerate_runs().into_iter().map(|run| (run, false)));
        let run = &runs[1].0;
        let (table, _) = read_frames(run).unwrap();
        let mut order = FrameOrder::default();
        for s in &run.spans {
            order.see(table.index_of(s.frame));
        }
        let grouping = Grouping::of(&order, table.count() as u64);
        assert!(
            matches!(grouping, Some(Grouping::Merged(_))),
            "{grouping:?}"
        );
        for (run, streams_for_sure) in runs {
            let (table, spans) = read_frames(&run).unwrap();
            let shown: Shown = (&mut |_| {}, &mut |_, _| {});
            let streams = analyze_measured_with_waits(&run, &table, spans, &run, shown).unwrap();
            let (data, analysis) = RunData::analyze(&run, &run).unwrap();
            let read = html_of(data, &analysis);
            let (data, analysis) = RunData::from_columns(&run, table, &run).unwrap();
            let columns = html_of(data, &analysis);
            assert!(read == columns, "{}: the pages differ", run.meta.name);
            if streams_for_sure {
                assert!(streams.is_some(), "{}: read with columns", run.meta.name);
            }
        }
    }

    #[test]
    fn hostile_names_stay_whole_in_the_data_and_harmless_in_the_page() {
        let mut run = reference_run();
        run.stages[0] = "</script><script>alert(1)</script>".into();
        run.meta.command = vec!["<img src=x onerror=alert(1)>".into()];
        run.meta.name = "\u{2028}<!--".into();
        let (html, _) = crate::report::html::run_html(&run, &run).unwrap();
        assert!(!html.contains("<script>alert(1)"));
        assert!(!html.contains("<img src=x"));
        // Exactly the page's three script elements close.
        assert_eq!(html.matches("</script>").count(), 3, "{html}");
        let start = html.find("id=\"framelab-data\">").unwrap() + "id=\"framelab-data\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        assert!(!html[start..end].contains(['<', '>', '&', '\u{2028}']));
        let data: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
        assert_eq!(
            data["stages"]["series"][0]["name"],
            "</script><script>alert(1)</script>"
        );
        assert_eq!(data["facts"][0][1], "'<img src=x onerror=alert(1)>'");
    }
}
