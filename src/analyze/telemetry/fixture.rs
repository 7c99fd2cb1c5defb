//! The reference run (see `analyze::fixtures`) with telemetry whose every figure is computed
//! by hand in the tests: readings every 10 ms from 0 to 110 ms.
//!
//! - GPU 0 (NVML): SM clock 1980 MHz, busy 50 %, 300 W, except at 70 and 80 ms: 1410 MHz,
//!   100 %, 450 W, throttled by `sw_power_cap`; idle (`gpu_idle`) at 0 and 10 ms. Its energy
//!   counter grows 300 mJ per ms (300 W) from 1 000 000 mJ.
//! - RAPL package-0: 45 W steady (450 000 µJ per 10 ms).
//! - Two cores at 3000 MHz; core 0 at 1500 MHz at 70 ms.
//! - Threads of process 100: `host` on CPU 10 ms by 20 ms and 70 ms by 100 ms; `worker`
//!   10 ms by 50 ms and 40 ms by 100 ms.
//! - amdgpu is off (no such GPU).

use crate::analyze::fixtures::{reference_run, MS};
use crate::model::*;

fn series(
    source: &str,
    metric: &str,
    entity: &str,
    label: &str,
    unit: &str,
    kind: SeriesKind,
) -> SampleSeries {
    SampleSeries {
        source: source.into(),
        metric: metric.into(),
        entity: entity.into(),
        label: label.into(),
        unit: unit.into(),
        kind,
    }
}

fn status(source: &str, state: SourceState, detail: &str, reads: u64) -> SourceStatus {
    SourceStatus {
        source: source.into(),
        state,
        detail: detail.into(),
        every_ns: 10 * MS,
        reads,
        skipped: 0,
        cpu_ns: reads as i64 * 20_000,
        wall_ns: 110 * MS,
    }
}

pub fn telemetry_run() -> Run {
    use SeriesKind::*;
    let mut run = reference_run();
    let series = vec![
        series("nvml", "sm_clock", "0", "Test GPU", "MHz", Gauge),
        series("nvml", "gpu_busy", "0", "Test GPU", "%", Gauge),
        series("nvml", "power", "0", "Test GPU", "mW", Gauge),
        series("nvml", "energy", "0", "Test GPU", "mJ", Counter),
        series("nvml", "throttle", "0", "Test GPU", "flags", Bitmask),
        series("cpufreq", "freq", "0", "cpu0", "kHz", Gauge),
        series("cpufreq", "freq", "1", "cpu1", "kHz", Gauge),
        series("rapl", "energy", "intel-rapl:0", "package-0", "uJ", Counter),
        series("threads", "cpu_time", "100/100", "host", "ns", Counter),
        series("threads", "cpu_time", "100/101", "worker", "ns", Counter),
        series(
            "threads",
            "ctx_involuntary",
            "100/101",
            "worker",
            "count",
            Counter,
        ),
    ];
    let mut samples = Vec::new();
    let mut push = |series: u32, t_ms: i64, value: i64| {
        samples.push(Sample {
            series,
            t_ns: t_ms * MS,
            value,
        })
    };
    for t in (0..=110).step_by(10) {
        let spike = t == 70 || t == 80;
        push(0, t, if spike { 1410 } else { 1980 });
        push(1, t, if spike { 100 } else { 50 });
        push(2, t, if spike { 450_000 } else { 300_000 });
        push(3, t, 1_000_000 + 300 * t);
        push(
            4,
            t,
            if spike {
                0x4
            } else if t < 20 {
                0x1
            } else {
                0
            },
        );
        push(5, t, if t == 70 { 1_500_000 } else { 3_000_000 });
        push(6, t, 3_000_000);
        push(7, t, 5_000_000 + 45_000 * t);
    }
    for (t, v) in [(0, 0), (20, 10 * MS), (100, 70 * MS)] {
        push(8, t, v);
    }
    for (t, v) in [(0, 0), (50, 10 * MS), (100, 40 * MS)] {
        push(9, t, v);
    }
    for (t, v) in [(0, 3), (100, 23)] {
        push(10, t, v);
    }
    run.telemetry = Telemetry {
        sources: vec![
            status("nvml", SourceState::On, "GPU 0 Test GPU · driver 1.0", 12),
            status(
                "amdgpu",
                SourceState::Off,
                "no AMD GPU (no /sys/class/drm/card*/device/gpu_busy_percent)",
                0,
            ),
            status("cpufreq", SourceState::On, "2 cores", 12),
            status("rapl", SourceState::On, "package-0", 12),
            status("threads", SourceState::On, "2 threads of 1 process", 12),
        ],
        series,
        samples,
    };
    run
}
