//! The analysis of a run whose frames have one span each (`testprog rate`'s shape: the
//! worst case for columns, 15 bytes a span beside the frame table's 8 a frame) without
//! columns: the spans are read again for each thing they give (the measured stages' counts
//! and each thread's busy time, then each stage's durations) and nothing of them is held
//! but what is being computed. A read costs ~6 ns a span (docs/run-file.md), the columns
//! held 150 MB for 10M spans (issue 29: report ≤ 150 MB whatever the run's length).
//!
//! The numbers are those of the columns' analysis (`compact::tests` compares them): each
//! read sees the spans in the order the columns hold them. Where waits would need a frame's
//! spans side by side, or a thread's spans came out of start order and must be sorted,
//! the caller reads the columns instead.

use super::table::FrameTable;
use super::values::{NsValues, SORTS_AT_ONCE};
use super::window::{measure_with, Bits, MeasuredFrames};
use super::{frame_facts, pick_worst, stage_order, stage_rows, Sorted, SpanParts, StageCounts};
use crate::analyze::frames::{out_of_range, NO_FRAME};
use crate::analyze::pipeline::resources::{BusySweep, Clipped};
use crate::analyze::pipeline::{summarize_single_spans, Names, PipelineInput};
use crate::analyze::stages::WORST_FRAMES;
use crate::analyze::summary::assemble;
use crate::analyze::Analysis;
use crate::model::{Run, Span, SpanSource};

/// Whether each usable span of the run is its frame's only one (`spans` read in all):
/// then no frame has waits, and a span's frame is the only thing that ties it to others.
pub fn one_span_a_frame(table: &FrameTable, spans: usize) -> bool {
    (spans as u64).checked_sub(table.negative_spans) == Some(table.count() as u64)
}

/// The analysis of `head`'s run, whose frames `table` holds (one span each), from reads of
/// `source`; the table is dropped before the scheduler's split, which reads the spans once
/// more. `None` when a thread's spans did not come in start order.
pub fn analyze(
    head: &Run,
    table: FrameTable,
    spans: usize,
    source: &dyn SpanSource,
    sorted: &mut dyn FnMut(Sorted),
) -> anyhow::Result<Option<Analysis>> {
    let Some((facts, _)) = facts(head, &table, spans, source, sorted)? else {
        return Ok(None);
    };
    drop(table);
    let mut analysis = assemble(head, facts);
    crate::analyze::sched::apply(&mut analysis, head, source)?;
    Ok(Some(analysis))
}

/// [`analyze`] with the table kept by the caller, and the frames it measured.
pub fn analyze_measured(
    head: &Run,
    table: &FrameTable,
    spans: usize,
    source: &dyn SpanSource,
    sorted: &mut dyn FnMut(Sorted),
) -> anyhow::Result<Option<(Analysis, MeasuredFrames)>> {
    let Some((facts, measured)) = facts(head, table, spans, source, sorted)? else {
        return Ok(None);
    };
    let mut analysis = assemble(head, facts);
    crate::analyze::sched::apply(&mut analysis, head, source)?;
    Ok(Some((analysis, measured)))
}

type Facts = (crate::analyze::summary::SpanFacts, MeasuredFrames);

fn facts(
    head: &Run,
    table: &FrameTable,
    spans: usize,
    source: &dyn SpanSource,
    sorted: &mut dyn FnMut(Sorted),
) -> anyhow::Result<Option<Facts>> {
    let reader = SpanReader { table, source };
    let (window, measured) = measure_with(table, &head.meta, &mut |visit| {
        reader.each(&mut |s, frame| visit(frame, s.stage))
    })?;
    let worst = pick_worst(table, &measured, WORST_FRAMES);
    let names = Names {
        stages: &head.stages,
        threads: &head.threads,
    };
    let window_ns = (window.start_ns, window.end_ns);
    let Some((counts, busy)) = counts_and_busy(&reader, &measured, window_ns, &names)? else {
        return Ok(None);
    };
    let input = PipelineInput {
        names,
        window: window_ns,
        frame_slots: table.slots(),
        measured_frames: measured.count,
        multi_span: false,
        worst: &worst,
    };
    let pipeline = summarize_single_spans(&input, busy);
    let order = stage_order(&counts);
    let done = stage_durations(&reader, &measured, &counts, &order, &worst)?;
    // One stage: its durations are the measured frames' totals, already sorted.
    let total = match done.as_slice() {
        [(durations, _)] => Some(durations.dist_of_sorted()),
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
struct SpanReader<'a> {
    table: &'a FrameTable,
    source: &'a dyn SpanSource,
}

impl SpanReader<'_> {
    /// Every span in the run's order with its frame's index (NO_FRAME for a duration out of
    /// range); an error when a span's frame is not in the table (the run changed).
    fn each(&self, visit: &mut dyn FnMut(&Span, u32)) -> anyhow::Result<()> {
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

/// `count_stages` and the busy time by thread (`pipeline::summarize`'s) from one read;
/// `None` when a thread's spans came out of start order.
fn counts_and_busy(
    reader: &SpanReader,
    measured: &MeasuredFrames,
    (from, to): (i64, i64),
    names: &Names,
) -> anyhow::Result<
    Option<(
        StageCounts,
        Option<Vec<super::super::pipeline::resources::ThreadBusy>>,
    )>,
> {
    let stages = u16::MAX as usize + 1;
    let mut c = StageCounts {
        count: vec![0; stages],
        max_dur: vec![0; stages],
        first_start: vec![i64::MAX; stages],
    };
    let with_threads = crate::analyze::pipeline::has_thread_info(names.threads);
    let mut busy = BusySweep::default();
    reader.each(&mut |s, frame| {
        if frame != NO_FRAME && measured.in_window.get(frame) {
            let st = s.stage as usize;
            c.count[st] += 1;
            c.max_dur[st] = c.max_dur[st].max(s.dur_ns);
            c.first_start[st] = c.first_start[st].min(s.start_ns);
        }
        if with_threads {
            let clipped = Clipped {
                thread: s.thread,
                stage: s.stage,
                from: s.start_ns.max(from),
                to: s.start_ns.saturating_add(s.dur_ns).min(to),
            };
            if s.dur_ns >= 0 && clipped.from < clipped.to {
                busy.add(clipped);
            }
        }
    })?;
    if !with_threads {
        return Ok(Some((c, None)));
    }
    Ok(busy.finish().map(|busy| (c, Some(busy))))
}

/// Each stage's durations in measured frames (stages in `order`), sorted, and its sums in
/// the worst frames, from one read; the stages sorted a few at once.
fn stage_durations(
    reader: &SpanReader,
    measured: &MeasuredFrames,
    counts: &StageCounts,
    order: &[usize],
    worst: &[u32],
) -> anyhow::Result<Vec<(NsValues, Vec<Option<i64>>)>> {
    let mut column = vec![usize::MAX; counts.count.len()];
    for (c, &s) in order.iter().enumerate() {
        column[s] = c;
    }
    let mut is_worst = Bits::new(reader.table.slots());
    for &f in worst {
        is_worst.set(f);
    }
    let mut done: Vec<(NsValues, Vec<Option<i64>>)> = (order.iter())
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
        if is_worst.get(frame) {
            if let Some(pos) = worst.iter().position(|&w| w == frame) {
                worst_ns[pos] = Some(worst_ns[pos].unwrap_or(0).saturating_add(s.dur_ns));
            }
        }
    })?;
    Ok(crate::parallel::map(done, SORTS_AT_ONCE, |(mut d, w)| {
        d.sort();
        (d, w)
    }))
}
