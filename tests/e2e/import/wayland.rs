//! `framelab import` on WAYLAND_DEBUG logs written by real weston clients and by weston
//! itself (tests/fixtures/import/SOURCES.md), and on small hand-written ones.

use super::{fixture, stage_count};
use crate::common;

use common::{error_line, framelab, load, stderr, stdout};

/// Imports `files` with `args`, expecting success; the run and what was printed.
fn import_ok(files: &[&str], args: &[&str]) -> (framelab::model::Run, String) {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("imported.framelab");
    let out = framelab()
        .arg("import")
        .args(files.iter().map(|f| fixture(f)))
        .args(args)
        .arg("-o")
        .arg(&out_path)
        .output()
        .unwrap();
    let printed = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{printed}");
    (load(&out_path), printed)
}

#[test]
fn real_client_logs_of_both_libwayland_formats_are_detected_and_imported() {
    // libwayland 1.21: `[ 871084.670]  -> wl_surface@3.commit()`.
    let (run, printed) = import_ok(&["wayland-1.21-simple-shm-client.log.gz"], &[]);
    assert_eq!(run.import.as_ref().unwrap().format, "wayland");
    assert_eq!(stage_count(&run, "commit→release"), 118);
    assert_eq!(stage_count(&run, "frame callback"), 118);
    assert_eq!(run.threads[0].name, "client");
    assert!(printed.contains("1 committed buffer was not released before the log ended"));

    // libwayland 1.23: `[1088366.917] {Default Queue}  -> wl_surface#3.commit()`.
    let (run, printed) = import_ok(&["wayland-1.23-presentation-shm-client.log.gz"], &[]);
    assert_eq!(stage_count(&run, "commit→release"), 63);
    assert_eq!(stage_count(&run, "presentation"), 62);
    assert!(
        printed.contains("3 messages were marked discarded by libwayland"),
        "{printed}"
    );
}

#[test]
fn a_server_log_is_imported_on_the_server_thread_and_its_mixed_clients_noted() {
    let (run, printed) = import_ok(&["wayland-1.21-weston-server.log.gz"], &[]);
    assert_eq!(run.threads.len(), 1);
    assert_eq!(run.threads[0].name, "server");
    // Four presentation-shm and simple-shm sessions, plus weston's own clients.
    assert_eq!(stage_count(&run, "presentation"), 177);
    assert!(
        printed.contains("32 lines were not WAYLAND_DEBUG messages"),
        "{printed}"
    );
    assert!(
        printed.contains("created with an id still in use"),
        "{printed}"
    );
}

#[test]
fn wraparound_and_generic_pairing_through_the_binary() {
    let (run, _) = import_ok(
        &["wayland-wraparound.log"],
        &["--format", "wayland", "--pair", "commit:release"],
    );
    let durations = |stage: &str| -> Vec<i64> {
        let id = run.stages.iter().position(|s| s == stage).unwrap();
        (run.spans.iter())
            .filter(|s| usize::from(s.stage) == id)
            .map(|s| s.dur_ns)
            .collect()
    };
    assert_eq!(durations("commit→release"), [19_296_000, 17_250_000]);
    assert_eq!(durations("commit:release"), [19_296_000, 17_250_000]);
}

#[test]
fn a_malformed_line_fails_with_its_line_number_and_skip_bad_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = fixture("wayland-malformed.log");
    let out = framelab()
        .arg("import")
        .arg(&file)
        .arg("-o")
        .arg(dir.path().join("x.framelab"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let line = error_line(&out);
    assert!(
        line.starts_with(&format!(
            "error: {}:5: not a WAYLAND_DEBUG message (no object id after the '@')",
            file.display()
        )),
        "{line}"
    );
    assert!(!stderr(&out).contains("panicked") && !stderr(&out).contains("backtrace"));
    assert!(!dir.path().join("x.framelab").exists());

    let (run, printed) = import_ok(&["wayland-malformed.log"], &["--skip-bad"]);
    assert_eq!(run.import.as_ref().unwrap().skipped, 2);
    assert!(printed.contains("skipped 2 bad records"), "{printed}");
    assert_eq!(stage_count(&run, "commit→release"), 1);
}

#[test]
fn garbage_bytes_and_id_reuse_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = framelab()
        .args(["import", "--format", "wayland"])
        .arg(fixture("wayland-garbage-bytes.log"))
        .arg("-o")
        .arg(dir.path().join("g.framelab"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(error_line(&out).contains(":6: not a WAYLAND_DEBUG message"));

    let (run, _) = import_ok(&["wayland-garbage-bytes.log"], &["--skip-bad"]);
    assert_eq!(stage_count(&run, "commit→release"), 1);

    let (run, printed) = import_ok(&["wayland-id-reuse.log"], &[]);
    assert_eq!(stage_count(&run, "commit→release"), 1);
    assert_eq!(stage_count(&run, "frame callback"), 2);
    assert!(
        printed.contains("1 committed buffer was destroyed"),
        "{printed}"
    );
}

#[test]
fn a_file_with_no_message_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-wayland.log");
    std::fs::write(&file, "hello\n[1.0] world\n").unwrap();
    let out = framelab()
        .args(["import", "--format", "wayland"])
        .arg(&file)
        .arg("-o")
        .arg(dir.path().join("x.framelab"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(error_line(&out).contains("no WAYLAND_DEBUG message in the file"));
}

/// A frame's protocol spans overlap by nature (commit→release runs into the presentation):
/// the report shows no wait table of overlaps and no "out of start order" note for them.
/// Two logs compared name their source files where a command line would be, and the
/// stage means and counts are metrics (`commit->release.mean`).
#[test]
fn protocol_spans_print_no_overlaps_and_compare_names_the_logs() {
    let (_, printed) = import_ok(&["wayland-1.23-presentation-shm-client.log.gz"], &[]);
    assert!(!printed.contains("overlaps"), "{printed}");
    assert!(!printed.contains("out of start order"), "{printed}");
    assert!(!printed.contains("frame waits"), "{printed}");
    let (_, printed) = import_ok(&["wayland-1.23-weston-server.log.gz"], &[]);
    assert!(!printed.contains("overlaps"), "{printed}");

    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, log) in [
        ("before", "wayland-1.21-simple-shm-client.log.gz"),
        ("after", "wayland-1.23-simple-shm-client.log.gz"),
    ] {
        let path = dir.path().join(format!("{name}.framelab"));
        let out = framelab()
            .arg("import")
            .arg(fixture(log))
            .arg("-o")
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        files.push((path, log));
    }
    let out = framelab()
        .arg("compare")
        .args(files.iter().map(|(p, _)| p))
        .args(["--show", "fps,commit->release.mean,commit→release.count"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for (name, log) in [("before", files[0].1), ("after", files[1].1)] {
        let line = format!(
            "  {name}: imported from {} (wayland)",
            fixture(log).display()
        );
        assert!(text.contains(&line), "{line}: {text}");
    }
    let count = text
        .lines()
        .find(|l| l.trim_start().starts_with("commit→release count"))
        .unwrap_or_else(|| panic!("{text}"));
    // 118 commit→release spans in the 1.21 log (as counted above); all in the window.
    assert!(count.contains(" 118 "), "{count}");
}
