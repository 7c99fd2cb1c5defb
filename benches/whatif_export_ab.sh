#!/usr/bin/env bash
# whatif --depth 2 and export --format perfetto of one run file by two builds, in ABBA
# order (base, new, new, base per round), each command's wall time, CPU (user + system)
# and peak RSS, then the ratios new ÷ base of the best of each; the outputs of the two
# builds must be the same bytes (the script fails otherwise).
#
#   benches/whatif_export_ab.sh BASE_FRAMELAB NEW_FRAMELAB RUN_FILE [ROUNDS]
#
# A run to measure on: `framelab run -o 10m.framelab -- testprog rate 1000000 10`.
set -euo pipefail
base=$(realpath "$1")
new=$(realpath "$2")
run=$(realpath "$3")
rounds=${4:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# LABEL OUT CMD...: runs CMD, its stdout to OUT, and appends "LABEL wall cpu rss" to the
# table (GNU time is not on every host: Python's rusage of the child).
timed() {
    python3 -c '
import resource, subprocess, sys, time
label, out = sys.argv[1], sys.argv[2]
start = time.monotonic()
with open(out, "wb") as f:
    code = subprocess.run(sys.argv[3:], stdout=f, stderr=subprocess.DEVNULL).returncode
wall = time.monotonic() - start
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{label} {wall:.3f} {r.ru_utime + r.ru_stime:.3f} {r.ru_maxrss}")
sys.exit(code)' "$@" | tee -a "$work/table"
}

echo "label wall_s cpu_s peak_rss_kib"
for ((round = 0; round < rounds; round++)); do
    for side in base new new base; do
        bin=${!side}
        timed "$side whatif" "$work/whatif.$side" "$bin" whatif "$run" --depth 2
        timed "$side export" /dev/null "$bin" export "$run" --format perfetto \
            -o "$work/export.$side.pftrace"
    done
done
cmp "$work/whatif.base" "$work/whatif.new"
cmp "$work/export.base.pftrace" "$work/export.new.pftrace"
echo "outputs: the same bytes"
python3 - "$work/table" "$(stat -c %s "$run")" <<'PY'
import sys
best = {}
for line in open(sys.argv[1]):
    side, what, wall, cpu, rss = line.split()
    b = best.setdefault((side, what), [float("inf")] * 3)
    for i, v in enumerate((float(wall), float(cpu), float(rss))):
        b[i] = min(b[i], v)
file_kib = int(sys.argv[2]) / 1024
for what in ("whatif", "export"):
    (bw, bc, br), (nw, nc, nr) = best[("base", what)], best[("new", what)]
    print(f"{what}: base {bw:.2f} s, {bc:.2f} s CPU, {br / 1024:.0f} MiB; "
          f"new {nw:.2f} s, {nc:.2f} s CPU, {nr / 1024:.0f} MiB ({nr / file_kib:.2f}x the file); "
          f"new/base wall {nw / bw:.2f}, CPU {nc / bc:.2f}, RSS {nr / br:.2f}")
PY
