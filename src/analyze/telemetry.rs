//! What the machine did during the run, from the samplers' readings: a table per metric,
//! energy per frame, the readings next to the worst frames, throttle reasons during late
//! frames, the busiest threads, and one line per source. Definitions: docs/metrics.md,
//! "Telemetry".

mod energy;
#[cfg(test)]
pub(crate) mod fixture;
mod frames;
pub mod series;
pub(super) mod threads;

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
    /// As the report names it (`GPU0`, `card0`, `package-0`), unique within the run: a name
    /// two devices share (RAPL's `core` of each package) gets its entity after an `@`.
    #[serde(default)]
    pub device: String,
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

/// How often `source` was read (ns); 0 when unknown.
fn every_of(t: &Telemetry, source: &str) -> i64 {
    (t.sources.iter())
        .find(|s| s.source == source)
        .map_or(0, |s| s.every_ns)
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
        busiest_threads: threads::busiest_threads(
            &t.series,
            &points,
            (start, end),
            every_of(t, "threads"),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::fixture::telemetry_run;
    use crate::analyze::analyze;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn energy_per_frame_from_each_counter() {
        let t = analyze(&telemetry_run()).telemetry.unwrap();
        // Window 20–100 ms, 8 measured frames. GPU: 300 W × 0.08 s = 24 J, 3 J a frame.
        let gpu = &t.energy[0];
        assert_eq!(
            (gpu.source.as_str(), gpu.method.as_str()),
            ("nvml", "energy counter")
        );
        assert!(close(gpu.joules, 24.0) && close(gpu.avg_power_w, 300.0));
        assert!(close(gpu.joules_per_frame.unwrap(), 3.0));
        assert!(close(gpu.covered_pct, 100.0));
        // The package: 45 W × 0.08 s = 3.6 J, 0.45 J a frame.
        let package = &t.energy[1];
        assert_eq!(package.label, "package-0");
        assert!(close(package.joules, 3.6) && close(package.joules_per_frame.unwrap(), 0.45));
        // The GPU's power gauge is not counted again next to its counter.
        assert_eq!(t.energy.len(), 2);
    }

    #[test]
    fn worst_frames_carry_the_nearest_readings() {
        let a = analyze(&telemetry_run());
        let t = a.telemetry.unwrap();
        assert_eq!(
            t.frame_columns,
            [
                "GPU0 MHz",
                "GPU0 busy %",
                "GPU0 W",
                "GPU0 throttle",
                "package-0 W",
                "CPU MHz"
            ]
        );
        // Frame 6 (60–78 ms): readings at 60 and 70 lie inside; the later one counts.
        let f6 = &t.worst_frames[0];
        assert_eq!(f6.frame, 6);
        let values: Vec<Option<f64>> = f6.readings.iter().map(|r| r.value).collect();
        assert_eq!(
            values,
            [
                Some(1410.0),
                Some(100.0),
                Some(450.0),
                None,
                Some(45.0),
                Some(2250.0)
            ]
        );
        assert_eq!(
            f6.readings[3].flags.as_deref(),
            Some(&["sw_power_cap".to_string()][..])
        );
        assert_eq!(f6.readings[0].distance_ns, Some(0));
        // The package's power is over 70–80 ms, the interval holding the frame's end:
        // its far edge is 2 ms past the end.
        assert_eq!(f6.readings[4].distance_ns, Some(2_000_000));
        // Frame 2 (20–28.5 ms): the reading at 20 ms is inside.
        let f2 = t.worst_frames.iter().find(|f| f.frame == 2).unwrap();
        assert_eq!(f2.readings[0].value, Some(1980.0));
        assert_eq!(f2.readings[3].flags.as_deref(), Some(&[][..]));
        // Same order as the stage breakdown of the worst frames.
        let ids: Vec<u64> = t.worst_frames.iter().map(|f| f.frame).collect();
        let stage_ids: Vec<u64> = a.worst_frames.iter().map(|f| f.frame).collect();
        assert_eq!(ids, stage_ids);
    }

    #[test]
    fn throttle_during_late_frames_and_the_table() {
        let t = analyze(&telemetry_run()).telemetry.unwrap();
        let th = t.throttle.unwrap();
        // Frames 6 (60–78) and 7 (70–83) are late; both saw sw_power_cap.
        assert_eq!(th.late_frames, 2);
        assert_eq!(th.during_late, vec![("GPU0 sw_power_cap".to_string(), 2)]);
        // 9 readings in the window (20..100 ms), 2 with the cap; the idle ones are before it.
        assert_eq!(th.over_window_pct.len(), 1);
        assert!(close(th.over_window_pct[0].1, 200.0 / 9.0));

        let row = |metric: &str| t.metrics.iter().find(|m| m.metric == metric).unwrap();
        let sm = row("sm_clock");
        assert_eq!(
            (sm.samples, sm.min, sm.max, sm.p50),
            (9, 1410.0, 1980.0, 1980.0)
        );
        // Type-7 p95 of 7 × 1980 and 2 × 1410: at h = 0.95 × 8 = 7.6 → 1980.
        assert_eq!(sm.p95, 1980.0);
        assert_eq!(row("power").unit, "W");
        assert_eq!(row("power").max, 450.0);
        // Both cores in one row; RAPL's counter as power; the GPU's counter is not (it
        // has a power reading of its own).
        let freq = row("freq");
        assert_eq!(
            (freq.device.as_str(), freq.samples, freq.min),
            ("all 2 cores", 18, 1500.0)
        );
        let powers: Vec<&str> = t
            .metrics
            .iter()
            .filter(|m| m.metric == "power")
            .map(|m| m.device.as_str())
            .collect();
        assert_eq!(powers, ["GPU0", "package-0"]);
        let rapl = t.metrics.iter().find(|m| m.device == "package-0").unwrap();
        assert!(close(rapl.p50, 45.0) && rapl.samples == 8);
    }

    #[test]
    fn busiest_threads_over_the_window() {
        let t = analyze(&telemetry_run()).telemetry.unwrap();
        // host: 70 − 10 = 60 ms of the 80 ms window; worker: 40 − 0 = 40 ms (its value at
        // 20 ms is still the reading at 0).
        let names: Vec<(&str, i64)> = t
            .busiest_threads
            .iter()
            .map(|r| (r.name.as_str(), r.cpu_ns))
            .collect();
        // Thread 100 recorded spans as `main` (the thread and worst-frame tables' name),
        // though the kernel calls it after its program: one name in every table.
        assert_eq!(names, [("main", 60_000_000), ("worker", 40_000_000)]);
        assert_eq!(t.busiest_threads[0].process, "host");
        assert!(close(t.busiest_threads[0].load_pct, 75.0));
        assert_eq!(t.busiest_threads[1].ctx_involuntary, 20);
        assert_eq!(t.busiest_threads[1].process, "host");
        // Cost of each source over its own lifetime: 12 reads × 20 µs over 110 ms.
        let nvml = &t.sources[0];
        assert!(close(nvml.cpu_pct.unwrap(), 240_000.0 * 100.0 / 110e6));
    }

    #[test]
    fn runs_without_telemetry_have_no_summary() {
        let a = analyze(&crate::analyze::fixtures::reference_run());
        assert!(a.telemetry.is_none());
    }
}
