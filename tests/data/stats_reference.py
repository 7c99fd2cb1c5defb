#!/usr/bin/env python3
"""Reference values for tests/e2e/compare/stats_reference.rs, computed independently of framelab.

    pip install scipy   # 1.17.1 made the committed values
    python3 tests/data/stats_reference.py > tests/data/stats_reference.json

- Mann–Whitney U: scipy.stats.mannwhitneyu, two-sided: method 'exact' (no ties, small
  samples), an exact permutation test over every split (ties, small samples), or
  'asymptotic' with the continuity correction (large samples).
- Holm: the step-down formula, written out here.
- One-level bootstrap of median(variant) / median(baseline) over per-run values:
  scipy.stats.bootstrap, percentile method, 200,000 resamples.
- Two-level bootstrap of the ratio of medians of per-run p50 / p99 frame times: numpy,
  drawing runs and then every frame with replacement (no shortcut), with the same
  correction framelab applies (each run's value pulled toward the median of the runs by
  sqrt(1 - within-run variance / variance across runs) before its frames are redrawn).
"""

import json

import numpy as np
from scipy import stats

rng = np.random.default_rng(20261122)


def mann_whitney_cases():
    cases = []
    samples = [
        ([1.2, 3.4, 2.2, 5.1], [0.5, 0.9, 2.0, 1.1]),
        ([10.0, 11.5, 9.8, 12.1, 10.7, 11.9], [10.2, 10.1, 9.9, 10.4, 10.3, 9.7]),
        ([5.0, 6.0, 7.0], [1.0, 2.0, 3.0, 4.0]),
        (list(rng.normal(100, 3, 9)), list(rng.normal(103, 3, 11))),
        (list(rng.normal(0, 1, 30)), list(rng.normal(0.5, 1, 40))),
        ([1.0, 2.0, 2.0, 3.0, 4.0], [2.0, 3.0, 3.0, 5.0, 6.0, 7.0]),
        ([1.0, 1.0, 1.0, 2.0], [1.0, 2.0, 2.0, 2.0]),
        (list(np.round(rng.normal(50, 5, 60))), list(np.round(rng.normal(52, 5, 55)))),
        (list(rng.normal(0, 1, 55)), list(rng.normal(0.2, 1, 52))),
    ]
    # Ties in small samples (a rank test's exact permutation p), from a generator of their
    # own so the cases above and the bootstrap's draw what they always drew.
    tied = np.random.default_rng(7)
    samples += [
        ([10.0, 11.0, 12.0], [7.0, 8.0, 10.0]),
        (list(np.round(tied.normal(50, 2, 10))), list(np.round(tied.normal(52, 2, 10)))),
    ]
    for x, y in samples:
        x = [float(v) for v in x]
        y = [float(v) for v in y]
        ties = len(set(x + y)) < len(x) + len(y)
        exact = len(x) <= 50 and len(y) <= 50
        method = "exact" if exact else "asymptotic"
        # With ties, exact is the permutation distribution over every split of the values.
        how = stats.PermutationMethod(n_resamples=np.inf) if exact and ties else method
        r = stats.mannwhitneyu(x, y, alternative="two-sided", method=how, use_continuity=True)
        cases.append({"x": x, "y": y, "method": method, "u": float(r.statistic), "p": float(r.pvalue)})
    return cases


def holm(p):
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * p[i]))
        out[i] = running
    return out


def holm_cases():
    cases = []
    for p in ([0.01, 0.04, 0.03, 0.005], [0.2, 0.001, 0.049, 0.5, 0.0125]):
        cases.append({"p": p, "adjusted": holm(p)})
    return cases


def one_level_cases():
    cases = []
    for base, var in (
        (rng.normal(120, 1.5, 10), rng.normal(126, 1.5, 10)),
        (rng.normal(8.0, 0.2, 7), rng.normal(7.6, 0.25, 9)),
    ):
        res = stats.bootstrap(
            (base, var),
            lambda b, v, axis: np.median(v, axis=axis) / np.median(b, axis=axis),
            vectorized=True,
            paired=False,
            n_resamples=200_000,
            method="percentile",
            confidence_level=0.95,
            random_state=rng,
        )
        cases.append(
            {
                "baseline": [float(v) for v in base],
                "variant": [float(v) for v in var],
                "ratio": float(np.median(var) / np.median(base)),
                "low": float(res.confidence_interval.low),
                "high": float(res.confidence_interval.high),
            }
        )
    return cases


def run_frames(scale, runs, frames):
    """Integer frame times (ns) with run-level and frame-level noise, sorted per run."""
    out = []
    for _ in range(runs):
        run = scale * np.exp(rng.normal(0, 0.01))
        out.append(np.sort(np.round(run * np.exp(rng.normal(0, 0.10, frames))).astype(np.int64)))
    return out


def two_level(base_runs, var_runs, p, resamples=20_000):
    def percentile(a):
        return np.percentile(a, p * 100, axis=-1)  # numpy's default is type 7

    def side(runs):
        values = np.array([percentile(r) for r in runs])
        within = np.mean(
            [np.var(percentile(r[rng.integers(0, len(r), (4000, len(r)))]), ddof=1) for r in runs]
        )
        across = np.var(values, ddof=1)
        shrink = np.sqrt(max(0.0, 1.0 - within / across)) if across > 0 and within > 0 else 1.0
        center = np.median(values)
        shrunk = center + shrink * (values - center)
        n = len(runs)
        medians = np.empty(resamples)
        for i in range(resamples):
            picks = rng.integers(0, n, n)
            drawn = [percentile(runs[j][rng.integers(0, len(runs[j]), len(runs[j]))]) for j in picks]
            medians[i] = np.median(shrunk[picks] + (np.array(drawn) - values[picks]))
        return values, medians

    bv, bm = side(base_runs)
    vv, vm = side(var_runs)
    ratios = vm / bm
    return {
        "p": p,
        "baseline": [r.tolist() for r in base_runs],
        "variant": [r.tolist() for r in var_runs],
        "ratio": float(np.median(vv) / np.median(bv)),
        "low": float(np.percentile(ratios, 2.5)),
        "high": float(np.percentile(ratios, 97.5)),
    }


def two_level_cases():
    base = run_frames(10e6, 6, 300)
    var = run_frames(10.5e6, 6, 300)
    return [two_level(base, var, 0.5), two_level(base, var, 0.99)]


print(
    json.dumps(
        {
            "made_by": "tests/data/stats_reference.py with scipy " + __import__("scipy").__version__,
            "mann_whitney": mann_whitney_cases(),
            "holm": holm_cases(),
            "bootstrap_one_level": one_level_cases(),
            "bootstrap_two_level": two_level_cases(),
        },
        indent=1,
    )
)
