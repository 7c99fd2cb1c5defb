//! The history store: a SQLite file (the default) or a PostgreSQL database (a
//! `postgres://` URL), with one schema on both (docs/history.md). Every add is one
//! transaction; a run already there is skipped (its id is the primary key), so adds are
//! idempotent and many writers can add at once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::pg_client::{PgClient, DEFAULT_DEADLINE};
use super::sql::{Param, Tx};
use crate::experiment::Fingerprint;

/// The schema this framelab writes and reads. A store of a newer one is refused; an older
/// one is upgraded in place when opened ([`MIGRATE_1_TO_2`]).
pub const SCHEMA_VERSION: i64 = 2;
/// What `check_schema` finds in a SQLite file that holds other tables than a store's.
const FOREIGN_RUN_FILE: i64 = -1;
const FOREIGN_DATABASE: i64 = -2;

/// Where history goes without `--history`: `$FRAMELAB_HISTORY`, else this (relative to the
/// current directory).
pub const DEFAULT_PATH: &str = ".framelab/history.sqlite";

/// How long a SQLite writer waits for another one to finish.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// A PostgreSQL transaction that lost a deadlock is tried again this often.
const POSTGRES_RETRIES: usize = 5;

/// Application name of framelab's PostgreSQL connections (seen in pg_stat_activity).
pub const APPLICATION_NAME: &str = "framelab-history";

/// The tables, created in this order (PostgreSQL and SQLite read the same text).
const SCHEMA: [&str; 6] = [
    "CREATE TABLE framelab_history (schema_version BIGINT NOT NULL)",
    "CREATE TABLE machines (machine TEXT PRIMARY KEY, hostname TEXT NOT NULL, \
     cpu_model TEXT NOT NULL, cores BIGINT NOT NULL, kernel TEXT NOT NULL, \
     governor TEXT NOT NULL, boost TEXT NOT NULL, gpu TEXT NOT NULL, \
     gpu_driver TEXT NOT NULL, pinned_cpus TEXT NOT NULL)",
    "CREATE TABLE runs (run_id TEXT PRIMARY KEY, commit_sha TEXT NOT NULL, branch TEXT, \
     dirty BIGINT NOT NULL, machine TEXT NOT NULL REFERENCES machines (machine), \
     recorded_at BIGINT NOT NULL, added_at BIGINT NOT NULL, variant TEXT NOT NULL, \
     command TEXT NOT NULL, source TEXT NOT NULL, \
     launch_mono_ns BIGINT NOT NULL DEFAULT 0, add_order BIGINT NOT NULL DEFAULT 0)",
    "CREATE TABLE run_tags (run_id TEXT NOT NULL REFERENCES runs (run_id), \
     tag TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (run_id, tag))",
    "CREATE TABLE metric_values (run_id TEXT NOT NULL REFERENCES runs (run_id), \
     metric TEXT NOT NULL, value DOUBLE PRECISION NOT NULL, unit TEXT NOT NULL, \
     direction TEXT NOT NULL, PRIMARY KEY (run_id, metric))",
    "CREATE INDEX metric_values_by_metric ON metric_values (metric)",
];

/// Version 1 to 2, in the transaction that opens the store: the runs' finer order. The
/// columns are added last, where [`SCHEMA`] has them, so an upgraded store is a new one.
/// A run of version 1 has no launch clock (0) and keeps its place: its add order is its
/// rank in version 1's order, (recorded_at, run_id). Run ids are hexadecimal digits of one
/// length, which every collation orders as bytes, as the code does.
const MIGRATE_1_TO_2: [&str; 4] = [
    "ALTER TABLE runs ADD COLUMN launch_mono_ns BIGINT NOT NULL DEFAULT 0",
    "ALTER TABLE runs ADD COLUMN add_order BIGINT NOT NULL DEFAULT 0",
    "UPDATE runs SET add_order = ranked.n FROM (SELECT run_id, \
     row_number() OVER (ORDER BY recorded_at, run_id) AS n FROM runs) AS ranked \
     WHERE ranked.run_id = runs.run_id",
    "UPDATE framelab_history SET schema_version = 2",
];

/// One run as the store keeps it.
#[derive(Clone, Debug)]
pub struct RunRecord {
    /// Stable across copies of the run file (`super::add::run_id`).
    pub run_id: String,
    pub commit: String,
    pub branch: Option<String>,
    /// The work tree had changes not committed when the run was added.
    pub dirty: bool,
    pub machine: Machine,
    pub recorded_at_unix_s: i64,
    /// CLOCK_MONOTONIC at the run's launch (`RunMeta::origin_mono_ns`); 0 for an import.
    pub launch_mono_ns: i64,
    /// The experiment's variant (with its parameter values); empty for a plain run.
    pub variant: String,
    pub command: String,
    /// The file the run came from, as given.
    pub source: String,
    pub tags: Vec<(String, String)>,
    pub values: Vec<MetricValue>,
}

#[derive(Clone, Debug)]
pub struct Machine {
    /// A hash of the fingerprint's identity (`super::add::machine_id`).
    pub id: String,
    pub fingerprint: Fingerprint,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MetricValue {
    pub metric: String,
    /// In the unit a report prints (µs for times).
    pub value: f64,
    pub unit: String,
    pub direction: String,
}

/// What `show`, `export` and `load_series` narrow to; `None` is everything.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub metric: Option<String>,
    pub branch: Option<String>,
    /// A machine's id or its host name.
    pub machine: Option<String>,
}

/// When a run was recorded, as finely as the store knows. Its order (fields in order) is a
/// machine's history order; the run id breaks what ties remain.
///
/// `started_at` has whole seconds, so runs of one second (short runs, a bench's
/// repetitions) need a finer key. Within one machine (its id holds the host and kernel)
/// and one second, two runs come from one boot, where the monotonic clock at launch orders
/// them exactly, whichever was added first. Runs without one (imports, runs of a version-1
/// store: 0) fall back on the order they were added. The launch clock comes after the
/// second, never instead of it: it orders nothing across boots, and a key that used it for
/// some pairs and the wall clock for others would not be a total order (a sort needs one).
/// So a wall clock stepped back across a second still misorders: no run file names its
/// boot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct RecordedAt {
    /// `started_at`, Unix seconds.
    pub unix_s: i64,
    pub launch_mono_ns: i64,
    /// Counts up across adds; two PostgreSQL adds at once can share one.
    pub add_order: i64,
}

/// One value of one run, with where it was measured.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueRow {
    pub run_id: String,
    pub commit: String,
    pub branch: Option<String>,
    pub machine: String,
    pub recorded_at: RecordedAt,
    pub metric: String,
    pub value: f64,
    pub unit: String,
    pub direction: String,
}

impl ValueRow {
    /// Oldest first: in one second, machine by machine (their clocks say nothing of each
    /// other's), each machine's runs in [`RecordedAt`]'s order, the run id last.
    pub fn history_order(&self) -> (i64, &str, RecordedAt, &str) {
        (
            self.recorded_at.unix_s,
            &self.machine,
            self.recorded_at,
            &self.run_id,
        )
    }
}

/// Runs added and runs that were there already.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddOutcome {
    pub added: usize,
    pub skipped: usize,
}

enum Backend {
    Sqlite(rusqlite::Connection),
    Postgres(PgClient),
}

pub struct Store {
    backend: Backend,
    /// For messages: the file, or `postgres://host:port/db` without the password.
    pub location: String,
}

/// `--history` as given, else `$FRAMELAB_HISTORY`, else [`DEFAULT_PATH`].
pub fn location(given: Option<&str>) -> String {
    given
        .map(str::to_owned)
        .or_else(|| {
            std::env::var("FRAMELAB_HISTORY")
                .ok()
                .filter(|v| !v.is_empty())
        })
        .unwrap_or_else(|| DEFAULT_PATH.to_owned())
}

fn is_postgres(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

impl Store {
    /// Opens the store, creating its tables when `create` (an add); a store that does not
    /// exist yet is an error for readers.
    pub fn open(location: &str, create: bool) -> Result<Store> {
        let backend = if is_postgres(location) {
            Backend::Postgres(connect_postgres(location)?)
        } else if let Some((scheme, _)) = location.split_once("://") {
            // A mistyped scheme would otherwise be a file under `./SCHEME:/…`, and the
            // run never reach the team's server.
            return Err(crate::usage::UsageError(format!(
                "--history {scheme}://…: not a store framelab can use: give a postgres:// \
                 (or postgresql://) URL, or a SQLite file path"
            ))
            .into());
        } else {
            Backend::Sqlite(open_sqlite(Path::new(location), create)?)
        };
        let mut store = Store {
            backend,
            location: describe(location),
        };
        store.check_schema(create)?;
        Ok(store)
    }

    /// Runs `work` in one transaction, committed when it returns Ok. A PostgreSQL deadlock
    /// between two writers is tried again (the loser's transaction was rolled back whole).
    fn transaction<T>(&mut self, mut work: impl FnMut(&mut dyn Tx) -> Result<T>) -> Result<T> {
        let location = self.location.clone();
        match &mut self.backend {
            Backend::Sqlite(connection) => {
                let mut tx = connection
                    .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                    .with_context(|| format!("history store {location}"))?;
                let value = work(&mut tx).with_context(|| format!("history store {location}"))?;
                tx.commit()
                    .with_context(|| format!("history store {location}"))?;
                Ok(value)
            }
            Backend::Postgres(client) => {
                let mut tries = 0;
                loop {
                    tries += 1;
                    let result = (|| {
                        let mut tx = client.transaction()?;
                        let value = work(&mut tx)?;
                        tx.commit()?;
                        Ok(value)
                    })();
                    match result {
                        Err(e) if tries < POSTGRES_RETRIES && lost_a_race(&e) => continue,
                        // Flattened to text: a connection's io error (a broken pipe) in the
                        // chain would read as `| head` closing framelab's output.
                        other => {
                            return other
                                .map_err(|e| anyhow::anyhow!("history store {location}: {e:#}"))
                        }
                    }
                }
            }
        }
    }

    /// Creates the tables of an empty store; refuses a store of a newer schema, and a SQLite
    /// file that holds other tables (a run file, another program's database).
    fn check_schema(&mut self, create: bool) -> Result<()> {
        let postgres = matches!(self.backend, Backend::Postgres(_));
        let location = self.location.clone();
        let exists_sql = if postgres {
            "SELECT count(*) FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name = 'framelab_history'"
        } else {
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'framelab_history'"
        };
        let version = self.transaction(|tx| {
            if postgres && create {
                // Two first writers must not both create the tables.
                tx.execute("SELECT pg_advisory_xact_lock(7170017)", &[])?;
            }
            let exists = tx.query(exists_sql, &[])?[0][0].int() > 0;
            if !exists && !postgres {
                // A SQLite file with other tables is some other database (a run file given
                // as the store, say): never add the history's tables beside them.
                let tables = tx.query(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
                    &[],
                )?;
                if !tables.is_empty() {
                    let names: Vec<String> = tables.iter().map(|r| r[0].text()).collect();
                    return Ok(Some(if names.iter().any(|n| n == "framelab") {
                        FOREIGN_RUN_FILE
                    } else {
                        FOREIGN_DATABASE
                    }));
                }
            }
            if !exists {
                if !create {
                    return Ok(None);
                }
                for statement in SCHEMA {
                    tx.execute(statement, &[])?;
                }
                tx.execute(
                    "INSERT INTO framelab_history (schema_version) VALUES ($1)",
                    &[Param::Int(SCHEMA_VERSION)],
                )?;
                return Ok(Some(SCHEMA_VERSION));
            }
            let mut version = stored_version(tx)?;
            if version == 1 {
                if postgres {
                    // Two openers must not both upgrade: the second waits here, then finds
                    // the store upgraded.
                    tx.execute("SELECT pg_advisory_xact_lock(7170017)", &[])?;
                    version = stored_version(tx)?;
                }
                if version == 1 {
                    for statement in MIGRATE_1_TO_2 {
                        tx.execute(statement, &[])
                            .context("upgrading it from schema version 1 to 2")?;
                    }
                    version = 2;
                }
            }
            Ok(Some(version))
        })?;
        match version {
            None => bail!(
                "{location} holds no history yet: add runs with framelab history add RUN --history {location}"
            ),
            Some(FOREIGN_RUN_FILE) => bail!(
                "{location} is a framelab run file, not a history store: name a store file of \
                 its own (e.g. .framelab/history.sqlite)"
            ),
            Some(FOREIGN_DATABASE) => bail!(
                "{location} is an SQLite database of something else, not a history store: name a \
                 store file of its own (e.g. .framelab/history.sqlite)"
            ),
            Some(v) if v > SCHEMA_VERSION => bail!(
                "history store {location} has schema version {v}, newer than this framelab's \
                 {SCHEMA_VERSION}: use a newer framelab to read or add to it"
            ),
            Some(v) if v < SCHEMA_VERSION => bail!(
                "history store {location} has schema version {v}, which no framelab wrote: \
                 it cannot be upgraded; add the runs to a new store"
            ),
            Some(_) => Ok(()),
        }
    }

    /// Adds the runs in one transaction; runs already in the store are skipped. Each run
    /// added takes the next add order, in the order of `runs`: for the runs only it orders
    /// (imports of one second), the order they were given in is the best there is.
    pub fn add(&mut self, runs: &[RunRecord]) -> Result<AddOutcome> {
        let pause = test_pause();
        self.transaction(|tx| {
            let mut outcome = AddOutcome::default();
            // SQLite's writers take turns (immediate transactions); PostgreSQL's do not,
            // so two adds at once may share numbers, and the run id orders those.
            let last = tx.query("SELECT COALESCE(max(add_order), 0) FROM runs", &[])?[0][0].int();
            for run in runs {
                let add_order = last + outcome.added as i64 + 1;
                if insert_run(tx, run, add_order)? {
                    outcome.added += 1;
                    if let Some(flag) = &pause {
                        wait_while_flag(flag);
                    }
                } else {
                    outcome.skipped += 1;
                }
            }
            Ok(outcome)
        })
    }

    /// Every value the filter lets through, in no particular order.
    pub fn values(&mut self, filter: &Filter) -> Result<Vec<ValueRow>> {
        let mut sql = String::from(
            "SELECT v.run_id, r.commit_sha, r.branch, r.machine, r.recorded_at, v.metric, \
             v.value, v.unit, v.direction, r.launch_mono_ns, r.add_order FROM metric_values v \
             JOIN runs r ON r.run_id = v.run_id JOIN machines m ON m.machine = r.machine \
             WHERE 1 = 1",
        );
        let mut params = Vec::new();
        if let Some(metric) = &filter.metric {
            params.push(Param::Text(metric));
            sql += &format!(" AND v.metric = ${}", params.len());
        }
        if let Some(branch) = &filter.branch {
            params.push(Param::Text(branch));
            sql += &format!(" AND r.branch = ${}", params.len());
        }
        if let Some(machine) = &filter.machine {
            params.push(Param::Text(machine));
            let n = params.len();
            sql += &format!(" AND (r.machine = ${n} OR m.hostname = ${n})");
        }
        let rows = self.transaction(|tx| tx.query(&sql, &params))?;
        Ok(rows
            .into_iter()
            .map(|r| ValueRow {
                run_id: r[0].text(),
                commit: r[1].text(),
                branch: r[2].opt_text(),
                machine: r[3].text(),
                recorded_at: RecordedAt {
                    unix_s: r[4].int(),
                    launch_mono_ns: r[9].int(),
                    add_order: r[10].int(),
                },
                metric: r[5].text(),
                value: r[6].real(),
                unit: r[7].text(),
                direction: r[8].text(),
            })
            .collect())
    }

    /// Every machine: its id and fingerprint.
    pub fn machines(&mut self) -> Result<Vec<Machine>> {
        let rows = self.transaction(|tx| {
            tx.query(
                "SELECT machine, hostname, cpu_model, cores, kernel, governor, boost, gpu, \
                 gpu_driver, pinned_cpus FROM machines",
                &[],
            )
        })?;
        let mut machines: Vec<Machine> = rows
            .into_iter()
            .map(|r| Machine {
                id: r[0].text(),
                fingerprint: Fingerprint {
                    hostname: r[1].text(),
                    cpu_model: r[2].text(),
                    cores: u32::try_from(r[3].int()).unwrap_or(0),
                    kernel: r[4].text(),
                    governor: r[5].text(),
                    boost: r[6].text(),
                    gpu: r[7].text(),
                    gpu_driver: r[8].text(),
                    pinned_cpus: r[9].text(),
                    cpu_mhz: None,
                    load_avg_1m: None,
                },
            })
            .collect();
        machines.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(machines)
    }

    /// Every run's tags, `key=value` sorted by key, by run id.
    pub fn tags(&mut self) -> Result<std::collections::BTreeMap<String, Vec<(String, String)>>> {
        let rows =
            self.transaction(|tx| tx.query("SELECT run_id, tag, value FROM run_tags", &[]))?;
        let mut tags: std::collections::BTreeMap<String, Vec<(String, String)>> =
            Default::default();
        for r in rows {
            tags.entry(r[0].text())
                .or_default()
                .push((r[1].text(), r[2].text()));
        }
        for list in tags.values_mut() {
            list.sort();
        }
        Ok(tags)
    }
}

/// The version a store's `framelab_history` holds (0 when it holds none).
fn stored_version(tx: &mut dyn Tx) -> Result<i64> {
    let rows = tx.query("SELECT max(schema_version) FROM framelab_history", &[])?;
    Ok(rows.first().map_or(0, |r| r[0].int()))
}

/// Inserts one run; false when its id was there already (nothing is written then).
fn insert_run(tx: &mut dyn Tx, run: &RunRecord, add_order: i64) -> Result<bool> {
    let f = &run.machine.fingerprint;
    tx.execute(
        "INSERT INTO machines (machine, hostname, cpu_model, cores, kernel, governor, boost, \
         gpu, gpu_driver, pinned_cpus) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
         ON CONFLICT (machine) DO NOTHING",
        &[
            Param::Text(&run.machine.id),
            Param::Text(&f.hostname),
            Param::Text(&f.cpu_model),
            Param::Int(f.cores.into()),
            Param::Text(&f.kernel),
            Param::Text(&f.governor),
            Param::Text(&f.boost),
            Param::Text(&f.gpu),
            Param::Text(&f.gpu_driver),
            Param::Text(&f.pinned_cpus),
        ],
    )?;
    let added_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let inserted = tx.execute(
        "INSERT INTO runs (run_id, commit_sha, branch, dirty, machine, recorded_at, added_at, \
         variant, command, source, launch_mono_ns, add_order) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
         ON CONFLICT (run_id) DO NOTHING",
        &[
            Param::Text(&run.run_id),
            Param::Text(&run.commit),
            Param::OptText(run.branch.as_deref()),
            Param::Int(run.dirty.into()),
            Param::Text(&run.machine.id),
            Param::Int(run.recorded_at_unix_s),
            Param::Int(added_at),
            Param::Text(&run.variant),
            Param::Text(&run.command),
            Param::Text(&run.source),
            Param::Int(run.launch_mono_ns),
            Param::Int(add_order),
        ],
    )?;
    if inserted == 0 {
        return Ok(false);
    }
    for (tag, value) in &run.tags {
        tx.execute(
            "INSERT INTO run_tags (run_id, tag, value) VALUES ($1, $2, $3)",
            &[
                Param::Text(&run.run_id),
                Param::Text(tag),
                Param::Text(value),
            ],
        )?;
    }
    for v in &run.values {
        tx.execute(
            "INSERT INTO metric_values (run_id, metric, value, unit, direction) \
             VALUES ($1, $2, $3, $4, $5)",
            &[
                Param::Text(&run.run_id),
                Param::Text(&v.metric),
                Param::Real(v.value),
                Param::Text(&v.unit),
                Param::Text(&v.direction),
            ],
        )?;
    }
    Ok(true)
}

/// A deadlock or serialization failure: another writer won, this one may try again.
fn lost_a_race(error: &anyhow::Error) -> bool {
    use tokio_postgres::error::SqlState;
    error
        .downcast_ref::<tokio_postgres::Error>()
        .and_then(|e| e.code())
        .is_some_and(|c| {
            *c == SqlState::T_R_DEADLOCK_DETECTED || *c == SqlState::T_R_SERIALIZATION_FAILURE
        })
}

fn open_sqlite(path: &Path, create: bool) -> Result<rusqlite::Connection> {
    use rusqlite::OpenFlags;
    let exists = path.exists();
    if path.is_dir() {
        bail!(
            "the history store {} is a directory: give a file in it (e.g. {})",
            path.display(),
            path.join("history.sqlite").display()
        );
    }
    if !exists && !create {
        bail!(
            "no history at {}: add runs with framelab history add RUN (or give --history)",
            path.display()
        );
    }
    if !exists {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
    }
    let flags = if create {
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
    } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = rusqlite::Connection::open_with_flags(path, flags)
        .with_context(|| format!("cannot open the history store {}", path.display()))?;
    connection.busy_timeout(SQLITE_BUSY_TIMEOUT)?;
    // A file that is not SQLite at all is told apart by `check_schema`.
    if create && exists && crate::store::is_sqlite(path) {
        check_intact(&connection, path)?;
    }
    Ok(connection)
}

/// Refuses a damaged store before anything is written into it: a write into a broken
/// b-tree can spread the damage, and the runs added would be lost with the file.
fn check_intact(connection: &rusqlite::Connection, path: &Path) -> Result<()> {
    let found: rusqlite::Result<Vec<String>> = connection
        .prepare("PRAGMA quick_check(3)")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect());
    let problem = match found {
        Ok(lines) if lines == ["ok"] => return Ok(()),
        // SQLite heads its findings with the database's name.
        Ok(lines) => (lines.iter())
            .flat_map(|l| l.lines())
            .filter(|l| !l.starts_with("***"))
            .collect::<Vec<_>>()
            .join("; "),
        Err(e) => e.to_string(),
    };
    let p = path.display();
    bail!(
        "history store {p} is damaged (PRAGMA quick_check: {}), so nothing was added: restore \
         it from a backup, or copy what is readable with `sqlite3 {p} .dump | sqlite3 \
         recovered.sqlite` (`.recover` where .dump fails) and add to that (--history \
         recovered.sqlite)",
        crate::display::text(&problem.replace('\n', " "))
    )
}

/// Connects, or says in one line which server could not be reached and why. The whole
/// handshake and every statement after it have the URL's `connect_timeout`, else
/// [`DEFAULT_DEADLINE`].
fn connect_postgres(url: &str) -> Result<PgClient> {
    let target = super::pg_connect::target(url)
        .map_err(|e| anyhow::anyhow!("{}: not a PostgreSQL URL ({e:#})", describe(url)))?;
    let mut config = target.config.clone();
    config.application_name(APPLICATION_NAME);
    let deadline = *config.get_connect_timeout().unwrap_or(&DEFAULT_DEADLINE);
    config.connect_timeout(deadline);
    let server = server_of(&config);
    let mode = target.ssl_mode;
    let connected = match super::pg_tls::connector(&target)
        .map_err(|e| anyhow::anyhow!("{}: {e:#}", describe(url)))?
    {
        Some(tls) => PgClient::connect(&config, tls, deadline, server.clone()),
        None => PgClient::connect(&config, tokio_postgres::NoTls, deadline, server.clone()),
    };
    connected.map_err(|e| {
        // A deadline passed says what it is itself (and names the server).
        let Some(pg) = e.downcast_ref::<tokio_postgres::Error>() else {
            return e;
        };
        let mut why = reason(pg);
        let refusal = super::pg_tls::certificate_refusal(pg);
        let hint = if refusal == Some(super::pg_tls::Refusal::WrongName) {
            why = format!(
                "the server's certificate failed verification: it does not name {}",
                host_of(&config)
            );
            " (sslmode=verify-full): reach the server by a name its certificate holds, or \
             check the CA alone with sslmode=verify-ca"
                .to_owned()
        } else if why == "server does not support TLS" {
            format!(
                " (sslmode={}): turn TLS on in the server's postgresql.conf (ssl = on), or use \
                 sslmode=prefer to connect without it",
                mode.name()
            )
        } else if pg.to_string().contains("TLS") {
            // rustls names the check that failed in its own terms; what failed is enough.
            if refusal.is_some() {
                why = "the server's certificate failed verification".into();
            }
            format!(
                " (sslmode={}): check that sslrootcert names the CA that signed the server's \
                 certificate",
                mode.name()
            )
        } else if mode == super::pg_connect::SslMode::Disable && why.contains("no encryption") {
            " (sslmode=disable: this server takes TLS connections only; use sslmode=verify-full \
             with sslrootcert=CA.pem)"
                .to_owned()
        } else if why == "password missing" {
            ": give it in $PGPASSWORD or in a password file (~/.pgpass or $PGPASSFILE, mode \
             0600)"
                .to_owned()
        } else {
            String::new()
        };
        anyhow::anyhow!("cannot connect to PostgreSQL at {server}: {why}{hint}")
    })
}

/// The innermost cause, which names what went wrong ("Connection refused").
fn reason(error: &tokio_postgres::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(s) = source {
        text = s.to_string();
        source = s.source();
    }
    text.replace('\n', " ")
}

/// `host:port` of the first host (a Unix socket's directory, if that is what it is).
fn server_of(config: &tokio_postgres::Config) -> String {
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{}:{port}", host_of(config))
}

/// The first host, as the URL names it (what a certificate must name for verify-full).
fn host_of(config: &tokio_postgres::Config) -> String {
    match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        Some(tokio_postgres::config::Host::Unix(dir)) => dir.display().to_string(),
        None => "localhost".to_owned(),
    }
}

/// The location for messages: a URL without its password.
fn describe(location: &str) -> String {
    if !is_postgres(location) {
        return location.to_owned();
    }
    match super::pg_connect::parse_url(location) {
        Ok(config) => format!(
            "postgres://{}/{}",
            server_of(&config),
            config.get_dbname().unwrap_or("")
        ),
        Err(_) => "the PostgreSQL URL given".to_owned(),
    }
}

/// For the tests of a write cut short: `FRAMELAB_HISTORY_TEST_PAUSE=FILE` makes an add
/// create FILE after its first run's rows and wait (inside the transaction) until FILE is
/// gone, so a test can kill the server or the connection mid-write.
fn test_pause() -> Option<PathBuf> {
    std::env::var_os("FRAMELAB_HISTORY_TEST_PAUSE").map(PathBuf::from)
}

fn wait_while_flag(flag: &Path) {
    if std::fs::write(flag, b"mid-write\n").is_err() {
        return;
    }
    // Bounded: a test that never removes the flag does not hang the add for ever.
    for _ in 0..6000 {
        if !flag.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_described_without_passwords() {
        assert_eq!(
            describe("postgres://me:secret@db.example:6543/bench"),
            "postgres://db.example:6543/bench"
        );
        assert_eq!(describe("runs/history.sqlite"), "runs/history.sqlite");
    }

    /// A run of machine `bench1` with an fps of 60, at commit `c-RUN_ID`.
    fn run(run_id: &str, at: i64, launch_mono_ns: i64) -> RunRecord {
        RunRecord {
            run_id: run_id.into(),
            commit: format!("c-{run_id}"),
            branch: Some("main".into()),
            dirty: false,
            machine: Machine {
                id: "m1".into(),
                fingerprint: Fingerprint {
                    hostname: "bench1".into(),
                    ..Fingerprint::default()
                },
            },
            recorded_at_unix_s: at,
            launch_mono_ns,
            variant: String::new(),
            command: "./enc".into(),
            source: "r.framelab".into(),
            tags: Vec::new(),
            values: vec![MetricValue {
                metric: "fps".into(),
                value: 60.0,
                unit: "fps".into(),
                direction: "higher_is_better".into(),
            }],
        }
    }

    /// The run ids of the store's one series, oldest first.
    fn order(store: &mut Store) -> Vec<String> {
        let series = super::super::series::load_series(store, &Filter::default()).unwrap();
        assert_eq!(series.len(), 1);
        series[0].points.iter().map(|p| p.run_id.clone()).collect()
    }

    /// Runs of one second stand in launch order, though the later one's id sorts first
    /// and it was added first; imports (no launch clock) in the order they were added.
    #[test]
    fn runs_of_one_second_are_in_launch_order_then_add_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        let mut store = Store::open(path.to_str().unwrap(), true).unwrap();
        const AT: i64 = 1_800_000_000;
        store.add(&[run("00aa", AT, 2_000)]).unwrap();
        store.add(&[run("ffbb", AT, 1_000)]).unwrap();
        store.add(&[run("ff11", AT + 1, 0)]).unwrap();
        store
            .add(&[run("0022", AT + 1, 0), run("0011", AT + 1, 0)])
            .unwrap();
        assert_eq!(order(&mut store), ["ffbb", "00aa", "ff11", "0022", "0011"]);
    }

    /// The tables version 1 wrote, as it wrote them.
    const SCHEMA_V1: [&str; 6] = [
        "CREATE TABLE framelab_history (schema_version BIGINT NOT NULL)",
        "CREATE TABLE machines (machine TEXT PRIMARY KEY, hostname TEXT NOT NULL, \
         cpu_model TEXT NOT NULL, cores BIGINT NOT NULL, kernel TEXT NOT NULL, \
         governor TEXT NOT NULL, boost TEXT NOT NULL, gpu TEXT NOT NULL, \
         gpu_driver TEXT NOT NULL, pinned_cpus TEXT NOT NULL)",
        "CREATE TABLE runs (run_id TEXT PRIMARY KEY, commit_sha TEXT NOT NULL, branch TEXT, \
         dirty BIGINT NOT NULL, machine TEXT NOT NULL REFERENCES machines (machine), \
         recorded_at BIGINT NOT NULL, added_at BIGINT NOT NULL, variant TEXT NOT NULL, \
         command TEXT NOT NULL, source TEXT NOT NULL)",
        "CREATE TABLE run_tags (run_id TEXT NOT NULL REFERENCES runs (run_id), \
         tag TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (run_id, tag))",
        "CREATE TABLE metric_values (run_id TEXT NOT NULL REFERENCES runs (run_id), \
         metric TEXT NOT NULL, value DOUBLE PRECISION NOT NULL, unit TEXT NOT NULL, \
         direction TEXT NOT NULL, PRIMARY KEY (run_id, metric))",
        "CREATE INDEX metric_values_by_metric ON metric_values (metric)",
    ];

    fn columns(db: &rusqlite::Connection, table: &str) -> Vec<String> {
        let mut statement = db.prepare(&format!("PRAGMA table_info({table})")).unwrap();
        let names = statement.query_map([], |r| r.get(1)).unwrap();
        names.map(Result::unwrap).collect()
    }

    /// A version-1 store is upgraded when a reader opens it: its runs keep version 1's
    /// order, a run added after comes after them in its second, and its tables are a new
    /// store's.
    #[test]
    fn a_version_1_store_is_upgraded_in_place_and_keeps_its_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        const AT: i64 = 1_800_000_000;
        {
            let db = rusqlite::Connection::open(&path).unwrap();
            for statement in SCHEMA_V1 {
                db.execute(statement, []).unwrap();
            }
            db.execute_batch(
                "INSERT INTO framelab_history VALUES (1);
                 INSERT INTO machines VALUES ('m1', 'bench1', '', 0, '', '', '', '', '', '');",
            )
            .unwrap();
            for (id, at) in [("ff01", AT), ("0b03", AT - 10), ("0a02", AT)] {
                db.execute(
                    "INSERT INTO runs VALUES (?1, 'c-' || ?1, 'main', 0, 'm1', ?2, 0, '', '', '')",
                    rusqlite::params![id, at],
                )
                .unwrap();
                db.execute(
                    "INSERT INTO metric_values VALUES (?1, 'fps', 60, 'fps', 'higher_is_better')",
                    [id],
                )
                .unwrap();
            }
        }
        let location = path.to_str().unwrap();
        let mut store = Store::open(location, false).unwrap();
        assert_eq!(order(&mut store), ["0b03", "0a02", "ff01"]);
        store.add(&[run("0001", AT, 5)]).unwrap();
        assert_eq!(order(&mut store), ["0b03", "0a02", "ff01", "0001"]);
        drop(store);
        // Opened again: upgraded once.
        let mut store = Store::open(location, true).unwrap();
        assert_eq!(order(&mut store).len(), 4);
        drop(store);

        let db = rusqlite::Connection::open(&path).unwrap();
        let version: i64 = db
            .query_row("SELECT schema_version FROM framelab_history", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let mut added = db
            .prepare("SELECT run_id FROM runs ORDER BY add_order")
            .unwrap();
        let added: Vec<String> = (added.query_map([], |r| r.get(0)).unwrap())
            .map(Result::unwrap)
            .collect();
        assert_eq!(added, ["0b03", "0a02", "ff01", "0001"]);
        let fresh = dir.path().join("fresh.sqlite");
        Store::open(fresh.to_str().unwrap(), true).unwrap();
        let fresh = rusqlite::Connection::open(&fresh).unwrap();
        for table in [
            "framelab_history",
            "machines",
            "runs",
            "run_tags",
            "metric_values",
        ] {
            assert_eq!(columns(&db, table), columns(&fresh, table), "{table}");
        }
    }

    #[test]
    fn a_missing_sqlite_store_is_not_created_by_a_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        let error = Store::open(path.to_str().unwrap(), false).err().unwrap();
        assert!(format!("{error:#}").contains("no history at"), "{error:#}");
        assert!(!path.exists());
    }
}
