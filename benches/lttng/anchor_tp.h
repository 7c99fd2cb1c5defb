/* The LTTng anchor's tracepoint: one event with two integers, as a framelab span carries
 * a frame id and a duration (collector_overhead --vs-lttng). */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER framelab_anchor

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./anchor_tp.h"

#if !defined(ANCHOR_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define ANCHOR_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(
    framelab_anchor, span,
    LTTNG_UST_TP_ARGS(uint64_t, frame, uint64_t, dur),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, frame, frame)
        lttng_ust_field_integer(uint64_t, dur, dur)))

#endif

#include <lttng/tracepoint-event.h>
