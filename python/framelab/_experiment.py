"""An experiment file as one table: its runs (read from the file) with each run's report
(from the `framelab` binary), so it sits above both the reader and the driver."""

import json
import os
import sqlite3

from ._drive import report
from ._errors import FileError
from ._frames import make_frame, tidy_metrics
from ._read import _backend, _check_header, _connect


def experiment(path, backend=None):
    """An experiment file's runs (`framelab bench -o`) as one tidy DataFrame: a row per run
    and metric, with the run's variant, parameters (`param.KEY` columns), repetition and
    status. The metrics are the report's (`framelab report --format json` of each run, so
    the `framelab` binary is needed) plus the run's `--metric` values."""
    backend = _backend(backend)
    _check_header(os.fspath(path))
    db = _connect(path)
    try:
        rows = db.execute(
            """SELECT run_id, experiment_id, variant, params_json, repetition, slot, status
               FROM experiment_runs ORDER BY experiment_id, slot"""
        ).fetchall()
        metric_rows = db.execute(
            "SELECT run_id, name, value, unit FROM metrics ORDER BY run_id, position"
        ).fetchall()
    except sqlite3.DatabaseError as e:
        raise FileError(f"{path} is damaged or holds no experiment: {e}") from None
    finally:
        db.close()
    if not rows:
        raise FileError(f"{path} holds no experiment runs: give a file written by framelab bench -o")
    output_metrics = {}
    for run_id, name, value, unit in metric_rows:
        output_metrics.setdefault(run_id, []).append((name, value, unit))
    runs = []
    for run_id, experiment_id, variant, params_json, repetition, slot, status in rows:
        runs.append(
            {
                "run_id": run_id,
                "experiment_id": experiment_id,
                "variant": variant,
                "params": json.loads(params_json or "{}"),
                "repetition": repetition,
                "slot": slot,
                "status": status,
                "report": report(path, run_id=run_id),
                "output_metrics": output_metrics.get(run_id, []),
            }
        )
    return make_frame(backend, tidy_metrics(runs))
