//! The analysis of a run without columns: the spans are read again for each thing they
//! give (the measured stages' counts and each thread's busy time, then each stage's
//! durations, and with several spans a frame their waits) and nothing of them is held but
//! what is being computed. A read costs ~6 ns a span (docs/run-file.md); the columns held
//! 15 to 18 bytes a span (issue 29: report ≤ 150 MB whatever the run's length; issue 31:
//! no subcommand over twice the run file).
//!
//! The numbers are those of the columns' analysis (`compact::tests` compares them): each
//! read sees the spans in the order the columns hold them, and with several spans a frame
//! the waits are taken from the frames as a read groups them (`grouped`: frames nearly in
//! order, or a few stretches in order merged); a thread's spans that come out of start
//! order (a span wrapping others is recorded after them) are set aside and merged into its
//! busy time by one more read. Where too many do, or the frames come in no order a read can
//! group, the caller reads the columns instead ([`super::column_fallbacks`] counts it).

use super::grouped::{for_each_frame, FrameOrder, GroupedSpan, Grouping};
use super::table::FrameTable;
use super::values::{NsValues, SORTS_AT_ONCE};
use super::window::{measure_with, Bits, MeasuredFrames};
use super::{frame_facts, pick_worst, stage_order, stage_rows, Sorted, SpanParts, StageCounts};
use crate::analyze::frames::{out_of_range, NO_FRAME};
use crate::analyze::pipeline::by_frame::{FrameSweep, FramesWaits};
use crate::analyze::pipeline::resources::{Busy, BusySweep, Clipped, ThreadBusy};
use crate::analyze::pipeline::{
    summarize_single_spans, summarize_swept, Names, PipelineInput, SpanRow,
};
use crate::analyze::sched::SplitOf;
use crate::analyze::stages::WORST_FRAMES;
use crate::analyze::summary::assemble;
use crate::analyze::Analysis;
use crate::model::{Run, Span, SpanSource};

/// Whether each usable span of the run is its frame's only one (`spans` read in all):
/// then no frame has waits, and a span's frame is the only thing that ties it to others.
pub fn one_span_a_frame(table: &FrameTable, spans: usize) -> bool {
    (spans as u64).checked_sub(table.negative_spans) == Some(table.count() as u64)
}

/// The analysis of `head`'s run, whose frames `table` holds (`spans` read in all), from
/// reads of `source`; the table is dropped before the scheduler's split, which reads the
/// spans once more. `None` when a thread's spans did not come in start order, or the
/// frames of a run with several spans a frame came in no order a read can group.
pub fn analyze(
    head: &Run,
    table: FrameTable,
    spans: usize,
    source: &(dyn SpanSource + Sync),
    sorted: &mut dyn FnMut(Sorted),
) -> anyhow::Result<Option<Analysis>> {
    let Some(mut analysis) = analyze_unsplit(head, table, spans, source, sorted, &mut |_| {})?
    else {
        return Ok(None);
    };
    crate::analyze::sched::apply(&mut analysis, head, source)?;
    Ok(Some(analysis))
}

/// [`analyze`] without the scheduler's split, which the caller applies (`analyze_from`
/// splits the spans beside this): `tell` is told what the split needs of the analysis once
/// its reads have found the window, the stages and the worst frames.
pub fn analyze_unsplit(
    head: &Run,
    table: FrameTable,
    spans: usize,
    source: &(dyn SpanSource + Sync),
    sorted: &mut dyn FnMut(Sorted),
    tell: &mut dyn FnMut(SplitOf),
) -> anyhow::Result<Option<Analysis>> {
    let reads = Reads {
        source,
        shared: Some(source),
    };
    let shown: Shown = (sorted, &mut |_, _| {});
    let Some((facts, _)) = facts(head, &table, spans, reads, shown, tell)? else {
        return Ok(None);
    };
    drop(table);
    Ok(Some(assemble(head, facts)))
}

/// [`analyze`] with the table kept by the caller, and the frames it measured. Without
/// threads to read with (`source` is not `Sync`), a run whose frames need the stretches of
/// a file written thread by thread merged gives `None`.
pub fn analyze_measured(
    head: &Run,
    table: &FrameTable,
    spans: usize,
    source: &dyn SpanSource,
    sorted: &mut dyn FnMut(Sorted),
) -> anyhow::Result<Option<(Analysis, MeasuredFrames)>> {
    let reads = Reads {
        source,
        shared: None,
    };
    let shown: Shown = (sorted, &mut |_, _| {});
    let unsplit = measured_unsplit(head, table, spans, reads, shown, &mut |_| {})?;
    let Some((mut analysis, measured)) = unsplit else {
        return Ok(None);
    };
    crate::analyze::sched::apply(&mut analysis, head, source)?;
    Ok(Some((analysis, measured)))
}

/// [`analyze_measured`], `waits` shown each wait pair's name and its waits over the
/// measured frames, sorted (what `pipeline::wait_values` gives a loaded run).
pub fn analyze_measured_with_waits(
    head: &Run,
    table: &FrameTable,
    spans: usize,
    source: &(dyn SpanSource + Sync),
    shown: Shown,
) -> anyhow::Result<Option<(Analysis, MeasuredFrames)>> {
    let reads = Reads {
        source,
        shared: Some(source),
    };
    // The scheduler split's first read needs nothing of the analysis: beside it. Not the
    // split's main read beside the durations' and waits' reads (as `analyze_from` has it):
    // on the page of 10M spans of one a frame that held 6 MB more at the peak, over the
    // 150 MB of issue 29 (BENCHMARKS.md, "The report's reads on several threads").
    let (unsplit, prepared) = crate::parallel::join(
        || measured_unsplit(head, table, spans, reads, shown, &mut |_| {}),
        || crate::analyze::sched::prepare(head, source),
    );
    let Some((mut analysis, measured)) = unsplit? else {
        return Ok(None);
    };
    crate::analyze::sched::apply_prepared(&mut analysis, head, prepared?, source)?;
    Ok(Some((analysis, measured)))
}

fn measured_unsplit(
    head: &Run,
    table: &FrameTable,
    spans: usize,
    reads: Reads,
    shown: Shown,
    tell: &mut dyn FnMut(SplitOf),
) -> anyhow::Result<Option<(Analysis, MeasuredFrames)>> {
    let Some((facts, measured)) = facts(head, table, spans, reads, shown, tell)? else {
        return Ok(None);
    };
    Ok(Some((assemble(head, facts), measured)))
}

/// Where the spans are read from: `shared` is the same source where threads may read it
/// (the merge of a file written thread by thread reads on threads of its own).
#[derive(Clone, Copy)]
struct Reads<'a> {
    source: &'a dyn SpanSource,
    shared: Option<&'a (dyn SpanSource + Sync)>,
}

type Facts = (crate::analyze::summary::SpanFacts, MeasuredFrames);

/// Where the analysis shows what it sorted: the stages' durations and the intervals, and
/// each wait pair's waits.
pub type Shown<'a> = (
    &'a mut dyn FnMut(Sorted),
    &'a mut dyn FnMut(&str, &NsValues),
);

fn facts(
    head: &Run,
    table: &FrameTable,
    spans: usize,
    reads: Reads,
    (sorted, waits): Shown,
    tell: &mut dyn FnMut(SplitOf),
) -> anyhow::Result<Option<Facts>> {
    let source = reads.source;
    let reader = SpanReader {
        table,
        source,
        shared: reads.shared,
    };
    let (window, measured) = measure_with(table, &head.meta, &mut |visit| {
        reader.each(&mut |s, frame| visit(frame, s.stage))
    })?;
    let worst = pick_worst(table, &measured, WORST_FRAMES);
    let names = Names {
        stages: &head.stages,
        threads: &head.threads,
    };
    let window_ns = (window.start_ns, window.end_ns);
    let mut frame_order = FrameOrder::default();
    let read = counts_and_busy(&reader, &measured, window_ns, &names, &mut frame_order)?;
    let Some((counts, busy)) = read else {
        return Ok(None);
    };
    let measured_spans: usize = counts.count.iter().sum();
    let input = PipelineInput {
        names,
        window: window_ns,
        frame_slots: table.slots(),
        measured_frames: measured.count,
        multi_span: measured_spans as u64 > measured.count,
        worst: &worst,
    };
    let order = stage_order(&counts);
    // The window, the stages and the worst frames are known: the scheduler's split may
    // read the spans beside the reads below.
    tell(SplitOf {
        window: window_ns,
        stage_count: order.len().max(head.stages.len()),
        worst: worst.iter().map(|&f| table.id(f)).collect(),
        find_worst: false,
        open: Vec::new(),
    });
    let (pipeline, done) = if input.multi_span {
        // The waits need each frame's spans side by side: read grouped by frame.
        let Some(grouping) = Grouping::of(&frame_order, measured.count) else {
            return Ok(None);
        };
        let read = (&reader, &measured, &grouping);
        let Some((done, swept)) = grouped_durations(read, &counts, &order, &worst, sorted)? else {
            return Ok(None);
        };
        (summarize_swept(&input, busy, swept, waits), done)
    } else {
        let done = stage_durations(&reader, &measured, &counts, &order, &worst, sorted)?;
        (summarize_single_spans(&input, busy), done)
    };
    // One span a frame of one stage: its durations are the measured frames' totals,
    // already sorted.
    let total = match done.as_slice() {
        [(durations, _)] if !input.multi_span => Some(durations.dist_of_sorted()),
        _ => None,
    };
    let stage_table = stage_rows(&order, &head.stages, done, (table, &worst), sorted);
    let parts = SpanParts {
        window,
        measured,
        spans: spans as u64,
        worst,
        pipeline,
        stage_table,
        total,
    };
    let measured = parts.measured.clone();
    let facts = frame_facts(head, table, parts, source, sorted)?;
    Ok(Some((facts, measured)))
}

/// Reads of the spans with each one's frame index, as the columns would hold it.
pub struct SpanReader<'a> {
    table: &'a FrameTable,
    source: &'a dyn SpanSource,
    shared: Option<&'a (dyn SpanSource + Sync)>,
}

impl<'a> SpanReader<'a> {
    /// Reads of `source`, whose frames `table` holds.
    pub fn new(table: &'a FrameTable, source: &'a dyn SpanSource) -> SpanReader<'a> {
        SpanReader {
            table,
            source,
            shared: None,
        }
    }

    /// Every span in the run's order with its frame's index (NO_FRAME for a duration out of
    /// range); an error when a span's frame is not in the table (the run changed).
    pub fn each(&self, visit: &mut dyn FnMut(&Span, u32)) -> anyhow::Result<()> {
        let mut unknown = 0u64;
        self.source.for_each_spans(&mut |chunk| {
            for s in chunk {
                let frame = if out_of_range(s.start_ns, s.dur_ns) {
                    NO_FRAME
                } else {
                    self.table.index_of(s.frame).unwrap_or_else(|| {
                        unknown += 1;
                        NO_FRAME
                    })
                };
                visit(s, frame);
            }
            Ok(())
        })?;
        if unknown > 0 {
            return Err(super::columns::changed_between_reads(unknown));
        }
        Ok(())
    }
}

/// `count_stages` and the busy time by thread (`pipeline::summarize`'s) from one read, and
/// how the measured spans' frames come (`frame_order`); a second read where some thread's
/// spans came out of start order (those set aside merged in); `None` when too many did.
fn counts_and_busy(
    reader: &SpanReader,
    measured: &MeasuredFrames,
    window: (i64, i64),
    names: &Names,
    frame_order: &mut FrameOrder,
) -> anyhow::Result<Option<(StageCounts, Option<Vec<ThreadBusy>>)>> {
    let stages = u16::MAX as usize + 1;
    let mut c = StageCounts {
        count: vec![0; stages],
        max_dur: vec![0; stages],
        first_start: vec![i64::MAX; stages],
    };
    let with_threads = crate::analyze::pipeline::has_thread_info(names.threads);
    let mut busy = BusySweep::new(most_late(reader.source.span_count_hint()));
    reader.each(&mut |s, frame| {
        let is_measured = frame != NO_FRAME && measured.in_window.get(frame);
        frame_order.see(is_measured.then_some(frame));
        if is_measured {
            let st = s.stage as usize;
            c.count[st] += 1;
            c.max_dur[st] = c.max_dur[st].max(s.dur_ns);
            c.first_start[st] = c.first_start[st].min(s.start_ns);
        }
        if let Some(clipped) = clipped(s, window).filter(|_| with_threads) {
            busy.add(clipped);
        }
    })?;
    if !with_threads {
        return Ok(Some((c, None)));
    }
    let busy = match busy.finish_late() {
        Busy::Done(busy) => busy,
        Busy::TooLate => return Ok(None),
        Busy::Late(mut late) => {
            reader.each(&mut |s, _| {
                if let Some(clipped) = clipped(s, window) {
                    late.add(clipped);
                }
            })?;
            late.finish()
        }
    };
    Ok(Some((c, Some(busy))))
}

/// Spans a thread's busy time sets aside, at most, for `spans` spans (24 bytes each):
/// beyond, sorting them takes the columns.
fn most_late(spans: usize) -> usize {
    (spans / 16).max(1 << 16)
}

/// `s`'s time inside `window`, as `pipeline::summarize` clips it; `None` when none.
fn clipped(s: &Span, (from, to): (i64, i64)) -> Option<Clipped> {
    let clipped = Clipped {
        thread: s.thread,
        stage: s.stage,
        from: s.start_ns.max(from),
        to: s.start_ns.saturating_add(s.dur_ns).min(to),
    };
    (s.dur_ns >= 0 && clipped.from < clipped.to).then_some(clipped)
}

/// A stage's durations, and its span in each of the worst frames (`None` where it had none).
type StageColumn = (NsValues, Vec<Option<i64>>);

/// Each stage's durations in measured frames (stages in `order`), sorted, and its sums in
/// the worst frames, from one read; the stages sorted a few at once. The worst frames'
/// spans are shown to `sorted` as they pass.
fn stage_durations(
    reader: &SpanReader,
    measured: &MeasuredFrames,
    counts: &StageCounts,
    order: &[usize],
    worst: &[u32],
    sorted: &mut dyn FnMut(Sorted),
) -> anyhow::Result<Vec<StageColumn>> {
    let mut column = vec![usize::MAX; counts.count.len()];
    for (c, &s) in order.iter().enumerate() {
        column[s] = c;
    }
    let mut is_worst = Bits::new(reader.table.slots());
    for &f in worst {
        is_worst.set(f);
    }
    let mut done: Vec<StageColumn> = (order.iter())
        .map(|&s| {
            let values = NsValues::for_range(0, counts.max_dur[s], counts.count[s]);
            (values, vec![None; worst.len()])
        })
        .collect();
    reader.each(&mut |s, frame| {
        if frame == NO_FRAME || !measured.in_window.get(frame) {
            return;
        }
        let (durations, worst_ns) = &mut done[column[s.stage as usize]];
        durations.push(s.dur_ns);
        if let Some(rank) = worst_rank(&is_worst, worst, frame) {
            worst_ns[rank] = Some(worst_ns[rank].unwrap_or(0).saturating_add(s.dur_ns));
            let span = GroupedSpan {
                frame,
                thread: s.thread,
                stage: s.stage,
                start_ns: s.start_ns,
                dur_ns: s.dur_ns,
            };
            let spans = std::slice::from_ref(&span);
            sorted(Sorted::WorstFrame { rank, frame, spans });
        }
    })?;
    Ok(crate::parallel::map(done, SORTS_AT_ONCE, |(mut d, w)| {
        d.sort();
        (d, w)
    }))
}

/// Each stage's durations in measured frames, sorted, and its sums in the worst frames (as
/// [`stage_durations`], the worst frames' spans shown to `sorted`), and the measured
/// frames' waits, from one read grouped by frame; `None` when the frames did not come as
/// the grouping expected (the columns take them).
fn grouped_durations(
    (reader, measured, grouping): (&SpanReader, &MeasuredFrames, &Grouping),
    counts: &StageCounts,
    order: &[usize],
    worst: &[u32],
    sorted: &mut dyn FnMut(Sorted),
) -> anyhow::Result<Option<(Vec<StageColumn>, FramesWaits)>> {
    let mut column = vec![usize::MAX; counts.count.len()];
    for (c, &s) in order.iter().enumerate() {
        column[s] = c;
    }
    let mut done: Vec<StageColumn> = (order.iter())
        .map(|&s| {
            let values = NsValues::for_range(0, counts.max_dur[s], counts.count[s]);
            (values, vec![None; worst.len()])
        })
        .collect();
    let mut is_worst = Bits::new(reader.table.slots());
    for &f in worst {
        is_worst.set(f);
    }
    let mut sweep = FrameSweep::new(worst, measured.count as usize);
    let frames = (reader.table, measured);
    let sources = (reader.source, reader.shared);
    let whole = for_each_frame(sources, frames, grouping, &mut |frame, spans| {
        let rank = worst_rank(&is_worst, worst, frame);
        for s in spans {
            let (durations, worst_ns) = &mut done[column[s.stage as usize]];
            durations.push(s.dur_ns);
            if let Some(rank) = rank {
                worst_ns[rank] = Some(worst_ns[rank].unwrap_or(0).saturating_add(s.dur_ns));
            }
        }
        if let Some(rank) = rank {
            sorted(Sorted::WorstFrame { rank, frame, spans });
        }
        let rows = spans.iter().map(|s| SpanRow {
            measured_frame: Some(frame),
            thread: s.thread,
            stage: s.stage,
            start_ns: s.start_ns,
            dur_ns: s.dur_ns,
        });
        sweep.frame(frame as usize, rows);
    })?;
    if !whole {
        return Ok(None);
    }
    let done = crate::parallel::map(done, SORTS_AT_ONCE, |(mut d, w)| {
        d.sort();
        (d, w)
    });
    Ok(Some((done, sweep.finish())))
}

/// `frame`'s place among the `worst` frames (worst first), when it is one (`is_worst`).
fn worst_rank(is_worst: &Bits, worst: &[u32], frame: u32) -> Option<usize> {
    if !is_worst.get(frame) {
        return None;
    }
    worst.iter().position(|&w| w == frame)
}
