#!/usr/bin/env bash
# Issue 29's table on one machine: this build against another, each recording its own
# 10M-span run (a schema-8 build cannot read a schema-9 file, so they never share one).
#
#   benches/host_figures.sh NEW_DIR [BASE_DIR] [SECONDS]
#
# Each DIR holds a release `framelab` and `examples/testprog`, NEW_DIR also
# `collector_overhead` and `analysis_scale`:
#   cargo build --release --bin framelab --example testprog -p framelab
#   cargo build --release -p framelab-benches --bin collector_overhead --bin analysis_scale
# Prints, per build: the run's spans, file size and bytes a span, then analysis_scale's
# table (time, CPU and peak RSS of report/whatif/export/compare/hist on that run); then
# the migration of the base build's file by the new build, timed; then collector_overhead
# (window CPU at 100k and 1M spans/s, ABBA against the base build; the same at 100k with
# every telemetry source off, the span path alone) and the lossless rate from one thread
# with a 4M-record ring. Where `lttng` is installed (tests/tools/install-lttng.sh), the
# collector's rows are also set against LTTng's daemons on the same loads (--vs-lttng).
set -euo pipefail
new=$(realpath "$1")
base=${2:+$(realpath "$2")}
seconds=${3:-10}
for dir in "$new" ${base:+"$base"}; do
    for exe in framelab examples/testprog; do
        [ -x "$dir/$exe" ] || { echo "$dir/$exe is missing: see the build commands at the top of $0" >&2; exit 2; }
    done
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

here=$(dirname "$(realpath "$0")")
vs_lttng=()
if command -v lttng >/dev/null; then vs_lttng=(--vs-lttng); fi
no_telemetry='--no-sample nvml --no-sample amdgpu --no-sample cpufreq --no-sample rapl --no-sample threads'
# LABEL CMD...: CMD's wall time, CPU and peak RSS (stdout discarded): benches/timed.py.
timed() { python3 "$here/timed.py" "$@"; }

# FILE: its spans, size and bytes a span (schema 9 counts blocks' spans, 8 rows).
spans_of() {
    python3 -c '
import os, sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
blocks = db.execute("SELECT count(*) FROM sqlite_master WHERE name = ?", ("span_blocks",))
query = "SELECT sum(spans) FROM span_blocks" if blocks.fetchone()[0] else "SELECT count(*) FROM spans"
n = db.execute(query).fetchone()[0]
size = os.path.getsize(sys.argv[1])
print(f"{n} spans, {size} bytes, {size / n:.2f} B a span")' "$1"
}

for side in new base; do
    dir=${!side}
    [ -n "$dir" ] || continue
    file="$work/$side.framelab"
    echo "== $side ($dir): framelab run -- testprog rate 1000000 $seconds"
    timed "run, whole" "$dir/framelab" run -o "$file" -- \
        "$dir/examples/testprog" rate 1000000 "$seconds" 2>"$work/$side.stderr" \
        || { cat "$work/$side.stderr"; exit 1; }
    spans_of "$file"
    "$new/analysis_scale" "$file" --framelab "$dir/framelab" --repeat 2
done

if [ -n "$base" ]; then
    echo "== the new build upgrades the base build's file (schema migration, then a text report)"
    cp "$work/base.framelab" "$work/migrated.framelab"
    timed "migrate + report" "$new/framelab" report "$work/migrated.framelab"
    spans_of "$work/migrated.framelab"
    rm -f "$work"/*.framelab
    echo "== collector_overhead $seconds (ABBA against the base build)"
    "$new/collector_overhead" "$seconds" --baseline "$base/framelab" "${vs_lttng[@]}"
    echo "== the span path alone: every telemetry source off, 100k spans/s"
    "$new/collector_overhead" "$seconds" --rates 100000 --baseline "$base/framelab" \
        "${vs_lttng[@]}" --run-args "$no_telemetry"
    echo "== lossless rate from one thread, 4M-record ring"
    FRAMELAB_RING_RECORDS=4194304 "$new/collector_overhead" 3 --baseline "$base/framelab" \
        --rates 2000000,5000000
else
    rm -f "$work"/*.framelab
    "$new/collector_overhead" "$seconds" "${vs_lttng[@]}"
    "$new/collector_overhead" "$seconds" --rates 100000 "${vs_lttng[@]}" --run-args "$no_telemetry"
fi
