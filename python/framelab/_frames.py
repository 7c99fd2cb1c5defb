"""Building DataFrames (pandas or polars) from plain columns, and the computations on them
that must not depend on which library is installed."""

import math

from ._metrics import RUN_METRICS

_U64 = (1 << 64) - 1


def make_frame(backend, columns):
    """A DataFrame of `backend` from {name: list}."""
    if backend == "polars":
        import polars

        return polars.DataFrame(columns, strict=False)
    import pandas

    return pandas.DataFrame(columns)


def unsigned(values):
    """u64 ids are stored as the i64 with the same bits (docs/run-file.md): undo that."""
    if any(v is not None and v < 0 for v in values):
        return [v & _U64 if v is not None else None for v in values]
    return values


def quantile(sorted_values, p):
    """Linear interpolation between order statistics at h = p·(N−1) (Hyndman–Fan type 7),
    the definition the report uses."""
    h = p * (len(sorted_values) - 1)
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


def stage_stats(names, rows):
    """The stage table: spans of measured frames per stage, in order of each stage's
    earliest measured start; durations in µs. `rows` are (stage_id, start_ns, dur_ns)."""
    name_of = dict(zip(names["stage_id"], names["stage"]))
    durations, first_start = {}, {}
    for stage_id, start_ns, dur_ns in rows:
        durations.setdefault(stage_id, []).append(dur_ns)
        first_start[stage_id] = min(first_start.get(stage_id, start_ns), start_ns)
    table = {k: [] for k in ("stage", "stage_id", "spans", "min_us", "p50_us", "p95_us",
                             "p99_us", "max_us", "mean_us")}
    for stage_id in sorted(durations, key=lambda s: (first_start[s], s)):
        d = sorted(durations[stage_id])
        table["stage"].append(name_of.get(stage_id, f"stage#{stage_id}"))
        table["stage_id"].append(stage_id)
        table["spans"].append(len(d))
        table["min_us"].append(d[0] / 1e3)
        for p in (50, 95, 99):
            table[f"p{p}_us"].append(quantile(d, p / 100) / 1e3)
        table["max_us"].append(d[-1] / 1e3)
        table["mean_us"].append(sum(d) / len(d) / 1e3)
    return table


# Report figures of each run in an experiment's tidy table that `compare` has no metric
# for: (metric, unit, path in the JSON).
_RUN_METRICS = [
    ("frames", "frames", ("frames",)),
    ("fps_mean", "fps", ("fps", "mean")),
    ("fps_p1", "fps", ("fps", "p1")),
    ("fps_low1_avg", "fps", ("fps", "low1_avg")),
    ("missed_slots", "slots", ("late", "missed_slots")),
    ("dropped_events", "records", ("dropped_events",)),
]
_DIST = ("min", "p50", "p95", "p99", "max", "mean")


def _dig(obj, path):
    for key in path:
        if not isinstance(obj, dict) or obj.get(key) is None:
            return None
        obj = obj[key]
    return obj


def _role_of(process):
    """The role a process row's CPU counts under in `compare` (analyze::cpu::role_of)."""
    role = process.get("role")
    if role in ("command", "child"):
        return "command"
    if role == "service":
        return process.get("service") or ""
    role = process.get("watch_role") or process.get("name") or ""
    return "command-watched" if role == "command" else role


def _role_key(role):
    return "".join("_" if c.isspace() or c == "," else c for c in role)


def _role_cpu(rep):
    """{role: CPU ns} over the run's processes, in the order first seen."""
    roles = {}
    for p in rep.get("processes") or []:
        role = _role_of(p)
        roles[role] = roles.get(role, 0) + (p.get("user_ns") or 0) + (p.get("sys_ns") or 0)
    return roles


def _unit(key):
    """The unit of run-level metric `key` in the registry (src/analyze/metrics.rs)."""
    return RUN_METRICS[key]["unit"]


def compare_figures(rep, with_roles):
    """The run's value of each run-level metric of `framelab compare --format json`, under
    its key and in its unit there (extract.rs and metrics.rs): (metric, unit, value)."""
    window_ns = _dig(rep, ("window", "length_ns")) or 0
    cpu = rep.get("cpu")
    fixed = rep.get("end_reason") == "duration"  # --duration: wall and CPU are not compared
    rows = [("fps", _unit("fps"), rep.get("observed_fps"))]
    late = rep.get("late")
    frames = rep.get("frames") or 0
    late_pct = None
    if late is not None and frames > 0 and not rep.get("frames_from_hint"):
        late_pct = late["late_frames"] / frames * 100.0
    rows.append(("late", _unit("late"), late_pct))
    cpu_ns = None if cpu is None else (cpu.get("user_ns") or 0) + (cpu.get("sys_ns") or 0)
    units = (cpu or {}).get("work_units") or 0
    has_processes = bool(rep.get("processes"))
    load = None if cpu_ns is None or window_ns <= 0 else cpu_ns * 100.0 / window_ns
    rows += [
        ("cpu_per_frame", _unit("cpu_per_frame"),
         cpu_ns / units / 1e3 if cpu_ns is not None and units > 0 and has_processes else None),
        ("load", _unit("load"), load),
        ("cores", _unit("cores"), None if load is None else load / 100.0),
        ("peak_rss", _unit("peak_rss"), (cpu or {}).get("peak_rss_bytes") or None),
        ("wall", _unit("wall"), None if fixed else window_ns / 1e9),
        ("cpu", _unit("cpu"), None if fixed or cpu_ns is None else cpu_ns / 1e9),
    ]
    if with_roles:
        for role, role_ns in _role_cpu(rep).items():
            key = _role_key(role)
            role_load = role_ns * 100.0 / window_ns if window_ns > 0 else None
            rows += [
                (f"cpu.{key}", _unit("cpu"), None if fixed else role_ns / 1e9),
                (f"cpu_per_frame.{key}", _unit("cpu_per_frame"),
                 role_ns / units / 1e3 if units > 0 else None),
                (f"load.{key}", _unit("load"), role_load),
                (f"cores.{key}", _unit("cores"), None if role_load is None else role_load / 100.0),
            ]
    return rows


def _stage_rows(rep):
    """The report's stage rows without its last two, `total` and `interval` (added above)."""
    rows = rep.get("stages") or []
    return rows[:-2] if [r["name"] for r in rows[-2:]] == ["total", "interval"] else rows


def tidy_metrics(runs):
    """One row per (run, metric): the columns seaborn wants (`value` numeric, the rest labels)."""
    param_keys = []
    for r in runs:
        for key in r["params"]:
            if key not in param_keys:
                param_keys.append(key)
    columns = {k: [] for k in ["run_id", "experiment_id", "variant",
                               *[f"param.{k}" for k in param_keys],
                               "repetition", "slot", "status", "metric", "stage", "unit",
                               "value"]}

    def add(r, metric, stage, unit, value):
        columns["run_id"].append(r["run_id"])
        columns["experiment_id"].append(r["experiment_id"])
        columns["variant"].append(r["variant"])
        for key in param_keys:
            columns[f"param.{key}"].append(r["params"].get(key))
        columns["repetition"].append(r["repetition"])
        columns["slot"].append(r["slot"])
        columns["status"].append(r["status"])
        columns["metric"].append(metric)
        columns["stage"].append(stage)
        columns["unit"].append(unit)
        columns["value"].append(None if value is None else float(value))

    # As compare: each role's figures once some run has more than one role.
    with_roles = any(len(_role_cpu(r["report"])) > 1 for r in runs)
    for r in runs:
        rep = r["report"]
        for metric, unit, value in compare_figures(rep, with_roles):
            add(r, metric, None, unit, value)
        for metric, unit, path in _RUN_METRICS:
            add(r, metric, None, unit, _dig(rep, path))
        for key in ("total", "interval"):
            for stat in _DIST:
                value = _dig(rep, (key, f"{stat}_ns"))
                add(r, f"{key}_{stat}_us", None, "us", None if value is None else value / 1e3)
        for stage in _stage_rows(rep):
            for stat in _DIST:
                value = _dig(stage, ("dist", f"{stat}_ns"))
                add(r, f"stage_{stat}_us", stage["name"], "us",
                    None if value is None else value / 1e3)
        for name, value, unit in r["output_metrics"]:
            add(r, name, None, unit, value)
    return columns
