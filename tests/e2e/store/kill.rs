//! `kill -9` of a recording process loses at most what it had not committed, and leaves
//! a file that loads. The child is this test binary, re-run in a child-only mode.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use framelab::model::*;
use framelab::store::{load_run, RunWriter};

const CHILD_ENV: &str = "FRAMELAB_STORE_KILL_CHILD";
const BATCH: u64 = 10_000;
const COMMITTED_BATCHES: u64 = 3;

fn spans(from: u64, count: u64) -> Vec<Span> {
    (from..from + count)
        .map(|i| Span {
            frame: i / 5,
            stage: (i % 5) as u16,
            thread: 0,
            start_ns: i as i64 * 6_000,
            dur_ns: 1_000 + (i as i64 % 997) * 10,
        })
        .collect()
}

/// In the child: records, commits some batches, writes one more without committing,
/// says so on stdout, then waits to be killed.
#[test]
fn child_writer_entry() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return; // an ordinary test run: nothing to do
    };
    let meta = RunMeta {
        name: "killed".into(),
        ..RunMeta::default()
    };
    let mut w = RunWriter::create(path.as_ref(), &meta).unwrap();
    for s in ["a", "b", "c", "d", "e"] {
        w.add_stage(s).unwrap();
    }
    w.add_thread(&ThreadInfo::default()).unwrap();
    w.commit().unwrap();
    for b in 0..COMMITTED_BATCHES {
        w.spans(&spans(b * BATCH, BATCH)).unwrap();
        w.commit().unwrap();
    }
    w.spans(&spans(COMMITTED_BATCHES * BATCH, BATCH)).unwrap();
    // The test harness captures stdout: report through a file, renamed into place whole.
    let marker = format!("{path}.committed");
    std::fs::write(
        format!("{marker}.tmp"),
        (COMMITTED_BATCHES * BATCH).to_string(),
    )
    .unwrap();
    std::fs::rename(format!("{marker}.tmp"), marker).unwrap();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

#[test]
fn a_killed_recording_keeps_every_committed_span_and_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.framelab");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &child_writer_test(), "--test-threads=1"])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let marker = dir.path().join("killed.framelab.committed");
    let deadline = Instant::now() + Duration::from_secs(120);
    let committed: u64 = loop {
        if let Ok(text) = std::fs::read_to_string(&marker) {
            break text.parse().unwrap();
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the child writer ended early: {status}");
        }
        assert!(Instant::now() < deadline, "the child writer never reported");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(!status.success());

    // The main file alone, as a user copying only it would have it: a readable file,
    // without the spans still in the write-ahead log.
    let alone = dir.path().join("main-only.framelab");
    std::fs::copy(&path, &alone).unwrap();
    let partial = load_run(&alone, None).expect("the main file alone loads");
    assert_eq!(partial.meta.name, "killed");
    assert!(partial.spans.len() as u64 <= committed);

    // With its write-ahead log next to it: every committed span, none of the rest.
    let run = load_run(&path, None).expect("the killed run loads");
    assert_eq!(run.meta.end_reason, EndReason::Unfinished);
    assert_eq!(run.spans.len() as u64, committed);
    assert_eq!(run.spans, spans(0, committed));
    assert_eq!(run.stages.len(), 5);

    // And plain SQLite sees the same.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM spans", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n as u64, committed);
}

/// The child's test by its whole name in this test program (`store::kill::child_writer_entry`).
fn child_writer_test() -> String {
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    format!("{module}::child_writer_entry")
}
