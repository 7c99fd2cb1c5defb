#!/usr/bin/env python3
"""Check every value of framelab's Perfetto export with Perfetto's own schema.

usage: check_perfetto.py SCHEMA FRAMELAB RUN.framelab [RUN.framelab ...] [--edge-cases]

SCHEMA is either
- a path to protos/perfetto/trace/perfetto_trace.proto of google/perfetto (the merged schema
  of the whole Trace; not in this repository), compiled with grpcio-tools (`pip install
  grpcio-tools protobuf`) into a temporary folder; or
- `pypi`: the Python classes Google generates from that file and ships in the `perfetto`
  package (`pip install perfetto protobuf`).
Either way the export is decoded with Perfetto's own schema, sharing nothing with
framelab's prost declarations. `--edge-cases` adds a run the script builds itself (via
`framelab import` of JSON Lines): times before launch, instants with keys, spans that overlap
without nesting, zero-length and duplicate spans, two processes, a nameless thread, a tid
past 2^31.

For each run (its latest run id): `framelab export --format perfetto` and `--format csv`,
then, independently of framelab's code:
- well-formedness: no field unknown to the schema anywhere, and every field in the wire type
  of its declared type (read from the raw bytes: a packed repeated field would decode here
  but not in Perfetto's own readers); one trusted sequence whose first
  packet clears the incremental state and before which nothing needs it; every packet using
  interned names says it needs incremental state; interned iids unique (an iid used but not
  defined shows as a wrong name below); track uuids unique, every parent and every event's track described before use;
  thread tracks under the process track of their pid; no clock id, clock snapshot or packet
  defaults, so every timestamp is in Perfetto's default clock (BOOTTIME) as written, which
  the export says is the run's ns after launch shifted up by -min(time) when some are
  negative; the `framelab:launch` instant at that shift;
- slices, rebuilt as Perfetto's trace processor does (packets sorted by timestamp, ties in
  file order; per track a stack: SLICE_END closes the innermost open slice), with their
  thread (a thread track, or an `overlap` child of one), name and `frame` annotation: against
  the CSV export and the run file's spans table, every value exact in ns;
- flows: one id per frame of two spans or more, on each of its slices, terminating on the last;
- instants against the events table; processes and threads against the threads and processes
  tables; counter tracks (name, unit, description) and their (ts, value) against
  sample_series and samples; the `framelab` track's description against counters.
A pid past 2^31-1 cannot be written (Perfetto's pid is an int32): it is compared as the
int32 of its bits, which is what the export writes and framelab's importer reads back, and
listed as a note. pid 0 (framelab's "no process known") is written as 2^31-1, since Perfetto
takes pid 0 for the kernel's idle process. Prints a table, exits 1 on any mismatch.

    pip install perfetto protobuf
    python3 benches/validate/check_perfetto.py pypi target/release/framelab demo.framelab --edge-cases
    # or, with the schema from a google/perfetto checkout:
    pip install grpcio-tools protobuf
    git -C PERFETTO_CHECKOUT show HEAD:protos/perfetto/trace/perfetto_trace.proto > /tmp/perfetto_trace.proto
    python3 benches/validate/check_perfetto.py /tmp/perfetto_trace.proto target/release/framelab demo.framelab
"""
import csv, importlib, json, os, shutil, sqlite3, subprocess, sys, tempfile
from collections import Counter, defaultdict

SEQ_CLEARED, SEQ_NEEDS = 1, 2
LAUNCH = 'framelab:launch'


def wire_types():
    from google.protobuf.descriptor import FieldDescriptor as F
    t = {F.TYPE_DOUBLE: 1, F.TYPE_FIXED64: 1, F.TYPE_SFIXED64: 1, F.TYPE_FLOAT: 5, F.TYPE_FIXED32: 5,
         F.TYPE_SFIXED32: 5, F.TYPE_STRING: 2, F.TYPE_BYTES: 2, F.TYPE_MESSAGE: 2, F.TYPE_GROUP: 3}
    for v in (F.TYPE_INT32, F.TYPE_INT64, F.TYPE_UINT32, F.TYPE_UINT64, F.TYPE_SINT32, F.TYPE_SINT64,
              F.TYPE_BOOL, F.TYPE_ENUM):
        t[v] = 0
    return t


WIRE = wire_types()


def load_schema(proto, tmp):
    """`pypi`: the classes Google generated from the same schema and ships in the `perfetto`
    package on PyPI (perfetto.protos.perfetto.trace.perfetto_trace_pb2); else a .proto file."""
    if proto == 'pypi':
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
        return perfetto_trace_pb2
    return compile_schema(proto, tmp)


def compile_schema(proto, tmp):
    from grpc_tools import protoc
    import grpc_tools
    include = os.path.join(os.path.dirname(grpc_tools.__file__), '_proto')
    src = os.path.dirname(os.path.abspath(proto))
    rc = protoc.main(['protoc', f'-I{src}', f'-I{include}', f'--python_out={tmp}',
                      os.path.abspath(proto)])
    if rc != 0:
        sys.exit(f'protoc failed on {proto}')
    sys.path.insert(0, tmp)
    name = os.path.splitext(os.path.basename(proto))[0] + '_pb2'
    return importlib.import_module(name)


def unknown_fields(msg, path='packet'):
    """Paths of fields the schema does not know (wrong number or wire type)."""
    from google.protobuf import unknown_fields as uf
    out = []
    if len(uf.UnknownFieldSet(msg)):
        out.append(f'{path}: {[f.field_number for f in uf.UnknownFieldSet(msg)]}')
    for fd, value in msg.ListFields():
        if fd.type != fd.TYPE_MESSAGE:
            continue
        items = value if fd.is_repeated else [value]
        for i, item in enumerate(items):
            out += unknown_fields(item, f'{path}.{fd.name}[{i}]')
    return out


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def wire_type_errors(buf, desc, path, out, limit=5):
    """Walks the raw bytes of a message of type `desc`: every field must have the wire type
    its declared type has. Parsers accept packed encoding for unpacked repeated fields, so
    decoding alone would not see one; Perfetto's own (pbzero) decoders read a proto2
    repeated scalar one value at a time and would not."""
    i = 0
    while i < len(buf) and len(out) < limit:
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        start = i
        if wt == 0:
            _, i = varint(buf, i)
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        elif wt == 2:
            n, i = varint(buf, i)
            start, i = i, i + n
        else:
            out.append(f'{path}: field {num} has wire type {wt}')
            return
        fd = desc.fields_by_number.get(num)
        if fd is None:
            continue  # unknown fields are reported by unknown_fields()
        want = WIRE.get(fd.type)
        if wt != want:
            out.append(f'{path}.{fd.name} ({num}): wire type {wt}, schema says {want}')
        elif fd.type == fd.TYPE_MESSAGE:
            wire_type_errors(buf[start:i], fd.message_type, f'{path}.{fd.name}', out, limit)


class Checks:
    def __init__(self, label):
        self.label, self.rows, self.bad, self.figures = label, [], 0, []

    def eq(self, what, got, want, n=None):
        ok = got == want
        if not ok:
            self.bad += 1
        self.rows.append((what, n if n is not None else (len(want) if hasattr(want, '__len__') else 1),
                          ok, '' if ok else first_difference(got, want)))

    def note(self, what, n):
        self.rows.append((what, n, None, 'not representable: compared as written'))

    def true(self, what, cond, detail='', n=1):
        if not cond:
            self.bad += 1
        self.rows.append((what, n, bool(cond), '' if cond else detail))


def first_difference(got, want):
    if isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            extra = Counter(map(repr, got)) - Counter(map(repr, want))
            lack = Counter(map(repr, want)) - Counter(map(repr, got))
            return (f'{len(got)} decoded vs {len(want)} expected; extra {list(extra)[:2]} '
                    f'missing {list(lack)[:2]}')
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                return f'at {i}: decoded {g!r} expected {w!r}'
    return f'decoded {got!r} expected {want!r}'


def json_or_text(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


NO_PROCESS_PID = 2**31 - 1


def written_pid(pid):
    """The pid the export writes for a run's: pid 0 (no process known) as NO_PROCESS_PID,
    since Perfetto takes pid 0 for the idle process; past 2^31-1 the int32 of its bits."""
    if pid == 0:
        return NO_PROCESS_PID
    return pid - 2**32 if pid >= 2**31 else pid


# Perfetto's built-in counter units, written for framelab's `ns`, `count` and `B`.
BUILTIN_UNITS = {1: 'ns', 2: 'count', 3: 'B'}


def counter_unit(counter):
    """The unit a counter descriptor gives: its unit_name, else its built-in unit's."""
    if counter.HasField('unit_name'):
        return counter.unit_name
    return BUILTIN_UNITS.get(counter.unit) if counter.HasField('unit') else None


def run_file(path):
    db = sqlite3.connect(path)
    q = lambda sql, *a: db.execute(sql, a).fetchall()
    rid = q('select max(run_id) from runs')[0][0]
    r = {}
    # Perfetto's pid is an int32: a u32 pid past 2^31-1 can only be written as its bit
    # pattern (what framelab's importer reads back); compared as such, and counted.
    r['big_pids'] = q('select count(distinct pid) from threads where run_id=? and pid >= 2147483648', rid)[0][0]
    r['threads'] = {tid: (written_pid(pid), t, name) for tid, pid, t, name in
                    q('select thread_id, pid, tid, name from threads where run_id=?', rid)}
    stages = dict(q('select stage_id, name from stages where run_id=?', rid))
    # frame ids and keys are u64 stored in SQLite's signed INTEGER
    r['spans'] = [(r['threads'][th][0], r['threads'][th][1], r['threads'][th][2], stages[st], fr % 2**64, s, d)
                  for fr, st, th, s, d in
                  q('select frame, stage_id, thread_id, start_ns, dur_ns from spans where run_id=?', rid)]
    names = dict(q('select event_id, name from event_names where run_id=?', rid))
    r['events'] = [(r['threads'][th][0], r['threads'][th][1], names[e], k % 2**64, t) for e, k, th, t in
                   q('select event_id, key, thread_id, t_ns from events where run_id=?', rid)]
    r['series'] = q('select series_id, source, metric, entity, label, unit, kind from sample_series '
                    'where run_id=? order by series_id', rid)
    r['samples'] = defaultdict(list)
    for sid, t, v in q('select series_id, t_ns, value from samples where run_id=? order by t_ns', rid):
        r['samples'][sid].append((t, v))
    r['processes'] = q('select pid, name from processes where run_id=? order by process_index', rid)
    r['counters'] = sorted(q('select frame, counter_id, value from counters where run_id=?', rid))
    r['counter_names'] = [n for _, n in q('select counter_id, name from counter_names where run_id=? '
                                          'order by counter_id', rid)]
    return r


def expected_process_name(run, pid):
    for p, name in run['processes']:
        if written_pid(p) == pid and name:
            return name
    named = [(t, n) for p, t, n in run['threads'].values() if p == pid and n]
    main_tid = 0 if pid == NO_PROCESS_PID else pid
    for t, n in named:
        if t == main_tid:
            return n
    return named[0][1] if named else None


def check(pb, framelab, path, tmp):
    c = Checks(os.path.basename(path))
    trace_path = os.path.join(tmp, os.path.basename(path) + '.pftrace')
    csv_path = os.path.join(tmp, os.path.basename(path) + '.csv')
    for fmt, out in (('perfetto', trace_path), ('csv', csv_path)):
        subprocess.run([framelab, 'export', path, '--format', fmt, '-o', out], check=True,
                       stderr=subprocess.DEVNULL)
    run = run_file(path)
    trace = pb.Trace()
    trace.ParseFromString(open(trace_path, 'rb').read())
    packets = list(trace.packet)
    TE = pb.TrackEvent

    # ---- well-formedness
    raw = open(trace_path, 'rb').read()
    wire = []
    wire_type_errors(raw, pb.Trace.DESCRIPTOR, 'trace', wire)
    c.true('every field in the wire type of its declared type (repeated: unpacked)', not wire,
           '; '.join(wire), len(packets))
    unknown = [u for i, p in enumerate(packets) for u in unknown_fields(p, f'packet[{i}]')]
    c.true('no field unknown to the schema', not unknown, '; '.join(unknown[:3]), len(packets))
    seqs = Counter(p.trusted_packet_sequence_id for p in packets)
    c.true('one trusted sequence id, not 0', len(seqs) == 1 and 0 not in seqs, str(seqs))
    first = packets[0]
    c.true('first packet clears incremental state',
           first.sequence_flags & SEQ_CLEARED and first.first_packet_on_sequence,
           str(first.sequence_flags))
    cleared, bad_needs, bad_flag = False, 0, 0
    for p in packets:
        cleared |= bool(p.sequence_flags & SEQ_CLEARED) or p.incremental_state_cleared
        if p.sequence_flags & SEQ_NEEDS and not cleared:
            bad_needs += 1
        e = p.track_event if p.HasField('track_event') else None
        uses_iids = e is not None and (e.HasField('name_iid') or any(a.HasField('name_iid') for a in e.debug_annotations))
        if uses_iids and not p.sequence_flags & SEQ_NEEDS:
            bad_flag += 1
    c.true('nothing needs incremental state before it is cleared', bad_needs == 0, f'{bad_needs} packets')
    c.true('packets using interned names set SEQ_NEEDS_INCREMENTAL_STATE', bad_flag == 0, f'{bad_flag} packets')
    ev_names, ann_names, dup = {}, {}, 0
    for p in packets:
        if p.HasField('interned_data'):
            for table, items in ((ev_names, p.interned_data.event_names),
                                 (ann_names, p.interned_data.debug_annotation_names)):
                for it in items:
                    dup += it.iid in table or it.iid == 0
                    table[it.iid] = it.name
    c.true('interned iids unique and not 0', dup == 0, f'{dup} duplicates', len(ev_names) + len(ann_names))
    clock = [i for i, p in enumerate(packets) if p.HasField('timestamp_clock_id') or p.HasField('clock_snapshot')
             or p.HasField('trace_packet_defaults')]
    c.true('no clock id, snapshot or defaults (timestamps in the default clock as written)', not clock,
           f'packets {clock[:5]}')
    tracks, order_bad, dup_uuid = {}, [], 0
    for i, p in enumerate(packets):
        if p.HasField('track_descriptor'):
            d = p.track_descriptor
            dup_uuid += d.uuid in tracks
            if d.HasField('parent_uuid') and d.parent_uuid not in tracks:
                order_bad.append(f'track {d.uuid} before its parent {d.parent_uuid}')
            tracks[d.uuid] = d
        if p.HasField('track_event') and p.track_event.track_uuid not in tracks:
            order_bad.append(f'packet {i} on undescribed track {p.track_event.track_uuid}')
    c.true('track uuids unique', dup_uuid == 0, f'{dup_uuid} duplicates', len(tracks))
    c.true('parents and tracks described before use', not order_bad, '; '.join(order_bad[:3]))

    if run['big_pids']:
        c.note('pids past 2^31-1, written as the int32 of their bits (Perfetto\'s pid is int32)',
               run['big_pids'])
    # ---- tracks: processes, threads, overlap tracks
    procs = {u: d for u, d in tracks.items() if d.HasField('process')}
    threads = {u: d for u, d in tracks.items() if d.HasField('thread')}
    got_procs = sorted((d.process.pid, d.process.process_name if d.process.HasField('process_name') else None)
                       for d in procs.values())
    pids = sorted({pid for pid, _, _ in run['threads'].values()})
    c.eq('processes (pid, name)', got_procs, [(pid, expected_process_name(run, pid)) for pid in pids])
    c.eq('threads (pid, tid, name)',
         sorted((d.thread.pid, d.thread.tid, d.thread.thread_name) for d in threads.values()),
         sorted(run['threads'].values()))
    c.true('thread tracks under their process track',
           all(d.HasField('parent_uuid') and d.parent_uuid in procs and procs[d.parent_uuid].process.pid == d.thread.pid
               for d in threads.values()), '', len(threads))

    def thread_of(uuid):
        seen = set()
        while uuid in tracks and uuid not in seen:
            seen.add(uuid)
            d = tracks[uuid]
            if d.HasField('thread'):
                return d.thread.pid, d.thread.tid, d.thread.thread_name
            uuid = d.parent_uuid if d.HasField('parent_uuid') else None
        return None

    # ---- time shift, independently
    times = [s[5] for s in run['spans']] + [e[4] for e in run['events']] + \
            [t for ss in run['samples'].values() for t, _ in ss]
    shift = max(0, -min(times, default=0))

    # ---- events sorted as trace processor sorts them: (ts, file order)
    evs = sorted(((p.timestamp, i, p.track_event) for i, p in enumerate(packets) if p.HasField('track_event')),
                 key=lambda x: (x[0], x[1]))
    no_ts = sum(1 for i, p in enumerate(packets) if p.HasField('track_event') and not p.HasField('timestamp'))
    c.true('every track event has a timestamp', no_ts == 0, f'{no_ts} without')
    stacks, slices, instants, counters, unnested = defaultdict(list), [], [], defaultdict(list), 0
    for ts, i, e in evs:
        name = e.name if e.HasField('name') else ev_names.get(e.name_iid, f'<iid {e.name_iid}?>')
        ann = {(a.name if a.HasField('name') else ann_names.get(a.name_iid, '?')): a.uint_value
               for a in e.debug_annotations}
        if e.type == TE.TYPE_SLICE_BEGIN:
            stacks[e.track_uuid].append((ts, name, ann, list(e.flow_ids), list(e.terminating_flow_ids), i))
        elif e.type == TE.TYPE_SLICE_END:
            if not stacks[e.track_uuid]:
                unnested += 1
                continue
            t0, name, ann, fl, term, seen = stacks[e.track_uuid].pop()
            th = thread_of(e.track_uuid)
            slices.append((th, name, ann.get('frame'), t0, ts, fl, term, seen))
        elif e.type == TE.TYPE_INSTANT:
            instants.append((e.track_uuid, name, ann, ts))
        elif e.type == TE.TYPE_COUNTER:
            counters[e.track_uuid].append((ts - shift, e.counter_value))
    open_left = sum(map(len, stacks.values()))
    c.true('every SLICE_END closes an open slice; none left open', unnested == 0 and open_left == 0,
           f'{unnested} unmatched ends, {open_left} open', len(slices))

    # ---- launch marker
    marker = [(u, ts) for u, name, _, ts in instants if name == LAUNCH]
    c.eq('launch marker (track name, ts = shift)',
         [(tracks[u].name, tracks[u].HasField('parent_uuid'), ts) for u, ts in marker], [('framelab', False, shift)])

    # ---- spans
    got = sorted((th[0], th[1], th[2], name, fr, t0 - shift, t1 - t0) for th, name, fr, t0, t1, *_ in slices
                 if th is not None)
    c.true('every slice on a thread track (or a child of one)', all(s[0] is not None for s in slices), '', len(slices))
    c.eq('slices (pid, tid, thread, stage, frame, start ns, dur ns) vs run file', got, sorted(run['spans']))
    rows = list(csv.DictReader(open(csv_path)))
    want_csv = sorted((written_pid(int(r['pid'])), int(r['tid']), r['thread'], r['stage'], int(r['frame']),
                       int(r['start_ns']), int(r['dur_ns'])) for r in rows if r['stage'] != LAUNCH)
    c.eq('slices vs CSV export', got, want_csv)
    # overlap tracks are children of a thread track, named "overlap N"
    others = [d for u, d in tracks.items() if not d.HasField('thread') and not d.HasField('process')
              and not d.HasField('counter') and d.name != 'framelab']
    c.true('other tracks are "overlap N" children of a thread track',
           all(d.name.startswith('overlap ') and d.parent_uuid in threads for d in others), '', len(others))

    # ---- flows, as trace processor links them: in the order the BEGINs are parsed (sorted),
    # flow_ids starts or steps a flow, terminating_flow_ids steps and ends it.
    by_frame = defaultdict(list)
    for th, name, fr, t0, t1, fl, term, seen in slices:
        by_frame[fr].append((t0, seen, fl, term))
    flow_bad, owner = [], {}
    for fr, ss in by_frame.items():
        ss.sort()
        ids = {i for *_, fl, term in ss for i in fl + term}
        if len(ss) == 1:
            if ids:
                flow_bad.append(f'frame {fr}: a lone span has a flow')
            continue
        if len(ids) != 1:
            flow_bad.append(f'frame {fr}: flow ids {ids}')
            continue
        fid = ids.pop()
        if fid in owner:
            flow_bad.append(f'frames {owner[fid]} and {fr} share flow {fid}')
        owner[fid] = fr
        shape = [(fl, term) for *_, fl, term in ss]
        if shape != [([fid], [])] * (len(ss) - 1) + [([], [fid])]:
            flow_bad.append(f'frame {fr}: flows {shape}')
    c.true('one flow per frame of 2+ spans, terminating on its last', not flow_bad, '; '.join(flow_bad[:3]),
           len(by_frame))

    # ---- events
    got_ev = sorted((thread_of(u)[0], thread_of(u)[1], name, ann.get('key', 0), ts - shift)
                    for u, name, ann, ts in instants if name != LAUNCH and thread_of(u))
    c.eq('instants (pid, tid, name, key, t ns) vs events table', got_ev, sorted(run['events']))

    # ---- counter tracks
    ctracks = {u: d for u, d in tracks.items() if d.HasField('counter')}
    got_series, want_series = [], []
    for sid, source, metric, entity, label, unit, kind in run['series']:
        name = f'{source}.{metric}' + (f'[{entity}]' if entity else '') + (f' ({unit})' if unit else '')
        want_series.append((name, unit or None, {'source': source, 'metric': metric, 'entity': entity,
                                                 'label': label, 'unit': unit, 'kind': kind},
                            run['samples'][sid]))
    for u in sorted(ctracks):
        d = ctracks[u]
        got_series.append((d.name, counter_unit(d.counter),
                           json_or_text(d.description), counters[u]))
    c.eq('counter tracks (name, unit, series)', [s[:3] for s in got_series], [s[:3] for s in want_series])
    c.eq('counter values (t ns, value) per track', [s[3] for s in got_series], [s[3] for s in want_series],
         n=sum(len(s[3]) for s in want_series))
    stray = sum(len(v) for u, v in counters.items() if u not in ctracks)
    c.true('counter events only on counter tracks', stray == 0, f'{stray} elsewhere')

    # ---- the run carried in the framelab track's description
    desc = json_or_text(tracks[marker[0][0]].description) if marker else {}
    desc = desc if isinstance(desc, dict) else {}
    c.eq('carried per-frame counters (frame, counter, value)', sorted(map(tuple, desc.get('counters', []))),
         run['counters'])
    c.eq('carried counter names', desc.get('counter_names', []), run['counter_names'])
    # ---- figures for docs/validation.md: (figure, run file, decoded trace)
    decoded_samples = [v for s in got_series for v in s[3]]
    want_samples = [v for s in want_series for v in s[3]]
    c.figures = [
        ('slices', len(run['spans']), len(got)),
        ('sum of slice durations (ns)', sum(s[6] for s in run['spans']), sum(s[6] for s in got)),
        ('latest slice end (ns after launch)', max((s[5] + s[6] for s in run['spans']), default=0),
         max((s[5] + s[6] for s in got), default=0)),
        ('instants', len(run['events']), len(got_ev)),
        ('counter readings', len(want_samples), len(decoded_samples)),
        ('sum of counter values', sum(v for _, v in want_samples), sum(v for _, v in decoded_samples)),
        ('threads', len(run['threads']), len(threads)),
    ]
    return c, len(packets), shift


def edge_case_run(framelab, tmp):
    """A run with what recorded runs rarely hold: times before launch, instants with keys,
    spans that overlap without nesting, zero-length and equal spans, two processes, a nameless
    thread, tids past 2^31, and several frames starting together."""
    lines = [{'name': LAUNCH, 'time_ns': 1_000_000}]
    def span(name, frame, pid, tid, thread, start, dur):
        lines.append({'name': name, 'frame': frame, 'pid': pid, 'tid': tid, 'thread_name': thread,
                      'start_ns': start, 'dur_ns': dur})
    span('decode', 0, 100, 100, 'main', 0, 500_000)             # before launch
    span('render', 0, 100, 100, 'main', 100_000, 200_000)       # nested
    span('present', 0, 100, 101, 'worker', 400_000, 300_000)
    span('decode', 1, 100, 100, 'main', 450_000, 100_000)       # overlaps decode 0's end
    span('render', 1, 100, 100, 'main', 460_000, 10_000)        # nests in the overlap
    span('render', 1, 100, 100, 'main', 550_000, 0)             # zero length at an end
    span('present', 1, 100, 101, 'worker', 700_000, 0)
    span('present', 1, 100, 101, 'worker', 700_000, 0)          # the same twice
    span('decode', 2, 7, 7, '', 1_000_000, 1_000)               # nameless thread at launch
    span('decode', 3, 7, 3_000_000_000, 'big', 2_000_000, 5)
    span('decode', 4, 7, 7, '', 3_000_000, 1_000)
    span('render', 4, 7, 7, '', 3_000_000, 1_000)               # equal start and end, one frame
    span('present', 4, 7, 7, '', 3_000_000, 1_000)
    span('decode', 5, 7, 7, '', 3_000_500, 500)                 # ends with frame 4's
    for key, t in ((42, 1_234), (0, 2_000_000), (7, 999_999)):
        lines.append({'name': 'vsync', 'key': key, 'pid': 100, 'tid': 100, 'time_ns': t})
    src = os.path.join(tmp, 'edge.jsonl')
    open(src, 'w').write(''.join(json.dumps(l) + '\n' for l in lines))
    out = os.path.join(tmp, 'edge.framelab')
    done = subprocess.run([framelab, 'import', src, '--format', 'jsonl', '-o', out], capture_output=True,
                          text=True)
    if done.returncode != 0:
        sys.exit(f'framelab import of the edge cases failed: {done.stderr}')
    return out


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    proto, framelab, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
    tmp = tempfile.mkdtemp(prefix='check_perfetto.')
    pb = load_schema(proto, tmp)
    if '--edge-cases' in runs:
        runs = [r for r in runs if r != '--edge-cases'] + [edge_case_run(framelab, tmp)]
    bad, figures = 0, []
    print('| run | check | values | result |\n| --- | --- | --- | --- |')
    for path in runs:
        c, n, shift = check(pb, framelab, path, tmp)
        figures += [(c.label, *f) for f in c.figures]
        for what, count, ok, detail in c.rows:
            result = 'ok' if ok else 'note: ' + detail if ok is None else 'MISMATCH: ' + detail
            print(f'| {c.label} | {what} | {count} | {result} |')
        print(f'| {c.label} | ({n} packets, shift {shift} ns) | | {"ok" if not c.bad else f"{c.bad} mismatches"} |')
        bad += c.bad
    shutil.rmtree(tmp, ignore_errors=True)
    print('\n| run | figure | run file | decoded trace | ratio |\n| --- | --- | --- | --- | --- |')
    for label, what, want, got in figures:
        ratio = f'{got / want:.6f}' if want else ('1.000000' if got == want else 'inf')
        print(f'| {label} | {what} | {want} | {got} | {ratio} |')
    print(f'\n{"all values match" if not bad else f"{bad} mismatches"}')
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
