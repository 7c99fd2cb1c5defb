//! From a run to what comparisons need: the per-run numbers a report shows, and the
//! sorted frame-level values that frame-based metrics resample, reduced to the ranks their
//! percentiles read ([`Keep`]). A stored run is streamed into the report's compact
//! analysis ([`extract_stored`]): one run at a time, nothing of it kept but this.

use std::path::Path;

use crate::analyze::compact::columns::SpanColumns;
use crate::analyze::compact::table::FrameTable;
use crate::analyze::compact::values::{with_ns, NsValues};
use crate::analyze::compact::window::{measure, MeasuredFrames};
use crate::analyze::compact::{self, frameless, Columns, Sorted, ANALYSIS_KEEPS};
use crate::analyze::cpu::{role_cpu, RoleCpu};
use crate::analyze::frames::{measure_run, Frames, NO_FRAME};
use crate::analyze::stats::{sort_ns, Ns, Ranked};
use crate::analyze::telemetry::EnergyRow;
use crate::analyze::{analyze, Analysis, CpuSummary};
use crate::model::Run;
use crate::stats::sorted::held_ranges_of;
use crate::stats::SortedValues;

/// Which of a run's sorted values are kept.
#[derive(Clone, Debug, PartialEq)]
pub enum Keep {
    /// Every value (the HTML page pools the runs' values into its curves).
    All,
    /// The ranks percentiles p (0–1) and their bootstrap redraws read.
    Near(Vec<f64>),
}

impl Keep {
    fn reduce<T: Ns>(&self, sorted: &[T]) -> SortedValues {
        match self {
            Keep::All => SortedValues::all(sorted),
            Keep::Near(ps) => SortedValues::keeping(sorted, ps),
        }
    }
}

/// One run, reduced. Frame values are nanoseconds, sorted ascending.
#[derive(Clone, Debug, Default)]
pub struct RunData {
    pub observed_fps: Option<f64>,
    /// The measured window's length.
    pub wall_ns: i64,
    /// User + system CPU of every process over the window.
    pub cpu_ns: i64,
    /// Processes were measured (an imported trace has none: no CPU, load or cores to
    /// compare, rather than zeros).
    pub cpu_measured: bool,
    pub load_pct: Option<f64>,
    pub cpu_per_frame_ns: Option<f64>,
    pub peak_rss_bytes: u64,
    /// (late frames, measured frames), when the run has a budget and frames.
    pub late: Option<(u64, u64)>,
    /// Durations of each stage's spans in measured frames, in the report's stage order.
    pub stages: Vec<(String, SortedValues)>,
    /// Measured frames' totals (end-to-end latency).
    pub totals: SortedValues,
    /// The worst frame (shown, never used for a verdict): (frame id, total ns).
    pub worst_frame: Option<(u64, i64)>,
    /// The window was closed by --duration (so wall time is fixed, not measured).
    pub fixed_duration: bool,
    /// Energy, mean power and energy per frame over the window of each device with an
    /// energy counter or power readings (telemetry), named as the report names it.
    pub energy: Vec<crate::analyze::telemetry::EnergyRow>,
    /// Resolution of `cpu_ns` (0 unknown), and what CPU per frame divides by.
    pub cpu_resolution_ns: i64,
    pub work_units: u64,
    /// CPU of each role (the command's tree, each watched process) over the window.
    pub roles: Vec<RoleCpu>,
    /// Metrics from the command's output (`--metric`), with or without a value.
    pub output_metrics: Vec<crate::output::MetricValue>,
    /// fps is `--frames N` over the whole run (start-up and shutdown included).
    pub fps_from_frames: bool,
    /// Each wait pair's waits over measured frames (`convert→encode`), sorted ascending.
    pub waits: Vec<(String, SortedValues)>,
    /// Waits, threads and the bottleneck, to explain a change (`explain`).
    pub pipeline: Option<crate::analyze::pipeline::PipelineSummary>,
    /// An imported run's source, said where a recorded run's command would be:
    /// "imported from trace.json (chrome)".
    pub imported_from: Option<String>,
    /// Imported histograms (bpftrace prints), as the run holds them.
    pub histograms: Vec<crate::model::Histogram>,
    /// The run holds imported histograms and no spans: compared histogram by histogram.
    pub histogram_only: bool,
    /// An import with no frame definition (each slice counted alone): no frame figures
    /// (totals, fps, late), as its report shows none.
    pub frames_undefined: bool,
    /// The machine's CPU time over the window that no task had (stolen, in interrupts).
    pub cpu_taken: Option<crate::model::CpuTakenFacts>,
}

/// A loaded run, every value kept.
pub fn extract(run: &Run) -> RunData {
    extract_keeping(run, &Keep::All)
}

/// A loaded run, its values kept as `keep` says.
pub fn extract_keeping(run: &Run, keep: &Keep) -> RunData {
    let analysis = analyze(run);
    let mut data = from_analysis(&analysis);
    let (stages, totals, waits) = frame_values(run, &analysis);
    data.stages = (stages.into_iter())
        .map(|(name, v)| (name, keep.reduce(&v)))
        .collect();
    data.totals = keep.reduce(&totals);
    data.waits = (waits.into_iter())
        .map(|(name, v)| (name, keep.reduce(&v)))
        .collect();
    from_head(&mut data, run, &analysis, !run.spans.is_empty());
    data
}

/// Run `run_id` of `path`, streamed into the columns of the report's analysis (about a
/// third of a loaded run's memory) and reduced as `keep` says.
pub fn extract_stored(path: &Path, run_id: i64, keep: &Keep) -> anyhow::Result<RunData> {
    let run = crate::store::open_run(path, Some(run_id))?;
    let head = &run.head;
    let mut by_id: Vec<(usize, SortedValues)> = Vec::new();
    let mut take_stages = |sorted: Sorted| {
        if let Sorted::Stage(id, values) = sorted {
            by_id.push((id, with_ns!(values, v => keep.reduce(v))));
        }
    };
    if let Keep::Near(ps) = keep {
        if let Some(data) = extract_frameless(&run, ps)? {
            return Ok(data);
        }
    }
    let (table, spans) = compact::read_frames(&run)?;
    // No columns held (as the report's analysis): the waits as the analysis sorts them.
    let mut stream_waits: Vec<(String, SortedValues)> = Vec::new();
    let mut take_waits = |name: &str, values: &NsValues| {
        stream_waits.push((name.to_owned(), with_ns!(values, v => keep.reduce(v))));
    };
    let shown = (
        &mut take_stages as &mut dyn FnMut(Sorted),
        &mut take_waits as _,
    );
    let streamed =
        compact::streamed::analyze_measured_with_waits(head, &table, spans, &run, shown)?;
    let (analysis, table, measured, waits) = match streamed {
        Some((analysis, measured)) => (analysis, table, measured, stream_waits),
        None => {
            compact::count_column_fallback();
            let (columns, table) = compact::columns_beside(table, &run, ANALYSIS_KEEPS)?;
            let (_, measured) = measure(&table, &columns, &head.meta);
            let waits = waits(head, &columns, &table, &measured, keep)?;
            let analysis = compact::analyze_columns(
                head,
                Columns::Owned(Box::new(columns)),
                &table,
                &run,
                &mut take_stages,
            )?;
            (analysis, table, measured, waits)
        }
    };
    let mut data = from_analysis(&analysis);
    let has_spans = analysis.spans > 0;
    if has_spans {
        let name_of = |id: usize| crate::analyze::stages::stage_name(&head.stages, id);
        // The report's order, as `frame_values` gives it.
        for name in &analysis.stage_names {
            if let Some(at) = by_id.iter().position(|(id, _)| &name_of(*id) == name) {
                data.stages.push((name.clone(), by_id.swap_remove(at).1));
            }
        }
        // Taken once the analysis is done, not beside it: its peak is the run's.
        data.totals = totals(&table, &measured, keep);
        data.waits = waits;
    }
    from_head(&mut data, head, &analysis, has_spans);
    Ok(data)
}

/// [`extract_stored`] of a run of one span a frame, ids counting up (the report's
/// `compact::frameless`): neither frame table nor values held, the ranks `ps` read taken
/// from reads of the run (issue 29). `None` for a run of another shape.
fn extract_frameless(run: &crate::store::StoredRun, ps: &[f64]) -> anyhow::Result<Option<RunData>> {
    let head = &run.head;
    let ranks = |r: &dyn Ranked| {
        for (from, to) in held_ranges_of(r.count(), Some(ps)) {
            for rank in from..to {
                r.at(rank);
            }
        }
    };
    let Some((analysis, values)) = frameless::analyze_asking(head, run, Some(&ranks))? else {
        return Ok(None);
    };
    let reduce =
        |v: &frameless::Values| SortedValues::of_ranked(v, Some(ps), v.digest().unwrap_or(0));
    let mut data = from_analysis(&analysis);
    let has_spans = analysis.spans > 0;
    if has_spans {
        let name_of = |id: usize| crate::analyze::stages::stage_name(&head.stages, id);
        // The report's order, as `frame_values` gives it.
        for name in &analysis.stage_names {
            if let Some((_, v)) = values.stages.iter().find(|(id, _)| &name_of(*id) == name) {
                data.stages.push((name.clone(), reduce(v)));
            }
        }
        data.totals = match (&values.totals, values.stages.as_slice()) {
            (Some(totals), _) => reduce(totals),
            (None, [(_, one)]) => reduce(one),
            (None, _) => SortedValues::default(),
        };
    }
    from_head(&mut data, head, &analysis, has_spans);
    Ok(Some(data))
}

/// The measured frames' totals, sorted and reduced.
fn totals(table: &FrameTable, measured: &MeasuredFrames, keep: &Keep) -> SortedValues {
    let mut totals = compact::values_of_frames(measured, |i| table.total_ns(i));
    totals.sort();
    with_ns!(&totals, v => keep.reduce(v))
}

/// Each wait pair's waits, reduced, from the columns (read with starts and threads); none
/// where no measured frame has two spans.
fn waits(
    head: &Run,
    columns: &SpanColumns,
    table: &FrameTable,
    measured: &MeasuredFrames,
    keep: &Keep,
) -> anyhow::Result<Vec<(String, SortedValues)>> {
    let measured_spans = (columns.frame.iter())
        .filter(|&&f| f != NO_FRAME && measured.in_window.get(f))
        .count();
    if measured_spans as u64 <= measured.count {
        return Ok(Vec::new());
    }
    let waits = compact::wait_values(head, columns, table, measured)?;
    Ok((waits.into_iter())
        .map(|(name, v)| (name, keep.reduce(&v)))
        .collect())
}

/// What the run's head says besides its analysis.
fn from_head(data: &mut RunData, run: &Run, analysis: &Analysis, has_spans: bool) {
    data.fixed_duration = run.meta.end_reason == crate::model::EndReason::Duration;
    data.output_metrics = run.metrics.clone();
    data.fps_from_frames = analysis.frames_from_hint && analysis.observed_fps.is_some();
    data.imported_from = run
        .import
        .as_ref()
        .map(|i| format!("imported from {} ({})", i.files.join(", "), i.format));
    data.histograms = run.histograms.clone();
    data.histogram_only = !has_spans && !run.histograms.is_empty();
    data.frames_undefined = run.import.as_ref().is_some_and(|i| i.frames_undefined());
    if data.frames_undefined {
        data.totals = SortedValues::default();
        data.observed_fps = None;
        data.late = None;
        data.cpu_per_frame_ns = None;
        data.worst_frame = None;
    }
}

fn from_analysis(a: &Analysis) -> RunData {
    let unmeasured = CpuSummary::default();
    let cpu = a.cpu.as_ref().unwrap_or(&unmeasured);
    RunData {
        observed_fps: a.observed_fps,
        wall_ns: a.window.length_ns,
        cpu_ns: cpu.user_ns.saturating_add(cpu.sys_ns),
        cpu_measured: a.cpu.is_some(),
        load_pct: cpu.load_pct,
        cpu_per_frame_ns: cpu.cpu_per_frame_ns,
        cpu_resolution_ns: cpu.cpu_resolution_ns,
        work_units: cpu.work_units,
        roles: role_cpu(&a.processes, a.window.length_ns),
        peak_rss_bytes: cpu.peak_rss_bytes,
        late: a
            .late
            .as_ref()
            .filter(|_| a.frames > 0 && !a.frames_from_hint)
            .map(|l| (l.late_frames, a.frames)),
        worst_frame: a.worst_frames.first().map(|w| (w.frame, w.total_ns)),
        pipeline: a.pipeline.clone(),
        energy: (a.telemetry.iter())
            .flat_map(|t| t.energy.iter().cloned())
            .collect(),
        cpu_taken: a.cpu_taken.clone(),
        ..RunData::default()
    }
}

/// Named sorted values, one set per stage or wait.
type ValuesByName = Vec<(String, Vec<i64>)>;

/// Sorted durations per stage (spans of measured frames, as the stage table counts them),
/// sorted frame totals, and each wait pair's sorted waits.
fn frame_values(run: &Run, analysis: &Analysis) -> (ValuesByName, Vec<i64>, ValuesByName) {
    if run.spans.is_empty() {
        return (Vec::new(), Vec::new(), Vec::new());
    }
    let frames = Frames::from_spans(&run.spans);
    let (_, measured) = measure_run(run, &frames);
    let mut by_stage: Vec<Vec<i64>> = vec![Vec::new(); run.stages.len().max(1)];
    for (i, span) in run.spans.iter().enumerate() {
        let f = frames.span_frame[i];
        if f == NO_FRAME || !measured.in_window[f as usize] {
            continue;
        }
        let stage = span.stage as usize;
        if stage >= by_stage.len() {
            by_stage.resize(stage + 1, Vec::new());
        }
        by_stage[stage].push(span.dur_ns);
    }
    let name_of = |id: usize| crate::analyze::stages::stage_name(&run.stages, id);
    // The report's order: analysis.stage_names.
    let mut stages = Vec::new();
    for name in &analysis.stage_names {
        if let Some(id) = (0..by_stage.len()).find(|&id| &name_of(id) == name) {
            let mut values = std::mem::take(&mut by_stage[id]);
            sort_ns(&mut values);
            stages.push((name.clone(), values));
        }
    }
    let mut totals = measured.totals_ns(&frames);
    sort_ns(&mut totals);
    let waits = crate::analyze::pipeline::wait_values(run, &frames, &measured);
    (stages, totals, waits)
}

/// This run's energy row of `device`.
pub fn energy_of<'a>(run: &'a RunData, device: &str) -> Option<&'a EnergyRow> {
    run.energy.iter().find(|e| e.device == device)
}

/// Whether a metric from output in `unit` counts work done in the window (requests,
/// frames, bytes written), so energy ÷ its value is energy per unit of work. A rate
/// (`req/s`) does not: its time base is the program's own (a load generator's phase), not
/// the window the energy was measured over.
pub fn counts_work(unit: &str) -> bool {
    !unit.trim_end().ends_with("/s")
}

/// The window's energy of `device` ÷ the value of the metric from output `metric`.
pub fn per_unit(run: &RunData, metric: &str, device: &str) -> Option<f64> {
    let m = run.output_metrics.iter().find(|m| m.name == metric)?;
    if !counts_work(&m.unit) {
        return None;
    }
    let units = m.value.filter(|v| *v > 0.0)?;
    Some(energy_of(run, device)?.joules / units)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::{
        crashed_run, degenerate_runs, metrics_run, pipeline_edge_runs, reference_run,
        uninstrumented_run,
    };
    use crate::analyze::telemetry::fixture::telemetry_run;

    /// A stored run streamed into columns reduces to what the loaded run reduces to: every
    /// field, stage values, totals and waits included.
    #[test]
    fn a_streamed_run_reduces_as_the_loaded_run() {
        let mut runs: Vec<(String, Run)> = vec![
            ("reference".into(), reference_run()),
            ("crashed".into(), crashed_run()),
            ("uninstrumented".into(), uninstrumented_run()),
            ("metrics".into(), metrics_run()),
            ("telemetry".into(), telemetry_run()),
        ];
        runs.extend(
            (degenerate_runs().into_iter().enumerate())
                .map(|(i, r)| (format!("degenerate {i}"), r)),
        );
        runs.extend((pipeline_edge_runs().into_iter()).map(|(name, r)| (name.to_owned(), r)));
        let dir = tempfile::tempdir().unwrap();
        for (k, (label, run)) in runs.iter().enumerate() {
            let path = dir.path().join(format!("{k}.framelab"));
            let id = crate::store::write_run(&path, run).unwrap();
            let loaded = crate::store::load_run(&path, Some(id)).unwrap();
            let keep = Keep::for_metrics(&["total.p90".into()]);
            for keep in [Keep::All, keep] {
                let old = format!("{:#?}", extract_keeping(&loaded, &keep));
                let new = format!("{:#?}", extract_stored(&path, id, &keep).unwrap());
                assert!(
                    old == new,
                    "{label} ({keep:?}):\nloaded {old}\nstreamed {new}"
                );
            }
        }
    }

    /// A run of one span a frame, ids counting up, no counters: reduced without a frame
    /// table (`extract_frameless`), to what the loaded run reduces to, with the library's
    /// tests keeping a handful of values a set (every rank read from re-reads).
    #[test]
    fn a_run_of_one_span_a_frame_reduces_without_a_frame_table_as_the_loaded_run() {
        use crate::model::{EndReason, RunMeta, Span, ThreadInfo};
        let run = |frames: u64, stages: u16, dur: fn(u64) -> i64| Run {
            meta: RunMeta {
                name: "rate".into(),
                target_fps: Some(120.0),
                window_start_ns: 50_000_000,
                window_end_ns: frames as i64 * 4_000_000,
                end_reason: EndReason::Duration,
                ..RunMeta::default()
            },
            stages: (0..stages).map(|s| format!("s{s}")).collect(),
            threads: vec![ThreadInfo {
                pid: 1,
                tid: 1,
                name: "main".into(),
                dropped: 0,
            }],
            spans: (0..frames)
                .map(|n| Span {
                    frame: 7 + n,
                    stage: (n % u64::from(stages)) as u16,
                    thread: 0,
                    start_ns: n as i64 * 4_000_000,
                    dur_ns: dur(n),
                })
                .collect(),
            ..Run::default()
        };
        let runs = [
            ("spread", run(3000, 1, |n| (n * 7919 % 3001) as i64 * 1000)),
            ("all equal", run(3000, 1, |_| 2_000_000)),
            ("ties", run(20_000, 1, |n| 1_000_000 + (n % 3) as i64)),
            (
                "two stages",
                run(3000, 2, |n| (n * 104_729 % 3_500_000) as i64),
            ),
            ("no measured frame", run(5, 1, |_| 1000)),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (k, (label, run)) in runs.iter().enumerate() {
            let path = dir.path().join(format!("{k}.framelab"));
            let id = crate::store::write_run(&path, run).unwrap();
            let loaded = crate::store::load_run(&path, Some(id)).unwrap();
            let keep = Keep::for_metrics(&["total.p90".into(), "s0.p99.9".into()]);
            let Keep::Near(ps) = &keep else {
                unreachable!("percentiles")
            };
            let stored = crate::store::open_run(&path, Some(id)).unwrap();
            let frameless = extract_frameless(&stored, ps).unwrap();
            assert!(frameless.is_some(), "{label}");
            let old = format!("{:#?}", extract_keeping(&loaded, &keep));
            let new = format!("{:#?}", extract_stored(&path, id, &keep).unwrap());
            assert!(old == new, "{label}:\nloaded {old}\nframeless {new}");
        }
    }
}
