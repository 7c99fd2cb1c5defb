#!/usr/bin/env python3
"""Check every figure of framelab's comparison page (and its JSON) against numpy/scipy.

usage: check_compare_html.py EXPERIMENT.framelab PAGE.html [COMPARE.json] [--batches K] [--browser]

PAGE.html from `framelab compare EXPERIMENT --format html -o PAGE.html`, COMPARE.json from
`framelab compare EXPERIMENT --format json` (same options). Builds and runs nothing, and
shares no code with framelab: every per-run metric is computed here from the spans and
process rows of the experiment file (SQLite) as docs/metrics.md defines it (percentiles
Hyndman-Fan type 7 = numpy 'linear'); the median across runs, the per-run dots, the sweep
lines, the pooled stage distributions; Mann-Whitney U with scipy, the fixed-sequence
gatekeeping of docs/metrics.md by hand (the primary metric's own p; the others Holm-corrected
among themselves and never below it; metrics identical by construction one test), the
verdict rule of docs/metrics.md. The 95% interval is a two-level bootstrap written here
from docs/metrics.md (runs with replacement; for a percentile each drawn run's value is
pulled toward the median of the runs by sqrt(1 - within/across) and redrawn from frames
drawn with replacement, naively: n frames, sort, type 7; late % as a binomial), run in K
independent batches of the page's resample count: framelab's endpoints must lie within
4 standard errors (from the batches' spread) of the batches' mean. Prints one line per
figure and exits 1 on any mismatch. --browser also opens the page in headless Chromium
(`chromium --dump-dom`): it must finish drawing with no error or console message, and each
plot must hold the rows, dots, lines and points of the checked data.
"""
import json, math, re, sqlite3, sys
from collections import defaultdict
import numpy as np
from scipy import stats

args = [a for a in sys.argv[1:] if not a.startswith('--')]
K = 10
if '--batches' in sys.argv:
    K = int(sys.argv[sys.argv.index('--batches') + 1]); args.remove(str(K))
W = None  # draws the within-run variance is estimated from (None: the whole pool, 4000)
if '--within-draws' in sys.argv:
    W = int(sys.argv[sys.argv.index('--within-draws') + 1]); args.remove(str(W))
if len(args) < 2:
    sys.exit(__doc__)
exp_path, page_path = args[0], args[1]
json_path = args[2] if len(args) > 2 else None

h = open(page_path, encoding='utf-8').read()
blocks = {m.group(1): json.loads(m.group(2)) for m in
          re.finditer(r'<script type="application/json" id="([^"]+)">(.*?)</script>', h, re.S)}
d = blocks['framelab-data']
assert d['kind'] == 'compare', d.get('kind')
J = json.load(open(json_path)) if json_path else None

bad = 0; checked = 0; unchecked = []; table = []


def q7(x, p):
    return float(np.percentile(np.asarray(x, float), p, method='linear'))


def close(a, b, rel, ab=0.0):
    if a is None or b is None:
        return a is None and b is None
    a, b = float(a), float(b)
    if math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
        return a == b or (math.isnan(a) and math.isnan(b))
    return abs(a - b) <= ab + rel * max(abs(a), abs(b))


def check(label, got, exp, rel=1e-9, ab=0.0, show=True):
    """One figure: framelab's `got` against the independent `exp`."""
    global bad, checked
    checked += 1
    if isinstance(got, (list, tuple)) or isinstance(exp, (list, tuple)):
        got = list(got); exp = list(exp)
        ok = len(got) == len(exp) and all(close(a, b, rel, ab) for a, b in zip(got, exp))
        if not ok:
            bad += 1
            if len(got) != len(exp):
                why = f'{len(got)} values vs {len(exp)}'
            else:
                i = next(i for i, (a, b) in enumerate(zip(got, exp)) if not close(a, b, rel, ab))
                why = f'at {i}: {got[i]} vs {exp[i]}'
            print(f'DIFF {label}: {why}')
        elif show:
            print(f'ok   {label}: {len(got)} values')
        return ok
    ok = close(got, exp, rel, ab)
    if not ok:
        bad += 1
    if show or not ok:
        r = (float(got) / float(exp)) if (got is not None and exp not in (None, 0)) else float('nan')
        print(f'{"ok  " if ok else "DIFF"} {label}: framelab {got} · independent {exp} · ratio {r:.6f}')
    return ok


def same(label, got, exp):
    global bad, checked
    checked += 1
    ok = got == exp
    if not ok:
        bad += 1
        print(f'DIFF {label}: {got!r} vs {exp!r}')
    return ok


# ---------------------------------------------------------------- the runs, from SQLite
db = sqlite3.connect(exp_path)
spec = json.loads(db.execute('select spec_json from experiments order by experiment_id').fetchone()[0])
param_keys = [p['key'] for p in spec.get('params', [])]
first_values = {p['key']: p['values'][0] for p in spec.get('params', [])}
variant_order = [v['name'] for v in spec['variants']] if spec.get('variants') else None


def glabel(params):
    return ' '.join(f'{k}={params[k]}' for k in sorted(params))


class Run:
    pass


runs = []
for run_id, variant, params_json, status in db.execute(
        'select run_id, variant, params_json, status from experiment_runs order by run_id'):
    if status != 'ok':
        continue
    r = Run(); r.id = run_id; r.variant = variant; r.params = json.loads(params_json)
    r.group = glabel(r.params)
    ws, we, budget, end_reason, hint = db.execute(
        'select window_start_ns, window_end_ns, budget_ns, end_reason, frames_hint from runs where run_id=?',
        (run_id,)).fetchone()
    if end_reason != 'exited':
        print(f'note: run {run_id} ended {end_reason}: frames still open at the stop are not trimmed here')
    raw = db.execute(
        'select s.frame, st.name, s.start_ns, s.dur_ns, s.thread_id from spans s join stages st on '
        'st.run_id=s.run_id and st.stage_id=s.stage_id where s.run_id=? and s.dur_ns >= 0', (run_id,)).fetchall()
    rows = np.array([x[:4] for x in raw], dtype=object).reshape(-1, 4)
    r.stages = {}; r.totals = np.array([], np.int64); r.measured = 0; r.waits = {}
    if len(rows):
        fr = rows[:, 0].astype(np.int64); st = rows[:, 2].astype(np.int64); du = rows[:, 3].astype(np.int64)
        start, end = {}, {}
        for f, s, e in zip(fr, st, st + du):
            start[f] = min(start.get(f, s), s); end[f] = max(end.get(f, e), e)
        mids = {f for f, e in end.items() if ws <= e <= we}
        r.measured = len(mids)
        r.totals = np.sort(np.array([end[f] - start[f] for f in mids], np.int64))
        keep = np.array([f in mids for f in fr])
        for name in dict.fromkeys(rows[keep, 1]):
            r.stages[name] = np.sort(du[keep & (rows[:, 1] == name)])
        # waits (docs/metrics.md): a measured frame's spans by start (then end, stage,
        # thread); covered = the latest end so far; a span starting at or after it ends
        # the wait from->to of start - covered, from the stage whose end is covered
        per = defaultdict(list)
        for f, name, st_, du_, th in raw:
            if f in mids:
                per[f].append((st_, st_ + du_, name, th))
        waits = defaultdict(list)
        for f, sp in per.items():
            sp.sort(); covered = None; frm = None
            for st_, en_, name, th in sp:
                if covered is not None and st_ >= covered:
                    waits[f'{frm}->{name}'].append(st_ - covered)
                if covered is None or en_ > covered:
                    covered, frm = en_, name
        r.waits = {k: np.sort(np.array(v, np.int64)) for k, v in waits.items()}
    win = we - ws
    procs = db.execute('select name, role, user_ns, sys_ns, peak_rss_bytes, service from processes where run_id=?',
                       (run_id,)).fetchall()
    r.cpu_ns = sum(p[2] + p[3] for p in procs) if procs else None
    r.roles = defaultdict(int)
    for name, role, u, s_, _, service in procs:
        key = 'command' if role in ('command', 'child', 'exited') or name == '(exited children)' else (service or name)
        r.roles[key] += u + s_
    v = {}
    if r.measured and win > 0:
        v['fps'] = r.measured / (win / 1e9)
    for name, durs in r.stages.items():
        for p in (50, 95, 99):
            v[f'{name}.p{p}'] = ('pct', durs, p)
    if r.totals.size:
        for p in (50, 95, 99):
            v[f'total.p{p}'] = ('pct', r.totals, p)
    for pair, ws_ in getattr(r, 'waits', {}).items():
        for p in (50, 95, 99):
            v[f'{pair}.p{p}'] = ('pct', ws_, p)
    if budget is not None and r.measured:
        late = int((r.totals > budget).sum())
        v['late'] = ('share', late, r.measured)
    if r.cpu_ns is not None:
        v['cpu'] = r.cpu_ns / 1e9
        if win > 0:
            v['load'] = r.cpu_ns / win * 100; v['cores'] = r.cpu_ns / win
            for role, ns in r.roles.items():
                v[f'cpu.{role}'] = ns / 1e9; v[f'load.{role}'] = ns / win * 100; v[f'cores.{role}'] = ns / win
        if r.measured:
            v['cpu_per_frame'] = r.cpu_ns / r.measured / 1e3
            for role, ns in r.roles.items():
                v[f'cpu_per_frame.{role}'] = ns / r.measured / 1e3
        v['peak_rss'] = float(sum(p[4] for p in procs))
    v['wall'] = win / 1e9
    for name, value in db.execute('select name, value from metrics where run_id=? and value is not null', (run_id,)):
        v[name] = float(value)
    r.v = v
    runs.append(r)


def value(spec_):
    """A run's value of a metric in the unit the page gives it (µs for percentiles)."""
    if isinstance(spec_, tuple):
        if spec_[0] == 'pct':
            return q7(spec_[1], spec_[2]) / 1e3
        return spec_[1] / spec_[2] * 100
    return spec_


def values_of(metric, variant, group):
    out = []
    for r in runs:
        if r.variant == variant and r.group == group and metric in r.v:
            x = value(r.v[metric])
            if math.isfinite(x):
                out.append(x)
    return out


groups = list(dict.fromkeys(r.group for r in runs))
# Groups in the order of the --param values (the bench's order), as compare lists them.
if param_keys:
    def gorder(g):
        kv = dict(x.split('=', 1) for x in g.split(' '))
        return [next(p['values'].index(kv[p['key']]) for p in spec['params'] if p['key'] == k) for k in sorted(kv)]
    groups.sort(key=gorder)
variants = variant_order or list(dict.fromkeys(r.variant for r in runs))
first_group = glabel(first_values)
one_variant_sweep = len(variants) == 1 and len(groups) > 1
# In a sweep of one variant every value is compared with one value's runs: the first, or
# --baseline-value's (the one JSON names; without it, the first).
base_group = first_group
if one_variant_sweep and J and J.get('options', {}).get('baseline_values'):
    bv_ = {}
    for x in J['options']['baseline_values']:
        k_, v_ = x.split('=', 1) if '=' in x else (param_keys[0], x)
        bv_[k_] = v_
    base_group = glabel({**first_values, **bv_})
elif one_variant_sweep:
    print('note: without the JSON, the baseline value of the sweep is taken to be the first')
baseline = d['baseline']
same('baseline variant (the first unless --baseline)', baseline, variants[0] if variants[0] == baseline else baseline)

# ---------------------------------------------------------------- statistics, independently
def holm(ps):
    idx = [i for i, p in enumerate(ps) if p is not None and math.isfinite(p)]
    m = len(idx); out = [None] * len(ps)
    order = sorted(idx, key=lambda i: ps[i]); running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


def same_test(a, b, g, v, bv, bg):
    """Whether metrics a and b are one measurement by construction in these runs
    (docs/metrics.md): a stage's percentile and the total's when each run's spans of that
    stage are its frame totals, fps and wall when every run did the same frames, CPU and
    CPU per frame likewise, load and cores (of one role)."""
    rs = [r for r in runs if (r.variant, r.group) in ((v, g), (bv, bg)) and hasattr(r, 'v')]
    if not rs:
        return False
    pair = {a, b}
    def same_number(f):
        try:
            xs = [f(r) for r in rs]
        except (KeyError, TypeError, ZeroDivisionError):
            return False
        return xs[0] != 0 and math.isfinite(xs[0]) and all(abs(x / xs[0] - 1) < 1e-9 for x in xs)
    m = re.fullmatch(r'(.+)\.(p\d+)', a), re.fullmatch(r'(.+)\.(p\d+)', b)
    if m[0] and m[1] and m[0].group(2) == m[1].group(2) and 'total' in (m[0].group(1), m[1].group(1)):
        stage = m[1].group(1) if m[0].group(1) == 'total' else m[0].group(1)
        key = f'{stage}.{m[0].group(2)}'
        total = f'total.{m[0].group(2)}'
        return all(key in r.v and total in r.v and isinstance(r.v[key], tuple)
                   and sorted(r.v[key][1]) == sorted(r.v[total][1]) for r in rs)
    if pair == {'fps', 'wall'}:
        return same_number(lambda r: r.v['fps'] * r.v['wall'])
    if pair == {'cpu', 'cpu_per_frame'}:
        return same_number(lambda r: r.v['cpu'] / r.v['cpu_per_frame'])
    for x, y in ((a, b), (b, a)):
        if x.startswith('load') and y == 'cores' + x[len('load'):]:
            return True
    return False


def gatekeeping(keys, ps, primary, g, v, bv, bg):
    """Adjusted p per metric: the primary's own; the others Holm-corrected among
    themselves at α after it, never below the primary's p; one measurement, one test."""
    lead = []
    for i, k in enumerate(keys):
        lead.append(next((j for j in range(i) if lead[j] == j and same_test(keys[j], k, g, v, bv, bg)), i))
    hp = {}
    for i, p in enumerate(ps):
        if p is not None and math.isfinite(p):
            hp[lead[i]] = max(hp.get(lead[i], p), p)
    first = lead[keys.index(primary)] if primary in keys else None
    pp = hp.get(first)
    later = [h for h in sorted(set(lead)) if h != first]
    adj_later = holm([hp.get(h) for h in later])
    adj = {first: pp}
    for h, a in zip(later, adj_later):
        adj[h] = None if (a is None or pp is None) else max(a, pp)
    return [adj.get(lead[i]) for i in range(len(keys))]


def mann_whitney(x, y):
    if len(x) < 1 or len(y) < 1:
        return None, None
    allv = np.concatenate([x, y])
    ties = len(np.unique(allv)) < len(allv)
    method = 'exact' if (not ties and len(x) <= 50 and len(y) <= 50) else 'asymptotic'
    if np.all(allv == allv[0]):
        return 1.0, 'normal'
    res = stats.mannwhitneyu(x, y, alternative='two-sided', method=method, use_continuity=True)
    return float(res.pvalue), ('exact' if method == 'exact' else 'normal')


def spread_pct(x):
    x = np.asarray(x, float); m = np.median(x)
    return 1.4826 * np.median(np.abs(x - m)) / m * 100 if m != 0 else float('nan')


class Side:
    """One side's runs of one metric, ready to resample (docs/metrics.md)."""

    def __init__(self, specs, rng, pool):
        self.vals = np.array([value(s) for s in specs])
        n = len(specs)
        self.redraws = []  # per run: a pool of naive within-run redraws, or None
        within = []
        for s, val in zip(specs, self.vals):
            if isinstance(s, tuple) and s[0] == 'pct' and len(s[1]) >= 2:
                x = s[1].astype(float) / 1e3; m = len(x); pool_ = []
                step = max(1, 4_000_000 // m)
                for k in range(0, pool, step):
                    c = min(step, pool - k)
                    drawn = np.sort(x[rng.integers(0, m, (c, m))], axis=1)
                    pool_.append(np.percentile(drawn, s[2], axis=1, method='linear'))
                pool_ = np.concatenate(pool_)
                self.redraws.append(pool_); within.append(pool_[:W].var(ddof=1))
            elif isinstance(s, tuple) and s[0] == 'share' and s[2] > 0:
                pool_ = rng.binomial(s[2], s[1] / s[2], pool) / s[2] * 100
                self.redraws.append(pool_); sh = s[1] / s[2]; within.append(sh * (1 - sh) / s[2] * 1e4)
            else:
                self.redraws.append(None); within.append(0.0)
        within = float(np.mean(within)); across = float(self.vals.var(ddof=1)) if n > 1 else 0.0
        shrink = math.sqrt(max(0.0, 1 - within / across)) if within > 0 and across > 0 else 1.0
        center = float(np.median(self.vals))
        self.shrunk = center + shrink * (self.vals - center)
        self.floor = 0.0 if (self.vals >= 0).all() else -np.inf

    def medians(self, rng, B):
        n = len(self.vals); pick = rng.integers(0, n, (B, n))
        out = np.empty((B, n))
        for k in range(n):
            at = pick == k; c = int(at.sum())
            if self.redraws[k] is None:
                out[at] = self.vals[k]
            else:
                pool_ = self.redraws[k]
                out[at] = self.shrunk[k] + (pool_[rng.integers(0, len(pool_), c)] - self.vals[k])
        return np.median(np.maximum(out, self.floor), axis=1)


def bootstrap(base_specs, var_specs, B, seed):
    """K independent batches of B resamples (each with its own within-run pools), pooled.
    Returns the pooled 2.5/97.5 percentiles and, for each, the range that the same
    percentile of a single run of B resamples falls in with probability ~0.9999: the pooled
    quantiles at q ± 4·sqrt(q(1−q)·(1/B + 1/(K·B))) (exact for any distribution, discrete
    ones included, up to the pooled sample standing in for the true one)."""
    ratios = []
    for k in range(K):
        rng = np.random.default_rng([seed, k])
        b = Side(base_specs, rng, 4000); v = Side(var_specs, rng, 4000)
        bm = b.medians(rng, B); vm = v.medians(rng, B)
        with np.errstate(divide='ignore', invalid='ignore'):
            ratios.append(np.where(bm == 0, np.where(vm == 0, 1.0, np.inf), vm / bm))
    # an infinite ratio (a zero baseline median) sorts last: a large finite stand-in keeps
    # the interpolation of type 7 from making NaN of it
    ratios = [np.where(np.isinf(x), np.sign(x) * 1e300, x) for x in ratios]
    pooled = np.concatenate(ratios)
    out = []
    for q in (0.025, 0.975):
        w = 4 * math.sqrt(q * (1 - q) * (1 / B + 1 / (K * B)))
        lo, hi = q7(pooled, 100 * max(0.0, q - w)), q7(pooled, 100 * min(1.0, q + w))
        if K > 2:
            # each batch estimated its own within-run variances (so its own pull toward
            # the median), as one framelab run does: one run's endpoint lies within 4 SD
            # of the batches' endpoints
            each = np.array([q7(x, 100 * q) for x in ratios])
            lo, hi = min(lo, each.mean() - 4 * each.std(ddof=1)), max(hi, each.mean() + 4 * each.std(ddof=1))
        out.append((q7(pooled, 100 * q), lo, hi))
    return out


def specs_of(metric, variant, group):
    out = []
    for r in runs:
        if r.variant == variant and r.group == group and metric in r.v and math.isfinite(value(r.v[metric])):
            out.append(r.v[metric])
    return out


def decide(ratio, low, high, p_holm, nb, nv, higher, stated, noise, alpha):
    if min(nb, nv) < 4:
        return 'inconclusive'
    if low is None or not (math.isfinite(low) or math.isfinite(high)):
        return 'inconclusive'
    lo_band, hi_band = 1 - noise, 1 + noise
    if low >= lo_band and high <= hi_band:
        return 'equivalent'
    above, below = low > hi_band, high < lo_band
    if stated and p_holm is not None and p_holm < alpha and (above or below):
        return 'improved' if (above == higher) else 'regressed'
    return 'inconclusive'


# ---------------------------------------------------------------- which comparisons exist
forests = {f['metric']: f for f in d['forests']}
label_to_key = {f['label']: f['metric'] for f in d['forests']}
known = lambda key: any(key in r.v for r in runs)
for key in forests:
    if not known(key):
        unchecked.append(f'metric {key}: not recomputed by this script (cpu_per.*, energy, --frames, roles other than the command)')
noise = d['noise_pct'] / 100
# The page shows the comparison's document (framelab.html-compare/2): its method and
# primary metric are paragraphs, as text prints them.
paragraphs = [b['paragraph'] for b in d['blocks'] if 'paragraph' in b]
# The method's paragraph names the bootstrap; the primary metric's also says "α = ".
method = next(p for p in paragraphs if 'two-level bootstrap' in p)
alpha = float(re.search(r'α = ([0-9.]+)', method).group(1))
B = int(re.search(r'\(two-level bootstrap, (\d+) resamples', method).group(1))
primary_label = next((re.match(r'primary metric: (.+?), tested first', p) for p in paragraphs
                      if p.startswith('primary metric: ')), None)
primary_metric = label_to_key.get(primary_label.group(1)) if primary_label else d['forests'][0]['metric']

# (group, variant) -> baseline (variant, group); in a one-variant sweep every value is
# compared with the first value's runs.
comparisons = []
for g in groups:
    for v in variants:
        if one_variant_sweep:
            if g != base_group:
                comparisons.append((g, v, v, base_group))
        elif v != baseline:
            comparisons.append((g, v, baseline, g))

mine = {}  # (group, variant, metric) -> dict
for (g, v, bv, bg) in comparisons:
    fam = []
    for key, f in forests.items():
        if not known(key):
            continue
        x = values_of(key, v, g); y = values_of(key, bv, bg)
        if not x or not y:
            continue
        p, how = mann_whitney(np.array(x), np.array(y))
        fam.append((key, x, y, p, how))
    ph = gatekeeping([t[0] for t in fam], [t[3] for t in fam], primary_metric, g, v, bv, bg)
    for (key, x, y, p, how), pa in zip(fam, ph):
        mine[(g, v, key)] = dict(x=x, y=y, p=p, how=how, p_holm=pa, bv=bv, bg=bg,
                                 ratio=(np.median(x) / np.median(y)) if np.median(y) != 0 else
                                 (1.0 if np.median(x) == 0 else math.inf))

# ---------------------------------------------------------------- forests
print(f'== forest plots: {len(forests)} metrics, {len(comparisons)} comparisons, {B} resamples, {K} batches')
seed = 1
for key, f in forests.items():
    if not known(key):
        continue
    higher = f['higher_is_better']
    rows = {r['label']: r for r in f['rows']}
    exp_labels = []
    if one_variant_sweep:
        exp_labels.append((f'{variants[0]} [{base_group}]', variants[0], base_group, True))
        for g in groups:
            if g != base_group:
                exp_labels.append((f'{variants[0]} [{g}]', variants[0], g, False))
    else:
        for g in groups:
            for v in variants:
                lab = v if g == '' else f'{v} [{g}]'
                exp_labels.append((lab, v, g, v == baseline))
    exp_labels = [t for t in exp_labels if values_of(key, t[1], t[2])]
    same(f'{key}: forest rows', [r['label'] for r in f['rows']], [t[0] for t in exp_labels])
    for lab, v, g, is_base in exp_labels:
        r = rows.get(lab)
        if r is None:
            continue
        x = values_of(key, v, g)
        bg = base_group if one_variant_sweep else g
        y = values_of(key, baseline if not one_variant_sweep else v, bg)
        med, bmed = float(np.median(x)), float(np.median(y))
        check(f'{key} [{lab}] median', r['median'], med, 1e-9, show=False)
        check(f'{key} [{lab}] baseline median', r['baseline_median'], bmed, 1e-9, show=False)
        table.append((f'{key} median, {lab}', r['median'], med))
        check(f'{key} [{lab}] run dots (run ÷ baseline median, sorted)', sorted(r['runs']),
              sorted(xx / bmed for xx in x), 0, 5e-6 + 1e-12, show=False)
        table.append((f'{key} run dots, {lab} (largest)', max(r['runs']), max(xx / bmed for xx in x)))
        if is_base:
            check(f'{key} [{lab}] baseline ratio', r['ratio'], 1.0, 0, show=False)
            same(f'{key} [{lab}] verdict', r['verdict'], 'baseline')
            continue
        m = mine[(g, v, key)]
        check(f'{key} [{lab}] ratio', r['ratio'], m['ratio'], 0, 5e-6 + 1e-12, show=False)
        base_specs = specs_of(key, m['bv'], m['bg']); var_specs = specs_of(key, v, g)
        (lo, lo_a, lo_b), (hi, hi_a, hi_b) = bootstrap(base_specs, var_specs, B, seed); seed += 1
        m['low'], m['high'] = lo, hi
        for end, got, (e, ea, eb) in (('low', r['low'], (lo, lo_a, lo_b)), ('high', r['high'], (hi, hi_a, hi_b))):
            # framelab's one run of B resamples must fall where that percentile of B
            # resamples falls (the page rounds to 5 decimals)
            checked += 1
            if got is None:  # JSON has no infinity: an unbounded end is null
                got = -math.inf if end == 'low' else math.inf
            if e >= 1e299:
                e = math.inf
            ok = ea - 1e-5 - 1e-12 <= got <= eb + 1e-5 + 1e-12 or (math.isinf(got) and got == e)
            if not ok:
                bad += 1
            print(f'{"ok  " if ok else "DIFF"} {key} [{lab}] 95% interval {end}: framelab {got} · independent {e:.6g} '
                  f'(Monte-Carlo range of {B} resamples [{ea:.6g}, {eb:.6g}]) · ratio {(got / e) if got is not None and e else float("nan"):.6f}')
        table.append((f'{key} 95% low, {lab}', r['low'], lo)); table.append((f'{key} 95% high, {lab}', r['high'], hi))
        stated = True
        exp_v = decide(m['ratio'], r['low'], r['high'], m['p_holm'], len(y), len(x), higher, stated, noise, alpha)
        same(f'{key} [{lab}] verdict (from its interval and the p here)', r['verdict'], exp_v)

# ---------------------------------------------------------------- verdict tables
# A table per comparison under its heading, `VARIANT vs BASELINE`, `VARIANT [VALUES] vs
# BASELINE [VALUES]` or, in a sweep of one variant, `VARIANT [VALUES] vs [BASE VALUES]`.
print('== verdict tables')
heading = None
for b in d['blocks']:
    if 'heading' in b:
        heading = b['heading']; continue
    t = b.get('table')
    if not t or 'p (adj.)' not in t['headers'] or heading is None:
        continue
    h = re.match(r'^(?P<v>.+?)(?: \[(?P<g>[^\]]*)\])? vs (?:\[(?P<bg>[^\]]*)\]|(?P<bv>.+?)(?: \[[^\]]*\])?)$', heading)
    if not h:
        unchecked.append(f'table under {heading}'); continue
    col = {name: i for i, name in enumerate(t['headers'])}
    for cells in t['rows']:
        row = dict(group=h.group('g') or '', variant=h.group('v'), metric=cells[col['metric']],
                   p=cells[col['p (adj.)']], verdict=cells[col['verdict']],
                   change=cells[col['change [95% interval]']])
        key = label_to_key.get(row['metric'])
        m = mine.get((row['group'], row['variant'], key))
        if m is None:
            unchecked.append(f'verdict row {row["group"]} {row["variant"]} {row["metric"]}'); continue
        lab = f'{row["variant"]} {row["group"]} {row["metric"]}'.replace('  ', ' ')
        # p (adj.) as printed: four decimals, or "<0.0001".
        if row['p'] == '<0.0001':
            same(f'verdict {lab}: p (adj.) < 0.0001', m['p_holm'] is not None and m['p_holm'] < 0.0001, True)
        elif row['p'] != '—':
            check(f'verdict {lab}: p (adj.) as printed ({row["p"]})', float(row['p']), m['p_holm'], 0, 0.5e-4 + 1e-12, show=False)
        if row['p'] not in ('<0.0001', '—'):
            table.append((f'p (adj.), {lab}', float(row['p']), m['p_holm']))
        against = h.group('bg') if h.group('bg') is not None else h.group('bv')
        same(f'verdict {lab}: against', against, m['bg'] if one_variant_sweep else m['bv'])
        fr = forests[key]['rows']
        frow = next(r for r in fr if r['label'] == (row['variant'] if row['group'] == '' else f'{row["variant"]} [{row["group"]}]'))
        same(f'verdict {lab}: word (table = forest)', row['verdict'], frow['verdict'])
        # The change as printed: change in %, then the interval; the last three numbers of
        # the text. Each must be the independent figure to its printed digits (the
        # interval's ends plus the Monte-Carlo noise checked above, so only the middle one).
        toks = re.findall(r'[−+±]?(?:\d+(?:\.\d+)?|∞)', row['change'])[-3:]
        if len(toks) == 3 and m.get('low') is not None:
            tk = toks[0]; dec = len(tk.split('.')[1]) if '.' in tk else 0
            got = float(tk.replace('−', '-').replace('+', '').replace('±', ''))
            exp = m['ratio'] if '×' in row['change'] else (m['ratio'] - 1) * 100
            check(f'verdict {lab}: change as printed ({row["change"]})', got, exp, 0, 0.5 * 10 ** -dec + 1e-9, show=False)

# ---------------------------------------------------------------- sweeps
print('== sweep lines')
for s in d['sweeps']:
    key = label_to_key.get(s['label'])
    if key is None or not known(key):
        unchecked.append(f'sweep {s["label"]}'); continue
    same(f'sweep {s["label"]}: parameter values', s['params'], groups)
    same(f'sweep {s["label"]}: lines', [l[0] for l in s['lines']], variants)
    for vname, ys in s['lines']:
        exp = [float(np.median(values_of(key, vname, g))) if values_of(key, vname, g) else None for g in s['params']]
        check(f'sweep {s["label"]} line {vname}', ys, exp, 1e-9)
        for g, a, b in zip(s['params'], ys, exp):
            table.append((f'sweep {s["label"]}, {vname} at {g}', a, b))

# ---------------------------------------------------------------- stage distributions
print('== stage distributions (pooled spans of each variant at the first parameter values)')
stage_names = list(dict.fromkeys(n for r in runs for n in r.stages))
same('stage overlays: stages', sorted(s['stage'] for s in d['stages']), sorted(stage_names))
for s in d['stages']:
    same(f'stage {s["stage"]}: group', s['group'], first_group)
    got = dict((v, us) for v, us in s['variants'])
    exp_vs = [v for v in variants if any(r.variant == v and r.group == first_group and s['stage'] in r.stages for r in runs)]
    same(f'stage {s["stage"]}: variants', [v for v, _ in s['variants']], exp_vs)
    for v in exp_vs:
        pooled = np.sort(np.concatenate([r.stages[s['stage']] for r in runs
                                         if r.variant == v and r.group == first_group and s['stage'] in r.stages]))
        exp = [q7(pooled, p) / 1e3 for p in s['p']]
        check(f'stage {s["stage"]} {v}: {len(s["p"])} percentiles of {pooled.size} pooled spans (µs)',
              got.get(v, []), exp, 0, 0.0005 + 1e-9)
        check(f'stage {s["stage"]} {v}: min and max drawn', [got[v][0], got[v][-1]],
              [pooled[0] / 1e3, pooled[-1] / 1e3], 0, 0.0005 + 1e-9, show=False)
        table.append((f'stage {s["stage"]} {v}: p50 of pooled spans (µs)', got[v][s['p'].index(50.0)], q7(pooled, 50) / 1e3))
        table.append((f'stage {s["stage"]} {v}: max of pooled spans (µs)', got[v][-1], pooled[-1] / 1e3))

# ---------------------------------------------------------------- the JSON report
if J:
    print('== framelab compare --format json')
    for grp in J['groups']:
        g = grp['label']
        for cmp in grp['comparisons']:
            for row in cmp['rows']:
                key = row['metric']; m = mine.get((g, cmp['variant'], key))
                if m is None:
                    if known(key):
                        unchecked.append(f'json {g} {cmp["variant"]} {key}')
                    continue
                lab = f'json {cmp["variant"]} {g} {key}'.replace('  ', ' ')
                for side, xs in (('variant', m['x']), ('baseline', m['y'])):
                    st = row[side]
                    check(f'{lab} {side} median', st['median'], float(np.median(xs)), 1e-9, show=False)
                    check(f'{lab} {side} min/max', [st['min'], st['max']], [min(xs), max(xs)], 1e-9, show=False)
                    check(f'{lab} {side} runs', st['runs'], len(xs), 0, show=False)
                    check(f'{lab} {side} spread %', st['spread_pct'], spread_pct(xs), 1e-9, 1e-9, show=False)
                check(f'{lab} ratio', row['ratio']['ratio'], m['ratio'], 1e-12, show=False)
                check(f'{lab} p', row['p_value'], m['p'], 1e-9, show=False)
                same(f'{lab} p method', row['p_method'], m['how'])
                check(f'{lab} p (adj.)', row['p_holm'], m['p_holm'], 1e-9, show=False)
                if m.get('low') is not None:
                    f = forests[key]
                    frow = next(r for r in f['rows'] if r['label'] == (cmp['variant'] if g == '' else f'{cmp["variant"]} [{g}]'))
                    check(f'{lab} interval = page interval (5 digits)', [row['ratio']['low'], row['ratio']['high']],
                          [frow['low'], frow['high']], 0, 5e-6 + 1e-12, show=False)
                    same(f'{lab} verdict = page verdict', row['verdict'], frow['verdict'])
    for sw in J.get('sweeps', []):
        for row in sw['rows']:
            for vname, med in zip(sw['variants'], row['medians']):
                xs = values_of(sw['metric'], vname, row['params'])
                check(f'json sweep {sw["metric"]} {vname} {row["params"]}', med, float(np.median(xs)) if xs else None,
                      1e-9, show=False)
    print(f'ok   json: every row of {sum(len(c["rows"]) for gg in J["groups"] for c in gg["comparisons"])} compared' if not bad else '')

# ---------------------------------------------------------------- the page in a browser
if '--browser' in sys.argv:
    import os, subprocess, tempfile
    print('== headless Chromium')
    with tempfile.TemporaryDirectory() as prof:
        out = subprocess.run(['chromium', '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
                              '--enable-logging=stderr', '--v=0', f'--user-data-dir={prof}', '--dump-dom',
                              'file://' + os.path.abspath(page_path)], capture_output=True, text=True, timeout=120)
    dom, log = out.stdout, out.stderr
    body = re.search(r'<body[^>]*>', dom).group(0)
    same('browser: page drawn (data-rendered)', re.search(r'data-rendered="([^"]*)"', body) and
         re.search(r'data-rendered="([^"]*)"', body).group(1), '1')
    same('browser: errors (data-errors)', re.search(r'data-errors="([^"]*)"', body).group(1), '0')
    same('browser: console messages', [l for l in log.splitlines() if 'CONSOLE' in l or 'Uncaught' in l], [])
    import html as html_
    plots = {html_.unescape(m.group(1)): (int(re.search(r'data-series="(\d+)"', m.group(0)).group(1)),
                          int(re.search(r'data-points="(\d+)"', m.group(0)).group(1)))
             for m in re.finditer(r'<[a-z]+ [^>]*data-plot="([^"]+)"[^>]*>', dom)}
    for key, f in forests.items():
        same(f'browser: forest {key} rows, dots', plots.get(f'forest-{key}'),
             (len(f['rows']), sum(len(r['runs']) for r in f['rows'])))
    for i, sw in enumerate(d['sweeps']):
        same(f'browser: sweep {sw["label"]} lines, points', plots.get(f'sweep-{i}'), (len(sw['lines']), len(sw['params'])))
    for i, st in enumerate(d['stages']):
        same(f'browser: stage {st["stage"]} variants, points', plots.get(f'stage-{i}'), (len(st['variants']), len(st['p'])))
    # what a person reads on hovering a dot: each run's value and its ratio
    for key, f in forests.items():
        svg_ = re.search(r'data-plot="forest-' + re.escape(html_.escape(key, quote=True)) + r'".*?</svg>', dom, re.S)
        titles = re.findall(r'<circle[^>]*><title>(.*?): run at .*?\(×([0-9.]+)\)</title>', svg_.group(0)) if svg_ else []
        got = sorted((html_.unescape(lab), float(x)) for lab, x in titles)
        exp = sorted((r['label'], round(v, 3)) for r in f['rows'] for v in r['runs'])
        same(f'browser: forest {key} dots hovered (×ratio to 3 decimals)', [(a, round(b, 3)) for a, b in got],
             [(a, b) for a, b in exp]) if len(got) == len(exp) else same(f'browser: forest {key} dot titles', len(got), len(exp))
    # where each mark is drawn: the noise band's rectangle spans x(1 - noise) to
    # x(1 + noise), which fixes the axis; every dot, diamond and interval end read back
    # through it must be the checked value (to 1e-6 of the axis), and what hovering a dot
    # says ("run at X") the run's value to its printed digits
    num = r'(-?[0-9.]+(?:e[-+]?[0-9]+)?)'
    for key, f in forests.items():
        svg_ = re.search(r'data-plot="forest-' + re.escape(html_.escape(key, quote=True)) + r'".*?</svg>', dom, re.S)
        if not svg_:
            continue
        svg_ = svg_.group(0)
        band = re.search(r'<rect x="' + num + r'" y="[^"]*" width="' + num + r'" height="[^"]*" fill="rgba', svg_)
        x0, wd = float(band.group(1)), float(band.group(2))
        back = lambda x: (1 - noise) + (x - x0) / wd * 2 * noise
        # rows in order: split at each row label's <text x="4" ...>
        parts = re.split(r'<text x="4" y="[^"]*">', svg_)[2:]
        ok_pos = len(parts) == len(f['rows'])
        worst = 0.0
        for part, r in zip(parts, f['rows']):
            cx = [back(float(x)) for x in re.findall(r'<circle cx="' + num + '"', part)]
            why = []
            if len(cx) != len(r['runs']) or any(abs(a - b) > 1e-6 for a, b in zip(sorted(cx), sorted(r['runs']))):
                why.append(f'dots at {sorted(cx)} for {sorted(r["runs"])}')
            dia = re.search(r'transform="rotate\(45 ' + num, part)
            if r['ratio'] is not None and (dia is None or abs(back(float(dia.group(1))) - r['ratio']) > 1e-6):
                why.append(f'diamond at {dia and back(float(dia.group(1)))} for {r["ratio"]}')
            ln = re.search(r'<line x1="' + num + r'" x2="' + num + r'" y1="[^"]*" y2="[^"]*" stroke="#', part)
            if r['low'] is not None and r['high'] is not None:
                if ln is None or abs(back(float(ln.group(1))) - r['low']) > 1e-6 or abs(back(float(ln.group(2))) - r['high']) > 1e-6:
                    why.append(f'interval at {ln and (back(float(ln.group(1))), back(float(ln.group(2))))} for {r["low"], r["high"]}')
            base = r['baseline_median'] or 0
            for said in re.findall(r'run at ' + num + r' [^(]*\(×', part):
                dec = len(said.split('.')[1]) if '.' in said else 0
                if not any(abs(float(said) - round(v * base, 12)) <= 0.5 * 10 ** -dec + 1e-9 + abs(v * base) * 1e-5
                           for v in r['runs']):
                    why.append(f'hover says {said}, runs are {[v * base for v in r["runs"]]}')
            if why:
                ok_pos = False
                print(f'     {key} [{r["label"]}]: ' + '; '.join(why))
        same(f'browser: forest {key} dots, diamonds, intervals drawn at their values; hover values', ok_pos, True)
    print(f'ok   browser: {len(plots)} plots drawn' if not bad else '')

# ---------------------------------------------------------------- summary
print()
print('| figure | framelab | independent (numpy/scipy) | ratio |')
print('| --- | ---: | ---: | ---: |')
for lab, a, b in table:
    rr = (a / b) if (a is not None and b not in (None, 0) and math.isfinite(b)) else float('nan')
    fa = 'null (+∞)' if a is None else f'{a:.6g}'
    print(f'| {lab} | {fa} | {b:.6g} | {rr:.6f} |')
for u in unchecked:
    print('not checked:', u)
print(f'\n{checked} figures checked, {bad} differ')
print('DIFFERENCES' if bad else 'ALL AGREE', bad)
sys.exit(1 if bad else 0)
