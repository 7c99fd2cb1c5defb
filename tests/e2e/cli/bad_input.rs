//! Bad input: one clear line, a non-zero exit, no panic.

use crate::common;

use common::*;
use std::path::Path;

fn assert_one_clear_line(args: &[&str], code: i32, needle: &str) {
    let out = run(args);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains(needle),
        "{args:?}: expected '{needle}' in: {text}"
    );
    assert!(!text.contains("panicked"), "{text}");
}

#[test]
fn a_missing_or_unrunnable_command() {
    // In a directory of its own: the checkout may hold run files of the user's (the demo's).
    let dir = tempfile::tempdir().unwrap();
    let out = framelab()
        .current_dir(dir.path())
        .args(["run", "--", "definitely-not-a-command-xyz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(error_line(&out).contains("command not found"));

    let run_script = |script: &Path| {
        framelab()
            .current_dir(dir.path())
            .args(["run", "--"])
            .arg(script)
            .output()
            .unwrap()
    };
    let script = dir.path().join("not-executable.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let out = run_script(&script);
    assert_eq!(out.status.code(), Some(1));
    assert!(error_line(&out).contains("not executable"));

    // It exists and is executable, but its interpreter does not: said, not "not found".
    let script = dir.path().join("no-interpreter.py");
    std::fs::write(&script, "#!/no/such/python3 -u\nprint(1)\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = run_script(&script);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains("names the interpreter '/no/such/python3'") && !line.contains("not found"),
        "{line}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e
                .as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "framelab"))
            .count(),
        0,
        "no run file is left behind"
    );
}

#[test]
fn bad_frame_rates_and_durations() {
    assert_one_clear_line(&["run", "--fps", "0", "--", "true"], 2, "positive number");
    assert_one_clear_line(&["run", "--fps", "-5", "--", "true"], 2, "--fps");
    assert_one_clear_line(
        &["run", "--fps", "abc", "--", "true"],
        2,
        "not a frame rate",
    );
    assert_one_clear_line(
        &["run", "--duration", "soon", "--", "true"],
        2,
        "not a duration",
    );
    assert_one_clear_line(&["run", "--duration", "5", "--", "true"], 2, "no unit");
    // Options that contradict each other are usage errors too.
    assert_one_clear_line(
        &["run", "--warmup", "2s", "--duration", "1s", "--", "true"],
        2,
        "--warmup",
    );
    assert_one_clear_line(
        &["run", "--warmup", "1s", "--duration", "1s", "--", "true"],
        2,
        "shorter than --duration",
    );
    assert_one_clear_line(&["demo", "--fps", "0"], 2, "positive number");
}

#[test]
fn an_unwritable_output_path() {
    let out = run(&["run", "-o", "/nonexistent-dir/x/run.framelab", "--", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(error_line(&out).contains("/nonexistent-dir/x/run.framelab"));
}

#[test]
fn a_watched_pid_that_does_not_exist() {
    // Below pid_max (a larger one is a usage error), and not running.
    let pid_max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let pid = (2..pid_max)
        .rev()
        .find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        .unwrap()
        .to_string();
    assert_one_clear_line(
        &["run", "--watch-pid", &pid, "--", "true"],
        1,
        "no such process",
    );
    assert_one_clear_line(
        &["run", "--watch-pid", "999999999", "--", "true"],
        2,
        "pid_max",
    );
}

#[test]
fn reports_of_files_that_are_not_run_files() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.framelab");
    let out = framelab().arg("report").arg(&missing).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    error_line(&out);

    let text = dir.path().join("notes.framelab");
    std::fs::write(&text, "this is not a database\n".repeat(100)).unwrap();
    let out = framelab().arg("report").arg(&text).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    error_line(&out);

    let empty = dir.path().join("empty.framelab");
    std::fs::write(&empty, "").unwrap();
    let out = framelab().arg("report").arg(&empty).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    error_line(&out);
}

#[test]
fn a_truncated_run_file() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(&dir, "whole", &[], &["spans", "300"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let bytes = std::fs::read(&path).unwrap();
    let cut = dir.path().join("cut.framelab");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let out = framelab().arg("report").arg(&cut).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    error_line(&out);
}

/// `framelab report RUN | head`: the reader goes away and framelab ends quietly, with no
/// panic (`print!` panicked on the closed pipe).
#[test]
fn a_reader_that_goes_away_is_not_a_panic() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let dir = tempfile::tempdir().unwrap();
    let file = temp_run(&dir, "run");
    let out = framelab()
        .args(["run", "-o"])
        .arg(&file)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // The read end closed before framelab writes: every write meets a closed pipe.
    drop(unsafe { OwnedFd::from_raw_fd(fds[0]) });
    let write_end = unsafe { OwnedFd::from_raw_fd(fds[1]) };
    for format in ["text", "json", "html"] {
        let out = framelab()
            .args(["report", "--format", format])
            .arg(&file)
            .stdout(write_end.try_clone().unwrap())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{format}: {err}");
        assert_eq!(out.status.code(), Some(0), "{format}: {err}");
    }
    // Exports to standard output too (CSV said "error: Broken pipe" through its writer), of
    // a run with spans.
    let demo = temp_run(&dir, "demo");
    let out = framelab()
        .args(["demo", "--duration", "300ms", "-o"])
        .arg(&demo)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    for format in ["csv", "chrome", "perfetto"] {
        let out = framelab()
            .args(["export", "--format", format, "-o", "-"])
            .arg(&demo)
            .stdout(write_end.try_clone().unwrap())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!((out.status.code(), err.as_str()), (Some(0), ""), "{format}");
    }
}

/// README, "Limits": a value outside a flag's bounds is a usage error (exit 2) whose line
/// names the limit. These four were checked after parsing (exit 1), and `bench -n 10001`
/// named a least of 1 that `-n 1` then refused.
#[test]
fn out_of_range_numbers_are_usage_errors_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none.framelab");
    let none = none.to_str().unwrap();
    let b = dir.path().join("b.framelab");
    let b = b.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["demo", "--fps", "0.01", "-o", "/dev/null"],
            "at least one frame a minute (0.0167 fps)",
        ),
        (
            vec!["demo", "--depth", "3", "-o", "/dev/null"],
            "outside 1 to 2",
        ),
        (
            vec!["demo", "--depth", "0", "-o", "/dev/null"],
            "outside 1 to 2",
        ),
        (
            vec!["bench", "-n", "1", "-o", b, "--", "true"],
            "outside 2 to 10000",
        ),
        (
            vec!["bench", "-n", "10001", "-o", b, "--", "true"],
            "outside 2 to 10000",
        ),
        (
            vec!["hist", none, "--buckets", "0"],
            "give 1 to 10000 buckets",
        ),
        (
            vec!["hist", none, "--buckets", "10001"],
            "give 1 to 10000 buckets",
        ),
    ] {
        assert_one_clear_line(&args, 2, needle);
    }
    assert!(!Path::new(b).exists());
}
