#!/usr/bin/env python3
"""Check the numbers in framelab's HTML page and Chrome JSON export against numpy.

usage: check_html.py RUN.framelab PAGE.html SPANS.csv [CHROME.json]
(framelab export RUN --format csv / --format chrome; framelab report RUN --format html).
Shares no code with framelab: frames, windows, percentiles are computed here from the CSV.
"""
import csv, json, re, sqlite3, sys
from collections import defaultdict
import numpy as np

run, page, spans_csv = sys.argv[1:4]
chrome = sys.argv[4] if len(sys.argv) > 4 else None
ws, we = sqlite3.connect(run).execute('select window_start_ns, window_end_ns from runs').fetchone()
h = open(page).read()
blocks = {m.group(1): json.loads(m.group(2)) for m in
          re.finditer(r'<script type="application/json" id="([^"]+)">(.*?)</script>', h, re.S)}
d = blocks['framelab-data']
rows = [r for r in csv.DictReader(open(spans_csv))]
spans = [r for r in rows if r['frame'] != '']
fs, fe, fsp = {}, {}, defaultdict(list)
for r in spans:
    f, s, du = int(r['frame']), int(r['start_ns']), int(r['dur_ns'])
    fs[f] = min(fs.get(f, s), s); fe[f] = max(fe.get(f, s + du), s + du)
    fsp[f].append(r)
ids = np.array(sorted(fs)); st = np.array([fs[i] for i in ids]); en = np.array([fe[i] for i in ids])
o = np.lexsort((ids, en)); ids, st, en = ids[o], st[o], en[o]
tot = (en - st) / 1e3
bad = 0; rows_out = []
def q7(x, p): return float(np.percentile(np.asarray(x, float), p, method='linear'))
def check(label, mine, ref, tol):
    global bad
    mine = np.asarray(mine, float); ref = np.asarray(ref, float)
    if mine.shape != ref.shape:
        print(f'DIFF {label}: shape {mine.shape} vs {ref.shape}'); bad += 1; return
    err = np.abs(mine - ref); worst = int(np.argmax(err)) if err.size else 0
    ok = bool((err <= tol).all())
    if not ok: bad += 1
    print(f'{"ok  " if ok else "DIFF"} {label}: n={mine.size} max|diff|={err.max() if err.size else 0:.6g} (tol {np.max(tol):.3g})'
          + ('' if ok else f' at {worst}: {mine.flat[worst]} vs {ref.flat[worst]}'))
    rows_out.append((label, mine, ref))

# ---- frame series (all frames, by end, seconds after launch)
def series(name, xs, ys):
    s = d['frames'][name]; b = s['bucket']
    check(f'{name} points (frames it stands for)', [s['points']], [len(ys)], 0)
    levels = [s] + list(blocks.get('framelab-detail', {}).get(name, []))
    for li, lv in enumerate(levels):
        b = lv['bucket']; px = np.array(lv['x']); py = np.array(lv['y'])
        if b == 1:
            check(f'{name} level {li} x (s)', px, xs / 1e9, 5e-7 + 1e-12)
            check(f'{name} level {li} y (µs)', py, ys, 0.005 + 1e-9)
        else:
            # every point is a real frame at its time; each bucket's min and max are kept
            n = len(ys); exp_x, exp_y = [], []
            for k in range(0, n, b):
                yy = ys[k:k + b]; lo = k + int(np.argmin(yy)); hi = k + int(np.argmax(yy))
                for i in sorted({lo, hi}): exp_x.append(xs[i] / 1e9); exp_y.append(ys[i])
            check(f'{name} level {li} (bucket {b}) x (s)', px, exp_x, 5e-7 + 1e-12)
            check(f'{name} level {li} (bucket {b}) y (µs)', py, exp_y, 0.005 + 1e-9)
        check(f'{name} level {li} max', [py.max()], [ys.max()], 0.005 + 1e-9)
series('total', en, tot)
iv_all = np.diff(en) / 1e3
series('interval', en[1:], iv_all)
# ---- measured frames: end in [ws, we]
m = (en >= ws) & (en <= we)
mids = set(ids[m].tolist()); iv = np.diff(en[m]) / 1e3
print('measured frames', m.sum(), 'intervals', iv.size)
check('window start/end (s)', [d['window_start_s'], d['window_end_s']], [ws / 1e9, we / 1e9], 5e-7 + 1e-12)
# ---- late frames (total > budget, measured) and stutters as dots; the worst frame on every level
budget = d['budget_us']
me, mtot = en[m], tot[m]
late = np.nonzero(mtot > budget + 1e-9)[0]
L = d['frames']['late']
check('late frames (of)', [L['of']], [late.size], 0)
top = late[np.lexsort((me[late], -mtot[late]))][:len(L['x'])]
top = top[np.argsort(me[top], kind='stable')]
check('late dots x (s)', sorted(L['x']), me[top] / 1e9, 5e-7 + 1e-12)
check('late dots y (µs)', [y for _, y in sorted(zip(L['x'], L['y']))], mtot[top], 0.005 + 1e-9)
ivn = np.diff(me).astype(float)
W = max(1, int(np.floor(10 * np.sqrt(ivn.mean() / 1e6) + 0.5)))
stt = [i for i in range(1, ivn.size) if ivn[i] > 2.5 * ivn[max(0, i - W):i].mean()]
S = d['frames']['stutters']
check('stutters (of)', [S['of']], [len(stt)], 0)
check('stutter dots x (s)', S['x'], me[1:][stt][:len(S['x'])] / 1e9, 5e-7 + 1e-12)
check('stutter dots y (µs)', S['y'], ivn[stt][:len(S['y'])] / 1e3, 0.005 + 1e-9)
if d['gantt']:
    g0 = d['gantt'][0]
    for li, lv in enumerate([d['frames']['total']] + list(blocks.get('framelab-detail', {}).get('total', []))):
        hit = any(abs(x - g0['t_s']) <= 5e-7 + 1e-12 and abs(y - g0['total_us']) <= 0.005 for x, y in zip(lv['x'], lv['y']))
        check(f'worst measured frame drawn on level {li}', [hit], [True], 0)
# ---- stage curves
P = d['stages']['p']
for s in d['stages']['series']:
    durs = [int(r['dur_ns']) / 1e3 for f in mids for r in fsp[f] if r['stage'] == s['name']]
    check(f'stage {s["name"]} count', [s['count']], [len(durs)], 0)
    ref = [q7(durs, p) for p in P]
    check(f'stage {s["name"]} curve (µs)', s['us'], ref, 0.0005 + 1e-9)   # to the ns
# ---- fps curve: fps_p = 1e6 / Q(1 - p) of the interval
ref = [1e6 / q7(iv, 100 - p) for p in d['fps']['p']]
check('fps curve', d['fps']['fps'], ref, np.maximum(0.005, np.abs(ref) * 5e-6) + 1e-9)
named = dict(d['fps']['named'])
ref = {}
ref['p1'] = 1e6 / q7(iv, 99); ref['p0.1'] = 1e6 / q7(iv, 99.9) if iv.size >= 1000 else None
for nm, fr in [('1', .01), ('0_1', .001)]:
    if iv.size < round(1 / fr): continue
    qq = q7(iv, 100 * (1 - fr)); ref[f'low{nm}_avg'] = 1e6 / iv[iv >= qq].mean()
    desc = np.sort(iv)[::-1]; k = int(np.argmax(np.cumsum(desc) >= fr * iv.sum())); ref[f'low{nm}_int'] = 1e6 / desc[k]
for k, v in named.items():
    check(f'fps named {k}', [v], [ref[k]], max(0.005, abs(ref[k]) * 5e-6) + 1e-9)
# ---- gantt of the worst frames
mt = {f: (fe[f] - fs[f]) for f in mids}
worst = sorted(mt, key=lambda f: (-mt[f], f))[:len(d['gantt'])]
check('gantt frames', [g['frame'] for g in d['gantt']], worst, 0)
for g in d['gantt']:
    f = g['frame']
    check(f'gantt {f} total/t', [g['total_us'], g['t_s']], [mt[f] / 1e3, fe[f] / 1e9], 0.005 + 1e-9)
    exp = sorted((r['stage'], (f"{r['thread']} ({r['tid']})" if r['thread'] else f"tid {r['tid']}"), (int(r['start_ns']) - fs[f]) / 1e3, int(r['dur_ns']) / 1e3) for r in fsp[f])
    got = sorted((g['stage_names'][a], g['threads'][b], c, e) for a, b, c, e in g['spans'])
    if [x[:2] for x in got] != [x[:2] for x in exp]:
        print('DIFF gantt', f, 'names/threads', got, exp); bad += 1
    check(f'gantt {f} spans start,dur (µs)', [x[2:] for x in got], [x[2:] for x in exp], 0.0005 + 1e-9)
# ---- telemetry series on the page: gauges as read, counters as a rate per second
db = sqlite3.connect(run)
for t in d.get('telemetry', []):
    cands = [r for r in db.execute('select series_id, source, metric, entity, label, kind from sample_series')
             if t['label'].startswith(f'{r[1]} {r[2]}') and (r[3] in t['label'] or r[4] in t['label'])]
    if len(cands) != 1:
        print('?   telemetry series not matched uniquely:', t['label'], len(cands)); continue
    sid, kind = cands[0][0], cands[0][5]
    tv = np.array(db.execute('select t_ns, value from samples where series_id=? order by t_ns', (sid,)).fetchall(), float)
    if kind == 'gauge':
        xs, ys = tv[:, 0], tv[:, 1]
    else:
        xs, ys = tv[1:, 0], np.diff(tv[:, 1]) / (np.diff(tv[:, 0]) / 1e9)
    b = t['bucket']; ex, ey = [], []
    for k in range(0, len(ys), b):
        yy = ys[k:k + b]
        for i in sorted({k + int(np.argmin(yy)), k + int(np.argmax(yy))}): ex.append(xs[i]); ey.append(ys[i])
    ex, ey = np.array(ex), np.array(ey)
    check(f'telemetry {t["label"]} ({kind}, bucket {b}) x (s)', t['x'], ex / 1e9, 5e-7 + 1e-12)
    check(f'telemetry {t["label"]} ({kind}, bucket {b}) y', t['y'], ey, 0.0005 + np.abs(ey) * 1e-12)
    check(f'telemetry {t["label"]} max', [max(t['y'])], [ys.max()], max(0.005, abs(ys.max()) * 5e-6))
# ---- Chrome JSON
if chrome:
    cj = json.load(open(chrome)); ev = cj['traceEvents'] if isinstance(cj, dict) else cj
    xs = [e for e in ev if e.get('ph') == 'X']
    print('chrome phases', sorted({e.get('ph') for e in ev}))
    key = lambda name, pid, tid, ts, dur: (name, pid, tid, round(ts * 1000), round(dur * 1000))
    got = defaultdict(int)
    for e in xs: got[key(e['name'], e.get('pid'), e.get('tid'), e['ts'], e['dur'])] += 1
    exp = defaultdict(int)
    for r in spans:
        exp[key(r['stage'], int(r['pid']) if r['pid'] else None, int(r['tid']) if r['tid'] else None,
                int(r['start_ns']) / 1e3, int(r['dur_ns']) / 1e3)] += 1
    missing = exp.keys() - got.keys(); extra = got.keys() - exp.keys()
    dup = sum(1 for k in exp if got.get(k, 0) != exp[k])
    print(f'{"ok  " if not missing and not extra and not dup else "DIFF"} chrome X events {len(xs)} vs CSV spans {len(spans)}: missing {len(missing)} extra {len(extra)} count-mismatch {dup}')
    if missing or extra or dup:
        bad += 1; print(' e.g. missing', list(missing)[:3], 'extra', list(extra)[:3])
    # samples as counter events, thread names, per-frame counters, events
    db = sqlite3.connect(run)
    ser = {r[0]: f'{r[1]}.{r[2]}[{r[3]}] ({r[4]})' for r in db.execute('select series_id, source, metric, entity, unit from sample_series')}
    exp = sorted((ser[a], b / 1e3, c) for a, b, c in db.execute('select series_id, t_ns, value from samples'))
    got = sorted((e['name'], e['ts'], e['args']['value']) for e in ev if e.get('ph') == 'C')
    ok = len(exp) == len(got) and all(a[0] == b[0] and a[2] == b[2] and abs(a[1] - b[1]) < 5e-4 for a, b in zip(exp, got))
    if not ok: bad += 1
    print(f'{"ok  " if ok else "DIFF"} chrome counter (C) events {len(got)} vs samples rows {len(exp)}')
    names = {(e['pid'], e['tid']): e['args']['name'] for e in ev if e.get('ph') == 'M' and e['name'] == 'thread_name'}
    tn = {(int(r['pid']), int(r['tid'])): r['thread'] for r in spans if r['thread']}
    ok = all(names.get(k) == v for k, v in tn.items())
    if not ok: bad += 1
    print(f'{"ok  " if ok else "DIFF"} chrome thread_name metadata for {len(tn)} threads')
    desc = cj['otherData']['framelab']['description'] if isinstance(cj, dict) else None
    if isinstance(desc, str): desc = json.loads(desc)
    if desc is not None:
        cn = desc['counter_names']
        got = sorted((f, cn[c], v) for f, c, v in desc['counters'])
        exp = sorted(db.execute('select frame, counter, value from named_counters'))
        ok = got == [tuple(x) for x in exp]
        if not ok: bad += 1
        print(f'{"ok  " if ok else "DIFF"} chrome per-frame counters {len(got)} vs named_counters {len(exp)}')
    got = sorted((e['name'], e['ts'], e.get('tid')) for e in ev if e.get('ph') == 'i' and e['name'] != 'framelab:launch')
    exp = sorted((n, t, tid) for n, t, tid in db.execute('select event, t_us, tid from named_events'))
    ok = len(got) == len(exp) and all(a[0] == b[0] and abs(a[1] - b[1]) < 5e-4 and a[2] == b[2] for a, b in zip(got, exp))
    if not ok: bad += 1; print(' e.g.', got[:2], exp[:2])
    print(f'{"ok  " if ok else "DIFF"} chrome instant events {len(got)} vs events rows {len(exp)}')
print('DIFFERENCES' if bad else 'ALL AGREE', bad)
sys.exit(1 if bad else 0)
