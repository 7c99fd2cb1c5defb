//! What the SDK writes into a session directory, read back from the files as the collector
//! reads them. Each scenario records in its own process (see common/mod.rs).

mod common;

use common::{
    assert_well_formed, fork_and_wait, fork_and_wait_or_kill, is_child, reported, run_child,
    Session,
};
use framelab_probe::wire::{kind, name_kind, CLOCK_MONO, CLOCK_TSC, MAX_NAMES};
use framelab_probe::{enabled, monotonic_ns, names_refused, Counter, Event, Laps, Queue, Stage};

#[test]
fn no_session_records_nothing_and_creates_nothing() {
    if is_child("no_session_records_nothing_and_creates_nothing") {
        assert!(!enabled());
        let stage = Stage::new("idle");
        assert_ne!(
            stage.id(),
            0,
            "ids work without a session, so code need not branch"
        );
        for frame in 0..10 {
            let _span = stage.span(frame);
            let mut laps = Laps::start(frame);
            laps.lap(stage);
            Counter::new("bytes").add(frame, 1);
            Event::new("commit").mark(frame);
            stage.record_ns(frame, 1, 2);
        }
        assert!(!enabled());
        return;
    }
    // No variable at all, and a variable naming a directory that does not exist: both off.
    let session = Session::new("nosession");
    run_child(
        "no_session_records_nothing_and_creates_nothing",
        &[],
        Some(&session.dir),
    );
    let missing = session.dir.join("missing");
    run_child(
        "no_session_records_nothing_and_creates_nothing",
        &[("FRAMELAB_SESSION", missing.to_str().unwrap())],
        Some(&session.dir),
    );
    assert!(!missing.exists());
    assert_eq!(session.file_names(), Vec::<String>::new());
}

#[test]
fn full_ring_keeps_the_oldest_and_counts_every_drop() {
    const TEST: &str = "full_ring_keeps_the_oldest_and_counts_every_drop";
    if is_child(TEST) {
        assert!(enabled());
        let stage = Stage::new("tick");
        for frame in 0..100 {
            let _span = stage.span(frame);
        }
        return;
    }
    let session = Session::new("full");
    session.run(TEST, &[("FRAMELAB_RING_RECORDS", "16")]);
    let rings = session.rings();
    assert_eq!(rings.len(), 1);
    let ring = &rings[0];
    assert_well_formed(ring);
    assert_eq!(ring.capacity, 16);
    assert_eq!((ring.head, ring.tail, ring.dropped), (16, 0, 84));
    let tick = session.id(ring.pid, name_kind::STAGE, "tick");
    let frames: Vec<u64> = ring.records.iter().map(|r| r.frame).collect();
    assert_eq!(
        frames,
        (0..16).collect::<Vec<_>>(),
        "the newest are dropped"
    );
    for (i, r) in ring.records.iter().enumerate() {
        assert_eq!((r.kind(), r.name(), r.is_lap()), (kind::SPAN, tick, false));
        assert!(r.a <= r.b, "span {i} ends before it starts");
        if i > 0 {
            assert!(
                r.a >= ring.records[i - 1].b,
                "span {i} starts before the previous ended"
            );
        }
    }
}

#[test]
fn ring_size_is_rounded_to_a_power_of_two_within_bounds() {
    const TEST: &str = "ring_size_is_rounded_to_a_power_of_two_within_bounds";
    if is_child(TEST) {
        let _span = Stage::new("x").span(0);
        return;
    }
    for (asked, got) in [("100", 128), ("1", 4), ("junk", 1 << 16)] {
        let session = Session::new("size");
        session.run(TEST, &[("FRAMELAB_RING_RECORDS", asked)]);
        assert_eq!(session.rings()[0].capacity, got, "asked {asked}");
    }
}

#[test]
fn laps_start_where_the_previous_lap_ended() {
    const TEST: &str = "laps_start_where_the_previous_lap_ended";
    if is_child(TEST) {
        let (a, b, c) = (Stage::new("a"), Stage::new("b"), Stage::new("c"));
        let mut laps = Laps::start(0);
        for frame in 0..50 {
            laps.next_frame(frame);
            laps.lap(a);
            laps.lap(b);
            laps.skip(); // a gap that is no stage: c starts later than b ended
            laps.lap(c);
        }
        return;
    }
    let session = Session::new("laps");
    session.run(TEST, &[]);
    let ring = &session.rings()[0];
    let id = |n| session.id(ring.pid, name_kind::STAGE, n);
    let (a, b, c) = (id("a"), id("b"), id("c"));
    assert_eq!(ring.records.len(), 150);
    assert_eq!(ring.dropped, 0);
    for (frame, laps) in ring.records.chunks(3).enumerate() {
        let names: Vec<u16> = laps.iter().map(|r| r.name()).collect();
        assert_eq!(names, [a, b, c]);
        assert!(laps.iter().all(|r| r.is_lap() && r.kind() == kind::SPAN));
        assert!(laps.iter().all(|r| r.frame == frame as u64 && r.a <= r.b));
        assert_eq!(laps[1].a, laps[0].b, "b starts exactly where a ended");
        assert!(laps[2].a >= laps[1].b, "c starts after the skipped gap");
        if frame > 0 {
            let previous_c = &ring.records[frame * 3 - 1];
            assert_eq!(
                laps[0].a, previous_c.b,
                "a frame's first lap starts at the last boundary"
            );
        }
    }
}

#[test]
fn counters_events_and_given_spans_keep_their_values() {
    const TEST: &str = "counters_events_and_given_spans_keep_their_values";
    if is_child(TEST) {
        let before = monotonic_ns();
        Counter::new("bytes").add(7, 1500);
        Counter::new("delta").add(7, -5);
        Event::new("commit").mark(42);
        Stage::new("gpu").record_ns(7, 1_000, 3_500);
        println!("before={before}");
        println!("after={}", monotonic_ns());
        return;
    }
    let session = Session::new("values");
    let out = session.run(TEST, &[("FRAMELAB_CLOCK", "mono")]);
    let ring = &session.rings()[0];
    assert_eq!(ring.clock, CLOCK_MONO);
    let id = |k, n| session.id(ring.pid, k, n);
    let r = &ring.records;
    assert_eq!(r.len(), 4);
    assert_eq!(
        (r[0].kind(), r[0].name(), r[0].frame, r[0].a),
        (kind::COUNTER, id('c', "bytes"), 7, 1500)
    );
    assert_eq!(
        (r[1].kind(), r[1].name(), r[1].a as i64),
        (kind::COUNTER, id('c', "delta"), -5)
    );
    assert_eq!(
        (r[2].kind(), r[2].name(), r[2].frame),
        (kind::EVENT, id('e', "commit"), 42)
    );
    let (before, after) = (reported(&out, "before"), reported(&out, "after"));
    assert!(
        (before..=after).contains(&r[2].a),
        "the event is stamped with CLOCK_MONOTONIC"
    );
    assert_eq!(
        (r[3].kind(), r[3].name(), r[3].frame),
        (kind::SPAN_NS, id('s', "gpu"), 7)
    );
    assert_eq!((r[3].a, r[3].b), (1_000, 3_500));
}

#[test]
fn names_file_lists_id_kind_and_name() {
    const TEST: &str = "names_file_lists_id_kind_and_name";
    if is_child(TEST) {
        let decode = Stage::new("decode");
        assert_eq!(Stage::new("decode"), decode, "interned once");
        let bytes = Counter::new("bytes");
        let commit = Event::new("commit");
        let odd = Stage::new("two\nlines and spaces");
        let same_name = Counter::new("decode"); // a counter is not the stage of that name
        assert_ne!(same_name.id(), decode.id());
        println!(
            "ids={} {} {} {} {}",
            decode.id(),
            bytes.id(),
            commit.id(),
            odd.id(),
            same_name.id()
        );
        return;
    }
    let session = Session::new("names");
    let out = session.run(TEST, &[]);
    let pid: u32 = session.file_names()[0]
        .strip_prefix("n-")
        .unwrap()
        .parse()
        .unwrap();
    let names = session.names(pid);
    let expected = [
        (1, 's', "decode"),
        (2, 'c', "bytes"),
        (3, 'e', "commit"),
        (4, 's', "two lines and spaces"),
        (5, 'c', "decode"),
    ];
    let names: Vec<(u16, char, &str)> =
        names.iter().map(|(i, k, n)| (*i, *k, n.as_str())).collect();
    assert_eq!(names, expected);
    assert!(out.contains("ids=1 2 3 4 5"), "{out}");
    assert!(
        session.rings().is_empty(),
        "interning alone creates no ring"
    );
}

#[test]
fn a_thread_that_exits_closes_its_ring() {
    const TEST: &str = "a_thread_that_exits_closes_its_ring";
    if is_child(TEST) {
        let stage = Stage::new("work");
        std::thread::Builder::new()
            .name("worker-7".into())
            .spawn(move || {
                for frame in 0..3 {
                    let _span = stage.span(frame);
                }
            })
            .unwrap()
            .join()
            .unwrap();
        let _span = stage.span(99); // this thread records into a ring of its own

        return;
    }
    let session = Session::new("closed");
    session.run(TEST, &[]);
    let rings = session.rings();
    assert_eq!(rings.len(), 2, "one ring per recording thread");
    let worker = rings
        .iter()
        .find(|r| r.thread_name == "worker-7")
        .expect("the named thread's ring");
    assert_well_formed(worker);
    assert_eq!(worker.closed, 1);
    assert_eq!(worker.records.len(), 3);
    assert!(rings
        .iter()
        .all(|r| r.pid == worker.pid && r.clock == CLOCK_TSC));
}

#[test]
fn a_forked_child_records_into_its_own_ring_and_names_file() {
    const TEST: &str = "a_forked_child_records_into_its_own_ring_and_names_file";
    if is_child(TEST) {
        let stage = Stage::new("parent-stage");
        let bytes = Counter::new("bytes");
        for frame in 0..5 {
            let _span = stage.span(frame);
        }
        let (child, status) = fork_and_wait(|| {
            assert_eq!(Stage::new("parent-stage"), stage, "names are inherited");
            let late = Stage::new("child-stage");
            for frame in 100..103 {
                let _span = stage.span(frame);
                let _inner = late.span(frame);
            }
            bytes.add(100, 9);
        });
        assert_eq!(status, 0, "the forked child failed");
        let _span = stage.span(5); // the parent goes on in its own ring
        println!("child={child}");
        return;
    }
    let session = Session::new("fork");
    let out = session.run(TEST, &[]);
    let child = reported(&out, "child") as u32;
    let rings = session.rings();
    assert_eq!(rings.len(), 2);
    let (parent, forked): (Vec<_>, Vec<_>) = rings.iter().partition(|r| r.pid != child);
    let (parent, forked) = (parent[0], forked[0]);
    assert_well_formed(parent);
    assert_well_formed(forked);
    assert_eq!((forked.pid, forked.tid), (child, child));
    assert_eq!(
        parent.records.len(),
        6,
        "the child wrote nothing into the parent's ring"
    );
    assert!(parent.records.iter().all(|r| r.frame <= 5));
    assert_eq!(forked.records.len(), 7);
    assert!(forked.records.iter().all(|r| r.frame >= 100));
    assert_eq!(forked.closed, 1, "the child's thread exited");

    let parent_names = session.names(parent.pid);
    let child_names = session.names(child);
    assert_eq!(parent_names.len(), 2);
    assert_eq!(
        child_names[..2],
        parent_names[..],
        "inherited names keep their ids"
    );
    assert_eq!(child_names[2], (3, 's', "child-stage".to_owned()));
    let p = session.id(child, 's', "parent-stage");
    let c = session.id(child, 's', "child-stage");
    assert_eq!(
        forked
            .count_by_name(kind::SPAN)
            .into_iter()
            .collect::<Vec<_>>(),
        [(p, 3), (c, 3)]
    );
}

#[test]
fn names_beyond_the_table_get_id_zero_and_are_reported() {
    const TEST: &str = "names_beyond_the_table_get_id_zero_and_are_reported";
    if is_child(TEST) {
        for i in 0..MAX_NAMES {
            assert_eq!(Stage::new(&format!("s{i}")).id() as u32, i + 1);
        }
        let over = Stage::new("one-too-many");
        assert_eq!(over.id(), 0);
        assert_eq!(Counter::new("also-too-many").id(), 0);
        assert_eq!(names_refused(), 2);
        assert_eq!(Stage::new("s0").id(), 1, "known names still resolve");
        let _span = over.span(1); // recorded with id 0: the collector counts it as invalid
        return;
    }
    let session = Session::new("overflow");
    session.run(TEST, &[]);
    let ring = &session.rings()[0];
    assert_eq!(ring.records.len(), 1);
    assert_eq!(ring.records[0].name(), 0);
    let names = session.names(ring.pid);
    assert_eq!(names.len(), MAX_NAMES as usize + 2);
    assert_eq!(
        names[MAX_NAMES as usize - 1],
        (MAX_NAMES as u16, 's', format!("s{}", MAX_NAMES - 1))
    );
    assert_eq!(
        names[MAX_NAMES as usize],
        (0, '!', "one-too-many".to_owned())
    );
    assert_eq!(
        names[MAX_NAMES as usize + 1],
        (0, '!', "also-too-many".to_owned())
    );
}

#[test]
fn a_fork_while_another_thread_interns_leaves_the_child_working() {
    const TEST: &str = "a_fork_while_another_thread_interns_leaves_the_child_working";
    if is_child(TEST) {
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        static STOP: AtomicBool = AtomicBool::new(false);
        // Keeps the names lock busy: thousands of names make each lookup a long scan.
        let busy = std::thread::spawn(|| {
            let mut i = 0u32;
            while !STOP.load(Relaxed) {
                Stage::new(&format!("name-{}", i % 5000));
                i += 1;
            }
        });
        while names_refused() == 0 {
            std::thread::yield_now(); // until the table is full and every call scans it all
        }
        for _ in 0..40 {
            let deadline = Some(std::time::Duration::from_secs(30));
            let (_, status) = fork_and_wait_or_kill(|| _ = Counter::new("after-fork"), deadline);
            assert_eq!(
                status,
                Some(0),
                "a forked child hung on the inherited names lock"
            );
        }
        STOP.store(true, Relaxed);
        busy.join().unwrap();
        return;
    }
    // Without a session too: interning takes the lock either way.
    run_child(TEST, &[], None);
    let session = Session::new("fork-lock");
    session.run(TEST, &[]);
}

#[test]
fn spans_open_across_a_fork_never_write_into_the_parents_ring() {
    const TEST: &str = "spans_open_across_a_fork_never_write_into_the_parents_ring";
    if is_child(TEST) {
        let stage = Stage::new("s");
        drop(stage.span(0));
        let open = stage.span(1);
        let mut laps = Laps::start(2);
        let (child, status) = fork_and_wait(move || {
            drop(open); // begun in the parent: its record must not reach the parent's ring
            laps.lap(stage);
            drop(stage.span(3)); // the child's own ring
        });
        // The closure, never called here, drops the parent's copy of `open`: frame 1.
        assert_eq!(status, 0);
        drop(stage.span(4));
        println!("child={child}");
        return;
    }
    let session = Session::new("fork-open");
    let child = reported(&session.run(TEST, &[]), "child") as u32;
    let rings = session.rings();
    assert_eq!(rings.len(), 2);
    let frames = |pid: u32| -> Vec<u64> {
        let ring = rings
            .iter()
            .find(|r| (r.pid == child) == (pid == child))
            .unwrap();
        assert_eq!(ring.dropped, 0);
        ring.records.iter().map(|r| r.frame).collect()
    };
    assert_eq!(
        frames(0),
        [0, 1, 4],
        "the parent's ring holds the parent's spans only"
    );
    assert_eq!(frames(child), [3]);
}

#[test]
fn a_reused_thread_id_gets_a_ring_file_of_its_own() {
    const TEST: &str = "a_reused_thread_id_gets_a_ring_file_of_its_own";
    if is_child(TEST) {
        // What an exited thread with this tid would have left: the kernel reuses tids.
        let dir = std::path::PathBuf::from(std::env::var_os("FRAMELAB_SESSION").unwrap());
        // SAFETY: plain libc call.
        let tid = unsafe { common::gettid() };
        std::fs::write(dir.join(format!("r-{}-{tid}", std::process::id())), "old").unwrap();
        drop(Stage::new("s").span(7));
        println!("tid={tid}");
        return;
    }
    let session = Session::new("tid-reuse");
    let tid = reported(&session.run(TEST, &[]), "tid");
    let files = session.file_names();
    let old = files
        .iter()
        .find(|f| f.starts_with("r-") && f.ends_with(&format!("-{tid}")))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(session.dir.join(old)).unwrap(),
        "old",
        "left alone"
    );
    let ring = common::Ring::read(&session.dir.join(format!("{old}-1")));
    assert_well_formed(&ring);
    assert_eq!(ring.tid as u64, tid);
    assert_eq!(
        ring.records.iter().map(|r| r.frame).collect::<Vec<_>>(),
        [7]
    );
}

#[test]
fn a_queue_records_in_a_ring_of_its_own_from_any_thread_and_in_a_forked_child() {
    const TEST: &str = "a_queue_records_in_a_ring_of_its_own_from_any_thread_and_in_a_forked_child";
    if is_child(TEST) {
        let gpu = Queue::new("gpu0.compute");
        let copy = Queue::new("a name longer than thirty-one bytes, cut");
        let render = Stage::new("render");
        std::thread::scope(|s| {
            for t in 0..2u64 {
                let gpu = &gpu;
                s.spawn(move || {
                    for frame in 0..50 {
                        render.record_ns_on(gpu, t * 100 + frame, 1_000, 4_000);
                    }
                });
            }
        });
        render.record_ns_on(&copy, 7, 10, 20);
        let (child, status) = fork_and_wait(|| {
            render.record_ns_on(&gpu, 999, 5, 6);
        });
        assert_eq!(status, 0, "the forked child failed");
        drop(copy);
        println!("child={child}");
        return;
    }
    let session = Session::new("queue");
    let out = session.run(TEST, &[]);
    let child = reported(&out, "child") as u32;
    let rings = session.rings();
    // The queues' rings only: the threads recorded nothing of their own.
    assert_eq!(rings.len(), 3, "{:?}", session.file_names());
    let find = |name: &str, pid_is_child: bool| {
        (rings.iter())
            .find(|r| r.thread_name.starts_with(name) && (r.pid == child) == pid_is_child)
            .unwrap_or_else(|| panic!("no ring for queue {name}"))
    };
    let gpu = find("gpu0.compute", false);
    assert_well_formed(gpu);
    assert!(framelab_probe::wire::is_queue_tid(gpu.tid), "{}", gpu.tid);
    let render = session.id(gpu.pid, 's', "render");
    assert_eq!(gpu.records.len(), 100, "both threads' spans, none lost");
    assert!(gpu
        .records
        .iter()
        .all(|r| r.kind() == kind::SPAN_NS && r.name() == render && (r.a, r.b) == (1_000, 4_000)));
    let mut frames: Vec<u64> = gpu.records.iter().map(|r| r.frame).collect();
    frames.sort_unstable();
    assert_eq!(frames, (0..50).chain(100..150).collect::<Vec<_>>());
    let cut = find("a name longer than thirty-one", false);
    assert_eq!(cut.thread_name, "a name longer than thirty-one b");
    assert_eq!((cut.records.len(), cut.closed), (1, 1), "dropped: closed");
    assert_ne!(cut.tid, gpu.tid);
    // The child's record went into a ring of the child's, with the queue's name and tid.
    let forked = find("gpu0.compute", true);
    assert_eq!(forked.tid, gpu.tid);
    assert_eq!(
        forked.records.iter().map(|r| r.frame).collect::<Vec<_>>(),
        [999]
    );
}

/// The wakeup word of a session, as the collector makes it, read and set from the test.
fn wake_word(dir: &std::path::Path) -> u32 {
    let bytes = std::fs::read(dir.join(framelab_probe::wire::WAKE_FILE)).unwrap();
    u32::from_ne_bytes(bytes[..4].try_into().unwrap())
}

fn set_wake_word(dir: &std::path::Path, value: u32) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join(framelab_probe::wire::WAKE_FILE))
        .unwrap();
    file.write_all_at(&value.to_ne_bytes(), 0).unwrap();
}

#[test]
fn a_ring_a_quarter_full_wakes_a_sleeping_collector_once_per_crossing() {
    use framelab_probe::wire::{COLLECTOR_ASLEEP, COLLECTOR_AWAKE, FEATURE_WAKES, WAKE_FILE};
    const TEST: &str = "a_ring_a_quarter_full_wakes_a_sleeping_collector_once_per_crossing";
    let dir = || std::path::PathBuf::from(std::env::var_os("FRAMELAB_SESSION").unwrap());
    if is_child(TEST) {
        // A ring of 64 records: a quarter is 16; past it, the producer looks every 8.
        let stage = Stage::new("tick");
        let mut frame = 0;
        let mut record = |n: u64| {
            for _ in 0..n {
                let _span = stage.span(frame);
                frame += 1;
            }
            wake_word(&dir())
        };
        println!("at16={}", record(16));
        println!("at17={}", record(1));
        // The collector went back to sleep without draining: the next look is 8 on.
        set_wake_word(&dir(), COLLECTOR_ASLEEP);
        println!("at24={}", record(7));
        println!("at25={}", record(1));
        return;
    }
    let session = Session::new("wake");
    std::fs::write(session.dir.join(WAKE_FILE), [0u8; 64]).unwrap();
    set_wake_word(&session.dir, COLLECTOR_ASLEEP);
    let out = session.run(TEST, &[("FRAMELAB_RING_RECORDS", "64")]);
    let (asleep, awake) = (COLLECTOR_ASLEEP as u64, COLLECTOR_AWAKE as u64);
    assert_eq!(
        reported(&out, "at16"),
        asleep,
        "below a quarter: nobody woken"
    );
    assert_eq!(reported(&out, "at17"), awake, "the 17th record woke it");
    assert_eq!(
        reported(&out, "at24"),
        asleep,
        "no look between two eighths"
    );
    assert_eq!(reported(&out, "at25"), awake, "woken again an eighth on");
    let rings = session.rings();
    assert_eq!(rings.len(), 1);
    assert_eq!(rings[0].features, FEATURE_WAKES, "the ring says it wakes");
    assert_eq!((rings[0].head, rings[0].dropped), (25, 0));
}

#[test]
fn without_a_wakeup_word_a_ring_says_it_wakes_nobody() {
    const TEST: &str = "without_a_wakeup_word_a_ring_says_it_wakes_nobody";
    if is_child(TEST) {
        let stage = Stage::new("tick");
        for frame in 0..100 {
            let _span = stage.span(frame);
        }
        return;
    }
    // A session made by a framelab from before the word: rings as version 1 made them.
    let session = Session::new("nowake");
    session.run(TEST, &[("FRAMELAB_RING_RECORDS", "64")]);
    let rings = session.rings();
    assert_eq!(rings.len(), 1);
    assert_eq!(rings[0].features, 0);
    assert_eq!(
        (rings[0].head, rings[0].dropped),
        (64, 36),
        "full at 64, as before"
    );
}
