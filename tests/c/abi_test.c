/*
 * abi_test: exercises every function of framelab.h from C.
 *
 *   abi_test [FRAMES]   without FRAMELAB_SESSION: checks that every call is a no-op, then
 *                       runs itself in a session directory it creates and checks what was
 *                       written there (ring files, names files, every record).
 *   abi_test [FRAMES]   with FRAMELAB_SESSION (e.g. under `framelab run`): records FRAMES
 *                       frames from the main thread, two pthreads and a forked child, and
 *                       prints what it recorded ("stage NAME COUNT" ...) so an end-to-end
 *                       test can compare the collector's counts.
 *
 * Exits 0 when every check passed.
 */
#define _GNU_SOURCE
#include "framelab.h"

#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int passed, failed;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (cond) {                                                                      \
            passed++;                                                                    \
        } else {                                                                         \
            failed++;                                                                    \
            fprintf(stderr, "abi_test: FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
        }                                                                                \
    } while (0)

/* Ids that no name has: recorded anyway, counted as invalid by the collector. */
#define INVALID_ID 9999u
#define TOO_WIDE_ID 70000u /* wider than 16 bits: recorded as id 0 */
#define BYTES_BASE 1000
#define EVENT_EVERY 10

/* ---- the recording workload (session mode) ------------------------------------------------ */

struct ids {
    uint32_t capture, convert, encode, send, gpu, worker, handoff, forked;
    uint32_t bytes, late, commit;
};

static struct ids intern_all(void) {
    struct ids id;
    id.capture = fl_stage("capture");
    id.convert = fl_stage("convert");
    id.encode = fl_stage("encode");
    id.send = fl_stage("send");
    id.gpu = fl_stage("gpu");
    id.worker = fl_stage("worker");
    id.handoff = fl_stage("handoff");
    id.forked = fl_stage("forked");
    id.bytes = fl_counter("bytes");
    id.commit = fl_event_kind("commit");
    id.late = 0; /* interned by the forked child only */
    return id;
}

struct worker_arg {
    uint32_t stage;
    uint64_t frames;
    fl_span handoff; /* begun on the main thread, ended here */
    int end_handoff;
};

static void *worker(void *p) {
    struct worker_arg *arg = p;
    for (uint64_t f = 0; f < arg->frames; f++) {
        fl_span s = fl_begin(arg->stage, f);
        fl_end(&s);
    }
    if (arg->end_handoff)
        fl_end(&arg->handoff);
    return NULL;
}

static uint64_t bytes_of(uint64_t frame) { return BYTES_BASE + frame; }

/* Records in a forked child: its own ring, its own names file with the inherited names. */
static void forked_child(const struct ids *id, uint64_t frames) {
    uint32_t late = fl_counter("late");
    CHECK(late != 0 && late != id->bytes);
    CHECK(fl_stage("forked") == id->forked); /* inherited, not interned anew */
    for (uint64_t f = 0; f < frames; f++) {
        fl_span s = fl_begin(id->forked, f);
        fl_end(&s);
    }
    fl_count(late, 0, 1);
    printf("abi_test: forked pid=%d stage forked %" PRIu64 " counter late 1\n", (int)getpid(),
           frames);
}

static int record(uint64_t frames) {
    CHECK(fl_enabled() == 1);
    CHECK(fl_stage(NULL) == 0 && fl_counter(NULL) == 0 && fl_event_kind(NULL) == 0);
    struct ids id = intern_all();
    CHECK(id.capture != 0 && id.bytes != 0 && id.commit != 0);
    CHECK(fl_stage("capture") == id.capture);
    CHECK(fl_counter("capture") != id.capture); /* a counter is not a stage */

    /* Main thread: three stages by laps, one by begin/end, one from given timestamps. */
    fl_laps laps = fl_laps_start(0);
    CHECK(laps.live == 1);
    uint64_t bytes_sum = 0, events = 0;
    /* "GPU" spans on the host's CLOCK_MONOTONIC, as a program converting GPU timestamps would give */
    const uint64_t gpu_base_ns = fl_now_ns();
    for (uint64_t f = 0; f < frames; f++) {
        fl_laps_next_frame(&laps, f);
        fl_laps_skip(&laps); /* the gap between frames is no stage */
        fl_lap(&laps, id.capture);
        fl_lap(&laps, id.convert);
        fl_lap(&laps, id.encode);
        fl_lap(NULL, id.encode); /* no-op */
        fl_span s = fl_begin(id.send, f);
        fl_end(&s);
        fl_span_ns(id.gpu, f, gpu_base_ns + f * 1000, gpu_base_ns + f * 1000 + 250);
        fl_count(id.bytes, f, (int64_t)bytes_of(f));
        bytes_sum += bytes_of(f);
        if (f % EVENT_EVERY == 0) {
            fl_event(id.commit, f);
            events++;
        }
    }
    uint64_t now = fl_now_ns();
    CHECK(now > 0 && fl_now_ns() >= now);

    /* Bad ids are recorded and never crash; the collector counts them as invalid. */
    fl_span bad = fl_begin(INVALID_ID, 0);
    fl_end(&bad);
    fl_end(NULL); /* no-op */
    fl_count(fl_counter(NULL), 0, 1);
    fl_event(TOO_WIDE_ID, 0);
    fl_laps_skip(NULL);
    fl_laps_next_frame(NULL, 1);

    /* A forked child: after the main thread has a ring and names, before other threads. */
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        forked_child(&id, frames);
        exit(failed ? 1 : 0);
    }
    CHECK(child > 0);

    struct worker_arg a = {id.worker, frames, fl_begin(id.handoff, 7), 1};
    struct worker_arg b = {id.worker, frames, {0, 0, 0, 0}, 0};
    pthread_t ta, tb;
    CHECK(pthread_create(&ta, NULL, worker, &a) == 0);
    CHECK(pthread_create(&tb, NULL, worker, &b) == 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);

    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(fl_names_refused() == 0);

    printf("abi_test: recorded pid=%d frames=%" PRIu64 " threads=3\n", (int)getpid(), frames);
    printf("stage capture %" PRIu64 "\nstage convert %" PRIu64 "\nstage encode %" PRIu64 "\n",
           frames, frames, frames);
    printf("stage send %" PRIu64 "\nstage gpu %" PRIu64 "\nstage worker %" PRIu64 "\n", frames,
           frames, 2 * frames);
    printf("stage handoff 1\nstage forked %" PRIu64 "\n", frames);
    printf("counter bytes %" PRIu64 " sum %" PRIu64 "\ncounter late 1 sum 1\n", frames, bytes_sum);
    printf("event commit %" PRIu64 "\ninvalid 3\n", events);
    return failed ? 1 : 0;
}

/* ---- no session: every call is a no-op ---------------------------------------------------- */

static void check_disabled(void) {
    CHECK(fl_enabled() == 0);
    CHECK(fl_stage(NULL) == 0 && fl_counter(NULL) == 0 && fl_event_kind(NULL) == 0);
    uint32_t st = fl_stage("disabled");
    CHECK(st != 0 && fl_stage("disabled") == st); /* ids still work: code need not branch */
    fl_span s = fl_begin(st, 1);
    CHECK(s.live == 0);
    fl_end(&s);
    fl_span bad = fl_begin(INVALID_ID, 2);
    fl_end(&bad);
    fl_end(NULL);
    fl_laps laps = fl_laps_start(1);
    CHECK(laps.live == 0);
    fl_lap(&laps, st);
    fl_laps_skip(&laps);
    fl_laps_next_frame(&laps, 2);
    CHECK(laps.last == 0 && laps.frame == 2);
    fl_lap(NULL, st);
    fl_laps_skip(NULL);
    fl_laps_next_frame(NULL, 3);
    fl_span_ns(INVALID_ID, 1, 10, 20);
    fl_count(0, 1, 5);
    fl_event(TOO_WIDE_ID, 1);
    uint64_t t = fl_now_ns();
    CHECK(t > 0 && fl_now_ns() >= t);
    CHECK(fl_enabled() == 0);
}

/* ---- checking a session directory (layout mirrors probe/src/wire.rs) --------------------- */

enum { HEADER_BYTES = 256, RECORD_BYTES = 32 };
enum { OFF_MAGIC = 0, OFF_VERSION = 8, OFF_PID = 16, OFF_TID = 20, OFF_CAPACITY = 24 };
enum { OFF_HEAD = 64, OFF_DROPPED = 128, OFF_CLOSED = 144, OFF_TAIL = 192 }; /* head, tail: own lines */
enum { KIND_SPAN = 1, KIND_SPAN_NS = 2, KIND_COUNTER = 3, KIND_EVENT = 4 };
#define FLAG_LAP (1ull << 32)
#define MAX_PROCS 4
#define MAX_NAME_IDS 64

struct proc {
    int pid;
    char names[MAX_NAME_IDS][64]; /* "s capture" by id */
    int rings;
    /* per name id: spans, span_ns, counters (and their sum), events */
    uint64_t spans[MAX_NAME_IDS], spans_ns[MAX_NAME_IDS], counters[MAX_NAME_IDS];
    uint64_t counter_sum[MAX_NAME_IDS], events[MAX_NAME_IDS], invalid;
};

static uint64_t u64_at(const unsigned char *p, size_t off) {
    uint64_t v;
    memcpy(&v, p + off, sizeof v);
    return v;
}

static uint32_t u32_at(const unsigned char *p, size_t off) {
    uint32_t v;
    memcpy(&v, p + off, sizeof v);
    return v;
}

static struct proc *proc_of(struct proc *procs, int *n, int pid) {
    for (int i = 0; i < *n; i++)
        if (procs[i].pid == pid)
            return &procs[i];
    if (*n == MAX_PROCS)
        return NULL;
    struct proc *p = &procs[(*n)++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    return p;
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = n > 0 ? (size_t)n : 0;
    return buf;
}

static void load_names(struct proc *p, const char *path) {
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        unsigned id;
        char kind, name[61];
        if (sscanf(line, "%u %c %60s", &id, &kind, name) == 3 && id < MAX_NAME_IDS)
            snprintf(p->names[id], sizeof p->names[id], "%c %s", kind, name);
    }
    fclose(f);
}

static int id_of(const struct proc *p, const char *kind_and_name) {
    for (int i = 1; i < MAX_NAME_IDS; i++)
        if (strcmp(p->names[i], kind_and_name) == 0)
            return i;
    return -1;
}

/* Decodes one ring: header identity, drops, lap continuity, per-name counts. */
static void load_ring(struct proc *p, const char *path, int tid) {
    size_t len;
    unsigned char *r = read_file(path, &len);
    CHECK(r != NULL && len >= HEADER_BYTES);
    if (!r || len < HEADER_BYTES) {
        free(r);
        return;
    }
    p->rings++;
    uint64_t cap = u64_at(r, OFF_CAPACITY), head = u64_at(r, OFF_HEAD);
    CHECK(memcmp(r + OFF_MAGIC, "FLRING01", 8) == 0);
    CHECK(u32_at(r, OFF_VERSION) == 1);
    CHECK((int)u32_at(r, OFF_PID) == p->pid && (int)u32_at(r, OFF_TID) == tid);
    CHECK(cap >= 4 && (cap & (cap - 1)) == 0 && len == HEADER_BYTES + cap * RECORD_BYTES);
    CHECK(u64_at(r, OFF_DROPPED) == 0 && u64_at(r, OFF_TAIL) == 0 && head <= cap);
    CHECK(u32_at(r, OFF_CLOSED) == 1); /* every thread had exited */
    uint64_t last_lap_end = 0;
    int laps_ok = 1, spans_ok = 1;
    uint64_t gpu_base = 0;
    for (uint64_t i = 0; i < head && i < cap; i++) {
        const unsigned char *rec = r + HEADER_BYTES + i * RECORD_BYTES;
        uint64_t word = u64_at(rec, 0), frame = u64_at(rec, 8);
        uint64_t a = u64_at(rec, 16), b = u64_at(rec, 24);
        unsigned kind = word & 0xff, name = (word >> 16) & 0xffff;
        int known = name > 0 && name < MAX_NAME_IDS && p->names[name][0];
        if (!known) {
            p->invalid++;
            continue;
        }
        if (kind == KIND_SPAN) {
            p->spans[name]++;
            spans_ok &= a <= b;
            if (word & FLAG_LAP) {
                /* a lap starts where the previous one ended, unless skipped: never before */
                laps_ok &= last_lap_end == 0 || a >= last_lap_end;
                last_lap_end = b;
            }
        } else if (kind == KIND_SPAN_NS) {
            p->spans_ns[name]++;
            /* every span given as base + frame µs, 250 ns long: one base for all */
            if (gpu_base == 0)
                gpu_base = a - frame * 1000;
            spans_ok &= a == gpu_base + frame * 1000 && b == a + 250;
        } else if (kind == KIND_COUNTER) {
            p->counters[name]++;
            p->counter_sum[name] += a;
        } else if (kind == KIND_EVENT) {
            p->events[name]++;
            spans_ok &= frame % EVENT_EVERY == 0;
        }
    }
    CHECK(laps_ok);
    CHECK(spans_ok);
    free(r);
}

/* Within a frame, laps are contiguous: convert starts at capture's end, encode at convert's. */
static void check_lap_contiguity(const char *path, const struct proc *p) {
    size_t len;
    unsigned char *r = read_file(path, &len);
    if (!r || len < HEADER_BYTES) {
        free(r);
        return;
    }
    int capture = id_of(p, "s capture"), convert = id_of(p, "s convert");
    int encode = id_of(p, "s encode");
    uint64_t prev_end = 0, checked = 0;
    int prev = -1, ok = 1;
    for (uint64_t i = 0; i < u64_at(r, OFF_HEAD); i++) {
        const unsigned char *rec = r + HEADER_BYTES + i * RECORD_BYTES;
        uint64_t word = u64_at(rec, 0);
        if ((word & 0xff) != KIND_SPAN || !(word & FLAG_LAP))
            continue;
        int name = (word >> 16) & 0xffff;
        if ((name == convert && prev == capture) || (name == encode && prev == convert)) {
            ok &= u64_at(rec, 16) == prev_end;
            checked++;
        }
        prev = name;
        prev_end = u64_at(rec, 24);
    }
    CHECK(ok);
    CHECK(checked > 0);
    free(r);
}

static void check_session(const char *dir, int child, uint64_t frames) {
    struct proc procs[MAX_PROCS];
    int nprocs = 0;
    char path[512], main_ring[512] = "";
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d)
        return;
    /* names first: rings are decoded with them */
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid;
        if (sscanf(e->d_name, "n-%d", &pid) == 1) {
            struct proc *p = proc_of(procs, &nprocs, pid);
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (p)
                load_names(p, path);
        }
    }
    rewinddir(d);
    while ((e = readdir(d))) {
        int pid, tid;
        if (sscanf(e->d_name, "r-%d-%d", &pid, &tid) == 2) {
            struct proc *p = proc_of(procs, &nprocs, pid);
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (p)
                load_ring(p, path, tid);
            if (pid == child && tid == child)
                snprintf(main_ring, sizeof main_ring, "%s", path);
        }
    }
    closedir(d);

    CHECK(nprocs == 2);
    struct proc *m = NULL, *f = NULL;
    for (int i = 0; i < nprocs; i++) {
        if (procs[i].pid == child)
            m = &procs[i];
        else
            f = &procs[i];
    }
    CHECK(m != NULL && f != NULL);
    if (!m || !f)
        return;
    CHECK(m->rings == 3); /* main thread and two pthreads */
    CHECK(f->rings == 1);
    const char *stages[] = {"s capture", "s convert", "s encode", "s send", "s forked"};
    for (size_t i = 0; i < sizeof stages / sizeof *stages; i++) {
        int sid = id_of(m, stages[i]);
        CHECK(sid > 0 && id_of(f, stages[i]) == sid); /* the child inherited every name */
        if (sid > 0 && strcmp(stages[i], "s forked") != 0)
            CHECK(m->spans[sid] == frames);
    }
    int worker = id_of(m, "s worker"), handoff = id_of(m, "s handoff");
    int gpu = id_of(m, "s gpu"), bytes = id_of(m, "c bytes"), commit = id_of(m, "e commit");
    CHECK(worker > 0 && m->spans[worker] == 2 * frames);
    CHECK(handoff > 0 && m->spans[handoff] == 1);
    CHECK(gpu > 0 && m->spans_ns[gpu] == frames);
    CHECK(bytes > 0 && m->counters[bytes] == frames);
    CHECK(bytes > 0 && m->counter_sum[bytes] == frames * BYTES_BASE + frames * (frames - 1) / 2);
    CHECK(commit > 0 && m->events[commit] == (frames + EVENT_EVERY - 1) / EVENT_EVERY);
    CHECK(m->invalid == 3);
    CHECK(id_of(m, "c late") < 0); /* interned after the fork, by the child only */
    int forked = id_of(f, "s forked"), late = id_of(f, "c late");
    CHECK(forked > 0 && f->spans[forked] == frames);
    CHECK(late > 0 && f->counters[late] == 1 && f->invalid == 0);
    CHECK(main_ring[0] != 0);
    check_lap_contiguity(main_ring, m);
    printf("abi_test: session checked: %d processes, %d rings\n", nprocs, m->rings + f->rings);
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return;
    char path[512];
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

/* Runs this program again inside a fresh session directory and checks what it wrote. */
static void self_check(const char *self, uint64_t frames) {
    char dir[] = "/tmp/framelab-abi-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char arg[32];
    snprintf(arg, sizeof arg, "%" PRIu64, frames);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        setenv("FRAMELAB_SESSION", dir, 1);
        execl(self, self, arg, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    check_session(dir, child, frames);
    remove_dir(dir);
}

int main(int argc, char **argv) {
    uint64_t frames = argc > 1 ? strtoull(argv[1], NULL, 10) : 100;
    if (frames == 0) {
        fprintf(stderr, "abi_test: FRAMES must be a positive integer\n");
        return 2;
    }
    if (getenv("FRAMELAB_SESSION"))
        return record(frames);
    if (frames > 10000) {
        /* with no collector draining, a default ring (65536 records) must hold them all */
        fprintf(stderr, "abi_test: FRAMES must be at most 10000 without a collector\n");
        return 2;
    }
    check_disabled();
    self_check("/proc/self/exe", frames);
    printf("abi_test: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
