#!/bin/bash
# Memory and time of the inputs and flags issue 11 item 10 found unbounded, for each framelab
# binary given (e.g. one built before the bounds and one after), on the same machine in the
# same run. A process still going after 10 s is stopped (SIGKILL) and its peak so far shown.
#   bash benches/limits.sh OLD_FRAMELAB NEW_FRAMELAB
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 300 gzip members of 1 MiB of zeros: about 315 KB that inflate to 300 MiB.
python3 -c "
import gzip
member = gzip.compress(b'\0' * (1 << 20), 9)
open('$work/bomb.csv.gz', 'wb').write(member * 300)"

# Runs "$@" for at most 10 s; prints exit status (or "killed after 10 s"), seconds, peak RSS.
measure() {
  local start end pid peak=0 status deadline
  start=$(date +%s.%N)
  deadline=$(echo "$start + 10" | bc)
  "$@" > "$work/out" 2> "$work/err" &
  pid=$!
  status="killed after 10 s"
  while [ "$(echo "$(date +%s.%N) < $deadline" | bc)" = 1 ]; do
    if ! kill -0 "$pid" 2> /dev/null; then break; fi
    local hwm
    hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2> /dev/null)
    [ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
    sleep 0.01
  done
  if kill -0 "$pid" 2> /dev/null; then
    kill -9 "$pid"
    wait "$pid" 2> /dev/null
  else
    wait "$pid"
    status="exit $?"
  fi
  end=$(date +%s.%N)
  printf '%-16s %6.2f s  peak RSS %7.1f MiB  %s\n' "$status" "$(echo "$end - $start" | bc)" \
    "$(echo "$peak / 1024" | bc -l)" "$(head -c 150 "$work/err" | head -1)"
}

# Two run files of two imported runs each: what compare needs to reach its resampling.
fixture=$(dirname "$0")/../tests/fixtures/import/mangohud-0.6.8-glxgears-llvmpipe.csv
for f in a b; do for _ in 1 2; do
  "$1" import "$fixture" -o "$work/$f.runs" > /dev/null 2>&1
done; done

for bin in "$@"; do
  echo "== $bin"
  echo -n "import /dev/zero           "; measure "$bin" import /dev/zero -o "$work/z.framelab"
  echo -n "import 315 KB gzip bomb    "; measure "$bin" import "$work/bomb.csv.gz" -o "$work/b.framelab"
  echo -n "compare --resamples 1e12   "; measure "$bin" compare --resamples 1000000000000 "$work/a.runs" "$work/b.runs"
  echo -n "bench -n 1000000000        "; (cd "$work" && measure "$bin" bench -n 1000000000 -- true)
  rm -f "$work"/*.framelab "$work"/*.framelab-journal
done
