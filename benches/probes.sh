#!/bin/bash
# What function probes (docs/probes.md) cost framelab: its own CPU over the window
# (`runs.collector_cpu_ns`, all its threads) while a program calls a probed function 10,000
# times a second for 5 s, with `--probe` (on) and without (off), interleaved five times;
# then an empty function probed three times, its median span against what was subtracted;
# then what each class of first instruction costs the probed thread (`framelab probes
# --cost`), three times. Needs root (uprobes) and a C compiler.
#   bash benches/probes.sh [FRAMELAB]      (default target/release/framelab)
set -eu
framelab=$(realpath "${1:-target/release/framelab}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# 10 calls of `tick` every millisecond, for 5 s: 10,000 calls a second. Each is followed
# by a call of `empty_call`, which does nothing and starts with a `push` whatever the
# compiler: probed, its spans less what framelab subtracts show how near 0 the
# subtraction brings a call that is all probe cost, on this machine under its load.
cat > ticker.c <<'EOF'
#include <time.h>
volatile unsigned long sink;
__attribute__((noinline)) void tick(int n) { sink += n; }
__asm__(".text\n.globl empty_call\n.type empty_call,@function\nempty_call:\n"
        "push %rbp\npop %rbp\nret\n.size empty_call, .-empty_call\n");
void empty_call(void);
int main(void) {
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (int ms = 0; ms < 5000; ms++) {
        for (int i = 0; i < 10; i++) {
            tick(ms * 10 + i);
            empty_call();
        }
        next.tv_nsec += 1000000;
        if (next.tv_nsec >= 1000000000) { next.tv_nsec -= 1000000000; next.tv_sec++; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    return 0;
}
EOF
cc -O2 -fomit-frame-pointer -o ticker ticker.c

# framelab's CPU over the window (ms), spans recorded, the window (s).
one() {
  rm -f one.framelab
  "$framelab" run -o one.framelab "$@" -- ./ticker > /dev/null 2> one.err
  sqlite3 one.framelab "SELECT printf('%.1f %d %.2f', collector_cpu_ns / 1e6,
      (SELECT count(*) FROM spans), (window_end_ns - window_start_ns) / 1e9) FROM runs"
}
# The median span of the stage `empty` and what was subtracted from each, ns.
near_zero() {
  "$framelab" report --format json one.framelab 2> /dev/null | python3 -c '
import json, sys
report = json.load(sys.stdin)
stage = report["stage_names"].index("empty")
probe = report["probes"]["probes"][0]
print(int(report["stages"][stage]["dist"]["p50_ns"]), probe["subtracted_ns"], probe["clamped"])'
}
: > on; : > off; : > empty
for round in 1 2 3 4 5; do
  one --probe tick=./ticker:tick --frame-arg tick=arg1 >> on
  one >> off
done
for round in 1 2 3; do
  one --probe empty=./ticker:empty_call > /dev/null
  near_zero >> empty
done
median() { awk -v c="$2" '{print $c}' "$1" | sort -n | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
on=$(median on 1); off=$(median off 1); window=$(median on 3)
echo "framelab CPU ms over the window, on: $(awk '{print $1}' on | tr '\n' ' ')· off: $(awk '{print $1}' off | tr '\n' ' ')"
echo "spans recorded (on): $(awk '{print $2}' on | tr '\n' ' ')"
echo "medians on $on off $off, ratio $(echo "scale=3; $on / $off" | bc)"
echo "probes' extra CPU: $(echo "scale=3; ($on - $off) / 10 / $window" | bc)% of a core; all of framelab with probes: $(echo "scale=3; $on / 10 / $window" | bc)% of a core"
echo "an empty function (push) probed: its median span less what was subtracted, ns (of what was subtracted; spans made 0 of 50,000):"
awk '{printf "  %d of %d (%.0f%%), %d made 0\n", $1, $2, 100 * $1 / $2, $3}' empty
for round in 1 2 3; do "$framelab" probes --cost; done
