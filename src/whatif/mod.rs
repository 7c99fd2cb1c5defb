//! `framelab whatif`: what a run's recorded stage durations would give scheduled another
//! way (another depth, a stage made faster, a stage on another thread), from the event model
//! of [`model`], printed beside the measurement and beside the model's replay of the run as
//! it was recorded (how far to trust it), with the model's assumptions.

pub mod model;
mod placed;
mod plan;
mod recorded;
mod render;
mod reread;
mod selected;
mod streamed;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use anyhow::{bail, Result};
use serde::Serialize;

use self::model::{Config, Simulation};

/// A replay of the frames: hands each frame's (start, end) to the callback it is given.
type EachFrame<'a> = dyn FnMut(&mut dyn FnMut(i64, i64)) -> Result<()> + 'a;
use self::placed::PlacedFrames;
pub use self::plan::Changes;
use self::recorded::{RecordedFrames, ReplayFrames};
use self::reread::RereadFrames;
use self::selected::{AsMeasured, FrameModel, Simulated};
use self::streamed::{measure_frames, StreamedFrames};
use crate::analyze::compact::columns::{columns_of, SpanColumns};
use crate::analyze::compact::streamed::one_span_a_frame;
use crate::analyze::compact::table::FrameTable;
use crate::analyze::compact::values::NsValues;
use crate::analyze::compact::window::measure;
use crate::analyze::compact::{columns_beside, read_frames, ANALYSIS_KEEPS};
use crate::analyze::pipeline::{has_thread_info, is_queue, thread_labels};
use crate::analyze::{Analysis, Dist};
use crate::model::{Run, SpanSource};
use crate::parallel;
use crate::read_ahead::ReadAhead;
use crate::store::StoredRun;
pub use render::render;

/// The stage the SDK's pacer records its own wait as.
pub const PACE_STAGE: &str = "pace";

/// What one schedule gives.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Outcome {
    /// 1e9 / mean interval.
    pub fps: Option<f64>,
    pub interval: Option<Dist>,
    pub total: Option<Dist>,
}

impl Outcome {
    /// The figures of a simulation that hands each frame's start and end to the
    /// callback it is given: each frame's total (4 bytes while it fits a u32) and the
    /// intervals between ends, taken as the ends come, in order, holding only the ends a
    /// later frame may still precede ([`EndsInOrder`]), else from every end kept, by a
    /// second run. One run where two took the totals, then the intervals (issue 29: the
    /// model's time); the rows and delays it no longer holds pay for the 4 bytes a frame.
    fn of_simulation(frames: usize, simulate: &mut EachFrame) -> Result<Outcome> {
        let mut totals = NsValues::for_range(0, 0, frames);
        let mut intervals = NsValues::for_range(0, 0, frames.saturating_sub(1));
        let mut ends = EndsInOrder::new();
        simulate(&mut |start, end| {
            totals.push(end.saturating_sub(start));
            ends.add(start, end, &mut |x| intervals.push(x));
        })?;
        let summary = |mut values: NsValues| {
            values.sort();
            values.dist_of_sorted()
        };
        let (total, interval) = match ends.finish(&mut |x| intervals.push(x)) {
            // Both are held already: sorted at once, on two cores where there are.
            true => parallel::join(|| summary(totals), || summary(intervals)),
            false => {
                drop(intervals);
                let total = summary(totals);
                let mut ends: Vec<i64> = Vec::with_capacity(frames);
                simulate(&mut |_, end| ends.push(end))?;
                ends.sort_unstable();
                let intervals = values_of(
                    ends.windows(2).map(|w| w[1].saturating_sub(w[0])),
                    ends.len(),
                );
                drop(ends);
                (total, summary(intervals))
            }
        };
        Ok(Outcome {
            fps: interval
                .as_ref()
                .filter(|d| d.mean_ns > 0.0)
                .map(|d| 1e9 / d.mean_ns),
            interval,
            total,
        })
    }

    /// The measured frames' figures as the analysis gives them (a frame from its first
    /// start to its last end, intervals between ends in end order), from the recorded
    /// frames rather than the frame table, which is then dropped before any of them is
    /// taken (issue 31 item 8: the table, the columns and the frames' end order together
    /// were whatif's peak).
    fn of_recorded(head: &Run, frames: &dyn ReplayFrames) -> Result<Outcome> {
        // A trace imported without frames made each slice a frame: the analysis has none.
        if head.import.as_ref().is_some_and(|i| i.frames_undefined()) {
            return Ok(Outcome::default());
        }
        Outcome::of_simulation(frames.len(), &mut |done| {
            frames.each(&mut |spans| {
                // A frame as the frame table has it: its first start and its latest end.
                let start = spans.first().map_or(0, |(s, _)| s.start_ns);
                let end = spans.iter().map(|(s, _)| s.end_ns).max().unwrap_or(0);
                done(start, end);
            })
        })
    }

    /// The analysis's figures, defined as the model's are.
    fn measured(a: &Analysis) -> Outcome {
        Outcome {
            fps: a.fps.as_ref().map(|f| f.mean),
            interval: a.interval.clone(),
            total: a.total.clone(),
        }
    }
}

/// The intervals between a simulation's frame ends, in end order, as the frames come:
/// frames start in order, so an end no later than the latest start can be preceded by
/// no frame still to come and is final. Only ends after the latest start wait (a few
/// frames in flight). Should a frame end before an end already taken (frames did not
/// start in order), the intervals are given up and taken from every end instead.
struct EndsInOrder {
    waiting: BinaryHeap<Reverse<i64>>,
    last: Option<i64>,
    broken: bool,
}

impl EndsInOrder {
    fn new() -> EndsInOrder {
        EndsInOrder {
            waiting: BinaryHeap::new(),
            last: None,
            broken: false,
        }
    }

    /// Takes a frame; each interval it makes final is handed to `interval`, in end order.
    fn add(&mut self, start: i64, end: i64, interval: &mut impl FnMut(i64)) {
        if self.broken {
            return;
        }
        if self.last.is_some_and(|last| end < last) {
            self.broken = true;
            self.waiting = BinaryHeap::new();
            return;
        }
        self.waiting.push(Reverse(end));
        while let Some(&Reverse(first)) = self.waiting.peek() {
            if first > start {
                break;
            }
            self.waiting.pop();
            self.take(first, interval);
        }
    }

    fn take(&mut self, end: i64, interval: &mut impl FnMut(i64)) {
        if let Some(last) = self.last {
            interval(end.saturating_sub(last));
        }
        self.last = Some(end);
    }

    /// The intervals still waiting, to `interval`; false when frames did not end in an
    /// order this could follow (the intervals handed so far are not all of them).
    fn finish(mut self, interval: &mut impl FnMut(i64)) -> bool {
        if self.broken {
            return false;
        }
        while let Some(Reverse(end)) = self.waiting.pop() {
            self.take(end, interval);
        }
        true
    }
}

/// A schedule: which resource each stage runs on, their names, the depth.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Schedule {
    pub depth: usize,
    /// Each resource's name and the stages on it, in stage order.
    pub resources: Vec<(String, Vec<String>)>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIf {
    pub run: String,
    pub frames: usize,
    pub target_fps: Option<f64>,
    pub measured: Outcome,
    pub as_recorded: Outcome,
    pub recorded_schedule: Schedule,
    pub predicted: Outcome,
    pub schedule: Schedule,
    pub changes: Vec<String>,
    pub assumptions: Vec<String>,
}

/// `values` (as many as `len` at most), as narrow as they fit.
fn values_of(values: impl Iterator<Item = i64> + Clone, len: usize) -> NsValues {
    let (min, max) =
        (values.clone()).fold((0, 0), |(lo, hi): (i64, i64), v| (lo.min(v), hi.max(v)));
    let mut out = NsValues::for_range(min, max, len);
    values.for_each(|v| out.push(v));
    out
}

/// Predicts `changes` on `run` (analysed as `analysis`).
pub fn whatif(run: &Run, analysis: &Analysis, changes: &Changes) -> Result<WhatIf> {
    let (columns, table) = columns_of(&run.spans, ANALYSIS_KEEPS);
    whatif_columns(
        run,
        columns,
        table,
        Some(Outcome::measured(analysis)),
        changes,
    )
}

/// `framelab whatif` of run `run_id` of `run_file` (`None`: the latest): the file opened
/// here, then [`whatif_stored`].
pub fn whatif_file(
    run_file: &std::path::Path,
    run_id: Option<i64>,
    changes: &Changes,
) -> Result<WhatIf> {
    whatif_stored(&crate::store::open_run(run_file, run_id)?, changes)
}

/// [`whatif`] of a run file's run: the measured figures taken from the spans as the
/// analysis takes them (and nothing else of the analysis), then the model replays from
/// them (issue 29: the loaded run, its whole analysis and a vector of spans per frame took
/// 337 bytes a span). With one span a frame, ids counting up in start order, the spans are
/// read again each time the model wants them and nothing is held by frame, not even a frame
/// table ([`reread`], the figures selected from reads: [`selected`]). Else the frame table
/// is read first; with one span a frame in start order the spans are then read again each
/// time the model wants them ([`streamed`]); else the measured spans are placed frame after
/// frame, held as the model takes them ([`placed`]); where they do not fit that, read into
/// columns beside the table.
pub fn whatif_stored(stored: &StoredRun, changes: &Changes) -> Result<WhatIf> {
    let source: &(dyn SpanSource + Sync) = stored;
    let head = &stored.head;
    // One span a frame in start order: no frame table, nothing held by frame.
    if let Some(mut frames) = RereadFrames::read(head, source)? {
        check(head, changes, frames.spans() == 0)?;
        return replay(head, &mut frames, None, changes);
    }
    // The blocks decoded on another thread while the table is filled.
    let (table, spans) = read_frames(&ReadAhead(source))?;
    check(head, changes, spans == 0)?;
    let measured = measure_frames(&table, &head.meta, source)?;
    if one_span_a_frame(&table, spans) {
        if let Some(mut frames) = StreamedFrames::of_stretch(source, &table, &measured, spans)? {
            drop((table, measured));
            return replay(head, &mut frames, None, changes);
        }
    }
    // The rows' places are u32, as the columns' are.
    let table = match u32::try_from(spans) {
        Ok(_) => match PlacedFrames::read(source, table, &measured)? {
            Some(mut frames) => {
                drop(measured);
                return replay(head, &mut frames, None, changes);
            }
            // The table was given up: read again for the columns (rarely needed).
            None => read_frames(&ReadAhead(source))?.0,
        },
        Err(_) => table,
    };
    drop(measured);
    let (columns, table) = columns_beside(table, &ReadAhead(source), ANALYSIS_KEEPS)?;
    replay_columns(head, columns, table, None, changes)
}

/// [`whatif`] of a run whose spans were read into `columns` and `table` (starts and threads
/// kept, as [`ANALYSIS_KEEPS`] says): `head` is the run without them. `measured` is the
/// analysis's figures, else taken from the columns. The columns stay, the frames become row
/// indices into them ([`RecordedFrames`]), and the model is fed one frame's tasks at a
/// time: about 20 to 25 bytes a span in all.
pub fn whatif_columns(
    head: &Run,
    columns: SpanColumns,
    table: FrameTable,
    measured: Option<Outcome>,
    changes: &Changes,
) -> Result<WhatIf> {
    check(head, changes, columns.is_empty())?;
    replay_columns(head, columns, table, measured, changes)
}

/// What makes a prediction of `run` impossible or pointless whatever its spans:
/// `no_spans`, the run has none.
fn check(run: &Run, changes: &Changes, no_spans: bool) -> Result<()> {
    // A stage named twice would be scaled by the product, or moved to the last thread named.
    for (option, stages) in [
        (
            "--stage-scale",
            changes.scales.iter().map(|(s, _)| s).collect::<Vec<_>>(),
        ),
        ("--move", changes.moves.iter().map(|(s, _)| s).collect()),
    ] {
        if let Some(twice) =
            (stages.iter().enumerate()).find_map(|(i, s)| stages[..i].contains(s).then_some(s))
        {
            bail!("{option} names the stage {twice} twice: give each stage once");
        }
    }
    if changes.unpaced && !(run.meta.target_fps).is_some_and(|f| f.is_finite() && f > 0.0) {
        bail!(
            "--unpaced changes nothing here: the run has no target fps, so frames already start \
             as soon as they can; leave --unpaced out"
        );
    }
    if no_spans {
        let why = match &run.import {
            Some(import) => format!(
                "its {} import holds histograms or samples only",
                import.format
            ),
            None => "its program was not instrumented: record stages with the SDK \
                     (docs/instrumenting.md), or without changing it with framelab run --probe \
                     STAGE=BINARY:FUNCTION"
                .to_owned(),
        };
        bail!("the run has no spans ({why}): whatif replays each stage's recorded spans");
    }
    if !has_thread_info(&run.threads) {
        bail!(
            "the run has no thread ids (PresentMon and MangoHud logs have none): whatif needs \
             to know which thread ran each stage (a CSV or JSONL import takes a tid column)"
        );
    }
    Ok(())
}

/// [`whatif_columns`], its checks passed.
fn replay_columns(
    head: &Run,
    mut columns: SpanColumns,
    table: FrameTable,
    measured: Option<Outcome>,
    changes: &Changes,
) -> Result<WhatIf> {
    let (_, in_window) = measure(&table, &columns, &head.meta);
    let frame_of_row = std::mem::take(&mut columns.frame);
    let mut frames = RecordedFrames::new(&columns, frame_of_row, table, &in_window)?;
    drop(in_window);
    replay(head, &mut frames, measured, changes)
}

/// The prediction of `changes` on the measured `frames` of `run` (its checks passed), beside
/// `measured` (else taken from the frames) and the model's replay of the run as recorded.
fn replay(
    run: &Run,
    frames: &mut dyn ReplayFrames,
    measured: Option<Outcome>,
    changes: &Changes,
) -> Result<WhatIf> {
    if frames.len() < 2 {
        bail!(
            "the run has {} measured frames: whatif needs two or more to predict a rate",
            frames.len()
        );
    }
    let labels = thread_labels(&run.threads);
    let pace = (run.stages.iter())
        .position(|s| s == PACE_STAGE)
        .map(|s| s as u16);
    let queues: Vec<bool> = run.threads.iter().map(is_queue).collect();
    if !frames.held() {
        return replay_reading(run, frames, measured, changes, (&labels, &queues, pace));
    }
    // Two reads of the frames, on two cores where there are.
    let shared: &dyn ReplayFrames = frames;
    let (recorded, measured) = parallel::join(
        || plan::recorded(shared, &labels, &queues, pace),
        || match measured {
            Some(measured) => Ok(measured),
            None => Outcome::of_recorded(run, shared),
        },
    );
    let (recorded, measured) = (recorded?, measured?);
    let changed = plan::apply(&recorded, changes, &run.stages)?;
    frames.set_handover_delays(recorded.depth, pace);
    let frames: &dyn ReplayFrames = frames;
    let period_ns = period_of(run);
    let outcome = |p: &plan::Plan, paced: bool| {
        let config = config_of(p, period_ns.filter(|_| paced), pace);
        let maker = p.tasks();
        let mut tasks = Vec::new();
        Outcome::of_simulation(frames.len(), &mut |done| {
            let mut simulation = Simulation::new(&config, frames.len());
            frames.each(&mut |spans| {
                maker.tasks_into(spans.iter().copied(), &mut tasks);
                if let Some((start, end)) = simulation.frame(&tasks) {
                    done(start, end);
                }
            })
        })
    };
    let (as_recorded, predicted) = (
        outcome(&recorded, true)?,
        outcome(&changed, !changes.unpaced)?,
    );
    Ok(prediction(
        run,
        frames.len(),
        changes,
        (&recorded, &changed),
        [measured, as_recorded, predicted],
    ))
}

/// The pacer's period: it runs at the target rate (a budget alone paces nothing).
fn period_of(run: &Run) -> Option<f64> {
    (run.meta.target_fps)
        .filter(|f| f.is_finite() && *f > 0.0)
        .map(|f| 1e9 / f)
}

/// The model's configuration for plan `p`, paced every `period_ns` when given.
fn config_of(p: &plan::Plan, period_ns: Option<f64>, pace: Option<u16>) -> Config {
    Config {
        period_ns,
        depth: p.depth,
        pace_stage: pace,
        resources: p.resource_names.len(),
    }
}

/// The prediction from its plans (as recorded, changed) and the outcomes (measured, the
/// run as recorded, the what-if).
fn prediction(
    run: &Run,
    frames: usize,
    changes: &Changes,
    (recorded, changed): (&plan::Plan, &plan::Plan),
    [measured, as_recorded, predicted]: [Outcome; 3],
) -> WhatIf {
    let pace = (run.stages.iter()).position(|s| s == PACE_STAGE);
    WhatIf {
        run: run.meta.name.clone(),
        frames,
        target_fps: run.meta.target_fps,
        measured,
        // The run as it was recorded: how close the model comes to the measurement.
        as_recorded,
        recorded_schedule: recorded.schedule(&run.stages),
        predicted,
        schedule: changed.schedule(&run.stages),
        changes: changes.describe(),
        assumptions: plan::assumptions(period_of(run), pace.is_some(), changes.unpaced),
    }
}

/// [`replay`] of frames read again each time they are wanted: the plan from one read, then
/// the measured figures, the run as recorded and the what-if from the same reads, their
/// values selected rather than held ([`selected`]): nothing held by frame.
fn replay_reading(
    run: &Run,
    frames: &mut dyn ReplayFrames,
    measured: Option<Outcome>,
    changes: &Changes,
    (labels, queues, pace): (&[String], &[bool], Option<u16>),
) -> Result<WhatIf> {
    let recorded = plan::recorded(frames, labels, queues, pace)?;
    let changed = plan::apply(&recorded, changes, &run.stages)?;
    frames.set_handover_delays(recorded.depth, pace);
    let frames: &dyn ReplayFrames = frames;
    let period_ns = period_of(run);
    let as_run = config_of(&recorded, period_ns, pace);
    let what_if = config_of(&changed, period_ns.filter(|_| !changes.unpaced), pace);
    let n = frames.len();
    let mut as_recorded = Simulated::new(&as_run, recorded.tasks(), n);
    let mut predicted = Simulated::new(&what_if, changed.tasks(), n);
    // A trace imported without frames made each slice a frame: the analysis has none.
    let undefined = run.import.as_ref().is_some_and(|i| i.frames_undefined());
    let mut as_measured = AsMeasured;
    let mut models: Vec<&mut dyn FrameModel> = vec![&mut as_recorded, &mut predicted];
    if measured.is_none() && !undefined {
        models.push(&mut as_measured);
    }
    let mut outcomes = selected::outcomes(frames, &mut models)?.into_iter();
    let (as_recorded, predicted) = (outcomes.next(), outcomes.next());
    let measured = measured.or(outcomes.next()).unwrap_or_default();
    let outcomes = [
        measured,
        as_recorded.unwrap_or_default(),
        predicted.unwrap_or_default(),
    ];
    Ok(prediction(run, n, changes, (&recorded, &changed), outcomes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::analyze;
    use crate::model::{EndReason, RunMeta, Span, ThreadInfo};

    const MS: i64 = 1_000_000;

    /// Stages a (2 ms) and b (3 ms) in series on one thread, paced at `fps` as the SDK
    /// pacer does it: frame n at its slot, or when frame n − 1 ended if that is later.
    fn serial_run(fps: f64, frames: u64) -> Run {
        serial_run_on(fps, frames, 0)
    }

    /// `serial_run` with stage b on thread `b_thread` (still one frame in flight).
    fn serial_run_on(fps: f64, frames: u64, b_thread: u32) -> Run {
        let period = 1e9 / fps;
        let (mut spans, mut free, mut slot) = (Vec::new(), 0i64, 0u64);
        for frame in 0..frames {
            let deadline = (slot as f64 * period).round() as i64;
            let start = if free <= deadline {
                slot += 1;
                deadline
            } else {
                slot = (free as f64 / period).floor() as u64 + 1;
                free
            };
            spans.push(Span {
                frame,
                stage: 0,
                thread: 0,
                start_ns: start,
                dur_ns: 2 * MS,
            });
            spans.push(Span {
                frame,
                stage: 1,
                thread: b_thread,
                start_ns: start + 2 * MS,
                dur_ns: 3 * MS,
            });
            free = start + 5 * MS;
        }
        Run {
            meta: RunMeta {
                name: "serial".into(),
                target_fps: Some(fps),
                window_end_ns: free,
                end_reason: EndReason::Exited,
                ..RunMeta::default()
            },
            stages: vec!["a".into(), "b".into()],
            threads: vec![
                ThreadInfo {
                    pid: 1,
                    tid: 1,
                    name: "main".into(),
                    dropped: 0,
                },
                ThreadInfo {
                    pid: 1,
                    tid: 2,
                    name: "device".into(),
                    dropped: 0,
                },
            ],
            spans,
            ..Run::default()
        }
    }

    fn predict(run: &Run, changes: Changes) -> Result<WhatIf> {
        whatif(run, &analyze(run), &changes)
    }

    fn depth(n: usize) -> Changes {
        Changes {
            depth: Some(n),
            ..Changes::default()
        }
    }

    #[test]
    fn depth_two_of_two_and_three_ms_at_120_fps_keeps_the_rate_and_the_latency() {
        let w = predict(&serial_run(120.0, 50), depth(2)).unwrap();
        // As recorded, the model gives back the measurement.
        assert_eq!(w.as_recorded.total, w.measured.total);
        assert!((w.as_recorded.fps.unwrap() - w.measured.fps.unwrap()).abs() < 1e-9);
        let fps = w.predicted.fps.unwrap();
        assert!((fps - 120.0).abs() < 1e-6, "{fps}");
        let total = w.predicted.total.as_ref().unwrap();
        assert_eq!((total.min_ns, total.max_ns), (5e6, 5e6));
        assert_eq!(
            w.schedule.resources[0],
            ("thread 1".to_string(), vec!["a".to_string()])
        );
        assert_eq!(w.schedule.resources[1].1, vec!["b".to_string()]);
    }

    #[test]
    fn depth_two_of_two_and_three_ms_at_400_fps_by_hand() {
        // Measured at depth 1: 5 ms a frame, 200 fps. At depth 2 (model.rs works it out):
        // one frame every 3 ms (333.3 fps), 6 ms each after the first three.
        let run = serial_run(400.0, 50);
        let w = predict(&run, depth(2)).unwrap();
        assert!((w.measured.fps.unwrap() - 200.0).abs() < 1e-9);
        assert!((w.predicted.fps.unwrap() - 1e9 / 3e6).abs() < 1e-6);
        let total = w.predicted.total.as_ref().unwrap();
        assert_eq!((total.p50_ns, total.max_ns), (6e6, 6e6));
        // b twice as fast instead: 2 + 1.5 ms in series, 285.7 fps.
        let faster = Changes {
            scales: vec![("b".into(), 0.5)],
            ..Changes::default()
        };
        let w = predict(&run, faster).unwrap();
        assert!((w.predicted.fps.unwrap() - 1e9 / 3.5e6).abs() < 1e-6);
        // b moved to its own thread is depth 1 still: frames start when the one before ends.
        let moved = Changes {
            moves: vec![("b".into(), "encoder".into())],
            ..Changes::default()
        };
        let w = predict(&run, moved).unwrap();
        assert_eq!(
            w.schedule.resources[1],
            ("encoder".to_string(), vec!["b".to_string()])
        );
        assert!((w.predicted.fps.unwrap() - 200.0).abs() < 1e-6);
    }

    #[test]
    fn a_run_on_two_threads_at_depth_one_keeps_its_threads_at_depth_two() {
        // b already on its own thread, one frame in flight: the run's depth is 1; depth 2
        // lets a of the next frame run during b: the same 333 fps as the split.
        let run = serial_run_on(400.0, 50, 1);
        let w = predict(&run, depth(2)).unwrap();
        assert_eq!(w.recorded_schedule.depth, 1);
        assert_eq!(w.schedule.resources[0].0, "main");
        assert_eq!(
            w.schedule.resources[1],
            ("device".to_string(), vec!["b".to_string()])
        );
        assert!((w.predicted.fps.unwrap() - 1e9 / 3e6).abs() < 1e-6);
        assert!((w.as_recorded.fps.unwrap() - 200.0).abs() < 1e-6);
    }

    /// `serial_run_on` with b recorded on a queue the program named (`Queue` in the SDK:
    /// a thread of the run with a pseudo tid).
    fn queue_run(fps: f64, frames: u64) -> Run {
        let mut run = serial_run_on(fps, frames, 1);
        run.threads[1] = ThreadInfo {
            pid: 1,
            tid: framelab_probe::wire::QUEUE_TID_BASE,
            name: "gpu0.compute".into(),
            dropped: 0,
        };
        run
    }

    #[test]
    fn a_gpu_queue_is_a_resource_the_bottleneck_and_an_in_order_queue() {
        // a 2 ms on main, then b 3 ms on the GPU queue, one frame in flight at 400 fps: one
        // frame every 5 ms, the queue busy 3 ms of them (60%): it allows 1 / 3 ms = 333.3 fps.
        let run = queue_run(400.0, 50);
        let a = analyze(&run);
        let p = a.pipeline.as_ref().unwrap();
        let b = p.bottleneck.as_ref().unwrap();
        assert_eq!((b.resource.as_str(), b.queue), ("gpu0.compute", true));
        assert_eq!(b.stage, "b");
        assert!((b.busy_pct - 60.0).abs() < 1e-9, "{}", b.busy_pct);
        assert!((b.fps_bound - 1e9 / 3e6).abs() < 1e-6, "{}", b.fps_bound);
        assert_eq!(
            (p.resources[1].name.as_str(), p.resources[1].queue),
            ("main", false)
        );
        // Depth 2: a on a thread, b on the queue, in order: the queue's 333.3 fps.
        let w = predict(&run, depth(2)).unwrap();
        let names: Vec<&str> = (w.schedule.resources.iter())
            .map(|r| r.0.as_str())
            .collect();
        assert_eq!(names, ["thread 1", "gpu0.compute (queue)"]);
        assert_eq!(w.schedule.resources[1].1, vec!["b".to_string()]);
        assert!((w.predicted.fps.unwrap() - 1e9 / 3e6).abs() < 1e-6);
        // Deeper pipelining cannot split the queue's stage off it: still 333.3 fps.
        let w = predict(&run, depth(4)).unwrap();
        assert_eq!(
            w.schedule.resources.last().unwrap().0,
            "gpu0.compute (queue)"
        );
        assert!((w.predicted.fps.unwrap() - 1e9 / 3e6).abs() < 1e-6);
        // A stage moved onto the queue by the name the program gave it joins it.
        let moved = Changes {
            moves: vec![("a".into(), "gpu0.compute".into())],
            ..Changes::default()
        };
        let w = predict(&run, moved).unwrap();
        assert_eq!(
            w.schedule.resources[1].1,
            vec!["a".to_string(), "b".to_string()]
        );
    }

    #[test]
    fn a_run_read_from_its_file_gives_what_the_loaded_run_gives() {
        // whatif_stored takes the measured figures from the frames alone, not from the
        // whole analysis: the same prediction, field for field.
        let dir = tempfile::tempdir().unwrap();
        for (k, run) in [
            serial_run(400.0, 50),
            queue_run(400.0, 50),
            serial_run_on(120.0, 30, 1),
        ]
        .into_iter()
        .enumerate()
        {
            let path = dir.path().join(format!("{k}.framelab"));
            crate::store::write_run(&path, &run).unwrap();
            let stored = crate::store::open_run(&path, None).unwrap();
            let run = crate::store::load_run(&path, None).unwrap();
            for changes in [
                depth(2),
                Changes {
                    scales: vec![("b".into(), 0.5)],
                    unpaced: true,
                    ..Changes::default()
                },
            ] {
                let from_file = whatif_stored(&stored, &changes).unwrap();
                assert_eq!(from_file, predict(&run, changes).unwrap());
            }
        }
    }

    /// One span a frame on one thread (`testprog rate`'s shape), a frame every 2 ms at
    /// 500 fps, lasting 1 to 3 ms (some overlap the next), `stop`ped as it says.
    fn one_span_run(frames: u64, end_reason: EndReason) -> Run {
        let spans: Vec<Span> = (0..frames)
            .map(|frame| Span {
                frame,
                stage: 0,
                thread: 0,
                start_ns: frame as i64 * 2 * MS,
                dur_ns: MS + (frame as i64 * 7 % 5) * MS / 2,
            })
            .collect();
        let end = spans.iter().map(|s| s.start_ns + s.dur_ns).max().unwrap();
        Run {
            meta: RunMeta {
                name: "rate".into(),
                target_fps: Some(500.0),
                window_end_ns: end,
                end_reason,
                ..RunMeta::default()
            },
            stages: vec!["rate".into()],
            threads: serial_run(120.0, 1).threads,
            spans,
            ..Run::default()
        }
    }

    #[test]
    fn one_span_a_frame_read_again_gives_what_its_columns_give() {
        // Issue 31 item 8: with one span a frame in start order the spans are read again
        // for each replay rather than held; two frames swapped, a frame starting with the
        // one before, or a run stopped mid-frame give the same as the loaded run too.
        // Issue 29: with ids counting up, without a frame table and with the figures
        // selected from reads (the library's selections keep 4 values: split, read again).
        let dir = tempfile::tempdir().unwrap();
        let in_order = one_span_run(300, EndReason::Exited);
        let mut swapped = in_order.clone();
        swapped.spans.swap(100, 101);
        let mut tied = in_order.clone();
        tied.spans[150].start_ns = tied.spans[149].start_ns;
        let stopped = one_span_run(300, EndReason::Duration);
        let moved = Changes {
            moves: vec![("rate".into(), "worker".into())],
            unpaced: true,
            ..Changes::default()
        };
        for (k, run) in [in_order, swapped, tied, stopped].into_iter().enumerate() {
            let path = dir.path().join(format!("{k}.framelab"));
            crate::store::write_run(&path, &run).unwrap();
            let stored = crate::store::open_run(&path, None).unwrap();
            let run = crate::store::load_run(&path, None).unwrap();
            for changes in [depth(2), depth(3), moved.clone()] {
                let from_file = whatif_stored(&stored, &changes).unwrap();
                assert_eq!(from_file, predict(&run, changes).unwrap(), "run {k}");
            }
        }
    }

    #[test]
    fn intervals_are_the_sorted_ends_apart_whatever_order_frames_end_in() {
        // In start order, frames overlapping (a later frame ending first); then a frame
        // ending before an end already taken (frames not started in order): every end kept.
        let in_order = [(0, 10), (5, 30), (12, 20), (31, 40), (41, 45)];
        let broken = [(0, 10), (20, 30), (25, 40), (5, 8), (41, 50)];
        for frames in [&in_order[..], &broken[..]] {
            let simulate = |done: &mut dyn FnMut(i64, i64)| {
                for &(start, end) in frames {
                    done(start, end);
                }
            };
            let outcome = Outcome::of_simulation(frames.len(), &mut |done| {
                simulate(done);
                Ok(())
            })
            .unwrap();
            let mut ends: Vec<i64> = frames.iter().map(|f| f.1).collect();
            ends.sort_unstable();
            let mut intervals: Vec<i64> = ends.windows(2).map(|w| w[1] - w[0]).collect();
            intervals.sort_unstable();
            assert_eq!(outcome.interval, Dist::from_sorted(&intervals));
            let mut totals: Vec<i64> = frames.iter().map(|f| f.1 - f.0).collect();
            totals.sort_unstable();
            assert_eq!(outcome.total, Dist::from_sorted(&totals));
        }
        let mut ends = EndsInOrder::new();
        let mut intervals = Vec::new();
        for &(start, end) in &broken {
            ends.add(start, end, &mut |x| intervals.push(x));
        }
        assert!(
            !ends.finish(&mut |x| intervals.push(x)),
            "the broken order is noticed"
        );
    }

    #[test]
    fn bad_input_is_one_line() {
        let run = serial_run(120.0, 10);
        let unknown = Changes {
            scales: vec![("encode".into(), 0.5)],
            ..Changes::default()
        };
        let e = predict(&run, unknown).unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown stage `encode`: the run's measured stages are a, b"
        );
        let mut anonymous = run.clone();
        anonymous.threads = vec![ThreadInfo::default(), ThreadInfo::default()];
        let e = predict(&anonymous, depth(2)).unwrap_err().to_string();
        assert!(e.contains("no thread ids"), "{e}");
        let one = serial_run(120.0, 1);
        let e = predict(&one, depth(2)).unwrap_err().to_string();
        assert!(e.contains("1 measured frames"), "{e}");
    }
}
