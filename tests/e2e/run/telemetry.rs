//! `framelab run` with telemetry, end to end: sysfs from a fixture tree (this machine has
//! no GPU, cpufreq or RAPL), the command's threads from the real /proc, the run file's
//! tables and view, the three report formats, and bad options.

use crate::common;

use common::session::run_until;
use common::*;
use framelab::model::SourceState;
use std::path::{Path, PathBuf};

fn workstation() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/workstation")
}

/// `framelab run --fps 500 --sysfs-root ROOT ARGS -o PATH -- COMMAND`, without NVML.
fn run_on(root: &Path, args: &[&str], path: &Path, command: &[&str]) -> std::process::Command {
    let mut run = framelab();
    run.env("FRAMELAB_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
        .args(["run", "--fps", "500", "--sysfs-root"])
        .arg(root)
        .args(args)
        .arg("-o")
        .arg(path)
        .arg("--")
        .args(command);
    run
}

fn run_with(args: &[&str], path: &Path) -> std::process::Output {
    let testprog = example("testprog");
    run_on(&workstation(), args, path, &[&testprog, "spans", "300"])
        .output()
        .unwrap()
}

/// The sampler reads cpufreq (both fixture cores) at least twice, and the command's thread
/// at least once, before the command ends: a loaded machine may start the sampler's thread
/// late, so the command (testprog's frames, until the test lets it end) outlives what the
/// test checks, as the committed run file shows it. testprog is the command itself, as a
/// thread is named as first seen: one forked by a shell could be seen before its exec.
fn run_until_sampled(path: &Path, go: &Path) -> std::process::Output {
    run_until_sampled_with(path, go, None)
}

/// `run_until_sampled` with one variable set in framelab's environment.
fn run_until_sampled_with(
    path: &Path,
    go: &Path,
    env: Option<(&str, &str)>,
) -> std::process::Output {
    let testprog = example("testprog");
    let go_arg = go.to_str().unwrap();
    let mut run = run_on(
        &workstation(),
        &["--sample-every", "10ms"],
        path,
        &[&testprog, "until", go_arg],
    );
    if let Some((name, value)) = env {
        run.env(name, value);
    }
    run_until(
        &mut run,
        path,
        go,
        "two cpufreq readings and one of testprog's thread",
        |conn| {
            conn.query_row(
                "SELECT (SELECT count(*) FROM named_samples WHERE source = 'cpufreq') >= 4
                    AND (SELECT count(*) FROM named_samples
                         WHERE source = 'threads' AND label = 'testprog') >= 1",
                [],
                |r| r.get(0),
            )
        },
    )
}

#[test]
fn a_run_samples_every_source_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "telemetry");
    let out = run_until_sampled(&path, &dir.path().join("go"));
    assert!(out.status.success(), "{}", stderr(&out));

    let run = load(&path);
    let t = &run.telemetry;
    let states: Vec<(&str, SourceState)> = t
        .sources
        .iter()
        .map(|s| (s.source.as_str(), s.state))
        .collect();
    assert_eq!(
        states,
        [
            ("nvml", SourceState::Off),
            ("amdgpu", SourceState::On),
            ("cpufreq", SourceState::On),
            ("rapl", SourceState::On),
            ("threads", SourceState::On),
        ]
    );
    assert!(t.sources.iter().all(|s| s.every_ns >= 10_000_000));
    let reads = t.sources[2].reads;
    assert!(reads >= 2, "cpufreq read {reads} times");
    // Both fixture cores, every reading, at the fixture's value.
    let cores: Vec<usize> = t
        .series
        .iter()
        .enumerate()
        .filter(|(_, s)| s.source == "cpufreq")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(cores.len(), 2);
    let core0: Vec<i64> = t
        .samples
        .iter()
        .filter(|s| s.series as usize == cores[0])
        .map(|s| s.value)
        .collect();
    assert_eq!(core0.len() as u64, reads);
    assert!(core0.iter().all(|&v| v == 2_400_000));
    // The command's own thread, named after it.
    assert!(t
        .series
        .iter()
        .any(|s| s.source == "threads" && s.metric == "cpu_time" && s.label == "testprog"));

    // The view gives plain rows to anyone with sqlite.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let (source, unit, value): (String, String, i64) = conn
        .query_row(
            "SELECT source, unit, value FROM named_samples WHERE metric = 'sclk' LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (source.as_str(), unit.as_str(), value),
        ("amdgpu", "MHz", 1800)
    );

    let text = stdout(&out);
    assert!(text.contains("sampling  every 10 ms"), "{text}");
    assert!(
        text.contains("nvml      off      cannot load /nonexistent/libnvidia-ml.so.1 ("),
        "{text}"
    );
    assert!(text.contains("cpufreq freq"), "{text}");
    assert!(text.contains("amdgpu sclk"), "{text}");
    assert!(text.contains("busiest threads"), "{text}");
    // amdgpu power integrated over the window: a constant 152 W.
    assert!(text.contains("power readings"), "{text}");
    assert!(text.contains("152.0"), "{text}");

    let md = framelab()
        .args(["report", "--format", "markdown"])
        .arg(&path)
        .output()
        .unwrap();
    let md = stdout(&md);
    assert!(md.contains("**sampling** every 10 ms"), "{md}");
    assert!(md.contains("| telemetry | device |"), "{md}");

    let v = report_json(&path);
    let energy = &v["telemetry"]["energy"];
    let amd = energy
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["source"] == "amdgpu")
        .unwrap();
    assert!((amd["avg_power_w"].as_f64().unwrap() - 152.0).abs() < 1e-6);
    assert_eq!(v["telemetry"]["sources"][0]["state"], "off");
}

/// The threads' counters come from the kernel's taskstats answers where framelab may ask
/// (root), else from /proc, and the sources line says which; both give the command's thread
/// with time on CPU and switches. (That the two agree value for value is the unit test
/// `the_kernels_answers_equal_the_proc_files`.)
#[test]
fn the_threads_source_says_where_its_counters_come_from() {
    for off in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = temp_run(&dir, "threads");
        let env = off.then_some(("FRAMELAB_THREAD_QUERY", "off"));
        let out = run_until_sampled_with(&path, &dir.path().join("go"), env);
        assert!(out.status.success(), "{}", stderr(&out));
        let run = load(&path);
        let t = &run.telemetry;
        let threads = t.sources.iter().find(|s| s.source == "threads").unwrap();
        let asked = threads.detail.contains("asked of the kernel (taskstats)");
        if off {
            assert!(
                threads
                    .detail
                    .contains("read from /proc (switched off with FRAMELAB_THREAD_QUERY=off)"),
                "{}",
                threads.detail
            );
        } else {
            // Root may ask; elsewhere the line says why not.
            let root = unsafe { libc::geteuid() } == 0;
            assert!(
                asked || (!root && threads.detail.contains("read from /proc (")),
                "{}",
                threads.detail
            );
        }
        let last = |metric: &str| -> i64 {
            let (id, _) = t
                .series
                .iter()
                .enumerate()
                .find(|(_, s)| s.source == "threads" && s.metric == metric && s.label == "testprog")
                .unwrap_or_else(|| panic!("no {metric} series of testprog"));
            t.samples
                .iter()
                .rfind(|s| s.series as usize == id)
                .unwrap()
                .value
        };
        assert!(last("cpu_time") > 0);
        assert!(last("minflt") > 0);
        // testprog waits for the go file in short sleeps: voluntary switches.
        assert!(last("ctx_voluntary") > 0);
    }
}

/// A thread that ends while its process goes on keeps what it counted up to its exit, not
/// only up to its last reading: read every 2 s, `burner` is read before it burns its 300 ms
/// (the test lets it start once its series is there), so its last reading misses nearly all
/// of them. Its row matches its own CPU clock to a clock tick (the exit record's sum leaves
/// out the slice running since the scheduler's last tick).
#[test]
fn a_thread_that_ends_keeps_its_cpu_up_to_its_exit() {
    if !common::session::is_root() {
        return common::session::skip(
            "a_thread_that_ends_keeps_its_cpu_up_to_its_exit",
            "exit records need CAP_NET_ADMIN",
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "thread-exit");
    let (go, own) = (dir.path().join("go"), dir.path().join("own"));
    let testprog = example("testprog");
    let command = [
        testprog.as_str(),
        "thread-exit",
        "300",
        go.to_str().unwrap(),
        own.to_str().unwrap(),
    ];
    let mut run = run_on(&workstation(), &["--sample-every", "2s"], &path, &command);
    let out = run_until(&mut run, &path, &go, "a reading of the burner", |conn| {
        conn.query_row(
            "SELECT count(*) > 0 FROM named_samples WHERE source = 'threads' AND label = 'burner'",
            [],
            |r| r.get(0),
        )
    });
    assert!(out.status.success(), "{}", stderr(&out));
    let own = std::fs::read_to_string(&own).unwrap();
    let (tid, clock_ns) = own.trim().split_once(' ').unwrap();
    let (tid, clock_ns): (u64, i64) = (tid.parse().unwrap(), clock_ns.parse().unwrap());
    let json = report_json(&path);
    let row = json["telemetry"]["busiest_threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tid"].as_u64() == Some(tid))
        .unwrap_or_else(|| panic!("no row of the burner {tid}: {json:#}"));
    let cpu_ns = row["cpu_ns"].as_i64().unwrap();
    assert!(
        (cpu_ns - clock_ns).abs() <= 10_000_000,
        "the burner's row {cpu_ns} ns, its own clock {clock_ns} ns"
    );
}

#[test]
fn sources_switched_off_say_so_and_record_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "no-sample");
    let out = run_with(&["--no-sample", "cpufreq", "--no-sample", "threads"], &path);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&path);
    assert!(!run
        .telemetry
        .series
        .iter()
        .any(|s| s.source == "cpufreq" || s.source == "threads"));
    let text = stdout(&out);
    assert!(
        text.contains("cpufreq   disabled switched off with --no-sample cpufreq"),
        "{text}"
    );
    assert!(!text.contains("busiest threads"), "{text}");
}

#[test]
fn bad_sampling_options_are_one_line_errors() {
    let out = run(&["run", "--sample-every", "500us", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("shorter than the least allowed, 1ms"), "{err}");
    let out = run(&["run", "--no-sample", "gpu", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(
            "'gpu' is not a telemetry source: use one of nvml, amdgpu, cpufreq, rapl, threads"
        ),
        "{err}"
    );
}

#[test]
fn sources_shows_what_each_source_reads() {
    let out = framelab()
        .env("FRAMELAB_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
        .args([
            "sources",
            "--count",
            "2",
            "--sample-every",
            "5ms",
            "--sysfs-root",
        ])
        .arg(workstation())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("framelab sources · 2 readings 5ms apart"),
        "{text}"
    );
    assert!(
        text.contains("rapl      on       package-0, core"),
        "{text}"
    );
    assert!(text.contains("2400000 2400000"), "{text}");
}

/// A copy of the workstation tree whose AMD card draws a steady `microwatts`.
fn workstation_at(dir: &Path, microwatts: u64) -> PathBuf {
    let root = dir.join(format!("sys-{microwatts}"));
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(workstation())
        .arg(&root)
        .status()
        .unwrap();
    assert!(copied.success());
    let power = root.join("class/drm/card0/device/hwmon/hwmon4/power1_average");
    std::fs::write(power, format!("{microwatts}\n")).unwrap();
    root
}

#[test]
fn amdgpu_power_at_two_levels_is_compared_exactly_and_rapl_by_its_counter() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    let testprog = example("testprog");
    for (name, microwatts) in [("at152W", 152_000_000), ("at60W", 60_000_000)] {
        let root = workstation_at(dir.path(), microwatts);
        let path = temp_run(&dir, name);
        for _ in 0..2 {
            let args = ["--sample-every", "10ms", "--no-sample", "threads"];
            let command = [testprog.as_str(), "spans", "200"];
            let out = run_on(&root, &args, &path, &command).output().unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
        }
        files.push(path.to_str().unwrap().to_owned());
    }
    let out = framelab()
        .args(["compare", "--format", "json"])
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let c: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let row = |metric: &str| {
        c["groups"][0]["comparisons"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["metric"] == metric)
            .unwrap_or_else(|| panic!("no {metric} in {c}"))
            .clone()
    };
    let median = |r: &serde_json::Value, side: &str| r[side]["median"].as_f64().unwrap();
    // The card's power readings integrated: the level written, whatever the timing.
    let card = row("power.card0");
    assert!((median(&card, "baseline") - 152.0).abs() < 1e-9, "{card}");
    assert!((median(&card, "variant") - 60.0).abs() < 1e-9, "{card}");
    assert_eq!(card["label"], "mean power, card0");
    // RAPL by its energy counter, named as the report names the domains; the fixture's
    // counters stand still: a measured 0 W, not a missing value.
    for device in ["package-0", "core"] {
        let rapl = row(&format!("power.{device}"));
        assert_eq!(median(&rapl, "baseline"), 0.0, "{rapl}");
        assert_eq!(median(&rapl, "variant"), 0.0, "{rapl}");
    }
    assert!(
        row("energy_per_frame.card0")["variant"]["median"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}
