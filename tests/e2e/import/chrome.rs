//! `framelab import` of Chrome trace event JSON: a real Chromium trace, hand-written bad
//! files, and an export imported back.

use super::{fixture, import_into};
use crate::common;

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use common::{framelab, load, report_json, stderr, stdout};
use serde_json::Value;

const REAL: &str = "chrome-156-headless-startup.json.gz";

fn real_events() -> Vec<Value> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(fixture(REAL)).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let trace: Value = serde_json::from_str(&text).unwrap();
    trace["traceEvents"].as_array().unwrap().clone()
}

fn import(dir: &tempfile::TempDir, input: &Path, args: &[&str]) -> (std::process::Output, PathBuf) {
    let run = dir.path().join("imported.framelab");
    (import_into(input, &run, args), run)
}

/// What the trace holds, counted the plain way: slices, instants and counter readings a
/// correct importer must turn into spans, events and samples.
struct Expected {
    spans: usize,
    unclosed_b: usize,
    unclosed_async: usize,
    unmatched_async_ends: usize,
    instants: usize,
    samples: usize,
}

fn count(events: &[Value], pid: Option<u64>) -> Expected {
    let ph = |e: &Value| e["ph"].as_str().unwrap_or("").to_owned();
    let mine = |e: &&Value| pid.is_none_or(|p| e["pid"].as_u64() == Some(p));
    let events: Vec<&Value> = events.iter().filter(mine).collect();
    let mut spans = events.iter().filter(|e| ph(e) == "X").count();
    let mut stacks: HashMap<(String, String), usize> = HashMap::new();
    for e in events.iter().filter(|e| ph(e) == "B" || ph(e) == "E") {
        let thread = (e["pid"].to_string(), e["tid"].to_string());
        let depth = stacks.entry(thread).or_default();
        if ph(e) == "B" {
            *depth += 1;
        } else if *depth > 0 {
            *depth -= 1;
            spans += 1;
        }
    }
    let mut open: HashMap<String, usize> = HashMap::new();
    let mut unmatched_async_ends = 0;
    for e in events.iter().filter(|e| ph(e) == "b" || ph(e) == "e") {
        let key = format!(
            "{} {} {} {} {}",
            e["pid"], e["cat"], e["id"], e["id2"], e["name"]
        );
        let depth = open.entry(key).or_default();
        if ph(e) == "b" {
            *depth += 1;
        } else if *depth > 0 {
            *depth -= 1;
            spans += 1;
        } else {
            unmatched_async_ends += 1;
        }
    }
    let instants = events
        .iter()
        .filter(|e| matches!(ph(e).as_str(), "i" | "I" | "n"))
        .count();
    // Readings of one series at one instant are one sample.
    let mut readings = HashSet::new();
    for e in events.iter().filter(|e| ph(e) == "C") {
        for (key, value) in e["args"].as_object().unwrap() {
            if value.is_number() {
                readings.insert((
                    e["pid"].to_string(),
                    e["name"].to_string(),
                    key.clone(),
                    e["ts"].to_string(),
                ));
            }
        }
    }
    Expected {
        spans,
        unclosed_b: stacks.values().sum(),
        unclosed_async: open.values().sum(),
        unmatched_async_ends,
        instants,
        samples: readings.len(),
    }
}

#[test]
fn a_real_chromium_trace_imports_everything_it_holds() {
    let events = real_events();
    let expected = count(&events, None);
    // The fixture is what SOURCES.md says it is.
    assert_eq!(expected.spans, 10_382 + 4);
    assert_eq!((expected.unclosed_b, expected.unclosed_async), (13, 5));
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = import(&dir, &fixture(REAL), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&path);
    assert_eq!(run.spans.len(), expected.spans);
    assert_eq!(run.events.len(), expected.instants);
    assert_eq!(run.telemetry.samples.len(), expected.samples);
    assert_eq!(expected.unmatched_async_ends, 0);
    let info = run.import.as_ref().unwrap();
    assert_eq!(info.format, "chrome");
    assert_eq!(info.skipped, 0);
    let notes = info.notes.join("\n");
    assert!(
        notes.contains("13 slices begun (B) were never ended (E)"),
        "{notes}"
    );
    assert!(
        notes.contains("5 async slices begun (b/S) were never ended"),
        "{notes}"
    );
    assert!(
        notes.contains("\"f\" ×40") && notes.contains("\"s\" ×40"),
        "{notes}"
    );
    // The report shows the notes; stderr says what was imported.
    assert!(
        stdout(&out).contains("13 slices begun (B) were never ended"),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains(&format!("imported {} spans", expected.spans)));
    // Threads are named from the metadata.
    let names: HashSet<&str> = run.threads.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains("CrBrowserMain") && names.contains("Chrome_IOThread"),
        "{names:?}"
    );
    // The queue-length counters.
    let metrics: HashSet<&str> = (run.telemetry.series.iter())
        .map(|s| s.metric.as_str())
        .collect();
    assert!(metrics.contains("UI_DEFAULT_TQ"), "{metrics:?}");
}

#[test]
fn process_keeps_one_process_of_the_real_trace() {
    let events = real_events();
    let browser = count(&events, Some(31386));
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = import(&dir, &fixture(REAL), &["--process", "Browser"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&path);
    assert_eq!(run.spans.len(), browser.spans);
    assert!(run
        .spans
        .iter()
        .all(|s| run.threads[s.thread as usize].pid == 31386));
    assert_eq!(run.events.len(), browser.instants);
}

#[test]
fn an_export_imports_back_to_the_same_spans() {
    let dir = tempfile::tempdir().unwrap();
    let (out, first) = import(&dir, &fixture(REAL), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let exported = dir.path().join("export.json");
    let out = framelab()
        .args(["export"])
        .arg(&first)
        .args(["--format", "chrome", "-o"])
        .arg(&exported)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let second = dir.path().join("again.framelab");
    let out = framelab()
        .arg("import")
        .arg(&exported)
        .arg("-o")
        .arg(&second)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let spans = |path: &Path| load(path).named_spans();
    assert_eq!(spans(&first), spans(&second));
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_bad_file_fails_with_one_line_naming_the_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "bad.json",
        "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1},\n{\"ph\":\"X\",\"name\":\"b\",\"ts\":-2,\"dur\":1}]",
    );
    let (out, run) = import(&dir, &path, &["--format", "chrome"]);
    assert_eq!(out.status.code(), Some(1));
    let line = common::error_line(&out);
    assert_eq!(
        line,
        format!(
            "error: {}: at byte 39: negative \"ts\" (-2): times and durations are microseconds \
             and cannot be negative",
            path.display()
        )
    );
    assert!(!stderr(&out).contains("panicked"));
    assert!(!run.exists());
    // --skip-bad imports the rest and says what it skipped.
    let (out, run) = import(&dir, &path, &["--format", "chrome", "--skip-bad"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(load(&run).spans.len(), 1);
    assert!(
        stderr(&out).contains("skipped 1 bad records; the first:"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_truncated_file_fails_at_the_event_it_cuts() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "cut.json",
        "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"dur\":1},{\"ph\":\"X\",\"ts\":2,\"d",
    );
    let (out, _) = import(&dir, &path, &[]);
    assert_eq!(out.status.code(), Some(1));
    let line = common::error_line(&out);
    assert!(
        line.contains(": at byte 42: the file ends inside this event"),
        "{line}"
    );
}

#[test]
fn garbage_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("garbage.json", "[{\"ph\":\"X\" \u{7f}garbage"),
        ("binary.json", "{\"traceEvents\":[\u{0}\u{1}\u{2}]}"),
        ("empty.json", ""),
    ] {
        let path = write(&dir, name, text);
        let (out, _) = import(&dir, &path, &["--format", "chrome"]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let line = common::error_line(&out);
        assert!(
            line.starts_with(&format!("error: {}", path.display())),
            "{line}"
        );
        assert!(!stderr(&out).contains("panicked"), "{name}");
    }
}

#[test]
fn a_trace_cut_off_without_its_bracket_imports_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "open.json",
        "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1.5,\"dur\":1.25,\"pid\":1,\"tid\":1},\n",
    );
    let (out, run) = import(&dir, &path, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&run);
    assert_eq!((run.spans[0].start_ns, run.spans[0].dur_ns), (0, 1_250));
    assert!(stdout(&out).contains("no closing ']'"), "{}", stdout(&out));
}

/// The README's `--frame-arg frame` on the repo's real Chrome trace matched no slice and
/// imported nothing, exit 0. A rule that matches nothing is now one error line naming the
/// rule and the arg names the trace's slices do carry; no file is written.
#[test]
fn a_frame_rule_that_matches_no_slice_names_what_the_slices_carry() {
    let dir = tempfile::tempdir().unwrap();
    let (out, run) = import(&dir, &fixture(REAL), &["--frame-arg", "frame"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = common::error_line(&out);
    assert!(
        line.contains("--frame-arg frame: none of the") && line.contains("slices has args.frame"),
        "{line}"
    );
    // The most common args of the trace's slices, with their counts.
    assert!(
        line.contains("url_info (26)") && line.contains("site_instance (24)"),
        "{line}"
    );
    assert!(
        !run.exists(),
        "an import of no frame wrote {}",
        run.display()
    );

    let (out, _) = import(&dir, &fixture(REAL), &["--frame-regex", r"^frame (\d+)$"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = common::error_line(&out);
    assert!(line.contains("--frame-regex matched none of the"), "{line}");
    assert!(
        line.contains("SequenceManagerImpl::SelectNextTask (930)"),
        "{line}"
    );
    // A rule some slices match still imports them, the others counted in a note.
    let (out, _) = import(&dir, &fixture(REAL), &["--frame-arg", "url_info"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("slices had no args.url_info frame id: left out"),
        "{}",
        stdout(&out)
    );
}

/// Importing again into the same file adds a run beside the first: said, with its number.
#[test]
fn an_import_into_a_file_with_runs_says_it_appends_run_n() {
    let dir = tempfile::tempdir().unwrap();
    let (first, run) = import(&dir, &fixture(REAL), &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(!stderr(&first).contains("appended"), "{}", stderr(&first));
    let (again, _) = import(&dir, &fixture(REAL), &[]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains(&format!(
            "{} already held 1 run: this import was appended as run 2",
            run.display()
        )),
        "{}",
        stderr(&again)
    );
    assert_eq!(framelab::store::list_runs(&run).unwrap().len(), 2);
}

/// A 3.2 ms trace read `window 0.00 s`: its window is shown in a unit that shows it.
#[test]
fn a_short_trace_shows_its_window_in_ms() {
    let dir = tempfile::tempdir().unwrap();
    // Four 0.8 ms slices back to back: 3.2 ms from the first start to the last end.
    let events: Vec<String> = (0..4)
        .map(|i| {
            format!(
                r#"{{"ph":"X","name":"draw","ts":{},"dur":800,"pid":1,"tid":1}}"#,
                1000 + i * 800
            )
        })
        .collect();
    let input = write(&dir, "short.json", &format!("[{}]", events.join(",")));
    let (out, _) = import(&dir, &input, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stdout(&out);
    let window = report
        .lines()
        .find(|l| l.trim_start().starts_with("window"))
        .unwrap();
    assert!(window.contains("3.2 ms measured, no warmup"), "{report}");
    assert!(!report.contains("0.00 s measured"), "{report}");
}

/// The text report's fps line keeps p1 and the 1% and 0.1% lows and says where the others
/// are; `framelab report --verbose` names every one, as JSON always does.
#[test]
fn the_fps_line_keeps_three_lows_and_verbose_names_all() {
    let dir = tempfile::tempdir().unwrap();
    // 2000 frames 10 ms apart, every 100th 25 ms: enough intervals for the 0.1% lows.
    let mut t = 0;
    let events: Vec<String> = (0..2000)
        .map(|i| {
            t += if i % 100 == 99 { 25_000 } else { 10_000 };
            format!(
                r#"{{"ph":"X","name":"draw","ts":{t},"dur":2000,"pid":1,"tid":1,"args":{{"f":{i}}}}}"#
            )
        })
        .collect();
    let input = write(&dir, "long.json", &format!("[{}]", events.join(",")));
    // Each slice a frame by its id: without a frame rule a trace has no frames.
    let (out, run) = import(&dir, &input, &["--frame-arg", "f"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let fps_line = |text: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with("fps "))
            .unwrap_or_else(|| panic!("no fps line: {text}"))
            .to_owned()
    };
    let brief = fps_line(&stdout(&out));
    for kept in [
        "mean ",
        "(1 ÷ mean interval; observed = frames ÷ window)",
        " p50 ",
        " p1 ",
        " low1_avg ",
        " low0_1_avg ",
    ] {
        assert!(brief.contains(kept), "{kept}: {brief}");
    }
    for left_out in ["p10", "p5 ", "p0.1", "low1_int", "low0_1_int"] {
        assert!(!brief.contains(left_out), "{left_out}: {brief}");
    }
    assert!(
        brief.ends_with("(every low: framelab report --verbose, or --format json)"),
        "{brief}"
    );
    let verbose = framelab()
        .arg("report")
        .arg(&run)
        .arg("--verbose")
        .output()
        .unwrap();
    assert!(verbose.status.success(), "{}", stderr(&verbose));
    let all = fps_line(&stdout(&verbose));
    for name in [
        "p10",
        "p5",
        "p1",
        "low1_avg",
        "low1_int",
        "p0.1",
        "low0_1_avg",
        "low0_1_int",
    ] {
        assert!(all.contains(&format!(" {name} ")), "{name}: {all}");
    }
    assert!(!all.contains("every low"), "{all}");
    // Markdown too: the pointer it prints leads somewhere.
    let markdown = framelab()
        .arg("report")
        .arg(&run)
        .args(["--verbose", "--format", "markdown"])
        .output()
        .unwrap();
    let markdown = stdout(&markdown);
    assert!(
        markdown.contains(" low0_1_int ") && !markdown.contains("every low"),
        "{markdown}"
    );
    let json = common::report_json(&run);
    assert!(json["fps"]["low1_int"].is_number(), "{}", json["fps"]);
}

/// Without --frame-arg or --frame-regex each slice would be a frame of its own: the real
/// start-up trace printed thousands of fps, stutter and a bound. Now the stages, threads and
/// notes stay, every frame statistic goes, and one line says how to define frames.
#[test]
fn a_trace_without_frames_reports_no_frame_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = import(&dir, &fixture(REAL), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    for text in [stdout(&out), {
        let report = framelab().arg("report").arg(&path).output().unwrap();
        stdout(&report)
    }] {
        let labels: Vec<&str> = (text.lines())
            .filter_map(|l| l.strip_prefix("  "))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        for gone in [
            "fps", "late", "stutter", "jitter", "Δ", "bound", "interval", "total", "worst",
        ] {
            assert!(!labels.contains(&gone), "{gone}: {text}");
        }
        assert!(!text.contains("observed"), "{text}");
        let how: Vec<&str> = (text.lines())
            .filter(|l| l.contains("--frame-arg") && l.contains("--frame-regex"))
            .collect();
        assert_eq!(how.len(), 1, "{text}");
        assert!(
            how[0].trim_start().starts_with("frames    none defined"),
            "{how:?}"
        );
        // The stage table, the threads and the notes stay.
        assert!(text.contains("\n  ThreadControllerImpl::DoWork "), "{text}");
        assert!(text.contains("\n  CrBrowserMain "), "{text}");
        // A thread's busy time per frame would be per slice: none is shown.
        let main: Vec<&str> = (text.lines())
            .find(|l| l.starts_with("  CrBrowserMain "))
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(main[2], "-", "{text}");
        assert!(
            text.contains("13 slices begun (B) were never ended"),
            "{text}"
        );
    }
    let json = report_json(&path);
    for key in [
        "observed_fps",
        "fps",
        "stutter",
        "late",
        "pacing",
        "interval",
        "total",
    ] {
        assert!(json[key].is_null(), "{key}: {}", json[key]);
    }
    assert!(json["stages"].as_array().unwrap().len() > 100);
    assert!(json["worst_frames"].as_array().unwrap().is_empty());
    // With a frame definition the frame statistics are there.
    let frames: Vec<String> = (0..4)
        .map(|f| {
            format!(
                r#"{{"ph":"X","name":"draw","ts":{},"dur":2000,"pid":1,"tid":1,"args":{{"f":{f}}}}}"#,
                f * 16_000
            )
        })
        .collect();
    let other = tempfile::tempdir().unwrap();
    let input = write(&other, "frames.json", &format!("[{}]", frames.join(",")));
    let (out, path) = import(&other, &input, &["--frame-arg", "f"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("observed"), "{}", stdout(&out));
    assert!(!report_json(&path)["observed_fps"].is_null());
}

/// Nested slices of one name are how Chrome traces are: one note counts them all (a real
/// page's trace printed 173, one per stage and thread).
#[test]
fn nested_slices_of_one_name_are_one_note() {
    let dir = tempfile::tempdir().unwrap();
    let slice = |name: &str, tid: u32, ts: u32, dur: u32| {
        format!(r#"{{"ph":"X","name":"{name}","ts":{ts},"dur":{dur},"pid":1,"tid":{tid}}}"#)
    };
    let events = [
        slice("Layout", 1, 1000, 500),
        slice("Layout", 1, 1100, 100),
        slice("Task", 1, 2000, 500),
        slice("Task", 1, 2100, 100),
        slice("Task", 2, 3000, 500),
        slice("Task", 2, 3100, 100),
        slice("Task", 2, 3300, 100),
    ];
    let input = write(&dir, "nested.json", &format!("[{}]", events.join(",")));
    let (out, _) = import(&dir, &input, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stdout(&out);
    let overlaps: Vec<&str> = (report.lines())
        .filter(|l| l.contains("an earlier span of"))
        .collect();
    assert_eq!(overlaps.len(), 1, "{report}");
    assert!(
        overlaps[0].contains("4 spans of 2 stages on 2 threads overlap an earlier span"),
        "{report}"
    );
    assert!(overlaps[0].contains("the most: Task on thread"), "{report}");
}
