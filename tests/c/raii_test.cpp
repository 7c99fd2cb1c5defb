// Compiles framelab.h as C++ and uses its RAII helpers; without a session every call is a no-op.
#include "framelab.h"

#include <cstdio>

int main() {
    const uint32_t stage = fl_stage("cpp");
    if (fl_enabled() != 0 || stage == 0 || fl_stage(nullptr) != 0) {
        std::fprintf(stderr, "raii_test: FAIL: expected no session, an id, and 0 for null\n");
        return 1;
    }
    framelab::Laps laps(0);
    for (uint64_t frame = 0; frame < 10; frame++) {
        framelab::Span span(stage, frame);
        laps.next_frame(frame);
        laps.lap(stage);
        laps.skip();
    }
    framelab::Pacer refused(0.0, FL_PACE_SKIP);
    framelab::Pacer pacer(1000.0, FL_PACE_SKIP);
    if (refused.valid() || !pacer.valid() || pacer.wait(0) != 0) {
        std::fprintf(stderr, "raii_test: FAIL: pacer\n");
        return 1;
    }
    std::printf("raii_test: 1 passed, 0 failed\n");
    return 0;
}
