#!/usr/bin/env bash
# What one wakeup of a thread costs on this machine, whatever the thread then does: a loop that
# only sleeps (`nanosleep`) and wakes, HZ times a second for 5 s, timed by its own CPU clock.
# framelab's threads pay this at each of their wakeups (BENCHMARKS.md, "One wakeup for the
# telemetry and the processes").
#
#   benches/wakeup_floor.sh [HZ...]      (default: 20 100)
set -euo pipefail
dir=$(mktemp -d /tmp/framelab-wakeup.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/floor.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int hz = argc > 1 ? atoi(argv[1]) : 20;
    struct timespec pause = {0, 1000000000L / hz};
    double wall = seconds(CLOCK_MONOTONIC), cpu = seconds(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < hz * 5; i++)
        nanosleep(&pause, NULL);
    wall = seconds(CLOCK_MONOTONIC) - wall;
    cpu = seconds(CLOCK_THREAD_CPUTIME_ID) - cpu;
    printf("%4d wakeups a second: %.3f%% of a core, %.1f us of CPU a wakeup\n", hz,
           cpu / wall * 100, cpu / (hz * 5) * 1e6);
    return 0;
}
C
cc -O2 -o "$dir/floor" "$dir/floor.c"
rates=("$@")
[[ ${#rates[@]} -gt 0 ]] || rates=(20 100)
for hz in "${rates[@]}"; do
    "$dir/floor" "$hz"
done
