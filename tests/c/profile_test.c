/* A program whose profile is known: per frame, stage "mix" spends 7 units of work in
 * heavy_seven and 3 in light_three, stage "solo" 4 units in solo_work, all inside the
 * outer stage "frame"; then 2 units in idle_work outside every stage. A unit is the same
 * loop everywhere, so CPU time splits as the units do.
 * Usage: profile_test FRAMES ITERATIONS_PER_UNIT [LIGHT_UNITS (default 3) [DEPTH]]
 * With DEPTH, each frame's work is done DEPTH calls deep instead (stage "deep").
 * A unit's speed still differs between functions on some CPUs (the loop's alignment, store
 * forwarding at -O0), so with PROFILE_TEST_CPU=FILE the program adds the thread CPU time
 * each function really took ("heavy_seven NS" lines): the profile is checked against those. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "framelab.h"

static volatile uint64_t sink;

/* The same loop in each function (a macro, not a call), so each is its own leaf. */
#define UNITS(n)                                                  \
    do {                                                          \
        uint64_t x = sink;                                        \
        uint64_t limit = (n);                                     \
        for (uint64_t i = 0; i < limit; i++) {                    \
            x = x * 6364136223846793005ULL + 1442695040888963407ULL; \
            __asm__ volatile("" : "+r"(x));                       \
        }                                                         \
        sink = x;                                                 \
    } while (0)

__attribute__((noinline)) void heavy_seven(uint64_t unit) { UNITS(7 * unit); }
static uint64_t light_units = 3;
__attribute__((noinline)) void light_three(uint64_t unit) { UNITS(light_units * unit); }
__attribute__((noinline)) void solo_work(uint64_t unit) { UNITS(4 * unit); }
__attribute__((noinline)) void idle_work(uint64_t unit) { UNITS(2 * unit); }

/* Recursion that is not a tail call: every level keeps its frame. */
__attribute__((noinline)) uint64_t deep(uint64_t depth, uint64_t unit) {
    if (depth == 0) {
        UNITS(unit);
        return sink;
    }
    return deep(depth - 1, unit) + 1;
}

static uint64_t cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

enum { HEAVY, LIGHT, SOLO, IDLE, FUNCTIONS };
static const char *const names[FUNCTIONS] = {"heavy_seven", "light_three", "solo_work", "idle_work"};
static uint64_t spent[FUNCTIONS];

#define TIMED(which, call)                  \
    do {                                    \
        uint64_t t0 = cpu_ns();             \
        call;                               \
        spent[which] += cpu_ns() - t0;      \
    } while (0)

static void write_spent(void) {
    const char *path = getenv("PROFILE_TEST_CPU");
    FILE *f = path ? fopen(path, "a") : NULL; /* a run of several processes adds up */
    if (!f) return;
    for (int i = 0; i < FUNCTIONS; i++) fprintf(f, "%s %llu\n", names[i], (unsigned long long)spent[i]);
    fclose(f);
}

int main(int argc, char **argv) {
    uint64_t frames = argc > 1 ? strtoull(argv[1], NULL, 10) : 100;
    uint64_t unit = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000;
    light_units = argc > 3 ? strtoull(argv[3], NULL, 10) : 3;
    uint64_t depth = argc > 4 ? strtoull(argv[4], NULL, 10) : 0;
    if (depth > 0) {
        uint32_t deep_stage = fl_stage("deep");
        for (uint64_t f = 0; f < frames; f++) {
            fl_span d = fl_begin(deep_stage, f);
            sink += deep(depth, 16 * unit);
            fl_end(&d);
        }
        return 0;
    }
    uint32_t frame_stage = fl_stage("frame");
    uint32_t mix = fl_stage("mix");
    uint32_t solo = fl_stage("solo");
    for (uint64_t f = 0; f < frames; f++) {
        /* Frames of one length would be sampled at the same few points of the frame when
         * the length is near a multiple of the sampling period; a real pipeline's frames
         * vary. Every function's work scales alike, 0.75 to 1.25 of UNIT, so shares hold. */
        uint64_t mixed = f * 0x9E3779B97F4A7C15ULL;
        mixed ^= mixed >> 29;
        uint64_t unit_f = unit * (12 + mixed % 9) / 16;
        fl_span outer = fl_begin(frame_stage, f);
        fl_span m = fl_begin(mix, f);
        TIMED(HEAVY, heavy_seven(unit_f));
        TIMED(LIGHT, light_three(unit_f));
        fl_end(&m);
        fl_span s = fl_begin(solo, f);
        TIMED(SOLO, solo_work(unit_f));
        fl_end(&s);
        fl_end(&outer);
        TIMED(IDLE, idle_work(unit_f));
    }
    write_spent();
    return 0;
}
