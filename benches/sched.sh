#!/bin/bash
# What scheduler tracing (sched_switch + sched_wakeup, docs/metrics.md "On-CPU, runnable and
# blocked") costs framelab and the measured program.
#   bash benches/sched.sh [FRAMELAB] [TESTPROG]
#        (defaults target/release/framelab, target/release/examples/testprog)
#
# framelab's own CPU over the window (`runs.collector_cpu_ns`: all its threads, the tracing
# drain thread included) with tracing on (the default) and off (FRAMELAB_SCHED=none),
# interleaved on / off five times, on two workloads:
#   - the demo at 1000 fps for 5 s (`framelab demo --fps 1000`);
#   - `testprog rate 100000 5` (100k spans/s, 1 ms batches).
# Ratios of medians, on / off. Then the measured program's side: the program's CPU per span
# of `testprog rate` (user + sys from the run file), on / off.
set -eu
framelab=$(realpath "${1:-target/release/framelab}")
testprog=$(realpath "${2:-target/release/examples/testprog}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# One run: framelab's CPU over the window (ms), the program's CPU per span (ns), switches
# traced (slices stored).
one() {
  rm -f one.framelab
  "$@" > /dev/null 2> one.err
  sqlite3 one.framelab "SELECT printf('%.1f', collector_cpu_ns / 1e6) FROM runs" | tr '\n' ' '
  sqlite3 one.framelab "SELECT printf('%.1f', coalesce(sum(user_ns + sys_ns), 0) * 1.0 /
      max(1, (SELECT count(*) FROM spans))) FROM processes WHERE role = 'command'" | tr '\n' ' '
  sqlite3 one.framelab "SELECT count(*) FROM sched_slices"
}
demo() { one "$framelab" demo --fps 1000 --duration 5s -o one.framelab; }
rate() { one "$framelab" run --duration 5s -o one.framelab -- "$testprog" rate 100000 5; }
: > demo_on; : > demo_off; : > rate_on; : > rate_off
for round in 1 2 3 4 5; do
  demo >> demo_on
  FRAMELAB_SCHED=none demo >> demo_off
  rate >> rate_on
  FRAMELAB_SCHED=none rate >> rate_off
done
median() { awk -v c="$2" '{print $c}' "$1" | sort -n | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
for w in demo rate; do
  on=$(median ${w}_on 1); off=$(median ${w}_off 1)
  echo "$w: framelab CPU ms over the window, on: $(awk '{print $1}' ${w}_on | tr '\n' ' ')· off: $(awk '{print $1}' ${w}_off | tr '\n' ' ')"
  echo "$w: medians on $on off $off, ratio $(echo "scale=3; $on / $off" | bc); slices stored (on): $(awk '{print $3}' ${w}_on | tr '\n' ' ')"
done
echo "rate: program CPU ns per span, on $(median rate_on 2) off $(median rate_off 2), ratio $(echo "scale=3; $(median rate_on 2) / $(median rate_off 2)" | bc)"
