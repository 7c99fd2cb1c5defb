//! `framelab import` of the CSV-shaped formats (PresentMon, MangoHud, generic CSV and JSON
//! Lines) and `framelab export --format csv`, through the binary.

use super::fixture;
use crate::common;

use std::path::PathBuf;

use common::*;
use framelab::model::Run;

/// `framelab import ARGS... -o DIR/NAME.framelab`: the output and the run file's path.
fn import(dir: &tempfile::TempDir, name: &str, args: &[&str]) -> (std::process::Output, PathBuf) {
    let path = temp_run(dir, name);
    let out = framelab()
        .arg("import")
        .args(args)
        .arg("-o")
        .arg(&path)
        .output()
        .expect("framelab runs");
    (out, path)
}

fn import_ok(dir: &tempfile::TempDir, name: &str, args: &[&str]) -> (String, Run) {
    let (out, path) = import(dir, name, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    (stdout(&out), load(&path))
}

/// (frame, stage, pid, tid, thread name, start, dur) of every span, sorted.
fn spans(run: &Run) -> Vec<framelab::model::NamedSpan> {
    run.named_spans()
}

#[test]
fn presentmon_fixtures_are_detected_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = fixture("presentmon-v1-farcrynewdawn.csv");
    let (report, run) = import_ok(&dir, "v1", &[v1.to_str().unwrap()]);
    assert_eq!(run.import.as_ref().unwrap().format, "presentmon");
    assert_eq!(run.spans.len(), 1171);
    assert!(report.contains("imported  presentmon"), "{report}");
    assert!(report.contains("between presents"), "{report}");
    // A present's interval is not work: no thread 100% busy, no bottleneck (both were
    // shown for the process PresentMon names, its spans on tid 0).
    assert!(!report.contains("bound "), "{report}");
    assert!(!report.contains("busy %"), "{report}");
    assert!(report.contains("Frame times only"), "{report}");
    let first = spans(&run)[0].clone();
    assert_eq!(
        first,
        (
            0,
            "between presents".into(),
            9208,
            0,
            "FarCryNewDawn.exe".into(),
            0,
            16_811_000
        )
    );

    let v2 = fixture("presentmon-v2-presentbench-multiprocess.csv");
    let (report, run) = import_ok(&dir, "v2", &[v2.to_str().unwrap()]);
    assert_eq!(run.spans.len(), 258);
    assert_eq!(run.threads[0].name, "PresentBench.exe");
    assert!(
        report.contains("left out 382 presents of other processes"),
        "{report}"
    );
    assert!(
        report.contains("pick another with --process NAME"),
        "{report}"
    );

    let (report, run) = import_ok(&dir, "dwm", &[v2.to_str().unwrap(), "--process", "dwm.exe"]);
    assert_eq!(run.spans.len(), 174);
    assert_eq!(run.threads[0].name, "dwm.exe");
    assert!(report.contains("kept dwm.exe (pid 2656)"), "{report}");
}

/// Every present is a reading of each per-present column (`MsInPresentAPI`, …): the
/// telemetry table's count and percentiles are over all 1171 rows of the real capture.
/// Folding runs of equal values (as for a sensor a log repeats) dropped the 4 rows that
/// sat between two equal neighbours, giving 1167 samples, p99 1879.66 µs and mean
/// 298.69 µs. The expected figures were computed from the CSV with numpy (type 7) and
/// checked with exact fractions: p99 = 1869.7 µs, mean = 297.9317 µs.
#[test]
fn presentmon_columns_keep_every_present_as_a_reading() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = fixture("presentmon-v1-farcrynewdawn.csv");
    let path = temp_run(&dir, "v1");
    let out = framelab()
        .args(["import", v1.to_str().unwrap(), "--report", "json", "-o"])
        .arg(&path)
        .output()
        .expect("framelab runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON report");
    let metric = report["telemetry"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "MsInPresentAPI")
        .expect("MsInPresentAPI in the telemetry table")
        .clone();
    assert_eq!(metric["samples"], 1171, "{metric}");
    let close = |key: &str, want: f64| {
        let got = metric[key].as_f64().unwrap();
        assert!((got - want).abs() < 1e-6, "{key}: {got} (want {want})");
    };
    close("p99", 1869.7);
    close("p50", 79.0);
    close("max", 70562.0);
    let mean = metric["mean"].as_f64().unwrap();
    assert!((mean - 297.931_682_322_8).abs() < 1e-6, "mean {mean}");
    // In the run file too: one reading per present.
    let run = load(&path);
    let series = run
        .telemetry
        .series
        .iter()
        .position(|s| s.metric == "MsInPresentAPI")
        .unwrap() as u32;
    let readings = run
        .telemetry
        .samples
        .iter()
        .filter(|s| s.series == series)
        .count();
    assert_eq!(readings, 1171);
}

#[test]
fn mangohud_fixtures_are_detected_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    for (name, frames, first_ns) in [
        ("mangohud-0.6.8-glxgears-llvmpipe.csv", 3384, 86_059_000),
        ("mangohud-0.6.8-vkcube-lavapipe.csv", 1197, 152_527_000),
    ] {
        let (report, run) = import_ok(&dir, name, &[fixture(name).to_str().unwrap()]);
        assert_eq!(run.import.as_ref().unwrap().format, "mangohud");
        assert_eq!(run.spans.len(), frames, "{name}");
        let first = run.spans.iter().find(|s| s.frame == 0).unwrap();
        assert_eq!((first.start_ns, first.dur_ns), (0, first_ns), "{name}");
        assert!(report.contains("frametime"), "{report}");
        assert!(report.contains("microseconds (MangoHud 0.6)"), "{report}");
        assert!(report.contains("cpu AMD EPYC"), "{report}");
    }
}

#[test]
fn a_bad_row_is_one_error_line_and_skip_bad_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("spans.csv");
    std::fs::write(
        &csv,
        "start_us,dur_us,name\n0,10,decode\n20,ten,decode\n40,-1,decode\n60,10,decode\n",
    )
    .unwrap();
    let (out, path) = import(&dir, "bad", &[csv.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert_eq!(
        line,
        format!(
            "error: {}:3: dur \"ten\" is not a number (or is out of range)",
            csv.display()
        )
    );
    assert!(!stderr(&out).contains("panicked"));
    assert!(!path.exists());

    let (report, run) = import_ok(&dir, "skipped", &[csv.to_str().unwrap(), "--skip-bad"]);
    assert_eq!(run.spans.len(), 2);
    assert_eq!(run.import.as_ref().unwrap().skipped, 2);
    assert!(report.contains("2 bad records skipped"), "{report}");
    assert!(report.contains(":3: dur \"ten\""), "{report}");

    let pm = dir.path().join("pm.csv");
    std::fs::write(
        &pm,
        "Application,ProcessID,MsBetweenPresents,TimeInSeconds\na,1,16.6,1.0\na,1,16.7\n",
    )
    .unwrap();
    let (out, _) = import(&dir, "pm", &[pm.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        error_line(&out).contains("pm.csv:3: 3 fields where the header has 4"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn jsonl_events_pair_into_spans() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("events.jsonl");
    std::fs::write(
        &jsonl,
        "{\"t\": 1.0, \"name\": \"request\", \"id\": 7}\n\
         {\"t\": 1.5, \"name\": \"request\", \"id\": 8}\n\
         {\"t\": 4.25, \"name\": \"response\", \"id\": 8}\n\
         {\"t\": 11.0, \"name\": \"response\", \"id\": 7}\n",
    )
    .unwrap();
    let (_, run) = import_ok(
        &dir,
        "pairs",
        &[
            jsonl.to_str().unwrap(),
            "--key",
            "id",
            "--pair",
            "request:response",
            "--time-unit",
            "ms",
        ],
    );
    assert_eq!(run.import.as_ref().unwrap().format, "jsonl");
    assert_eq!(run.events.len(), 4);
    let got: Vec<(u64, i64, i64)> = run
        .spans
        .iter()
        .map(|s| (s.frame, s.start_ns, s.dur_ns))
        .collect();
    assert_eq!(got, vec![(7, 0, 10_000_000), (8, 500_000, 2_750_000)]);
}

#[test]
fn export_csv_then_import_gives_the_same_spans() {
    let dir = tempfile::tempdir().unwrap();
    // Spans with names that need quoting, on several threads, not starting at the origin.
    // The launch marker row (no duration) puts the origin 500 ns before the first span.
    let source = dir.path().join("source.csv");
    let mut text = String::from("start_ns,dur_ns,name,frame,pid,tid,thread\n");
    text.push_str("500,,framelab:launch,,,,\n");
    for f in 0..50u64 {
        let t = 1_000 + f * 16_666_667;
        text.push_str(&format!(
            "{t},4000123,\"decode, \"\"hw\"\"\",{f},100,101,main\n"
        ));
        text.push_str(&format!(
            "{},9000001,render,{f},100,102,\"gpu queue\"\n",
            t + 4_100_000
        ));
    }
    std::fs::write(&source, text).unwrap();
    let (out, first) = import(&dir, "first", &[source.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let exported = dir.path().join("spans.csv");
    let out = framelab()
        .args(["export"])
        .arg(&first)
        .args(["--format", "csv", "-o"])
        .arg(&exported)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read_to_string(&exported).unwrap();
    assert!(
        written.starts_with("frame,stage,pid,tid,thread,start_ns,dur_ns\n,framelab:launch,,,,0,\n"),
        "{written}"
    );
    let (_, again) = import_ok(&dir, "again", &[exported.to_str().unwrap()]);
    let first = load(&first);
    assert_eq!(spans(&first)[0].5, 500);
    assert_eq!(spans(&again), spans(&first));
    assert_eq!(again.spans.len(), 100);

    // A PresentMon import survives the round trip too, thread names included.
    let pm = fixture("presentmon-v2-presentbench-multiprocess.csv");
    let (_, before) = import_ok(&dir, "pm", &[pm.to_str().unwrap()]);
    let pm_csv = dir.path().join("pm.csv");
    let out = framelab()
        .arg("export")
        .arg(temp_run(&dir, "pm"))
        .args(["--format", "csv", "-o"])
        .arg(&pm_csv)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, after) = import_ok(&dir, "pm-again", &[pm_csv.to_str().unwrap()]);
    assert_eq!(spans(&after), spans(&before));
}

/// An imported trace measured no process: its report has no CPU (the JSON report said 0 s
/// user, 0% load, 0 bytes peak) and compare and history have no CPU, load or cores to judge
/// for it (they took zeros).
#[test]
fn an_imported_trace_has_no_cpu_figures_rather_than_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let log = fixture("mangohud-0.6.8-glxgears-llvmpipe.csv");
    let (_, run) = import_ok(&dir, "mangohud", &[log.to_str().unwrap(), "--fps", "60"]);
    let report = framelab::analyze::analyze(&run);
    assert_eq!(report.cpu, None);
    let json = report_json(&dir.path().join("mangohud.framelab"));
    assert!(json["cpu"].is_null(), "{}", json["cpu"]);
    let data = framelab::compare::extract(&run);
    let keys: Vec<String> = (framelab::compare::metrics::catalogue(&[&data]).into_iter())
        .map(|m| m.key)
        .collect();
    assert!(keys.contains(&"fps".to_string()), "{keys:?}");
    for cpu in ["cpu", "load", "cores", "cpu_per_frame"] {
        assert!(!keys.contains(&cpu.to_string()), "{cpu} in {keys:?}");
    }
}
