#!/usr/bin/env bash
# Power as a compare metric on a real NVIDIA GPU (NVML): a torch load at two levels, compared
# by `framelab bench`, with the power and energy rows printed; then each level once more with
# nvidia-smi sampling the same GPU beside framelab, and the ratio of the two mean powers.
#
#   tests/tools/power_gpu_check.sh FRAMELAB [RUNS] [SECONDS]
#
# FRAMELAB: the framelab binary. RUNS: measured runs per level (default 4, the fewest that
# allow a verdict). SECONDS: each
# run's length (default 20; the first 5 are warmup, outside the measured window).
# Needs only the binary, an NVIDIA driver (nvidia-smi, libnvidia-ml.so.1) and python3 with a
# CUDA build of torch. With POWER_GPU_CHECK_OUT=DIR the run files and outputs are kept there.
# The load is a stand-in for the infer stage of examples/gpu/torch_stages.py
# (bf16 matrix products, paced to 60 frames a second) that needs no framelab Python package.
set -euo pipefail

framelab=$(realpath "${1:?usage: power_gpu_check.sh FRAMELAB [RUNS] [SECONDS]}")
runs=${2:-4}
seconds=${3:-20}
warmup=5
light_products=1
heavy_products=8

"$framelab" --version >/dev/null
command -v nvidia-smi >/dev/null || { echo "power_gpu_check: no nvidia-smi: not an NVIDIA machine" >&2; exit 1; }
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
    { echo "power_gpu_check: python3 has no CUDA torch" >&2; exit 1; }

work=$(mktemp -d)
keep() { [ -z "${POWER_GPU_CHECK_OUT:-}" ] || cp "$work"/*.framelab "$work"/*.txt "$work"/*.log "$POWER_GPU_CHECK_OUT"/ 2>/dev/null || true; }
trap 'keep; rm -rf "$work"' EXIT
cd "$work"

# Frames of N matrix products each, paced at 60 fps. On SIGTERM/SIGINT (framelab's
# --duration) it prints how many frames it finished after its first WARMUP seconds: the count
# energy per frame is taken over (`energy_per.frames.GPU0`), as framelab's window also opens
# WARMUP seconds after launch.
cat > load.py <<'EOF'
import time
started = time.monotonic()
import argparse, signal, sys
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--products", type=int, required=True)
parser.add_argument("--warmup", type=float, required=True)
parser.add_argument("--size", type=int, default=8192)
parser.add_argument("--fps", type=float, default=60.0)
args = parser.parse_args()
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
signal.signal(signal.SIGINT, lambda *_: stop.append(1))
weights = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16) / args.size**0.5
activations = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
budget = 1.0 / args.fps
deadline = time.monotonic()
counted = 0
while not stop:
    x = activations
    for _ in range(args.products):
        x = x @ weights
    torch.cuda.synchronize()
    if time.monotonic() - started >= args.warmup:
        counted += 1
    deadline += budget
    wait = deadline - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    else:
        deadline = time.monotonic()
print(f"frames in window: {counted}", flush=True)
EOF

load() { echo "python3 $work/load.py --warmup $warmup --products $1"; }
frames_metric='frames:higher=frames in window: (\d+)'

echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) · framelab $("$framelab" --version)"
echo "== bench: light ($light_products product a frame) vs heavy ($heavy_products), $runs runs each, ${seconds}s, warmup ${warmup}s"
"$framelab" bench -n "$runs" --warmup "${warmup}s" --duration "${seconds}s" \
    --metric "$frames_metric" \
    --show "power.GPU0,energy_per.frames.GPU0,frames" \
    --variant "light=$(load $light_products)" --variant "heavy=$(load $heavy_products)" \
    -o power.framelab >bench.txt 2>bench.err || { cat bench.txt bench.err; exit 1; }
grep -E '^  (metric|mean power|energy per|frames)[ ,]' bench.txt || true
echo "== the same as JSON rows (median W / J a frame, change with its 95% interval)"
"$framelab" compare power.framelab --show "power.GPU0,energy_per.frames.GPU0" --format csv |
    cut -d, -f4,5,8,11,13,14,15

# nvidia-smi beside framelab: its power readings (asked every 100 ms, each with its time),
# those of the measured window (from the warmup's end until framelab ends) averaged, against
# framelab's mean power of the run.
echo "== nvidia-smi power.draw beside framelab, one run per level"
for level in light heavy; do
    products=$light_products
    [ "$level" = heavy ] && products=$heavy_products
    nvidia-smi --query-gpu=timestamp,power.draw --format=csv,noheader,nounits -lms 100 >"smi-$level.log" &
    smi=$!
    launched=$(date +%s.%N)
    "$framelab" run --warmup "${warmup}s" --duration "${seconds}s" -o "$level.framelab" \
        -- $(load $products) >/dev/null 2>"run-$level.err" || { cat "run-$level.err"; exit 1; }
    ended=$(date +%s.%N)
    kill "$smi"
    wait "$smi" 2>/dev/null || true
    framelab_w=$("$framelab" report --format json "$level.framelab" | python3 -c '
import json, sys
rows = json.load(sys.stdin)["telemetry"]["energy"]
print(next(r["avg_power_w"] for r in rows if r["device"] == "GPU0"))')
    python3 - "$level" "smi-$level.log" "$launched" "$ended" "$warmup" "$framelab_w" <<'EOF'
import sys, time
level, log, launched, ended, warmup, framelab_w = sys.argv[1:]
opens, closes = float(launched) + float(warmup), float(ended)
keep = []
for line in open(log):
    stamp, _, watts = line.partition(",")
    try:
        day, clock = stamp.strip().split(" ")
        seconds = time.mktime(time.strptime(f"{day} {clock.split('.')[0]}", "%Y/%m/%d %H:%M:%S"))
        t = seconds + float("0." + clock.split(".")[1])
        if opens <= t <= closes:
            keep.append(float(watts))
    except (ValueError, IndexError):
        continue
smi = sum(keep) / len(keep)
fl = float(framelab_w)
print(f"{level}: framelab {fl:.1f} W, nvidia-smi {smi:.1f} W over {len(keep)} readings, ratio {fl / smi:.3f}")
EOF
done
