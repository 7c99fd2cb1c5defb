"""Reading run files: DataFrames with units in their names, and bad files refused in one line."""

import shutil
import sqlite3
import sys

import pytest

import framelab
from framelab._read import SCHEMA_VERSION

SOURCE = """
    import framelab
    stage = framelab.Stage("encode")
    for frame in (1, 2, 2**63 + 5, 2**64 - 1):
        with stage.span(frame):
            pass
    framelab.Counter("bytes").add(2**64 - 2, -3)
    framelab.Event("commit").mark(2**64 - 1)
"""


@pytest.fixture(scope="module")
def run_file(tmp_path_factory, framelab_bin):
    import sys
    import textwrap

    where = tmp_path_factory.mktemp("read")
    script = where / "prog.py"
    script.write_text(textwrap.dedent(SOURCE))
    return framelab.run([sys.executable, str(script)], output=where / "r.framelab").path


def test_tables_and_units(run_file):
    run = framelab.load(run_file)
    assert run.run_id == 1 and run.run_ids == [1]
    assert run.info["end_reason"] == "exited"
    assert list(run.spans.columns) == ["frame", "stage", "thread", "pid", "tid", "start_ns",
                                       "dur_ns", "end_ns"]
    assert list(run.frames.columns) == ["frame", "start_ns", "end_ns", "total_ns", "spans",
                                        "warmup", "measured", "late"]
    assert list(run.stages.columns) == ["stage", "stage_id", "spans", "min_us", "p50_us",
                                        "p95_us", "p99_us", "max_us", "mean_us"]
    assert {"user_ns", "sys_ns", "cpu_ns", "wall_ns", "peak_rss_bytes", "load_pct"} <= set(
        run.processes.columns
    )
    assert list(run.telemetry.columns) == ["source", "metric", "entity", "label", "unit",
                                           "kind", "t_ns", "value"]
    assert len(run.telemetry) > 0
    assert list(run.metrics.columns) == ["role", "name", "value", "unit", "direction",
                                         "failure"]
    # What held the run's processes (docs/reading-the-report.md, "The run group").
    assert run.session_facts["run_group"]["mechanism"] in ("cgroup2", "cgroup1", "tree")


def test_u64_ids_come_back_unsigned(run_file):
    run = framelab.load(run_file)
    assert sorted(int(f) for f in run.spans.frame) == [1, 2, 2**63 + 5, 2**64 - 1]
    assert int(run.counters.frame[0]) == 2**64 - 2 and int(run.counters.value[0]) == -3
    assert int(run.events.key[0]) == 2**64 - 1


def test_polars(run_file):
    pl = pytest.importorskip("polars")
    run = framelab.load(run_file, backend="polars")
    assert isinstance(run.spans, pl.DataFrame)
    assert run.spans.height == 4
    assert run.spans["frame"].to_list().count(2**64 - 1) == 1
    assert run.stages["stage"].to_list() == ["encode"]


def test_report_is_the_json_report(run_file):
    rep = framelab.report(run_file)
    assert rep["schema"] == "framelab.report/3"
    assert rep["run_id"] == 1
    assert rep["spans"] == 4


def test_a_run_not_in_the_file(run_file):
    with pytest.raises(framelab.FileError, match="has no run 7: its runs are 1"):
        framelab.load(run_file, run_id=7)


def test_not_a_framelab_file(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello\n" * 100)
    with pytest.raises(framelab.FileError, match="is not a framelab run file"):
        framelab.load(text)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(framelab.FileError, match="SQLite database but not a framelab"):
        framelab.load(other)
    with pytest.raises(framelab.FileError, match="no such file"):
        framelab.load(tmp_path / "missing.framelab")
    with pytest.raises(framelab.FileError, match="is a directory"):
        framelab.load(tmp_path)
    empty = tmp_path / "empty.framelab"
    empty.write_bytes(b"")
    with pytest.raises(framelab.FileError, match="not a framelab run file"):
        framelab.load(empty)


def test_a_newer_schema_is_refused(run_file, tmp_path):
    newer = tmp_path / "newer.framelab"
    shutil.copy(run_file, newer)
    db = sqlite3.connect(newer)
    newer_version = SCHEMA_VERSION + 1
    db.execute(f"PRAGMA user_version = {newer_version}")
    db.execute(f"UPDATE framelab SET value = '{newer_version}' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(
        framelab.FileError,
        match=rf"newer framelab \(schema {newer_version}, this package reads ≤ {SCHEMA_VERSION}\)",
    ):
        framelab.load(newer)


def test_an_older_schema_says_how_to_upgrade(run_file, tmp_path):
    older = tmp_path / "older.framelab"
    shutil.copy(run_file, older)
    db = sqlite3.connect(older)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    db.commit()
    db.close()
    with pytest.raises(
        framelab.FileError, match=f"older schema {SCHEMA_VERSION - 1}: run `framelab report"
    ):
        framelab.load(older)


def test_a_truncated_file_is_refused(run_file, tmp_path):
    data = open(run_file, "rb").read()
    for keep in (50, len(data) // 2, len(data) - 1):
        cut = tmp_path / f"cut{keep}.framelab"
        cut.write_bytes(data[:keep])
        with pytest.raises(framelab.FileError, match="truncated"):
            framelab.load(cut)


def test_the_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.framelab"
    bad.write_text("not sqlite")
    with pytest.raises(framelab.FileError) as caught:
        framelab.load(bad)
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_no_dataframe_library_named(run_file):
    with pytest.raises(ValueError, match="use 'pandas' or 'polars'"):
        framelab.load(run_file, backend="arrow")


def test_a_backend_not_installed_is_named_with_what_to_do(run_file, monkeypatch):
    monkeypatch.setitem(sys.modules, "polars", None)  # as if not installed
    with pytest.raises(ImportError, match="backend='polars' needs polars, which is not installed"):
        framelab.load(run_file, backend="polars")


def test_a_damaged_file_is_refused(run_file, tmp_path):
    data = bytearray(open(run_file, "rb").read())
    data[100:4096] = b"\xff" * (4096 - 100)  # the schema's page, past the header
    damaged = tmp_path / "damaged.framelab"
    damaged.write_bytes(bytes(data))
    with pytest.raises(framelab.FileError, match="is damaged: ") as caught:
        framelab.load(damaged).spans
    assert "\n" not in str(caught.value)
