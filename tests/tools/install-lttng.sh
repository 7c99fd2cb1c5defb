#!/bin/sh
# What `collector_overhead --vs-lttng` (the LTTng anchor, BENCHMARKS.md) needs: LTTng's
# tools and user-space tracer headers, babeltrace2 to count the events it recorded, and a C
# compiler for benches/lttng/anchor_rate.c. Installs what is missing with apt-get (as root,
# or through sudo). Not needed by any test.
set -eu
missing=""
command -v lttng >/dev/null 2>&1 || missing="$missing lttng-tools"
[ -e /usr/include/lttng/tracepoint.h ] || missing="$missing liblttng-ust-dev"
command -v babeltrace2 >/dev/null 2>&1 || missing="$missing babeltrace2"
command -v cc >/dev/null 2>&1 || missing="$missing gcc"
if [ -z "$missing" ]; then
    echo "lttng tools: all present"
    exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "lttng tools: installing$missing"
$sudo apt-get update -q
# shellcheck disable=SC2086
$sudo apt-get install -y -q --no-install-recommends $missing
