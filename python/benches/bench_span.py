#!/usr/bin/env python3
"""Cost of a span from Python: the native extension against the ctypes path over the C ABI,
both against a bare `time.perf_counter_ns()` pair, measured in the same process.

    python3 python/benches/bench_span.py                        # no session: the disabled path
    framelab run --ring-records 4194304 -o /dev/null -- \\
        python3 python/benches/bench_span.py                    # recording

Each round times one batch of every case, in a fresh random order; the figure is the median
over rounds of ns per iteration, and "net" subtracts the empty loop's. The ctypes path is
ctypes_probe.py (what examples/gpu/ used before the package) over target/release/libframelab_probe.so (`cargo build -p
framelab-probe --release`), or FRAMELAB_PROBE_LIB.

`--other DIR` loads a second build of the package (DIR/framelab, e.g. an older wheel unzipped)
into the same process and times its spans too, interleaved with this one's: a before/after
comparison free of the machine's drift. Without a session only (two copies of the SDK in one
process would share its names file).
"""

import argparse
import importlib.util
import os
import random
import statistics
import sys
import time

import framelab

HERE = os.path.dirname(os.path.abspath(__file__))


def ctypes_probe():
    sys.path.insert(0, HERE)
    try:
        import ctypes_probe
    except OSError as e:
        print(f"ctypes path skipped: {e}", file=sys.stderr)
        return None
    return ctypes_probe


def load_other(path):
    """The package under DIR/framelab, imported as `framelab_other`."""
    package = os.path.join(path, "framelab")
    spec = importlib.util.spec_from_file_location(
        "framelab_other", os.path.join(package, "__init__.py"),
        submodule_search_locations=[package])
    module = importlib.util.module_from_spec(spec)
    sys.modules["framelab_other"] = module
    spec.loader.exec_module(module)
    return module


def native_cases(fl, n, label):
    stage = fl.Stage("bench")
    span = stage.span
    laps_stage = fl.Stage("bench_lap")

    def native_with():
        for i in range(n):
            with span(i):
                pass

    def native_end():
        for i in range(n):
            span(i).end()

    def native_lap():
        laps = fl.Laps(0)
        lap = laps.lap
        for i in range(n):
            lap(laps_stage)

    return [
        (f"{label} `with stage.span(i):`", native_with),
        (f"{label} `stage.span(i).end()`", native_end),
        (f"{label} `laps.lap(stage)`", native_lap),
    ]


def cases(n, other=None):
    clock = time.perf_counter_ns

    def empty_loop():
        for i in range(n):
            pass

    def bare_pair():
        for i in range(n):
            clock()
            clock()

    class Empty:
        __slots__ = ()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    empty_cm = Empty()

    def python_with():
        for i in range(n):
            with empty_cm:
                pass

    found = [
        ("empty loop", empty_loop),
        ("bare `perf_counter_ns()` pair (baseline)", bare_pair),
        ("`with` an empty pure-Python context manager (the protocol alone)", python_with),
    ]
    found += native_cases(framelab, n, "native")
    if other is not None:
        found += native_cases(other, n, "other build's")
    fl = ctypes_probe()
    if fl is not None:
        stage_id = fl.stage("bench_ctypes")
        cspan = fl.span
        lib, byref = fl._lib, fl.ctypes.byref

        def ctypes_with():
            for i in range(n):
                with cspan(stage_id, i):
                    pass

        def ctypes_calls():
            begin, end = lib.fl_begin, lib.fl_end
            for i in range(n):
                s = begin(stage_id, i)
                end(byref(s))

        found += [
            ("ctypes `with fl.span(stage, i):` (ctypes_probe.py)", ctypes_with),
            ("ctypes `fl_begin` + `fl_end`, no wrapper", ctypes_calls),
        ]
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=20000, help="iterations per batch")
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--other", metavar="DIR", help="a second build of the package to time")
    args = parser.parse_args()
    other = load_other(args.other) if args.other else None
    if other is not None and framelab.enabled():
        sys.exit("bench_span.py: --other works without a session only (run it outside framelab run)")
    todo = cases(args.batch, other)
    times = {name: [] for name, _ in todo}
    for _ in range(args.rounds):
        random.shuffle(todo)
        for name, fn in todo:
            t0 = time.perf_counter_ns()
            fn()
            times[name].append((time.perf_counter_ns() - t0) / args.batch)
    median = {name: statistics.median(v) for name, v in times.items()}
    empty = median["empty loop"]
    base = median["bare `perf_counter_ns()` pair (baseline)"] - empty
    native = "abi3" if framelab._native.__file__.endswith(".abi3.so") else "version-specific"
    print(f"python {sys.version.split()[0]} · {native} extension · recording: {framelab.enabled()} · "
          f"{args.rounds} rounds × {args.batch} iterations")
    print()
    print("| case | ns/iteration | net of the loop | × bare pair |")
    print("|---|--:|--:|--:|")
    if other is not None:
        print(f"other build: {other._native.__file__}")
    for name, _ in cases(0, other):
        if name in median:
            net = median[name] - empty
            ratio = "" if name == "empty loop" else f"{net / base:.2f}"
            print(f"| {name} | {median[name]:.0f} | {net:.0f} | {ratio} |")


if __name__ == "__main__":
    main()
