//! The C ABI called as C would call it: null names, null laps, invalid ids, spans ended on
//! another thread. Checked from the session files, in a fresh process per scenario.

mod common;

use std::ffi::CString;
use std::ptr::null;

use common::{is_child, run_child, Session};
use framelab_probe::ffi::*;
use framelab_probe::wire::{kind, name_kind};

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// Interns through the C ABI, as C code would.
fn stage(name: &str) -> u32 {
    // SAFETY: a NUL-terminated string.
    unsafe { fl_stage(c(name).as_ptr()) }
}

#[test]
fn without_a_session_every_call_is_a_no_op() {
    const TEST: &str = "without_a_session_every_call_is_a_no_op";
    if is_child(TEST) {
        assert_eq!(fl_enabled(), 0);
        let stage = stage("s");
        assert_ne!(stage, 0);
        let span = fl_begin(stage, 1);
        assert_eq!(span.live, 0);
        // SAFETY: a valid FlSpan, then null.
        unsafe {
            fl_end(&span);
            fl_end(std::ptr::null());
        }
        let mut laps = fl_laps_start(1);
        assert_eq!((laps.live, laps.last), (0, 0));
        // SAFETY: a valid FlLaps, then null.
        unsafe {
            fl_lap(&mut laps, stage);
            fl_laps_skip(&mut laps);
            fl_lap(std::ptr::null_mut(), stage);
        }
        assert_eq!(laps.last, 0);
        fl_count(9999, 1, 1);
        fl_event(0, 1);
        fl_span_ns(stage, 1, 2, 3);
        assert_eq!(fl_enabled(), 0);
        return;
    }
    let dir = Session::new("ffi-off");
    run_child(TEST, &[], Some(&dir.dir));
    assert!(dir.file_names().is_empty());
}

#[test]
fn null_names_and_invalid_ids_are_recorded_never_fatal() {
    const TEST: &str = "null_names_and_invalid_ids_are_recorded_never_fatal";
    if is_child(TEST) {
        assert_eq!(fl_enabled(), 1);
        // SAFETY: null, or NUL-terminated strings.
        let (bytes, commit) = unsafe {
            assert_eq!(fl_stage(null()), 0);
            assert_eq!(fl_counter(null()), 0);
            assert_eq!(fl_event_kind(null()), 0);
            (
                fl_counter(c("bytes").as_ptr()),
                fl_event_kind(c("commit").as_ptr()),
            )
        };
        let stage = stage("encode");
        assert_eq!(self::stage("encode"), stage);
        assert!(stage != 0 && bytes != 0 && commit != 0);

        // SAFETY: valid FlSpans, then null.
        unsafe {
            fl_end(&fl_begin(stage, 1));
            fl_end(&fl_begin(9999, 2)); // never interned: kept, counted invalid by the collector
            fl_end(&fl_begin(70_000, 3)); // wider than an id: recorded as 0
            fl_end(std::ptr::null());
        }
        fl_count(bytes, 4, -12);
        fl_count(0, 5, 1);
        fl_event(commit, 6);
        fl_span_ns(stage, 7, 100, 200);
        // SAFETY: null laps are allowed and ignored.
        unsafe {
            fl_lap(std::ptr::null_mut(), stage);
            fl_laps_skip(std::ptr::null_mut());
            fl_laps_next_frame(std::ptr::null_mut(), 8);
        }
        assert_eq!(fl_names_refused(), 0);
        assert!(fl_now_ns() > 0);
        return;
    }
    let session = Session::new("ffi-bad");
    session.run(TEST, &[]);
    let rings = session.rings();
    assert_eq!(rings.len(), 1);
    let ring = &rings[0];
    let stage = session.id(ring.pid, name_kind::STAGE, "encode");
    let bytes = session.id(ring.pid, name_kind::COUNTER, "bytes");
    let commit = session.id(ring.pid, name_kind::EVENT, "commit");
    let got: Vec<(u8, u16, u64)> = ring
        .records
        .iter()
        .map(|r| (r.kind(), r.name(), r.frame))
        .collect();
    let expected = [
        (kind::SPAN, stage, 1),
        (kind::SPAN, 9999, 2),
        (kind::SPAN, 0, 3),
        (kind::COUNTER, bytes, 4),
        (kind::COUNTER, 0, 5),
        (kind::EVENT, commit, 6),
        (kind::SPAN_NS, stage, 7),
    ];
    assert_eq!(got, expected);
    assert_eq!(ring.records[3].a as i64, -12);
    assert_eq!((ring.records[6].a, ring.records[6].b), (100, 200));
    assert_eq!(
        session.names(ring.pid).len(),
        3,
        "a null name interns nothing"
    );
}

#[test]
fn c_laps_are_contiguous_and_a_span_may_end_on_another_thread() {
    const TEST: &str = "c_laps_are_contiguous_and_a_span_may_end_on_another_thread";
    if is_child(TEST) {
        let (a, b, handoff) = (stage("a"), stage("b"), stage("handoff"));
        let mut laps = fl_laps_start(0);
        assert_eq!(laps.live, 1);
        for frame in 0..10 {
            // SAFETY: laps is a valid FlLaps.
            unsafe {
                fl_laps_next_frame(&mut laps, frame);
                fl_lap(&mut laps, a);
                fl_lap(&mut laps, b);
            }
        }
        let span = fl_begin(handoff, 77);
        // SAFETY: a valid FlSpan, moved to the thread that ends it.
        std::thread::spawn(move || unsafe { fl_end(&span) })
            .join()
            .unwrap();
        return;
    }
    let session = Session::new("ffi-laps");
    session.run(TEST, &[]);
    let rings = session.rings();
    assert_eq!(rings.len(), 2);
    let (main, other): (Vec<_>, Vec<_>) = rings.iter().partition(|r| r.records.len() == 20);
    let (main, other) = (main[0], other[0]);
    let handoff = session.id(main.pid, name_kind::STAGE, "handoff");
    for pair in main.records.windows(2) {
        assert_eq!(
            pair[1].a, pair[0].b,
            "each lap starts where the previous ended"
        );
        assert!(pair[1].is_lap() && pair[1].a <= pair[1].b);
    }
    assert_eq!(
        other.records.len(),
        1,
        "recorded by the thread that ended it"
    );
    let r = &other.records[0];
    assert_eq!(
        (r.kind(), r.name(), r.frame, r.is_lap()),
        (kind::SPAN, handoff, 77, false)
    );
    assert!(r.a <= r.b);
}

#[test]
fn a_c_queue_records_on_its_own_ring_and_nulls_do_nothing() {
    const TEST: &str = "a_c_queue_records_on_its_own_ring_and_nulls_do_nothing";
    if is_child(TEST) {
        let render = stage("render");
        // SAFETY: null, or a NUL-terminated string; the queue is used before it is freed.
        unsafe {
            assert!(fl_queue_new(null()).is_null());
            let gpu = fl_queue_new(c("gpu0.compute").as_ptr());
            assert!(!gpu.is_null());
            fl_span_ns_on(gpu, render, 7, 100, 400);
            fl_span_ns_on(std::ptr::null(), render, 8, 1, 2);
            fl_queue_free(gpu);
            fl_queue_free(std::ptr::null_mut());
        }
        return;
    }
    let session = Session::new("ffi-queue");
    session.run(TEST, &[]);
    let rings = session.rings();
    assert_eq!(rings.len(), 1, "the queue's ring only");
    let q = &rings[0];
    assert_eq!(q.thread_name, "gpu0.compute");
    assert!(framelab_probe::wire::is_queue_tid(q.tid));
    assert_eq!(q.closed, 1, "freed: closed");
    let render = session.id(q.pid, name_kind::STAGE, "render");
    let got: Vec<(u8, u16, u64, u64, u64)> = (q.records.iter())
        .map(|r| (r.kind(), r.name(), r.frame, r.a, r.b))
        .collect();
    assert_eq!(got, [(kind::SPAN_NS, render, 7, 100, 400)]);
}

#[test]
fn a_c_gpu_queue_is_named_after_its_device_and_stream() {
    const TEST: &str = "a_c_gpu_queue_is_named_after_its_device_and_stream";
    if is_child(TEST) {
        let infer = stage("infer");
        let gpu = fl_queue_new_gpu(1, 0);
        // SAFETY: a live queue from fl_queue_new_gpu, used before it is freed, freed once.
        unsafe {
            fl_span_ns_on(gpu, infer, 3, 100, 900);
            fl_queue_free(gpu);
        }
        return;
    }
    let session = Session::new("ffi-gpu-queue");
    session.run(TEST, &[]);
    let rings = session.rings();
    assert_eq!(
        rings.len(),
        1,
        "the queue's ring only: nothing on the calling thread"
    );
    let q = &rings[0];
    assert_eq!(q.thread_name, "gpu1.stream0");
    assert!(framelab_probe::wire::is_queue_tid(q.tid));
    let infer = session.id(q.pid, name_kind::STAGE, "infer");
    let got: Vec<(u16, u64, u64, u64)> = (q.records.iter())
        .map(|r| (r.name(), r.frame, r.a, r.b))
        .collect();
    assert_eq!(got, [(infer, 3, 100, 900)]);
}
