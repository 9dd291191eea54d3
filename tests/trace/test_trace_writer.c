/*
 * test_trace_writer.c -- the background writers (nthlib/trace_writer.c):
 * the idle writer runs under SCHED_BATCH, so that its wake-ups never
 * preempt a computing VP, and sleeps while nothing is recorded; a
 * normal-policy rescuer drains a buffer the idle writer left three
 * quarters full, so that busy CPUs cannot make the recording lose events
 * for as long as they stay busy.
 *
 * Tracing starts once per process: the flush-interval and idle tests run
 * their traces in children; the others run in order on the trace the
 * group set-up starts (flush interval 60 s, so that only a kick can wake
 * the rescuer).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "trace_convert.h"
#include "trace_hooks.h"
#include "trace_rt.h"

#define BUF_BYTES 65536   /* 2048 records per buffer */
#define BUF_RECS (BUF_BYTES / 32)

static char dir[] = "/tmp/nth-trace-writer-XXXXXX";
static char bin[300];

static int group_setup(void **st)
{
    (void)st;
    if (!mkdtemp(dir))
        return -1;
    snprintf(bin, sizeof bin, "%s/t.bin", dir);
    return nth_trace_start(bin, BUF_BYTES, 60000) == 0 ? 0 : -1;
}

static int group_teardown(void **st)
{
    (void)st;
    unlink(bin);
    rmdir(dir);
    return 0;
}

/* The scheduling policy of this process's thread named `name`, or -1. The
 * writers name themselves once their policy is set: wait for the name (no
 * time limit asserted; the test's own timeout bounds it). */
static int policy_of(const char *name)
{
    for (;;) {
        DIR *d = opendir("/proc/self/task");
        if (!d)
            return -1;
        struct dirent *e;
        while ((e = readdir(d))) {
            char p[300], comm[64] = "";
            snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
            FILE *f = fopen(p, "r");
            if (!f)
                continue;
            if (fgets(comm, sizeof comm, f))
                comm[strcspn(comm, "\n")] = 0;
            fclose(f);
            if (strcmp(comm, name) == 0) {
                int pol = sched_getscheduler(atoi(e->d_name));
                closedir(d);
                return pol;
            }
        }
        closedir(d);
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
}

static void writer_is_sched_batch_rescuer_is_not(void **st)
{
    (void)st;
    assert_int_equal(policy_of("nth-trace"), SCHED_BATCH);
    assert_int_equal(policy_of("nth-trace-rs"), SCHED_OTHER);
}

static off_t size_of(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0 ? s.st_size : -1;
}

static off_t file_size(void)
{
    return size_of(bin);
}

/* Wait until the file holds `bytes`; a liveness bound, not a timing
 * assertion: 120 s is far beyond any scheduling delay, and without a
 * rescuer the file never grows. */
static void wait_for_size(off_t bytes)
{
    for (int i = 0; file_size() < bytes; i++) {
        if (i == 120000)
            fail_msg("the file stayed at %lld bytes (waiting for %lld): nothing drained the buffer",
                     (long long)file_size(), (long long)bytes);
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
}

/* Through five wraps of the ring, drained a quarter ring at a time, every
 * record reaches the file whole, in order, once; and each buffer's ring is
 * line-aligned, so that no record straddles two cache lines. Records of
 * type 11 only: the other tests use 7. */
static void records_whole_across_ring_wraps(void **st)
{
    (void)st;
    const uint64_t n = 5 * BUF_RECS + 7, chunk = BUF_RECS / 4, mark = 0x5a5a000000000000ull;
    off_t start = file_size();
    for (uint64_t i = 0; i < n; i++) {
        assert_int_equal(nth_trace_event(11, mark | i), 0);
        if (i % chunk == chunk - 1)
            assert_int_equal(nth_trace_drain_now(), 0);
    }
    assert_int_equal(nth_trace_drain_now(), 0);
    for (struct nth_trace_buf *b = __atomic_load_n(&nth_trace_bufs, __ATOMIC_ACQUIRE); b; b = b->next)
        assert_int_equal((uintptr_t)b->ring % 64, 0);
    FILE *f = fopen(bin, "rb");
    assert_non_null(f);
    assert_int_equal(fseeko(f, start, SEEK_SET), 0);
    struct nth_trace_rec r;
    uint64_t seen = 0, last_ts = 0;
    while (fread(&r, sizeof r, 1, f) == 1) {
        if (r.type != NTH_REC_EVENT || r.arg != 11)
            continue;
        assert_int_equal(r.value, mark | seen);
        assert_int_equal(r.id, 0);
        assert_true(r.ts >= last_ts);
        last_ts = r.ts;
        seen++;
    }
    fclose(f);
    assert_int_equal(seen, n);
}

/* The idle writer held (as if the CPUs never went idle): a buffer filled
 * to three quarters reaches the file through the rescuer alone, and
 * nothing is lost. */
static void rescuer_drains_when_idle_writer_cannot(void **st)
{
    (void)st;
    __atomic_store_n(&nth_trace_writer_test_hold, 1, __ATOMIC_RELEASE);
    off_t start = file_size();
    assert_true(start >= (off_t)sizeof(struct nth_trace_file_header));
    /* The kick comes with the record that reaches three quarters: the
     * rescuer may drain before the last one is published. */
    int n = BUF_RECS / 4 * 3 + 1, q = BUF_RECS / 4 * 3;
    for (int i = 0; i < n; i++)
        assert_int_equal(nth_trace_event(7, (uint64_t)i), 0);
    wait_for_size(start + (off_t)q * 32);
    /* And again: the rescuer serves every crossing, not only the first. */
    for (int i = 0; i < n; i++)
        assert_int_equal(nth_trace_event(7, (uint64_t)(n + i)), 0);
    wait_for_size(start + 2 * (off_t)q * 32);
    __atomic_store_n(&nth_trace_writer_test_hold, 0, __ATOMIC_RELEASE);
    assert_int_equal(nth_trace_finish(), 0);
    struct nth_tr_file f;
    assert_int_equal(nth_tr_load(bin, &f, stderr), 0);
    assert_int_equal(f.lost, 0);
    size_t events = 0;
    for (size_t i = 0; i < f.nrecs; i++)
        events += f.recs[i].type == NTH_REC_EVENT && f.recs[i].arg == 7;
    assert_int_equal(events, 2 * (size_t)n);
    nth_tr_free(&f);
}

/* The idle writer held (as if it never got a CPU: a loaded machine), no
 * buffer near full: records still reach the file within the flush
 * interval's ticks, through the rescuer, as a process that leaves through
 * _exit() relies on. In a child: its own trace, 20 ms interval. */
static void rescuer_keeps_the_flush_interval(void **st)
{
    (void)st;
    char cdir[] = "/tmp/nth-trace-writer-XXXXXX", cbin[300];
    assert_non_null(mkdtemp(cdir));
    snprintf(cbin, sizeof cbin, "%s/c.bin", cdir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        __atomic_store_n(&nth_trace_writer_test_hold, 1, __ATOMIC_RELEASE);
        if (nth_trace_start(cbin, BUF_BYTES, 20))
            _exit(2);
        off_t start = size_of(cbin);
        for (int i = 0; i < 10; i++)
            nth_trace_event(7, (uint64_t)i);
        /* liveness bound as in wait_for_size */
        for (int i = 0; size_of(cbin) < start + 10 * 32; i++) {
            if (i == 120000)
                _exit(1);
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
        }
        _exit(0);   /* no exit path: the file holds only what was flushed */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    unlink(cbin);
    rmdir(cdir);
}

/* The tid of this process's thread named `name`, or -1. */
static int tid_of(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    struct dirent *e;
    int tid = -1;
    while (tid < 0 && (e = readdir(d))) {
        char p[300], comm[64] = "";
        snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(p, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = 0;
        fclose(f);
        if (strcmp(comm, name) == 0)
            tid = atoi(e->d_name);
    }
    closedir(d);
    return tid;
}

/* Times thread tid has gone to sleep so far (its voluntary context
 * switches: one per futex wait that blocked), or -1. */
static long sleeps_of(int tid)
{
    char p[96], line[128];
    snprintf(p, sizeof p, "/proc/self/task/%d/status", tid);
    FILE *f = fopen(p, "r");
    if (!f)
        return -1;
    long n = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* A traced process that records nothing: over 2 s (40 flush intervals of
 * 50 ms) the idle writer never wakes -- it woke every interval, 40 times,
 * to find nothing -- and the rescuer wakes about once per interval; then
 * the first records wake the writer (the rescuer's tick kicks it) and
 * reach the file. Wake-ups are counted, not timed: a loaded machine only
 * delays them. In a child: its own trace. */
static void idle_writer_sleeps_while_nothing_is_recorded(void **st)
{
    (void)st;
    char cdir[] = "/tmp/nth-trace-writer-XXXXXX", cbin[300];
    assert_non_null(mkdtemp(cdir));
    snprintf(cbin, sizeof cbin, "%s/i.bin", cdir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (nth_trace_start(cbin, BUF_BYTES, 50))
            _exit(2);
        policy_of("nth-trace");      /* both named: settled in their loops */
        policy_of("nth-trace-rs");
        int w = tid_of("nth-trace"), r = tid_of("nth-trace-rs");
        long w0 = sleeps_of(w), r0 = sleeps_of(r);
        if (w < 0 || r < 0 || w0 < 0 || r0 < 0)
            _exit(3);
        struct timespec two = { 2, 0 };
        while (nanosleep(&two, &two))
            ;
        long w1 = sleeps_of(w), r1 = sleeps_of(r);
        fprintf(stderr, "idle 2 s, 50 ms interval: idle writer slept %ld times, rescuer %ld\n", w1 - w0, r1 - r0);
        if (w1 - w0 > 2)
            _exit(4);                 /* the idle writer woke with nothing to do */
        if (r1 - r0 > 2000 / 50 + 5)
            _exit(5);                 /* the rescuer ticks once per interval */
        off_t start = size_of(cbin);
        for (int i = 0; i < 10; i++)
            nth_trace_event(7, (uint64_t)i);
        for (int i = 0; size_of(cbin) < start + 10 * 32; i++) {   /* liveness bound, as in wait_for_size */
            if (i == 120000)
                _exit(6);
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
        }
        /* The records waiting woke the idle writer (the rescuer's kick),
         * which then slept again. Liveness bound as above. */
        for (int i = 0; sleeps_of(w) <= w1; i++) {
            if (i == 120000)
                _exit(7);
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
        }
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    unlink(cbin);
    rmdir(cdir);
}

/* Pages of the newest buffer's ring in memory (mincore), and its size. */
static size_t ring_resident(size_t *pages)
{
    struct nth_trace_buf *b = __atomic_load_n(&nth_trace_bufs, __ATOMIC_ACQUIRE);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)b->ring / pg * pg;   /* mincore wants a page boundary */
    size_t len = (uintptr_t)b->ring - lo + (size_t)b->cap * sizeof(struct nth_trace_rec);
    size_t n = (len + pg - 1) / pg, in = 0;
    unsigned char *vec = calloc(n, 1);
    if (!vec || mincore((void *)lo, len, vec))
        _exit(9);
    for (size_t i = 0; i < n; i++)
        in += vec[i] & 1;
    free(vec);
    *pages = n;
    return in;
}

static void *vp_thread(void *arg)
{
    (void)arg;
    nth_trace_vp_start(1);
    return NULL;
}

/* A watchdog stand-in's lease of VP 1 (nthlib/watchdog.c). */
static void *standin_thread(void *arg)
{
    (void)arg;
    nth_trace__loan(1);
    nth_trace__loan(-1);
    return NULL;
}

/* A VP's ring is in memory from the VP's first record: its recording
 * takes no page fault (faults in LU's first ten traced runs, a stall of
 * the team each, until the ring had wrapped once). A thread that is no VP
 * (a program's own thread, a watchdog stand-in on loan) gets its ring's
 * pages on demand: one event does not make the buffer resident. In a
 * child: a trace of its own, buffers of `bytes`; a VP's ring resident up
 * to 4 MiB, no more (NTH_TRACE_BUFFER goes to 1 GiB). */
static void vp_ring_resident(size_t bytes)
{
    char cdir[] = "/tmp/nth-trace-writer-XXXXXX", cbin[300];
    assert_non_null(mkdtemp(cdir));
    snprintf(cbin, sizeof cbin, "%s/r.bin", cdir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (nth_trace_start(cbin, bytes, 60000))
            _exit(2);
        size_t pages, in, page = (size_t)sysconf(_SC_PAGESIZE);
        nth_trace_event(7, 1);   /* this thread, no VP: its buffer */
        in = ring_resident(&pages);
        if (pages < bytes / page || in > 2)
            _exit(3);            /* demand paging: the first page or two */
        /* A VP's first record is its VP_START, on its own kernel thread. */
        pthread_t t;
        if (pthread_create(&t, NULL, vp_thread, NULL) || pthread_join(t, NULL))
            _exit(4);
        in = ring_resident(&pages);
        size_t want = ((size_t)4 << 20) / page;
        if (want > pages)
            want = pages;
        if (in < want)
            _exit(5);
        if (in > want + 2)
            _exit(6);
        /* A stand-in on loan records on a VP's track but is no VP: its
         * first lease must not wait for its ring's pages. */
        if (pthread_create(&t, NULL, standin_thread, NULL) || pthread_join(t, NULL))
            _exit(4);
        in = ring_resident(&pages);
        if (in > 2)
            _exit(7);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 3)
        fail_msg("a non-VP thread's ring was made resident by one event");
    if (WEXITSTATUS(status) == 5)
        fail_msg("a VP's ring was not resident after its first record (pages come on demand)");
    if (WEXITSTATUS(status) == 7)
        fail_msg("a stand-in's ring was made resident by its lease");
    if (WEXITSTATUS(status) == 6)
        fail_msg("a VP's %zu-byte ring was made resident past 4 MiB", bytes);
    assert_int_equal(WEXITSTATUS(status), 0);
    unlink(cbin);
    rmdir(cdir);
}

static void vp_ring_resident_from_its_start(void **st)
{
    (void)st;
    vp_ring_resident((size_t)1 << 20);    /* the default: all of it */
    vp_ring_resident((size_t)16 << 20);   /* the first 4 MiB */
}

int main(void)
{
    const struct CMUnitTest alone[] = {
        cmocka_unit_test(rescuer_keeps_the_flush_interval),
        cmocka_unit_test(idle_writer_sleeps_while_nothing_is_recorded),
        cmocka_unit_test(vp_ring_resident_from_its_start),
    };
    int failed = cmocka_run_group_tests(alone, NULL, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(writer_is_sched_batch_rescuer_is_not),
        cmocka_unit_test(records_whole_across_ring_wraps),
        cmocka_unit_test(rescuer_drains_when_idle_writer_cannot),
    };
    return failed + cmocka_run_group_tests(tests, group_setup, group_teardown);
}
