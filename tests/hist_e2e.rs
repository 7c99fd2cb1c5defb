//! `framelab hist` and `framelab run --live` through the binary, on recorded runs.

mod common;

use common::{error_line, framelab, run_testprog, stderr, stdout};

/// Sum of the counts of bpftrace-style bucket lines (`[lo, hi)   N |@@@|`).
fn bucket_total(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.starts_with('[') || l.starts_with('('))
        .filter_map(|l| {
            l.split('|')
                .next()?
                .split_whitespace()
                .last()?
                .parse::<u64>()
                .ok()
        })
        .sum()
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

    let linear = framelab()
        .args(["hist"])
        .arg(&path)
        .args(["--stage", "a", "--linear", "50us"])
        .output()
        .unwrap();
    let text = stdout(&linear);
    assert!(
        text.starts_with("@a (µs, 50 µs buckets): count 120  min "),
        "{text}"
    );
    assert_eq!(bucket_total(&text), 120, "{text}");

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
    assert_eq!(out.status.code(), Some(1));
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
}

#[test]
fn live_prints_each_interval_while_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(
        &dir,
        "live",
        &["--live", "1s", "--duration", "3500ms"],
        &["forever"],
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
