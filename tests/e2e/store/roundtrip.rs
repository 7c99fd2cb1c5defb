//! Writing runs and loading them back: every field, several runs per file.

use crate::common::store as store_common;

use framelab::model::*;
use framelab::store::{list_runs, load_run, RunWriter};
use store_common::*;

#[test]
fn a_run_with_every_record_kind_loads_back_equal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.framelab");
    let run = sample_run("roundtrip", 1000);
    let id = write_run(&path, &run);
    let loaded = load_run(&path, None).unwrap();
    assert_eq!(loaded.meta.id, id);
    assert_same_run(&loaded, &run);
    assert_eq!(loaded.spans.len(), 3001);
    assert_eq!(loaded.spans.last().unwrap().frame, u64::MAX);
}

#[test]
fn an_empty_run_and_a_minimal_meta_load_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.framelab");
    let meta = RunMeta::default();
    let w = RunWriter::create(&path, &meta).unwrap();
    w.finish().unwrap();
    let loaded = load_run(&path, None).unwrap();
    assert!(loaded.spans.is_empty() && loaded.stages.is_empty());
    assert!(loaded.meta.exit.is_none() && loaded.meta.target_fps.is_none());
    assert_eq!(loaded.meta.end_reason, EndReason::Unfinished);
}

#[test]
fn one_file_holds_many_runs_and_each_loads_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.framelab");
    let runs: Vec<Run> = (0..3)
        .map(|i| sample_run(&format!("run {i}"), 50 + i * 10))
        .collect();
    let ids: Vec<i64> = runs.iter().map(|r| write_run(&path, r)).collect();
    assert_eq!(ids, vec![1, 2, 3]);

    let listed = list_runs(&path).unwrap();
    let names: Vec<&str> = listed.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["run 0", "run 1", "run 2"]);
    assert_eq!(listed.iter().map(|m| m.id).collect::<Vec<_>>(), ids);

    for (run, id) in runs.iter().zip(&ids) {
        assert_same_run(&load_run(&path, Some(*id)).unwrap(), run);
    }
    // Without an id, the latest run.
    assert_eq!(load_run(&path, None).unwrap().meta.name, "run 2");
}

#[test]
fn two_runs_recorded_at_once_into_one_file_stay_apart() {
    // Interleaved commits make each run's id range cover the other's rows.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("both.framelab");
    let a = sample_run("a", 30);
    let b = sample_run("b", 40);
    let mut wa = RunWriter::create(&path, &a.meta).unwrap();
    let mut wb = RunWriter::create(&path, &b.meta).unwrap();
    for w in [&mut wa, &mut wb] {
        for s in &a.stages {
            w.add_stage(s).unwrap();
        }
        for t in &a.threads {
            w.add_thread(t).unwrap();
        }
        w.commit().unwrap();
    }
    for i in 0..4 {
        for (w, run) in [(&mut wa, &a), (&mut wb, &b)] {
            let n = run.spans.len();
            w.spans(&run.spans[i * n / 4..(i + 1) * n / 4]).unwrap();
            w.commit().unwrap();
        }
    }
    let (ida, idb) = (wa.run_id(), wb.run_id());
    wa.finish().unwrap();
    wb.finish().unwrap();
    assert_eq!(load_run(&path, Some(ida)).unwrap().spans, a.spans);
    assert_eq!(load_run(&path, Some(idb)).unwrap().spans, b.spans);
}

#[test]
fn batches_of_every_size_load_back_in_order_with_their_counts() {
    // The writer inserts a batch in statements of 256 rows and the rest one row at a
    // time: sizes around each step, and many batches per commit, come back whole and in
    // order (the collector hands it a drain's worth at a time, whatever its size).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("batches.framelab");
    let run = sample_run("batches", 2000);
    let mut w = RunWriter::create(&path, &run.meta).unwrap();
    for s in &run.stages {
        w.add_stage(s).unwrap();
    }
    for c in &run.counter_names {
        w.add_counter_name(c).unwrap();
    }
    for e in &run.event_names {
        w.add_event_name(e).unwrap();
    }
    for t in &run.threads {
        w.add_thread(t).unwrap();
    }
    let sizes = [1, 2, 3, 127, 128, 129, 255, 256, 257, 511, 513, 1000];
    let mut from = [0usize; 3];
    for (i, size) in sizes.iter().cycle().enumerate() {
        let lens = [run.spans.len(), run.counters.len(), run.events.len()];
        if from.iter().zip(lens).all(|(f, len)| *f >= len) {
            break;
        }
        let to: Vec<usize> = from
            .iter()
            .zip(lens)
            .map(|(f, len)| (f + size).min(len))
            .collect();
        w.spans(&run.spans[from[0]..to[0]]).unwrap();
        w.counters(&run.counters[from[1]..to[1]]).unwrap();
        w.events(&run.events[from[2]..to[2]]).unwrap();
        from.copy_from_slice(&to);
        if i % 5 == 4 {
            w.commit().unwrap();
        }
    }
    w.finish().unwrap();
    let loaded = load_run(&path, None).unwrap();
    assert_eq!(loaded.spans, run.spans);
    assert_eq!(loaded.counters, run.counters);
    assert_eq!(loaded.events, run.events);
}

#[test]
fn committed_records_are_visible_to_a_reader_while_recording() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.framelab");
    let run = sample_run("live", 100);
    let mut w = RunWriter::create(&path, &run.meta).unwrap();
    for s in &run.stages {
        w.add_stage(s).unwrap();
    }
    for t in &run.threads {
        w.add_thread(t).unwrap();
    }
    w.spans(&run.spans[..150]).unwrap();
    w.commit().unwrap();
    w.spans(&run.spans[150..200]).unwrap(); // not committed yet
    assert_eq!(load_run(&path, None).unwrap().spans, run.spans[..150]);
    w.commit().unwrap();
    assert_eq!(load_run(&path, None).unwrap().spans, run.spans[..200]);
    w.finish().unwrap();
}

#[test]
fn a_finished_file_is_self_contained() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.framelab");
    let run = sample_run("alone", 200);
    write_run(&path, &run);
    let sidecars: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "run.framelab")
        .collect();
    assert!(
        sidecars.is_empty(),
        "left next to the run file: {sidecars:?}"
    );

    // Only the .framelab file, copied elsewhere, holds the whole run.
    let other = tempfile::tempdir().unwrap();
    let copy = other.path().join("copy.framelab");
    std::fs::copy(&path, &copy).unwrap();
    assert_same_run(&load_run(&copy, None).unwrap(), &run);
}

#[test]
fn a_commit_after_the_end_reason_is_set_folds_the_log_into_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.framelab");
    let run = sample_run("commit-finalises", 100);
    let mut w = RunWriter::create(&path, &RunMeta::default()).unwrap();
    for s in &run.stages {
        w.add_stage(s).unwrap();
    }
    for t in &run.threads {
        w.add_thread(t).unwrap();
    }
    w.spans(&run.spans[..300]).unwrap();
    w.update_meta(&run.meta).unwrap();
    w.commit().unwrap();
    // The writer is still open, yet a copy of the main file alone has everything.
    let copy = dir.path().join("copy.framelab");
    std::fs::copy(&path, &copy).unwrap();
    let loaded = load_run(&copy, None).unwrap();
    assert_eq!(loaded.spans, run.spans[..300]);
    assert_eq!(loaded.meta.end_reason, EndReason::Duration);
    drop(w);
}

#[test]
fn a_writer_dropped_without_finish_keeps_what_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.framelab");
    let run = sample_run("dropped", 10);
    let mut w = RunWriter::create(&path, &run.meta).unwrap();
    for s in &run.stages {
        w.add_stage(s).unwrap();
    }
    for t in &run.threads {
        w.add_thread(t).unwrap();
    }
    w.spans(&run.spans).unwrap();
    drop(w);
    assert_eq!(load_run(&path, None).unwrap().spans, run.spans);
}

#[test]
fn set_thread_dropped_refuses_an_unknown_thread() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RunWriter::create(&dir.path().join("r.framelab"), &RunMeta::default()).unwrap();
    let err = w.set_thread_dropped(3, 1).unwrap_err().to_string();
    assert!(err.contains("no thread 3"), "{err}");
}

#[test]
fn a_run_large_enough_to_be_read_in_parallel_parts_loads_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.framelab");
    let mut run = sample_run("big", 0);
    run.spans = (0..1_100_000u64)
        .map(|i| Span {
            frame: i / 5,
            stage: (i % 3) as u16,
            thread: (i % 2) as u32,
            start_ns: i as i64 * 1000,
            dur_ns: (i % 9973) as i64,
        })
        .collect();
    write_run(&path, &run);
    assert_same_run(&load_run(&path, None).unwrap(), &run);
}

#[test]
fn blocks_deleted_by_hand_leave_the_rest_loadable_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pruned.framelab");
    let run = sample_run("pruned", 300);
    write_run(&path, &run);
    let conn = rusqlite::Connection::open(&path).unwrap();
    // The second of the run's blocks (900 spans: three blocks).
    let (first, count): (i64, i64) = conn
        .query_row(
            "SELECT first_id, spans FROM span_blocks ORDER BY first_id LIMIT 1 OFFSET 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    conn.execute("DELETE FROM span_blocks WHERE first_id = ?1", [first])
        .unwrap();
    drop(conn);
    let loaded = load_run(&path, None).unwrap();
    let deleted = (first - 1) as usize..(first - 1 + count) as usize;
    let kept: Vec<Span> = (run.spans.iter().enumerate())
        .filter(|(i, _)| !deleted.contains(i))
        .map(|(_, s)| *s)
        .collect();
    assert!(count > 0 && kept.len() < run.spans.len());
    assert_eq!(loaded.spans, kept);
}

#[test]
fn the_main_file_holds_every_commit_while_recording() {
    // A rollback journal writes commits into the main file itself: a copy of it alone,
    // taken right after a commit, is the whole run so far.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.framelab");
    let run = sample_run("live", 100);
    let recording = RunMeta {
        end_reason: EndReason::Unfinished,
        ..run.meta.clone()
    };
    let mut w = RunWriter::create(&path, &recording).unwrap();
    for s in &run.stages {
        w.add_stage(s).unwrap();
    }
    for t in &run.threads {
        w.add_thread(t).unwrap();
    }
    w.spans(&run.spans).unwrap();
    w.commit().unwrap();
    assert!(
        !dir.path().join("live.framelab-wal").exists(),
        "no write-ahead log"
    );
    let copy = dir.path().join("copy.framelab");
    std::fs::copy(&path, &copy).unwrap();
    assert_eq!(load_run(&copy, None).unwrap().spans, run.spans);
    drop(w);
}

#[test]
fn the_views_flag_warmup_frames_and_name_stages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("views.framelab");
    let mut run = sample_run("views", 1000);
    run.meta.window_start_ns = 2_000_000_000;
    run.meta.window_end_ns = 7_000_000_000;
    write_run(&path, &run);

    let mut ends = std::collections::BTreeMap::<u64, i64>::new();
    for s in &run.spans {
        let end = ends.entry(s.frame).or_insert(i64::MIN);
        *end = (*end).max(s.end_ns());
    }
    let warmup = ends.values().filter(|&&e| e < 2_000_000_000).count() as i64;
    let measured = ends
        .values()
        .filter(|&&e| (2_000_000_000..=7_000_000_000).contains(&e))
        .count() as i64;
    assert!(warmup > 0 && measured > 0 && warmup + measured < ends.len() as i64);

    let conn = rusqlite::Connection::open(&path).unwrap();
    let (frames, w, m): (i64, i64, i64) = conn
        .query_row(
            "SELECT count(*), sum(warmup), sum(measured) FROM frames WHERE run_id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((frames, w, m), (ends.len() as i64, warmup, measured));
    // A frame id beyond i64::MAX shows as a negative number in SQL.
    let last: i64 = conn
        .query_row("SELECT min(frame) FROM frames", [], |r| r.get(0))
        .unwrap();
    assert_eq!(last, -1);
    let named: i64 = conn
        .query_row(
            "SELECT count(*) FROM named_spans WHERE stage = 'encode' AND thread = 'encoder'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(named, 1000);
}
