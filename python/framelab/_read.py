"""Reading run files (docs/run-file.md) into DataFrames, with the standard library's sqlite3.

The file is checked before SQLite parses it (not SQLite, not framelab, newer schema,
truncated), opened read-only, and a run's span blocks are read by their id range and
decoded here, as framelab does (the `spans` view decodes them in SQL, ~100× slower).
Times stay integers of nanoseconds (`_ns`); units are in every column name that has one.
"""

import json
import os
import pathlib
import sqlite3
import struct
from functools import cached_property

from ._errors import FileError
from ._frames import make_frame, stage_stats, unsigned

#: The run-file schema this package reads (docs/run-file.md).
SCHEMA_VERSION = 9
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


# Span records of `span_blocks.layout` 1, 2, 3 (docs/run-file.md), each unpacked to
# (start_ns, dur_ns, frame, stage_id, thread_id); layouts 1 and 2 hold offsets from the
# block's base_start_ns and base_frame, layout 3 the values themselves.
_LAYOUTS = {1: struct.Struct("<IIHBB"), 2: struct.Struct("<IIIHH"), 3: struct.Struct("<qqqHxxI")}
_MAX_BLOCK_SPANS = 512


def _decode_block(layout, count, base_frame, base_start_ns, records):
    """A block's spans as (frame, stage_id, thread_id, start_ns, dur_ns), or None when the
    block is not one framelab writes."""
    record = _LAYOUTS.get(layout)
    if record is None or not isinstance(records, bytes) or not 0 <= count <= _MAX_BLOCK_SPANS \
            or count * record.size != len(records):
        return None
    if layout == 3:
        return [(f, st, th, s, d) for s, d, f, st, th in record.iter_unpack(records)]
    return [(base_frame + f, st, th, base_start_ns + s, d)
            for s, d, f, st, th in record.iter_unpack(records)]


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
    def _span_records(self):
        """The run's spans in id order, as (frame, stage_id, thread_id, start_ns, dur_ns)
        with frames as stored (signed)."""
        first, last = self._id_range("span")
        blocks = self._query(
            """SELECT layout, spans, base_frame, base_start_ns, records FROM span_blocks
               WHERE first_id BETWEEN ? AND ? AND run_id = ? ORDER BY first_id""",
            (first, last, self.run_id),
        )
        spans = []
        for block in blocks:
            decoded = _decode_block(*block)
            if decoded is None:
                raise FileError(
                    f"{self.path} is damaged: a span block of layout {block[0]} says it holds "
                    f"{block[1]} spans in {len(block[4] or b'')} bytes; restore an intact copy"
                )
            spans.extend(decoded)
        return spans

    @cached_property
    def spans(self):
        """One row per span: frame, stage, thread, pid, tid, start_ns, dur_ns, end_ns
        (ns after the run's launch, `info["origin_mono_ns"]` on CLOCK_MONOTONIC)."""
        stages = dict(self._query(
            "SELECT stage_id, name FROM stages WHERE run_id = ?", (self.run_id,)))
        threads = {row[0]: tuple(row[1:]) for row in self._query(
            "SELECT thread_id, name, pid, tid FROM threads WHERE run_id = ?", (self.run_id,))}
        no_thread = (None, None, None)
        records = self._span_records
        named = [threads.get(r[2], no_thread) for r in records]
        columns = {
            "frame": unsigned([r[0] for r in records]),
            "stage": [stages.get(r[1], f"stage#{r[1]}") for r in records],
            "thread": [t[0] for t in named],
            "pid": [t[1] for t in named],
            "tid": [t[2] for t in named],
            "start_ns": [r[3] for r in records],
            "dur_ns": [r[4] for r in records],
            "end_ns": [r[3] + r[4] for r in records],
        }
        return make_frame(self.backend, columns)

    def _frame_extents(self):
        """{frame: [start_ns, end_ns, spans]} of the run (the `frames` view's definition)."""
        extents = {}
        for frame, _, _, start, dur in self._span_records:
            end = start + dur
            e = extents.get(frame)
            if e is None:
                extents[frame] = [start, end, 1]
            else:
                e[0] = min(e[0], start)
                e[1] = max(e[1], end)
                e[2] += 1
        return extents

    @cached_property
    def frames(self):
        """One row per frame: start_ns, end_ns, total_ns, spans, warmup (ended before the
        measured window), measured (ended inside it), late (measured and over budget)."""
        budget = self.info["budget_ns"]
        lo, hi = self.info["window_start_ns"], self.info["window_end_ns"]
        rows = sorted(self._frame_extents().items(), key=lambda kv: (kv[1][1], kv[0]))
        columns = {
            "frame": unsigned([f for f, _ in rows]),
            "start_ns": [e[0] for _, e in rows],
            "end_ns": [e[1] for _, e in rows],
            "total_ns": [e[1] - e[0] for _, e in rows],
            "spans": [e[2] for _, e in rows],
            "warmup": [e[1] < lo for _, e in rows],
            "measured": [lo <= e[1] <= hi for _, e in rows],
        }
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
        lo, hi = self.info["window_start_ns"], self.info["window_end_ns"]
        measured = {f for f, e in self._frame_extents().items() if lo <= e[1] <= hi}
        rows = [(r[1], r[3], r[4]) for r in self._span_records if r[0] in measured]
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
        try:
            __import__(backend)
        except ImportError:
            raise ImportError(
                f"backend={backend!r} needs {backend}, which is not installed: "
                f"pip install {backend}, or leave backend out to use what is installed"
            ) from None
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
