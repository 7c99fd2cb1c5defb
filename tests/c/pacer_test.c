/*
 * pacer_test: the pacer of framelab.h from C, without a session.
 *
 * Checks argument handling, and that frames never start before their slot: 50 frames at
 * 1000 fps cannot take less than 49 ms, however slow or busy the machine (no upper bound is
 * checked: that would be a timing test). Exits 0 when every check passed.
 */
#define _POSIX_C_SOURCE 200809L
#include "framelab.h"

#include <stdio.h>
#include <time.h>

static int passed, failed;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (cond) {                                                                      \
            passed++;                                                                    \
        } else {                                                                         \
            failed++;                                                                    \
            fprintf(stderr, "pacer_test: FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);  \
        }                                                                                \
    } while (0)

int main(void) {
    CHECK(fl_pacer_new(0.0, FL_PACE_SKIP) == NULL);
    CHECK(fl_pacer_new(-30.0, FL_PACE_SKIP) == NULL);
    CHECK(fl_pacer_new(2e6, FL_PACE_SKIP) == NULL);
    CHECK(fl_pacer_new(60.0, 7) == NULL);
    CHECK(fl_pacer_wait(NULL, 0) == -1);
    fl_pacer_free(NULL);

    const int policies[] = {FL_PACE_CATCH_UP, FL_PACE_SKIP, FL_PACE_REANCHOR};
    for (int i = 0; i < 3; i++) {
        fl_pacer *pacer = fl_pacer_new(1000.0, policies[i]);
        CHECK(pacer != NULL);
        if (pacer == NULL) {
            continue;
        }
        uint64_t start = fl_now_ns();
        int negative = 0;
        CHECK(fl_pacer_wait(pacer, 0) == 0); /* the first wait anchors the grid */
        for (uint64_t frame = 1; frame < 50; frame++) {
            negative += fl_pacer_wait(pacer, frame) < 0;
        }
        uint64_t elapsed = fl_now_ns() - start;
        CHECK(negative == 0);
        CHECK(elapsed >= 49000000u);
        fl_pacer_free(pacer);
    }
    printf("pacer_test: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
