//! Spans stored in blocks (schema 9): the `spans` view against framelab's own decoding on
//! a recorded run, the size of a span on disk, a schema-8 file upgraded in place.

use crate::common::{self, stderr, store as store_common};

use framelab::model::*;
use framelab::store::load_run;
use rusqlite::Connection;

/// The spans of `run_id` as plain SQL sees them through the view, in id order, with ids.
fn spans_in_sql(conn: &Connection, run_id: i64) -> (Vec<i64>, Vec<Span>) {
    let mut stmt = conn
        .prepare(
            "SELECT id, frame, stage_id, thread_id, start_ns, dur_ns FROM spans \
             WHERE run_id = ?1",
        )
        .unwrap();
    let rows: Vec<(i64, Span)> = stmt
        .query_map([run_id], |r| {
            Ok((
                r.get(0)?,
                Span {
                    frame: r.get::<_, i64>(1)? as u64,
                    stage: r.get(2)?,
                    thread: r.get(3)?,
                    start_ns: r.get(4)?,
                    dur_ns: r.get(5)?,
                },
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows.into_iter().unzip()
}

#[test]
fn the_spans_view_returns_exactly_what_framelab_decodes_on_a_recorded_run() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = common::run_testprog(&dir, "view", &[], &["threads", "500"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load_run(&path, None).unwrap();
    assert!(run.spans.len() > 400, "{} spans", run.spans.len());
    let conn = Connection::open(&path).unwrap();
    let (ids, spans) = spans_in_sql(&conn, run.meta.id);
    assert!(spans == run.spans, "the view and framelab disagree");
    // Ids are consecutive in the order spans were written, as rows' were (schema 8).
    let first: i64 = conn
        .query_row("SELECT span_id_first FROM runs", [], |r| r.get(0))
        .unwrap();
    assert!(ids.iter().copied().eq(first..first + ids.len() as i64));
    // The views built on `spans` agree with it.
    let (frames, stages): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM frames), (SELECT sum(spans) FROM stage_summary)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let mut distinct: Vec<u64> = run.spans.iter().map(|s| s.frame).collect();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(
        (frames as usize, stages as usize),
        (distinct.len(), run.spans.len())
    );
}

#[test]
fn a_span_takes_at_most_16_bytes_of_the_file() {
    // 200k spans: 4 threads, 6 stages, 60 frames a second, durations up to 2 ms.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("size.framelab");
    let mut run = store_common::sample_run("size", 0);
    run.stages = (0..6).map(|s| format!("stage{s}")).collect();
    run.threads = (0..4).map(|_| ThreadInfo::default()).collect();
    run.spans = (0..200_000u64)
        .map(|i| {
            let frame = i / 24;
            Span {
                frame,
                stage: (i % 6) as u16,
                thread: (i % 4) as u32,
                start_ns: frame as i64 * 16_666_667 + (i % 24) as i64 * 600_000,
                dur_ns: 100_000 + (i * 7_919 % 1_900_000) as i64,
            }
        })
        .collect();
    store_common::write_run(&path, &run);
    let bytes = std::fs::metadata(&path).unwrap().len();
    let per_span = bytes as f64 / run.spans.len() as f64;
    assert!(per_span <= 16.0, "{bytes} bytes: {per_span:.2} a span");
    assert_eq!(load_run(&path, None).unwrap().spans, run.spans);
}

/// Schema 8's layout made from a file of today's (the store's own `undo_9`, which the
/// migration's unit tests start from too), its freed pages given back.
fn downgrade_to_8(path: &std::path::Path) {
    let mut conn = Connection::open(path).unwrap();
    let tx = conn.transaction().unwrap();
    framelab::store::undo_9(&tx).unwrap();
    tx.commit().unwrap();
    conn.execute_batch("VACUUM").unwrap();
}

#[test]
fn a_schema_8_file_is_upgraded_in_place_and_reports_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = common::run_testprog(&dir, "old", &[], &["threads", "400"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let before = load_run(&path, None).unwrap();
    let report_before = common::report_json(&path);
    let old = dir.path().join("old-8.framelab");
    std::fs::copy(&path, &old).unwrap();
    downgrade_to_8(&old);
    let version = |p: &std::path::Path| -> i64 {
        Connection::open(p)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(version(&old), 8);
    let report_after = common::report_json(&old);
    assert_eq!(version(&old), framelab::store::SCHEMA_VERSION);
    assert_eq!(report_after, report_before);
    let after = load_run(&old, None).unwrap();
    assert!(
        after.spans == before.spans,
        "the spans changed in the upgrade"
    );
    let blocks: i64 = Connection::open(&old)
        .unwrap()
        .query_row("SELECT count(*) FROM span_blocks", [], |r| r.get(0))
        .unwrap();
    assert!(blocks > 0);
}
