#!/usr/bin/env bash
# What one reading of one thread costs the threads source (`sample/threads.rs`): its three
# /proc files (`schedstat`, `stat`, `status`, kept open and read again from offset 0) against
# one taskstats query for the same thread (generic netlink, TASKSTATS_CMD_GET: the same
# counters in binary, no text to format; it needs CAP_NET_ADMIN). Each way is timed by the
# thread's own CPU clock, first right after a sleep of MS milliseconds (as the sampler reads,
# caches cold), then in a tight loop.
#
#   benches/thread_reads.sh [PID] [MS] [READINGS]     (default: a `sleep` started here, 25, 100)
set -euo pipefail
dir=$(mktemp -d /tmp/framelab-thread-reads.XXXXXX)
started=
trap '[[ -n $started ]] && kill "$started" 2>/dev/null; rm -rf "$dir"' EXIT
pid=${1:-}
if [[ -z $pid ]]; then
    sleep 600 &
    started=$!
    pid=$started
fi
cat > "$dir/reads.c" <<'C'
#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static char reply[8192];

static long long cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

struct request {
    struct nlmsghdr header;
    struct genlmsghdr genl;
    char attrs[64];
};

/* One request with one attribute. */
static void request(struct request *r, int type, int cmd, int attr, const void *value, int len) {
    memset(r, 0, sizeof *r);
    struct nlattr *a = (struct nlattr *)r->attrs;
    a->nla_type = attr;
    a->nla_len = NLA_HDRLEN + len;
    memcpy((char *)a + NLA_HDRLEN, value, len);
    r->header.nlmsg_type = type;
    r->header.nlmsg_flags = NLM_F_REQUEST;
    r->header.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN) + NLA_ALIGN(a->nla_len);
    r->genl.cmd = cmd;
    r->genl.version = 1;
}

static int taskstats_family(int sock) {
    struct request r;
    request(&r, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_NAME, TASKSTATS_GENL_NAME,
            sizeof TASKSTATS_GENL_NAME);
    if (send(sock, &r, r.header.nlmsg_len, 0) < 0 || recv(sock, reply, sizeof reply, 0) < 0)
        return -1;
    struct nlmsghdr *h = (struct nlmsghdr *)reply;
    char *at = (char *)NLMSG_DATA(h) + GENL_HDRLEN;
    int left = h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);
    while (left > 0) {
        struct nlattr *a = (struct nlattr *)at;
        if (a->nla_type == CTRL_ATTR_FAMILY_ID)
            return *(unsigned short *)((char *)a + NLA_HDRLEN);
        left -= NLA_ALIGN(a->nla_len);
        at += NLA_ALIGN(a->nla_len);
    }
    return -1;
}

int main(int argc, char **argv) {
    int tid = atoi(argv[1]), pause_us = atoi(argv[2]) * 1000, n = atoi(argv[3]);
    const char *names[] = {"schedstat", "stat", "status"};
    int files[3];
    for (int i = 0; i < 3; i++) {
        char path[128];
        snprintf(path, sizeof path, "/proc/%d/task/%d/%s", tid, tid, names[i]);
        if ((files[i] = open(path, O_RDONLY)) < 0) {
            perror(path);
            return 1;
        }
    }
    int sock = socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC);
    struct sockaddr_nl local = {.nl_family = AF_NETLINK};
    bind(sock, (struct sockaddr *)&local, sizeof local);
    int family = taskstats_family(sock);
    struct request query;
    request(&query, family, TASKSTATS_CMD_GET, TASKSTATS_CMD_ATTR_PID, &tid, sizeof tid);
    long long files_ns = 0, query_ns = 0, t;
    int failed = 0;
    for (int cold = 1; cold >= 0; cold--) {
        files_ns = query_ns = 0;
        for (int i = 0; i < n; i++) {
            if (cold) usleep(pause_us);
            t = cpu_ns();
            for (int f = 0; f < 3; f++) pread(files[f], reply, sizeof reply, 0);
            files_ns += cpu_ns() - t;
            if (cold) usleep(pause_us);
            t = cpu_ns();
            send(sock, &query, query.header.nlmsg_len, 0);
            int got = recv(sock, reply, sizeof reply, 0);
            query_ns += cpu_ns() - t;
            failed |= got < 0 || ((struct nlmsghdr *)reply)->nlmsg_type == NLMSG_ERROR;
        }
        printf("%-28s /proc files %5.1f us, taskstats query %5.1f us%s\n",
               cold ? "after a sleep (cold):" : "in a tight loop (hot):", files_ns / 1e3 / n,
               query_ns / 1e3 / n, failed ? " (the query failed: no CAP_NET_ADMIN?)" : "");
    }
    return 0;
}
C
cc -O2 -o "$dir/reads" "$dir/reads.c"
echo "one reading of thread $pid, ${3:-100} readings, ${2:-25} ms apart when cold:"
"$dir/reads" "$pid" "${2:-25}" "${3:-100}"
