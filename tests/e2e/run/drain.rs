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
