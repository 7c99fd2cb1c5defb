/* A three-stage pipeline instrumented with framelab: `framelab run --fps 60 -- ./pipeline`. */
#define _POSIX_C_SOURCE 200809L
#include "framelab.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

enum { WIDTH = 640, HEIGHT = 360, FPS = 60 };

static uint8_t image[WIDTH * HEIGHT], out[WIDTH * HEIGHT];

int main(int argc, char **argv) {
    uint64_t frames = argc > 1 ? strtoull(argv[1], NULL, 10) : 600;
    uint32_t capture = fl_stage("capture"), filter = fl_stage("filter");
    uint32_t encode = fl_stage("encode"), bytes = fl_counter("bytes");
    fl_laps laps = fl_laps_start(0);
    for (uint64_t frame = 0; frame < frames; frame++) {
        fl_laps_next_frame(&laps, frame);
        for (size_t i = 0; i < sizeof image; i++) /* "capture": a moving pattern */
            image[i] = (uint8_t)(((i % WIDTH + frame) ^ (i / WIDTH)) & 0xf0);
        fl_lap(&laps, capture);
        for (size_t i = 1; i < sizeof image; i++) /* a cheap horizontal blur */
            out[i] = (uint8_t)((image[i - 1] + image[i]) / 2);
        fl_lap(&laps, filter);
        size_t size = 0; /* "encode": a run-length count stands in for a codec */
        for (size_t i = 1; i < sizeof out; i++)
            size += out[i] != out[i - 1] ? 2 : 0;
        fl_lap(&laps, encode);
        fl_count(bytes, frame, (int64_t)(size + 16));
        struct timespec idle = {0, 1000000000L / FPS}; /* wait for the next frame slot */
        nanosleep(&idle, NULL);
        fl_laps_skip(&laps); /* the wait is no stage */
    }
    return 0;
}
