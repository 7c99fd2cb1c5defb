#!/usr/bin/env bash
# Where framelab's CPU goes while it records: per thread (from /proc/PID/task/*/stat, between
# 2 s after launch and 1 s before the command ends) and, with PERF=1, per function
# (`perf record` over the same stretch, flat profile by thread and symbol).
#
#   benches/collector_threads.sh [FRAMELAB] [RATE] [SECONDS]
#
# FRAMELAB defaults to target/release/framelab; the producer is target/release/examples/testprog.
# RUN_ARGS adds options to `framelab run` (e.g. RUN_ARGS='--no-sample nvml').
set -euo pipefail
framelab=${1:-target/release/framelab}
rate=${2:-100000}
seconds=${3:-10}
testprog=${TESTPROG:-target/release/examples/testprog}
out=$(mktemp -d /tmp/framelab-threads.XXXXXX)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$out"' EXIT
# shellcheck disable=SC2086 # RUN_ARGS is options, split on purpose.
"$framelab" run ${RUN_ARGS:-} -o "$out/run.framelab" -- "$testprog" rate "$rate" "$seconds" >/dev/null 2>&1 &
pid=$!
# ns on a CPU and times it was switched to (schedstat: run ns, wait ns, timeslices) of each
# thread, by name (threads of one name summed): a timeslice is a wakeup, so CPU ÷ timeslices
# is what one wakeup costs.
cpu_by_thread() {
    for task in /proc/"$pid"/task/*; do
        comm=$(cat "$task/comm" 2>/dev/null) || continue
        read -r ns _ slices < "$task/schedstat" 2>/dev/null || continue
        echo "${comm// /_} $ns $slices"
    done | awk '{c[$1]+=$2; w[$1]+=$3} END {for (k in c) print k, c[k], w[k]}' | sort
}
sleep 2
cpu_by_thread > "$out/a"
span=$((seconds - 3))
if [[ ${PERF:-0} == 1 ]]; then
    perf record -q -F 1999 -p "$pid" -o "$out/perf.data" -- sleep "$span" 2>/dev/null
else
    sleep "$span"
fi
cpu_by_thread > "$out/b"
echo "framelab threads over $span s at $rate spans/s (ms of CPU, % of one core, wakeups a second, µs of CPU a wakeup):"
join -a 2 -e 0 -o 0,1.2,2.2,1.3,2.3 "$out/a" "$out/b" |
    awk -v s="$span" '{ms=($3-$2)/1e6; w=$5-$4; t+=ms; tw+=w; printf "  %-20s %7.0f ms  %5.2f%%  %7.1f/s  %6.1f µs\n", $1, ms, ms/s/10, w/s, w ? ms*1000/w : 0} END {printf "  %-20s %7.0f ms  %5.2f%%  %7.1f/s\n", "all", t, t/s/10, tw/s}'
wait "$pid" || true
if [[ ${PERF:-0} == 1 ]]; then
    perf report -i "$out/perf.data" --no-children --sort comm,dso,sym --percent-limit 0 --stdio 2>/dev/null |
        grep -v '^#' | grep -v '^$' > "$out/profile"
    echo "samples by thread and kind of work (% of framelab's samples):"
    # Lines: "  12.34%  thread  dso  [.] symbol". Kinds by symbol name, then by thread.
    awk '{
        pct = $1; sub(/%/, "", pct); comm = $2; dso = $3; sym = $5
        if (comm == "framelab-writer") {
            if (sym ~ /^sqlite3_bind|vdbeUnbind|applyAffinity|RunWriter::spans|insert_rows|raw_bind/) kind = "binding values (rusqlite, sqlite3_bind_*)"
            else if (dso ~ /kernel/) kind = "kernel: page writes, fsync, wakeups"
            else if (sym ~ /subjournal|Savepoint|memjrnl|memjrnlWrite/) kind = "statement journal"
            else if (sym ~ /^(sqlite3|btree|pcache|pager|getCell|putVarint|vdbe|balance|fillInCell|insertCell|allocate|freeSpace|defragment|cellSize|pageInsert|write|read|memjrnl)/) kind = "SQLite row insert (VDBE, b-tree, page cache)"
            else if (sym ~ /mem(move|set|cpy)/) kind = "SQLite row insert (VDBE, b-tree, page cache)"
            else kind = "other (allocation, channel)"
            kind = "writer: " kind
        } else if (comm == "framelab") {
            if (sym ~ /Collector::drain|convert|keep_span|resolve|floor|to_mono_ns/) kind = "record decode and conversion"
            else if (sym ~ /copy_folio_from_iter|splice|ext4_(da|block|buffered|get_reserved)|block_commit_write|block_write|create_empty_buffers|alloc_buffer_head|folio_alloc|filemap_add_folio|__filemap_get_folio|shmem_get_folio|mark_buffer_dirty|__pi_memcpy|sendfile/) kind = "spill writes (sendfile or writev into the page cache)"
            else if (sym ~ /_copy_to_iter|filemap|pread|ext4_file_read|copy_page_to_iter|read_records|Ring::drain/) kind = "ring reads (pread)"
            else if (sym ~ /nanosleep|finish_task_switch|schedule|futex|hrtimer|syscall_exit|entry_SYSCALL|switch/) kind = "wakeups, sleeps, system call entry"
            else if (dso ~ /kernel/) kind = "kernel, other (/proc, scans, stat)"
            else kind = "other (supervision, /proc parsing, accounting)"
            kind = "drain thread: " kind
        } else kind = comm ": all"
        c[kind] += pct
    } END { for (k in c) printf "  %6.2f%%  %s\n", c[k], k }' "$out/profile" | sort -k2
    echo "top functions:"
    head -"${TOP:-25}" "$out/profile"
fi
