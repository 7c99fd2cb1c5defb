"""The Python package's metric names and units are the registry's (src/analyze/metrics.rs,
copied into framelab/_metrics.py by `cargo test --lib analyze::metrics`)."""

from framelab._frames import _RUN_METRICS, compare_figures
from framelab._metrics import FPS_LOWS, RUN_METRICS


def test_compare_figures_are_the_registrys_run_metrics_in_order():
    rows = compare_figures({}, with_roles=False)
    assert [metric for metric, _, _ in rows] == list(RUN_METRICS)
    assert [unit for _, unit, _ in rows] == [m["unit"] for m in RUN_METRICS.values()]


def test_the_fps_lows_read_from_reports_are_the_registrys():
    for metric, unit, path in _RUN_METRICS:
        if path[0] == "fps" and path[1] != "mean":
            assert path[1] in FPS_LOWS, metric
            assert unit == "fps"
