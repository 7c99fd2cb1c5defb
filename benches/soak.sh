#!/usr/bin/env bash
# Issue 29's soak row: a long run, framelab's memory while it records, then what the
# analysis costs at that length.
#
#   benches/soak.sh DIR RATE SECONDS
#
# DIR holds a release `framelab` and `examples/testprog`. Prints framelab's resident
# memory each 10 s while `testprog rate RATE SECONDS` runs under it (flat means the
# collector keeps nothing per span), the whole run's wall time, CPU and peak RSS (the
# end-of-run report included), then `report` (text) and `whatif --depth 2` of the file
# with their time, CPU and peak RSS, and the spans analysed a second.
set -euo pipefail
dir=$(realpath "$1")
rate=$2
seconds=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
file="$work/soak.framelab"

here=$(dirname "$(realpath "$0")")
# LABEL CMD...: CMD's wall time, CPU and peak RSS (stdout discarded): benches/timed.py.
timed() { python3 "$here/timed.py" "$@"; }

echo "== framelab run -- testprog rate $rate $seconds"
timed "run, whole" "$dir/framelab" run -o "$file" -- "$dir/examples/testprog" rate "$rate" "$seconds" \
    2>"$work/run.stderr" &
sleep 1
pid=$(pgrep -o -f "^$dir/framelab run -o $file" || true)
while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$rss" ] && echo "  framelab RSS at $(date +%T): $((rss / 1024)) MiB"
    sleep 10
done
wait
grep -i "dropped\|lost" "$work/run.stderr" || true
spans=$(python3 -c '
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(db.execute("SELECT sum(spans) FROM span_blocks").fetchone()[0])' "$file")
size=$(stat -c %s "$file")
echo "$spans spans, $((size / 1048576)) MiB file"
for what in "report" "whatif --depth 2"; do
    # shellcheck disable=SC2086 # the subcommand's words split on purpose
    line=$(timed "$what" "$dir/framelab" $what "$file")
    echo "$line"
    wall=$(sed -E 's/.*: ([0-9.]+) s wall.*/\1/' <<< "$line")
    python3 -c "print(f'  {$spans / $wall / 1e6:.1f}M spans analysed a second')"
done
