//! What the machine did during the run, from the samplers' readings: a table per metric,
//! energy per frame, the readings next to the worst frames, throttle reasons during late
//! frames, the busiest threads, and one line per source. Definitions: docs/metrics.md,
//! "Telemetry".

mod energy;
mod frames;
pub mod series;
mod threads;

use serde::{Deserialize, Serialize};

use crate::model::{SeriesKind, SourceState, Telemetry};
use series::{display_unit, group, is_energy, joules_per_unit, percentile, Points};

/// A frame as the telemetry summary needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameSpan {
    pub frame: u64,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// How one source fared.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceLine {
    pub source: String,
    pub state: SourceState,
    pub detail: String,
    pub every_ns: i64,
    pub reads: u64,
    pub skipped: u64,
    /// The sampler thread's CPU for this source as a % of one core over the run.
    pub cpu_pct: Option<f64>,
}

/// One row of the telemetry table, in display units, over the measured window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricRow {
    pub source: String,
    pub metric: String,
    /// `GPU0`, `card1`, `all cores`, `package-0`, `GPU0 pid 1234`.
    pub device: String,
    pub unit: String,
    pub samples: u64,
    pub min: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

/// Energy of one device over the measured window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EnergyRow {
    pub source: String,
    pub entity: String,
    pub label: String,
    /// `energy counter` or `power readings` (integrated).
    pub method: String,
    /// Over the whole window: mean power over the covered part × window length.
    pub joules: f64,
    pub avg_power_w: f64,
    /// `joules` ÷ frames (measured frames, or `--frames N`).
    pub joules_per_frame: Option<f64>,
    /// Share of the window between the first and last readings.
    pub covered_pct: f64,
}

/// One column's reading next to a frame.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Nearest {
    /// In `unit`; `None` when the series has no reading at all.
    pub value: Option<f64>,
    pub unit: String,
    /// Throttle columns: the slowdown reasons set (empty: none).
    pub flags: Option<Vec<String>>,
    /// How far the reading is from the frame's span; 0 inside it.
    pub distance_ns: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FrameSamples {
    pub frame: u64,
    /// Frame end, seconds since launch.
    pub end_s: f64,
    pub total_ns: i64,
    /// One per `TelemetrySummary::frame_columns`.
    pub readings: Vec<Nearest>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThrottleSummary {
    /// Late frames examined (every late frame of the window).
    pub late_frames: u64,
    /// `GPU0 sw_power_cap` → late frames during which it was set.
    pub during_late: Vec<(String, u64)>,
    /// Reason → % of the window's throttle readings with it set.
    pub over_window_pct: Vec<(String, f64)>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadRow {
    pub pid: u32,
    pub tid: u32,
    pub name: String,
    /// The name of the thread's process (its main thread's name).
    pub process: String,
    pub cpu_ns: i64,
    /// CPU ÷ window × 100.
    pub load_pct: f64,
    pub ctx_voluntary: i64,
    pub ctx_involuntary: i64,
    pub minflt: i64,
    pub majflt: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySummary {
    /// The interval asked for (`--sample-every`).
    pub every_ns: i64,
    pub sources: Vec<SourceLine>,
    pub metrics: Vec<MetricRow>,
    pub energy: Vec<EnergyRow>,
    /// Titles of the readings shown next to each worst frame.
    pub frame_columns: Vec<String>,
    /// The worst frames (same order as `Analysis::worst_frames`) with those readings.
    pub worst_frames: Vec<FrameSamples>,
    pub throttle: Option<ThrottleSummary>,
    pub busiest_threads: Vec<ThreadRow>,
}

fn stats_row(
    source: &str,
    metric: &str,
    device: String,
    unit: &str,
    mut values: Vec<f64>,
) -> Option<MetricRow> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(MetricRow {
        source: source.into(),
        metric: metric.into(),
        device,
        unit: unit.into(),
        samples: values.len() as u64,
        min: values[0],
        p50: percentile(&values, 0.5),
        p95: percentile(&values, 0.95),
        p99: percentile(&values, 0.99),
        max: values[values.len() - 1],
        mean: values.iter().sum::<f64>() / values.len() as f64,
    })
}

/// The telemetry table: gauges as read, energy counters as power (when the device has no
/// power reading of its own), every core's frequency as one row. Thread totals and
/// throttle flags have tables of their own.
fn metric_rows(t: &Telemetry, points: &[Points], start: i64, end: i64) -> Vec<MetricRow> {
    let mut rows = Vec::new();
    let mut cores = Vec::new();
    let mut core_count = 0;
    for (id, s) in t.series.iter().enumerate() {
        let p = &points[id];
        let (scale, unit) = display_unit(&s.unit);
        if s.source == "cpufreq" {
            core_count += 1;
            cores.extend(p.within(start, end).iter().map(|&(_, v)| v as f64 * scale));
            continue;
        }
        if s.source == "threads" || s.kind == SeriesKind::Bitmask {
            continue;
        }
        let device = match s.metric.as_str() {
            "proc_sm_busy" | "proc_mem_busy" => {
                let (gpu, pid) = s.entity.split_once('/').unwrap_or(("?", &s.entity));
                format!("GPU{gpu} pid {pid}")
            }
            _ => frames::device_name(s),
        };
        let row = if s.kind == SeriesKind::Gauge {
            let values = p.within(start, end).iter().map(|&(_, v)| v as f64 * scale);
            stats_row(&s.source, &s.metric, device, unit, values.collect())
        } else if is_energy(s)
            && !t
                .series
                .iter()
                .any(|o| o.source == s.source && o.entity == s.entity && o.metric == "power")
        {
            let per_unit = joules_per_unit(&s.unit).unwrap_or(0.0);
            let watts = p.rates_within(start, end).into_iter().map(|r| r * per_unit);
            stats_row(&s.source, "power", device, "W", watts.collect())
        } else {
            None
        };
        rows.extend(row);
    }
    if let Some(mut row) = stats_row(
        "cpufreq",
        "freq",
        format!("all {core_count} cores"),
        "MHz",
        cores,
    ) {
        row.device = if core_count == 1 {
            "1 core".into()
        } else {
            row.device
        };
        rows.push(row);
    }
    rows
}

/// Everything the report shows about telemetry; `None` for a run recorded without it.
/// `window`: the measured window; `run_ns`: how long the run lasted (for the sampler's
/// cost); `frames`: measured frames or `--frames N`.
pub fn summarize(
    t: &Telemetry,
    window: (i64, i64),
    run_ns: i64,
    frames: u64,
    worst: &[FrameSpan],
    late: &[FrameSpan],
) -> Option<TelemetrySummary> {
    if t.sources.is_empty() && t.series.is_empty() {
        return None;
    }
    let (start, end) = window;
    let points = group(&t.series, &t.samples);
    let sources = t
        .sources
        .iter()
        .map(|s| SourceLine {
            source: s.source.clone(),
            state: s.state,
            detail: s.detail.clone(),
            every_ns: s.every_ns,
            reads: s.reads,
            skipped: s.skipped,
            // Over the source's own lifetime when recorded, else the run's.
            cpu_pct: {
                let wall = if s.wall_ns > 0 { s.wall_ns } else { run_ns };
                (wall > 0 && s.reads > 0).then(|| s.cpu_ns as f64 * 100.0 / wall as f64)
            },
        })
        .collect();
    let (frame_columns, worst_frames) = frames::frame_samples(&t.series, &points, worst);
    Some(TelemetrySummary {
        every_ns: t
            .sources
            .iter()
            .map(|s| s.every_ns)
            .filter(|&e| e > 0)
            .min()
            .unwrap_or(0),
        sources,
        metrics: metric_rows(t, &points, start, end),
        energy: energy::energy_rows(&t.series, &points, start, end, frames),
        frame_columns,
        worst_frames,
        throttle: frames::throttle_summary(&t.series, &points, late, start, end),
        busiest_threads: threads::busiest_threads(&t.series, &points, start, end),
    })
}
