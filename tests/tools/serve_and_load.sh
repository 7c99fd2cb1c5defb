#!/bin/sh
# One run of the server + load generator experiment: starts tests/tools/http_cost_server.py
# with a cost per request, waits until it listens, runs ab against it, stops it. ab prints
# "Requests per second: ..." on stdout: the metric.
#   serve_and_load.sh COST_US REQUESTS [CONCURRENCY]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cost=$1
requests=$2
concurrency=${3:-4}
portfile=$(mktemp)
rm -f "$portfile"
python3 "$here/http_cost_server.py" --cost-us "$cost" --port-file "$portfile" &
server=$!
trap 'kill $server 2>/dev/null; rm -f "$portfile"' EXIT
tries=0
until [ -s "$portfile" ]; do
    tries=$((tries + 1))
    if [ $tries -gt 500 ]; then echo "the server did not start" >&2; exit 1; fi
    sleep 0.01
done
ab -q -n "$requests" -c "$concurrency" "http://127.0.0.1:$(cat "$portfile")/"
