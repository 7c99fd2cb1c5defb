"""Driving the binary: run, report, compare, bench; its errors as exceptions with its line."""

import os
import sys

import pytest

import framelab

LOOP = "import framelab, time\ns = framelab.Stage('step')\nf = 0\nwhile True:\n    with s.span(f):\n        time.sleep(0.002)\n    f += 1\n"


@pytest.fixture
def loop_script(tmp_path):
    path = tmp_path / "loop.py"
    path.write_text(LOOP)
    return str(path)


def test_run_with_fps_and_duration(framelab_bin, loop_script, tmp_path):
    def record(duration, output):
        return framelab.run([sys.executable, loop_script], fps=60, duration=duration,
                            warmup=0.2, output=tmp_path / output, name="loop")

    result = record("3s", "loop.framelab")
    if not result.load()._span_records:
        # The interpreter's start-up took the whole window on a loaded machine (no span at
        # all, not even in the warmup): record again with room, as the e2e tests do.
        result = record("15s", "loop-with-room.framelab")
    rep = result.report
    assert result.exit_code == 0
    assert rep["target_fps"] == 60.0 and rep["budget_ns"] == 16_666_667
    assert rep["end_reason"] == "duration"
    assert rep["name"] == "loop"
    # Spans but no frame would be framelab losing them: say what the run saw.
    keys = ("window", "dropped_events", "invalid_records", "notes", "exit")
    seen = {k: rep.get(k) for k in keys}
    seen["spans_recorded"] = len(result.load()._span_records)
    assert rep["frames"] >= 1, (result.path, seen)
    assert [s["name"] for s in rep["stages"]] == ["step", "total", "interval"]
    assert result.load().frames.measured.sum() == rep["frames"]


def test_a_script_names_its_run_not_the_interpreter(framelab_bin, tmp_path, monkeypatch):
    script = tmp_path / "pipeline.py"
    script.write_text(LOOP)
    monkeypatch.chdir(tmp_path)
    result = framelab.run([sys.executable, "-u", "pipeline.py"], duration="1s")
    assert os.path.basename(result.path).startswith("pipeline-"), result.path
    assert result.path.endswith(".framelab") and os.path.exists(result.path)
    assert result.report["name"] == "pipeline"
    # Not a script: the program's own name, as the CLI gives it.
    other = framelab.run([sys.executable, "-c", "pass"], check=False)
    assert not os.path.basename(other.path).startswith("pipeline"), other.path
    assert framelab._drive._script_name(["/usr/bin/python3.12", "-m", "pkg.tool"]) == "tool"
    assert framelab._drive._script_name(["./app", "pipeline.py"]) is None


def test_a_failing_command_raises_with_the_report(framelab_bin, tmp_path):
    out = tmp_path / "fail.framelab"
    with pytest.raises(framelab.RunFailed, match="exit code 4") as caught:
        framelab.run([sys.executable, "-c", "raise SystemExit(4)"], output=out)
    assert caught.value.exit_code == 3
    assert caught.value.report["exit"]["code"] == 4
    assert caught.value.path == str(out)
    result = framelab.run([sys.executable, "-c", "raise SystemExit(4)"], output=out,
                          check=False)
    assert result.exit_code == 3 and result.report["run_id"] == 2


def test_an_unread_metric_is_what_the_failure_says(framelab_bin, tmp_path):
    # The command exits 0 before --duration; framelab's exit 3 is for the metric it could
    # not read, and the exception says that, not the note about the window ending early.
    out = tmp_path / "metric.framelab"
    with pytest.raises(framelab.RunFailed, match="metric enc_fps: no line of stdout or stderr matched") as caught:
        framelab.run([sys.executable, "-c", "print('no rate here')"], duration="10s", output=out,
                     args=["--metric", "enc_fps[fps]:higher=fps=([\\d.]+)"])
    assert caught.value.exit_code == 3
    assert caught.value.report["exit"]["code"] == 0


def test_a_usage_error_is_framelabs_line(framelab_bin, tmp_path):
    with pytest.raises(framelab.RunFailed, match="not a usable frame rate") as caught:
        framelab.run(["true"], fps=0, output=tmp_path / "x.framelab")
    assert caught.value.exit_code == 2
    assert "\n" not in str(caught.value)
    with pytest.raises(framelab.RunFailed, match="command not found") as caught:
        framelab.run(["/nonexistent/program"], output=tmp_path / "y.framelab")
    assert caught.value.exit_code == 1


def test_binary_not_found(monkeypatch, tmp_path):
    monkeypatch.setenv("FRAMELAB_BIN", str(tmp_path / "nowhere" / "framelab"))
    with pytest.raises(framelab.BinaryNotFound, match="is not an executable file"):
        framelab.run(["true"])
    monkeypatch.delenv("FRAMELAB_BIN")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(framelab.BinaryNotFound, match="not on PATH: install it"):
        framelab.find_binary()
    assert issubclass(framelab.BinaryNotFound, FileNotFoundError)


def test_report_of_a_bad_file_is_a_file_error(framelab_bin, tmp_path):
    bad = tmp_path / "bad.framelab"
    bad.write_text("nope")
    with pytest.raises(framelab.FileError):
        framelab.report(bad)


def test_the_experiment_table_holds_compares_figures_under_its_names(framelab_bin, tmp_path):
    # Two roles (the command and a service that burns some CPU), frames, three runs a
    # side: the median of each variant's runs in the table is compare's median, metric by
    # metric, under compare's key and unit.
    script = tmp_path / "finite.py"
    script.write_text(LOOP.replace("while True:", "while f < 30:"))
    out = tmp_path / "svc.framelab"
    burn = "helper=sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exec sleep 60'"
    cmp = framelab.bench(
        {"a": f"{sys.executable} {script}", "b": f"{sys.executable} {script}"},
        runs=3, output=out, args=["--service", burn],
    )
    table = framelab.experiment(out)
    ok = table[table.status == "ok"]
    rows = cmp["groups"][0]["comparisons"][0]["rows"]
    checked = set()
    for row in rows:
        metric = row["metric"]
        if "." in metric and metric.split(".")[0] not in ("cpu", "load", "cores", "cpu_per_frame"):
            continue  # percentiles of stages: their own rows (stage_p50_us, ...)
        mine = ok[ok.metric == metric]
        assert len(mine) == 6, (metric, mine)
        assert set(mine.unit) == {row["unit"]}, (metric, set(mine.unit), row["unit"])
        for side, variant in (("baseline", "a"), ("variant", "b")):
            median = mine[mine.variant == variant].value.median()
            assert median == pytest.approx(row[side]["median"], rel=1e-9), (metric, side)
        checked.add(metric)
    assert {"wall", "cpu", "cpu.command", "cpu.helper", "cpu_per_frame", "load", "fps"} <= checked
    assert "cpu_per_frame_us" not in set(table.metric)


def test_bench_compare_and_the_experiment_table(framelab_bin, tmp_path):
    # A fixed number of frames and no --duration: every run has frames, however slowly
    # Python starts on a busy machine.
    script = tmp_path / "finite.py"
    script.write_text(LOOP.replace("while True:", "while f < 30:"))
    out = tmp_path / "ab.framelab"
    cmp = framelab.bench(
        {"a": f"{sys.executable} {script}", "b": f"{sys.executable} {script}"},
        runs=2, output=out,
    )
    assert isinstance(cmp, dict)
    again = framelab.compare(out)
    assert again == cmp
    table = framelab.experiment(out)
    assert set(table.variant) == {"a", "b"}
    assert table.run_id.nunique() == 4
    fps = table[table.metric == "fps"]
    assert len(fps) == 4 and fps.value.notna().all()
    step = table[(table.metric == "stage_p50_us") & (table.stage == "step")]
    assert len(step) == 4 and (step.value > 1000).all()  # time.sleep(0.002) in every span
    assert {"run_id", "variant", "repetition", "status", "metric", "stage", "unit", "value"} <= set(
        table.columns
    )
    # The same runs named by hand, one metric judged; an unknown metric is framelab's line.
    ids = {v: sorted(set(table[table.variant == v].run_id)) for v in ("a", "b")}
    by_hand = framelab.compare(
        variants={v: f"{out}:{','.join(map(str, r))}" for v, r in ids.items()}, show=["fps"]
    )
    assert [r["metric"] for r in by_hand["groups"][0]["comparisons"][0]["rows"]] == ["fps"]
    with pytest.raises(framelab.RunFailed, match="no metric 'nope' in these runs"):
        framelab.compare(out, show=["nope"])
