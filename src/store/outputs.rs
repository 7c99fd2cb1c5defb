//! Metrics from the command's output and the output kept (schema 5): written once, when
//! the run has ended (the streams are read to their end first), read back with the run.

use std::path::Path;

use rusqlite::Connection;

use super::codec::{u64_from_sql, u64_to_sql};
use super::file::{self, sqlite_failure};
use crate::output::spec::{direction_from_name, direction_name};
use crate::output::{CapturedOutput, MetricValue};

pub(super) fn insert_metrics(
    conn: &Connection,
    run_id: i64,
    metrics: &[MetricValue],
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT OR REPLACE INTO metrics (run_id, role, name, position, value, unit, direction, \
         definition, failure) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for (position, m) in metrics.iter().enumerate() {
        stmt.execute(rusqlite::params![
            run_id,
            m.role,
            m.name,
            position as i64,
            m.value,
            m.unit,
            direction_name(m.direction),
            m.definition,
            m.failure,
        ])?;
    }
    Ok(())
}

pub(super) fn insert_outputs(
    conn: &Connection,
    run_id: i64,
    outputs: &[CapturedOutput],
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT OR REPLACE INTO outputs (run_id, role, stream, bytes, dropped, content, note) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for o in outputs {
        stmt.execute(rusqlite::params![
            run_id,
            o.role,
            o.stream,
            u64_to_sql(o.bytes),
            u64_to_sql(o.dropped),
            o.content,
            o.note,
        ])?;
    }
    Ok(())
}

/// Adds a finished run's metrics and kept output, in one transaction.
pub fn record_outputs(
    path: &Path,
    run_id: i64,
    metrics: &[MetricValue],
    outputs: &[CapturedOutput],
) -> anyhow::Result<()> {
    if metrics.is_empty() && outputs.is_empty() {
        return Ok(());
    }
    let (mut conn, _) = file::open_for_writing(path)?;
    let fail = |e: rusqlite::Error| sqlite_failure(path, "write", &e);
    let tx = conn.transaction().map_err(fail)?;
    insert_metrics(&tx, run_id, metrics).map_err(fail)?;
    insert_outputs(&tx, run_id, outputs).map_err(fail)?;
    tx.commit().map_err(fail)
}

pub(super) fn load_metrics(conn: &Connection, run_id: i64) -> rusqlite::Result<Vec<MetricValue>> {
    let mut stmt = conn.prepare(
        "SELECT role, name, value, unit, direction, definition, failure FROM metrics \
         WHERE run_id = ?1 ORDER BY position",
    )?;
    let rows = stmt.query_map([run_id], |r| {
        Ok(MetricValue {
            role: r.get(0)?,
            name: r.get(1)?,
            value: r.get(2)?,
            unit: r.get(3)?,
            direction: direction_from_name(&r.get::<_, String>(4)?),
            definition: r.get(5)?,
            failure: r.get(6)?,
        })
    })?;
    rows.collect()
}

pub(super) fn load_outputs(
    conn: &Connection,
    run_id: i64,
) -> rusqlite::Result<Vec<CapturedOutput>> {
    let mut stmt = conn.prepare(
        "SELECT role, stream, bytes, dropped, content, note FROM outputs WHERE run_id = ?1 \
         ORDER BY role, stream DESC",
    )?;
    let rows = stmt.query_map([run_id], |r| {
        Ok(CapturedOutput {
            role: r.get(0)?,
            stream: r.get(1)?,
            bytes: u64_from_sql(r.get(2)?),
            dropped: u64_from_sql(r.get(3)?),
            content: r.get(4)?,
            note: r.get(5)?,
        })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use crate::model::{Run, RunMeta};
    use crate::output::{CapturedOutput, MetricValue};
    use crate::stats::Direction;

    #[test]
    fn metrics_and_output_come_back_as_written_in_definition_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.framelab");
        let metric = |name: &str, value, failure: Option<&str>| MetricValue {
            name: name.into(),
            role: "command".into(),
            value,
            unit: "req/s".into(),
            direction: Some(Direction::HigherIsBetter),
            definition: format!("{name}:higher=x(\\d)"),
            failure: failure.map(str::to_owned),
        };
        let run = Run {
            meta: RunMeta {
                name: "m".into(),
                ..RunMeta::default()
            },
            // Not in name order: the definition order comes back.
            metrics: vec![
                metric("zeta", Some(1234.5), None),
                metric("alpha", None, Some("alpha: no line matched /x/")),
            ],
            outputs: vec![CapturedOutput {
                role: "command".into(),
                stream: "stdout".into(),
                bytes: 5_000_000,
                dropped: 5_000_000 - 3,
                content: b"a\0b".to_vec(),
                note: String::new(),
            }],
            ..Run::default()
        };
        let id = crate::store::write_run(&path, &run).unwrap();
        let back = crate::store::load_run(&path, Some(id)).unwrap();
        assert_eq!(back.metrics, run.metrics);
        assert_eq!(back.outputs, run.outputs);
        let direction: String = rusqlite::Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT direction FROM metrics WHERE name = 'zeta'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(direction, "higher");
    }
}
