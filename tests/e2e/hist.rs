//! `framelab hist` and `framelab run --live` through the binary, on recorded runs.

use crate::common;

use common::{bucket_total, error_line, framelab, record_with_room, run_testprog, stderr, stdout};

/// The count of the linear layout's `# N values outside of min/max` line (0 without one).
fn outside_count(text: &str) -> u64 {
    text.lines()
        .find(|l| l.contains("outside of min/max"))
        .and_then(|l| {
            l.strip_prefix("# ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

#[test]
fn hist_of_a_stage_counts_every_measured_span() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(&dir, "run", &[], &["spans", "120"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let log2 = framelab()
        .args(["hist"])
        .arg(&path)
        .args(["--stage", "a"])
        .output()
        .unwrap();
    assert!(log2.status.success(), "{}", stderr(&log2));
    let text = stdout(&log2);
    assert!(text.starts_with("@a (µs):\n"), "{text}");
    assert_eq!(bucket_total(&text), 120, "{text}");

    // Spans of `a` last ~300 µs, but one preempted on a loaded machine lasts tens of ms:
    // unbounded, it would pass the bucket cap (400 × 50 µs = 20 ms) and widen the step.
    // --max keeps the step whatever the run's longest span; what lies above it is counted.
    let linear = framelab()
        .args(["hist"])
        .arg(&path)
        .args(["--stage", "a", "--linear", "50us", "--max", "10ms"])
        .output()
        .unwrap();
    let text = stdout(&linear);
    assert!(
        text.starts_with("@a (µs, 50 µs buckets):\n# NumSamples = 120; Min = "),
        "{text}"
    );
    assert_eq!(bucket_total(&text) + outside_count(&text), 120, "{text}");

    let every = framelab().args(["hist"]).arg(&path).output().unwrap();
    let text = stdout(&every);
    for stage in ["@a (µs):", "@b (µs):", "@c (µs):"] {
        assert!(text.contains(stage), "{text}");
    }
    assert_eq!(bucket_total(&text), 360, "{text}");

    let by = framelab()
        .args(["hist"])
        .arg(&path)
        .args(["--stage", "b", "--by", "thread"])
        .output()
        .unwrap();
    assert!(stdout(&by).starts_with("@b["), "{}", stdout(&by));
}

#[test]
fn hist_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (_, path) = run_testprog(&dir, "run", &[], &["spans", "5"]);
    let out = framelab()
        .args(["hist"])
        .arg(&path)
        .args(["--stage", "nope"])
        .output()
        .unwrap();
    // A stage that names nothing is a usage error.
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        error_line(&out),
        "error: the run has no stage \"nope\"; it has a, b, c, total and interval"
    );
    let out = framelab()
        .args(["hist"])
        .arg(&path)
        .args(["--pair", "tick"])
        .output()
        .unwrap();
    assert!(error_line(&out).contains("is not START:END"));
    // `--live 0s` was silently no live output at all; `1ns` spun the printer for ever.
    for tiny in ["0s", "1ns"] {
        let out = framelab()
            .args(["run", "--live", tiny, "--", "true"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(
            error_line(&out).contains("shorter than the least allowed, 100ms"),
            "{}",
            common::stderr(&out)
        );
    }
}

/// The durations of stage `name` in the measured window, as `hist` counts them.
fn stage_durations(path: &std::path::Path, name: &str) -> Vec<i64> {
    let run = common::load(path);
    let (series, _) = framelab::hist::collect(
        &run,
        &framelab::hist::HistOptions {
            stage: Some(name.into()),
            ..Default::default()
        },
    )
    .unwrap();
    series[0].values_ns.clone()
}

#[test]
fn a_bucket_width_far_too_fine_is_widened_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(&dir, "fine", &[], &["spans", "118"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = framelab()
        .args(["hist"])
        .arg(&path)
        .args(["--stage", "a", "--linear", "1ns"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // Before the cap, one line per nanosecond between the shortest and the longest span.
    let lines = text.lines().count();
    assert!(lines <= 400 + 5, "{lines} lines");
    assert_eq!(bucket_total(&text), 118, "{text}");
    let capped = text
        .lines()
        .find(|l| l.starts_with("# capped: 1 ns buckets would be "))
        .unwrap_or_else(|| panic!("the cap is not said: {text}"));
    assert!(
        capped.contains("more than 400")
            && capped.contains("--min/--max")
            && capped.contains("--buckets N"),
        "{capped}"
    );

    // Asking for more buckets than the most allowed is refused in one line, a usage error.
    let out = framelab()
        .args(["hist"])
        .arg(&path)
        .args(["--stage", "a", "--buckets", "20000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        error_line(&out),
        "error: invalid value '20000' for '--buckets <N>': give 1 to 10000 buckets, e.g. --buckets 50"
    );
}

#[test]
fn values_outside_min_and_max_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(&dir, "range", &[], &["spans", "80"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut durations = stage_durations(&path, "a");
    durations.sort_unstable();
    // A range of whole 8 ns steps: 8 buckets of one width (a range of 19 ns would give
    // 7 of 3 ns, the last cut at --max).
    let min = durations[20];
    let max = min + ((durations[60] - min).max(1) + 7) / 8 * 8;
    let below = durations.iter().filter(|&&d| d < min).count();
    let above = durations.iter().filter(|&&d| d >= max).count();
    let out = framelab()
        .args(["hist"])
        .arg(&path)
        .args(["--stage", "a", "--buckets", "8"])
        .arg(format!("--min={min}ns"))
        .arg(format!("--max={max}ns"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("# NumSamples = 80; Min = "), "{text}");
    for word in ["Mean = ", "Variance = ", "SD = ", "Median = "] {
        assert!(text.contains(word), "{word}: {text}");
    }
    let outside = text
        .lines()
        .find(|l| l.contains("outside of min/max"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        outside.starts_with(&format!(
            "# {} values outside of min/max: {below} below ",
            below + above
        )),
        "{outside}"
    );
    assert!(
        outside.contains(&format!(", {above} at or above ")),
        "{outside}"
    );
    assert_eq!(bucket_total(&text), (80 - below - above) as u64, "{text}");
    // The range asked is drawn whole: 8 buckets, empty ones too.
    let buckets = text.lines().filter(|l| l.starts_with('[')).count();
    assert_eq!(buckets, 8, "{text}");
}

#[test]
fn live_prints_the_interval_the_run_ends_in_and_can_be_linear() {
    // The live clock starts with the command, after framelab's own start: a loaded machine
    // can take the 0.6 s between its first print and the end. Such a run gets more room.
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = record_with_room(
        &["1600ms", "4600ms", "16600ms"],
        |duration| {
            let args = [
                "--live",
                "1s",
                "--live-linear",
                "100us",
                "--duration",
                duration,
            ];
            run_testprog(&dir, "live-end", &args, &["forever"])
        },
        |(out, _)| stderr(out).contains("--- 0.0–1.0 s ---"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--- 0.0–1.0 s ---\n@a (µs, 100 µs buckets):\n# NumSamples = "),
        "{err}"
    );
    let last = err
        .find(" s (end of the run) ---\n")
        .unwrap_or_else(|| panic!("the last interval is not printed: {err}"));
    assert!(err[last..].contains("@a (µs, 100 µs buckets):"), "{err}");
    // Every span recorded is printed once: none is lost at the end.
    let run = common::load(&path);
    assert_eq!(bucket_total(&err), run.spans.len() as u64, "{err}");
}

#[test]
fn live_prints_each_interval_while_the_run_goes_on() {
    // As above: the print of 2.0–3.0 s must come before the end, 0.5 s later at most.
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = record_with_room(
        &["3500ms", "6500ms", "18500ms"],
        |duration| {
            let args = ["--live", "1s", "--duration", duration];
            run_testprog(&dir, "live", &args, &["forever"])
        },
        |(out, _)| stderr(out).contains("--- 2.0–3.0 s ---\n"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("--- 0.0–1.0 s ---\n@a (µs):\n"), "{err}");
    assert!(err.contains("--- 2.0–3.0 s ---\n"), "{err}");
    // Each print holds only its interval's spans: together no more than the run has.
    let printed = bucket_total(&err);
    let run = common::load(&path);
    assert!(
        printed > 0 && printed <= run.spans.len() as u64,
        "{printed} of {}",
        run.spans.len()
    );
}

/// Each `--live` block as printed: its label's bounds (ns after the launch), what follows
/// them (` (end of the run)`, ` (late: …)`, or nothing) and the spans its histograms hold.
fn live_blocks(err: &str) -> Vec<(i64, i64, String, u64)> {
    let mut blocks: Vec<(i64, i64, String, String)> = Vec::new();
    for line in err.lines() {
        let header = line
            .strip_prefix("--- ")
            .and_then(|l| l.strip_suffix(" ---"));
        match (header, blocks.last_mut()) {
            (Some(label), _) => {
                let (bounds, what) = label.split_once(" s").unwrap();
                let (from, to) = bounds.split_once('–').unwrap();
                let ns = |s: &str| (s.parse::<f64>().unwrap() * 1e9).round() as i64;
                blocks.push((ns(from), ns(to), what.to_owned(), String::new()));
            }
            (None, Some(block)) => {
                block.3.push_str(line);
                block.3.push('\n');
            }
            (None, None) => {}
        }
    }
    (blocks.into_iter())
        .map(|(from, to, what, body)| (from, to, what, bucket_total(&body)))
        .collect()
}

/// Each block holds exactly the spans whose end falls in the interval its label names (by
/// the run file's times, after the launch), whenever it was printed: the intervals in turn
/// from 0 s, then the end of the run with every span that ended after the last one. A span
/// committed after its interval was printed is in a `(late: …)` block with its interval's
/// label; none is printed twice or lost. Nothing here depends on how fast the machine is.
#[test]
fn live_blocks_hold_the_spans_that_ended_in_their_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--live", "1s", "--duration", "2500ms"];
    let (out, path) = run_testprog(&dir, "live-ends", &args, &["forever"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let blocks = live_blocks(&err);
    let run = common::load(&path);
    let ends: Vec<i64> = run.spans.iter().map(|s| s.start_ns + s.dur_ns).collect();
    let (end_of_run, intervals) = blocks.split_last().expect("blocks printed");
    assert_eq!(end_of_run.2, " (end of the run)", "{err}");
    // On time: 0–1 s, 1–2 s, … up to where the end of the run starts, each once.
    let on_time: Vec<(i64, i64)> = (intervals.iter())
        .filter(|b| b.2.is_empty())
        .map(|b| (b.0, b.1))
        .collect();
    let second = 1_000_000_000;
    let expected: Vec<(i64, i64)> = (0..on_time.len() as i64)
        .map(|k| (k * second, (k + 1) * second))
        .collect();
    assert_eq!(on_time, expected, "{err}");
    // The run stops 2.5 s after the launch at the earliest: 0–1 s and 1–2 s are whole.
    assert!(on_time.len() >= 2, "{err}");
    assert_eq!(end_of_run.0, on_time.len() as i64 * second, "{err}");
    for &(from, to) in &on_time {
        let printed: u64 = (intervals.iter())
            .filter(|b| (b.0, b.1) == (from, to))
            .map(|b| b.3)
            .sum();
        let ended = ends.iter().filter(|&&e| from <= e && e < to).count() as u64;
        assert_eq!(printed, ended, "{from}–{to} ns: {err}");
    }
    let after = ends.iter().filter(|&&e| e >= end_of_run.0).count() as u64;
    assert_eq!(end_of_run.3, after, "{err}");
    assert_eq!(bucket_total(&err), run.spans.len() as u64, "{err}");
}

/// `--below` and `--format json` on a stage's spans read the drawn power-of-two µs buckets:
/// the share's bounds hold the exact share of the run's durations, each percentile's bounds
/// the exact percentile; the linear layout (its summary lines exact) refuses them in one line.
#[test]
fn span_histograms_give_bounded_figures_too() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(&dir, "figures", &[], &["spans", "120"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut values = stage_durations(&path, "a");
    values.sort_unstable();
    let threshold_ns = values[values.len() / 2];
    let threshold = format!("{threshold_ns}ns");
    let out = framelab()
        .args(["hist"])
        .arg(&path)
        .args(["--stage", "a", "--below", &threshold, "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let f = &doc["histograms"][0];
    assert_eq!(f["count"], 120, "{f}");
    assert_eq!(f["unit"], "us", "{f}");
    let exact_below = values.iter().filter(|&&v| v < threshold_ns).count() as u64;
    let share = &f["below"][0];
    assert!(
        share["count_at_least"].as_u64().unwrap() <= exact_below
            && exact_below <= share["count_at_most"].as_u64().unwrap(),
        "{exact_below}: {share}"
    );
    for p in f["percentiles"].as_array().unwrap() {
        let q = p["p"].as_f64().unwrap();
        let h = q * (values.len() - 1) as f64;
        let (k, frac) = (h.floor() as usize, h - h.floor());
        let next = values.get(k + 1).copied().unwrap_or(values[k]);
        let exact_ns = values[k] as f64 + frac * (next - values[k]) as f64;
        let (lo, hi) = (p["lo"].as_f64().unwrap(), p["hi"].as_f64().unwrap());
        assert!(
            lo * 1000.0 <= exact_ns && exact_ns < hi * 1000.0,
            "{exact_ns} ns: {p}"
        );
    }
    let text = framelab()
        .args(["hist"])
        .arg(&path)
        .args(["--stage", "a", "--below", &threshold])
        .output()
        .unwrap();
    let shown = stdout(&text);
    assert!(
        shown.starts_with("@a (µs):\n# count 120 · values in us\n"),
        "{shown}"
    );
    assert!(shown.contains(&format!("# below {threshold}: ")), "{shown}");
    assert_eq!(bucket_total(&shown), 120, "{shown}");

    let linear = framelab()
        .args(["hist"])
        .arg(&path)
        .args(["--stage", "a", "--linear", "50us", "--below", "1ms"])
        .output()
        .unwrap();
    assert_eq!(linear.status.code(), Some(2));
    assert!(
        error_line(&linear).contains("leave out --linear"),
        "{}",
        stderr(&linear)
    );
}

/// Imports `csv` as `dir/NAME.framelab`.
fn import_csv(dir: &std::path::Path, name: &str, csv: &str) -> std::path::PathBuf {
    let input = dir.join(format!("{name}.csv"));
    std::fs::write(&input, csv).unwrap();
    let path = dir.join(format!("{name}.framelab"));
    let out = framelab()
        .arg("import")
        .arg(&input)
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    path
}

/// Spans' µs buckets hold whole µs floored from ns: `[0]` is 0–999 ns. A threshold inside
/// it (500 ns) was rounded up to the bucket's bound and printed as an exact, wrong count.
#[test]
fn a_share_below_a_threshold_inside_a_spans_bucket_is_a_range() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("start_us,dur_us,name,frame\n");
    let durations = [0.2, 0.2, 0.2, 0.8, 0.8, 1.2, 1.2, 1.2, 1.2, 1.7];
    for (f, dur) in durations.iter().enumerate() {
        csv.push_str(&format!("{},{dur},pack,{f}\n", f * 100));
    }
    let path = import_csv(dir.path(), "sub", &csv);
    let hist = |extra: &[&str]| {
        let out = framelab()
            .arg("hist")
            .arg(&path)
            .args([
                "--stage", "pack", "--below", "500ns", "--below", "1us", "--below", "1500ns",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let text = hist(&[]);
    let line = |t: &str| {
        (text.lines())
            .find(|l| l.contains(&format!("below {t}:")))
            .unwrap_or_else(|| panic!("{text}"))
            .to_owned()
    };
    assert!(line("500ns").contains("(0 to 5 values"), "{text}");
    assert!(line("1us").contains("(5 values)"), "{text}");
    assert!(line("1500ns").contains("(5 to 10 values"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&hist(&["--format", "json"])).unwrap();
    let text = json.to_string();
    let below = json
        .pointer("/histograms/0/below")
        .unwrap_or_else(|| panic!("{text}"));
    let counts: Vec<(u64, u64)> = (below.as_array().unwrap().iter())
        .map(|b| {
            (
                b["count_at_least"].as_u64().unwrap(),
                b["count_at_most"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counts, [(0, 5), (5, 5), (5, 10)], "{text}");
}

/// A trace imported with no frame definition has no frames: its report shows no frame
/// figures, but `hist --stage total|interval` drew every slice as a "frame", and compare
/// showed and judged their total rows.
#[test]
fn frame_figures_of_a_run_without_frames_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/import/chrome-156-headless-startup.json.gz"
    );
    let mut paths = Vec::new();
    for name in ["c1", "c2"] {
        let path = dir.path().join(format!("{name}.framelab"));
        let out = framelab()
            .args(["import", trace, "-o"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        paths.push(path);
    }
    for stage in ["total", "interval"] {
        let out = framelab()
            .arg("hist")
            .arg(&paths[0])
            .args(["--stage", stage])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let line = error_line(&out);
        assert!(
            line.contains("--frame-arg") && line.contains("--frame-regex"),
            "{line}"
        );
    }
    let out = framelab()
        .arg("compare")
        .args(&paths)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        !text.contains("\"total.p50\"") && !text.contains("\"total.p99\""),
        "{text}"
    );
    assert!(
        text.contains("no total, interval, fps or late rows"),
        "{text}"
    );
}

/// `--min` above every value left an empty range drawn as "1 ns buckets", in ns.
#[test]
fn a_range_holding_no_value_says_so_in_the_values_unit() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("start_us,dur_us,name,frame\n");
    for f in 0..20 {
        csv.push_str(&format!("{},{},work,{f}\n", f * 10_000, 2000 + f * 100));
    }
    let path = import_csv(dir.path(), "ms", &csv);
    for bound in [["--min", "20ms"], ["--max", "1ms"]] {
        let out = framelab()
            .arg("hist")
            .arg(&path)
            .args(["--stage", "work"])
            .args(bound)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains("@work (µs)"), "{text}");
        assert!(!text.contains(" ns"), "{text}");
        assert!(text.contains("holds no value"), "{text}");
    }
}

/// `--unit` on spans was ignored without a word; `--stage 'commit->release'` was refused
/// where `compare --show` takes `->` for `→`.
#[test]
fn unit_on_spans_is_refused_and_an_arrow_may_be_typed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shm.framelab");
    let log = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/import/wayland-1.21-simple-shm-client.log.gz"
    );
    let out = framelab()
        .args(["import", log, "-o"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let hist = |stage: &str, extra: &[&str]| {
        framelab()
            .arg("hist")
            .arg(&path)
            .args(["--stage", stage])
            .args(extra)
            .output()
            .unwrap()
    };
    let typed = hist("commit->release", &[]);
    assert!(typed.status.success(), "{}", stderr(&typed));
    assert_eq!(stdout(&typed), stdout(&hist("commit→release", &[])));
    let unit = hist("commit→release", &["--unit", "ms"]);
    assert_eq!(unit.status.code(), Some(2), "{}", stderr(&unit));
    assert!(error_line(&unit).contains("--unit"), "{}", stderr(&unit));
}
