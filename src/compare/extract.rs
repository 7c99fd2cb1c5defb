//! From a loaded run to what comparisons need: the per-run numbers a report shows, and
//! the sorted frame-level values that frame-based metrics resample.

use crate::analyze::cpu::{role_cpu, RoleCpu};
use crate::analyze::frames::{measure_run, Frames, NO_FRAME};
use crate::analyze::stats::sort_ns;
use crate::analyze::telemetry::EnergyRow;
use crate::analyze::{analyze, Analysis, CpuSummary};
use crate::model::Run;

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
    pub stages: Vec<(String, Vec<i64>)>,
    /// Measured frames' totals (end-to-end latency).
    pub totals: Vec<i64>,
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
    pub waits: Vec<(String, Vec<i64>)>,
    /// Waits, threads and the bottleneck, to explain a change (`explain`).
    pub pipeline: Option<crate::analyze::pipeline::PipelineSummary>,
    /// An imported run's source, said where a recorded run's command would be:
    /// "imported from trace.json (chrome)".
    pub imported_from: Option<String>,
    /// Imported histograms (bpftrace prints), as the run holds them.
    pub histograms: Vec<crate::model::Histogram>,
    /// The run holds imported histograms and no spans: compared histogram by histogram.
    pub histogram_only: bool,
}

pub fn extract(run: &Run) -> RunData {
    let analysis = analyze(run);
    let mut data = from_analysis(&analysis);
    data.fixed_duration = run.meta.end_reason == crate::model::EndReason::Duration;
    data.output_metrics = run.metrics.clone();
    data.fps_from_frames = analysis.frames_from_hint && analysis.observed_fps.is_some();
    let (stages, totals, waits) = frame_values(run, &analysis);
    data.stages = stages;
    data.totals = totals;
    data.waits = waits;
    data.imported_from = run
        .import
        .as_ref()
        .map(|i| format!("imported from {} ({})", i.files.join(", "), i.format));
    data.histograms = run.histograms.clone();
    data.histogram_only = run.spans.is_empty() && !run.histograms.is_empty();
    data
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
