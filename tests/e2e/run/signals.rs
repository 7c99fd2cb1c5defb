//! Signals to framelab itself: the report says which one stopped the run, and a run framelab
//! never finalised (kill -9) says "unfinished" in its header.

use crate::common;
use crate::common::session as session_common;

use common::*;
use framelab::model::EndReason;
use session_common::wait_for;

/// Starts `framelab run -o PATH -- testprog forever` and waits until spans are on disk.
fn recording(path: &std::path::Path) -> std::process::Child {
    let child = framelab()
        .args(["run", "--grace", "5s", "-o"])
        .arg(path)
        .args(["--", &example("testprog"), "forever"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("spans on disk", || {
        path.exists() && framelab::store::load_run(path, None).is_ok_and(|r| !r.spans.is_empty())
    });
    child
}

#[test]
fn the_report_names_the_signal_that_interrupted_framelab() {
    let dir = tempfile::tempdir().unwrap();
    for (signal, by) in [
        (libc::SIGTERM, "Interrupted by SIGTERM to framelab"),
        (libc::SIGHUP, "Interrupted by SIGHUP to framelab"),
        (libc::SIGINT, "Interrupted by Ctrl-C (SIGINT)"),
    ] {
        let path = dir.path().join(format!("signal-{signal}.framelab"));
        let child = recording(&path);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
        let report = stdout(&out);
        assert!(report.contains(by), "signal {signal}: {report}");
        assert!(
            !report.contains("Ctrl-C") || signal == libc::SIGINT,
            "{report}"
        );
        let run = load(&path);
        assert_eq!(run.meta.end_reason, EndReason::Interrupted);
        assert_eq!(run.meta.session.interrupt_signal, Some(signal));
        // And `report FILE` reads the same from the file.
        let again = common::run(&["report", path.to_str().unwrap()]);
        assert!(stdout(&again).contains(by), "{}", stdout(&again));
    }
}

#[test]
fn a_run_whose_framelab_was_killed_says_unfinished_in_its_header() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.framelab");
    let mut child = recording(&path);
    child.kill().unwrap(); // SIGKILL: nothing finalises the run
    child.wait().unwrap();
    let run = load(&path);
    assert_eq!(run.meta.end_reason, EndReason::Unfinished);
    assert!(!run.spans.is_empty());

    let out = common::run(&["report", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let header = text.lines().next().unwrap();
    assert!(header.ends_with("· unfinished"), "{text}");
    assert!(
        text.contains("The run is unfinished") || text.contains("not finalised"),
        "{text}"
    );
    let md = common::run(&["report", path.to_str().unwrap(), "--format", "markdown"]);
    assert!(
        stdout(&md).lines().next().unwrap().contains("unfinished"),
        "{}",
        stdout(&md)
    );
}
