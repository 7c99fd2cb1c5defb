/*
 * framelab.h: the C and C++ interface of the framelab SDK (crate framelab-probe).
 *
 * Records where each frame's time goes: stage spans keyed by a frame id, laps (one clock
 * read per stage boundary), spans from timestamps the program already has, per-frame
 * counters and instant events. `framelab run -- ./program` collects them.
 *
 * Build the libraries with `cargo build -p framelab-probe --release` in the framelab
 * checkout ($FL below), then link the shared one,
 *     -L$FL/target/release -lframelab_probe -Wl,-rpath,$FL/target/release
 * (without the rpath, run with LD_LIBRARY_PATH=$FL/target/release), or the static one with
 * the system libraries Rust's standard library needs (`rustc --print native-static-libs`):
 *     $FL/target/release/libframelab_probe.a -lgcc_s -lutil -lrt -lpthread -lm -ldl
 * The README's "Instrumenting C and C++" has a whole program and both commands;
 * tests/c/run.sh builds and runs both.
 *
 *     uint32_t encode = fl_stage("encode");         // once, outside the loop
 *     for (uint64_t frame = 0; ; frame++) {
 *         fl_span s = fl_begin(encode, frame);
 *         encode_frame(...);
 *         fl_end(&s);
 *     }
 *
 * Sessions. The SDK reads FRAMELAB_SESSION (set by `framelab run`) once per process, on
 * its first call. Without it every recording call is a no-op: a load and a branch, about
 * 1 ns per call including the call itself. Child processes inherit the variable and join
 * the session; a forked child records into its own files.
 *
 * Cost. With a session, a span (fl_begin + fl_end) costs two clock reads (rdtsc on x86-64)
 * and four stores into a ring in shared memory: within a few percent of two bare rdtsc. A
 * lap costs one clock read, half a span. No recording call locks, allocates or makes a
 * system call, except the first record of each thread, which creates that thread's ring
 * file. When the collector falls behind and a ring is full, the newest record is dropped
 * and counted: recording never blocks. Measured figures: BENCHMARKS.md.
 *
 * Threads. Every function may be called from any thread. Each thread records into its own
 * ring. A span may end on another thread than the one that began it (it is recorded in
 * the ending thread's ring). An fl_laps must not be used by two threads at the same time.
 *
 * Names and ids. fl_stage, fl_counter and fl_event_kind intern a name (a lock and a lookup:
 * call them once, not per frame) and return its id, the same id for the same name and kind.
 * They return 0 for a NULL name or when the process has interned more names than supported
 * (4095; see fl_names_refused). Names are NUL-terminated, preferably UTF-8 (other bytes are
 * replaced); a newline in a name is written as a space. Recording calls never check ids:
 * records with id 0 or an id this process never interned are kept, and the collector counts
 * and reports them as invalid. No id value can crash the program.
 *
 * Timestamps. fl_span's and fl_laps' fields hold the session's raw clock (TSC ticks on
 * x86-64, converted by the collector): use them only through the functions below.
 * fl_span_ns and fl_now_ns use CLOCK_MONOTONIC nanoseconds.
 */
#ifndef FRAMELAB_H
#define FRAMELAB_H

#include <stddef.h>
#include <stdint.h>

#if defined(__cplusplus) && __cplusplus >= 201103L
#define FL_NOEXCEPT noexcept
#elif defined(__cplusplus)
#define FL_NOEXCEPT throw()
#else
#define FL_NOEXCEPT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A running span, returned by fl_begin and consumed by fl_end. A plain value: copy it,
 * store it, pass it to another thread. `live` is 0 when no session was active at fl_begin,
 * and fl_end then does nothing. */
typedef struct fl_span {
    uint64_t frame;
    uint64_t start; /* session clock (raw ticks) */
    uint32_t stage;
    uint32_t live;
} fl_span;

/* Laps state of one thread's sequence of stages: the frame and the last boundary. */
typedef struct fl_laps {
    uint64_t frame;
    uint64_t last; /* session clock (raw ticks) */
    uint32_t live;
} fl_laps;

/* ---- names (cold: call once per name) --------------------------------------------------- */

/* Interns a stage name. Returns its id, or 0 for NULL or a full name table. */
uint32_t fl_stage(const char *name) FL_NOEXCEPT;
/* Interns a counter name (`bytes`, `keyframe`). Returns its id, or 0. */
uint32_t fl_counter(const char *name) FL_NOEXCEPT;
/* Interns an event kind (`commit`, `release`). Returns its id, or 0. */
uint32_t fl_event_kind(const char *name) FL_NOEXCEPT;
/* Names refused so far because the table was full (their calls returned 0). */
uint32_t fl_names_refused(void) FL_NOEXCEPT;

/* 1 when this process records into a session, else 0. The first call on a thread creates
 * that thread's ring. */
int fl_enabled(void) FL_NOEXCEPT;

/* ---- spans ------------------------------------------------------------------------------- */

/* Starts a span of `stage` for `frame`: one clock read. */
fl_span fl_begin(uint32_t stage, uint64_t frame) FL_NOEXCEPT;
/* Ends the span now and records it: one clock read and one record. Call once per span.
 * A NULL `span` does nothing. */
void fl_end(const fl_span *span) FL_NOEXCEPT;

/* Records a span whose ends the program already has, in CLOCK_MONOTONIC nanoseconds (a
 * stage timed elsewhere, GPU timestamps converted to the host clock). No clock read. */
void fl_span_ns(uint32_t stage, uint64_t frame, uint64_t start_ns, uint64_t end_ns) FL_NOEXCEPT;

/* ---- queues: resources that are not threads (a GPU stream, a DMA engine) ------------------ */

/* A span recorded on a queue counts to that queue, not to the calling thread: the report shows
 * the queue as a resource (utilisation, stages, the rate it bounds). Any thread may record on
 * a queue (under a lock: for spans recorded after the fact, not the hottest loop). */
typedef struct fl_queue fl_queue;
/* A queue named `name` (cut to 31 bytes); NULL for a NULL name. Create once, like a stage. */
fl_queue *fl_queue_new(const char *name) FL_NOEXCEPT;
/* The queue of GPU `device`'s stream `stream`, named "gpu<device>.stream<stream>" (gpu0.stream0),
 * the name the Rust (Queue::gpu) and Python (framelab.gpu) helpers give it: record GPU work
 * there, so it counts to the GPU and never to the CPU thread that recorded it. `stream` tells
 * the device's streams apart (cudaStreamGetId, or an index of your own; 0 for the default). */
fl_queue *fl_queue_new_gpu(uint32_t device, uint64_t stream) FL_NOEXCEPT;
/* fl_span_ns for a span that ran on `queue`. A NULL `queue` does nothing. */
void fl_span_ns_on(const fl_queue *queue, uint32_t stage, uint64_t frame, uint64_t start_ns,
                   uint64_t end_ns) FL_NOEXCEPT;
/* Frees the queue; NULL does nothing. No thread may record on it meanwhile. */
void fl_queue_free(fl_queue *queue) FL_NOEXCEPT;

/* ---- laps: consecutive stages on one thread, one clock read per boundary ------------------ */

/* Starts laps for `frame` at now. */
fl_laps fl_laps_start(uint64_t frame) FL_NOEXCEPT;
/* Records `stage` from the previous boundary to now; now becomes the next stage's start.
 * A NULL `laps` does nothing. */
void fl_lap(fl_laps *laps, uint32_t stage) FL_NOEXCEPT;
/* Moves the boundary to now without recording (time between stages that is no stage).
 * A NULL `laps` does nothing. */
void fl_laps_skip(fl_laps *laps) FL_NOEXCEPT;
/* Moves on to `frame`; the next lap starts at the last boundary. A NULL `laps` does nothing. */
void fl_laps_next_frame(fl_laps *laps, uint64_t frame) FL_NOEXCEPT;

/* ---- counters and events ------------------------------------------------------------------ */

/* Attaches `value` to `frame` (several values for one frame add up). No clock read. */
void fl_count(uint32_t counter, uint64_t frame, int64_t value) FL_NOEXCEPT;
/* Records an instant of `event` now, with `key` for pairing (a buffer id, a request id). */
void fl_event(uint32_t event, uint64_t key) FL_NOEXCEPT;

/* CLOCK_MONOTONIC in nanoseconds: the clock fl_span_ns expects (clock_gettime, about 20 ns). */
uint64_t fl_now_ns(void) FL_NOEXCEPT;

/* ---- pacer: frames on a grid of absolute deadlines ----------------------------------------- */

/* A pacer starts frame n at anchor + n / fps (the anchor is its first wait), so wake-up
 * errors never add up to drift. It sleeps with an absolute clock_nanosleep until a spin window
 * before the deadline, then spins to it; the window follows the sleep overshoot this thread
 * sees. A frame that reaches fl_pacer_wait after its deadline returns at once, with no sleep
 * call, and the policy decides the next deadlines. Each wait records how late the pacer woke
 * (from the deadline, or from the call when late, to the return: the error the pacer added)
 * as the frame's counter `pacer_late_ns`: a wait, not a stage, so it is not in the frame's
 * work or total; the report gives it a line of its own. One thread at a time per pacer.
 * docs/timers.md has the details. */
typedef struct fl_pacer fl_pacer;

/* When a frame is late: */
#define FL_PACE_CATCH_UP 0 /* keep the grid; late frames run back to back until on time again */
#define FL_PACE_SKIP 1     /* keep the grid; give up the slots already missed (no burst) */
#define FL_PACE_REANCHOR 2 /* restart the grid at the late frame */

/* A pacer at `fps` (1/3600 to 1e6) with a late policy; NULL for a rate outside that range or
 * an unknown policy. Free it with fl_pacer_free. */
fl_pacer *fl_pacer_new(double fps, int policy) FL_NOEXCEPT;
/* Waits for the next slot and records how late the pacer woke for `frame`. Returns how late
 * the frame starts against its slot, in ns (tens of ns when on time: the spin's own overshoot;
 * never 0 as a sign of "on time"), or -1 for a NULL pacer. */
int64_t fl_pacer_wait(fl_pacer *pacer, uint64_t frame) FL_NOEXCEPT;
/* Frees the pacer; NULL does nothing. */
void fl_pacer_free(fl_pacer *pacer) FL_NOEXCEPT;

#ifdef __cplusplus
} /* extern "C" */
#endif

/* The layouts must match the #[repr(C)] structs of probe/src/ffi.rs. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define FL_STATIC_ASSERT(cond, name) static_assert(cond, #name)
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define FL_STATIC_ASSERT(cond, name) _Static_assert(cond, #name)
#else /* older standards: an array of negative size fails to compile */
#define FL_STATIC_ASSERT(cond, name) typedef char fl_assert_##name[(cond) ? 1 : -1]
#endif
FL_STATIC_ASSERT(sizeof(fl_span) == 24, fl_span_size);
FL_STATIC_ASSERT(offsetof(fl_span, stage) == 16, fl_span_stage);
FL_STATIC_ASSERT(offsetof(fl_span, live) == 20, fl_span_live);
FL_STATIC_ASSERT(sizeof(fl_laps) == 24, fl_laps_size);
FL_STATIC_ASSERT(offsetof(fl_laps, last) == 8, fl_laps_last);
FL_STATIC_ASSERT(offsetof(fl_laps, live) == 16, fl_laps_live);
#undef FL_STATIC_ASSERT

#if defined(__cplusplus) && __cplusplus >= 201103L
namespace framelab {

/* A span of one stage for one frame, recorded when the scope ends. */
class Span {
public:
    Span(uint32_t stage, uint64_t frame) noexcept : span_(fl_begin(stage, frame)) {}
    ~Span() { fl_end(&span_); }
    Span(const Span &) = delete;
    Span &operator=(const Span &) = delete;

private:
    fl_span span_;
};

/* Laps of one frame after another on one thread. */
class Laps {
public:
    explicit Laps(uint64_t frame) noexcept : laps_(fl_laps_start(frame)) {}
    void lap(uint32_t stage) noexcept { fl_lap(&laps_, stage); }
    void skip() noexcept { fl_laps_skip(&laps_); }
    void next_frame(uint64_t frame) noexcept { fl_laps_next_frame(&laps_, frame); }

private:
    fl_laps laps_;
};

/* A pacer owned by a scope. */
class Pacer {
public:
    /* Check valid(): the rate or policy may have been refused. */
    Pacer(double fps, int policy) noexcept : pacer_(fl_pacer_new(fps, policy)) {}
    ~Pacer() { fl_pacer_free(pacer_); }
    Pacer(const Pacer &) = delete;
    Pacer &operator=(const Pacer &) = delete;
    bool valid() const noexcept { return pacer_ != nullptr; }
    int64_t wait(uint64_t frame) noexcept { return fl_pacer_wait(pacer_, frame); }

private:
    fl_pacer *pacer_;
};

} /* namespace framelab */
#endif

#undef FL_NOEXCEPT
#endif /* FRAMELAB_H */
