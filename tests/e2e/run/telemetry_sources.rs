//! Each telemetry source against fixture trees with known values (tests/fixtures/sysfs,
//! tests/fixtures/proc), and what happens when files go missing, counters wrap around,
//! processes exit or the NVML library is absent. No GPU, no cpufreq, no RAPL needed.

use std::path::{Path, PathBuf};

use framelab::model::{SampleSeries, SeriesKind, SourceState};
use framelab::sample::amdgpu::Amdgpu;
use framelab::sample::cpufreq::Cpufreq;
use framelab::sample::rapl::Rapl;
use framelab::sample::threads::Threads;
use framelab::sample::{
    read_once, ProcessTree, Readings, Roots, SamplingOptions, SourceKind, Tick,
};
use framelab::session::procfs::Procfs;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A copy of a fixture tree that a test may change.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn series_named<'a>(
    series: &'a [SampleSeries],
    source: &str,
    metric: &str,
) -> Vec<(usize, &'a SampleSeries)> {
    series
        .iter()
        .enumerate()
        .filter(|(_, s)| s.source == source && s.metric == metric)
        .collect()
}

fn one_tick(pids: &[u32]) -> Tick<'_> {
    Tick {
        t_ns: 0,
        pids,
        closing: false,
        window_closed: false,
        opening: false,
        closes_window: false,
        origin_mono_ns: 0,
    }
}

#[test]
fn every_sysfs_source_reads_the_fixture_values() {
    let options = SamplingOptions {
        roots: Roots {
            sys: fixture("sysfs/workstation"),
            proc: fixture("proc"),
            nvml_library: Some(PathBuf::from("/nonexistent/libnvidia-ml.so.1")),
        },
        ..SamplingOptions::default()
    };
    let tree = ProcessTree::fixed(Procfs::at(fixture("proc"), 100), vec![]);
    let (sources, series, samples) = read_once(&options, tree, 2);
    let state = |name: &str| sources.iter().find(|s| s.source == name).unwrap().state;
    assert_eq!(state("nvml"), SourceState::Off);
    assert_eq!(state("amdgpu"), SourceState::On);
    assert_eq!(state("cpufreq"), SourceState::On);
    assert_eq!(state("rapl"), SourceState::On);
    let value = |id: usize| -> Vec<i64> {
        samples
            .iter()
            .filter(|s| s.series as usize == id)
            .map(|s| s.value)
            .collect()
    };

    // cpufreq: two cores in kHz, the `cpufreq` policy directory ignored.
    let cores = series_named(&series, "cpufreq", "freq");
    assert_eq!(cores.len(), 2);
    assert_eq!(
        (cores[0].1.entity.as_str(), cores[0].1.unit.as_str()),
        ("0", "kHz")
    );
    assert_eq!(value(cores[0].0), [2_400_000, 2_400_000]);
    assert_eq!(value(cores[1].0), [3_600_000, 3_600_000]);

    // RAPL: package and core domains by name; the mmio duplicate is not read.
    let energy = series_named(&series, "rapl", "energy");
    let labels: Vec<&str> = energy.iter().map(|(_, s)| s.label.as_str()).collect();
    assert_eq!(labels, ["package-0", "core"]);
    assert_eq!(energy[0].1.kind, SeriesKind::Counter);
    // A counter that did not change: written at the first and the closing reading.
    assert_eq!(value(energy[0].0), [123_456_789, 123_456_789]);

    // amdgpu: card0 only (card1 is not AMD, card0-DP-1 is a connector).
    let amd = |metric| series_named(&series, "amdgpu", metric);
    assert_eq!(amd("gpu_busy").len(), 1);
    assert_eq!(value(amd("gpu_busy")[0].0)[0], 37);
    assert_eq!(value(amd("mem_busy")[0].0)[0], 12);
    assert_eq!(value(amd("sclk")[0].0)[0], 1800);
    assert_eq!(value(amd("mclk")[0].0)[0], 1000);
    assert_eq!(value(amd("power")[0].0)[0], 152_000_000);
    assert_eq!(amd("power")[0].1.unit, "uW");
    assert_eq!(value(amd("temp")[0].0)[0], 61_000);

    let nvml = sources.iter().find(|s| s.source == "nvml").unwrap();
    assert!(
        nvml.detail
            .starts_with("cannot load /nonexistent/libnvidia-ml.so.1 ("),
        "{}",
        nvml.detail
    );
    assert!(!nvml.detail.contains('\n'));
}

#[test]
fn threads_are_read_from_a_fake_proc() {
    let mut threads = Threads::open(&fixture("proc"), 100).unwrap();
    let mut out = Readings::new(vec!["threads"]);
    out.begin(0, 0, true);
    threads.read(&one_tick(&[4242]), &mut out).unwrap();
    let batch = out.take_batch();
    let get = |entity: &str, metric: &str| -> (String, i64) {
        let (id, s) = batch
            .series
            .iter()
            .find(|(_, s)| s.entity == entity && s.metric == metric)
            .unwrap_or_else(|| panic!("{entity} {metric}"));
        let v = batch
            .samples
            .iter()
            .find(|x| x.series == *id)
            .unwrap()
            .value;
        (s.label.clone(), v)
    };
    // The main thread has schedstat: its CPU time is exact nanoseconds.
    assert_eq!(get("4242/4242", "cpu_time"), ("host".into(), 2_800_123_456));
    assert_eq!(get("4242/4242", "minflt").1, 1500);
    assert_eq!(get("4242/4242", "majflt").1, 7);
    assert_eq!(get("4242/4242", "ctx_voluntary").1, 120);
    assert_eq!(get("4242/4242", "ctx_involuntary").1, 7);
    // The other has none: utime + stime, 120 ticks of 10 ms.
    assert_eq!(
        get("4242/4243", "cpu_time"),
        ("encoder (0)".into(), 1_200_000_000)
    );
    assert_eq!(get("4242/4243", "ctx_involuntary").1, 40);
}

#[test]
fn threads_and_processes_that_exit_while_sampled_are_dropped_not_failed() {
    // Real /proc: an open file of a dead thread fails to read, which a fixture cannot fake.
    let own = std::process::id();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::spawn(move || rx.recv().ok());
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pids = {
        let mut p = vec![own, child.id()];
        p.sort_unstable();
        p
    };
    let mut threads = Threads::open(
        Path::new("/proc"),
        framelab::session::procfs::system_ticks_per_second(),
    )
    .unwrap();
    let mut out = Readings::new(vec!["threads"]);
    out.begin(0, 0, false);
    threads.read(&one_tick(&pids), &mut out).unwrap();
    let sleep_series = out
        .take_batch()
        .series
        .into_iter()
        .find(|(_, s)| s.entity == format!("{0}/{0}", child.id()) && s.metric == "cpu_time");
    assert!(sleep_series.is_some(), "the child's thread was read");

    // One of our threads ends; the child process ends and is reaped.
    tx.send(()).unwrap();
    worker.join().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    out.begin(0, 10_000_000, true);
    threads.read(&one_tick(&pids), &mut out).unwrap();
    let described = threads.describe();
    assert!(described.contains("ended before"), "{described}");
    // Neither is a failure: nothing skipped.
    assert_eq!(out.problems(0).skipped, 0);
}

#[test]
fn rapl_wraps_around_its_range() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("sysfs/workstation"), dir.path());
    let package = dir.path().join("class/powercap/intel-rapl:0");
    std::fs::write(package.join("max_energy_range_uj"), "1000000\n").unwrap();
    std::fs::write(package.join("energy_uj"), "900000\n").unwrap();
    let mut rapl = Rapl::open(dir.path()).unwrap();
    let mut out = Readings::new(vec!["rapl"]);
    // 900 000 → 950 000 → wraps to 30 000 → 100 000 (µJ): 50 000 + 80 000 + 70 000 more.
    for (t, raw) in [(0, "900000"), (1, "950000"), (2, "30000"), (3, "100000")] {
        std::fs::write(package.join("energy_uj"), format!("{raw}\n")).unwrap();
        out.begin(0, t, false);
        rapl.read(&one_tick(&[]), &mut out).unwrap();
    }
    let batch = out.take_batch();
    let values: Vec<i64> = batch
        .samples
        .iter()
        .filter(|s| s.series == 0)
        .map(|s| s.value)
        .collect();
    assert_eq!(values, [900_000, 950_000, 1_030_000, 1_100_000]);
}

#[test]
fn missing_and_unreadable_files_are_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("sysfs/workstation"), dir.path());
    let mut cpufreq = Cpufreq::open(dir.path()).unwrap();
    let mut amdgpu = Amdgpu::open(dir.path()).unwrap();
    let mut out = Readings::new(vec!["cpufreq", "amdgpu"]);
    // cpu1 goes offline (its cpufreq directory disappears); the GPU's table loses its mark.
    std::fs::remove_dir_all(dir.path().join("devices/system/cpu/cpu1/cpufreq")).unwrap();
    std::fs::write(
        dir.path().join("class/drm/card0/device/pp_dpm_sclk"),
        "0: 500Mhz\n1: 1800Mhz\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("class/drm/card0/device/gpu_busy_percent"),
        "busy\n",
    )
    .unwrap();
    for t in 0..3 {
        out.begin(0, t, false);
        cpufreq.read(&one_tick(&[]), &mut out).unwrap();
        out.begin(1, t, false);
        amdgpu.read(&one_tick(&[]), &mut out).unwrap();
    }
    let cpu = out.problems(0);
    assert_eq!(cpu.skipped, 3);
    assert!(cpu
        .first
        .unwrap()
        .ends_with("cpu1/cpufreq/scaling_cur_freq: missing"));
    let gpu = out.problems(1);
    assert_eq!(gpu.skipped, 6);
    // cpu0 kept being read.
    let batch = out.take_batch();
    assert_eq!(batch.samples.iter().filter(|s| s.series == 0).count(), 3);
}

#[test]
fn absent_sources_are_off_with_one_line_each() {
    let empty = tempfile::tempdir().unwrap();
    let options = SamplingOptions {
        roots: Roots {
            sys: empty.path().to_path_buf(),
            proc: fixture("proc"),
            nvml_library: Some(empty.path().join("libnvidia-ml.so.1")),
        },
        disabled: vec![SourceKind::Threads],
        ..SamplingOptions::default()
    };
    let tree = ProcessTree::fixed(Procfs::at(fixture("proc"), 100), vec![]);
    let (sources, series, samples) = read_once(&options, tree, 1);
    assert!(series.is_empty() && samples.is_empty());
    let names: Vec<&str> = sources.iter().map(|s| s.source.as_str()).collect();
    assert_eq!(names, ["nvml", "amdgpu", "cpufreq", "rapl", "threads"]);
    for s in &sources[..4] {
        assert_eq!(s.state, SourceState::Off, "{s:?}");
        assert!(!s.detail.is_empty() && !s.detail.contains('\n'), "{s:?}");
        assert_eq!(s.reads, 0);
    }
    assert_eq!(sources[4].state, SourceState::Disabled);
    assert_eq!(sources[4].detail, "switched off with --no-sample threads");
    assert!(
        sources[2].detail.contains("cpufreq"),
        "{}",
        sources[2].detail
    );
    assert!(
        sources[3].detail.contains("intel-rapl"),
        "{}",
        sources[3].detail
    );
}

#[test]
fn rapl_energy_readable_by_root_only_is_off_and_says_how_to_fix_it() {
    if unsafe { libc::geteuid() } == 0 {
        // root reads a mode-000 file anyway: nothing to observe.
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("sysfs/workstation"), dir.path());
    use std::os::unix::fs::PermissionsExt;
    for domain in ["intel-rapl:0", "intel-rapl:0:0"] {
        let path = dir
            .path()
            .join("class/powercap")
            .join(domain)
            .join("energy_uj");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    }
    let Err(why) = Rapl::open(dir.path()) else {
        panic!("opened unreadable counters");
    };
    assert!(
        why.contains("permission denied") && why.contains("run as root"),
        "{why}"
    );
}
