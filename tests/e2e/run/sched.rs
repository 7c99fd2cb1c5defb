//! On-CPU, runnable and blocked time per span (docs/metrics.md, "On-CPU, runnable and
//! blocked"), with real processes: a pipeline pinned to one CPU beside a CPU hog pinned to
//! the same CPU gets about half of it. Its thread's busy share must be its time on CPU
//! (within 10 points of the CPU time /proc gave its process over the window), not the
//! union of its spans' wall time (about 100%), and the time it waited must be named after
//! the hog. Nothing here depends on how fast the machine is: both sides of each comparison
//! are measured in the same run.
//!
//! The tracepoint test skips, saying why on stderr, where the kernel refuses
//! `sched_switch`; the schedstat fallback runs everywhere.

use crate::common;

use common::*;
use serde_json::Value;
use std::process::{Child, Command};

/// The CPU both share.
const CPU: &str = "0";

/// One pinned pipeline and hog at a time: two tests' hogs and pipelines on one CPU would
/// each be the other's preemption.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `testprog hog` pinned to `CPU`, killed when dropped.
struct Hog(Child);

impl Hog {
    fn start() -> Hog {
        let child = Command::new("taskset")
            .args(["-c", CPU])
            .arg(example("testprog"))
            .args(["hog", "120"])
            .spawn()
            .expect("taskset runs");
        // Running and named before the pipeline starts: the wait is for its new name
        // (taskset execs the hog in place), not for a time.
        let comm = format!("/proc/{}/comm", child.id());
        let hog = Hog(child);
        common::session::wait_for("the hog to name itself", || {
            std::fs::read_to_string(&comm).is_ok_and(|name| name.trim_end() == "cpuhog")
        });
        hog
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn tracepoints_refused() -> Option<String> {
    match framelab::sched::tracer::Tracer::start(std::process::id(), Vec::new(), None) {
        Ok(tracer) => {
            tracer.finish(0);
            None
        }
        Err(why) => Some(why),
    }
}

/// Records `testprog work` (2 ms of CPU a frame) pinned beside the hog for 3 s, with
/// `env` set; returns the JSON report of the saved run and its text report, after checking
/// that the report printed at the end of the run says the same.
fn record_beside_hog(env: &[(&str, &str)]) -> (Value, String) {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let _hog = Hog::start();
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "pinned");
    let out = framelab()
        .envs(env.iter().copied())
        .args(["run", "--pin", CPU, "--duration", "3s", "-o"])
        .arg(&path)
        .arg("--")
        .arg(example("testprog"))
        .args(["work", "100000", "2000"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = framelab().arg("report").arg(&path).output().unwrap();
    assert!(text.status.success(), "{}", stderr(&text));
    let saved = stdout(&text);
    let lines = |t: &str| -> Vec<String> {
        (t.lines())
            .filter(|l| {
                ["bound", "scheduler", "thread", "main"]
                    .iter()
                    .any(|k| l.trim_start().starts_with(k))
            })
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        lines(&stdout(&out)),
        lines(&saved),
        "the saved run reports the same"
    );
    (report_json(&path), saved)
}

/// The time `/proc/stat` counts as taken from the tasks on `cpu` since boot, in ns: its
/// interrupts, soft interrupts and time stolen by the hypervisor. The scheduler sees none of
/// it as a switch.
fn time_taken_from_tasks_ns(cpu: &str) -> f64 {
    let cpu: u32 = cpu.parse().unwrap();
    let ticks: i64 = proc_stat::taken_ticks()[&cpu].iter().sum();
    (ticks * proc_stat::tick_ns()) as f64
}

/// The command's CPU time (/proc utime + stime over the window) as a % of the window.
fn cpu_share(report: &Value) -> f64 {
    let command = report["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["role"] == "command")
        .expect("a command row");
    let cpu_ns = command["user_ns"].as_f64().unwrap() + command["sys_ns"].as_f64().unwrap();
    cpu_ns / report["window"]["length_ns"].as_f64().unwrap() * 100.0
}

fn main_thread(report: &Value) -> &Value {
    &report["pipeline"]["resources"][0]
}

/// The thread's busy share and the bound line are its time on CPU, within 10 points of
/// what /proc says the process used, and well below the union of its spans.
fn assert_busy_is_on_cpu(report: &Value, text: &str) {
    let thread = main_thread(report);
    let busy = thread["busy_pct"].as_f64().unwrap();
    let cpu = cpu_share(report);
    assert!(
        (busy - cpu).abs() <= 10.0,
        "busy (on CPU) {busy:.1}% vs /proc CPU {cpu:.1}%: {report:#}"
    );
    let window_ns = report["window"]["length_ns"].as_f64().unwrap();
    let wall_pct = thread["wall_busy_ns"].as_f64().unwrap() / window_ns * 100.0;
    assert!(
        wall_pct > busy + 15.0,
        "the hog took no time from the spans? wall {wall_pct:.1}% vs on CPU {busy:.1}%"
    );
    assert_eq!(report["pipeline"]["busy_on_cpu"], true);
    let bottleneck = &report["pipeline"]["bottleneck"];
    assert_eq!(bottleneck["busy_pct"].as_f64().unwrap(), busy);
    let bound = text
        .lines()
        .find(|l| l.trim_start().starts_with("bound"))
        .expect("a bound line");
    assert!(bound.contains("busy (on CPU)"), "{bound}");
    assert!(
        bound.contains(&format!("{busy:.1}% busy")),
        "{bound} (busy {busy:.1}%)"
    );
    assert!(text.contains("busy % (on CPU)"), "{text}");
    assert!(text.contains("on-CPU p50"), "{text}");
}

#[test]
fn a_pipeline_preempted_by_a_hog_is_busy_only_for_its_time_on_cpu() {
    if let Some(why) = tracepoints_refused() {
        eprintln!("SKIPPED a_pipeline_preempted_by_a_hog_is_busy_only_for_its_time_on_cpu: {why}");
        return;
    }
    let taken_before = time_taken_from_tasks_ns(CPU);
    let (report, text) = record_beside_hog(&[]);
    let taken_ns = time_taken_from_tasks_ns(CPU) - taken_before;
    assert_eq!(report["sched"]["source"], "tracepoints", "{report:#}");
    assert_busy_is_on_cpu(&report, &text);
    // The time the spans waited for the CPU is named after the tasks that held it: the hog
    // among them. Its share of the wait is not asserted: on a loaded machine others take
    // most of it (a CI run beside compilers: the hog 2% of 2.7 s, `rustc` 35%).
    let by = report["sched"]["preempted_by"].as_array().unwrap();
    let hog = (by.iter())
        .find(|b| b["comm"] == "cpuhog")
        .unwrap_or_else(|| panic!("the hog is not named: {by:#?}"));
    assert!(hog["ns"].as_f64().unwrap() > 0.0, "{by:#?}");
    // Every worst frame is named after what preempted it, but for time the scheduler never
    // saw taken: a VM's CPU stolen by its host, or interrupts handled on the thread's CPU,
    // stretch a frame while its thread is on CPU. Such frames are allowed only as far as
    // /proc/stat counted that time on the CPU (a CI run: one 30 ms frame not preempted).
    let worst = report["worst_frames"].as_array().unwrap();
    let stretched_unseen_ns: f64 = (worst.iter())
        .filter(|w| !w["preempted_by"].is_string())
        .map(|w| (w["total_ns"].as_f64().unwrap() - 3e6).max(0.0))
        .sum();
    // /proc/stat counts whole ticks: give the count two more.
    let explained_ns = if taken_ns > 0.0 {
        taken_ns + 2.0 * proc_stat::tick_ns() as f64
    } else {
        0.0
    };
    assert!(
        stretched_unseen_ns <= explained_ns,
        "frames stretched by {stretched_unseen_ns} ns with no preemption seen, while \
         /proc/stat counted {taken_ns} ns of CPU {CPU} taken from its tasks: {worst:#?}"
    );
    assert!(text.contains(" ms by "), "{text}");
    let work = (report["sched"]["stages"].as_array().unwrap().iter())
        .find(|s| s["stage"] == "work")
        .unwrap();
    assert!(work["runnable_ns"].as_f64().unwrap() > 0.0);
    // 2 ms of the process's CPU clock a frame: the on-CPU median is that, whatever the wall
    // time was, plus what interrupts and the hypervisor took from the spans, which the CPU
    // clock need not count but the scheduler sees as on CPU. At least half the spans last the
    // median or longer, so it exceeds 2 ms by at most twice the time taken over them all
    // (/proc/stat's, with its ticks), shared out. 0.1 ms is the burn's overshoot and the
    // span's own edges.
    let p50_ms = work["on_cpu"]["p50_ns"].as_f64().unwrap() / 1e6;
    let spans = work["on_cpu"]["count"].as_f64().unwrap();
    let taken_ms = (taken_ns + 2.0 * proc_stat::tick_ns() as f64) / 1e6;
    let most_ms = 2.0 + 0.1 + 2.0 * taken_ms / spans;
    assert!(
        (1.5..=most_ms).contains(&p50_ms),
        "on-CPU p50 {p50_ms} ms of {spans} spans, against 2 ms of CPU each and {taken_ms} ms \
         taken from CPU {CPU}'s tasks"
    );
}

/// With a cgroup v2 group for the run, the kernel keeps only the run's switches: the hog
/// (started by the test, outside the group) taking the CPU is seen only as the run's thread
/// leaving it, and the thread's return only as the kernel's switch-in record. Both must be
/// seen, as they are by the fallback that reads every task's switches (the run group as a
/// process tree): in each, busy is the thread's CPU as /proc gave it, the hog is named among
/// the tasks it waited for, and the `work` stage, which never sleeps, is on CPU or runnable
/// for nearly all of its wall time (a missed return would leave it runnable, a missed
/// preemption on CPU).
#[test]
fn a_hog_outside_the_runs_cgroup_is_seen_preempting_it_as_by_the_fallback() {
    if let Some(why) = tracepoints_refused() {
        eprintln!(
            "SKIPPED a_hog_outside_the_runs_cgroup_is_seen_preempting_it_as_by_the_fallback: {why}"
        );
        return;
    }
    for (env, filtered) in [
        (None, "kept for the run's cgroup by the kernel"),
        (
            Some(("FRAMELAB_RUN_GROUP", "tree")),
            "every task's switches, the run's found in /proc (the run has no cgroup v2 group)",
        ),
    ] {
        let (mut report, mut text) = record_beside_hog(env.as_slice());
        // This VM's kernel sometimes reports no switch out of the idle task on CPUs other
        // than 0; framelab then says so and falls back to schedstat (9 of 610 returns once,
        // with CI's suite beside it). That is the kernel's, not the path under test: one
        // more recording, which must take the tracepoints.
        let missed = |r: &Value| {
            (r["sched"]["detail"].as_str())
                .is_some_and(|d| d.starts_with("the sched_switch tracepoints missed"))
        };
        if missed(&report) {
            eprintln!("recorded again: {}", report["sched"]["detail"]);
            (report, text) = record_beside_hog(env.as_slice());
        }
        if env.is_none() && report["run_group"]["mechanism"] != "cgroup2" {
            eprintln!(
                "SKIPPED the cgroup half of a_hog_outside_the_runs_cgroup_is_seen_preempting_it_as_by_the_fallback: no cgroup v2 group here ({})",
                report["run_group"]
            );
            continue;
        }
        let sched = &report["sched"];
        assert_eq!(sched["source"], "tracepoints", "{env:?}: {sched:#}");
        assert_eq!(sched["detail"], filtered, "{env:?}");
        assert_eq!(sched["lost"], 0, "{env:?}");
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("scheduler"))
            .expect("a scheduler line");
        assert!(line.ends_with(filtered), "{line}");
        assert_busy_is_on_cpu(&report, &text);
        // Named for some of the wait: on this shared machine other people's compilers
        // may take most of it.
        let by = sched["preempted_by"].as_array().unwrap();
        let hog = (by.iter())
            .find(|b| b["comm"] == "cpuhog")
            .unwrap_or_else(|| panic!("{env:?}: the hog is not named: {by:#?}"));
        assert!(hog["ns"].as_f64().unwrap() > 0.0, "{env:?}: {by:#?}");
        let work = (sched["stages"].as_array().unwrap().iter())
            .find(|s| s["stage"] == "work")
            .unwrap();
        let part = |k: &str| work[k].as_f64().unwrap();
        let wall = part("on_cpu_ns") + part("runnable_ns") + part("blocked_ns");
        assert!(part("runnable_ns") > 0.1 * wall, "{env:?}: {work:#}");
        assert!(part("blocked_ns") < 0.05 * wall, "{env:?}: {work:#}");
    }
}

#[test]
fn without_tracepoints_schedstat_splits_the_spans_more_coarsely() {
    let (report, text) = record_beside_hog(&[("FRAMELAB_SCHED", "schedstat")]);
    assert_eq!(report["sched"]["source"], "schedstat", "{report:#}");
    assert_eq!(report["sched"]["resolution_ns"], 50_000_000);
    assert_busy_is_on_cpu(&report, &text);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("scheduler"))
        .expect("a scheduler line");
    assert!(line.contains("schedstat every 50ms"), "{line}");
    assert!(line.contains("FRAMELAB_SCHED=schedstat"), "{line}");
}

#[test]
fn a_refused_tracepoint_says_how_to_get_it_and_the_run_goes_on() {
    // Behave as an unprivileged user: EACCES from perf_event_open.
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog_with_env(
        &dir,
        "refused",
        &[("FRAMELAB_TEST_PERF_ERRNO", "13")],
        &[],
        &["work", "200", "500"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings: Vec<String> = stderr(&out)
        .lines()
        .filter(|l| l.contains("scheduler tracepoints unavailable"))
        .map(str::to_owned)
        .collect();
    assert_eq!(warnings.len(), 1, "{}", stderr(&out));
    let tracefs_missing = warnings[0].contains("tracefs");
    if !tracefs_missing {
        assert!(
            warnings[0].contains("kernel.perf_event_paranoid")
                && warnings[0].contains("CAP_PERFMON"),
            "{}",
            warnings[0]
        );
    }
    let report = report_json(&path);
    assert_eq!(report["sched"]["source"], "schedstat");
    assert!(report["sched"]["detail"]
        .as_str()
        .unwrap()
        .contains("scheduler tracepoints unavailable"));
}

#[test]
fn an_unknown_sched_setting_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "bad");
    let out = framelab()
        .env("FRAMELAB_SCHED", "ebpf")
        .args(["run", "-o"])
        .arg(&path)
        .arg("--")
        .arg(example("testprog"))
        .args(["spans", "5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let line = error_line(&out);
    assert!(line.contains("FRAMELAB_SCHED=ebpf"), "{line}");
    assert!(!path.exists(), "no run file for a refused run");
}

/// A thread that sleeps between frames on a CPU other than 0: some kernels (this project's
/// VMs') never report its switches out of the idle task there, so a traced timeline would
/// show it blocked while it worked (on-CPU 3% for a thread whose process used 28%). Such a
/// timeline is not used: busy (on CPU) still matches what /proc says the process used.
#[test]
fn a_thread_that_sleeps_on_another_cpu_is_busy_for_its_cpu_time() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        eprintln!("SKIPPED a_thread_that_sleeps_on_another_cpu_is_busy_for_its_cpu_time: one CPU");
        return;
    }
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "elsewhere");
    let last = (cpus - 1).to_string();
    // 600 µs of CPU and a 400 µs sleep a frame, for about 3 s.
    let out = framelab()
        .args(["run", "--pin", &last, "-o"])
        .arg(&path)
        .arg("--")
        .arg(example("testprog"))
        .args(["spans", "3000"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report = report_json(&path);
    let busy = main_thread(&report)["busy_pct"].as_f64().unwrap();
    let cpu = cpu_share(&report);
    assert!(
        (busy - cpu).abs() <= 10.0,
        "busy (on CPU) {busy:.1}% vs /proc CPU {cpu:.1}% ({}): {}",
        report["sched"]["source"],
        report["sched"]["detail"]
    );
    if report["sched"]["source"] == "schedstat" {
        let detail = report["sched"]["detail"].as_str().unwrap();
        assert!(detail.contains("returns of the run's threads"), "{detail}");
    }
}

/// Threads that live between two readings of the threads source are in no row of its
/// table; the scheduler saw them, and the `threads` line says how many and their time on
/// CPU. 30 threads of 20 ms of CPU each, two at a time, read once a second.
#[test]
fn threads_that_lived_between_two_readings_are_counted_on_the_threads_line() {
    let test = "threads_that_lived_between_two_readings_are_counted_on_the_threads_line";
    if let Some(why) = tracepoints_refused() {
        eprintln!("SKIPPED {test}: {why}");
        return;
    }
    let Some(python) = python_executable() else {
        python_skip_or_fail(test, "no Python", "install python3");
        return;
    };
    let script = "import threading, time\n\
                  def burn():\n\
                  \x20   end = time.thread_time() + 0.02\n\
                  \x20   while time.thread_time() < end: pass\n\
                  for _ in range(15):\n\
                  \x20   ts = [threading.Thread(target=burn) for _ in range(2)]\n\
                  \x20   [t.start() for t in ts]; [t.join() for t in ts]\n";
    let dir = tempfile::tempdir().unwrap();
    let file = temp_run(&dir, "threads");
    let out = framelab()
        .args(["run", "--sample-every", "1s", "-o"])
        .arg(&file)
        .args(["--", &python, "-c", script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&file);
    let line = &(run.telemetry.sources.iter())
        .find(|s| s.source == "threads")
        .expect("a threads line")
        .detail;
    let report = stdout(&framelab().arg("report").arg(&file).output().unwrap());
    // Where the kernel's exit records come (root), each thread read by neither reading has
    // rows from its record: 0 at its start, its totals at its exit.
    let from_records = regex::Regex::new(r"(\d+) threads? lived between two listings, from")
        .unwrap()
        .captures(line)
        .map(|m| m[1].parse::<u64>().unwrap());
    if let Some(count) = from_records {
        assert!(count >= 20, "{count} of 30: {line}");
        let workers: Vec<i64> = (run.telemetry.series.iter().enumerate())
            .filter(|(_, s)| s.metric == "cpu_time" && s.source == "threads")
            .filter_map(|(id, _)| {
                let values: Vec<i64> = (run.telemetry.samples.iter())
                    .filter(|s| s.series == id as u32)
                    .map(|s| s.value)
                    .collect();
                Some(values.last()? - values.first()?)
            })
            .filter(|&ns| ns > 0)
            .collect();
        // The main thread and the 30 workers, each of the workers' 20 ms on CPU counted.
        let burning = workers.iter().filter(|&&ns| ns >= 18_000_000).count();
        assert!(
            burning >= 30,
            "{burning} threads with 18 ms or more: {workers:?}"
        );
        return;
    }
    let caught = regex::Regex::new(r"the scheduler saw (\d+) more threads? that lived between two readings \(([\d.]+) ms on CPU")
        .unwrap();
    let Some(m) = caught.captures(&report) else {
        panic!("no count of unread threads in: {report} (sampler said: {line})");
    };
    let (count, ms): (u64, f64) = (m[1].parse().unwrap(), m[2].parse().unwrap());
    // Each reading a second apart can catch the two threads running then: most are unread.
    assert!(count >= 20, "{count} of 30: {report}");
    assert!(
        ms >= count as f64 * 18.0,
        "{count} threads, {ms} ms: {report}"
    );
}
