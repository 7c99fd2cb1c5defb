"""Reading run files (docs/run-file.md) into DataFrames, with the standard library's sqlite3.

The file is checked before SQLite parses it (not SQLite, not framelab, newer schema,
truncated), opened read-only, and a run's spans are read by their id range, as framelab
does. Times stay integers of nanoseconds (`_ns`); units are in every column name that has
one.
"""

import json
import os
import pathlib
import sqlite3
from functools import cached_property

from ._errors import FileError
from ._frames import make_frame, stage_stats, unsigned

#: The run-file schema this package reads (docs/run-file.md).
SCHEMA_VERSION = 8
APPLICATION_ID = 0x464C4142  # "FLAB"
_SQLITE_MAGIC = b"SQLite format 3\x00"


def load(path, run_id=None, backend=None):
    """Opens run `run_id` of a run file (default: the latest) as a `Run`.

    `backend` is "pandas" or "polars" (default: pandas when installed, else polars).
    Raises `FileError` with one line for a file that is missing, not a framelab file, of a
    newer schema, truncated or damaged.
    """
    return Run(path, run_id=run_id, backend=backend)


def latest_run_id(path):
    """The id of the latest run of a run file (checked as `load` checks it)."""
    path = os.fspath(path)
    _check_header(path)
    db = _connect(path)
    try:
        (run_id,) = db.execute("SELECT max(run_id) FROM runs").fetchone()
    except sqlite3.DatabaseError as e:
        raise FileError(_damaged(path, e)) from None
    finally:
        db.close()
    if run_id is None:
        raise FileError(f"{path} holds no runs")
    return run_id


def _damaged(path, error):
    """The one line for an SQLite error on a file whose header looked right."""
    if os.path.exists(f"{path}-journal"):
        # A recording cut short leaves a journal that only a writer can roll back.
        return (f"{path} was left mid-write by a framelab that was killed ({error}): run "
                f"`framelab report {path}` once to roll it back, then load it again")
    return f"{path} is damaged: {error}"


def _check_header(path):
    """Reads the SQLite header: refuses what is not a framelab file of this schema, whole."""
    try:
        with open(path, "rb") as f:
            header = f.read(100)
            size = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        raise FileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise FileError(f"{path}: is a directory, not a run file") from None
    except OSError as e:
        raise FileError(f"{path}: cannot read it: {e.strerror}") from None
    if not header.startswith(_SQLITE_MAGIC):
        raise FileError(
            f"{path} is not a framelab run file (not an SQLite database): "
            f"give a .framelab file written by framelab run, bench or import"
        )
    if len(header) < 100:
        raise FileError(f"{path} is truncated ({size} bytes, less than SQLite's header)")
    app_id = int.from_bytes(header[68:72], "big")
    if app_id != APPLICATION_ID:
        raise FileError(
            f"{path} is an SQLite database but not a framelab run file "
            f"(application_id {app_id}, expected {APPLICATION_ID})"
        )
    version = int.from_bytes(header[60:64], "big")
    if version > SCHEMA_VERSION:
        raise FileError(
            f"{path} was written by a newer framelab (schema {version}, this package reads "
            f"≤ {SCHEMA_VERSION}): upgrade the framelab package"
        )
    if version < SCHEMA_VERSION:
        raise FileError(
            f"{path} has the older schema {version}: run `framelab report {path}` once to "
            f"upgrade it in place (it needs to be writable), then load it again"
        )
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The header's page count is valid when its "version valid for" matches the change counter.
    if header[92:96] == header[24:28] and size < pages * page_size:
        raise FileError(
            f"{path} is truncated: {size} bytes of the {pages * page_size} its header "
            f"declares; copy the whole file again"
        )


def _connect(path):
    uri = pathlib.Path(path).resolve().as_uri() + "?mode=ro"
    return sqlite3.connect(uri, uri=True)


class Run:
    """One run of a run file. Tables are read on first access and kept.

    Attributes (DataFrames): `frames`, `spans`, `stages`, `counters`, `events`, `threads`,
    `telemetry`, `processes`, `metrics`. `info` is the run's row of `runs` as a dict.
    """

    def __init__(self, path, run_id=None, backend=None):
        self.path = os.fspath(path)
        self.backend = _backend(backend)
        _check_header(self.path)
        self._db = _connect(self.path)
        self._db.row_factory = sqlite3.Row
        try:
            ids = [r[0] for r in self._db.execute("SELECT run_id FROM runs ORDER BY run_id")]
        except sqlite3.DatabaseError as e:
            raise FileError(_damaged(self.path, e)) from None
        if not ids:
            raise FileError(f"{self.path} holds no runs")
        if run_id is None:
            run_id = ids[-1]
        elif run_id not in ids:
            raise FileError(
                f"{self.path} has no run {run_id}: its runs are {', '.join(map(str, ids))}"
            )
        self.run_id = run_id
        self.run_ids = ids
        self.info = dict(self._one("SELECT * FROM runs WHERE run_id = ?", run_id))

    def close(self):
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return f"<framelab.Run {self.path} run {self.run_id} of {len(self.run_ids)}>"

    def _one(self, sql, *params):
        return self._query(sql, params)[0]

    def _query(self, sql, params=()):
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as e:
            raise FileError(_damaged(self.path, e)) from None

    def _columns(self, sql, params, names):
        """Runs `sql` and returns its rows as {name: column list}."""
        rows = self._query(sql, params)
        return {name: [row[i] for row in rows] for i, name in enumerate(names)}

    def _frame(self, sql, params, names, unsigned_columns=()):
        columns = self._columns(sql, params, names)
        for name in unsigned_columns:
            columns[name] = unsigned(columns[name])
        return make_frame(self.backend, columns)

    def _id_range(self, table):
        first, last = self.info[f"{table}_id_first"], self.info[f"{table}_id_last"]
        if first is None:
            return (1, 0)  # an empty range
        return (first, last)

    @cached_property
    def spans(self):
        """One row per span: frame, stage, thread, pid, tid, start_ns, dur_ns, end_ns
        (ns after the run's launch, `info["origin_mono_ns"]` on CLOCK_MONOTONIC)."""
        first, last = self._id_range("span")
        return self._frame(
            """SELECT s.frame, coalesce(st.name, 'stage#' || s.stage_id), t.name, t.pid,
                      t.tid, s.start_ns, s.dur_ns, s.start_ns + s.dur_ns
               FROM spans AS s
               LEFT JOIN stages AS st ON st.run_id = s.run_id AND st.stage_id = s.stage_id
               LEFT JOIN threads AS t ON t.run_id = s.run_id AND t.thread_id = s.thread_id
               WHERE s.id BETWEEN ? AND ? AND s.run_id = ? ORDER BY s.id""",
            (first, last, self.run_id),
            ["frame", "stage", "thread", "pid", "tid", "start_ns", "dur_ns", "end_ns"],
            unsigned_columns=["frame"],
        )

    @cached_property
    def frames(self):
        """One row per frame: start_ns, end_ns, total_ns, spans, warmup (ended before the
        measured window), measured (ended inside it), late (measured and over budget)."""
        budget = self.info["budget_ns"]
        first, last = self._id_range("span")
        window = (self.info["window_start_ns"], self.info["window_end_ns"])
        # The `frames` view's definition, over this run's span ids only.
        columns = self._columns(
            """SELECT frame, start_ns, end_ns, end_ns - start_ns, n, end_ns < ?,
                      end_ns BETWEEN ? AND ?
               FROM (SELECT frame, min(start_ns) AS start_ns,
                            max(start_ns + dur_ns) AS end_ns, count(*) AS n
                     FROM spans WHERE id BETWEEN ? AND ? AND run_id = ? GROUP BY frame)
               ORDER BY end_ns""",
            (window[0], *window, first, last, self.run_id),
            ["frame", "start_ns", "end_ns", "total_ns", "spans", "warmup", "measured"],
        )
        columns["frame"] = unsigned(columns["frame"])
        columns["warmup"] = [bool(v) for v in columns["warmup"]]
        columns["measured"] = [bool(v) for v in columns["measured"]]
        columns["late"] = [
            bool(m and budget is not None and t > budget)
            for m, t in zip(columns["measured"], columns["total_ns"])
        ]
        return make_frame(self.backend, columns)

    @cached_property
    def stages(self):
        """One row per stage: the distribution of its spans in measured frames (µs: min,
        p50, p95, p99, max, mean; linear interpolation, as the report's stage table), in
        order of each stage's first measured span. `framelab.report()` is the authority."""
        names = self._columns(
            "SELECT stage_id, name FROM stages WHERE run_id = ? ORDER BY stage_id",
            (self.run_id,),
            ["stage_id", "stage"],
        )
        first, last = self._id_range("span")
        in_run = (first, last, self.run_id)
        rows = self._query(
            """SELECT s.stage_id, s.start_ns, s.dur_ns
               FROM spans AS s
               JOIN (SELECT frame FROM spans WHERE id BETWEEN ? AND ? AND run_id = ?
                     GROUP BY frame HAVING max(start_ns + dur_ns) BETWEEN ? AND ?) AS measured
                 ON measured.frame = s.frame
               WHERE s.id BETWEEN ? AND ? AND s.run_id = ?""",
            (*in_run, self.info["window_start_ns"], self.info["window_end_ns"], *in_run),
        )
        return make_frame(self.backend, stage_stats(names, rows))

    @cached_property
    def counters(self):
        """One row per counter record: frame, counter, value (summed per frame by the report)."""
        first, last = self._id_range("counter")
        return self._frame(
            """SELECT c.frame, coalesce(n.name, 'counter#' || c.counter_id), c.value
               FROM counters AS c LEFT JOIN counter_names AS n
                 ON n.run_id = c.run_id AND n.counter_id = c.counter_id
               WHERE c.id BETWEEN ? AND ? AND c.run_id = ? ORDER BY c.id""",
            (first, last, self.run_id),
            ["frame", "counter", "value"],
            unsigned_columns=["frame"],
        )

    @cached_property
    def events(self):
        """One row per event: event, key, thread, pid, tid, t_ns."""
        first, last = self._id_range("event")
        return self._frame(
            """SELECT coalesce(n.name, 'event#' || e.event_id), e.key, t.name, t.pid, t.tid,
                      e.t_ns
               FROM events AS e
               LEFT JOIN event_names AS n ON n.run_id = e.run_id AND n.event_id = e.event_id
               LEFT JOIN threads AS t ON t.run_id = e.run_id AND t.thread_id = e.thread_id
               WHERE e.id BETWEEN ? AND ? AND e.run_id = ? ORDER BY e.id""",
            (first, last, self.run_id),
            ["event", "key", "thread", "pid", "tid", "t_ns"],
            unsigned_columns=["key"],
        )

    @cached_property
    def threads(self):
        """Threads that recorded: thread_id, pid, tid, name, dropped (records lost, full ring)."""
        return self._frame(
            """SELECT thread_id, pid, tid, name, dropped FROM threads
               WHERE run_id = ? ORDER BY thread_id""",
            (self.run_id,),
            ["thread_id", "pid", "tid", "name", "dropped"],
        )

    @cached_property
    def telemetry(self):
        """Machine readings: source, metric, entity, label, unit, kind, t_ns, value (in `unit`)."""
        return self._frame(
            """SELECT ss.source, ss.metric, ss.entity, ss.label, ss.unit, ss.kind, s.t_ns,
                      s.value
               FROM samples AS s JOIN sample_series AS ss
                 ON ss.run_id = s.run_id AND ss.series_id = s.series_id
               WHERE s.run_id = ? ORDER BY s.series_id, s.t_ns""",
            (self.run_id,),
            ["source", "metric", "entity", "label", "unit", "kind", "t_ns", "value"],
        )

    @cached_property
    def processes(self):
        """CPU and memory of each process over the measured window."""
        columns = self._columns(
            """SELECT pid, ppid, name, role, user_ns, sys_ns, wall_ns, peak_rss_bytes,
                      cpu_resolution_ns, cpu_source, watch_role
               FROM processes WHERE run_id = ? ORDER BY process_index""",
            (self.run_id,),
            ["pid", "ppid", "name", "role", "user_ns", "sys_ns", "wall_ns",
             "peak_rss_bytes", "cpu_resolution_ns", "cpu_source", "watch_role"],
        )
        columns["cpu_ns"] = [u + s for u, s in zip(columns["user_ns"], columns["sys_ns"])]
        columns["load_pct"] = [
            100.0 * c / w if w else None for c, w in zip(columns["cpu_ns"], columns["wall_ns"])
        ]
        columns["peak_rss_bytes"] = unsigned(columns["peak_rss_bytes"])
        return make_frame(self.backend, columns)

    @cached_property
    def metrics(self):
        """Numbers taken from the command's output (`--metric`): name, value, unit, direction,
        failure (why there is no value)."""
        return self._frame(
            """SELECT role, name, value, unit, direction, failure FROM metrics
               WHERE run_id = ? ORDER BY position""",
            (self.run_id,),
            ["role", "name", "value", "unit", "direction", "failure"],
        )

    @cached_property
    def session_facts(self):
        """How the recording went beyond the columns (docs/run-file.md), as a dict."""
        rows = self._query(
            "SELECT value FROM framelab WHERE key = ?", (f"session_facts.{self.run_id}",)
        )
        return json.loads(rows[0][0]) if rows else {}


def _backend(backend):
    if backend in ("pandas", "polars"):
        return backend
    if backend is not None:
        raise ValueError(f"backend={backend!r}: use 'pandas' or 'polars'")
    for name in ("pandas", "polars"):
        try:
            __import__(name)
            return name
        except ImportError:
            continue
    raise ImportError(
        "reading run files needs pandas or polars: pip install './python[pandas]' "
        "(or polars)"
    )
