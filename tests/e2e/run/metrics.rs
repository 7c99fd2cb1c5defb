//! Metrics from the command's own output (`--metric`), end to end with real processes:
//! read from stdout, stderr or a JSON file, tee'd to the terminal, kept (capped) in the run
//! file, failures said and never zero, bad definitions refused in one line; and the bench
//! methodology around them: `--shell`, `--warmup-runs`, `--setup`/`--cleanup`, exports,
//! sweeps of one variant.

use crate::common;

use common::json::{comparison_row as row, stdout_json as json};
use common::*;
use serde_json::Value;
use std::path::Path;

fn run_shell(file: &Path, args: &[&str], script: &str) -> std::process::Output {
    framelab()
        .args(["run", "--shell"])
        .args(args)
        .arg("-o")
        .arg(file)
        .arg("--")
        .arg(script)
        .output()
        .unwrap()
}

#[test]
fn a_number_the_command_prints_is_a_metric_and_its_output_still_reaches_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.framelab");
    let out = run_shell(
        &file,
        &[
            "--metric",
            r"req_s[req/s]:higher:stdout=Requests per second:\s+([\d.]+)",
            "--metric",
            r"lat[ms]:lower:stderr:first=latency (\d+) ms",
        ],
        "echo 'Requests per second:    1234.56 [#/sec] (mean)'; \
         echo 'latency 7 ms' >&2; echo 'latency 9 ms' >&2",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Tee'd: the command's lines are on framelab's own stdout and stderr.
    assert!(
        stdout(&out).starts_with("Requests per second:    1234.56"),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("latency 9 ms"), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "metrics   req_s 1234.56 req/s (higher is better) · lat 7 ms (lower is better)"
        ),
        "{}",
        stdout(&out)
    );
    let run = load(&file);
    let values: Vec<(&str, Option<f64>)> = run
        .metrics
        .iter()
        .map(|m| (m.name.as_str(), m.value))
        .collect();
    assert_eq!(values, [("req_s", Some(1234.56)), ("lat", Some(7.0))]);
    let stdout_kept = run.outputs.iter().find(|o| o.stream == "stdout").unwrap();
    assert_eq!(
        stdout_kept.content,
        b"Requests per second:    1234.56 [#/sec] (mean)\n"
    );
    assert_eq!(stdout_kept.dropped, 0);
    // The report of the file says the same, and its JSON carries the numbers.
    let r = report_json(&file);
    assert_eq!(r["metrics"][0]["value"], 1234.56);
    assert_eq!(r["metrics"][0]["unit"], "req/s");
}

/// `framelab run --format json -- cmd | jq`: the report alone is on stdout; the command's
/// stdout goes to stderr, captured for a metric or not.
#[test]
fn with_a_json_report_the_commands_stdout_goes_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let script = "echo 'Requests per second:    1234.56 [#/sec] (mean)'; echo 'to stderr' >&2";
    for metric in [
        &[][..],
        &[
            "--metric",
            r"req_s[req/s]:higher:stdout=Requests per second:\s+([\d.]+)",
        ][..],
    ] {
        let file = dir.path().join(format!("j{}.framelab", metric.len()));
        let out = run_shell(&file, &[&["--format", "json"], metric].concat(), script);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let report = json(&out);
        assert_eq!(report["schema"], "framelab.report/3");
        let err = stderr(&out);
        assert!(err.contains("Requests per second:    1234.56"), "{err}");
        assert!(err.contains("to stderr"), "{err}");
        if !metric.is_empty() {
            assert_eq!(report["metrics"][0]["value"], 1234.56);
        }
    }
    // The text report keeps the command's stdout on stdout, as before.
    let out = run_shell(&dir.path().join("t.framelab"), &[], script);
    assert!(
        stdout(&out).starts_with("Requests per second"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_metric_not_found_is_no_value_with_a_reason_and_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("miss.framelab");
    let out = run_shell(
        &file,
        &["--metric", r"req_s:higher=Requests per second:\s+([\d.]+)"],
        "echo 'ab: connection refused'",
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(r"metric req_s: no line of stdout or stderr matched /Requests per second:\s+([\d.]+)/ (1 line read)"),
        "{text}"
    );
    assert!(stderr(&out).contains("1 metric could not be read"));
    let run = load(&file);
    assert_eq!(run.metrics[0].value, None, "never a silent zero");
    // A capture that is not a number is a failure too, quoting what it captured.
    let file = dir.path().join("word.framelab");
    let out = run_shell(
        &file,
        &["--metric", r"mode=mode: (\w+)"],
        "echo 'mode: fast'",
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stdout(&out).contains(r#"captured "fast" in "mode: fast", which is not a number"#),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_number_from_a_json_file_the_command_writes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("j.framelab");
    let result = dir.path().join("result.json");
    let r = result.display();
    let script = format!(r#"echo '{{"latency": {{"p99": 3.25}}, "runs": [1, 2]}}' > {r}"#);
    let out = run_shell(
        &file,
        &[
            "--metric",
            &format!("p99[ms]:lower=json:{r}:$.latency.p99"),
            "--metric",
            &format!("second:higher=json:{r}:$.runs[1]"),
            "--metric",
            &format!("p50:lower=json:{r}:$.latency.p50"),
        ],
        &script,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let run = load(&file);
    assert_eq!(run.metrics[0].value, Some(3.25));
    assert_eq!(run.metrics[1].value, Some(2.0));
    let why = run.metrics[2].failure.as_deref().unwrap();
    assert!(
        why.contains("has no $.latency.p50: $.latency has no key 'p50' (it has p99)"),
        "{why}"
    );
    // No stream is captured for a JSON metric: the command keeps the terminal.
    assert!(run.outputs.is_empty());
    // The same file left from that run does not count for the next one.
    let file2 = dir.path().join("j2.framelab");
    let out = run_shell(
        &file2,
        &["--metric", &format!("p99[ms]:lower=json:{r}:$.latency.p99")],
        "true",
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stdout(&out).contains("was not written during this run"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn output_is_kept_only_when_asked_and_capped_to_the_last_mib() {
    let dir = tempfile::tempdir().unwrap();
    // Without --metric or --keep-output nothing is captured.
    let plain = dir.path().join("plain.framelab");
    let out = run_shell(&plain, &[], "echo hello");
    assert!(out.status.success());
    assert_eq!(stdout(&out).lines().next(), Some("hello"));
    assert!(load(&plain).outputs.is_empty());
    // 3 MiB and a last line: the last 1 MiB is kept, the rest counted as dropped.
    let kept = dir.path().join("kept.framelab");
    let out = run_shell(
        &kept,
        &["--keep-output"],
        "head -c 3145728 /dev/zero | tr '\\0' 'a'; echo; echo LAST",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        out.stdout.len() > 3 << 20,
        "everything reached framelab's stdout"
    );
    let run = load(&kept);
    let o = run.outputs.iter().find(|o| o.stream == "stdout").unwrap();
    assert_eq!(o.bytes, (3 << 20) + 6);
    assert_eq!(o.content.len(), 1 << 20);
    assert_eq!(o.dropped, o.bytes - (1 << 20));
    assert!(o.content.ends_with(b"a\nLAST\n"));
    assert!(
        stdout(&out).contains("stdout 1.0 MiB kept of 3.0 MiB (the first 2.0 MiB dropped)"),
        "{}",
        stdout(&out)
            .lines()
            .filter(|l| l.contains("output"))
            .collect::<String>()
    );
}

#[test]
fn shell_runs_pipes_and_without_it_no_shell_runs() {
    let dir = tempfile::tempdir().unwrap();
    let with = run_shell(&dir.path().join("s.framelab"), &[], "echo hi | cat");
    assert_eq!(stdout(&with).lines().next(), Some("hi"));
    let without = framelab()
        .args(["run", "-o"])
        .arg(dir.path().join("n.framelab"))
        .args(["--", "echo", "hi", "|", "cat"])
        .output()
        .unwrap();
    assert_eq!(stdout(&without).lines().next(), Some("hi | cat"));
}

fn refused(args: &[&str], needle: &str) {
    let out = framelab().args(args).output().unwrap();
    assert_ne!(out.status.code(), Some(0), "{args:?}");
    let line = error_line(&out);
    assert!(
        line.contains(needle),
        "{args:?}: expected '{needle}' in: {line}"
    );
    assert!(!stderr(&out).contains("panicked"));
}

#[test]
fn bad_definitions_are_one_line_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.framelab");
    let f = file.to_str().unwrap();
    for (metric, needle) in [
        (
            r"req_s:higher=rate ([\d.]+",
            "does not compile (unclosed group)",
        ),
        (
            r"req_s:higher=Requests per second:\s+[\d.]+",
            "no capture group",
        ),
        (
            r"fps:higher=fps=([\d.]+)",
            "'fps' is a built-in metric's name",
        ),
        (r"cpu_per_frame:lower=x(\d)", "built-in"),
        (r"req_s:up=x(\d)", "unknown word 'up'"),
        ("p99:lower=json:r.json:latency.p99", "json:FILE:$.path"),
    ] {
        refused(&["run", "--metric", metric, "-o", f, "--", "true"], needle);
        refused(
            &[
                "bench", "-n", "2", "--metric", metric, "-o", f, "--", "true",
            ],
            needle,
        );
    }
    // Bench judges a metric: it must say which way is better.
    refused(
        &[
            "bench",
            "-n",
            "2",
            "--metric",
            r"req_s=rps ([\d.]+)",
            "-o",
            f,
            "--",
            "true",
        ],
        r"--metric 'req_s:higher=rps ([\d.]+)' (or :lower)",
    );
    // --metric on bench defines; choosing what to show is --show.
    refused(
        &["bench", "-n", "2", "--metric", "fps", "-o", f, "--", "true"],
        "use --show fps",
    );
    assert!(!file.exists(), "nothing was recorded");
}

/// Three builds whose printed rate steps up by +20% and +25%: the step table says so, in
/// every format, and the exports are written while the text goes to the terminal.
#[test]
fn a_printed_rate_drives_the_step_table_and_the_exports() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("steps.framelab");
    let (jf, cf, mf) = (
        dir.path().join("c.json"),
        dir.path().join("c.csv"),
        dir.path().join("c.md"),
    );
    // $$ differs run to run: a little noise around each rate, +20% then +25%.
    let variant = |name: &str, rate: u32| format!("{name}=echo \"rate: {rate}.$(( $$ % 7 ))\"");
    let out = framelab()
        .args(["bench", "-n", "5", "--shell", "--seed", "1"])
        .args(["--metric", r"rate[req/s]:higher=rate: ([\d.]+)"])
        .args(["--variant", &variant("v1", 1000)])
        .args(["--variant", &variant("v2", 1200)])
        .args(["--variant", &variant("v3", 1500)])
        .args(["--show", "rate,wall"])
        .arg("--export-json")
        .arg(&jf)
        .arg("--export-csv")
        .arg(&cf)
        .arg("--export-markdown")
        .arg(&mf)
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("step by step: rate (req/s)"), "{text}");
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&jf).unwrap()).unwrap();
    assert_eq!(c["schema"], "framelab.compare/3");
    assert_eq!(c["headline_metric"], "rate");
    let rate = row(&c, 0, "rate");
    assert_eq!(rate["unit"], "req/s");
    assert_eq!(rate["direction"], "higher_is_better");
    assert_eq!(rate["verdict"], "improved", "{rate}");
    let steps = c["groups"][0]["steps"].as_array().unwrap();
    let step = |i: usize, k: &str| steps[i][k]["ratio"].as_f64().unwrap();
    assert!((step(1, "step") - 1.2).abs() < 0.01, "{steps:?}");
    assert!((step(2, "step") - 1.25).abs() < 0.01, "{steps:?}");
    assert!((step(2, "cumulative") - 1.5).abs() < 0.01, "{steps:?}");
    let csv = std::fs::read_to_string(&cf).unwrap();
    assert!(
        csv.lines()
            .any(|l| l.starts_with(",v2,v1,rate,req/s,higher_is_better")),
        "{csv}"
    );
    let md = std::fs::read_to_string(&mf).unwrap();
    assert!(md.contains("#### step by step: rate (req/s)"), "{md}");
    assert!(md.contains("| rate | req/s |"), "{md}");
    assert!(stderr(&out).contains(&format!("wrote the comparison to {}", jf.display())));
}

/// A run whose metric is missing is excluded from that metric only, and listed with why.
#[test]
fn a_run_that_did_not_print_the_metric_is_excluded_from_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gap.framelab");
    let count = dir.path().join("count");
    // The third run of b prints nothing the regex takes.
    let b = format!(
        "b=n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}; \
         if [ $n -eq 3 ]; then echo oops; else echo 'rate: 200'; fi",
        c = count.display()
    );
    // The commands' own output goes to framelab's stdout too: the JSON goes to a file.
    let exported = dir.path().join("gap.json");
    let out = framelab()
        .args(["bench", "-n", "4", "--shell"])
        .args(["--metric", r"rate:higher=rate: ([\d.]+)"])
        .args(["--variant", "a=echo 'rate: 100'", "--variant", &b])
        .arg("--export-json")
        .arg(&exported)
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("a --metric could not be read in 1 run"));
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&exported).unwrap()).unwrap();
    let rate = row(&c, 0, "rate");
    assert_eq!(rate["variant"]["runs"], 3);
    assert_eq!(rate["baseline"]["runs"], 4);
    // Other metrics of that run still count.
    assert_eq!(row(&c, 0, "wall")["variant"]["runs"], 4);
    let excluded = c["excluded"].as_array().unwrap();
    assert_eq!(excluded.len(), 1, "{excluded:?}");
    assert_eq!(excluded[0]["metric"], "rate");
    assert!(excluded[0]["why"].as_str().unwrap().contains("no line"));
    let text = framelab().args(["compare"]).arg(&file).output().unwrap();
    assert!(
        stdout(&text).contains("(b) from rate: rate: no line"),
        "{}",
        stdout(&text)
    );
}

/// Warmup runs happen first, in rounds, are recorded as warmup and never compared; a
/// resume does them again. --setup runs once per variant before, --cleanup after, also
/// when the bench stops early.
#[test]
fn warmup_runs_setup_and_cleanup_around_a_resumed_bench() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.framelab");
    let log = dir.path().join("log");
    let count = dir.path().join("count");
    let l = log.display();
    // --prepare interrupts framelab (its parent) on its 5th call: 2 warmups + 2 measured
    // runs, then the stop.
    let prepare = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}; \
         [ $n -ne 5 ] || {{ kill -INT $PPID; exit 1; }}",
        c = count.display()
    );
    let bench = |extra: &[&str]| {
        framelab()
            .args(["bench", "-n", "2", "--shell", "--warmup-runs", "1"])
            .args(["--prepare", &prepare])
            .args(["--setup", &format!("echo setup $FRAMELAB_VARIANT >> {l}")])
            .args([
                "--cleanup",
                &format!("echo cleanup $FRAMELAB_VARIANT >> {l}"),
            ])
            .args(["--metric", r"rate:higher=rate: ([\d.]+)"])
            .args(["--variant", &format!("a=echo run a >> {l}; echo 'rate: 1'")])
            .args(["--variant", &format!("b=echo run b >> {l}; echo 'rate: 2'")])
            .args(extra)
            .arg("-o")
            .arg(&file)
            .output()
            .unwrap()
    };
    let first = bench(&[]);
    assert_eq!(first.status.code(), Some(130), "{}", stderr(&first));
    assert!(
        stderr(&first).contains("stopped after"),
        "{}",
        stderr(&first)
    );
    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        lines, "setup a\nsetup b\nrun a\nrun b\nrun a\nrun b\ncleanup a\ncleanup b\n",
        "warmups (a, b), two measured runs, the stop, and the cleanup all the same"
    );
    let e = framelab::store::load_experiment(&file).unwrap().unwrap();
    let statuses: Vec<&str> = e.runs.iter().map(|r| r.status.name()).collect();
    assert_eq!(statuses.iter().filter(|s| **s == "warmup").count(), 2);
    assert_eq!(statuses.iter().filter(|s| **s == "ok").count(), 2);

    std::fs::write(&log, "").unwrap();
    let resumed = bench(&["--resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "setup a\nsetup b\nrun a\nrun b\nrun a\nrun b\ncleanup a\ncleanup b\n",
        "set up again, warmed up again, the two runs left, cleaned up"
    );
    let text = stdout(&resumed);
    assert!(text.contains("measured runs: a 2, b 2"), "{text}");
    assert!(text.contains("4 warmup runs in"), "{text}");
    assert!(stderr(&resumed).contains("2 warmup runs done first"));
}

#[test]
fn a_sweep_of_one_variant_compares_each_value_with_the_first_or_the_one_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.framelab");
    let out = framelab()
        .args(["bench", "-n", "5", "--shell"])
        .args(["--metric", r"rate[f/s]:higher=rate: ([\d.]+)"])
        .args(["--param", "res=480,720,1080"])
        .args(["--show", "rate,wall"])
        .arg("-o")
        .arg(&file)
        .args(["--", "echo rate: $((100000 / {res}))"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let again = framelab()
        .args(["compare", "--format", "json", "--show", "rate,wall"])
        .arg(&file)
        .output()
        .unwrap();
    let c = json(&again);
    assert_eq!(c["baseline_params"], "res=480");
    let groups = c["groups"].as_array().unwrap();
    assert!(groups[0]["comparisons"].as_array().unwrap().is_empty());
    let cmp = &groups[2]["comparisons"][0];
    assert_eq!(cmp["baseline_params"], "res=480");
    let rate = cmp["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "rate")
        .unwrap();
    assert_eq!(rate["verdict"], "regressed", "{rate}");
    // Two sweep tables, the changes with their intervals.
    let sweeps = c["sweeps"].as_array().unwrap();
    assert_eq!(sweeps.len(), 2);
    assert!(sweeps[0]["rows"][0]["changes"][0].is_null());
    let change = &sweeps[0]["rows"][2]["changes"][0];
    assert!(
        (change["ratio"].as_f64().unwrap() - 92.0 / 208.0).abs() < 0.01,
        "{change}"
    );
    assert!(change["low"].is_number() && change["high"].is_number());
    // Against 720 instead; the text says so.
    let text = framelab()
        .args(["compare", "--baseline-value", "720"])
        .arg(&file)
        .output()
        .unwrap();
    let t = stdout(&text);
    assert!(
        t.contains("sweep: rate (f/s) per parameter value, against res=720"),
        "{t}"
    );
    let baseline_row = t
        .lines()
        .find(|l| l.starts_with("  res=720 ") && l.contains(" 138 "))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(baseline_row.ends_with("baseline"), "{baseline_row}");
    refusal_is_one_line(
        &["compare", "--baseline-value", "999"],
        &file,
        "its values are 480, 720, 1080",
    );
}

fn refusal_is_one_line(args: &[&str], file: &Path, needle: &str) {
    let out = framelab().args(args).arg(file).output().unwrap();
    // A value or name that matches nothing given is a usage error.
    assert_eq!(out.status.code(), Some(2));
    assert!(error_line(&out).contains(needle), "{}", stderr(&out));
}

/// compare's old `--metric` still selects; a definition there is explained.
#[test]
fn compare_reads_metric_as_show_and_explains_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("alias.framelab");
    let out = framelab()
        .args(["bench", "-n", "2", "--shell"])
        .args(["--variant", "a=true", "--variant", "b=true"])
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let old = framelab()
        .args(["compare", "--format", "json", "--metric", "wall"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(json(&old)["metrics"].as_array().unwrap().len(), 1);
    refusal_is_one_line(
        &["compare", "--metric", r"x:higher=x(\d)"],
        &file,
        "define one when running",
    );
}

/// `--frames N` divides by the whole wall time: the comparison says so.
#[test]
fn a_rate_from_frames_is_said_to_include_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("frames.framelab");
    let out = framelab()
        .args(["bench", "-n", "2", "--frames", "100"])
        .args(["--variant", "a=true", "--variant", "b=true"])
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("fps from --frames: includes start-up and shutdown"),
        "{}",
        stdout(&out)
    );
}

/// A daemon that left the command's process group and keeps its stdout open does not hold
/// the run: the run group stops it with the rest of the run (nothing outlives a run), so the
/// stream closes and the metric is read. Without a cgroup (the process-tree fallback) the
/// daemon is still stopped, and a note names it as having left the command's groups.
#[test]
fn a_stream_held_open_by_a_daemon_ends_with_the_run() {
    for mechanism in ["auto", "tree"] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("daemon.framelab");
        let ready = dir.path().join("ready");
        let pid_file = dir.path().join("daemon.pid");
        // The command waits until the daemon is in a session of its own.
        let script = format!(
            "setsid sh -c 'echo $$ > {p}; touch {r}; exec sleep 30' & until [ -e {r} ]; do sleep 0.01; done; echo n=7",
            p = pid_file.display(),
            r = ready.display()
        );
        let out = framelab()
            .args([
                "run",
                "--shell",
                "--metric",
                r"n:higher:stdout=n=(\d+)",
                "-o",
            ])
            .arg(&file)
            .arg("--")
            .arg(&script)
            .env("FRAMELAB_RUN_GROUP", mechanism)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{mechanism}: {}", stderr(&out));
        let run = load(&file);
        assert_eq!(run.metrics[0].value, Some(7.0), "{mechanism}");
        let daemon: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // SAFETY: signal 0 only asks whether the pid exists.
        let alive = unsafe { libc::kill(daemon, 0) } == 0;
        assert!(!alive, "{mechanism}: the daemon {daemon} outlived the run");
        if mechanism == "tree" {
            assert!(
                stdout(&out).contains("(sleep) was still running once the command"),
                "{}",
                stdout(&out)
            );
        }
    }
}
