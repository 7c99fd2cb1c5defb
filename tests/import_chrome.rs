//! `framelab import` of Chrome trace event JSON: a real Chromium trace, hand-written bad
//! files, and an export imported back.

mod common;

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use common::{framelab, load, report_json, stderr, stdout};
use serde_json::Value;

const REAL: &str = "tests/fixtures/import/chrome-156-headless-startup.json.gz";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

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
    let out = framelab()
        .arg("import")
        .arg(input)
        .arg("-o")
        .arg(&run)
        .args(args)
        .output()
        .unwrap();
    (out, run)
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
