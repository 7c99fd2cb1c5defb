//! The whole analysis of one run: every number a report shows, computed once.

use super::counters::{counter_summaries, CounterFacts};
use super::cpu::{cpu_summary, process_rows};
use super::fps::fps_summary;
use super::frames::{intervals_ns, measure_run, Frames, ResolvedWindow};
use super::late::{late_summary, stutter};
use super::notes::{notes, NoteFacts};
use super::pacing::{pacing_summary, PacingSummary};
use super::pipeline::{
    multi_span, summarize, LoadedRows, Names, PipelineInput, PipelineSummary, RepeatedOverlap,
};
use super::stages::{pick_worst, stage_table, StageTable, WORST_FRAMES};
use super::stats::sort_ns;
use super::telemetry::{summarize as summarize_telemetry, FrameSpan};
use super::{
    Analysis, CpuSummary, Dist, FpsSummary, LateSummary, StageRow, StutterSummary, WindowSummary,
};
use crate::model::{EndReason, Run, RunMeta};

/// The threads source reads threads every interval, so one that lives between two readings
/// is in no row of the table: where the scheduler's tracepoints saw it run, its `threads`
/// line says how many such threads there were and their time on CPU (their process's row
/// holds it). Never silent: 80 threads of 20 ms each were read as "14 threads".
fn say_threads_never_read(
    t: &mut super::telemetry::TelemetrySummary,
    run: &Run,
    window: (i64, i64),
) {
    let Some(sched) = run.sched.as_ref() else {
        return;
    };
    if sched.source != crate::model::sched::SchedSource::Tracepoints {
        return;
    }
    let Some(line) = t.sources.iter_mut().find(|s| s.source == "threads") else {
        return;
    };
    let (count, on_cpu_ns) =
        super::telemetry::threads::unread(&run.telemetry.series, &sched.slices, window.0, window.1);
    if count > 0 {
        line.detail.push_str(&format!(
            " · the scheduler saw {count} more {} that lived between two readings ({:.1} ms on \
             CPU, in their processes' rows, not in the table)",
            if count == 1 { "thread" } else { "threads" },
            on_cpu_ns as f64 / 1e6
        ));
    }
}

/// The frame budget: `--budget`, else 1/fps rounded to the nanosecond; `None` when neither
/// is a positive number.
pub fn budget_ns(meta: &RunMeta) -> Option<i64> {
    if let Some(b) = meta.budget_ns.filter(|&b| b > 0) {
        return Some(b);
    }
    meta.target_fps
        .filter(|f| f.is_finite() && *f > 0.0)
        .map(|f| (1e9 / f).round() as i64)
        .filter(|&b| b > 0)
}

/// Why `--frames N` cannot stand for the work done in the window, if it cannot: N is what
/// the whole command did, known only when it ran from launch to a clean exit.
fn hint_unusable(meta: &RunMeta, window_start_ns: i64) -> Option<&'static str> {
    if window_start_ns > 0 {
        return Some("it counts the whole run, but the window starts after a warmup");
    }
    match meta.end_reason {
        EndReason::Exited => match &meta.exit {
            Some(exit) if exit.crashed || exit.code.is_some_and(|c| c != 0) => {
                Some("the command failed, so they may not all be done")
            }
            _ => None,
        },
        EndReason::Duration => {
            Some("framelab stopped the command at the end of --duration, before it finished")
        }
        EndReason::Interrupted => Some("the run was interrupted before the command finished"),
        EndReason::Unfinished => Some("the run was not finalised"),
    }
}

/// What a run's spans (and counter values) give, however they were read: from a run in
/// memory by [`analyze`], from columns by `compact::analyze_from`.
pub(crate) struct SpanFacts {
    pub window: ResolvedWindow,
    pub warmup_frames: u64,
    pub after_frames: u64,
    pub open_frames: u64,
    pub open_missing_stages: Vec<u16>,
    pub measured_frames: u64,
    /// Spans in the run, warmup and negative ones included.
    pub spans: u64,
    pub negative_spans: u64,
    pub first_bad_span: Option<super::frames::BadSpan>,
    pub late: Option<LateSummary>,
    pub stutter: Option<StutterSummary>,
    pub pacing: Option<PacingSummary>,
    pub total: Option<Dist>,
    pub interval: Option<Dist>,
    pub fps: Option<FpsSummary>,
    /// The stage rows (without `total` and `interval`), their names, the worst frames.
    pub table: StageTable,
    pub pipeline: Option<PipelineSummary>,
    /// The counters, the values no frame took, the pacer's lateness.
    pub counters: CounterFacts,
    pub worst_spans: Vec<FrameSpan>,
    /// Measured frames over budget, for telemetry (empty without a budget or telemetry).
    pub late_spans: Vec<FrameSpan>,
}

pub fn analyze(run: &Run) -> Analysis {
    let facts = span_facts(run);
    let mut analysis = assemble(run, facts);
    // Reading spans from memory cannot fail.
    let _ = super::sched::apply(&mut analysis, run, run);
    analysis
}

/// A trace imported with no frame definition made each slice a frame: its rate, lows,
/// lateness, stutter, pacing, intervals, totals, worst frames and bound would describe
/// slices, not frames. The stages, threads and notes stay.
fn without_frame_statistics(a: &mut Analysis) {
    // The stage table's last rows are `total` and `interval` where there are such.
    for row in [a.interval.take(), a.total.take()] {
        if row.is_some() {
            a.stages.pop();
        }
    }
    a.observed_fps = None;
    a.fps = None;
    a.late = None;
    a.stutter = None;
    a.pacing = None;
    a.worst_frames.clear();
    if let Some(p) = a.pipeline.as_mut() {
        p.bottleneck = None;
    }
    // The frames line says how to define frames; waits need frames too.
    a.notes.retain(|n| {
        n != crate::model::ImportInfo::NO_FRAMES && !n.starts_with("Waits need two stages")
    });
}

fn span_facts(run: &Run) -> SpanFacts {
    let meta = &run.meta;
    let frames = Frames::from_spans(&run.spans);
    let (window, measured) = measure_run(run, &frames);
    let measured_frames = measured.order.len() as u64;
    let seconds = window.seconds();

    // In end order: late frames, streaks, missed slots and stutter need the sequence.
    let mut totals = measured.totals_ns(&frames);
    let mut intervals = intervals_ns(&measured.ends_ns(&frames));
    let budget = budget_ns(meta);
    let late = budget
        .filter(|_| measured_frames > 0)
        .and_then(|b| late_summary(&totals, &intervals, b));
    let stutter = stutter(&intervals);
    let pacing = pacing_summary(&intervals, budget);

    sort_ns(&mut totals);
    sort_ns(&mut intervals);
    let total = Dist::from_sorted(&totals);
    let interval = Dist::from_sorted(&intervals);
    let fps = fps_summary(&intervals);

    let worst = pick_worst(&frames, &measured, WORST_FRAMES);
    let mut table = stage_table(&run.spans, &run.stages, &frames, &measured, &worst);

    let input = PipelineInput {
        names: Names {
            stages: &run.stages,
            threads: &run.threads,
        },
        window: (window.start_ns, window.end_ns),
        frame_slots: frames.all.len(),
        measured_frames,
        multi_span: multi_span(&table.rows, measured_frames),
        worst: &worst,
    };
    let rows = LoadedRows {
        run,
        frames: &frames,
        measured: &measured,
    };
    let pipeline = summarize(&input, &rows).map(|p| p.into_summary(&mut table.worst));

    let counters = counter_summaries(
        &run.counters,
        &run.counter_names,
        &frames,
        &measured,
        seconds,
    );

    let span_of = |i: u32| {
        let f = &frames.all[i as usize];
        FrameSpan {
            frame: f.id,
            start_ns: f.start_ns,
            end_ns: f.end_ns,
        }
    };
    let late_spans: Vec<FrameSpan> = match budget {
        Some(b) if !run.telemetry.series.is_empty() => measured
            .order
            .iter()
            .filter(|&&i| frames.all[i as usize].total_ns() > b)
            .map(|&i| span_of(i))
            .collect(),
        _ => Vec::new(),
    };
    let worst_spans: Vec<FrameSpan> = worst.iter().map(|&i| span_of(i)).collect();
    SpanFacts {
        window,
        warmup_frames: measured.warmup_frames,
        after_frames: measured.after_frames,
        open_frames: measured.open_frames,
        open_missing_stages: measured.open_missing_stages,
        measured_frames,
        spans: run.spans.len() as u64,
        negative_spans: frames.negative_spans,
        first_bad_span: frames.first_bad_span,
        late,
        stutter,
        pacing,
        total,
        interval,
        fps,
        table,
        pipeline,
        counters,
        worst_spans,
        late_spans,
    }
}

/// The analysis of `run` (its metadata, processes, telemetry, import record) with what its
/// spans gave; `run.spans` and `run.counters` are not read (they may be left in the file).
pub(crate) fn assemble(run: &Run, facts: SpanFacts) -> Analysis {
    let mut analysis = assemble_all(run, facts);
    if run.import.as_ref().is_some_and(|i| i.frames_undefined()) {
        without_frame_statistics(&mut analysis);
    }
    if run.import.as_ref().is_some_and(|i| i.format == "wayland") {
        without_protocol_waits(&mut analysis);
    }
    if (run.import.as_ref()).is_some_and(|i| matches!(i.format.as_str(), "chrome" | "perfetto")) {
        fold_nesting_notes(&mut analysis);
    }
    analysis
}

/// Chrome and Perfetto traces nest slices of one name on a thread as a matter of course
/// (a real page's trace had 173 stage/thread pairs doing so): one note says how many, not
/// one per pair. The pairs stay in the pipeline summary.
fn fold_nesting_notes(a: &mut Analysis) {
    let Some(p) = a.pipeline.as_ref() else {
        return;
    };
    let overlaps = &p.repeated_overlaps;
    if overlaps.len() < 2 {
        return;
    }
    let spans: u64 = overlaps.iter().map(|r| r.spans).sum();
    let count_distinct = |name: fn(&RepeatedOverlap) -> &str| {
        let mut names: Vec<&str> = overlaps.iter().map(name).collect();
        names.sort_unstable();
        names.dedup();
        names.len()
    };
    let stages = count_distinct(|r| r.stage.as_str());
    let threads = count_distinct(|r| r.thread.as_str());
    let most = overlaps
        .iter()
        .rev()
        .max_by_key(|r| r.spans)
        .expect("two or more");
    let folded = format!(
        "{spans} spans of {stages} stages on {threads} threads overlap an earlier span of \
         their stage on their thread (nested slices, as Chrome and Perfetto traces record \
         them, or a begin without its end): each thread's busy time counts that time once; \
         the most: {} on thread {} ({} spans)",
        most.stage, most.thread, most.spans
    );
    let Some(first) = a
        .notes
        .iter()
        .position(|n| n.contains("an earlier span of"))
    else {
        return;
    };
    a.notes.retain(|n| !n.contains("an earlier span of"));
    a.notes.insert(first, folded);
}

/// A WAYLAND_DEBUG frame's spans overlap by nature (commit→release runs past the frame
/// callback and into the presentation, a server's presentations overlap the next frame's):
/// between them there are no waits to tell, only overlaps, and spans out of start order or
/// over an earlier one are the protocol, not a recording problem.
fn without_protocol_waits(a: &mut Analysis) {
    if let Some(p) = a.pipeline.as_mut() {
        p.waits.clear();
        p.work = None;
        p.waited = None;
        p.reordered_frames = 0;
        p.repeated_overlaps.clear();
    }
    for w in &mut a.worst_frames {
        (w.work_ns, w.wait_ns) = (None, None);
        (w.longest_wait, w.longest_wait_ns) = (None, None);
    }
    // The notes `PipelineSummary::notes` made of them.
    a.notes
        .retain(|n| !n.contains("out of start order") && !n.contains("an earlier span of"));
}

fn assemble_all(run: &Run, facts: SpanFacts) -> Analysis {
    let meta = &run.meta;
    let window = facts.window;
    let measured_frames = facts.measured_frames;
    let budget = budget_ns(meta);
    let no_spans = facts.spans == 0;

    let mut stages = facts.table.rows;
    stages.extend(facts.total.clone().map(|dist| StageRow {
        name: "total".into(),
        dist,
    }));
    stages.extend(facts.interval.clone().map(|dist| StageRow {
        name: "interval".into(),
        dist,
    }));

    // An uninstrumented command: `--frames N` stands in for the frames it did.
    let hint = meta.frames_hint.filter(|&n| n > 0);
    let hint_unusable = hint
        .filter(|_| no_spans)
        .and_then(|_| hint_unusable(meta, window.start_ns));
    let frames_from_hint = no_spans && hint.is_some() && hint_unusable.is_none();
    let frame_count = if frames_from_hint {
        hint.unwrap_or(0)
    } else {
        measured_frames
    };
    let observed_fps = window
        .seconds()
        .filter(|_| frame_count > 0)
        .map(|s| frame_count as f64 / s);

    let note_facts = NoteFacts {
        spans: facts.spans,
        measured_frames,
        negative_spans: facts.negative_spans,
        first_bad_span: facts.first_bad_span,
        orphan_counter_values: facts.counters.orphans,
        frames_from_hint,
        hint_ignored: hint.is_some() && !no_spans,
        hint,
        hint_unusable,
        warmup_frames: facts.warmup_frames,
        imported: run.import.is_some(),
    };

    let mut telemetry = summarize_telemetry(
        &run.telemetry,
        (window.start_ns, window.end_ns),
        window.end_ns,
        frame_count,
        &facts.worst_spans,
        &facts.late_spans,
    );
    if let Some(t) = telemetry.as_mut() {
        name_processes_as_they_ended(&mut t.busiest_threads, &run.processes);
        name_threads_as_recorded(&mut t.busiest_threads, &run.threads);
        say_threads_never_read(t, run, (window.start_ns, window.end_ns));
    }

    let pipeline_notes = facts
        .pipeline
        .iter()
        .flat_map(|p| p.notes())
        .collect::<Vec<_>>();
    Analysis {
        run_id: meta.id,
        name: meta.name.clone(),
        command: meta.command.clone(),
        started_at: meta.started_at.clone(),
        tags: meta.tags.clone(),
        host: meta.host.clone(),
        clock: meta.clock.clone(),
        target_fps: meta.target_fps,
        budget_ns: budget,
        window: WindowSummary {
            start_ns: window.start_ns,
            end_ns: window.end_ns,
            length_ns: window.length_ns(),
            warmup_frames: facts.warmup_frames,
            warmup_from: meta.warmup_from,
            warmup_ns: meta.warmup_ns,
            warmup_frames_asked: meta.warmup_frames,
            first_span_ns: meta.first_span_ns,
            after_frames: facts.after_frames,
            open_frames: facts.open_frames,
            open_frames_lack: (facts.open_missing_stages.iter())
                .map(|&s| run.stages.get(usize::from(s)).cloned().unwrap_or_default())
                .collect(),
        },
        end_reason: meta.end_reason,
        exit: meta.exit.clone(),
        frames: frame_count,
        frames_from_hint,
        observed_fps,
        spans: facts.spans,
        negative_spans: facts.negative_spans,
        dropped_events: meta.dropped_events,
        invalid_records: meta.invalid_records,
        names_refused: meta.names_refused,
        counters: facts.counters.summaries,
        pacer: facts.counters.pacer,
        late: facts.late,
        stages,
        stage_names: facts.table.names,
        total: facts.total,
        interval: facts.interval,
        fps: facts.fps,
        stutter: facts.stutter,
        pacing: facts.pacing,
        processes: process_rows(&run.processes),
        cpu: (!run.processes.is_empty()).then(|| CpuSummary {
            collector_load_pct: (run.meta.collector_cpu_ns > 0 && window.length_ns() > 0)
                .then(|| run.meta.collector_cpu_ns as f64 / window.length_ns() as f64 * 100.0),
            ..cpu_summary(&run.processes, window.length_ns(), frame_count)
        }),
        worst_frames: facts.table.worst,
        pipeline: facts.pipeline,
        notes: notes(meta, &window, &note_facts)
            .into_iter()
            .chain(run.import.iter().flat_map(|i| i.notes.iter().cloned()))
            .chain(imported_histograms_note(run))
            .chain(process_notes(run))
            .chain(output_notes(run))
            .chain(pipeline_notes)
            .collect(),
        telemetry,
        import: run.import.clone(),
        metrics: run.metrics.clone(),
        outputs: run
            .outputs
            .iter()
            .map(|o| crate::output::CapturedOutput {
                content: Vec::new(),
                ..o.clone()
            })
            .collect(),
        run_group: meta.session.run_group.clone(),
        cpu_taken: meta.session.cpu_taken.clone(),
        // Filled by `sched::apply`, which needs the spans again.
        sched: None,
        probes: crate::probes::summary(meta),
    }
}

/// A metric that could not be read, and a stream that could not be read to its end: one
/// line each, never a silent gap.
fn output_notes(run: &Run) -> impl Iterator<Item = String> + '_ {
    let failures = run
        .metrics
        .iter()
        .filter_map(|m| m.failure.as_ref().map(|why| format!("metric {why}")));
    let streams = run.outputs.iter().filter(|o| !o.note.is_empty()).map(|o| {
        // A service's notes name the service themselves ("service db exited …").
        if o.role == crate::output::COMMAND_ROLE {
            format!("{}: {}", o.stream, o.note)
        } else {
            o.note.clone()
        }
    });
    failures.chain(streams)
}

/// What a process row needs said: whose reaped children `(exited children)` holds, and why
/// they could not be told apart.
fn process_notes(run: &Run) -> impl Iterator<Item = String> + '_ {
    run.processes
        .iter()
        .filter(|p| !p.note.is_empty())
        .map(|p| format!("{}: {}", p.name, p.note))
}

/// Imported histograms are not frames: the report points to `framelab hist`.
fn imported_histograms_note(run: &Run) -> Option<String> {
    let names: Vec<&str> = run
        .histograms
        .iter()
        .map(|h| h.name.as_str())
        .take(5)
        .collect();
    let more = if run.histograms.len() > names.len() {
        ", …"
    } else {
        ""
    };
    (!names.is_empty()).then(|| {
        format!(
            "The run holds {} imported histograms ({}{more}): `framelab hist` prints them.",
            run.histograms.len(),
            names.join(", ")
        )
    })
}

/// A thread's series keeps the name it had when first read: a process that exec'd later (a
/// `pyenv` shim's bash becoming python3) would be named as it began. Its process row holds
/// its last name: the busiest threads take it for their process and for its main thread.
fn name_processes_as_they_ended(
    threads: &mut [super::telemetry::ThreadRow],
    processes: &[crate::model::ProcessStats],
) {
    for row in threads {
        let mut rows = processes.iter().filter(|p| p.pid == row.pid);
        // A pid that named two processes during the run: which one is not known.
        if let (Some(process), None) = (rows.next(), rows.next()) {
            row.process = process.name.clone();
            if row.tid == row.pid {
                row.name = process.name.clone();
            }
        }
    }
}

/// A thread that recorded spans keeps the name it recorded under (the SDK's, `main` for a
/// main thread the kernel calls after its program): the busiest threads then name it as the
/// thread and worst-frame tables do.
fn name_threads_as_recorded(
    rows: &mut [super::telemetry::ThreadRow],
    recorded: &[crate::model::ThreadInfo],
) {
    for row in rows {
        let mut named = recorded
            .iter()
            .filter(|t| t.pid == row.pid && t.tid == row.tid && !t.name.is_empty());
        // A tid that recorded under two names (reused by a second thread): which one is not known.
        if let (Some(thread), None) = (named.next(), named.next()) {
            row.name = thread.name.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::{
        crashed_run, degenerate_runs, reference_run, uninstrumented_run, MS, US,
    };
    use crate::model::EndReason;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn budget_from_fps_or_given() {
        let mut m = RunMeta {
            target_fps: Some(120.0),
            ..RunMeta::default()
        };
        assert_eq!(budget_ns(&m), Some(8_333_333));
        m.budget_ns = Some(5_000_000);
        assert_eq!(budget_ns(&m), Some(5_000_000));
        m.budget_ns = Some(0);
        m.target_fps = Some(0.0);
        assert_eq!(budget_ns(&m), None);
        m.target_fps = Some(f64::NAN);
        assert_eq!(budget_ns(&m), None);
    }

    #[test]
    fn reference_run_window_frames_and_fps() {
        let a = analyze(&reference_run());
        assert_eq!(a.window.start_ns, 20 * MS);
        assert_eq!(a.window.end_ns, 100 * MS);
        assert_eq!(a.window.length_ns, 80 * MS);
        assert_eq!(a.window.warmup_frames, 2);
        assert_eq!(a.window.after_frames, 1);
        assert_eq!(a.frames, 8);
        assert!(!a.frames_from_hint);
        assert_eq!(a.spans, 33);
        // 8 frames over 0.08 s.
        assert!(close(a.observed_fps.unwrap(), 100.0));
        // Intervals 10 10 10 19.5 5 5.5 10: mean 10 ms; p50 10 ms; fewer than 10 intervals.
        let f = a.fps.as_ref().unwrap();
        assert!(close(f.mean, 100.0));
        assert!(close(f.p50.unwrap(), 100.0));
        assert_eq!(f.p10, None);
        assert!(a.notes.is_empty(), "{:?}", a.notes);
    }

    #[test]
    fn reference_run_total_and_interval_distributions() {
        let a = analyze(&reference_run());
        // Totals sorted: 8.5 ×6, 13, 18 ms. p95: h = 6.65 → 13 + 0.65·5 = 16.25 ms.
        // p99: h = 6.93 → 17.65 ms. Mean 82 / 8 = 10.25 ms.
        let t = a.total.as_ref().unwrap();
        assert_eq!(t.count, 8);
        assert_eq!(t.min_ns, 8.5e6);
        assert_eq!(t.p50_ns, 8.5e6);
        assert!(close(t.p95_ns, 16.25e6));
        assert!(close(t.p99_ns, 17.65e6));
        assert_eq!(t.max_ns, 18e6);
        assert!(close(t.mean_ns, 10.25e6));
        // Intervals sorted: 5 5.5 10 10 10 10 19.5 ms. p95: h = 5.7 → 10 + 0.7·9.5 = 16.65.
        // p99: h = 5.94 → 18.93.
        let i = a.interval.as_ref().unwrap();
        assert_eq!(i.count, 7);
        assert_eq!(i.min_ns, 5e6);
        assert_eq!(i.p50_ns, 10e6);
        assert!(close(i.p95_ns, 16.65e6));
        assert!(close(i.p99_ns, 18.93e6));
        assert_eq!(i.max_ns, 19.5e6);
        assert!(close(i.mean_ns, 10e6));
    }

    #[test]
    fn reference_run_stage_table_spans_two_processes() {
        let a = analyze(&reference_run());
        let names: Vec<&str> = a.stages.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["capture", "encode", "send", "total", "interval"]);
        assert_eq!(a.stage_names, ["capture", "encode", "send"]);
        // Encode (on the other process's thread), frames 2–9: 5 ms ×7 and 15 ms.
        let e = &a.stages[1].dist;
        assert_eq!(e.count, 8);
        assert_eq!(e.min_ns, 5e6);
        assert_eq!(e.max_ns, 15e6);
        assert!(close(e.mean_ns, 6.25e6));
        assert_eq!(a.stages[0].dist.count, 8);
        assert_eq!(a.stages[2].dist.mean_ns, 0.5e6);
        assert_eq!(a.total.as_ref(), Some(&a.stages[3].dist));
        assert_eq!(a.interval.as_ref(), Some(&a.stages[4].dist));
    }

    #[test]
    fn reference_run_late_stutter_and_worst() {
        let a = analyze(&reference_run());
        let l = a.late.as_ref().unwrap();
        // Frames 6 (18 ms) and 7 (13 ms) are late, back to back; 19.5 ms skipped one slot.
        assert_eq!(l.budget_ns, 10 * MS);
        assert_eq!(l.late_frames, 2);
        assert_eq!(l.late_pct, 25.0);
        assert_eq!(l.missed_slots, 1);
        assert_eq!(l.longest_streak, 2);
        // Mean interval 10 ms → window 32: 19.5 ms < 2.5 × 10 ms. No stutter.
        let s = a.stutter.as_ref().unwrap();
        assert_eq!((s.count, s.count_pct, s.time_pct), (0, 0.0, 0.0));
        assert_eq!(a.worst_frames.len(), 8);
        let w = &a.worst_frames[0];
        assert_eq!((w.frame, w.total_ns), (6, 18 * MS));
        assert_eq!(w.stage_ns, vec![Some(MS), Some(15 * MS), Some(500 * US)]);
        assert!(close(w.t_s, 0.078));
        assert_eq!(a.worst_frames[1].frame, 7);
        // Equal totals: earliest end first.
        let rest: Vec<u64> = a.worst_frames[2..].iter().map(|w| w.frame).collect();
        assert_eq!(rest, [2, 3, 4, 5, 8, 9]);
    }

    #[test]
    fn reference_run_counters_and_cpu() {
        let a = analyze(&reference_run());
        // 8 measured frames × 12 500 bytes = 100 kB over 0.08 s = 1.25 MB/s = 10 Mbit/s.
        let b = &a.counters[0];
        assert_eq!((b.name.as_str(), b.total, b.frames), ("bytes", 100_000, 8));
        assert!(close(b.per_second, 1.25e6));
        assert!(close(b.bits_per_second.unwrap(), 10e6));
        // Keyframes on frames 0 (warmup) and 5: one counts.
        let k = &a.counters[1];
        assert_eq!((k.name.as_str(), k.total, k.frames), ("keyframe", 1, 1));
        assert_eq!(k.bits_per_second, None);
        // host: 80 ms CPU over 80 ms = 100%; encoderd: 40 of 80 = 50%.
        assert_eq!(a.processes[0].load_pct, 100.0);
        assert_eq!(a.processes[1].load_pct, 50.0);
        assert_eq!(a.processes[1].cores, 0.5);
        // All: 120 ms over the 80 ms window = 150%; 120 ms / 8 frames = 15 ms per frame.
        let cpu = a.cpu.unwrap();
        assert!(close(cpu.load_pct.unwrap(), 150.0));
        assert!(close(cpu.cores.unwrap(), 1.5));
        assert!(close(cpu.cpu_per_frame_ns.unwrap(), 15e6));
        assert_eq!(cpu.peak_rss_bytes, 64 << 20);
    }

    #[test]
    fn crashed_run_keeps_what_was_recorded_and_says_why() {
        let a = analyze(&crashed_run());
        // Window end repaired to the last span end, 58.5 ms: frames 2–5 measured.
        assert_eq!(a.window.end_ns, 58 * MS + 500 * US);
        assert_eq!(a.window.length_ns, 38 * MS + 500 * US);
        assert_eq!(a.frames, 4);
        assert_eq!(a.negative_spans, 1);
        assert_eq!(a.end_reason, EndReason::Unfinished);
        let joined = a.notes.join("\n");
        assert!(
            joined.contains("crashed: killed by SIGSEGV (signal 11)"),
            "{joined}"
        );
        assert!(joined.contains("not finalised"), "{joined}");
        assert!(joined.contains("42 events were dropped"), "{joined}");
        assert!(joined.contains("--ring-records"), "{joined}");
        assert!(joined.contains("1 invalid record was skipped"), "{joined}");
        assert!(
            joined.contains("1 span with a duration out of range"),
            "{joined}"
        );
        // Counter values of frames 6–10, whose spans were never recorded.
        assert!(joined.contains("5 counter values not counted"), "{joined}");
    }

    #[test]
    fn frames_hint_is_no_rate_after_a_warmup_or_a_stop() {
        // A file from before `--frames` with `--warmup` was refused: N covers the whole run.
        let mut warmed = uninstrumented_run();
        warmed.meta.window_start_ns = 500 * MS;
        let a = analyze(&warmed);
        assert!(!a.frames_from_hint && a.observed_fps.is_none());
        assert!(a.notes.iter().any(|n| n.contains("starts after a warmup")));
        let mut stopped = uninstrumented_run();
        stopped.meta.end_reason = EndReason::Duration;
        let a = analyze(&stopped);
        assert!(a.observed_fps.is_none() && a.cpu.unwrap().cpu_per_frame_ns.is_none());
        assert!(
            a.notes.iter().any(|n| n.contains("--duration")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn uninstrumented_run_uses_frames_hint() {
        let a = analyze(&uninstrumented_run());
        assert!(a.frames_from_hint);
        assert_eq!(a.frames, 500);
        // 500 over 2 s; 3.5 s of CPU over 2 s = 175%; 3.5 s / 500 = 7 ms per frame.
        assert!(close(a.observed_fps.unwrap(), 250.0));
        let cpu = a.cpu.as_ref().unwrap();
        assert!(close(cpu.load_pct.unwrap(), 175.0));
        assert!(close(cpu.cpu_per_frame_ns.unwrap(), 7e6));
        assert!(a.stages.is_empty() && a.fps.is_none() && a.late.is_none());
        assert!(a.total.is_none() && a.worst_frames.is_empty());
        // It ran to completion with no --duration asked: nothing to say.
        assert!(a.notes.is_empty(), "{:?}", a.notes);
    }

    #[test]
    fn empty_and_degenerate_runs_do_not_panic_or_produce_nan() {
        let runs = degenerate_runs();
        for run in &runs {
            let a = analyze(run);
            // Debug prints a non-finite float as NaN or inf (JSON would hide it as null).
            let debug = format!("{a:?}");
            assert!(!debug.contains("NaN") && !debug.contains("inf"), "{debug}");
        }
        let a = analyze(&runs[0]);
        assert_eq!(a.frames, 0);
        assert_eq!(a.observed_fps, None);
        assert!(a.notes.iter().any(|n| n.contains("window is empty")));
        // All eleven frames end at 31 ms, inside the window.
        let a = analyze(&runs[3]);
        assert_eq!(a.frames, 11);
        assert!(a.fps.is_none());
    }
}
