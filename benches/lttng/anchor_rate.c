/* `anchor_rate R S`: R LTTng events per second for S seconds, in 1 ms batches on absolute
 * deadlines: testprog's `rate` mode with an LTTng tracepoint instead of a framelab span.
 * Prints the number of events emitted. Built by collector_overhead --vs-lttng:
 *   cc -O2 -I benches/lttng benches/lttng/anchor_rate.c -llttng-ust -ldl */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "anchor_tp.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: anchor_rate EVENTS_PER_SECOND SECONDS\n");
        return 2;
    }
    unsigned long long per_ms = strtoull(argv[1], NULL, 10) / 1000;
    unsigned long long ms_total = strtoull(argv[2], NULL, 10) * 1000;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    unsigned long long frame = 0;
    for (unsigned long long ms = 0; ms < ms_total; ms++) {
        for (unsigned long long i = 0; i < per_ms; i++) {
            lttng_ust_tracepoint(framelab_anchor, span, frame, i);
            frame++;
        }
        next.tv_nsec += 1000000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    printf("%llu\n", frame);
    return 0;
}
