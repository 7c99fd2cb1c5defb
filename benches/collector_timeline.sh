#!/usr/bin/env bash
# Where framelab's CPU goes over a run's time: `perf record` of the whole run, its samples
# put in buckets by time from the producer's first sample (the window opens with it) — before
# it, its first and second half second, the middle, its last second, after it — per thread,
# then the top symbols of the first and last second and of the middle.
#
#   benches/collector_timeline.sh [FRAMELAB] [RATE] [SECONDS]
#
# FRAMELAB defaults to target/release/framelab; the producer is target/release/examples/testprog
# (TESTPROG overrides); RUN_ARGS adds options to `framelab run`; PERF names perf.
set -euo pipefail
framelab=${1:-target/release/framelab}
rate=${2:-100000}
seconds=${3:-10}
testprog=${TESTPROG:-target/release/examples/testprog}
perf=${PERF:-perf}
out=$(mktemp -d /tmp/framelab-timeline.XXXXXX)
trap 'rm -rf "$out"' EXIT
# shellcheck disable=SC2086 # RUN_ARGS is options, split on purpose.
"$perf" record -q -F 4999 -o "$out/perf.data" -- \
    "$framelab" run ${RUN_ARGS:-} -o "$out/run.framelab" -- "$testprog" rate "$rate" "$seconds" >/dev/null 2>&1
"$perf" script -i "$out/perf.data" -F comm,tid,time,ip,sym 2>/dev/null >"$out/samples"
first=$(awk '$1=="testprog" {sub(":", "", $3); print $3; exit}' "$out/samples")
last=$(awk '$1=="testprog" {sub(":", "", $3); t=$3} END {print t}' "$out/samples")
echo "framelab's samples at 4999 Hz (5 samples = 1 ms of CPU), by stretch of the run and thread:"
awk -v t0="$first" -v te="$last" '$1 ~ /^framelab/ {
    t = $3; sub(":", "", t); d = t - t0
    if (d < 0) b = "0 before"; else if (t > te) b = "6 after"; else if (d < 0.5) b = "1 first 0.5 s"
    else if (d < 1) b = "2 next 0.5 s"; else if (te - t < 1) b = "4 last 1 s"; else b = "3 middle"
    c[b "\t" $1]++
} END {for (k in c) print k "\t" c[k]}' "$out/samples" | sort | cut -c3-
top() {
    awk -v t0="$first" -v te="$last" -v part="$1" '$1 ~ /^framelab/ {
        t = $3; sub(":", "", t); d = t - t0
        if ((part == "first" && d >= 0 && d < 1) || (part == "last" && t <= te && te - t < 1) ||
            (part == "middle" && d >= 1 && te - t >= 1)) {
            s = $1; for (i = 5; i <= NF; i++) s = s " " $i; c[s]++
        }
    } END {for (k in c) print c[k], k}' "$out/samples" | sort -nr | head -15
}
for part in first middle last; do
    echo "top symbols, $part second(s):"
    top "$part"
done
