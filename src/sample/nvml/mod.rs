//! NVIDIA GPUs through NVML: clocks, utilisation, power and energy, temperature, memory,
//! throttle reasons, and the utilisation of the command's own processes.
//!
//! A metric the GPU does not offer is dropped after its first refusal and named once in the
//! source's status. Most calls take a few microseconds, but some drivers spend milliseconds of
//! CPU in a few of them (on an H100 with driver 580: the energy counter 3.1 ms, process
//! utilisation 2.5 ms, the rest under 10 µs; on an H200, 4.8 and 2.8 ms, BENCHMARKS.md "What
//! NVML costs the sampler"): a call that takes longer than `SLOW_CALL` twice in a row is made
//! at most every `SLOW_EVERY_NS` (a counter: every `SLOW_COUNTER_EVERY_NS`), and the status
//! says which and why. Twice, because a first call can be slow once (the driver initialising)
//! and any call can be slow once (the thread preempted); every call is made twice before the
//! command starts (`rehearse`), so neither lands in the window. Every 2 s, not 1: on the H100
//! that took NVML at 20 Hz from 1.07% to 0.52% of a core. The energy counter loses nothing by
//! being read rarely (it is a running total), and it is read anyway at the window's opening,
//! at its close and at the last reading, so the window's energy is the counter's own
//! difference, never an interpolation across a long gap; process utilisation is averaged by
//! the driver over about as long anyway. A GPU that is lost (or stops answering) stops being read, with the time and the
//! driver's reason; when no GPU is left the source stops, keeping what it read.

pub mod api;
mod gpu_users;
pub mod library;
pub mod throttle;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use api::{Clock, Nvml, NvmlError};
use gpu_users::GpuUsers;

use super::{Readings, Tick};
use crate::model::SeriesKind;

/// Environment variable naming the NVML library to load instead of the driver's.
pub const LIBRARY_ENV: &str = "FRAMELAB_NVML_LIBRARY";

/// Consecutive ticks of failed reads before a GPU is given up as unresponsive.
const GIVE_UP_AFTER: u32 = 20;
/// A call taking longer than this is made at most every `SLOW_EVERY_NS` (a counter: `SLOW_COUNTER_EVERY_NS`).
const SLOW_CALL: Duration = Duration::from_micros(200);
const SLOW_EVERY_NS: i64 = 2_000_000_000;
/// A slow counter (the energy total) is read this rarely between the window's edges: on the
/// H200 that takes its 4.8 ms calls from 0.24% of a core to 0.05%.
const SLOW_COUNTER_EVERY_NS: i64 = 10_000_000_000;

/// The device-level metrics, in reading order: (metric, unit, kind).
const METRICS: [(&str, &str, SeriesKind); 10] = [
    ("gpu_clock", "MHz", SeriesKind::Gauge),
    ("sm_clock", "MHz", SeriesKind::Gauge),
    ("mem_clock", "MHz", SeriesKind::Gauge),
    ("gpu_busy", "%", SeriesKind::Gauge),
    ("mem_busy", "%", SeriesKind::Gauge),
    ("power", "mW", SeriesKind::Gauge),
    ("energy", "mJ", SeriesKind::Counter),
    ("temp", "C", SeriesKind::Gauge),
    ("mem_used", "B", SeriesKind::Gauge),
    ("throttle", "flags", SeriesKind::Bitmask),
];
/// Not a device metric: per-process utilisation, whose refusal is also remembered.
const PROCESS_METRIC: &str = "process utilisation";

struct Gpu {
    index: u32,
    name: String,
    /// Per metric of `METRICS`: its series once read.
    series: [Option<u32>; METRICS.len()],
    /// Metrics the GPU refused, with the reason: not asked again.
    unsupported: BTreeMap<&'static str, String>,
    /// Why this GPU is no longer read.
    stopped: Option<String>,
    failed_ticks: u32,
    /// Newest per-process sample seen (driver µs timestamp).
    process_since_us: u64,
    /// pid → (SM %, memory %) series.
    process_series: BTreeMap<u32, (u32, u32)>,
    /// Per metric of `METRICS`, then process utilisation: the time (ns after launch)
    /// before which a slow call is not made again...
    not_before_ns: [i64; METRICS.len() + 1],
    /// ...its slow calls in a row...
    slow_streak: [u32; METRICS.len() + 1],
    /// ...and the metrics read rarely for it, with their last call's duration and how
    /// rarely (ns).
    slow: BTreeMap<&'static str, (Duration, i64)>,
    /// Slow process utilisation calls not made: no process of the run had a GPU open.
    process_calls_spared: u64,
}

/// How long a call took, given the metric and the measured time: the measured time, except
/// in tests, which decide it so that no test depends on how fast the machine is.
type CallCost = fn(&'static str, Duration) -> Duration;

pub struct NvmlSource {
    nvml: Box<dyn Nvml>,
    driver: Option<String>,
    gpus: Vec<Gpu>,
    cost: CallCost,
    /// Which of the run's processes have a GPU open (a slow process utilisation call is made
    /// only when one has).
    gpu_users: GpuUsers,
}

impl NvmlSource {
    /// Opens the driver library (see `library::Library::open`) and finds the GPUs.
    pub fn open(library: Option<&std::path::Path>) -> Result<NvmlSource, String> {
        let nvml = library::Library::open(library)?;
        let mut source = NvmlSource::with(Box::new(nvml))?;
        source.rehearse();
        Ok(source)
    }

    /// Makes every call twice, keeping no value, before the command starts: the driver's
    /// first calls (cold: 14 ms of CPU on the H200 host, which the window's opening reading
    /// paid) and the calls slow every time are then behind it, and what the GPU refuses is
    /// known. A slow call's first reading in the window is then `SLOW_EVERY_NS` after the
    /// launch; a counter is read at the window's edges anyway.
    fn rehearse(&mut self) {
        for gpu in &mut self.gpus {
            for _ in 0..2 {
                let mut utilization = None;
                for (m, &(metric, ..)) in METRICS.iter().enumerate() {
                    if gpu.unsupported.contains_key(metric) {
                        continue;
                    }
                    let started = Instant::now();
                    let result = read_metric(self.nvml.as_ref(), gpu.index, m, &mut utilization);
                    note_cost(gpu, m, metric, (self.cost)(metric, started.elapsed()), 0);
                    if let Some(e) = result.err().filter(NvmlError::is_unsupported) {
                        gpu.unsupported.insert(metric, e.text);
                    }
                }
                if gpu.unsupported.contains_key(PROCESS_METRIC) {
                    continue;
                }
                let started = Instant::now();
                let result = self.nvml.process_utilization(gpu.index, 0);
                let took = (self.cost)(PROCESS_METRIC, started.elapsed());
                note_cost(gpu, METRICS.len(), PROCESS_METRIC, took, 0);
                if let Some(e) = result.err().filter(NvmlError::is_unsupported) {
                    gpu.unsupported.insert(PROCESS_METRIC, e.text);
                }
            }
        }
    }

    /// Over any NVML implementation: the real library, or a scripted one in tests.
    pub fn with(nvml: Box<dyn Nvml>) -> Result<NvmlSource, String> {
        let count = nvml
            .device_count()
            .map_err(|e| format!("cannot count GPUs: {e}"))?;
        if count == 0 {
            return Err("the NVIDIA driver reports no GPU".into());
        }
        let gpus = (0..count)
            .map(|index| Gpu {
                index,
                name: nvml.name(index).unwrap_or_else(|_| "NVIDIA GPU".into()),
                series: [None; METRICS.len()],
                unsupported: BTreeMap::new(),
                stopped: None,
                failed_ticks: 0,
                process_since_us: 0,
                process_series: BTreeMap::new(),
                not_before_ns: [i64::MIN; METRICS.len() + 1],
                slow_streak: [0; METRICS.len() + 1],
                slow: BTreeMap::new(),
                process_calls_spared: 0,
            })
            .collect();
        Ok(NvmlSource {
            driver: nvml.driver_version(),
            nvml,
            gpus,
            cost: |_, measured| measured,
            gpu_users: GpuUsers::nvidia(),
        })
    }

    /// `GPU 0 NVIDIA H100 80GB HBM3 · driver 580.159.04`, then what was refused or lost.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .gpus
            .iter()
            .map(|g| format!("GPU {} {}", g.index, g.name))
            .collect();
        if let Some(driver) = &self.driver {
            parts.push(format!("driver {driver}"));
        }
        let mut s = parts.join(" · ");
        for gpu in &self.gpus {
            if !gpu.unsupported.is_empty() {
                let names: Vec<&str> = gpu.unsupported.keys().copied().collect();
                let reason = gpu.unsupported.values().next().cloned().unwrap_or_default();
                s.push_str(&format!(
                    "; GPU {} does not report {} ({reason})",
                    gpu.index,
                    names.join(", ")
                ));
            }
            if !gpu.slow.is_empty() {
                let calls: Vec<String> = gpu
                    .slow
                    .iter()
                    .map(|(m, (took, every_ns))| {
                        format!(
                            "{m} every {} s ({:.1} ms the last call)",
                            every_ns / 1_000_000_000,
                            took.as_secs_f64() * 1e3
                        )
                    })
                    .collect();
                s.push_str(&format!(
                    "; GPU {} reads its slow calls rarely: {}",
                    gpu.index,
                    calls.join(", ")
                ));
            }
            if gpu.process_calls_spared > 0 {
                s.push_str(&format!(
                    "; GPU {} process utilisation not asked {} time{}: no process of the run had a GPU open",
                    gpu.index,
                    gpu.process_calls_spared,
                    if gpu.process_calls_spared == 1 { "" } else { "s" }
                ));
            }
            if let Some(why) = &gpu.stopped {
                s.push_str(&format!("; {why}"));
            }
        }
        s
    }

    pub fn read(&mut self, tick: &Tick, out: &mut Readings) -> Result<(), String> {
        // Whether a process of the run has a GPU open: looked at once a reading, for every
        // GPU whose process call is slow (its descriptors may be thousands: a server's).
        let users = &mut self.gpu_users;
        let mut gpu_open = None;
        let mut any_gpu_open = || *gpu_open.get_or_insert_with(|| users.any(tick.pids));
        for gpu in self.gpus.iter_mut().filter(|g| g.stopped.is_none()) {
            read_gpu(
                self.nvml.as_ref(),
                self.cost,
                gpu,
                &mut any_gpu_open,
                tick,
                out,
            );
        }
        if self.gpus.iter().all(|g| g.stopped.is_some()) {
            let reasons: Vec<&str> = self
                .gpus
                .iter()
                .filter_map(|g| g.stopped.as_deref())
                .collect();
            return Err(reasons.join("; "));
        }
        Ok(())
    }
}

/// One metric's value as the series stores it. GPU and memory busy come from one call,
/// made once a reading (`utilization` holds its answer).
fn read_metric(
    nvml: &dyn Nvml,
    index: u32,
    metric: usize,
    utilization: &mut Option<Result<(u32, u32), NvmlError>>,
) -> Result<i64, NvmlError> {
    let i = index;
    let mut busy = || {
        utilization
            .get_or_insert_with(|| nvml.utilization_pct(i))
            .clone()
    };
    Ok(match metric {
        0 => nvml.clock_mhz(i, Clock::Graphics)?.into(),
        1 => nvml.clock_mhz(i, Clock::Sm)?.into(),
        2 => nvml.clock_mhz(i, Clock::Memory)?.into(),
        3 => busy()?.0.into(),
        4 => busy()?.1.into(),
        5 => nvml.power_mw(i)?.into(),
        6 => nvml.energy_mj(i)? as i64,
        7 => nvml.temperature_c(i)?.into(),
        8 => nvml.memory_used_bytes(i)? as i64,
        // Bits stored as the i64 with the same bits.
        _ => nvml.throttle_reasons(i)? as i64,
    })
}

fn read_gpu(
    nvml: &dyn Nvml,
    cost: CallCost,
    gpu: &mut Gpu,
    any_gpu_open: &mut dyn FnMut() -> bool,
    tick: &Tick,
    out: &mut Readings,
) {
    let mut asked = 0;
    let mut failed = 0;
    let mut last_error = None;
    let mut utilization = None;
    for (m, &(metric, unit, kind)) in METRICS.iter().enumerate() {
        if gpu.unsupported.contains_key(metric) || put_off(gpu, m, tick) {
            continue;
        }
        asked += 1;
        let started = Instant::now();
        let result = read_metric(nvml, gpu.index, m, &mut utilization);
        note_cost(gpu, m, metric, cost(metric, started.elapsed()), tick.t_ns);
        match result {
            Ok(value) => {
                let (index, name) = (gpu.index, &gpu.name);
                let series = *gpu.series[m].get_or_insert_with(|| {
                    out.series(metric, index.to_string(), name.clone(), unit, kind)
                });
                out.push(series, value);
            }
            Err(e) if e.is_unsupported() => {
                asked -= 1;
                gpu.unsupported.insert(metric, e.text.clone());
            }
            Err(e) if e.is_gpu_lost() => {
                gpu.stopped = Some(lost(gpu.index, tick, &e));
                return;
            }
            Err(e) => {
                failed += 1;
                out.skip(|| format!("GPU {} {metric}: {e}", gpu.index));
                last_error = Some(e);
            }
        }
    }
    if asked > 0 && failed == asked {
        gpu.failed_ticks += 1;
        if gpu.failed_ticks >= GIVE_UP_AFTER {
            let why = last_error.map(|e| e.to_string()).unwrap_or_default();
            gpu.stopped = Some(format!(
                "GPU {} stopped answering at {:.2} s ({GIVE_UP_AFTER} reads in a row failed, last: {why})",
                gpu.index,
                tick.t_ns as f64 / 1e9
            ));
        }
        return;
    }
    gpu.failed_ticks = 0;
    read_processes(nvml, cost, gpu, any_gpu_open, tick, out);
}

/// Whether the call of `slot` (indexing `Gpu::not_before_ns`) waits for a later reading:
/// it was slow and is not due yet. The window's first and last readings read every
/// counter, those read rarely too: the window's counters then hold exactly what it used.
fn put_off(gpu: &Gpu, slot: usize, tick: &Tick) -> bool {
    let edge = tick.opening || tick.closes_window || tick.closing;
    tick.t_ns < gpu.not_before_ns[slot] && !(edge && is_counter(slot))
}

/// Whether `slot` (indexing `Gpu::not_before_ns`) is a running total.
fn is_counter(slot: usize) -> bool {
    METRICS
        .get(slot)
        .is_some_and(|m| m.2 == SeriesKind::Counter)
}

/// Puts off the next call of a metric that was slow twice in a row (`slot` indexes
/// `Gpu::not_before_ns`; a counter longer than the rest) from `t_ns`, the call's time after
/// the launch; a fast call puts it back on every reading.
fn note_cost(gpu: &mut Gpu, slot: usize, metric: &'static str, took: Duration, t_ns: i64) {
    if took <= SLOW_CALL {
        gpu.slow_streak[slot] = 0;
        gpu.slow.remove(metric);
        return;
    }
    gpu.slow_streak[slot] += 1;
    if gpu.slow_streak[slot] >= 2 {
        let every_ns = if is_counter(slot) {
            SLOW_COUNTER_EVERY_NS
        } else {
            SLOW_EVERY_NS
        };
        gpu.not_before_ns[slot] = t_ns.saturating_add(every_ns);
        gpu.slow.insert(metric, (took, every_ns));
    }
}

fn lost(index: u32, tick: &Tick, e: &NvmlError) -> String {
    format!(
        "GPU {index} lost at {:.2} s ({e}); its readings until then are kept",
        tick.t_ns as f64 / 1e9
    )
}

/// The command's processes' share of the GPU, newest sample per process. Where the call is
/// slow it is made only while a process of the run has a GPU open.
fn read_processes(
    nvml: &dyn Nvml,
    cost: CallCost,
    gpu: &mut Gpu,
    any_gpu_open: &mut dyn FnMut() -> bool,
    tick: &Tick,
    out: &mut Readings,
) {
    let slot = METRICS.len();
    if tick.pids.is_empty()
        || gpu.unsupported.contains_key(PROCESS_METRIC)
        || put_off(gpu, slot, tick)
    {
        return;
    }
    if gpu.slow.contains_key(PROCESS_METRIC) && !any_gpu_open() {
        gpu.process_calls_spared += 1;
        gpu.not_before_ns[slot] = tick.t_ns.saturating_add(SLOW_EVERY_NS);
        return;
    }
    let started = Instant::now();
    let result = nvml.process_utilization(gpu.index, gpu.process_since_us);
    let took = cost(PROCESS_METRIC, started.elapsed());
    note_cost(gpu, slot, PROCESS_METRIC, took, tick.t_ns);
    let samples = match result {
        Ok(samples) => samples,
        Err(e) if e.is_unsupported() => {
            gpu.unsupported.insert(PROCESS_METRIC, e.text);
            return;
        }
        Err(e) if e.is_gpu_lost() => {
            gpu.stopped = Some(lost(gpu.index, tick, &e));
            return;
        }
        Err(e) => {
            out.skip(|| format!("GPU {} process utilisation: {e}", gpu.index));
            return;
        }
    };
    let mut newest: BTreeMap<u32, api::ProcessUtilization> = BTreeMap::new();
    for s in samples {
        gpu.process_since_us = gpu.process_since_us.max(s.timestamp_us);
        if tick.pids.binary_search(&s.pid).is_err() {
            continue;
        }
        let entry = newest.entry(s.pid).or_insert(s);
        if s.timestamp_us > entry.timestamp_us {
            *entry = s;
        }
    }
    for (pid, s) in newest {
        let index = gpu.index;
        let (sm, mem) = *gpu.process_series.entry(pid).or_insert_with(|| {
            let entity = format!("{index}/{pid}");
            let label = format!("pid {pid}");
            (
                out.series(
                    "proc_sm_busy",
                    entity.clone(),
                    label.clone(),
                    "%",
                    SeriesKind::Gauge,
                ),
                out.series("proc_mem_busy", entity, label, "%", SeriesKind::Gauge),
            )
        });
        out.push(sm, s.sm_pct.into());
        out.push(mem, s.mem_pct.into());
    }
}

#[cfg(test)]
mod tests {
    use super::api::{NvmlResult, ProcessUtilization, ERROR_GPU_IS_LOST, ERROR_NOT_SUPPORTED};
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    /// A GPU that reads fine for `healthy_reads` ticks, then fails as told; it has an
    /// energy counter only when `energy`.
    struct Scripted {
        reads: Arc<AtomicU32>,
        healthy_reads: u32,
        failure: u32,
        energy: bool,
        /// Calls of `utilization_pct`.
        busy_calls: Arc<AtomicU32>,
    }

    impl Scripted {
        fn check(&self) -> NvmlResult<()> {
            if self.reads.load(Ordering::Relaxed) >= self.healthy_reads {
                Err(NvmlError::new(self.failure, "scripted failure"))
            } else {
                Ok(())
            }
        }
    }

    impl Nvml for Scripted {
        fn driver_version(&self) -> Option<String> {
            Some("999.1".into())
        }
        fn device_count(&self) -> NvmlResult<u32> {
            Ok(1)
        }
        fn name(&self, _: u32) -> NvmlResult<String> {
            Ok("Scripted GPU".into())
        }
        fn clock_mhz(&self, _: u32, clock: Clock) -> NvmlResult<u32> {
            self.check()?;
            Ok(1000 + clock as u32)
        }
        fn utilization_pct(&self, _: u32) -> NvmlResult<(u32, u32)> {
            self.busy_calls.fetch_add(1, Ordering::Relaxed);
            self.check()?;
            Ok((97, 40))
        }
        fn power_mw(&self, _: u32) -> NvmlResult<u32> {
            self.check()?;
            Ok(350_000)
        }
        fn energy_mj(&self, _: u32) -> NvmlResult<u64> {
            if !self.energy {
                return Err(NvmlError::new(ERROR_NOT_SUPPORTED, "Not Supported"));
            }
            self.check()?;
            // A running total: it grows every tick.
            Ok(1_000 + u64::from(self.reads.load(Ordering::Relaxed)) * 7)
        }
        fn temperature_c(&self, _: u32) -> NvmlResult<u32> {
            self.check()?;
            Ok(61)
        }
        fn memory_used_bytes(&self, _: u32) -> NvmlResult<u64> {
            self.check()?;
            Ok(1 << 30)
        }
        fn throttle_reasons(&self, _: u32) -> NvmlResult<u64> {
            self.check()?;
            Ok(0x4)
        }
        fn process_utilization(&self, _: u32, since: u64) -> NvmlResult<Vec<ProcessUtilization>> {
            self.check()?;
            // The last call of a tick: the tick was healthy.
            self.reads.fetch_add(1, Ordering::Relaxed);
            let sample = |pid, timestamp_us, sm_pct| ProcessUtilization {
                pid,
                timestamp_us,
                sm_pct,
                mem_pct: 5,
            };
            // Two samples of the command (pid 10), one of a stranger (pid 99).
            Ok(vec![
                sample(10, since + 1, 80),
                sample(10, since + 2, 90),
                sample(99, since + 2, 50),
            ])
        }
    }

    /// Every call counts as instant, whatever this machine's speed.
    fn source(healthy_reads: u32, failure: u32) -> NvmlSource {
        scripted(healthy_reads, failure, false)
    }

    fn scripted(healthy_reads: u32, failure: u32, energy: bool) -> NvmlSource {
        scripted_counting(healthy_reads, failure, energy, Arc::default())
    }

    fn scripted_counting(
        healthy_reads: u32,
        failure: u32,
        energy: bool,
        busy_calls: Arc<AtomicU32>,
    ) -> NvmlSource {
        let mut s = NvmlSource::with(Box::new(Scripted {
            reads: Arc::new(AtomicU32::new(0)),
            healthy_reads,
            failure,
            energy,
            busy_calls,
        }))
        .unwrap();
        s.cost = |_, _| Duration::ZERO;
        // The command's processes have the GPU open, whatever this machine's /proc holds.
        s.gpu_users = GpuUsers::known(&[10, 11]);
        s
    }

    fn tick(t_ns: i64) -> Tick<'static> {
        Tick {
            t_ns,
            pids: &[10, 11],
            closing: false,
            window_closed: false,
            opening: false,
            closes_window: false,
            origin_mono_ns: 0,
        }
    }

    #[test]
    fn reads_every_metric_and_names_what_the_gpu_refuses() {
        let mut s = source(u32::MAX, 0);
        let mut out = Readings::new(vec!["nvml"]);
        out.begin(0, 0, false);
        s.read(&tick(0), &mut out).unwrap();
        let batch = out.take_batch();
        let metrics: Vec<&str> = batch
            .series
            .iter()
            .map(|(_, s)| s.metric.as_str())
            .collect();
        assert_eq!(
            metrics,
            [
                "gpu_clock",
                "sm_clock",
                "mem_clock",
                "gpu_busy",
                "mem_busy",
                "power",
                "temp",
                "mem_used",
                "throttle",
                "proc_sm_busy",
                "proc_mem_busy"
            ]
        );
        // The command's process: its newest sample only; the stranger is not ours.
        let sm = batch
            .series
            .iter()
            .find(|(_, s)| s.metric == "proc_sm_busy")
            .unwrap();
        assert_eq!(sm.1.entity, "0/10");
        let values: Vec<i64> = batch
            .samples
            .iter()
            .filter(|x| x.series == sm.0)
            .map(|x| x.value)
            .collect();
        assert_eq!(values, [90]);
        assert!(
            s.describe().starts_with(
                "GPU 0 Scripted GPU · driver 999.1; GPU 0 does not report energy (Not Supported)"
            ),
            "{}",
            s.describe()
        );
    }

    #[test]
    fn a_slow_call_is_made_every_two_seconds() {
        let mut s = source(u32::MAX, 0);
        // Process utilisation takes 1 ms a call, the rest 1 µs.
        s.cost = |metric, _| {
            if metric == PROCESS_METRIC {
                Duration::from_millis(1)
            } else {
                Duration::from_micros(1)
            }
        };
        let mut out = Readings::new(vec!["nvml"]);
        // 50 ms apart by the run's clock: 0, 50, ..., 2100 ms.
        for i in 0..=42 {
            let t_ns = i * 50_000_000;
            out.begin(0, t_ns, false);
            s.read(&tick(t_ns), &mut out).unwrap();
        }
        let batch = out.take_batch();
        let id = |metric: &str| {
            batch
                .series
                .iter()
                .find(|(_, s)| s.metric == metric)
                .unwrap()
                .0
        };
        let count = |series: u32| batch.samples.iter().filter(|x| x.series == series).count();
        assert_eq!(count(id("gpu_clock")), 43);
        // Slow at 0 and 50 ms (twice in a row), then every 2 s: 0, 50, 2050 ms.
        assert_eq!(count(id("proc_sm_busy")), 3);
        let described = s.describe();
        assert!(
            described
                .contains("GPU 0 reads its slow calls rarely: process utilisation every 2 s ("),
            "{described}"
        );
    }

    #[test]
    fn a_slow_counter_is_read_every_ten_seconds_and_at_the_window_edges() {
        let mut s = scripted(u32::MAX, 0, true);
        // The energy counter takes 5 ms a call, the rest 1 µs.
        s.cost = |metric, _| {
            if metric == "energy" {
                Duration::from_millis(5)
            } else {
                Duration::from_micros(1)
            }
        };
        let mut out = Readings::new(vec!["nvml"]);
        // 50 ms apart from 0 to 12 s; the window opens at 3 s and closes at 11 s (the
        // command is then stopped); the last reading ends the run.
        let last = 240;
        for i in 0..=last {
            let t_ns = i * 50_000_000;
            let closing = i == last;
            out.begin(0, t_ns, closing);
            let tick = Tick {
                opening: t_ns == 3_000_000_000,
                closes_window: t_ns == 11_000_000_000,
                closing,
                ..tick(t_ns)
            };
            s.read(&tick, &mut out).unwrap();
        }
        let batch = out.take_batch();
        let energy = batch
            .series
            .iter()
            .find(|(_, s)| s.metric == "energy")
            .unwrap()
            .0;
        let read_at_ms: Vec<i64> = (batch.samples.iter())
            .filter(|x| x.series == energy)
            .map(|x| x.t_ns / 1_000_000)
            .collect();
        // Slow at 0 and 50 ms (twice in a row), then put off 10 s, but read at the
        // window's opening (3 s, which puts it off to 13 s), at its close and at the last
        // reading.
        assert_eq!(read_at_ms, [0, 50, 3000, 11000, 12000]);
        let described = s.describe();
        assert!(
            described.contains("GPU 0 reads its slow calls rarely: energy every 10 s (5.0 ms"),
            "{described}"
        );
    }

    #[test]
    fn a_slow_process_call_waits_for_a_process_with_a_gpu_open() {
        let mut s = source(u32::MAX, 0);
        s.cost = |metric, _| {
            if metric == PROCESS_METRIC {
                Duration::from_millis(3)
            } else {
                Duration::from_micros(1)
            }
        };
        // No process of the run has a GPU open (none exists under this root).
        let root = tempfile::tempdir().unwrap();
        s.gpu_users = GpuUsers::new(root.path(), "/dev/nvidia");
        let mut out = Readings::new(vec!["nvml"]);
        // 50 ms apart from 0 to 6 s.
        for i in 0..=120 {
            let t_ns = i * 50_000_000;
            out.begin(0, t_ns, false);
            s.read(&tick(t_ns), &mut out).unwrap();
        }
        let batch = out.take_batch();
        let process_samples = (batch.series.iter())
            .filter(|(_, x)| x.metric == "proc_sm_busy")
            .count();
        // Asked at 0 and 50 ms (found slow twice), then not at 2.05 and 4.05 s: nobody
        // had a GPU open.
        assert_eq!(process_samples, 1, "the first two calls' series");
        let described = s.describe();
        assert!(
            described.contains(
                "GPU 0 process utilisation not asked 2 times: no process of the run had a GPU open"
            ),
            "{described}"
        );
        // A process of the run opens one: asked again at the next slow call's time.
        s.gpu_users = GpuUsers::known(&[10]);
        let before = out.take_batch().samples.len();
        assert_eq!(before, 0);
        out.begin(0, 6_100_000_000, false);
        s.read(&tick(6_100_000_000), &mut out).unwrap();
        let series = s.gpus[0].process_series[&10].0;
        let asked = out.take_batch();
        assert_eq!(
            asked.samples.iter().filter(|x| x.series == series).count(),
            1
        );
    }

    #[test]
    fn gpu_and_memory_busy_come_from_one_call_a_reading() {
        let busy_calls = Arc::new(AtomicU32::new(0));
        let mut s = scripted_counting(u32::MAX, 0, false, busy_calls.clone());
        let mut out = Readings::new(vec!["nvml"]);
        for i in 0..3 {
            out.begin(0, i * 50_000_000, false);
            s.read(&tick(i * 50_000_000), &mut out).unwrap();
        }
        assert_eq!(busy_calls.load(Ordering::Relaxed), 3);
        let batch = out.take_batch();
        let values = |metric: &str| -> Vec<i64> {
            let id = (batch.series.iter())
                .find(|(_, s)| s.metric == metric)
                .unwrap()
                .0;
            (batch.samples.iter())
                .filter(|x| x.series == id)
                .map(|x| x.value)
                .collect()
        };
        assert_eq!(values("gpu_busy"), [97, 97, 97]);
        assert_eq!(values("mem_busy"), [40, 40, 40]);
    }

    #[test]
    fn the_rehearsal_before_the_launch_leaves_the_window_no_slow_or_cold_call() {
        static SM_CALLS: AtomicU32 = AtomicU32::new(0);
        let mut s = scripted(u32::MAX, 0, true);
        // The energy counter takes 5 ms a call and process utilisation 3 ms; the SM clock's
        // first call is slow (the driver initialising); the rest take 1 µs.
        s.cost = |metric, _| match metric {
            "energy" => Duration::from_millis(5),
            PROCESS_METRIC => Duration::from_millis(3),
            "sm_clock" if SM_CALLS.fetch_add(1, Ordering::Relaxed) == 0 => Duration::from_millis(3),
            _ => Duration::from_micros(1),
        };
        s.rehearse();
        assert_eq!(SM_CALLS.load(Ordering::Relaxed), 2, "the SM clock, twice");
        let mut out = Readings::new(vec!["nvml"]);
        // The window opens at launch; readings 50 ms apart up to 2.1 s.
        for i in 0..=42 {
            let t_ns = i * 50_000_000;
            out.begin(0, t_ns, false);
            let tick = Tick {
                opening: i == 0,
                ..tick(t_ns)
            };
            s.read(&tick, &mut out).unwrap();
        }
        let batch = out.take_batch();
        let read_at_ms = |metric: &str| -> Vec<i64> {
            let Some((id, _)) = batch.series.iter().find(|(_, s)| s.metric == metric) else {
                return vec![];
            };
            (batch.samples.iter())
                .filter(|x| x.series == *id)
                .map(|x| x.t_ns / 1_000_000)
                .collect()
        };
        assert_eq!(
            read_at_ms("sm_clock").len(),
            43,
            "the cold call was rehearsed"
        );
        // The counter at the window's opening only (its next call is due at 10 s)...
        assert_eq!(read_at_ms("energy"), [0]);
        // ...and process utilisation first 2 s after the launch, not at the opening.
        assert_eq!(read_at_ms("proc_sm_busy"), [2000]);
        let described = s.describe();
        assert!(
            described.contains(
                "reads its slow calls rarely: energy every 10 s (5.0 ms the last call), \
                 process utilisation every 2 s (3.0 ms the last call)"
            ),
            "{described}"
        );
    }

    #[test]
    fn the_rehearsal_finds_what_the_gpu_refuses() {
        let mut s = scripted(u32::MAX, 0, false);
        s.rehearse();
        assert!(
            s.describe()
                .contains("GPU 0 does not report energy (Not Supported)"),
            "{}",
            s.describe()
        );
    }

    #[test]
    fn a_call_slow_only_once_is_not_put_off() {
        static CALLS: AtomicU32 = AtomicU32::new(0);
        let mut s = source(u32::MAX, 0);
        // The first call of the SM clock is slow (the driver initialising), the rest fast.
        s.cost = |metric, _| {
            if metric == "sm_clock" && CALLS.fetch_add(1, Ordering::Relaxed) == 0 {
                Duration::from_millis(3)
            } else {
                Duration::ZERO
            }
        };
        let mut out = Readings::new(vec!["nvml"]);
        for i in 0..5 {
            out.begin(0, i * 50_000_000, false);
            s.read(&tick(i * 50_000_000), &mut out).unwrap();
        }
        let batch = out.take_batch();
        let sm = batch
            .series
            .iter()
            .find(|(_, s)| s.metric == "sm_clock")
            .unwrap()
            .0;
        assert_eq!(batch.samples.iter().filter(|x| x.series == sm).count(), 5);
        assert!(!s.describe().contains("rarely"), "{}", s.describe());
    }

    #[test]
    fn a_lost_gpu_stops_the_source_and_says_when() {
        let mut s = source(2, ERROR_GPU_IS_LOST);
        let mut out = Readings::new(vec!["nvml"]);
        for t in 0..2 {
            out.begin(0, t * 50_000_000, false);
            s.read(&tick(t * 50_000_000), &mut out).unwrap();
        }
        out.begin(0, 100_000_000, false);
        let why = s.read(&tick(100_000_000), &mut out).unwrap_err();
        assert!(
            why.starts_with("GPU 0 lost at 0.10 s (scripted failure (NVML error 15))"),
            "{why}"
        );
        // What it read before is kept: two ticks of the graphics clock.
        let batch = out.take_batch();
        assert_eq!(batch.samples.iter().filter(|x| x.series == 0).count(), 2);
    }

    #[test]
    fn a_gpu_failing_every_read_is_given_up_after_a_while() {
        let mut s = source(0, 999);
        let mut out = Readings::new(vec!["nvml"]);
        let mut result = Ok(());
        for t in 0..GIVE_UP_AFTER as i64 {
            out.begin(0, t, false);
            result = s.read(&tick(t * 1_000_000), &mut out);
        }
        let why = result.unwrap_err();
        assert!(why.contains("stopped answering"), "{why}");
        assert_eq!(out.problems(0).skipped, GIVE_UP_AFTER as u64 * 9);
    }
}
