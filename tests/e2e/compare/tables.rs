//! The tables of the measurement write-ups with no hand work: one run a side compared side
//! by side, the absolute change beside every % change, and means, counts, sums and any
//! percentile of a stage or wait as metrics (issue 27, points 1–3).

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// `framelab demo` for a short run at `fps`, into `file` (a real pipeline of five stages).
fn demo(file: &Path, fps: &str, depth: &str) {
    let out = framelab()
        .args(["demo", "--fps", fps, "--depth", depth])
        .args(["--duration", "2s", "--warmup", "500ms", "-o"])
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// `framelab run -o FILE -- testprog work FRAMES US`, `runs` times.
fn work_runs(file: &Path, frames: &str, us: &str, runs: usize) {
    for _ in 0..runs {
        let out = framelab()
            .args(["run", "-o"])
            .arg(file)
            .arg("--")
            .arg(example("testprog"))
            .args(["work", frames, us])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

fn compare(args: &[&str]) -> std::process::Output {
    let out = run(&[&["compare"], args].concat());
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    out
}

fn compare_json(args: &[&str]) -> Value {
    let out = compare(&[args, &["--format", "json"]].concat());
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// The row of `metric` in the first comparison of the first group.
fn row<'a>(c: &'a Value, metric: &str) -> &'a Value {
    c["groups"][0]["comparisons"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no row {metric}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The text table's header line: the line after `title` (the comparison's heading).
fn header_after<'a>(text: &'a str, title: &str) -> &'a str {
    let mut lines = text.lines();
    lines.find(|l| l.trim() == title).expect(title);
    lines.next().unwrap()
}

#[test]
fn two_single_demo_runs_compare_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (
        dir.path().join("before.framelab"),
        dir.path().join("after.framelab"),
    );
    demo(&before, "60", "1");
    demo(&after, "120", "2");
    let (b, a) = (before.to_str().unwrap(), after.to_str().unwrap());

    // Files, and --variant NAME=FILE: exit 0, every metric with both values.
    for (args, title) in [
        (vec![b, a], "after vs before"),
        (
            vec![
                "--variant",
                &format!("old={b}"),
                "--variant",
                &format!("new={a}"),
            ],
            "new vs old",
        ),
    ] {
        let args: Vec<&str> = args.iter().map(|s| s.as_ref()).collect();
        let text = stdout(&compare(&args));
        let header = header_after(&text, title);
        let columns: Vec<&str> = header
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(columns[0], "metric", "{text}");
        assert_eq!(&columns[4..], ["difference", "change"], "{text}");
        assert!(
            !text.contains("p (adj.)") && !text.contains("verdict  "),
            "{text}"
        );
        // Nothing is judged, so no metric is tested first (gatekeeping has nothing to do).
        assert!(!text.contains("primary metric"), "{text}");
        // Said once.
        assert_eq!(text.matches("a single measured run").count(), 1, "{text}");
        assert!(text.contains("no interval, p-value or verdict"), "{text}");
        for stage in [
            "capture p50",
            "encode p99",
            "total p99",
            "fps",
            "CPU per frame",
        ] {
            assert!(text.contains(&format!("\n  {stage} ")), "{stage}: {text}");
        }
    }

    // The values are each run's own, as its report says; the difference and change follow.
    let c = compare_json(&[b, a]);
    let fps = row(&c, "fps");
    let observed = |p: &PathBuf| report_json(p)["observed_fps"].as_f64().unwrap();
    let (fb, fa) = (observed(&before), observed(&after));
    assert!(close(fps["baseline"]["median"].as_f64().unwrap(), fb));
    assert!(close(fps["variant"]["median"].as_f64().unwrap(), fa));
    assert!(close(fps["difference"].as_f64().unwrap(), fa - fb));
    assert!(close(fps["ratio"]["ratio"].as_f64().unwrap(), fa / fb));
    assert!(fps["ratio"]["low"].is_null() && fps["p_holm"].is_null());
    assert_eq!(fps["reason"], "one run a side: no interval or verdict");
    assert_eq!(c["groups"][0]["comparisons"][0]["one_run_a_side"], true);
    // --fail-on-regression has nothing to fail on.
    compare(&[b, a, "--fail-on-regression"]);

    // Three single runs: the step table has differences and changes, no intervals.
    let third = dir.path().join("third.framelab");
    demo(&third, "90", "1");
    let text = stdout(&compare(&[b, a, third.to_str().unwrap(), "--show", "fps"]));
    let header = header_after(&text, "step by step: fps (fps)");
    assert!(
        header.contains("step difference") && header.contains("difference from the baseline"),
        "{text}"
    );
    let steps = &text[text.find("step by step").unwrap()..];
    let third_row = steps
        .lines()
        .find(|l| l.trim_start().starts_with("third "))
        .unwrap();
    assert!(!third_row.contains('['), "no interval: {third_row}");
}

#[test]
fn absolute_changes_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = ["a", "b", "c"]
        .iter()
        .map(|n| dir.path().join(format!("{n}.framelab")))
        .collect();
    for (file, us) in files.iter().zip(["100", "300", "600"]) {
        work_runs(file, "30", us, 2);
    }
    let names: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
    let show = ["--show", "work.p50,total.p50,fps"];
    let args = [&names[..], &show[..]].concat();

    let c = compare_json(&args);
    for variant in [0, 1] {
        let cmp = &c["groups"][0]["comparisons"][variant];
        for r in cmp["rows"].as_array().unwrap() {
            let d = r["variant"]["median"].as_f64().unwrap()
                - r["baseline"]["median"].as_f64().unwrap();
            assert!(close(r["difference"].as_f64().unwrap(), d), "{r}");
        }
    }
    // Steps: each against the one before and against the baseline.
    let steps = c["groups"][0]["steps"].as_array().unwrap();
    let median = |k: usize| steps[k]["median"].as_f64().unwrap();
    assert!(close(
        steps[2]["step_difference"].as_f64().unwrap(),
        median(2) - median(1)
    ));
    assert!(close(
        steps[2]["cumulative_difference"].as_f64().unwrap(),
        median(2) - median(0)
    ));
    assert!(steps[0].get("step_difference").is_none());
    // work p50 grows by about 200 and 300 µs: the difference is in µs.
    let work = row(&c, "work.p50");
    assert_eq!(work["unit"], "microseconds");
    let d = work["difference"].as_f64().unwrap();
    assert!(d > 100.0 && d < 400.0, "{d}");

    // Text and Markdown: a difference column in the comparison and the step tables.
    let text = stdout(&compare(&args));
    let header = header_after(&text, "b vs a");
    let at = |word: &str| {
        header
            .find(word)
            .unwrap_or_else(|| panic!("{word}: {text}"))
    };
    assert!(
        at("b") < at("difference") && at("difference") < at("change [95% interval]"),
        "{text}"
    );
    assert!(text.contains("step difference"), "{text}");
    let md = stdout(&compare(&[&args[..], &["--format", "markdown"]].concat()));
    assert!(
        md.contains("| difference | change [95% interval] |"),
        "{md}"
    );
    // The text's difference of work p50 is the JSON's, in µs.
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("work p50"))
        .unwrap();
    assert!(line.contains(&format!("+{d:.1}")), "{line} vs {d}");

    // CSV: a difference column, the JSON's number.
    let csv = stdout(&compare(&[&args[..], &["--format", "csv"]].concat()));
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "difference").unwrap();
    let metric_at = header.iter().position(|h| *h == "metric").unwrap();
    let line = csv
        .lines()
        .find(|l| l.split(',').nth(metric_at) == Some("work.p50"))
        .unwrap();
    // The last column (a reason before it may hold quoted commas).
    assert_eq!(at, header.len() - 1);
    let value: f64 = line.rsplit(',').next().unwrap().parse().unwrap();
    assert!(close(value, d));

    // HTML: the verdict table carries it with its unit.
    let page = dir.path().join("page.html");
    compare(
        &[
            &args[..],
            &["--format", "html", "-o", page.to_str().unwrap()],
        ]
        .concat(),
    );
    let data = page_data(&page);
    let verdict = data["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["metric"] == "work p50")
        .unwrap();
    assert!(
        verdict["difference"].as_str().unwrap().ends_with(" µs"),
        "{verdict}"
    );
}

#[test]
fn a_sweep_of_one_command_is_named_by_its_parameter_and_shows_differences() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.framelab");
    let out = framelab()
        .args([
            "bench",
            "-n",
            "2",
            "--param",
            "us=100,400",
            "--show",
            "work.p50",
            "-o",
        ])
        .arg(&file)
        .arg("--")
        .arg(example("testprog"))
        .args(["work", "20", "{us}"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let c = compare_json(&[file.to_str().unwrap(), "--show", "work.p50"]);
    // Named by the parameter, not by the program.
    assert_eq!(c["variants"], serde_json::json!(["us"]));
    let change = &c["sweeps"][0]["rows"][1]["changes"][0];
    let medians = &c["sweeps"][0]["rows"];
    let d = medians[1]["medians"][0].as_f64().unwrap() - medians[0]["medians"][0].as_f64().unwrap();
    assert!(close(change["difference"].as_f64().unwrap(), d), "{change}");
    let text = stdout(&compare(&[file.to_str().unwrap(), "--show", "work.p50"]));
    assert!(text.contains("difference vs us=100"), "{text}");
}

#[test]
fn means_counts_sums_and_any_percentile_are_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.framelab"), dir.path().join("b.framelab"));
    work_runs(&a, "30", "100", 1);
    work_runs(&b, "40", "200", 1);
    let (sa, sb) = (a.to_str().unwrap(), b.to_str().unwrap());
    // Either arrow, wherever a .p50 is taken.
    let show = "work.mean,work.count,work.sum,work.p90,total.mean,work->send.mean,work→send.count,work→send.p99.9";
    let c = compare_json(&[sa, sb, "--show", show]);
    let keys: Vec<&str> = c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "work.mean",
            "work.count",
            "work.sum",
            "work.p90",
            "total.mean",
            "work->send.mean",
            "work->send.count",
            "work->send.p99.9"
        ]
    );
    // Each run's figures as its own report gives them.
    for (side, file) in [("baseline", &a), ("variant", &b)] {
        let report = report_json(file);
        let stage = &report["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "work")
            .unwrap()["dist"];
        let wait = &report["pipeline"]["waits"][0]["dist"];
        let value = |metric: &str| row(&c, metric)[side]["median"].as_f64().unwrap();
        let count = stage["count"].as_f64().unwrap();
        let mean_us = stage["mean_ns"].as_f64().unwrap() / 1e3;
        assert!(close(value("work.count"), count));
        assert!(
            close(value("work.mean"), mean_us),
            "{} vs {mean_us}",
            value("work.mean")
        );
        assert!((value("work.sum") - mean_us * count / 1e6).abs() < 1e-9);
        assert!(close(
            value("work->send.mean"),
            wait["mean_ns"].as_f64().unwrap() / 1e3
        ));
        assert!(close(
            value("work->send.count"),
            wait["count"].as_f64().unwrap()
        ));
        assert!(close(
            value("total.mean"),
            report["total"]["mean_ns"].as_f64().unwrap() / 1e3
        ));
    }
    let units: Vec<&str> = ["work.mean", "work.count", "work.sum"]
        .iter()
        .map(|k| row(&c, k)["unit"].as_str().unwrap())
        .collect();
    assert_eq!(units, ["microseconds", "spans", "seconds"]);
    // A statistic that is none is refused with the list, as an unknown name is.
    let out = run(&["compare", sa, sb, "--show", "work.median"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        error_line(&out).contains(".mean, .count, .sum and any .pNN"),
        "{}",
        stderr(&out)
    );
}
