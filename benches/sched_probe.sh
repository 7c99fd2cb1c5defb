#!/bin/bash
#   bash benches/sched_probe.sh [FRAMELAB] [PROBE_OVERHEAD]
# The SDK's cost per span in situ: probe_overhead's framelab cases, each in a process started
# by `framelab run` (so its switches are traced), scheduler tracing on / off, interleaved.
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; cd "$work"
F=$(realpath "${1:-target/release/framelab}")
P=$(realpath "${2:-target/release/probe_overhead}")
cases='D=$(mktemp -d); for c in framelab_span framelab_lap framelab_c_span framelab_c_lap; do
  rm -rf $D/*; FRAMELAB_SESSION=$D '$P' --case $c --batches 3000 --iters 2000; done; rm -rf $D'
for round in 1 2 3; do
  for mode in on off; do
    if [ $mode = off ]; then export FRAMELAB_SCHED=none; else unset FRAMELAB_SCHED; fi
    rm -f p.framelab
    $F run -o p.framelab -- taskset -c 0 sh -c "$cases" 2>/dev/null | grep RESULT | sed "s/^/$mode $round /"
    echo "$mode $round slices $(sqlite3 p.framelab 'select count(*) from sched_slices')"
  done
done
