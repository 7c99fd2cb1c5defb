//! The rings in shared memory against a hostile world: shared memory that runs out (the SDK
//! must not kill the program), and a program that damages its own rings (the collector must
//! not crash, nor believe what it reads).

use crate::common;
use crate::common::session as session_common;

use common::*;
use session_common::{session_dirs, Tmpfs};

#[test]
fn threads_that_find_shared_memory_full_run_unrecorded_and_are_counted() {
    let test = "threads_that_find_shared_memory_full_run_unrecorded_and_are_counted";
    // 1 MiB holds 28 rings of 1024 records (32 KiB each): 40 threads cannot all have one.
    // Each thread writes more records than its ring holds, so each touches every page of it:
    // rings sized but not given memory would fault (SIGBUS) once /dev/shm is full.
    let Some(shm) = Tmpfs::mount(test, "1m") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("full-shm.framelab");
    let out = framelab()
        .env("FRAMELAB_SHM_DIR", shm.path())
        .args(["run", "--ring-records", "1024", "-o"])
        .arg(&path)
        .args(["--", &example("testprog"), "many-threads", "40", "1100"])
        .output()
        .unwrap();
    // The program was not killed (SIGBUS on its first record into an unbacked page).
    assert!(out.status.success(), "{}", stderr(&out));
    let recorded: u64 = stdout(&out).lines().next().unwrap().trim().parse().unwrap();
    let run = load(&path);
    let unrecorded = run.meta.session.unrecorded();
    assert!(recorded > 0 && unrecorded > 0, "{recorded} {unrecorded}");
    assert_eq!(
        recorded + unrecorded,
        40,
        "every thread is either recorded or counted"
    );
    assert_eq!(run.threads.len() as u64, recorded);
    assert_eq!(
        run.spans.len() as u64 + run.meta.dropped_events,
        1100 * recorded,
        "every record of a recording thread is kept or counted"
    );
    assert!(run.meta.session.shm_full());
    let report = stdout(&out);
    assert!(
        report.contains(&format!(
            "{unrecorded} threads ran unrecorded: the shared memory"
        )),
        "{report}"
    );
    assert!(!report.contains("Rerun with a larger ring"), "{report}");
    assert!(
        stderr(&out).contains(&format!("{unrecorded} threads ran unrecorded")),
        "{}",
        stderr(&out)
    );
    // Nothing left behind in the full shared memory.
    assert!(session_dirs(shm.path()).is_empty());
}

/// `framelab run -- testprog MODE 200` with sessions in a private directory.
fn damaged(
    mode: &str,
) -> (
    std::process::Output,
    framelab::model::Run,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let shm = dir.path().join("shm");
    std::fs::create_dir(&shm).unwrap();
    let path = dir.path().join(format!("{mode}.framelab"));
    let out = framelab()
        .env("FRAMELAB_SHM_DIR", &shm)
        .args(["run", "-o"])
        .arg(&path)
        .args(["--", &example("testprog"), mode, "200"])
        .output()
        .unwrap();
    let run = load(&path);
    assert!(session_dirs(&shm).is_empty(), "the session is cleaned up");
    (out, run, dir)
}

/// `what`: any of these describes the damage (which one depends on how far the collector
/// had read when the program struck).
fn assert_damage_reported(mode: &str, what: &[&str]) {
    let (out, run, _dir) = damaged(mode);
    // framelab finished (no SIGBUS), reported, and says the recording is incomplete.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let facts = &run.meta.session;
    assert_eq!(facts.corrupt_rings, 1, "{facts:?}");
    let detail = &facts.corrupt_ring_details[0];
    assert!(what.iter().any(|w| detail.contains(w)), "{facts:?}");
    // The other thread's spans are all there; the victim's up to the damage (none, and
    // its stage unnamed, when the program struck before the collector first read it).
    let count = |name: &str| match run.stages.iter().position(|s| s == name) {
        Some(stage) => (run.spans.iter())
            .filter(|x| usize::from(x.stage) == stage)
            .count(),
        None => 0,
    };
    assert_eq!(count("m"), 200);
    assert!(count("v") <= 200);
    // Nothing the program wrote over the header became a count.
    assert_eq!(run.meta.dropped_events, 0);
    assert_eq!(run.meta.invalid_records, 0);
    let report = stdout(&out);
    assert!(
        report.contains("1 ring was damaged by the program"),
        "{report}"
    );
    assert!(stderr(&out).contains("victim"), "{}", stderr(&out));
}

#[test]
fn a_program_that_truncates_its_ring_cannot_crash_the_collector() {
    assert_damage_reported("truncate-ring", &["its file was cut"]);
}

#[test]
fn a_program_that_scribbles_on_its_ring_header_cannot_fool_the_collector() {
    assert_damage_reported(
        "scribble-ring",
        &[
            "its head went back",
            "its drop count went from 0 to 18446744073709551615",
        ],
    );
}

/// A ring made by a framelab-probe of another wire version cannot be read: its records are
/// lost, and the run must count it and say so, not only warn on stderr.
#[test]
fn a_ring_this_framelab_cannot_read_is_counted_and_said() {
    use framelab_probe::wire;
    let dir = tempfile::tempdir().unwrap();
    let capacity = 1024u64;
    let mut ring = vec![0u8; wire::ring_file_bytes(capacity)];
    ring[..8].copy_from_slice(&wire::RING_MAGIC.to_ne_bytes());
    ring[8..12].copy_from_slice(&(wire::WIRE_VERSION + 1).to_ne_bytes());
    ring[24..32].copy_from_slice(&capacity.to_ne_bytes());
    let made = dir.path().join("ring");
    std::fs::write(&made, &ring).unwrap();
    let path = dir.path().join("foreign.framelab");
    let out = framelab()
        .args(["run", "-o"])
        .arg(&path)
        .args(["--", "sh", "-c", "cp \"$0\" \"$FRAMELAB_SESSION/r-77-77\""])
        .arg(&made)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "incomplete: {}", stderr(&out));
    let facts = load(&path).meta.session;
    assert_eq!(facts.foreign_rings, 1, "{facts:?}");
    assert!(
        facts.foreign_ring_details[0].contains(&format!("version {}", wire::WIRE_VERSION + 1)),
        "{facts:?}"
    );
    assert!(
        stdout(&out).contains("1 ring was not read (first: ring "),
        "{}",
        stdout(&out)
    );
}
