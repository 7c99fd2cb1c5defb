//! Bad input to bench and compare: one clear line, a non-zero exit, no panic.

use crate::common;

use common::*;
use std::path::Path;

fn refused(args: &[&str], needle: &str) -> String {
    let out = run(args);
    assert_ne!(out.status.code(), Some(0), "{args:?}");
    let text = stderr(&out);
    assert!(!text.contains("panicked"), "{text}");
    let line = error_line(&out);
    assert!(
        line.contains(needle),
        "{args:?}: expected '{needle}' in: {line}"
    );
    line
}

fn testprog(args: &str) -> String {
    format!("{} {args}", example("testprog"))
}

/// Experiment files with the default name in the current directory.
fn bench_files() -> usize {
    std::fs::read_dir(".")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("bench-"))
        .count()
}

#[test]
fn bench_refuses_what_cannot_be_run() {
    let before = bench_files();
    let a = format!("a={}", testprog("work 10 10"));
    let b = format!("b={}", testprog("work 10 10"));
    refused(
        &["bench", "-n", "1", "--variant", &a, "--variant", &b],
        "at least 2 runs",
    );
    refused(&["bench", "--variant", &a], "-n RUNS is required");
    refused(
        &["bench", "-n", "3", "--variant", &a, "--variant", &a],
        "used twice",
    );
    let with_key = format!("a={}", testprog("work 10 {us}"));
    refused(
        &["bench", "-n", "3", "--variant", &with_key],
        "no --param us",
    );
    refused(
        &["bench", "-n", "3", "--param", "us=", "--variant", &with_key],
        "has no values",
    );
    refused(
        &[
            "bench",
            "-n",
            "3",
            "--variant",
            "x=definitely-not-a-command-xyz",
        ],
        "command not found",
    );
    refused(
        &["bench", "-n", "3", "--variant", "noequals"],
        "NAME=COMMAND",
    );
    refused(
        &["bench", "-n", "3", "--variant", &a, "--", "true"],
        "not both",
    );
    refused(&["bench", "-n", "3"], "nothing to run");
    refused(
        &["bench", "-n", "3", "--pin", "99999", "--variant", &a],
        "not available",
    );
    refused(
        &["bench", "--resume", "-o", "/nonexistent/x.framelab"],
        "nothing to resume",
    );
    // Nothing was left behind by the refusals.
    assert_eq!(bench_files(), before, "a refused bench left a file behind");
}

fn record_testprog(file: &Path, mode: &[&str], runs: usize) {
    for _ in 0..runs {
        let out = framelab()
            .args(["run", "-o"])
            .arg(file)
            .arg("--")
            .arg(example("testprog"))
            .args(mode)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

#[test]
fn compare_refuses_ambiguous_or_thin_input() {
    let dir = tempfile::tempdir().unwrap();
    let mixed = dir.path().join("mixed.framelab");
    record_testprog(&mixed, &["work", "30", "100"], 2);
    record_testprog(&mixed, &["work", "30", "200"], 2);
    let m = mixed.to_str().unwrap();
    refused(&["compare", m], "different commands");
    // Named, the same runs compare fine.
    let named = run(&[
        "compare",
        "--variant",
        &format!("a={m}:1,2"),
        "--variant",
        &format!("b={m}:3,4"),
    ]);
    assert!(named.status.success(), "{}", stderr(&named));
    assert!(stdout(&named).contains("b vs a"));

    let one = dir.path().join("one.framelab");
    record_testprog(&one, &["work", "30", "100"], 1);
    let o = one.to_str().unwrap();
    refused(&["compare", o], "only one variant");
    let single = dir.path().join("single.framelab");
    record_testprog(&single, &["work", "30", "100"], 2);
    let s = single.to_str().unwrap();
    // One run against two: side by side, no interval or verdict (exit 0).
    let thin = run(&["compare", o, s]);
    assert!(thin.status.success(), "{}", stderr(&thin));
    assert!(
        stdout(&thin).contains("one has a single measured run"),
        "{}",
        stdout(&thin)
    );
    refused(&["compare", s, m, "--metric", "nope"], "different commands");
    let two = dir.path().join("two.framelab");
    record_testprog(&two, &["work", "30", "150"], 2);
    let t = two.to_str().unwrap();
    let line = refused(&["compare", s, t, "--show", "nope"], "no metric 'nope'");
    assert!(line.contains("work.p99") && line.contains("fps"), "{line}");
    refused(&["compare", s, t, "--baseline", "zzz"], "no such variant");
    refused(&["compare", s, t, "--noise", "abc"], "not a percentage");
    refused(&["compare", &format!("{s}:9")], "has no run 9");
    refused(&["compare"], "nothing to compare");
    assert_eq!(run(&["compare"]).status.code(), Some(2), "a usage error");
    let ok = run(&["compare", s, t]);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

#[test]
fn compare_says_when_fingerprints_differ_and_refuses_newer_files() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (
        dir.path().join("monday.framelab"),
        dir.path().join("tuesday.framelab"),
    );
    record_testprog(&a, &["work", "30", "100"], 2);
    record_testprog(&b, &["work", "30", "100"], 2);
    // Tuesday's runs were made on another kernel.
    let conn = rusqlite::Connection::open(&b).unwrap();
    conn.execute("UPDATE runs SET host_kernel = '9.9.9-other'", [])
        .unwrap();
    drop(conn);
    let out = run(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("fingerprints differ in kernel"), "{text}");
    assert!(text.contains("9.9.9-other (tuesday ×2)"), "{text}");

    // A file from a newer framelab is refused before anything is read.
    let conn = rusqlite::Connection::open(&b).unwrap();
    let newer = framelab::store::SCHEMA_VERSION + 1;
    conn.execute_batch(&format!(
        "UPDATE framelab SET value = '{newer}' WHERE key = 'schema_version'; \
         PRAGMA user_version = {newer};"
    ))
    .unwrap();
    drop(conn);
    refused(
        &["compare", a.to_str().unwrap(), b.to_str().unwrap()],
        "newer framelab",
    );
}
