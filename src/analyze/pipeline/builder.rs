//! The summary from a run's spans, however they are held (a loaded run's `Vec<Span>`, the
//! columns of `compact`): each measured frame's waits, each thread's busy time, the
//! bottleneck. The spans are read by index, in memory: no second read of the run file.

use super::by_frame::{sweep, FramesWaits};
use super::input::{PipelineInput, SpanRow, SpanRows};
use super::resources::{thread_busy, Clipped, ThreadBusy};
use super::{
    has_thread_info, is_queue, thread_labels, Bottleneck, FrameBreakdown, Names, PipelineSummary,
    RepeatedOverlap, ResourceRow, StageBusy, WaitRow,
};
use crate::analyze::compact::values::NsValues;
use crate::analyze::frames::{Frames, Measured, NO_FRAME};
use crate::analyze::stages::stage_name;
use crate::analyze::{StageRow, WorstFrame};
use crate::model::Run;

/// Each wait pair's name and its waits, sorted.
pub type WaitValues = Vec<(String, Vec<i64>)>;

/// The summary, and each worst frame's breakdown to put into its row.
pub(crate) struct Pipeline {
    summary: PipelineSummary,
    /// In the order of [`PipelineInput::worst`].
    breakdowns: Vec<Option<FrameBreakdown>>,
}

impl Pipeline {
    /// The summary, each worst frame's breakdown put into its row of `rows`.
    pub fn into_summary(self, rows: &mut [WorstFrame]) -> PipelineSummary {
        for (row, b) in rows.iter_mut().zip(self.breakdowns) {
            if let Some(b) = b {
                b.fill(row);
            }
        }
        self.summary
    }
}

/// The summary of `spans`; `None` without measured frames.
pub(crate) fn summarize(input: &PipelineInput, spans: &impl SpanRows) -> Option<Pipeline> {
    if input.measured_frames == 0 {
        return None;
    }
    let mut summary = PipelineSummary {
        single_stage: !input.multi_span,
        no_threads: !has_thread_info(input.names.threads),
        ..PipelineSummary::default()
    };
    let busy = || {
        let (from, to) = input.window;
        thread_busy(spans.len(), &|i| spans.thread(i), &|i| {
            let r = spans.row(i);
            let clipped = Clipped {
                thread: r.thread,
                stage: r.stage,
                from: r.start_ns.max(from),
                to: r.start_ns.saturating_add(r.dur_ns).min(to),
            };
            (r.dur_ns >= 0 && clipped.from < clipped.to).then_some(clipped)
        })
    };
    let no_threads = summary.no_threads;
    // The waits and the busy time read the same spans, on cores of their own.
    let (breakdowns, busy) = crate::parallel::join(
        || match input.multi_span {
            true => summary.waits_from(input, spans, None),
            false => Vec::new(),
        },
        || (!no_threads).then(busy),
    );
    if let Some(busy) = busy {
        summary.resources_from(busy, &input.names, input.window, input.measured_frames);
    }
    Some(Pipeline {
        summary,
        breakdowns,
    })
}

/// [`summarize`] of a run whose measured frames have one span each (no waits), its busy
/// time by thread already taken (`None` where its threads are not known): what a read of
/// the spans gives without holding them.
pub(crate) fn summarize_single_spans(
    input: &PipelineInput,
    busy: Option<Vec<ThreadBusy>>,
) -> Option<Pipeline> {
    if input.measured_frames == 0 {
        return None;
    }
    debug_assert!(!input.multi_span, "waits need the spans in memory");
    let mut summary = PipelineSummary {
        single_stage: true,
        no_threads: !has_thread_info(input.names.threads),
        ..PipelineSummary::default()
    };
    if let Some(busy) = busy.filter(|_| !summary.no_threads) {
        summary.resources_from(busy, &input.names, input.window, input.measured_frames);
    }
    Some(Pipeline {
        summary,
        breakdowns: Vec::new(),
    })
}

/// [`summarize`] of a run read without holding its spans: its measured frames swept as
/// a read grouped them by frame (`by_frame::FrameSweep`), its busy time by thread taken
/// by a read in the run's order (`None` where its threads are not known). `values` is
/// shown each wait pair's waits, sorted (what `compare` keeps of them).
pub(crate) fn summarize_swept(
    input: &PipelineInput,
    busy: Option<Vec<ThreadBusy>>,
    swept: FramesWaits,
    values: &mut dyn FnMut(&str, &NsValues),
) -> Option<Pipeline> {
    if input.measured_frames == 0 {
        return None;
    }
    let mut summary = PipelineSummary {
        single_stage: !input.multi_span,
        no_threads: !has_thread_info(input.names.threads),
        ..PipelineSummary::default()
    };
    let breakdowns = match input.multi_span {
        true => summary.waits_of_swept(input.names.stages, swept, values),
        false => Vec::new(),
    };
    if let Some(busy) = busy.filter(|_| !summary.no_threads) {
        summary.resources_from(busy, &input.names, input.window, input.measured_frames);
    }
    Some(Pipeline {
        summary,
        breakdowns,
    })
}

/// A loaded run's spans for [`summarize`].
pub(crate) struct LoadedRows<'a> {
    pub run: &'a Run,
    pub frames: &'a Frames,
    pub measured: &'a Measured,
}

impl SpanRows for LoadedRows<'_> {
    fn len(&self) -> usize {
        self.run.spans.len()
    }

    fn frame(&self, i: usize) -> u32 {
        self.frames.span_frame[i]
    }

    fn thread(&self, i: usize) -> u32 {
        self.run.spans[i].thread
    }

    fn row(&self, i: usize) -> SpanRow {
        let (span, f) = (&self.run.spans[i], self.frames.span_frame[i]);
        SpanRow {
            measured_frame: (f != NO_FRAME && self.measured.in_window[f as usize]).then_some(f),
            thread: span.thread,
            stage: span.stage,
            start_ns: span.start_ns,
            dur_ns: span.dur_ns,
        }
    }
}

/// Each wait pair's waits over the measured frames of a loaded run, sorted ascending, in
/// the wait table's order (what `compare` resamples for `--show 'convert→encode.p99'`).
pub fn wait_values(run: &Run, frames: &Frames, measured: &Measured) -> WaitValues {
    let names = Names {
        stages: &run.stages,
        threads: &run.threads,
    };
    let rows = LoadedRows {
        run,
        frames,
        measured,
    };
    wait_values_of(names, frames.all.len(), measured.order.len() as u64, &rows)
}

/// [`wait_values`] of spans however they are held: `slots` frame indices, `measured` of
/// them measured.
pub(crate) fn wait_values_of(
    names: Names,
    slots: usize,
    measured: u64,
    rows: &impl SpanRows,
) -> WaitValues {
    let input = PipelineInput {
        names,
        window: (i64::MIN, i64::MAX),
        frame_slots: slots,
        measured_frames: measured,
        multi_span: true,
        worst: &[],
    };
    let mut values = WaitValues::new();
    let mut summary = PipelineSummary::default();
    summary.waits_from(&input, rows, Some(&mut values));
    values
}

/// Whether some measured frame has two spans or more, from the stage table's counts.
pub(crate) fn multi_span(rows: &[StageRow], measured_frames: u64) -> bool {
    rows.iter().map(|r| r.dist.count).sum::<u64>() > measured_frames
}

impl PipelineSummary {
    /// The waits of every measured frame, the wait table, and the worst frames'
    /// breakdowns (in `input.worst`'s order); with `values`, each pair's waits too.
    fn waits_from(
        &mut self,
        input: &PipelineInput,
        spans: &impl SpanRows,
        values: Option<&mut WaitValues>,
    ) -> Vec<Option<FrameBreakdown>> {
        let swept = sweep(input, spans);
        match values {
            Some(values) => self.waits_of_swept(input.names.stages, swept, &mut |name, v| {
                values.push((name.to_owned(), v.to_i64()))
            }),
            None => self.waits_of_swept(input.names.stages, swept, &mut |_, _| {}),
        }
    }

    /// [`PipelineSummary::waits_from`] of frames already swept; `values` is shown each
    /// pair's name and its waits, sorted, in the wait table's order.
    fn waits_of_swept(
        &mut self,
        stages: &[String],
        mut swept: FramesWaits,
        values: &mut dyn FnMut(&str, &NsValues),
    ) -> Vec<Option<FrameBreakdown>> {
        self.reordered_frames = swept.reordered;
        let breakdowns = (swept.worst.into_iter())
            .map(|w| {
                w.map(|w| FrameBreakdown {
                    work_ns: w.work_ns,
                    wait_ns: w.wait_ns,
                    longest: (w.waits.iter())
                        .max_by_key(|&&(from, to, ns)| (ns, std::cmp::Reverse((from, to))))
                        .map(|&(from, to, ns)| (pair_name(stages, from, to), ns)),
                })
            })
            .collect();
        swept.pairs.sort_by_key(|(pair, t)| (t.first, *pair));
        for ((from, to), mut t) in swept.pairs {
            t.waits.sort();
            let name = pair_name(stages, from, to);
            values(&name, &t.waits);
            self.waits.push(WaitRow {
                name,
                from: stage_name(stages, from.into()),
                to: stage_name(stages, to.into()),
                dist: t.waits.dist_of_sorted(),
                overlaps: t.overlaps,
            });
        }
        swept.work.sort();
        swept.waited.sort();
        self.work = swept.work.dist_of_sorted();
        self.waited = swept.waited.dist_of_sorted();
        breakdowns
    }

    fn resources_from(
        &mut self,
        busy: Vec<ThreadBusy>,
        names: &Names,
        window: (i64, i64),
        measured_frames: u64,
    ) {
        let labels = thread_labels(names.threads);
        let label =
            |t: u32| (labels.get(t as usize).cloned()).unwrap_or_else(|| format!("thread #{t}"));
        let window_ns = window.1.saturating_sub(window.0);
        for t in &busy {
            for &(stage, spans) in &t.overlapping {
                self.repeated_overlaps.push(RepeatedOverlap {
                    stage: stage_name(names.stages, stage.into()),
                    thread: label(t.thread),
                    spans,
                });
            }
        }
        let mut rows: Vec<(i64, u32, ResourceRow)> = busy
            .iter()
            .filter(|t| t.busy_ns > 0 || window_ns == 0)
            .map(|t| {
                let row = ResourceRow {
                    name: label(t.thread),
                    queue: (names.threads.get(t.thread as usize)).is_some_and(is_queue),
                    thread: Some(t.thread),
                    busy_ns: t.busy_ns,
                    wall_busy_ns: None,
                    busy_pct: if window_ns > 0 {
                        t.busy_ns as f64 / window_ns as f64 * 100.0
                    } else {
                        0.0
                    },
                    stages: (t.stages.iter())
                        .map(|&(stage, busy_ns)| StageBusy {
                            stage: stage_name(names.stages, stage.into()),
                            busy_ns,
                        })
                        .collect(),
                };
                (t.busy_ns, t.thread, row)
            })
            .collect();
        rows.sort_by_key(|(busy, thread, _)| (std::cmp::Reverse(*busy), *thread));
        self.resources = rows.into_iter().map(|r| r.2).collect();
        self.bottleneck = Bottleneck::of(&self.resources, measured_frames, window_ns);
    }
}

/// `from→to`.
pub fn pair_name(stages: &[String], from: u16, to: u16) -> String {
    format!(
        "{}→{}",
        stage_name(stages, from.into()),
        stage_name(stages, to.into())
    )
}
