//! `framelab bench` end to end with the test program: a real difference found, a stopped
//! experiment resumed, a failed run kept and excluded, whole-process benchmarks, sweeps.

use crate::common;

use common::json::{row, stdout_json as json};
use common::*;
use std::process::Output;

fn testprog(args: &str) -> String {
    format!("{} {args}", example("testprog"))
}

/// `framelab compare ARGS FILE`: what it printed.
fn compare(file: &std::path::Path, args: &[&str]) -> Output {
    framelab()
        .arg("compare")
        .args(args)
        .arg(file)
        .output()
        .unwrap()
}

/// `framelab bench ARGS --variant NAME=COMMAND … -o FILE`: what it printed.
fn bench(args: &[&str], variants: &[(&str, String)], file: &std::path::Path) -> Output {
    let mut command = framelab();
    command.arg("bench").args(args);
    for (name, program) in variants {
        command.arg("--variant").arg(format!("{name}={program}"));
    }
    command.arg("-o").arg(file).output().unwrap()
}

#[test]
fn three_times_the_work_per_frame_is_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("work.framelab");
    let out = bench(
        &[
            "-n",
            "6",
            "--seed",
            "7",
            "--format",
            "json",
            "--show",
            "work.p50,total.p50,fps",
        ],
        &[
            ("light", testprog("work 150 200")),
            ("heavy", testprog("work 150 600")),
        ],
        &file,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let c = json(&out);
    assert_eq!(c["baseline"], "light");
    assert_eq!(c["runs"]["light"], 6);
    assert_eq!(c["runs"]["heavy"], 6);
    let work = row(&c, "work.p50");
    assert_eq!(work["verdict"], "regressed", "{work}");
    let ratio = work["ratio"]["ratio"].as_f64().unwrap();
    assert!((2.5..3.5).contains(&ratio), "{ratio}");
    assert!(work["ratio"]["low"].as_f64().unwrap() > 1.02);
    // Six runs a side: exact, with ties (two runs' p50 can tie: busy-waited spans end on
    // the same clock steps) or without.
    assert_eq!(work["p_method"], "exact", "{work}");
    // fps is higher-is-better: fewer frames per second is a regression, more an
    // improvement. It is the whole run's rate, wall-clock bound: on a loaded machine the
    // light runs' 30 ms of work can be stretched past the heavy runs' (a test run met a
    // median of 1440 against 1586 fps), so only the direction's use is asserted.
    let fps = row(&c, "fps");
    assert_eq!(fps["direction"], "higher_is_better", "{fps}");
    let fps_ratio = fps["ratio"]["ratio"].as_f64().unwrap();
    match fps["verdict"].as_str().unwrap() {
        "regressed" => assert!(fps_ratio < 1.0, "{fps}"),
        "improved" => assert!(fps_ratio > 1.0, "{fps}"),
        _ => {}
    }
    let headline = c["groups"][0]["comparisons"][0]["headline"]
        .as_str()
        .unwrap();
    // The headline leads with the primary metric, the first --show.
    assert!(headline.starts_with("heavy: work p50 +"), "{headline}");
    for metric in ["work p50", "total p50"] {
        assert!(headline.contains(metric), "{headline}");
    }
    // The headline names the regressed metrics: fps among them when it was judged so.
    assert_eq!(
        headline.contains("fps"),
        fps["verdict"] == "regressed",
        "{headline}"
    );
    assert!(!headline.contains("regressed: none"), "{headline}");

    // The same file through compare: the same numbers (seeded), and CI's exit code.
    let again = compare(
        &file,
        &["--format", "json", "--show", "work.p50,total.p50,fps"],
    );
    assert_eq!(json(&again)["groups"], c["groups"]);
    let ci = compare(&file, &["--fail-on-regression", "--show", "work.p50"]);
    assert_eq!(ci.status.code(), Some(1), "{}", stdout(&ci));
    assert!(stdout(&ci).contains("regressed"));
    // Each run carries a fingerprint and its place in the experiment.
    let experiment = framelab::store::load_experiment(&file).unwrap().unwrap();
    assert_eq!(experiment.runs.len(), 12);
    let variants: Vec<&str> = experiment.runs.iter().map(|r| r.variant.as_str()).collect();
    assert_eq!(&variants[..4], ["light", "heavy", "light", "heavy"]);
    let prints = framelab::store::load_fingerprints(&file).unwrap();
    assert_eq!(prints.len(), 12);
    assert!(prints
        .values()
        .all(|f| !f.kernel.is_empty() && f.load_avg_1m.is_some()));
}

#[test]
fn a_stopped_experiment_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("resume.framelab");
    let count = dir.path().join("count");
    // The prepare step interrupts framelab (its parent) on its third call, as Ctrl-C
    // would: the bench stops after two runs.
    let prepare = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}; \
         [ $n -ne 3 ] || {{ kill -INT $PPID; exit 1; }}",
        c = count.display()
    );
    let stopping = |extra: &[&str]| {
        let args = ["-n", "2", "--prepare", &prepare, "--show", "work.p50"];
        let variants = [
            ("a", testprog("work 50 100")),
            ("b", testprog("work 50 150")),
        ];
        bench(&[&args[..], extra].concat(), &variants, &file)
    };
    let first = stopping(&[]);
    assert_eq!(first.status.code(), Some(130), "{}", stderr(&first));
    assert!(
        stderr(&first).contains("stopped after 2 of 4 runs")
            && stderr(&first).contains("framelab bench --resume -o"),
        "{}",
        stderr(&first)
    );
    let done = framelab::store::load_experiment(&file).unwrap().unwrap();
    assert_eq!(done.runs.len(), 2, "the finished runs are kept");

    // Without --resume the file is not overwritten.
    let refused = stopping(&[]);
    assert!(error_line(&refused).contains("--resume"));
    let resumed = stopping(&["--resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let all = framelab::store::load_experiment(&file).unwrap().unwrap();
    let slots: Vec<u32> = all.runs.iter().map(|r| r.slot).collect();
    assert_eq!(slots, [0, 1, 2, 3]);
    assert!(stdout(&resumed).contains("b vs a"));
    // Resuming with other options is refused, naming what differs.
    let other = bench(
        &["-n", "3", "--resume"],
        &[("a", testprog("work 50 100"))],
        &file,
    );
    assert!(error_line(&other).contains("differ"), "{}", stderr(&other));
}

#[test]
fn a_failed_run_is_kept_marked_excluded_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("flaky.framelab");
    let count = dir.path().join("count");
    // Fails on its second run only.
    let flaky = format!(
        "sh -c 'n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; [ $n -eq 1 ] && exit 1; exec {p} work 50 100'",
        c = count.display(),
        p = example("testprog")
    );
    let out = bench(
        &["-n", "3", "--show", "work.p50", "--format", "json"],
        &[("steady", testprog("work 50 100")), ("flaky", flaky)],
        &file,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("1 run failed"), "{}", stderr(&out));
    let c = json(&out);
    assert_eq!(c["runs"]["flaky"], 2);
    assert_eq!(c["runs"]["steady"], 3);
    let excluded = c["excluded"].as_array().unwrap();
    assert_eq!(excluded.len(), 1);
    assert_eq!(excluded[0]["variant"], "flaky");
    assert!(excluded[0]["why"]
        .as_str()
        .unwrap()
        .contains("exited with status 1"));
    let text = compare(&file, &[]);
    assert!(
        stdout(&text).contains("excluded from the statistics"),
        "{}",
        stdout(&text)
    );
    let experiment = framelab::store::load_experiment(&file).unwrap().unwrap();
    let failed: Vec<_> = experiment
        .runs
        .iter()
        .filter(|r| r.status == framelab::experiment::RunStatus::Failed)
        .collect();
    assert_eq!(failed.len(), 1);
}

#[test]
fn whole_process_benchmarks_and_a_sweep_with_three_variants() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cpu.framelab");
    let out = bench(
        &[
            "-n", "2", "--frames", "100", "--order", "shuffled", "--seed", "3", "--param",
            "ms=40,80", "--format", "json",
        ],
        &[
            ("one", testprog("cpu {ms}")),
            ("two", testprog("cpu 60")),
            ("three", testprog("cpu 100")),
        ],
        &file,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let c = json(&out);
    let keys: Vec<&str> = c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["key"].as_str().unwrap())
        .collect();
    for key in ["fps", "cpu_per_frame", "load", "peak_rss", "wall", "cpu"] {
        assert!(keys.contains(&key), "{key} in {keys:?}");
    }
    assert!(!keys.iter().any(|k| k.ends_with(".p50")), "{keys:?}");
    // Two groups, ms=20 and ms=60 in the order given; steps for three variants.
    let groups = c["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0]["label"], "ms=40");
    assert_eq!(groups[1]["label"], "ms=80");
    let steps = groups[0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    assert!(steps[0]["step"].is_null() && !steps[2]["cumulative"].is_null());
    // 40 ms of CPU in the first group's baseline (the window may miss a clock tick of it).
    let cpu = row(&c, "cpu");
    let base_cpu = cpu["baseline"]["median"].as_f64().unwrap();
    assert!((0.025..0.06).contains(&base_cpu), "{base_cpu}");
    // Two runs a side: never a verdict, and it says why.
    assert!(
        cpu["reason"].as_str().unwrap().contains("2 runs on a side"),
        "{cpu}"
    );
    assert_eq!(
        c["sweeps"].as_array().unwrap().len(),
        1,
        "the headline only"
    );
    let sweep = &c["sweeps"][0];
    assert_eq!(sweep["metric"], "fps");
    assert_eq!(sweep["rows"].as_array().unwrap().len(), 2);
    assert_eq!(sweep["variants"][0], "one");
    let text = compare(&file, &[]);
    let t = stdout(&text);
    assert!(t.contains("sweep: fps"), "{t}");
    assert!(t.contains("step by step [ms=40]"), "{t}");
    let md = compare(&file, &["--format", "markdown"]);
    assert!(stdout(&md).contains("| metric | unit |"), "{}", stdout(&md));
    let csv = compare(&file, &["--format", "csv"]);
    let csv = stdout(&csv);
    assert!(csv.starts_with("params,variant,baseline,metric"));
    // 2 groups × 2 comparisons × 6 metrics, plus the header.
    assert_eq!(csv.lines().count(), 1 + 2 * 2 * 6, "{csv}");
}

/// 4 vs 4 runs reach p = 2/70 ≈ 0.029: enough for the primary metric (the first `--show`,
/// tested alone at α), not for two metrics after it under Holm's correction (2 × 0.029).
/// The verdict, its reason and the note must agree on how many runs it takes.
#[test]
fn the_runs_a_verdict_needs_follow_the_metrics_judged() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("four.framelab");
    let out = bench(
        &[
            "-n",
            "4",
            "--seed",
            "3",
            "--format",
            "json",
            "--show",
            "work.p50,total.p50,fps",
        ],
        &[
            ("light", testprog("work 60 200")),
            ("heavy", testprog("work 60 600")),
        ],
        &file,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let c = json(&out);
    assert_eq!(c["primary_metric"], "work.p50");
    let work = row(&c, "work.p50");
    assert_eq!(work["verdict"], "regressed", "{work}");
    let total = row(&c, "total.p50");
    assert_eq!(total["verdict"], "inconclusive", "{total}");
    let reason = total["reason"].as_str().unwrap();
    assert!(
        reason.contains("2 metrics tested after") && reason.contains("at least 5 runs a side"),
        "{reason}"
    );
    assert_eq!(total["more_runs"], 1, "{total}");
    let notes = c["notes"].to_string();
    assert!(notes.contains("at least 5 runs a side"), "{notes}");

    // The same runs with total p50 first: tested alone, 4 a side suffice.
    let one = compare(&file, &["--format", "json", "--show", "total.p50,work.p50"]);
    assert_eq!(one.status.code(), Some(0), "{}", stderr(&one));
    assert_eq!(row(&json(&one), "total.p50")["verdict"], "regressed");
}

/// `report` on an experiment lists every run instead of silently showing the last one.
#[test]
fn report_of_an_experiment_lists_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ab.framelab");
    let out = bench(
        &["-n", "2", "--seed", "5"],
        &[
            ("a", testprog("work 20 100")),
            ("b", testprog("work 20 300")),
        ],
        &file,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let text = framelab().arg("report").arg(&file).output().unwrap();
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let text = stdout(&text);
    assert!(text.contains("4 runs"), "{text}");
    assert!(
        text.contains("--run-id 1") && text.contains("framelab compare"),
        "{text}"
    );
    for variant in [" a ", " b "] {
        assert_eq!(text.matches(variant).count(), 2, "{text}");
    }

    let listed = framelab()
        .args(["report", "--format", "json"])
        .arg(&file)
        .output()
        .unwrap();
    let listed = json(&listed);
    assert_eq!(listed["schema"], "framelab.runs/1");
    let runs = listed["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    assert!(
        runs.iter()
            .all(|r| r["status"] == "ok" && r["frames"] == 20),
        "{listed}"
    );
    let variants: Vec<&str> = runs
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(variants, ["a", "b", "a", "b"]);

    // One run in full, as the hint says.
    let one = framelab()
        .args(["report", "--format", "json", "--run-id", "2"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(json(&one)["run_id"], 2);
}

/// One command, no parameter: the runs are listed (with their figures) instead of a
/// comparison that refuses one variant, and the bench succeeds.
#[test]
fn a_bench_of_one_command_lists_its_runs_and_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("one.framelab");
    let out = framelab()
        .args(["bench", "-n", "3", "-o"])
        .arg(&file)
        .arg("--")
        .args(shlex::split(&testprog("work 40 200")).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = stdout(&out);
    assert_eq!(
        listing.lines().filter(|l| l.contains(" ok ")).count(),
        3,
        "{listing}"
    );
    assert!(!listing.contains("verdicts"), "{listing}");
    assert!(
        stderr(&out).contains("nothing to compare"),
        "{}",
        stderr(&out)
    );
    // As JSON too: the run listing's document.
    let out = framelab()
        .args(["bench", "-n", "2", "--format", "json", "-o"])
        .arg(dir.path().join("one-json.framelab"))
        .arg("--")
        .args(shlex::split(&testprog("work 40 200")).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json(&out);
    assert_eq!(doc["runs"].as_array().unwrap().len(), 2, "{doc}");
}

/// A `--prepare` that fails fails its run, with the last lines it wrote on stderr, and the
/// bench goes on: the other runs are measured and compared (it used to stop the bench).
#[test]
fn a_failing_prepare_fails_its_run_and_the_bench_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prepare.framelab");
    let count = dir.path().join("count");
    // Fails on its second call only.
    let prepare = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}; \
         [ $n -ne 2 ] || {{ echo 'checking the device' >&2; echo 'device not ready' >&2; exit 3; }}",
        c = count.display()
    );
    let out = bench(
        &[
            "-n",
            "3",
            "--format",
            "json",
            "--show",
            "work.p50",
            "--prepare",
            &prepare,
        ],
        &[
            ("a", testprog("work 20 100")),
            ("b", testprog("work 20 100")),
        ],
        &file,
    );
    // Exit 3, as for a run whose command failed; the comparison is still printed.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "b #1: --prepare failed (exit status: 3): checking the device / device not ready"
        ),
        "{err}"
    );
    assert!(err.contains("1 run failed"), "{err}");
    let c = json(&out);
    assert_eq!(c["runs"]["a"], 3);
    assert_eq!(c["runs"]["b"], 2);
    let e = framelab::store::load_experiment(&file).unwrap().unwrap();
    assert_eq!(e.runs.len(), 6, "every slot was run, the failed one kept");
    let failed: Vec<_> = e
        .runs
        .iter()
        .filter(|r| r.status.name() == "failed")
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].variant, "b");
    assert_eq!(
        failed[0].failure.as_deref(),
        Some("--prepare failed (exit status: 3): checking the device / device not ready")
    );
}

/// `--tag` is kept with every run of a bench, after the run's own `--param` values; a tag
/// with a parameter's key is refused before the first run.
#[test]
fn a_sweep_tags_each_run_with_its_parameter_values() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tags.framelab");
    let sweep = |extra: &[&str]| {
        framelab()
            .args([
                "bench",
                "-n",
                "2",
                "--param",
                "us=50,100",
                "--tag",
                "build=release",
            ])
            .args(extra)
            .arg("-o")
            .arg(&file)
            .arg("--")
            .args(testprog("work 10 {us}").split(' '))
            .output()
            .unwrap()
    };
    let clash = sweep(&["--tag", "us=7"]);
    assert_eq!(clash.status.code(), Some(2));
    assert!(
        error_line(&clash).contains("--tag us=7: us is a --param of this bench"),
        "{}",
        stderr(&clash)
    );
    assert!(!file.exists(), "refused before the file was made");
    let out = sweep(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let e = framelab::store::load_experiment(&file).unwrap().unwrap();
    assert_eq!(e.runs.len(), 4);
    for r in &e.runs {
        let run = framelab::store::load_run(&file, Some(r.run_id)).unwrap();
        let tags: Vec<(&str, &str)> = (run.meta.tags.iter())
            .map(|t| (t.key.as_str(), t.value.as_str()))
            .collect();
        assert_eq!(
            tags,
            [("us", r.params["us"].as_str()), ("build", "release")]
        );
    }
    // The report of a run shows them in its header.
    let report = framelab()
        .args(["report", "--run-id", &e.runs[1].run_id.to_string()])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        stdout(&report).contains("tags      us=50 · build=release")
            || stdout(&report).contains("tags      us=100 · build=release"),
        "{}",
        stdout(&report)
    );
}

#[test]
fn a_failing_setup_names_its_variant() {
    let dir = tempfile::tempdir().unwrap();
    let out = framelab()
        .args(["bench", "-n", "2", "--setup"])
        .arg(r#"[ "$FRAMELAB_VARIANT" = a ] || exit 4"#)
        .args(["--variant", "a=true", "--variant", "b=true", "-o"])
        .arg(dir.path().join("setup.framelab"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--setup of variant b failed (exit status: 4)"),
        "{err}"
    );
}
