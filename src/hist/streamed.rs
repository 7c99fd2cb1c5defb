//! A run's histograms from reads of its spans, none of them held: power-of-two buckets
//! counted as the spans pass, or the linear layout's figures from a few reads; which
//! spans are of measured frames is told by the run's shape where it has one span a frame,
//! else by the frame table (a 10M-span run: 1 MiB at the peak, and 54 MiB with five stages,
//! where the spans held as columns took 226 MiB).

use super::layout::{self, LinearSpec};
use super::passes::{self, LinearFigures};
use super::{drawn_of, figures, linear_chart, log2_chart, thread_key, HistOptions};
use crate::analyze::compact::frameless::by_end::for_each_frame_by_end;
use crate::analyze::compact::frameless::measured::MeasuredSpans;
use crate::analyze::compact::read_frames;
use crate::analyze::compact::streamed::SpanReader;
use crate::analyze::compact::table::FrameTable;
use crate::analyze::compact::window::{end_order, measure_with, MeasuredFrames};
use crate::analyze::frames::NO_FRAME;
use crate::model::{Run, Span, SpanSource};
use crate::render::document::BarChart;

/// A series as [`collect_from`] keeps it.
pub struct CompactSeries {
    pub name: String,
    pub tally: Tally,
}

/// A series' spans as the layout drawn needs them, counted as they are read: the
/// power-of-two buckets of whole µs, or the linear layout's figures (from a few reads).
pub enum Tally {
    Linear(Option<Box<LinearFigures>>, LinearSpec),
    Log2(Box<layout::Log2Counts>),
}

impl Tally {
    pub fn is_empty(&self) -> bool {
        match self {
            Tally::Linear(figures, _) => figures.is_none(),
            Tally::Log2(counts) => counts.is_empty(),
        }
    }

    /// The series' chart: power-of-two buckets, with the figures `thresholds` ask for read
    /// from them; or the linear layout.
    pub fn chart(&self, name: &str, thresholds: Option<&figures::Thresholds>) -> BarChart {
        match self {
            Tally::Linear(figures, spec) => linear_chart(name, figures.as_deref(), spec),
            Tally::Log2(counts) => log2_chart(drawn_of(name, counts.buckets()), thresholds),
        }
    }

    /// Its power-of-two buckets (`None` for the linear layout, which JSON does not show).
    pub fn drawn(&self, name: &str) -> Option<figures::Drawn> {
        match self {
            Tally::Linear(..) => None,
            Tally::Log2(counts) => Some(drawn_of(name, counts.buckets())),
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

/// The measured frames' totals (`total`) or the intervals between their ends, in the
/// layout `linear` asks for; read without a frame table where the run has one span a frame
/// and its ends come in order enough ([`frameless_read`]).
fn frames_tally(
    head: &Run,
    source: &dyn SpanSource,
    total: bool,
    linear: Option<&LinearSpec>,
) -> anyhow::Result<Tally> {
    if let Some(measured) = MeasuredSpans::read_checked(head, source)? {
        let read =
            &mut |visit: &mut dyn FnMut(i64)| frameless_read(source, &measured, total, visit);
        if let Some(tally) = tally_reads(linear, read)? {
            return Ok(tally);
        }
    }
    let (table, measured) = frame_table(head, source)?;
    let order = end_order(&table, &measured);
    let read = &mut |visit: &mut dyn FnMut(i64)| {
        if total {
            order.iter().for_each(|&i| visit(table.total_ns(i)));
        } else {
            for w in order.windows(2) {
                visit(table.end_ns(w[1]).saturating_sub(table.end_ns(w[0])));
            }
        }
        Ok(true)
    };
    let tally = tally_reads(linear, read)?;
    tally.ok_or_else(|| anyhow::anyhow!("the frame table's ends were read out of order"))
}

/// One read of a series' values: calls its visitor with each; `false` when it could not
/// give them all.
type ValuesRead<'a> = dyn FnMut(&mut dyn FnMut(i64)) -> anyhow::Result<bool> + 'a;

/// The values `read` gives (as often as the layout needs), counted as `linear` asks;
/// `None` when a read says it could not give them (`false`).
fn tally_reads(
    linear: Option<&LinearSpec>,
    read: &mut ValuesRead,
) -> anyhow::Result<Option<Tally>> {
    let Some(spec) = linear else {
        let mut counts = layout::Log2Counts::default();
        let done = read(&mut |ns| add_us(&mut counts, ns))?;
        return Ok(done.then(|| Tally::Log2(Box::new(counts))));
    };
    let mut refused = false;
    let figures = passes::read_linear(1, spec, &mut |visit| {
        refused = !read(&mut |ns| visit(0, ns))?;
        match refused {
            true => anyhow::bail!("read refused"),
            false => Ok(()),
        }
    });
    match (figures, refused) {
        (_, true) => Ok(None),
        (figures, false) => Ok(Some(Tally::Linear(
            figures?.pop().flatten().map(Box::new),
            *spec,
        ))),
    }
}

/// One read of [`frames_tally`]'s values from a run of one span a frame: a frame's total
/// is its span's duration; the ends come in order from one read and a small reordering
/// buffer (`false` when they come too far out of order for it).
fn frameless_read(
    source: &dyn SpanSource,
    measured: &MeasuredSpans,
    total: bool,
    visit: &mut dyn FnMut(i64),
) -> anyhow::Result<bool> {
    if total {
        measured_spans(measured, source, &mut |s| visit(s.dur_ns))?;
        return Ok(true);
    }
    let mut last_end = None;
    for_each_frame_by_end(source, &mut |end_ns, _, id| {
        if measured.is_measured_frame(end_ns, id) {
            if let Some(last) = last_end {
                visit(end_ns.saturating_sub(last));
            }
            last_end = Some(end_ns);
        }
    })
}

/// [`super::collect`] for any mode but `--pair`, from reads of `source`.
pub fn collect_from(
    head: &Run,
    source: &dyn SpanSource,
    opts: &HistOptions,
) -> anyhow::Result<Vec<CompactSeries>> {
    let wanted = match opts.stage.as_deref() {
        Some(name) => match super::named_stage(head, name, opts.by)? {
            super::Named::Total => Wanted::Total,
            super::Named::Interval => Wanted::Interval,
            super::Named::Stage(id) => Wanted::Stages(vec![id]),
        },
        None => Wanted::Stages((0..head.stages.len()).collect()),
    };
    // Nothing of the spans is held but what is drawn: power-of-two buckets counted as
    // they are read, or the linear layout's figures from a few reads (a 10M-span run:
    // 226 MiB at the peak when its spans were held as columns).
    let stages = match wanted {
        Wanted::Total | Wanted::Interval => {
            let total = matches!(wanted, Wanted::Total);
            return Ok(vec![CompactSeries {
                name: if total { "@total" } else { "@interval" }.to_owned(),
                tally: frames_tally(head, source, total, opts.linear.as_ref())?,
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
    let tallies: Vec<Tally> = match &opts.linear {
        None => {
            let mut counts = vec![layout::Log2Counts::default(); slots];
            reads.each(&mut |s| {
                if let Some(k) = series_of(s) {
                    add_us(&mut counts[k], s.dur_ns);
                }
            })?;
            (counts.into_iter())
                .map(|c| Tally::Log2(Box::new(c)))
                .collect()
        }
        Some(spec) => {
            let figures = passes::read_linear(slots, spec, &mut |visit| {
                reads.each(&mut |s| {
                    if let Some(k) = series_of(s) {
                        visit(k, s.dur_ns);
                    }
                })
            })?;
            (figures.into_iter())
                .map(|f| Tally::Linear(f.map(Box::new), *spec))
                .collect()
        }
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
