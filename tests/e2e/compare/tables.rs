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

    // HTML: the comparison's table, as text shows it: the difference beside its unit.
    let page = dir.path().join("page.html");
    compare(
        &[
            &args[..],
            &["--format", "html", "-o", page.to_str().unwrap()],
        ]
        .concat(),
    );
    let data = page_data(&page);
    let table = (data["blocks"].as_array().unwrap().iter())
        .filter_map(|b| b.get("table"))
        .find(|t| {
            t["headers"]
                .as_array()
                .unwrap()
                .contains(&"difference".into())
        })
        .expect("the comparison's table");
    let column = |name: &str| {
        (table["headers"].as_array().unwrap().iter())
            .position(|h| h == name)
            .unwrap()
    };
    let work = (table["rows"].as_array().unwrap().iter())
        .find(|r| r[0] == "work p50")
        .unwrap();
    assert_eq!(work[column("unit")], "µs", "{work}");
    assert_eq!(
        work[column("difference")].as_str().unwrap(),
        format!("+{d:.1}"),
        "{work}"
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
    assert_eq!(out.status.code(), Some(2));
    assert!(
        error_line(&out).contains(".mean, .count, .sum and any .pNN"),
        "{}",
        stderr(&out)
    );
}

fn bpftrace_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

/// `framelab import FIXTURE -o FILE`.
fn import(fixture: &str, file: &Path) {
    let out = framelab()
        .arg("import")
        .arg(bpftrace_fixture(fixture))
        .arg("-o")
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Two real bpftrace prints (read(2) latency of dd before and after a change of block size),
/// each imported as one run: compared histogram by histogram, one run a side, exit 0, no
/// verdict. Counts are the texts' (read again here), shares and percentiles bounds that
/// hold both extreme data sets' values, changes the bounds' differences; maps only one side
/// holds are named in a note. A histogram import against a run of spans: one line, exit 1.
#[test]
fn two_bpftrace_prints_compare_histogram_by_histogram() {
    use common::bpftrace_text::{buckets_of, extreme_values, type7};
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (
        dir.path().join("before.framelab"),
        dir.path().join("after.framelab"),
    );
    import("bpftrace-0.17-read-before.txt", &before);
    import("bpftrace-0.17-read-after.txt", &after);
    let texts = [
        std::fs::read_to_string(bpftrace_fixture("bpftrace-0.17-read-before.txt")).unwrap(),
        std::fs::read_to_string(bpftrace_fixture("bpftrace-0.17-read-after.txt")).unwrap(),
    ];
    let (b, a) = (before.to_str().unwrap(), after.to_str().unwrap());
    let c = compare_json(&[b, a, "--below", "10us", "--above", "16384ns"]);
    let tables = c["histograms"].as_array().unwrap();
    let names: Vec<&str> = tables.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["@read_ns[832]", "@read_ns[4096]", "@read_us"],
        "{c}"
    );
    let notes = c["notes"].to_string();
    assert!(
        notes.contains("only before holds 1 histogram (not compared): '@read_ns[65536]'"),
        "{notes}"
    );
    assert!(
        notes.contains("only after holds 1 histogram (not compared): '@read_ns[1048576]'"),
        "{notes}"
    );
    assert!(notes.contains("a single measured run"), "{notes}");
    for t in tables {
        let name = t["name"].as_str().unwrap();
        let rows = t["rows"].as_array().unwrap();
        let row = |figure: &str| {
            rows.iter()
                .find(|r| r["figure"] == figure)
                .unwrap_or_else(|| panic!("{name}: no {figure}"))
        };
        let per_value = if name == "@read_us" { 1000.0 } else { 1.0 };
        let mut sides = Vec::new();
        for (text, side) in texts.iter().zip(["baseline", "variant"]) {
            let mut buckets = buckets_of(text, name);
            let total: u64 = buckets.iter().map(|b| b.count).sum();
            assert_eq!(
                row("count")[side]["lo"].as_f64(),
                Some(total as f64),
                "{name} {side}"
            );
            if buckets.last().unwrap().hi.is_none() {
                buckets.pop();
            }
            let (low, high) = (
                extreme_values(&buckets, true),
                extreme_values(&buckets, false),
            );
            let x = 10_000.0 / per_value;
            let below =
                |v: &[i64]| v.iter().filter(|&&v| (v as f64) < x).count() as f64 / total as f64;
            let share = &row("below 10us")[side];
            assert!(
                close(share["lo"].as_f64().unwrap(), below(&high)),
                "{name} {side}: {share}"
            );
            assert!(
                close(share["hi"].as_f64().unwrap(), below(&low)),
                "{name} {side}: {share}"
            );
            let p50 = &row("p50")[side];
            let q = (type7(&low, 0.5), type7(&high, 0.5));
            assert!(
                p50["lo"].as_f64().unwrap() <= q.0 && q.1 < p50["hi"].as_f64().unwrap(),
                "{name} {side}: {p50} {q:?}"
            );
            sides.push((
                total as f64,
                share["lo"].as_f64().unwrap(),
                share["hi"].as_f64().unwrap(),
            ));
        }
        // The changes: exact for the count, bounds for the share (after − before at its ends).
        let count = row("count");
        assert_eq!(
            count["difference"]["lo"].as_f64(),
            Some(sides[1].0 - sides[0].0),
            "{name}"
        );
        assert!(
            close(
                count["change"]["lo"].as_f64().unwrap(),
                sides[1].0 / sides[0].0 - 1.0
            ),
            "{name}"
        );
        let share = row("below 10us");
        assert!(
            close(
                share["difference"]["lo"].as_f64().unwrap(),
                sides[1].1 - sides[0].2
            ),
            "{name}"
        );
        assert!(
            close(
                share["difference"]["hi"].as_f64().unwrap(),
                sides[1].2 - sides[0].1
            ),
            "{name}"
        );
        assert!(
            rows.iter().any(|r| r["figure"] == "at or above 16384ns"),
            "{name}"
        );
        assert!(rows.iter().any(|r| r["figure"] == "p99.9"), "{name}");
    }
    // No verdict anywhere: one run a side.
    assert!(
        c["groups"][0]["comparisons"][0]["one_run_a_side"] == true,
        "{c}"
    );

    // The text: a table per histogram, with bounds and changes.
    let out = compare(&[b, a, "--below", "10us"]);
    let text = stdout(&out);
    assert!(
        text.contains("one run a side: each value is that run's"),
        "{text}"
    );
    assert!(
        text.contains("\n  @read_ns[4096] (ns): after vs before\n"),
        "{text}"
    );
    let header = header_after(&text, "@read_ns[4096] (ns): after vs before");
    for column in ["figure", "before", "after", "difference", "change"] {
        assert!(header.contains(column), "{header}");
    }
    assert!(text.contains("count "), "{text}");
    assert!(text.contains("17371"), "{text}");
    assert!(text.contains("[8.192 µs, 16.38 µs)"), "{text}");
    assert!(
        !text.contains("regressed") && !text.contains("improved"),
        "{text}"
    );

    // Markdown and CSV carry the same tables.
    let md = stdout(&compare(&[b, a, "--format", "markdown"]));
    assert!(
        md.contains(
            "**@read\\_ns\\[4096\\] (ns): after vs before**\n\n| figure | before | after |"
        ),
        "{md}"
    );
    let csv = stdout(&compare(&[b, a, "--format", "csv"]));
    assert!(
        csv.starts_with("variant,baseline,histogram,unit,figure,kind,"),
        "{csv}"
    );
    assert!(
        csv.contains(
            "after,before,@read_ns[4096],ns,count,count,17371,17371,20004,20004,2633,2633,"
        ),
        "{csv}"
    );

    // A histogram import against a run of spans (an ffmpeg import): one line, exit 1.
    let spans = dir.path().join("spans.framelab");
    import("ffmpeg-5.1-x264-encode.log", &spans);
    let out = run(&["compare", b, spans.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains("holds only imported histograms") && line.contains("spans"),
        "{line}"
    );
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));

    // Two prints in one file are two runs of one side: one must be named.
    let two = dir.path().join("two.framelab");
    import("bpftrace-0.17-read-before.txt", &two);
    import("bpftrace-0.17-read-after.txt", &two);
    let out = run(&["compare", two.to_str().unwrap(), a]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        error_line(&out).contains(&format!("--variant two={}:2", two.display())),
        "{}",
        stderr(&out)
    );
    let named = format!("before={}:1", two.display());
    let out = compare(&["--variant", &named, a, "--format", "json"]);
    let c: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(c["histograms"].as_array().unwrap().len(), 3, "{c}");

    // --show has no metric to pick here: refused, not ignored.
    let out = run(&["compare", b, a, "--show", "fps"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(error_line(&out).contains("--show fps"), "{}", stderr(&out));

    // --below without a unit: a usage error naming the units.
    let out = run(&["compare", b, a, "--below", "10"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("ns, us, ms or s"), "{}", stderr(&out));
}
