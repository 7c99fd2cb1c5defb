#!/usr/bin/env python3
"""How well `framelab whatif RUN --depth 2` on a depth-1 run predicts a measured depth-2 run.

Records RUNS interleaved pairs (depth 1, depth 2) of a pipeline shape, then prints, per pair,
the depth-1 measurement, the model's replay of it, the prediction for depth 2 and the depth-2
measurement, and the ratio predicted / measured of fps (1 / mean interval) and total p50/p99,
then the same for the medians over the pairs. Results: BENCHMARKS.md, "What-if".

    cargo build --release && cargo build --example async_stage
    python3 benches/whatif_validate.py target/release/framelab /tmp/whatif demo:120 5
    python3 benches/whatif_validate.py target/release/framelab /tmp/whatif demo:1000 5
    python3 benches/whatif_validate.py target/release/framelab /tmp/whatif async:400 5

Shapes: demo:FPS is `framelab demo --fps FPS --depth D` (8 s, or WHATIF_DEMO_SECONDS, after a
2 s warmup); async:FPS is
examples/async_stage (a CPU stage, a GPU-like device thread, DEPTH frames in flight) under
`framelab run --fps FPS` (ASYNC_STAGE names the binary). FRAMELAB_RECORD names another
framelab to record with. Add `--analyse-only` to evaluate runs already in the directory.
"""

import json
import os
import statistics
import subprocess
import sys

# The demo's run length: its p99 is set by IDR frames (one every 2 s) and the frames queued
# behind them, so a short run holds only a few such events and its p99 scatters by ±25%.
DEMO_SECONDS = int(os.environ.get("WHATIF_DEMO_SECONDS", "8"))


def record(framelab, out, shape, depth, run):
    # The runs may be recorded by another build (FRAMELAB_RECORD): the demo must be a release one.
    framelab = os.environ.get("FRAMELAB_RECORD", framelab)
    kind, fps = shape.split(":")
    path = os.path.join(out, f"{kind}{fps}-d{depth}-r{run}.framelab")
    if kind == "demo":
        cmd = [framelab, "demo", "--depth", str(depth), "--fps", fps,
               "--duration", f"{DEMO_SECONDS}s", "--warmup", "2s", "-o", path]
    else:
        example = os.environ.get("ASYNC_STAGE", "target/debug/examples/async_stage")
        cmd = [framelab, "run", "--fps", fps, "--warmup", "1s", "-o", path, "--",
               example, str(depth), "2000", fps]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


def as_json(framelab, args):
    out = subprocess.run([framelab] + args + ["--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def figures(outcome):
    return (outcome["fps"], outcome["total"]["p50_ns"] / 1e3, outcome["total"]["p99_ns"] / 1e3)


def main():
    args = [a for a in sys.argv[1:] if a != "--analyse-only"]
    framelab, out, shape, runs = args[0], args[1], args[2], int(args[3])
    os.makedirs(out, exist_ok=True)
    kind, fps = shape.split(":")
    pairs = []
    for run in range(1, runs + 1):
        paths = {d: os.path.join(out, f"{kind}{fps}-d{d}-r{run}.framelab") for d in (1, 2)}
        if "--analyse-only" not in sys.argv:
            for d in (1, 2):
                record(framelab, out, shape, d, run)
        w = as_json(framelab, ["whatif", paths[1], "--depth", "2"])
        measured2 = as_json(framelab, ["report", paths[2]])
        m2 = (measured2["fps"]["mean"], measured2["total"]["p50_ns"] / 1e3,
              measured2["total"]["p99_ns"] / 1e3)
        m1, replay, predicted = figures(w["measured"]), figures(w["as_recorded"]), figures(w["predicted"])
        pairs.append((predicted, m2))
        print(f"{shape} pair {run}: depth 1 {m1[0]:.1f} fps p50 {m1[1]:.0f} p99 {m1[2]:.0f} µs"
              f" | replay {replay[0]:.1f} fps p50 {replay[1]:.0f}"
              f" | predicted depth 2 {predicted[0]:.1f} fps p50 {predicted[1]:.0f} p99 {predicted[2]:.0f}"
              f" | measured depth 2 {m2[0]:.1f} fps p50 {m2[1]:.0f} p99 {m2[2]:.0f}"
              f" | ratio {predicted[0] / m2[0]:.3f} {predicted[1] / m2[1]:.3f} {predicted[2] / m2[2]:.3f}")
    for k, name in enumerate(["fps", "total p50 µs", "total p99 µs"]):
        p = statistics.median(pair[0][k] for pair in pairs)
        m = statistics.median(pair[1][k] for pair in pairs)
        print(f"{shape} median {name}: predicted {p:.1f} measured {m:.1f} ratio {p / m:.3f}")


if __name__ == "__main__":
    main()
