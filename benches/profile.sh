#!/bin/bash
# What `--profile` costs the profiled program, and how long its post-processing takes next to
# `perf report` on the same workload (issue 13).
#   bash benches/profile.sh [FRAMELAB]     (default target/release/framelab)
#
# 1. Overhead: tests/c/profile_test.c (-O2, CPU-bound, one thread) runs 1500 frames under
#    `framelab run`, unprofiled, at 99 Hz and at 999 Hz, interleaved (A B C A B C ...)
#    eight times: frames per second and the program's CPU per frame. Ratios of medians.
# 2. Post-processing: two copies of the program at 10 kHz for 10 s (~100k samples, frame
#    pointers), then the seconds framelab spends symbolizing and storing them (its own line
#    on stderr) and `framelab profile`, against `perf record -F 10000 -g` of the same
#    workload and `perf report --stdio` of it. Then the same recording with --call-graph
#    dwarf, whose unwinding happens during the run: framelab's own CPU time over the window
#    (`runs.collector_cpu_ns`), fp vs dwarf.
set -eu
framelab=$(realpath "${1:-target/release/framelab}")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cargo build --quiet --release --offline -p framelab-probe --manifest-path "$root/Cargo.toml" \
  --target-dir "$work/probe"
cc -O2 -g -fno-omit-frame-pointer -I "$root/probe/include" "$root/tests/c/profile_test.c" \
  "$work/probe/release/libframelab_probe.a" -lpthread -lm -ldl -lrt -lgcc_s -o pt

# One run: the frames per second the report observes, and the program's CPU per frame (µs,
# user + sys, from the run file): on a shared machine the CPU a frame costs moves far less
# than the wall-clock rate, and it is where the profiling's own work (the sampling interrupt,
# the stack copy) is charged.
one() {
  rm -f one.framelab
  "$framelab" run "$@" -o one.framelab -- ./pt 1500 100000 > one.txt 2> one.err
  fps=$(sed -n 's/.*observed \([0-9.]*\) fps.*/\1/p' one.txt)
  cpu=$(sqlite3 one.framelab "SELECT printf('%.1f', sum(user_ns + sys_ns) / 1500 / 1e3) FROM processes WHERE role = 'command'")
  lost=$(sqlite3 one.framelab "SELECT coalesce((SELECT lost FROM profiles), '-')")
  echo "$fps $cpu $lost"
}
: > off; : > on99; : > on999
for round in 1 2 3 4 5 6 7 8; do
  one >> off
  one --profile >> on99
  one --profile=999 >> on999
done
median() { awk -v c="$2" '{print $c}' "$1" | sort -n | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
for f in off on99 on999; do
  echo "$f: fps median $(median $f 1), CPU µs/frame median $(median $f 2), lost $(awk '{print $3}' $f | tr '\n' ' ')"
done
echo "fps ratio 99 Hz / off: $(echo "scale=4; $(median on99 1) / $(median off 1)" | bc), 999 Hz / off: $(echo "scale=4; $(median on999 1) / $(median off 1)" | bc)"
echo "CPU/frame ratio 99 Hz / off: $(echo "scale=4; $(median on99 2) / $(median off 2)" | bc), 999 Hz / off: $(echo "scale=4; $(median on999 2) / $(median off 2)" | bc)"

work_load="./pt 20000 100000 & ./pt 20000 100000 & wait"
# framelab's own CPU (all its threads, the drain thread's unwinding included) over the window.
cpu() { sqlite3 "$1" "SELECT printf('%.2f', collector_cpu_ns / 1e9) FROM runs"; }
"$framelab" run --profile=10000 --call-graph fp --duration 5s \
  -o big.framelab -- sh -c "$work_load" > /dev/null 2> big.err
grep 'framelab: profile:' big.err
start=$(date +%s.%N)
"$framelab" profile big.framelab --format folded > /dev/null
echo "framelab profile --format folded: $(echo "$(date +%s.%N) - $start" | bc) s"
start=$(date +%s.%N)
"$framelab" profile big.framelab > /dev/null
echo "framelab profile (text, per stage): $(echo "$(date +%s.%N) - $start" | bc) s"
timeout -s INT 10 perf record -q -F 10000 -g -o perf.data -- sh -c "$work_load" > /dev/null 2>&1 || true
echo "perf record samples: $(perf report -i perf.data --stdio -F overhead 2>/dev/null | sed -n 's/^# Samples: \([0-9K]*\).*/\1/p' | head -1)"
start=$(date +%s.%N)
perf report -i perf.data --stdio > /dev/null 2>&1
echo "perf report --stdio: $(echo "$(date +%s.%N) - $start" | bc) s"
start=$(date +%s.%N)
perf report -i perf.data --stdio --no-children --sort sym > /dev/null 2>&1
echo "perf report --stdio --no-children --sort sym: $(echo "$(date +%s.%N) - $start" | bc) s"
"$framelab" run --profile=10000 --duration 5s \
  -o dwarf.framelab -- sh -c "$work_load" > /dev/null 2> dwarf.err
grep 'framelab: profile:' dwarf.err
echo "framelab's own CPU over the 10 s run at 10 kHz: fp $(cpu big.framelab) s, dwarf $(cpu dwarf.framelab) s"
