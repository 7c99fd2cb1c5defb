#!/usr/bin/env python3
"""Independent computation of framelab's frame-time figures from raw data.

Reads the capture tool's CSV (or framelab's CSV export) directly, builds frames by the
definitions of DESIGN.md / docs/metrics.md, and computes every frame-time figure with numpy.
Shares no code with framelab.
"""
import csv, json, math, sys, sqlite3
from decimal import Decimal
from collections import defaultdict
import numpy as np


def dec_ns(text, scale):
    """exact decimal text * scale -> integer ns"""
    v = Decimal(text) * scale
    assert v == v.to_integral_value(), (text, scale)
    return int(v)


# ---------------------------------------------------------------- readers
def read_presentmon_v1(path):
    rows = list(csv.DictReader(open(path, encoding='utf-8-sig')))
    end = np.array([dec_ns(r['TimeInSeconds'], 10**9) for r in rows], dtype=np.int64)
    dur = np.array([dec_ns(r['MsBetweenPresents'], 10**6) for r in rows], dtype=np.int64)
    return end - dur, end, np.arange(len(rows))


def read_presentmon_v2(path, app='PresentBench.exe', chain='0x2A70D2CAC00'):
    rows = [r for r in csv.DictReader(open(path, encoding='utf-8-sig'))
            if r['Application'] == app and r['SwapChainAddress'] == chain]
    start = np.array([int(r['CPUStartQPC']) * 100 for r in rows], dtype=np.int64)  # 10 MHz QPC
    dur = np.array([dec_ns(r['MsBetweenAppStart'], 10**6) for r in rows], dtype=np.int64)
    return start, start + dur, np.arange(len(rows))


def read_mangohud(path):
    lines = open(path).read().splitlines()
    rows = list(csv.DictReader(lines[2:]))
    end = np.array([int(r['elapsed']) for r in rows], dtype=np.int64)
    dur = np.array([int(r['frametime']) * 1000 for r in rows], dtype=np.int64)  # 0.6: µs
    return end - dur, end, np.arange(len(rows))


def read_export_csv(path):
    """framelab export --format csv: frame,stage,pid,tid,thread,start_ns,dur_ns"""
    fs, fe = {}, {}
    stages = defaultdict(list)  # stage -> [(frame, dur)]
    for r in csv.DictReader(open(path)):
        if r['frame'] == '':
            continue  # the framelab:launch marker
        f = int(r['frame']); s = int(r['start_ns']); d = int(r['dur_ns'])
        if d < 0:
            continue
        fs[f] = min(fs.get(f, s), s); fe[f] = max(fe.get(f, s + d), s + d)
        stages[r['stage']].append((f, s, d))
    ids = np.array(sorted(fs), dtype=np.int64)
    return (np.array([fs[i] for i in ids], dtype=np.int64),
            np.array([fe[i] for i in ids], dtype=np.int64), ids, stages)


# ---------------------------------------------------------------- statistics
def q7(x, p):
    x = np.sort(np.asarray(x, dtype=np.float64))
    return float(np.percentile(x, p * 100, method='linear'))


def dist(x):
    x = np.asarray(x, dtype=np.float64)
    return dict(count=len(x), min=x.min(), p50=q7(x, .5), p95=q7(x, .95), p99=q7(x, .99),
                max=x.max(), mean=x.mean())


def round_half_up(v):
    return math.floor(v + 0.5)


def figures(start, end, ids, budget_ns, win_start=None, win_end=None, origin=None):
    if origin is None:
        origin = start.min()
    start = start - origin; end = end - origin
    if win_start is None:
        win_start, win_end = 0, end.max()
    else:
        win_start -= origin; win_end -= origin
    m = (end >= win_start) & (end <= win_end)
    start, end, ids = start[m], end[m], ids[m]
    order = np.lexsort((ids, end))
    start, end, ids = start[order], end[order], ids[order]
    total = end - start
    iv = np.diff(end).astype(np.float64)
    n = len(end)
    out = {}
    out['frames'] = n
    out['window_s'] = (win_end - win_start) / 1e9
    out['observed_fps'] = n / ((win_end - win_start) / 1e9)
    for k, v in dist(total).items():
        out['total.' + k] = v
    for k, v in dist(iv).items():
        out['interval.' + k] = v
    ivus = iv / 1000.0
    out['fps.mean'] = 1e6 / ivus.mean()
    for name, p in [('p50', .5), ('p10', .9), ('p5', .95), ('p1', .99), ('p0_1', .999)]:
        if len(iv) >= 1 / (1 - p) - 1e-9 if name != 'p50' else len(iv) >= 2:
            out['fps.' + name] = 1e6 / q7(ivus, p)
    for name, frac in [('1', .01), ('0_1', .001)]:
        if len(iv) < round(1 / frac):
            continue
        qq = q7(ivus, 1 - frac)
        out[f'fps.low{name}_avg'] = 1e6 / ivus[ivus >= qq].mean()
        desc = np.sort(ivus)[::-1]
        cs = np.cumsum(desc)
        k = int(np.argmax(cs >= frac * ivus.sum()))
        out[f'fps.low{name}_int'] = 1e6 / desc[k]
    if budget_ns:
        late = total > budget_ns
        out['late.frames'] = int(late.sum())
        out['late.pct'] = 100.0 * late.sum() / n
        ms = 0
        for x in iv:
            if x > 1.5 * budget_ns:
                ms += round_half_up(x / budget_ns) - 1
        out['late.missed_slots'] = ms
        best = cur = 0
        for l in late:
            cur = cur + 1 if l else 0
            best = max(best, cur)
        out['late.longest_streak'] = best
        out['pacing.mean_abs_budget_error_us'] = np.abs(iv - budget_ns).mean() / 1e3
    # stutter
    W = max(1, round_half_up(10 * math.sqrt(iv.mean() / 1e6)))
    st = []
    for i in range(1, len(iv)):
        prev = iv[max(0, i - W):i]
        if iv[i] > 2.5 * prev.mean():
            st.append(i)
    out['stutter.window'] = W
    out['stutter.count'] = len(st)
    out['stutter.count_pct'] = 100.0 * len(st) / len(iv)
    out['stutter.time_pct'] = 100.0 * iv[st].sum() / iv.sum()
    # pacing
    out['pacing.interval_sd_us'] = iv.std() / 1e3
    ends_iv = end[1:].astype(np.float64)
    adev = []
    j = 0
    for i in range(len(iv)):
        while ends_iv[i] - ends_iv[j] >= 500e6:
            j += 1
        adev.append(iv[i] - iv[j:i + 1].mean())
    out['pacing.adaptive_sd_us'] = math.sqrt(np.mean(np.square(adev))) / 1e3
    d = np.abs(np.diff(iv)) / 1e6
    edges = [0, 2, 4, 8, 12, np.inf]
    for a, b in zip(edges, edges[1:]):
        c = int(((d >= a) & (d < b)).sum())
        out[f'pacing.delta_{a}-{b}ms'] = c
        out[f'pacing.delta_{a}-{b}ms_pct'] = 100.0 * c / len(d)
    # worst frames
    w = np.lexsort((ids, -total))[:10]
    out['worst'] = [(int(ids[i]), end[i] / 1e9, int(total[i])) for i in w]
    return out


# ---------------------------------------------------------------- framelab side
def framelab_figures(js):
    d = json.load(open(js)) if isinstance(js, str) else js
    out = {}
    out['frames'] = d['frames']
    out['window_s'] = d['window']['length_ns'] / 1e9
    out['observed_fps'] = d['observed_fps']
    for part in ('total', 'interval'):
        for k in ('count', 'min', 'p50', 'p95', 'p99', 'max', 'mean'):
            v = d[part][k if k == 'count' else k + '_ns']
            out[f'{part}.{k}'] = v
    for k, v in d['fps'].items():
        if v is not None:
            out['fps.' + k] = v
    if d['late']:
        out['late.frames'] = d['late']['late_frames']
        out['late.pct'] = d['late']['late_pct']
        out['late.missed_slots'] = d['late']['missed_slots']
        out['late.longest_streak'] = d['late']['longest_streak']
    s = d['stutter']
    out['stutter.count'] = s['count']; out['stutter.count_pct'] = s['count_pct']
    out['stutter.time_pct'] = s['time_pct']
    if 'window' in s:
        out['stutter.window'] = s['window']
    p = d['pacing']
    out['pacing.interval_sd_us'] = p['interval_sd_ns'] / 1e3
    out['pacing.adaptive_sd_us'] = p['adaptive_sd_ns'] / 1e3
    if p.get('mean_abs_budget_error_ns') is not None:
        out['pacing.mean_abs_budget_error_us'] = p['mean_abs_budget_error_ns'] / 1e3
    for b in p['delta_buckets']:
        a = b['from_ns'] // 1000000
        t = b['to_ns'] // 1000000 if b['to_ns'] is not None else np.inf
        out[f'pacing.delta_{a}-{t}ms'] = b['count']
        out[f'pacing.delta_{a}-{t}ms_pct'] = b['pct']
    out['worst'] = [(w['frame'], w['t_s'], w['total_ns']) for w in d['worst_frames']]
    return out


def compare(mine, theirs, label):
    rows = []
    for k in mine:
        if k == 'worst':
            continue
        a = theirs.get(k); b = mine[k]
        if a is None:
            rows.append((label, k, None, b, None)); continue
        r = (a / b) if b else (1.0 if a == b else float('inf'))
        rows.append((label, k, a, b, r))
    for k in theirs:
        if k not in mine and k != 'worst':
            rows.append((label, k, theirs[k], None, None))
    wm = [(f, round(t, 6), v) for f, t, v in mine['worst']]
    wt = [(f, round(t, 6), v) for f, t, v in theirs['worst']]
    rows.append((label, 'worst frames (id, t s, total ns) x10', 'same' if wm == wt else str(wt),
                 'same' if wm == wt else str(wm), 1.0 if wm == wt else None))
    return rows


def show(rows):
    for label, k, a, b, r in rows:
        flag = '' if (r is not None and abs(r - 1) < 1e-9) else '   <<<<<'
        fa = f'{a:.9g}' if isinstance(a, (float, int, np.floating, np.integer)) else str(a)
        fb = f'{b:.9g}' if isinstance(b, (float, int, np.floating, np.integer)) else str(b)
        fr = f'{r:.9f}' if r is not None else '-'
        print(f'{label:10} {k:34} framelab {fa:>16}  indep {fb:>16}  ratio {fr}{flag}')
