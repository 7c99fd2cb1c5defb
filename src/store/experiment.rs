//! Experiment metadata next to the runs: the bench's specification, each run's variant,
//! parameter values, status and fingerprint. Written between runs, never during one.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use super::file::{self, one_line, sqlite_failure};
use super::schema::EXPERIMENT_TABLES;
use crate::experiment::{Experiment, ExperimentRun, Fingerprint, RunStatus};

/// Opens `path` for writing experiment rows, creating the file and tables as needed.
fn open_writing(path: &Path) -> anyhow::Result<Connection> {
    let (conn, _) = file::open_for_writing(path)?;
    conn.execute_batch(EXPERIMENT_TABLES)
        .map_err(|e| sqlite_failure(path, "write", &e))?;
    Ok(conn)
}

/// Starts an experiment in `path` (created if missing) and returns its id.
pub fn create_experiment(path: &Path, spec_json: &str) -> anyhow::Result<i64> {
    let conn = open_writing(path)?;
    conn.execute(
        "INSERT INTO experiments (created_at, framelab_version, spec_json) VALUES (?1, ?2, ?3)",
        (
            humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            env!("CARGO_PKG_VERSION"),
            spec_json,
        ),
    )
    .map_err(|e| sqlite_failure(path, "write", &e))?;
    Ok(conn.last_insert_rowid())
}

/// Records a finished run's place in its experiment and its fingerprint, in one transaction.
pub fn record_experiment_run(
    path: &Path,
    run: &ExperimentRun,
    fingerprint: &Fingerprint,
) -> anyhow::Result<()> {
    let mut conn = open_writing(path)?;
    let fail = |e: rusqlite::Error| sqlite_failure(path, "write", &e);
    let tx = conn.transaction().map_err(fail)?;
    let params = serde_json::to_string(&run.params).unwrap_or_else(|_| "{}".into());
    tx.execute(
        "INSERT OR REPLACE INTO experiment_runs (run_id, experiment_id, variant, params_json, \
         repetition, slot, status, failure) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        rusqlite::params![
            run.run_id,
            run.experiment_id,
            run.variant,
            params,
            run.repetition,
            run.slot,
            run.status.name(),
            run.failure,
        ],
    )
    .map_err(fail)?;
    let f = fingerprint;
    tx.execute(
        "INSERT OR REPLACE INTO fingerprints (run_id, hostname, cpu_model, cores, kernel, \
         governor, boost, cpu_mhz, load_avg_1m, gpu, gpu_driver, pinned_cpus) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        rusqlite::params![
            run.run_id,
            f.hostname,
            f.cpu_model,
            f.cores,
            f.kernel,
            f.governor,
            f.boost,
            f.cpu_mhz,
            f.load_avg_1m,
            f.gpu,
            f.gpu_driver,
            f.pinned_cpus,
        ],
    )
    .map_err(fail)?;
    tx.commit().map_err(fail)
}

fn has_table(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = ?1",
        [name],
        |r| r.get(0),
    )
}

/// The experiment `path` holds (the latest, should it hold several), or `None` for a
/// file of plain runs.
pub fn load_experiment(path: &Path) -> anyhow::Result<Option<Experiment>> {
    let conn = super::reading::open_for_reading(path)?;
    let fail = |e: rusqlite::Error| sqlite_failure(path, "reading the experiment", &e);
    if !has_table(&conn, "experiments").map_err(fail)? {
        return Ok(None);
    }
    let head: Option<(i64, String, String)> = conn
        .query_row(
            "SELECT experiment_id, created_at, spec_json FROM experiments \
             ORDER BY experiment_id DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
        .map_err(fail)?;
    let Some((id, created_at, spec_json)) = head else {
        return Ok(None);
    };
    let mut stmt = conn
        .prepare(
            "SELECT run_id, variant, params_json, repetition, slot, status, failure \
             FROM experiment_runs WHERE experiment_id = ?1 ORDER BY slot, run_id",
        )
        .map_err(fail)?;
    let rows = stmt
        .query_map([id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, u32>(3)?,
                r.get::<_, u32>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, Option<String>>(6)?,
            ))
        })
        .map_err(fail)?;
    let mut runs = Vec::new();
    for row in rows {
        let (run_id, variant, params_json, repetition, slot, status, failure) =
            row.map_err(fail)?;
        let damaged = |what: &str| {
            one_line(format!(
                "{} is damaged or was edited by hand: run {run_id} of the experiment has {what}; \
                 restore an intact copy",
                path.display()
            ))
        };
        let params: BTreeMap<String, String> =
            serde_json::from_str(&params_json).map_err(|_| damaged("unreadable parameters"))?;
        let status = RunStatus::from_name(&status)
            .ok_or_else(|| damaged(&format!("an unknown status '{status}'")))?;
        runs.push(ExperimentRun {
            run_id,
            experiment_id: id,
            variant,
            params,
            repetition,
            slot,
            status,
            failure,
        });
    }
    Ok(Some(Experiment {
        id,
        created_at,
        spec_json,
        runs,
    }))
}

/// Fingerprints recorded in `path`, by run id (none for a file of plain runs).
pub fn load_fingerprints(path: &Path) -> anyhow::Result<HashMap<i64, Fingerprint>> {
    let conn = super::reading::open_for_reading(path)?;
    let fail = |e: rusqlite::Error| sqlite_failure(path, "reading fingerprints", &e);
    let mut out = HashMap::new();
    if !has_table(&conn, "fingerprints").map_err(fail)? {
        return Ok(out);
    }
    let mut stmt = conn
        .prepare(
            "SELECT run_id, hostname, cpu_model, cores, kernel, governor, boost, cpu_mhz, \
             load_avg_1m, gpu, gpu_driver, pinned_cpus FROM fingerprints",
        )
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                Fingerprint {
                    hostname: r.get(1)?,
                    cpu_model: r.get(2)?,
                    cores: r.get(3)?,
                    kernel: r.get(4)?,
                    governor: r.get(5)?,
                    boost: r.get(6)?,
                    cpu_mhz: r.get(7)?,
                    load_avg_1m: r.get(8)?,
                    gpu: r.get(9)?,
                    gpu_driver: r.get(10)?,
                    pinned_cpus: r.get(11)?,
                },
            ))
        })
        .map_err(fail)?;
    for row in rows {
        let (id, fingerprint) = row.map_err(fail)?;
        out.insert(id, fingerprint);
    }
    Ok(out)
}
