//! Schema creation and the checks that a file is a framelab file this build can read.
//! The schema is documented column by column in docs/run-file.md; keep the two in step.

use rusqlite::{Connection, OptionalExtension};

/// Bumped on any change an older framelab could misread; a file newer than this is refused.
pub const SCHEMA_VERSION: i64 = 9;

/// `PRAGMA application_id` of a run file: ASCII "FLAB", so `file(1)` and tools can tell.
pub const APPLICATION_ID: i32 = 0x464C_4142;

/// Schema 1 to 8's `spans` table, one row per span: since schema 9 spans are stored in
/// `span_blocks` and `spans` is a view with these columns (`block_rows`). `create` makes
/// it and replays the 8 → 9 step on it, so a new file is made as an upgraded one would be.
pub const SPANS_TABLE_8: &str = "
CREATE TABLE spans (
    id         INTEGER PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES runs(run_id),
    frame      INTEGER NOT NULL,
    stage_id   INTEGER NOT NULL,
    thread_id  INTEGER NOT NULL,
    start_ns   INTEGER NOT NULL,
    dur_ns     INTEGER NOT NULL
);
";

/// Tables. Big tables (`span_blocks`, `counters`, `events`) have no index besides their
/// integer primary key, which costs nothing (it is the rowid): an index on `run_id` would
/// add ~9 bytes per row. Instead each `runs` row records the id range of its rows, runs
/// being written one at a time, and the reader seeks by that range.
const TABLES: &str = "
CREATE TABLE framelab (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE runs (
    run_id            INTEGER PRIMARY KEY,
    name              TEXT NOT NULL,
    command_json      TEXT NOT NULL,
    started_at        TEXT NOT NULL,
    framelab_version  TEXT NOT NULL,
    host_name         TEXT NOT NULL,
    host_cpu_model    TEXT NOT NULL,
    host_cores        INTEGER NOT NULL,
    host_kernel       TEXT NOT NULL,
    host_clocksource  TEXT NOT NULL,
    clock             TEXT NOT NULL,
    target_fps        REAL,
    budget_ns         INTEGER,
    origin_mono_ns    INTEGER NOT NULL,
    window_start_ns   INTEGER NOT NULL,
    window_end_ns     INTEGER NOT NULL,
    frames_hint       INTEGER,
    end_reason        TEXT NOT NULL,
    exit_code         INTEGER,
    exit_signal       INTEGER,
    exit_crashed      INTEGER,
    dropped_events    INTEGER NOT NULL,
    invalid_records   INTEGER NOT NULL,
    names_refused     INTEGER NOT NULL,
    warmup_ns         INTEGER NOT NULL DEFAULT 0,
    duration_ns       INTEGER,
    collector_cpu_ns  INTEGER NOT NULL DEFAULT 0,
    span_count        INTEGER NOT NULL DEFAULT 0,
    span_id_first     INTEGER,
    span_id_last      INTEGER,
    counter_count     INTEGER NOT NULL DEFAULT 0,
    counter_id_first  INTEGER,
    counter_id_last   INTEGER,
    event_count       INTEGER NOT NULL DEFAULT 0,
    event_id_first    INTEGER,
    event_id_last     INTEGER
);

CREATE TABLE stages (
    run_id    INTEGER NOT NULL REFERENCES runs(run_id),
    stage_id  INTEGER NOT NULL,
    name      TEXT NOT NULL,
    PRIMARY KEY (run_id, stage_id)
) WITHOUT ROWID;

CREATE TABLE counter_names (
    run_id      INTEGER NOT NULL REFERENCES runs(run_id),
    counter_id  INTEGER NOT NULL,
    name        TEXT NOT NULL,
    PRIMARY KEY (run_id, counter_id)
) WITHOUT ROWID;

CREATE TABLE event_names (
    run_id    INTEGER NOT NULL REFERENCES runs(run_id),
    event_id  INTEGER NOT NULL,
    name      TEXT NOT NULL,
    PRIMARY KEY (run_id, event_id)
) WITHOUT ROWID;

CREATE TABLE threads (
    run_id         INTEGER NOT NULL REFERENCES runs(run_id),
    thread_id      INTEGER NOT NULL,
    pid            INTEGER NOT NULL,
    tid            INTEGER NOT NULL,
    name           TEXT NOT NULL,
    dropped        INTEGER NOT NULL,
    PRIMARY KEY (run_id, thread_id)
) WITHOUT ROWID;

CREATE TABLE counters (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs(run_id),
    frame       INTEGER NOT NULL,
    counter_id  INTEGER NOT NULL,
    value       INTEGER NOT NULL
);

CREATE TABLE events (
    id         INTEGER PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES runs(run_id),
    event_id   INTEGER NOT NULL,
    key        INTEGER NOT NULL,
    thread_id  INTEGER NOT NULL,
    t_ns       INTEGER NOT NULL
);

CREATE TABLE processes (
    run_id          INTEGER NOT NULL REFERENCES runs(run_id),
    process_index   INTEGER NOT NULL,
    pid             INTEGER NOT NULL,
    ppid            INTEGER NOT NULL,
    name            TEXT NOT NULL,
    role            TEXT NOT NULL,
    user_ns         INTEGER NOT NULL,
    sys_ns          INTEGER NOT NULL,
    wall_ns         INTEGER NOT NULL,
    peak_rss_bytes  INTEGER NOT NULL,
    PRIMARY KEY (run_id, process_index)
) WITHOUT ROWID;

CREATE TABLE sample_sources (
    run_id    INTEGER NOT NULL REFERENCES runs(run_id),
    source    TEXT NOT NULL,
    state     TEXT NOT NULL,
    detail    TEXT NOT NULL,
    every_ns  INTEGER NOT NULL,
    reads     INTEGER NOT NULL,
    skipped   INTEGER NOT NULL,
    cpu_ns    INTEGER NOT NULL,
    wall_ns   INTEGER NOT NULL,
    PRIMARY KEY (run_id, source)
) WITHOUT ROWID;

CREATE TABLE sample_series (
    run_id     INTEGER NOT NULL REFERENCES runs(run_id),
    series_id  INTEGER NOT NULL,
    source     TEXT NOT NULL,
    metric     TEXT NOT NULL,
    entity     TEXT NOT NULL,
    label      TEXT NOT NULL,
    unit       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    PRIMARY KEY (run_id, series_id)
) WITHOUT ROWID;

-- Clustered by run and series: one run's readings of one metric are contiguous on disk,
-- with no index besides the key and no rowid.
CREATE TABLE samples (
    run_id     INTEGER NOT NULL REFERENCES runs(run_id),
    series_id  INTEGER NOT NULL,
    t_ns       INTEGER NOT NULL,
    value      INTEGER NOT NULL,
    PRIMARY KEY (run_id, series_id, t_ns)
) WITHOUT ROWID;
";

/// Added in schema 2: where an imported run came from, and histograms imported as such.
/// Small (one row per run, a few per histogram), so lists are JSON text.
pub const IMPORT_TABLES: &str = "
CREATE TABLE imports (
    run_id         INTEGER PRIMARY KEY REFERENCES runs(run_id),
    format         TEXT NOT NULL,
    files_json     TEXT NOT NULL,
    skipped        INTEGER NOT NULL,
    first_skipped  TEXT,
    notes_json     TEXT NOT NULL
);

CREATE TABLE histograms (
    run_id        INTEGER NOT NULL REFERENCES runs(run_id),
    hist_id       INTEGER NOT NULL,
    name          TEXT NOT NULL,
    unit          TEXT NOT NULL,
    buckets_json  TEXT NOT NULL,
    PRIMARY KEY (run_id, hist_id)
) WITHOUT ROWID;
";

/// Added in schema 3 (CPU accounting, issue 10 items 2 and 7): for each process row, the
/// resolution of its CPU figure, where the figure comes from and a note. Its own block, run
/// as is both when a file is created and by the 2 → 3 migration, so it can be merged with
/// other schema-3 additions into one step. Rows of older files were all read from /proc in
/// clock ticks (USER_HZ, 100 on every Linux framelab runs on).
pub const PROCESS_CPU_COLUMNS: &str = "
ALTER TABLE processes ADD COLUMN cpu_resolution_ns INTEGER NOT NULL DEFAULT 10000000;
ALTER TABLE processes ADD COLUMN cpu_source TEXT NOT NULL DEFAULT 'proc';
ALTER TABLE processes ADD COLUMN note TEXT NOT NULL DEFAULT '';
";

/// Schema 4: where the warmup was counted from, the frames it was, when the first span
/// started. Runs from before were all warmed up from launch.
pub const RUNS_WARMUP_COLUMNS: &str = "
ALTER TABLE runs ADD COLUMN warmup_from TEXT NOT NULL DEFAULT 'launch';
ALTER TABLE runs ADD COLUMN warmup_frames INTEGER;
ALTER TABLE runs ADD COLUMN first_span_ns INTEGER;
";

/// Schema 5 (issue 12): metrics taken from the command's own output or result file
/// (`--metric`), and what a run kept of its command's output (the last 1 MiB of each
/// stream captured). `role` is `command` for now; services started for a run will add
/// their own role names to both. Also new in 5: `experiment_runs.status` may be `warmup`;
/// `processes.role` may be `service`, with the service's name in `processes.service`.
pub const OUTPUT_TABLES: &str = "
CREATE TABLE metrics (
    run_id      INTEGER NOT NULL REFERENCES runs(run_id),
    role        TEXT NOT NULL,
    name        TEXT NOT NULL,
    position    INTEGER NOT NULL,
    value       REAL,
    unit        TEXT NOT NULL,
    direction   TEXT NOT NULL,
    definition  TEXT NOT NULL,
    failure     TEXT,
    PRIMARY KEY (run_id, role, name)
) WITHOUT ROWID;

CREATE TABLE outputs (
    run_id   INTEGER NOT NULL REFERENCES runs(run_id),
    role     TEXT NOT NULL,
    stream   TEXT NOT NULL,
    bytes    INTEGER NOT NULL,
    dropped  INTEGER NOT NULL,
    content  BLOB NOT NULL,
    note     TEXT NOT NULL,
    PRIMARY KEY (run_id, role, stream)
) WITHOUT ROWID;

ALTER TABLE processes ADD COLUMN service TEXT NOT NULL DEFAULT '';
";

/// Schema 6 (issue 13): sampled profiles (`--profile`). One `profiles` row per profiled
/// run; frames (functions) and stacks deduplicated, a stack being a node of a prefix tree
/// (`parent_id` towards the root, NULL at the outermost frame), each sample pointing at
/// its leaf node. Runs from before have no profile: nothing to fill.
pub const PROFILE_TABLES: &str = "
CREATE TABLE profiles (
    run_id         INTEGER PRIMARY KEY REFERENCES runs(run_id),
    event          TEXT NOT NULL,
    frequency_hz   INTEGER NOT NULL,
    unwinding      TEXT NOT NULL,
    kernel_stacks  INTEGER NOT NULL,
    samples        INTEGER NOT NULL,
    lost           INTEGER NOT NULL,
    throttled      INTEGER NOT NULL,
    truncated      INTEGER NOT NULL,
    notes_json     TEXT NOT NULL
);

CREATE TABLE profile_frames (
    run_id    INTEGER NOT NULL REFERENCES runs(run_id),
    frame_id  INTEGER NOT NULL,
    function  TEXT NOT NULL,
    module    TEXT NOT NULL,
    known     INTEGER NOT NULL,
    PRIMARY KEY (run_id, frame_id)
) WITHOUT ROWID;

CREATE TABLE profile_stacks (
    run_id     INTEGER NOT NULL REFERENCES runs(run_id),
    stack_id   INTEGER NOT NULL,
    parent_id  INTEGER,
    frame_id   INTEGER NOT NULL,
    PRIMARY KEY (run_id, stack_id)
) WITHOUT ROWID;

CREATE TABLE profile_samples (
    run_id     INTEGER NOT NULL REFERENCES runs(run_id),
    sample_id  INTEGER NOT NULL,
    t_ns       INTEGER NOT NULL,
    pid        INTEGER NOT NULL,
    tid        INTEGER NOT NULL,
    cpu        INTEGER NOT NULL,
    stack_id   INTEGER,
    PRIMARY KEY (run_id, sample_id)
) WITHOUT ROWID;

CREATE VIEW profile_leaves AS
SELECT s.run_id, s.t_ns, s.pid, s.tid, s.cpu, f.function, f.module, f.known
FROM profile_samples AS s
LEFT JOIN profile_stacks AS k ON k.run_id = s.run_id AND k.stack_id = s.stack_id
LEFT JOIN profile_frames AS f ON f.run_id = s.run_id AND f.frame_id = k.frame_id;
";

/// Schema 7, two additions in one step (issue 26).
///
/// `processes.watch_role`: the role a watched process was given (`--watch-pid ROLE=PID`,
/// `--watch ROLE=NAME`, else its name), for rows of role `watched`; empty for the others
/// and for older runs, whose watched processes count under their own name.
///
/// `sched_status`, `sched_slices`: what the scheduler did with the run's threads
/// (`crate::sched`). `sched_status`
/// says where the times come from (`tracepoints`, `schedstat`, `none`), what was not
/// available and how to get it, and the resolution; `sched_slices` holds, from tracepoints,
/// each stretch a thread of the run was on a CPU (`on_cpu_ns` = `dur_ns`) or runnable and
/// waiting for one (`runnable_ns` = `dur_ns`, `by_comm` the task that held the CPU); the
/// rest of its time it was blocked. With `schedstat` the slices are the `threads` source's
/// `cpu_time` and `run_wait` series: none are stored twice. Runs from before have neither:
/// their busy time is the union of their spans, as it was.
pub const SCHEMA_7_ADDITIONS: &str = "
ALTER TABLE processes ADD COLUMN watch_role TEXT NOT NULL DEFAULT '';
CREATE TABLE sched_status (
    run_id         INTEGER PRIMARY KEY REFERENCES runs(run_id),
    source         TEXT NOT NULL,
    detail         TEXT NOT NULL,
    resolution_ns  INTEGER NOT NULL,
    lost           INTEGER NOT NULL
);
CREATE TABLE sched_slices (
    run_id         INTEGER NOT NULL REFERENCES runs(run_id),
    tid            INTEGER NOT NULL,
    start_ns       INTEGER NOT NULL,
    dur_ns         INTEGER NOT NULL,
    on_cpu_ns      INTEGER NOT NULL,
    runnable_ns    INTEGER NOT NULL,
    by_comm        TEXT
);
CREATE INDEX sched_slices_by_thread ON sched_slices (run_id, tid, start_ns);
";

/// Schema 8: `run_tags`, a run's `--tag KEY=VALUE`s (run, bench, import) in the order
/// given, a key at most once per run. A bench over `--param` tags each run with its
/// parameter values too. Older runs have none.
pub const SCHEMA_8_ADDITIONS: &str = "
CREATE TABLE run_tags (
    run_id    INTEGER NOT NULL REFERENCES runs(run_id),
    position  INTEGER NOT NULL,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
";

/// Experiments (`framelab bench`): which runs belong to which variant and parameter
/// values, and each run's environment fingerprint. `IF NOT EXISTS`: a file written by
/// `framelab run` before these tables existed gets them when a bench first writes to it.
pub const EXPERIMENT_TABLES: &str = "
CREATE TABLE IF NOT EXISTS experiments (
    experiment_id     INTEGER PRIMARY KEY,
    created_at        TEXT NOT NULL,
    framelab_version  TEXT NOT NULL,
    spec_json         TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS experiment_runs (
    run_id         INTEGER PRIMARY KEY REFERENCES runs(run_id),
    experiment_id  INTEGER NOT NULL REFERENCES experiments(experiment_id),
    variant        TEXT NOT NULL,
    params_json    TEXT NOT NULL,
    repetition     INTEGER NOT NULL,
    slot           INTEGER NOT NULL,
    status         TEXT NOT NULL,
    failure        TEXT
);

CREATE TABLE IF NOT EXISTS fingerprints (
    run_id        INTEGER PRIMARY KEY REFERENCES runs(run_id),
    hostname      TEXT NOT NULL,
    cpu_model     TEXT NOT NULL,
    cores         INTEGER NOT NULL,
    kernel        TEXT NOT NULL,
    governor      TEXT NOT NULL,
    boost         TEXT NOT NULL,
    cpu_mhz       REAL,
    load_avg_1m   REAL,
    gpu           TEXT NOT NULL,
    gpu_driver    TEXT NOT NULL,
    pinned_cpus   TEXT NOT NULL
);
";

/// The other views for people querying by hand.
const VIEWS: &str = "
CREATE VIEW named_counters AS
SELECT c.run_id, c.frame, n.name AS counter, c.value
FROM counters AS c
LEFT JOIN counter_names AS n ON n.run_id = c.run_id AND n.counter_id = c.counter_id;

CREATE VIEW named_events AS
SELECT e.run_id, n.name AS event, e.key, t.tid AS tid, e.t_ns / 1000.0 AS t_us
FROM events AS e
LEFT JOIN event_names AS n ON n.run_id = e.run_id AND n.event_id = e.event_id
LEFT JOIN threads AS t ON t.run_id = e.run_id AND t.thread_id = e.thread_id;

CREATE VIEW named_samples AS
SELECT s.run_id, x.source, x.metric, x.entity, x.label, x.unit, x.kind,
       s.t_ns, s.t_ns / 1e9 AS t_s, s.value
FROM samples AS s
JOIN sample_series AS x ON x.run_id = s.run_id AND x.series_id = s.series_id;
";

/// Creates every table and view in an empty database and stamps it as a framelab file.
/// Runs inside the caller's transaction.
pub fn create(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(TABLES)?;
    conn.execute_batch(SPANS_TABLE_8)?;
    conn.execute_batch(IMPORT_TABLES)?;
    conn.execute_batch(PROCESS_CPU_COLUMNS)?;
    conn.execute_batch(RUNS_WARMUP_COLUMNS)?;
    conn.execute_batch(OUTPUT_TABLES)?;
    conn.execute_batch(PROFILE_TABLES)?;
    conn.execute_batch(SCHEMA_7_ADDITIONS)?;
    conn.execute_batch(SCHEMA_8_ADDITIONS)?;
    conn.execute_batch(EXPERIMENT_TABLES)?;
    conn.execute_batch(VIEWS)?;
    conn.execute_batch(super::block_rows::SPAN_VIEWS)?;
    super::block_rows::rows_to_blocks(conn)?;
    conn.execute(
        "INSERT INTO framelab (key, value) VALUES ('schema_version', ?1), ('created_by', ?2)",
        (
            SCHEMA_VERSION.to_string(),
            format!("framelab {}", env!("CARGO_PKG_VERSION")),
        ),
    )?;
    stamp(conn, SCHEMA_VERSION)
}

/// Mirrors the version where generic tools look (`PRAGMA user_version`) and marks the file.
pub fn stamp(conn: &Connection, version: i64) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {version};"
    ))
}

/// What a database is, as far as framelab is concerned.
#[derive(Debug, PartialEq, Eq)]
pub enum FileKind {
    /// No tables at all: a fresh file (e.g. created by `touch`), safe to set up.
    Empty,
    /// A framelab file of this schema version.
    Framelab { version: i64 },
    /// Some other SQLite database.
    Foreign,
}

/// Identifies `conn`'s database. Errors only on read failures (corruption, I/O).
pub fn identify(conn: &Connection) -> rusqlite::Result<FileKind> {
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    if tables == 0 {
        return Ok(FileKind::Empty);
    }
    let has_table: bool = conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'framelab'",
        [],
        |r| r.get(0),
    )?;
    if !has_table {
        return Ok(FileKind::Foreign);
    }
    let version: Option<String> = conn
        .query_row(
            "SELECT value FROM framelab WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    match version.and_then(|v| v.trim().parse::<i64>().ok()) {
        Some(version) if version >= 1 => Ok(FileKind::Framelab { version }),
        _ => Ok(FileKind::Foreign),
    }
}
