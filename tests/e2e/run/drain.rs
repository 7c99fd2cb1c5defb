//! How often the collector looks: rings found when their thread makes them (inotify on the
//! session directory, not a listing every 20 ms), and a drain tick that lengthens while the
//! rings are quiet yet loses nothing when a burst follows.

use crate::common::*;

#[test]
fn a_ring_made_by_a_thread_started_late_is_found_and_drained_while_it_fills() {
    // Nothing is recorded for 2 s, then one thread records 100,000 spans a second for 2 s
    // into a default ring (65,536 records: 0.65 s of them). Lossless only if its ring is
    // found within a fraction of a second of being made, not at the next safety listing
    // (1 s) nor at the end of the run.
    let (_, run) = record_testprog(&[], &["late-thread", "2000"]);
    assert_eq!(run.meta.dropped_events, 0, "nothing dropped");
    assert_eq!(run.spans.len(), 200_000, "every span of the late thread");
    assert_eq!(run.threads.len(), 1);
    assert_eq!(run.threads[0].name, "late");
    let first_ns = run.spans.iter().map(|s| s.start_ns).min().unwrap();
    assert!(
        first_ns >= 2_000_000_000,
        "the ring was made 2 s in: {first_ns} ns"
    );
}

#[test]
fn a_burst_after_a_quiet_second_drops_nothing() {
    // 40,000 spans, a quiet second (the drain tick grows to its longest), then 40,000 more
    // as fast as the program can: all within one default ring, and all kept, the second
    // burst's too (drained, held until the commit, written at the end).
    let (_, run) = record_testprog(&[], &["burst", "1000", "40000"]);
    assert_eq!(run.meta.dropped_events, 0, "nothing dropped");
    assert_eq!(run.spans.len(), 80_000, "both bursts, every span");
    let mut frames: Vec<u64> = run.spans.iter().map(|s| s.frame).collect();
    frames.sort_unstable();
    frames.dedup();
    assert_eq!(frames.len(), 80_000, "each frame once");
    assert_eq!(frames.last(), Some(&79_999));
}

/// framelab's main thread (the drain loop's) voluntary context switches, as the command
/// reads them from its parent at its start and 2 s later: how often the collector slept.
fn collector_sleeps_over_2_s(framelab_args: &[&str]) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let counts = dir.path().join("counts");
    let script = format!(
        "grep voluntary_ctxt_switches /proc/$PPID/status | head -1 > {0}; sleep 2; \
         grep voluntary_ctxt_switches /proc/$PPID/status | head -1 >> {0}; cat /proc/$PPID/comm >> {0}",
        counts.display()
    );
    let out = framelab()
        .arg("run")
        .args(framelab_args)
        .args(["-o", "/dev/null", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&counts).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.get(2).copied(), Some("framelab"), "{text}");
    let count = |line: &str| -> u64 { line.split_whitespace().nth(1).unwrap().parse().unwrap() };
    (count(lines[0]), count(lines[1]))
}

#[test]
fn an_idle_collector_sleeps_until_the_next_commit_not_every_tick() {
    // Nothing records and the processes are read every second: the drain loop wakes for
    // the commits (every 500 ms) and readings, about 5 times in 2 s. A collector that ticks
    // every 20 ms slept ~100 times.
    let (before, after) = collector_sleeps_over_2_s(&["--sample-every", "1s"]);
    let slept = after - before;
    assert!(
        slept < 30,
        "the collector woke {slept} times in 2 s of an idle run"
    );
}

#[test]
fn a_thread_filling_its_ring_faster_than_the_collector_sleeps_wakes_it() {
    // After a quiet 2 s, a thread records 100,000 spans a second for 2 s into a ring of
    // 32,768 records: full in 0.33 s, less than the collector's longest sleep here (the
    // 500 ms commit; the processes are read every 5 s). Lossless only because the thread
    // wakes the collector when its ring passes a quarter full.
    let (_, run) = record_testprog(
        &["--sample-every", "5s", "--ring-records", "32768"],
        &["late-thread", "2000"],
    );
    assert_eq!(run.meta.dropped_events, 0, "nothing dropped");
    assert_eq!(run.spans.len(), 200_000, "every span of the late thread");
}

#[test]
fn rings_of_an_sdk_that_wakes_nobody_are_drained_on_the_tick() {
    // The same load from a program whose SDK predates the wakeup word: its ring says it
    // wakes nobody, so the collector drains on its tick (at most 20 ms) instead of sleeping
    // until the commit, and loses nothing.
    let (out, run) = record_testprog(
        &["--sample-every", "5s", "--ring-records", "32768"],
        &["old-sdk", "100000", "2"],
    );
    assert_eq!(
        run.meta.dropped_events,
        0,
        "nothing dropped: {}",
        stderr(&out)
    );
    assert_eq!(run.spans.len(), 200_000, "every span");
}
