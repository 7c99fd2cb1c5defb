//! The scheduler's view of a run (schema 7): written once, when the run has ended and
//! tracing stopped; read back with the run, so a saved run's report splits its spans as
//! the live one did. With `schedstat` only the status is stored: the slices are the
//! telemetry's `cpu_time` and `run_wait` series, rebuilt when the run is read.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use super::file::{self, sqlite_failure};
use crate::sched::{SchedSlice, SchedSource, SchedTimeline};

pub(super) fn insert_sched(
    conn: &Connection,
    run_id: i64,
    t: &SchedTimeline,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO sched_status (run_id, source, detail, resolution_ns, lost) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
        rusqlite::params![
            run_id,
            t.source.name(),
            t.detail,
            t.resolution_ns,
            t.lost as i64
        ],
    )?;
    if t.source != SchedSource::Tracepoints {
        return Ok(());
    }
    let mut stmt = conn.prepare_cached(
        "INSERT INTO sched_slices (run_id, tid, start_ns, dur_ns, on_cpu_ns, runnable_ns, \
         by_comm) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for s in &t.slices {
        stmt.execute(rusqlite::params![
            run_id,
            s.tid,
            s.start_ns,
            s.dur_ns,
            s.on_cpu_ns,
            s.runnable_ns,
            (!s.by.is_empty()).then_some(s.by.as_str()),
        ])?;
    }
    Ok(())
}

/// Adds a finished run's scheduler timeline, in one transaction.
pub fn record_sched(path: &Path, run_id: i64, timeline: &SchedTimeline) -> anyhow::Result<()> {
    let (mut conn, _) = file::open_for_writing(path)?;
    let fail = |e: rusqlite::Error| sqlite_failure(path, "write", &e);
    let tx = conn.transaction().map_err(fail)?;
    insert_sched(&tx, run_id, timeline).map_err(fail)?;
    tx.commit().map_err(fail)
}

/// The run's timeline as stored (schedstat slices not yet rebuilt); `None` for a run
/// recorded without one, or a file from before schema 7.
pub(super) fn read_sched(
    conn: &Connection,
    run_id: i64,
) -> rusqlite::Result<Option<SchedTimeline>> {
    let has_tables: bool = conn.query_row(
        "SELECT count(*) = 2 FROM sqlite_schema WHERE type = 'table' \
         AND name IN ('sched_status', 'sched_slices')",
        [],
        |r| r.get(0),
    )?;
    if !has_tables {
        return Ok(None);
    }
    let head = conn
        .query_row(
            "SELECT source, detail, resolution_ns, lost FROM sched_status WHERE run_id = ?1",
            [run_id],
            |r| {
                Ok(SchedTimeline {
                    source: SchedSource::parse(&r.get::<_, String>(0)?).unwrap_or_default(),
                    detail: r.get(1)?,
                    resolution_ns: r.get(2)?,
                    lost: r.get::<_, i64>(3)?.max(0) as u64,
                    slices: Vec::new(),
                })
            },
        )
        .optional()?;
    let Some(mut timeline) = head else {
        return Ok(None);
    };
    let mut stmt = conn.prepare(
        "SELECT tid, start_ns, dur_ns, on_cpu_ns, runnable_ns, by_comm FROM sched_slices \
         WHERE run_id = ?1 ORDER BY tid, start_ns",
    )?;
    let rows = stmt.query_map([run_id], |r| {
        Ok(SchedSlice {
            tid: r.get(0)?,
            start_ns: r.get(1)?,
            dur_ns: r.get(2)?,
            on_cpu_ns: r.get(3)?,
            runnable_ns: r.get(4)?,
            by: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
        })
    })?;
    timeline.slices = rows.collect::<rusqlite::Result<_>>()?;
    Ok(Some(timeline))
}
