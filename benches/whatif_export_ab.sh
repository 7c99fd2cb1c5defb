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

here=$(dirname "$(realpath "$0")")
# LABEL OUT CMD...: runs CMD, its stdout to OUT, and appends its line (wall time, CPU, peak
# RSS: benches/timed.py) to the table.
timed() {
    local label=$1 out=$2
    shift 2
    python3 "$here/timed.py" --out "$out" --quiet "$label" "$@" | tee -a "$work/table"
}

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
python3 - "$here" "$work/table" "$(stat -c %s "$run")" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from timed import parse
best = {}
for line in open(sys.argv[2]):
    label, wall, user, system, rss = parse(line)
    b = best.setdefault(tuple(label.split()), [float("inf")] * 3)
    for i, v in enumerate((wall, user + system, rss)):
        b[i] = min(b[i], v)
file_kib = int(sys.argv[3]) / 1024
for what in ("whatif", "export"):
    (bw, bc, br), (nw, nc, nr) = best[("base", what)], best[("new", what)]
    print(f"{what}: base {bw:.2f} s, {bc:.2f} s CPU, {br / 1024:.0f} MiB; "
          f"new {nw:.2f} s, {nc:.2f} s CPU, {nr / 1024:.0f} MiB ({nr / file_kib:.2f}x the file); "
          f"new/base wall {nw / bw:.2f}, CPU {nc / bc:.2f}, RSS {nr / br:.2f}")
PY
