//! A run's histograms from reads of its spans, none of them held: power-of-two buckets
//! counted as the spans pass, or the values the linear layout's statistics need; which
//! spans are of measured frames is told by the run's shape where it has one span a frame,
//! else by the frame table (a 10M-span run: 1 MiB at the peak, and 54 MiB with five stages,
//! where the spans held as columns took 226 MiB).

use super::layout::{self, LinearSpec};
use super::{
    chart_of, drawn_of, figures, imported_names, log2_chart, span_drawn, thread_key, HistOptions,
};
use crate::analyze::compact::frameless::by_end::for_each_frame_by_end;
use crate::analyze::compact::frameless::measured::MeasuredSpans;
use crate::analyze::compact::streamed::SpanReader;
use crate::analyze::compact::table::FrameTable;
use crate::analyze::compact::values::{with_ns, NsValues};
use crate::analyze::compact::window::{end_order, measure_with, MeasuredFrames};
use crate::analyze::compact::{intervals_in_order, read_frames, values_in_order};
use crate::analyze::frames::NO_FRAME;
use crate::model::{Run, Span, SpanSource};
use crate::render::document::BarChart;

/// A series as [`collect_from`] keeps it.
pub struct CompactSeries {
    pub name: String,
    pub tally: Tally,
}

/// A series' spans as the layout drawn needs them: every value (u32 where they fit) for
/// the linear layout's statistics; else only the power-of-two buckets of whole µs, counted
/// as the spans are read.
pub enum Tally {
    Values(NsValues),
    Log2(Box<layout::Log2Counts>),
}

impl Tally {
    pub fn is_empty(&self) -> bool {
        match self {
            Tally::Values(values) => values.is_empty(),
            Tally::Log2(counts) => counts.is_empty(),
        }
    }

    /// The series' chart: power-of-two buckets, with the figures `thresholds` ask for read
    /// from them; or the linear layout.
    pub fn chart(
        &self,
        name: &str,
        linear: Option<&LinearSpec>,
        thresholds: Option<&figures::Thresholds>,
    ) -> BarChart {
        match self {
            Tally::Values(values) => with_ns!(values, v => chart_of(name, v, linear, thresholds)),
            Tally::Log2(counts) => log2_chart(drawn_of(name, counts.buckets()), thresholds),
        }
    }

    pub fn drawn(&self, name: &str) -> figures::Drawn {
        match self {
            Tally::Values(values) => with_ns!(values, v => span_drawn(name, v)),
            Tally::Log2(counts) => drawn_of(name, counts.buckets()),
        }
    }
}

/// Adds whole µs of a span's duration in ns to power-of-two buckets, as [`span_drawn`] does.
fn add_us(counts: &mut layout::Log2Counts, ns: i64) {
    counts.add(ns.div_euclid(1000));
}

/// Which spans are of measured frames, told as a read passes them: with one span a frame
/// and ids counting up, from the run's shape (nothing held by frame); else from the frame
/// table's window.
enum MeasuredReads<'a> {
    Frameless(MeasuredSpans, &'a dyn SpanSource),
    Table(FrameTable, MeasuredFrames, &'a dyn SpanSource),
}

impl<'a> MeasuredReads<'a> {
    /// `frameless`: whether the caller can do without the frame table.
    fn read(
        head: &Run,
        source: &'a dyn SpanSource,
        frameless: bool,
    ) -> anyhow::Result<MeasuredReads<'a>> {
        if frameless {
            if let Some(measured) = MeasuredSpans::read_checked(head, source)? {
                return Ok(MeasuredReads::Frameless(measured, source));
            }
        }
        let (table, measured) = frame_table(head, source)?;
        Ok(MeasuredReads::Table(table, measured, source))
    }

    /// Every span of a measured frame, in the run's order.
    fn each(&self, visit: &mut dyn FnMut(&Span)) -> anyhow::Result<()> {
        match self {
            MeasuredReads::Frameless(measured, source) => measured_spans(measured, *source, visit),
            MeasuredReads::Table(table, measured, source) => {
                SpanReader::new(table, *source).each(&mut |s, frame| {
                    if frame != NO_FRAME && measured.in_window.get(frame) {
                        visit(s);
                    }
                })
            }
        }
    }
}

/// Every span of a measured frame of a run of one span a frame, in the run's order.
fn measured_spans(
    measured: &MeasuredSpans,
    source: &dyn SpanSource,
    visit: &mut dyn FnMut(&Span),
) -> anyhow::Result<()> {
    source.for_each_spans(&mut |chunk| {
        chunk
            .iter()
            .filter(|s| measured.is_measured(s))
            .for_each(&mut *visit);
        Ok(())
    })
}

/// What `--stage` asks for, checked against the run's stages.
enum Wanted {
    Total,
    Interval,
    /// Stage ids, in the order drawn.
    Stages(Vec<usize>),
}

/// The frames read first, and which of them are measured.
fn frame_table(
    head: &Run,
    source: &dyn SpanSource,
) -> anyhow::Result<(FrameTable, MeasuredFrames)> {
    let (table, _) = read_frames(source)?;
    let (_, measured) = measure_with(&table, &head.meta, &mut |visit| {
        SpanReader::new(&table, source).each(&mut |s, frame| visit(frame, s.stage))
    })?;
    Ok((table, measured))
}

/// The measured frames' totals (`total`) or the intervals between their ends, counted
/// (`counted`) or as values; counted without a frame table where the run has one span a
/// frame ([`frameless_counts`]).
fn frames_tally(
    head: &Run,
    source: &dyn SpanSource,
    total: bool,
    counted: bool,
) -> anyhow::Result<Tally> {
    if counted {
        if let Some(measured) = MeasuredSpans::read_checked(head, source)? {
            if let Some(counts) = frameless_counts(source, &measured, total)? {
                return Ok(Tally::Log2(Box::new(counts)));
            }
        }
    }
    let (table, measured) = frame_table(head, source)?;
    if !counted {
        let order = end_order(&table, &measured);
        return Ok(Tally::Values(if total {
            values_in_order(&order, |i| table.total_ns(i))
        } else {
            intervals_in_order(&order, &table)
        }));
    }
    // Counted from the table: no values held, and totals in no order.
    let mut counts = layout::Log2Counts::default();
    if total {
        (measured.in_window.ones()).for_each(|i| add_us(&mut counts, table.total_ns(i)));
    } else {
        let order = end_order(&table, &measured);
        for w in order.windows(2) {
            add_us(
                &mut counts,
                table.end_ns(w[1]).saturating_sub(table.end_ns(w[0])),
            );
        }
    }
    Ok(Tally::Log2(Box::new(counts)))
}

/// [`frames_tally`]'s counts of a run of one span a frame: a frame's total is its span's
/// duration; the ends come in order from one read and a small reordering buffer (`None`
/// when they come too far out of order for it).
fn frameless_counts(
    source: &dyn SpanSource,
    measured: &MeasuredSpans,
    total: bool,
) -> anyhow::Result<Option<layout::Log2Counts>> {
    let mut counts = layout::Log2Counts::default();
    if total {
        measured_spans(measured, source, &mut |s| add_us(&mut counts, s.dur_ns))?;
        return Ok(Some(counts));
    }
    let mut last_end = None;
    let in_order = for_each_frame_by_end(source, &mut |end_ns, _, id| {
        if measured.is_measured_frame(end_ns, id) {
            if let Some(last) = last_end {
                add_us(&mut counts, end_ns.saturating_sub(last));
            }
            last_end = Some(end_ns);
        }
    })?;
    Ok(in_order.then_some(counts))
}

/// [`super::collect`] for any mode but `--pair`, from reads of `source`.
pub fn collect_from(
    head: &Run,
    source: &dyn SpanSource,
    opts: &HistOptions,
) -> anyhow::Result<Vec<CompactSeries>> {
    let no_by = |name: &str| -> anyhow::Result<()> {
        if opts.by.is_some() {
            anyhow::bail!("--by splits stages by thread or process; `{name}` spans threads, so it has no --by");
        }
        Ok(())
    };
    let wanted = match opts.stage.as_deref() {
        Some("total") if !head.stages.iter().any(|s| s == "total") => {
            no_by("total")?;
            Wanted::Total
        }
        Some("interval") if !head.stages.iter().any(|s| s == "interval") => {
            no_by("interval")?;
            Wanted::Interval
        }
        Some(stage) => match head.stages.iter().position(|s| s == stage) {
            Some(id) => Wanted::Stages(vec![id]),
            None => anyhow::bail!(
                "the run has no stage {stage:?}; it has {}, total and interval{}",
                if head.stages.is_empty() {
                    "none".to_string()
                } else {
                    head.stages.join(", ")
                },
                imported_names(head)
            ),
        },
        None => Wanted::Stages((0..head.stages.len()).collect()),
    };
    // Nothing of the spans is held but what is drawn: power-of-two buckets counted as
    // they are read, or the values the linear layout's statistics need (a 10M-span run:
    // 226 MiB at the peak when its spans were held as columns).
    let counted = opts.linear.is_none();
    let stages = match wanted {
        Wanted::Total | Wanted::Interval => {
            let total = matches!(wanted, Wanted::Total);
            return Ok(vec![CompactSeries {
                name: if total { "@total" } else { "@interval" }.to_owned(),
                tally: frames_tally(head, source, total, counted)?,
            }]);
        }
        Wanted::Stages(stages) => stages,
    };

    // Series (stage, group) in the order drawn: stages as asked, groups by key.
    let keys: Vec<Option<String>> = (0..head.threads.len() as u32)
        .map(|t| thread_key(head, t, opts.by))
        .collect();
    let mut key_order: Vec<&Option<String>> = keys.iter().collect();
    key_order.sort();
    key_order.dedup();
    let group_of_thread: Vec<usize> = (keys.iter())
        .map(|k| key_order.binary_search(&k).unwrap_or(0))
        .collect();
    let groups = key_order.len().max(1);
    let mut slot_of_stage = vec![usize::MAX; u16::MAX as usize + 1];
    for (k, &stage) in stages.iter().enumerate() {
        slot_of_stage[stage] = k * groups;
    }
    let series_of = |s: &Span| -> Option<usize> {
        let base = slot_of_stage[s.stage as usize];
        let group = match opts.by {
            Some(_) => group_of_thread.get(s.thread as usize).copied().unwrap_or(0),
            None => 0,
        };
        (base != usize::MAX).then_some(base + group)
    };
    let reads = MeasuredReads::read(head, source, true)?;
    let slots = stages.len() * groups;
    let tallies: Vec<Tally> = if counted {
        let mut counts = vec![layout::Log2Counts::default(); slots];
        reads.each(&mut |s| {
            if let Some(k) = series_of(s) {
                add_us(&mut counts[k], s.dur_ns);
            }
        })?;
        counts
            .into_iter()
            .map(|c| Tally::Log2(Box::new(c)))
            .collect()
    } else {
        // Sized first, so each holds its values at the width they need.
        let (mut count, mut max) = (vec![0usize; slots], vec![0i64; slots]);
        reads.each(&mut |s| {
            if let Some(k) = series_of(s) {
                count[k] += 1;
                max[k] = max[k].max(s.dur_ns);
            }
        })?;
        let mut values: Vec<NsValues> = (count.iter().zip(&max))
            .map(|(&n, &m)| NsValues::for_range(0, m, n))
            .collect();
        reads.each(&mut |s| {
            if let Some(k) = series_of(s) {
                values[k].push(s.dur_ns);
            }
        })?;
        values.into_iter().map(Tally::Values).collect()
    };
    let mut series = Vec::new();
    for (k, tally) in tallies.into_iter().enumerate() {
        if tally.is_empty() {
            continue;
        }
        let stage = &head.stages[stages[k / groups]];
        series.push(CompactSeries {
            name: match key_order.get(k % groups) {
                Some(Some(key)) => format!("@{stage}[{key}]"),
                _ => format!("@{stage}"),
            },
            tally,
        });
    }
    Ok(series)
}
