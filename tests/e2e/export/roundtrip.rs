//! `framelab export` then `framelab import` of real recorded runs gives back the run, not
//! only its spans: the re-import's report is the original's (name, command, target,
//! warmup window, end, processes, counters, sampling), in Perfetto and in Chrome JSON.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;

fn report(path: &Path, format: &str) -> String {
    let out = framelab()
        .arg("report")
        .arg(path)
        .args(["--format", format])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// Exports `run` as `format` and imports it back; returns the re-imported run file.
fn round_trip(dir: &tempfile::TempDir, run: &Path, format: &str) -> PathBuf {
    let trace = dir.path().join(format!("trace.{format}"));
    let out = framelab()
        .arg("export")
        .arg(run)
        .args(["--format", format, "-o"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let back = dir.path().join(format!("back-{format}.framelab"));
    let out = framelab()
        .arg("import")
        .arg(&trace)
        .arg("-o")
        .arg(&back)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    back
}

/// The text report without the line saying where an import came from, and the `scheduler`
/// line (an export does not carry the scheduler's status: docs/importing.md).
fn without_import_line(report: &str) -> String {
    report
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            !l.starts_with("imported ") && !l.starts_with("scheduler ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn check_round_trips(framelab_args: &[&str], program_args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    // Recorded without the scheduler timeline: an export carries spans, counters, events,
    // processes and samples, not the scheduler's slices (docs/importing.md), so a run with
    // them would come back with wall-clock busy time instead of time on a CPU.
    let (out, path) = run_testprog_with_env(
        &dir,
        "original",
        &[("FRAMELAB_SCHED", "none")],
        framelab_args,
        program_args,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let original = report(&path, "text");
    let original_json: serde_json::Value = serde_json::from_str(&report(&path, "json")).unwrap();
    for format in ["perfetto", "chrome"] {
        let back = round_trip(&dir, &path, format);
        let text = report(&back, "text");
        assert!(
            text.contains(&format!("  imported  {format} · ")),
            "{format}: {text}"
        );
        assert_eq!(
            without_import_line(&text),
            without_import_line(&original),
            "{format}: the re-imported report differs from the original's"
        );
        let mut json: serde_json::Value = serde_json::from_str(&report(&back, "json")).unwrap();
        let import = json.as_object_mut().unwrap().remove("import").unwrap();
        assert_eq!(import["notes"], serde_json::json!([]), "{format}");
        for key in [
            "name",
            "command",
            "started_at",
            "host",
            "target_fps",
            "budget_ns",
            "window",
            "end_reason",
            "exit",
            "frames",
            "processes",
            "cpu",
            "counters",
            "late",
            "stages",
        ] {
            assert_eq!(json[key], original_json[key], "{format}: {key}");
        }
    }
}

#[test]
fn two_processes_stopped_by_duration_after_a_warmup_come_back_whole() {
    check_round_trips(
        &[
            "--fps",
            "500",
            "--warmup",
            "150ms",
            "--duration",
            "700ms",
            "--name",
            "round trip",
        ],
        &["processes", "100000"],
    );
}

#[test]
fn counters_events_and_a_budget_come_back_whole() {
    check_round_trips(
        &["--budget", "1500us", "--warmup", "50ms", "--name", "spans"],
        &["spans", "150"],
    );
}

#[test]
fn an_export_without_its_run_description_says_what_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(&dir, "bare", &["--fps", "500"], &["spans", "20"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let trace = dir.path().join("trace.json");
    let out = framelab()
        .arg("export")
        .arg(&path)
        .args(["--format", "chrome", "-o"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // What an export written before the description was carried looks like.
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    json["otherData"]["framelab"]
        .as_object_mut()
        .unwrap()
        .remove("description")
        .expect("the export carries a description");
    std::fs::write(&trace, serde_json::to_vec(&json).unwrap()).unwrap();
    let back = dir.path().join("back.framelab");
    let out = framelab()
        .arg("import")
        .arg(&trace)
        .arg("-o")
        .arg(&back)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&back);
    let notes = &run.import.as_ref().unwrap().notes;
    assert!(
        notes.iter().any(|n| n.contains("carries no run description")
            && n.contains("name, command, target, warmup window, end, processes and counters are not known")),
        "{notes:?}"
    );
    assert!(run.processes.is_empty());
    assert_eq!(run.meta.name, "trace.json");
}
