//! Writes a run as it goes: batched inserts into one open transaction, committed by the
//! collector at least once a second. Spans go into blocks of a few hundred (`blocks`),
//! one row each; the open block is written at each commit.
//!
//! Journal and sync settings, and why:
//! - While recording, `journal_mode = TRUNCATE` (a rollback journal): a commit writes the
//!   new pages straight into the main file, and only the few pages it changes (the last
//!   leaf and its parents) go to the journal first. Recording appends, so each page is
//!   written once. Write-ahead logging writes every page twice (log, then checkpoint) and
//!   measured about 30% more of the collector's CPU (BENCHMARKS.md). The main file holds
//!   every commit the moment it returns, so a copy of the `.framelab` file alone is always
//!   a complete run up to the last commit, and a `kill -9` of framelab loses only the open
//!   transaction (a hot journal left behind is rolled back by the next open).
//! - `synchronous = OFF` while recording into a file this writer created: a commit is in
//!   the kernel's page cache when it returns, which is all a `kill -9` of framelab needs
//!   (the pages outlive the process; the journal rolls back a commit cut short), and no
//!   `fsync` runs every 500 ms (measured in BENCHMARKS.md, "The run file unsynced while
//!   recording, …"). An operating-system crash or a power loss during the run may leave that
//!   new file damaged: it held nothing else. `finish` syncs the whole file once.
//!   A file that already held runs keeps `synchronous = NORMAL` (the journal is synced
//!   before the main file is overwritten), so its earlier runs survive a power loss too.
//! - Readers (a live `framelab report`, `sqlite3`) read the last commit; a commit waits
//!   for them through the busy handler.
//! - `foreign_keys = OFF`: rusqlite's bundled SQLite enforces them by default, which
//!   looks up `runs` for every span (measured: about a third of the insert cost). The
//!   writer only ever inserts its own run id; the `REFERENCES` clauses stay as
//!   documentation.
//! - On `finish` (and `abandon`), the file is switched to `journal_mode = DELETE`, so no
//!   journal file stays beside it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::block_rows;
use super::blocks::{Block, BlockEncoder};
use super::codec::{self, u64_to_sql, META_COLUMNS};
use super::file::{self, one_line, sqlite_failure};
use crate::model::{
    CounterValue, EventRecord, Histogram, ImportInfo, ProcessStats, Run, RunMeta, Sample,
    SampleSeries, SourceStatus, Span, ThreadInfo,
};

/// Rows per multi-row INSERT: amortises statement execution over many rows
/// (measured by benches/src/bin/store_bench.rs; gains flatten beyond this).
const ROWS_PER_INSERT: usize = 256;

/// The ids of one table's rows belonging to this run, so a reader can seek to them
/// without an index on `run_id`.
#[derive(Default)]
struct IdRange {
    count: i64,
    first: Option<i64>,
    last: Option<i64>,
}

impl IdRange {
    /// Notes `rows` rows just inserted by one statement whose last rowid is `last`.
    /// One statement's rows get consecutive rowids: the writer holds the write lock.
    fn note(&mut self, last: i64, rows: usize) {
        let rows = rows as i64;
        self.first.get_or_insert(last - rows + 1);
        self.last = Some(last);
        self.count += rows;
    }
}

/// A table whose rows are bulk-inserted, with the columns after `run_id`.
struct BulkTable {
    name: &'static str,
    columns: &'static str,
    width: usize,
}

const COUNTERS: BulkTable = BulkTable {
    name: "counters",
    columns: "frame, counter_id, value",
    width: 3,
};
const EVENTS: BulkTable = BulkTable {
    name: "events",
    columns: "event_id, key, thread_id, t_ns",
    width: 4,
};

impl BulkTable {
    /// `INSERT ... VALUES (run_id, ?, ...), ...` for `rows` rows. The run id is a literal:
    /// one bind fewer per row, and it is our own integer.
    fn insert_sql(&self, run_id: i64, rows: usize) -> String {
        let one = format!("({run_id}{})", ", ?".repeat(self.width));
        let values = vec![one; rows].join(", ");
        format!(
            "INSERT INTO {} (run_id, {}) VALUES {values}",
            self.name, self.columns
        )
    }
}

/// Readings of the samplers; the table is keyed by (run, series, time), not by rowid.
const SAMPLES: BulkTable = BulkTable {
    name: "samples",
    columns: "series_id, t_ns, value",
    width: 3,
};

/// SQL text prepared once per writer (cached by the connection).
struct Statements {
    counters_many: String,
    counters_one: String,
    events_many: String,
    events_one: String,
    samples_many: String,
    samples_one: String,
}

impl Statements {
    fn new(run_id: i64) -> Self {
        Statements {
            counters_many: COUNTERS.insert_sql(run_id, ROWS_PER_INSERT),
            counters_one: COUNTERS.insert_sql(run_id, 1),
            events_many: EVENTS.insert_sql(run_id, ROWS_PER_INSERT),
            events_one: EVENTS.insert_sql(run_id, 1),
            // A reading repeated at the same instant replaces the first rather than failing.
            samples_many: SAMPLES.insert_sql(run_id, ROWS_PER_INSERT).replacen(
                "INSERT",
                "INSERT OR REPLACE",
                1,
            ),
            samples_one: SAMPLES
                .insert_sql(run_id, 1)
                .replacen("INSERT", "INSERT OR REPLACE", 1),
        }
    }
}

pub struct RunWriter {
    conn: Connection,
    path: PathBuf,
    run_id: i64,
    sql: Statements,
    /// The latest metadata given; its `end_reason` decides whether a commit finalises.
    meta: RunMeta,
    stage_count: usize,
    counter_name_count: usize,
    event_name_count: usize,
    thread_count: usize,
    /// Position in the run's process list by pid, and by name for the rows of no process (pid 0: `(exited children)`,
    /// `(not seen by name)`), which must not replace each other.
    process_index: HashMap<(u32, String), i64>,
    /// Spans given but not yet in a written block.
    blocks: BlockEncoder,
    /// The id of the next block's first span, once known in the open transaction.
    next_span_id: Option<i64>,
    spans: IdRange,
    counters: IdRange,
    events: IdRange,
    finished: bool,
    /// This writer created the file (it held no run before).
    created: bool,
}

/// Inserts `rows` as `width` integers each, `ROWS_PER_INSERT` rows per statement.
fn insert_rows<T>(
    conn: &Connection,
    many_sql: &str,
    one_sql: &str,
    width: usize,
    rows: &[T],
    range: &mut IdRange,
    bind: impl Fn(&T, &mut [i64]),
) -> rusqlite::Result<()> {
    let mut values = vec![0i64; width];
    let mut chunks = rows.chunks_exact(ROWS_PER_INSERT);
    if chunks.len() > 0 {
        let mut stmt = conn.prepare_cached(many_sql)?;
        for chunk in &mut chunks {
            let mut index = 1;
            for row in chunk {
                bind(row, &mut values);
                for &v in &values {
                    stmt.raw_bind_parameter(index, v)?;
                    index += 1;
                }
            }
            stmt.raw_execute()?;
            range.note(conn.last_insert_rowid(), chunk.len());
        }
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut stmt = conn.prepare_cached(one_sql)?;
        for row in rest {
            bind(row, &mut values);
            for (i, &v) in values.iter().enumerate() {
                stmt.raw_bind_parameter(i + 1, v)?;
            }
            stmt.raw_execute()?;
            range.note(conn.last_insert_rowid(), 1);
        }
    }
    Ok(())
}

impl RunWriter {
    /// Creates (or opens, for a multi-run file) `path` and starts a run with `meta`.
    /// `meta.id` is ignored: the file assigns the run id (see `run_id`).
    /// Fails before anything is recorded when the path cannot hold a run file.
    pub fn create(path: &Path, meta: &RunMeta) -> anyhow::Result<RunWriter> {
        let (conn, created) = file::open_for_writing(path)?;
        let fail = |e: rusqlite::Error| sqlite_failure(path, "write", &e);
        let columns = META_COLUMNS.join(", ");
        let placeholders = vec!["?"; META_COLUMNS.len()].join(", ");
        conn.execute(
            &format!("INSERT INTO runs ({columns}) VALUES ({placeholders})"),
            rusqlite::params_from_iter(codec::meta_values(meta)),
        )
        .map_err(fail)?;
        let run_id = conn.last_insert_rowid();
        super::tags::insert_tags(&conn, run_id, &meta.tags).map_err(fail)?;
        // temp_store: the statement journal of multi-row inserts stays in memory.
        let synchronous = if created { "OFF" } else { "NORMAL" };
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = TRUNCATE; PRAGMA synchronous = {synchronous}; \
             PRAGMA foreign_keys = OFF; PRAGMA temp_store = MEMORY;"
        ))
        .map_err(fail)?;
        conn.set_prepared_statement_cache_capacity(32);
        let mut stored_meta = meta.clone();
        stored_meta.id = run_id;
        // Not in the row: written by the first `update_meta` that has any.
        stored_meta.session = Default::default();
        Ok(RunWriter {
            conn,
            path: path.to_owned(),
            run_id,
            sql: Statements::new(run_id),
            meta: stored_meta,
            stage_count: 0,
            counter_name_count: 0,
            event_name_count: 0,
            thread_count: 0,
            process_index: HashMap::new(),
            blocks: BlockEncoder::default(),
            next_span_id: None,
            spans: IdRange::default(),
            counters: IdRange::default(),
            events: IdRange::default(),
            finished: false,
            created,
        })
    }

    /// Opens run `run_id` of the existing file `path` again to add to it (a fold of the
    /// records a killed run left in its spill): its names, threads and rows counted, the
    /// next block after the file's last.
    pub fn resume(path: &Path, run_id: i64) -> anyhow::Result<RunWriter> {
        let fail = |e: rusqlite::Error| sqlite_failure(path, "write", &e);
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(fail)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(fail)?;
        conn.execute_batch("PRAGMA foreign_keys = OFF; PRAGMA temp_store = MEMORY;")
            .map_err(fail)?;
        let count = |table: &str| -> anyhow::Result<usize> {
            conn.query_row(
                &format!("SELECT count(*) FROM {table} WHERE run_id = ?1"),
                [run_id],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as usize)
            .map_err(fail)
        };
        let (stages, counter_names, event_names, threads) = (
            count("stages")?,
            count("counter_names")?,
            count("event_names")?,
            count("threads")?,
        );
        let range = |prefix: &str| -> anyhow::Result<IdRange> {
            conn.query_row(
                &format!(
                    "SELECT {prefix}_count, {prefix}_id_first, {prefix}_id_last FROM runs WHERE run_id = ?1"
                ),
                [run_id],
                |r| {
                    Ok(IdRange {
                        count: r.get(0)?,
                        first: r.get(1)?,
                        last: r.get(2)?,
                    })
                },
            )
            .map_err(fail)
        };
        let (spans, counters, events) = (range("span")?, range("counter")?, range("event")?);
        let meta = RunMeta {
            id: run_id,
            ..RunMeta::default()
        };
        Ok(RunWriter {
            conn,
            path: path.to_owned(),
            run_id,
            sql: Statements::new(run_id),
            meta,
            stage_count: stages,
            counter_name_count: counter_names,
            event_name_count: event_names,
            thread_count: threads,
            process_index: HashMap::new(),
            blocks: BlockEncoder::default(),
            next_span_id: None,
            spans,
            counters,
            events,
            finished: false,
            created: false,
        })
    }

    /// Takes back everything given since the last commit, and closes: a fold that could not
    /// be completed leaves the run as it was (its spill stays, to be folded whole later).
    pub fn roll_back(mut self) {
        if self.in_transaction() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        self.finished = true;
    }

    /// Threads the run has.
    pub fn thread_count(&self) -> usize {
        self.thread_count
    }

    /// Sets the run's count of invalid records and its first span's start (what a fold of
    /// records converted after the run's last commit changes of its metadata).
    pub fn set_conversion_facts(
        &mut self,
        invalid_records: u64,
        first_span_ns: Option<i64>,
    ) -> anyhow::Result<()> {
        self.begin()?;
        self.conn
            .execute(
                "UPDATE runs SET invalid_records = ?2, first_span_ns = ?3 WHERE run_id = ?1",
                (self.run_id, u64_to_sql(invalid_records), first_span_ns),
            )
            .map(drop)
            .map_err(|e| self.fail("write", e))
    }

    /// The id of this run in the file (`runs.run_id`).
    pub fn run_id(&self) -> i64 {
        self.run_id
    }

    /// Takes back a run that never started (its command could not be launched): its row
    /// is deleted, so a multi-run file keeps only its other runs. True when this writer
    /// created the file, which the caller then removes.
    pub fn abandon(mut self) -> bool {
        if self.in_transaction() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        let _ = self
            .conn
            .execute("DELETE FROM runs WHERE run_id = ?1", [self.run_id]);
        self.done();
        self.created
    }

    /// Writing is over: the file goes back to `journal_mode = DELETE`, so no empty journal
    /// stays beside it, or beside where it was. A reader still attached can keep the mode
    /// from changing, harmlessly: the journal then stays until the next writer opens the
    /// file.
    fn done(&mut self) {
        let _ = self
            .conn
            .query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()));
        self.finished = true;
    }

    /// Where the run file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn fail(&self, doing: &str, e: rusqlite::Error) -> anyhow::Error {
        sqlite_failure(&self.path, doing, &e)
    }

    /// Asked of SQLite rather than tracked: after some failures (a full disk) SQLite
    /// rolls the transaction back by itself.
    fn in_transaction(&self) -> bool {
        !self.conn.is_autocommit()
    }

    /// Starts the transaction that the next `commit` ends, on the first write after one.
    fn begin(&mut self) -> anyhow::Result<()> {
        if !self.in_transaction() {
            self.conn
                .execute_batch("BEGIN IMMEDIATE")
                .map_err(|e| self.fail("write", e))?;
            // Another writer may have added blocks since our last transaction.
            self.next_span_id = None;
        }
        Ok(())
    }

    /// Inserts a name row (stage, counter or event name) and returns its index.
    fn add_name(
        &mut self,
        table: &str,
        id_column: &str,
        next: usize,
        name: &str,
    ) -> anyhow::Result<u16> {
        let Ok(id) = u16::try_from(next) else {
            return Err(one_line(format!(
                "run {} already has {next} {table}, the most a run file holds; \
                 intern fewer names",
                self.run_id
            )));
        };
        self.begin()?;
        self.conn
            .prepare_cached(&format!(
                "INSERT INTO {table} (run_id, {id_column}, name) VALUES (?1, ?2, ?3)"
            ))
            .and_then(|mut stmt| stmt.execute((self.run_id, id, name)))
            .map_err(|e| self.fail("write", e))?;
        Ok(id)
    }

    /// Adds a stage name; spans refer to it by the returned id (0, 1, 2, ...).
    pub fn add_stage(&mut self, name: &str) -> anyhow::Result<u16> {
        let id = self.add_name("stages", "stage_id", self.stage_count, name)?;
        self.stage_count += 1;
        Ok(id)
    }

    pub fn add_counter_name(&mut self, name: &str) -> anyhow::Result<u16> {
        let id = self.add_name("counter_names", "counter_id", self.counter_name_count, name)?;
        self.counter_name_count += 1;
        Ok(id)
    }

    pub fn add_event_name(&mut self, name: &str) -> anyhow::Result<u16> {
        let id = self.add_name("event_names", "event_id", self.event_name_count, name)?;
        self.event_name_count += 1;
        Ok(id)
    }

    /// Adds a thread; spans and events refer to it by the returned id (0, 1, 2, ...).
    pub fn add_thread(&mut self, thread: &ThreadInfo) -> anyhow::Result<u32> {
        let Ok(id) = u32::try_from(self.thread_count) else {
            return Err(one_line(format!(
                "run {} has more threads than a run file holds",
                self.run_id
            )));
        };
        self.begin()?;
        self.conn
            .prepare_cached(
                "INSERT INTO threads (run_id, thread_id, pid, tid, name, dropped) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut stmt| {
                stmt.execute((
                    self.run_id,
                    id,
                    thread.pid,
                    thread.tid,
                    &thread.name,
                    u64_to_sql(thread.dropped),
                ))
            })
            .map_err(|e| self.fail("write", e))?;
        self.thread_count += 1;
        Ok(id)
    }

    /// Sets the count of records thread `thread`'s ring dropped (a total, not an increment).
    pub fn set_thread_dropped(&mut self, thread: u32, dropped: u64) -> anyhow::Result<()> {
        if thread as usize >= self.thread_count {
            return Err(one_line(format!(
                "run {} has no thread {thread} (it has {}); add it with add_thread first",
                self.run_id, self.thread_count
            )));
        }
        self.begin()?;
        self.conn
            .prepare_cached("UPDATE threads SET dropped = ?3 WHERE run_id = ?1 AND thread_id = ?2")
            .and_then(|mut stmt| stmt.execute((self.run_id, thread, u64_to_sql(dropped))))
            .map_err(|e| self.fail("write", e))?;
        Ok(())
    }

    /// Appends spans; they are on disk at the next `commit`.
    pub fn spans(&mut self, spans: &[Span]) -> anyhow::Result<()> {
        if spans.is_empty() {
            return Ok(());
        }
        self.begin()?;
        // The encoder is taken out while it hands blocks to `write_block` (which needs self).
        let mut encoder = std::mem::take(&mut self.blocks);
        let written = encoder.push_all(spans, |block| self.write_block(&block));
        self.blocks = encoder;
        written
    }

    /// Inserts a closed block after the file's last span, in the open transaction.
    fn write_block(&mut self, block: &Block) -> anyhow::Result<()> {
        let fail = |e: rusqlite::Error| sqlite_failure(&self.path, "write", &e);
        let first_id = match self.next_span_id {
            Some(id) => id,
            None => block_rows::next_first_id(&self.conn).map_err(fail)?,
        };
        block_rows::insert_block(&self.conn, first_id, self.run_id, block).map_err(fail)?;
        let count = block.count as i64;
        self.next_span_id = Some(first_id + count);
        self.spans.note(first_id + count - 1, block.count);
        Ok(())
    }

    /// Appends per-frame counter values.
    pub fn counters(&mut self, values: &[CounterValue]) -> anyhow::Result<()> {
        if values.is_empty() {
            return Ok(());
        }
        self.begin()?;
        insert_rows(
            &self.conn,
            &self.sql.counters_many,
            &self.sql.counters_one,
            COUNTERS.width,
            values,
            &mut self.counters,
            |c, v| {
                v[0] = u64_to_sql(c.frame);
                v[1] = i64::from(c.counter);
                v[2] = c.value;
            },
        )
        .map_err(|e| sqlite_failure(&self.path, "write", &e))
    }

    /// Appends instant events.
    pub fn events(&mut self, events: &[EventRecord]) -> anyhow::Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        self.begin()?;
        insert_rows(
            &self.conn,
            &self.sql.events_many,
            &self.sql.events_one,
            EVENTS.width,
            events,
            &mut self.events,
            |e, v| {
                v[0] = i64::from(e.event);
                v[1] = u64_to_sql(e.key);
                v[2] = i64::from(e.thread);
                v[3] = e.t_ns;
            },
        )
        .map_err(|e| sqlite_failure(&self.path, "write", &e))
    }

    /// Records process accounting. A pid seen before is updated in place (accounting
    /// grows over the window), a new pid is appended: call it with the whole list or
    /// with what changed, as convenient.
    pub fn processes(&mut self, processes: &[ProcessStats]) -> anyhow::Result<()> {
        if processes.is_empty() {
            return Ok(());
        }
        self.begin()?;
        for p in processes {
            let next = self.process_index.len() as i64;
            let key = (
                p.pid,
                if p.pid == 0 {
                    p.name.clone()
                } else {
                    String::new()
                },
            );
            let index = *self.process_index.entry(key).or_insert(next);
            self.conn
                .prepare_cached(
                    "INSERT OR REPLACE INTO processes (run_id, process_index, pid, ppid, name, \
                     role, user_ns, sys_ns, wall_ns, peak_rss_bytes, cpu_resolution_ns, \
                     cpu_source, note, service, watch_role) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                )
                .and_then(|mut stmt| {
                    stmt.execute((
                        self.run_id,
                        index,
                        p.pid,
                        p.ppid,
                        &p.name,
                        codec::role_name(p.role),
                        p.user_ns,
                        p.sys_ns,
                        p.wall_ns,
                        u64_to_sql(p.peak_rss_bytes),
                        p.cpu_resolution_ns,
                        p.cpu_source.name(),
                        &p.note,
                        &p.service,
                        &p.watch_role,
                    ))
                })
                .map_err(|e| sqlite_failure(&self.path, "write", &e))?;
        }
        Ok(())
    }

    /// Adds telemetry series; samples refer to them by the given ids.
    pub fn sample_series(&mut self, series: &[(u32, SampleSeries)]) -> anyhow::Result<()> {
        if series.is_empty() {
            return Ok(());
        }
        self.begin()?;
        for (id, s) in series {
            self.conn
                .prepare_cached(
                    "INSERT OR REPLACE INTO sample_series (run_id, series_id, source, metric, \
                     entity, label, unit, kind) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .and_then(|mut stmt| {
                    stmt.execute((
                        self.run_id,
                        id,
                        &s.source,
                        &s.metric,
                        &s.entity,
                        &s.label,
                        &s.unit,
                        codec::series_kind_name(s.kind),
                    ))
                })
                .map_err(|e| self.fail("write", e))?;
        }
        Ok(())
    }

    /// Appends telemetry readings.
    pub fn samples(&mut self, samples: &[Sample]) -> anyhow::Result<()> {
        if samples.is_empty() {
            return Ok(());
        }
        self.begin()?;
        // The table has no rowid: the id range is not recorded (rows are found by key).
        let mut unused = IdRange::default();
        insert_rows(
            &self.conn,
            &self.sql.samples_many,
            &self.sql.samples_one,
            SAMPLES.width,
            samples,
            &mut unused,
            |s, v| {
                v[0] = i64::from(s.series);
                v[1] = s.t_ns;
                v[2] = s.value;
            },
        )
        .map_err(|e| sqlite_failure(&self.path, "write", &e))
    }

    /// Records how each telemetry source fared (replacing what was recorded before).
    pub fn sample_sources(&mut self, sources: &[SourceStatus]) -> anyhow::Result<()> {
        if sources.is_empty() {
            return Ok(());
        }
        self.begin()?;
        for s in sources {
            self.conn
                .prepare_cached(
                    "INSERT OR REPLACE INTO sample_sources (run_id, source, state, detail, \
                     every_ns, reads, skipped, cpu_ns, wall_ns) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )
                .and_then(|mut stmt| {
                    stmt.execute((
                        self.run_id,
                        &s.source,
                        codec::source_state_name(s.state),
                        &s.detail,
                        s.every_ns,
                        u64_to_sql(s.reads),
                        u64_to_sql(s.skipped),
                        s.cpu_ns,
                        s.wall_ns,
                    ))
                })
                .map_err(|e| self.fail("write", e))?;
        }
        Ok(())
    }

    /// Records where an imported run came from and what could not be used.
    pub fn import_info(&mut self, info: &ImportInfo) -> anyhow::Result<()> {
        self.begin()?;
        let json = |v: &Vec<String>| serde_json::to_string(v).expect("strings serialise");
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO imports \
                 (run_id, format, files_json, skipped, first_skipped, notes_json) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut stmt| {
                stmt.execute((
                    self.run_id,
                    &info.format,
                    json(&info.files),
                    u64_to_sql(info.skipped),
                    &info.first_skipped,
                    json(&info.notes),
                ))
            })
            .map_err(|e| self.fail("write", e))?;
        Ok(())
    }

    /// Adds histograms imported as such, numbered in order.
    pub fn histograms(&mut self, histograms: &[Histogram]) -> anyhow::Result<()> {
        self.begin()?;
        for (id, h) in histograms.iter().enumerate() {
            let buckets = serde_json::to_string(&h.buckets).expect("buckets serialise");
            self.conn
                .prepare_cached(
                    "INSERT INTO histograms (run_id, hist_id, name, unit, buckets_json) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .and_then(|mut stmt| stmt.execute((self.run_id, id, &h.name, &h.unit, buckets)))
                .map_err(|e| self.fail("write", e))?;
        }
        Ok(())
    }

    /// Adds metrics from the command's output and the output kept (schema 5).
    pub fn outputs(
        &mut self,
        metrics: &[crate::output::MetricValue],
        outputs: &[crate::output::CapturedOutput],
    ) -> anyhow::Result<()> {
        self.begin()?;
        super::outputs::insert_metrics(&self.conn, self.run_id, metrics)
            .and_then(|_| super::outputs::insert_outputs(&self.conn, self.run_id, outputs))
            .map_err(|e| self.fail("write", e))
    }

    /// The scheduler's view of the run (schema 7).
    pub fn sched(&mut self, timeline: &crate::sched::SchedTimeline) -> anyhow::Result<()> {
        self.begin()?;
        super::sched::insert_sched(&self.conn, self.run_id, timeline)
            .map_err(|e| self.fail("write", e))
    }

    /// Replaces the run's metadata (window, end reason, exit, drop counts...).
    /// `meta.id` is ignored. With an `end_reason` other than `Unfinished`, the next
    /// `commit` also makes the main file self-contained.
    pub fn update_meta(&mut self, meta: &RunMeta) -> anyhow::Result<()> {
        self.begin()?;
        let assignments: Vec<String> = META_COLUMNS
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} = ?{}", i + 1))
            .collect();
        let sql = format!(
            "UPDATE runs SET {} WHERE run_id = {}",
            assignments.join(", "),
            self.run_id
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| stmt.execute(rusqlite::params_from_iter(codec::meta_values(meta))))
            .map_err(|e| self.fail("write", e))?;
        if meta.session != self.meta.session {
            self.session_facts(&meta.session)?;
        }
        if meta.tags != self.meta.tags {
            super::tags::replace_tags(&self.conn, self.run_id, &meta.tags)
                .map_err(|e| self.fail("write", e))?;
        }
        self.meta = meta.clone();
        self.meta.id = self.run_id;
        Ok(())
    }

    /// The run's `SessionFacts` as JSON in the `framelab` table, or no row when empty.
    fn session_facts(&mut self, facts: &crate::model::SessionFacts) -> anyhow::Result<()> {
        let key = codec::session_facts_key(self.run_id);
        let result = if facts.is_empty() {
            self.conn
                .execute("DELETE FROM framelab WHERE key = ?1", [&key])
        } else {
            let json = serde_json::to_string(facts)?;
            self.conn.execute(
                "INSERT OR REPLACE INTO framelab (key, value) VALUES (?1, ?2)",
                [&key, &json],
            )
        };
        result.map(drop).map_err(|e| self.fail("write", e))
    }

    /// Makes everything written so far durable against a kill of this process.
    /// Call at least once a second.
    pub fn commit(&mut self) -> anyhow::Result<()> {
        if let Some(block) = self.blocks.finish() {
            self.begin()?;
            self.write_block(&block)?;
        }
        if self.in_transaction() {
            self.save_ranges()?;
            self.conn
                .execute_batch("COMMIT")
                .map_err(|e| self.fail("commit to", e))?;
        }
        Ok(())
    }

    /// Commits and removes the journal file, so the `.framelab` file stands alone.
    /// Call once, after the final `update_meta`.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.commit()?;
        if self.created {
            // Recorded unsynced (`synchronous = OFF`): the finished run is made durable once.
            fs_sync(&self.path)?;
        }
        self.done();
        Ok(())
    }

    /// Records where this run's rows are, inside the transaction being committed.
    fn save_ranges(&mut self) -> anyhow::Result<()> {
        let (s, c, e) = (&self.spans, &self.counters, &self.events);
        self.conn
            .prepare_cached(
                "UPDATE runs SET span_count = ?2, span_id_first = ?3, span_id_last = ?4, \
                 counter_count = ?5, counter_id_first = ?6, counter_id_last = ?7, \
                 event_count = ?8, event_id_first = ?9, event_id_last = ?10 \
                 WHERE run_id = ?1",
            )
            .and_then(|mut stmt| {
                stmt.execute((
                    self.run_id,
                    s.count,
                    s.first,
                    s.last,
                    c.count,
                    c.first,
                    c.last,
                    e.count,
                    e.first,
                    e.last,
                ))
            })
            .map_err(|e| sqlite_failure(&self.path, "write", &e))?;
        Ok(())
    }
}

/// Writes a whole run at once (an import, a converted run) and returns its id in the file.
pub fn write_run(path: &Path, run: &Run) -> anyhow::Result<i64> {
    // All or nothing: a run written whole is never half in the file (a full disk), and a
    // file made for it is not left behind, whichever step failed.
    let existed = path.exists();
    let remove_new_file = || {
        if !existed {
            let _ = std::fs::remove_file(path);
            let mut journal = path.as_os_str().to_owned();
            journal.push("-journal");
            let _ = std::fs::remove_file(PathBuf::from(journal));
        }
    };
    let mut w = match RunWriter::create(path, &run.meta) {
        Ok(w) => w,
        Err(e) => {
            remove_new_file();
            return Err(e);
        }
    };
    let written = write_all(&mut w, run).map(|()| w.run_id());
    let done = match written {
        Ok(id) => w.finish().map(|_| id),
        Err(e) => {
            if w.abandon() {
                remove_new_file();
            }
            return Err(e);
        }
    };
    if done.is_err() {
        remove_new_file();
    }
    done
}

fn write_all(w: &mut RunWriter, run: &Run) -> anyhow::Result<()> {
    for name in &run.stages {
        w.add_stage(name)?;
    }
    for name in &run.counter_names {
        w.add_counter_name(name)?;
    }
    for name in &run.event_names {
        w.add_event_name(name)?;
    }
    for thread in &run.threads {
        w.add_thread(thread)?;
    }
    w.spans(&run.spans)?;
    w.counters(&run.counters)?;
    w.events(&run.events)?;
    w.processes(&run.processes)?;
    let t = &run.telemetry;
    let series: Vec<(u32, SampleSeries)> = (0u32..).zip(t.series.iter().cloned()).collect();
    w.sample_series(&series)?;
    w.samples(&t.samples)?;
    w.sample_sources(&t.sources)?;
    if let Some(info) = &run.import {
        w.import_info(info)?;
    }
    w.histograms(&run.histograms)?;
    w.outputs(&run.metrics, &run.outputs)?;
    if let Some(timeline) = &run.sched {
        w.sched(timeline)?;
    }
    w.update_meta(&run.meta)?;
    w.commit()
}

impl Drop for RunWriter {
    /// A writer dropped without `finish` (an early return on error) still commits what it
    /// was given: nothing handed to it is silently dropped.
    fn drop(&mut self) {
        if !self.finished && (self.in_transaction() || !self.blocks.is_empty()) {
            if let Err(e) = self.commit() {
                log::info!("the last records were not saved: {e}");
            }
        }
    }
}

/// Flushes the whole file at `path` to the disk.
fn fs_sync(path: &Path) -> anyhow::Result<()> {
    std::fs::File::open(path)
        .and_then(|file| file.sync_all())
        .map_err(|e| {
            one_line(format!(
                "cannot sync the run file {} to the disk: {e}; check the disk, the run is in it up to the last commit",
                path.display()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synchronous(w: &RunWriter) -> i64 {
        w.conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn a_new_file_is_recorded_unsynced_and_an_existing_one_synced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.framelab");
        let mut first = RunWriter::create(&path, &RunMeta::default()).unwrap();
        assert_eq!(synchronous(&first), 0, "a new file: OFF while recording");
        first.add_stage("a").unwrap();
        first.commit().unwrap();
        first.finish().unwrap();
        // A second run in the same file: its earlier run must survive a power loss.
        let second = RunWriter::create(&path, &RunMeta::default()).unwrap();
        assert_eq!(synchronous(&second), 1, "an existing file: NORMAL");
        second.finish().unwrap();
        assert!(!dir.path().join("r.framelab-journal").exists());
    }
}
