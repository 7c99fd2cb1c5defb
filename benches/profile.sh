#!/bin/bash
# What `--profile` costs the profiled program, and how long its post-processing takes next to
# `perf report` on the same workload (issue 13).
#   bash benches/profile.sh [FRAMELAB]     (default target/release/framelab)
#
# 1. Overhead: tests/c/profile_test.c (-O2, CPU-bound, one thread) runs 1500 frames under
#    `framelab run`, unprofiled, at 99 Hz and at 999 Hz, interleaved (A B C A B C ...) six
#    times; its throughput is the frames per second the report observes. Ratios of medians.
# 2. Post-processing: two copies of the program at 10 kHz for 5 s (~100k samples, frame
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

fps() { "$framelab" run "$@" -o /dev/null -- ./pt 1500 100000 2>/dev/null |
  sed -n 's/.*observed \([0-9.]*\) fps.*/\1/p'; }
: > off; : > on99; : > on999
for round in 1 2 3 4 5 6; do
  fps >> off
  fps --profile >> on99
  fps --profile=999 >> on999
done
median() { sort -n "$1" | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
m0=$(median off); m1=$(median on99); m2=$(median on999)
echo "throughput (frames/s), median of 6: unprofiled $m0, 99 Hz $m1, 999 Hz $m2"
echo "ratio 99 Hz / unprofiled: $(echo "scale=4; $m1 / $m0" | bc)"
echo "ratio 999 Hz / unprofiled: $(echo "scale=4; $m2 / $m0" | bc)"
echo "all: off $(tr '\n' ' ' < off) | 99 $(tr '\n' ' ' < on99) | 999 $(tr '\n' ' ' < on999)"

work_load="./pt 3000 100000 & ./pt 3000 100000 & wait"
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
timeout -s INT 5 perf record -q -F 10000 -g -o perf.data -- sh -c "$work_load" > /dev/null 2>&1 || true
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
echo "framelab's own CPU over the 5 s run at 10 kHz: fp $(cpu big.framelab) s, dwarf $(cpu dwarf.framelab) s"
