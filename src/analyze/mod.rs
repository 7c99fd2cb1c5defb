//! Pure functions from a loaded run to the numbers a report prints. No I/O here.
//!
//! Definitions are in docs/metrics.md; each function cites the one it implements.

pub mod compact;
pub mod counters;
pub mod cpu;
pub mod fps;
pub mod frames;
pub mod handoff;
pub mod late;
pub mod metrics;
pub mod notes;
pub mod pacer;
pub mod pacing;
pub mod pair;
pub mod pipeline;
pub mod sched;
pub mod stages;
pub mod stats;
mod summary;
pub mod telemetry;

#[cfg(test)]
pub(crate) mod fixtures;

pub use summary::{analyze, budget_ns};

use serde::{Deserialize, Serialize};

use crate::model::{EndReason, ExitInfo, Host, ProcessRole};
use pacing::PacingSummary;

/// A distribution's summary, nanoseconds. Percentiles are Hyndman–Fan type 7.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    pub count: u64,
    pub min_ns: f64,
    pub p50_ns: f64,
    pub p95_ns: f64,
    pub p99_ns: f64,
    pub max_ns: f64,
    pub mean_ns: f64,
}

/// A row of the stage table (every stage, then `total` and `interval`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageRow {
    pub name: String,
    pub dist: Dist,
}

/// Output cadence as frames per second. `None` where N < 1/p (DESIGN: not reported).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FpsSummary {
    /// 1e9 / mean interval.
    pub mean: f64,
    /// fps_p = 1e6 / Q(1-p) of the interval in µs: p50, p10, p5, p1, p0.1.
    pub p50: Option<f64>,
    pub p10: Option<f64>,
    pub p5: Option<f64>,
    pub p1: Option<f64>,
    pub p0_1: Option<f64>,
    /// 1e6 / mean of intervals ≥ Q0.99 (µs).
    pub low1_avg: Option<f64>,
    /// 1e6 / t(k), intervals sorted descending, k the first index where the running sum reaches 1%.
    pub low1_int: Option<f64>,
    pub low0_1_avg: Option<f64>,
    pub low0_1_int: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LateSummary {
    pub budget_ns: i64,
    /// Frames whose total exceeds the budget.
    pub late_frames: u64,
    pub late_pct: f64,
    /// Σ round(interval / budget) − 1 over intervals > 1.5 × budget.
    pub missed_slots: u64,
    /// Longest run of consecutive late frames (frames ordered by end).
    pub longest_streak: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StutterSummary {
    pub count: u64,
    pub count_pct: f64,
    pub time_pct: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CounterSummary {
    pub name: String,
    /// Sum over measured frames.
    pub total: i64,
    /// Frames of the window that carry this counter.
    pub frames: u64,
    /// total ÷ window seconds.
    pub per_second: f64,
    /// Set for byte counters (name `bytes` or ending in `_bytes`): total × 8 ÷ window seconds.
    pub bits_per_second: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessRow {
    pub pid: u32,
    pub name: String,
    pub role: ProcessRole,
    pub wall_ns: i64,
    pub user_ns: i64,
    pub sys_ns: i64,
    /// (user + sys) ÷ wall × 100, wall being the time this process was alive in the window.
    pub load_pct: f64,
    pub cores: f64,
    pub peak_rss_bytes: u64,
    /// The `--service` it belongs to; else empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub service: String,
    /// The role of a watched process (`--watch-pid ROLE=PID`); else empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub watch_role: String,
    /// The resolution of `user_ns + sys_ns` (the run file's `cpu_resolution_ns`; 0 unknown).
    #[serde(default)]
    pub cpu_resolution_ns: i64,
}

/// CPU of everything framelab started plus everything it watched, over the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSummary {
    pub user_ns: i64,
    pub sys_ns: i64,
    /// CPU ÷ the window; none for an empty window.
    pub load_pct: Option<f64>,
    pub cores: Option<f64>,
    /// (user + sys) ÷ measured frames, when there are frames.
    pub cpu_per_frame_ns: Option<f64>,
    /// framelab's own CPU over the window as a % of one core: what observing cost.
    #[serde(default)]
    pub collector_load_pct: Option<f64>,
    /// Sum of each process's peak: an upper bound of the peak of them all together.
    pub peak_rss_bytes: u64,
    /// The coarsest resolution of the processes' CPU figures (0 unknown); load %, cores and
    /// CPU per frame are that divided by the window or the frames.
    #[serde(default)]
    pub cpu_resolution_ns: i64,
    /// What CPU per frame divides by (measured frames, or N of `--frames N`).
    #[serde(default)]
    pub work_units: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorstFrame {
    pub frame: u64,
    /// Frame end, seconds since launch.
    pub t_s: f64,
    pub total_ns: i64,
    /// Time in each stage of `Analysis::stage_names` (same order; summed when a stage
    /// repeats in the frame; `None` when the frame has no span of that stage).
    pub stage_ns: Vec<Option<i64>>,
    /// The time at least one of its stages ran, and the sum of its waits (total = both);
    /// `None` when the run's frames have one span each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_ns: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ns: Option<i64>,
    /// Its longest wait (`from→to`) and how long it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_wait: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_wait_ns: Option<i64>,
    /// Time its spans were runnable but not running (preempted, or woken and waiting for a
    /// CPU), and the task most of it is attributed to; with a scheduler timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempted_ns: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempted_by: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowSummary {
    pub start_ns: i64,
    pub end_ns: i64,
    pub length_ns: i64,
    /// Frames that ended before the window (warmup): kept in the file, not in statistics.
    pub warmup_frames: u64,
    /// What the warmup counted from, how long it was, and the frames asked for.
    #[serde(default)]
    pub warmup_from: crate::model::WarmupFrom,
    #[serde(default)]
    pub warmup_ns: i64,
    #[serde(default)]
    pub warmup_frames_asked: Option<u64>,
    /// When the first span started (ns after launch), for a warmup from the first frame.
    #[serde(default)]
    pub first_span_ns: Option<i64>,
    /// Frames that ended after the window closed (while the command was being stopped).
    pub after_frames: u64,
    /// Frames that ended inside the window but were still open when the command stopped
    /// (cut short: they lack stages the frames before them had), left out of statistics.
    #[serde(default)]
    pub open_frames: u64,
    /// The stages those frames lack.
    #[serde(default)]
    pub open_frames_lack: Vec<String>,
}

/// Everything a report shows, computed once.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Analysis {
    pub run_id: i64,
    pub name: String,
    pub command: Vec<String>,
    pub started_at: String,
    /// The run's `--tag KEY=VALUE`s, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<crate::model::Tag>,
    pub host: Host,
    pub clock: String,
    pub target_fps: Option<f64>,
    pub budget_ns: Option<i64>,
    pub window: WindowSummary,
    pub end_reason: EndReason,
    pub exit: Option<ExitInfo>,
    /// Frames that ended inside the window; with `--frames N` and no spans, N.
    pub frames: u64,
    /// `frames` is the `--frames N` of an uninstrumented command, not counted from spans.
    pub frames_from_hint: bool,
    /// frames ÷ window seconds; with `--frames N` and no spans, N ÷ window seconds.
    pub observed_fps: Option<f64>,
    /// Spans in the run (all of them, warmup included).
    pub spans: u64,
    /// Spans skipped because their duration was negative (a broken clock).
    pub negative_spans: u64,
    pub dropped_events: u64,
    pub invalid_records: u64,
    pub names_refused: u64,
    pub counters: Vec<CounterSummary>,
    /// How late the SDK's pacer woke (not in any stage, total or thread); `None` without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacer: Option<pacer::PacerSummary>,
    pub late: Option<LateSummary>,
    /// Every stage (first-seen order), then `total` and `interval`.
    pub stages: Vec<StageRow>,
    /// The real stages only, in the order of `stages`; `WorstFrame::stage_ns` follows it.
    pub stage_names: Vec<String>,
    pub total: Option<Dist>,
    pub interval: Option<Dist>,
    pub fps: Option<FpsSummary>,
    pub stutter: Option<StutterSummary>,
    /// Interval jitter and |Δ interval| buckets; `None` without intervals.
    #[serde(default)]
    pub pacing: Option<PacingSummary>,
    pub processes: Vec<ProcessRow>,
    /// `None` where no process was measured (an imported trace): no CPU, rather than zeros.
    #[serde(default)]
    pub cpu: Option<CpuSummary>,
    /// Up to ten, worst total first.
    pub worst_frames: Vec<WorstFrame>,
    /// Waits between stages, threads as resources, the bottleneck; `None` without measured
    /// frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<pipeline::PipelineSummary>,
    /// Plain-language notes the report must show (a crash, drops, an empty window, ...).
    pub notes: Vec<String>,
    /// What the machine did (GPU, CPU frequency, power, threads); `None` for a run
    /// recorded without sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<telemetry::TelemetrySummary>,
    /// Where an imported run came from and what was skipped; `None` for recorded runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<crate::model::ImportInfo>,
    /// Metrics from the command's output (`--metric`): a value, or why there is none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<crate::output::MetricValue>,
    /// What was captured of the command's streams (sizes; the bytes stay in the run file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<crate::output::CapturedOutput>,
    /// What held the run's processes (a cgroup, or framelab's process tree) and the CPU it
    /// counted over the window; `None` for runs recorded before it was kept and imports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_group: Option<crate::model::RunGroupFacts>,
    /// The machine's CPU time over the window that no task had (stolen by the hypervisor,
    /// in interrupts); `None` for runs recorded before it was kept and imports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_taken: Option<crate::model::CpuTakenFacts>,
    /// On-CPU, runnable and blocked time of the spans; `None` for a run recorded without a
    /// scheduler timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched: Option<sched::SchedSummary>,
    /// The `--probe` stages: where each was placed, what it saw and cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<crate::probes::ProbeSummary>,
}
