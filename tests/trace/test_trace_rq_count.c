/*
 * test_trace_rq_count.c -- what tracing keeps beside the core's structures
 * without costing the untraced path: the ready queue's length counts and
 * the parallel regions' numbers (trace_core.h, trace_runtime.c).
 *
 *   rq_count_lines     the enqueuers' count lies on the tail's cache line
 *                      (which they write anyway), the dequeuers' on the
 *                      head's, and not both on one line: a count beside
 *                      the head made every push from another VP take the
 *                      dequeuer's line with a locked add (bench/RESULTS.md,
 *                      "trover": a third of tracing's direct cost on LU).
 *   rq_count_exact     with tracing on, pushes from two kernel threads at
 *                      once while a third pops: the length read afterwards
 *                      is exactly pushed - popped (a push count kept with
 *                      a plain increment would lose some), and pops under
 *                      the queue's lock are all counted.
 *   region_ids_unique  region numbers drawn on both VPs (main on VP 0, two
 *                      nano-threads while main keeps VP 0) and on a kernel
 *                      thread that is no VP, interleaved: all distinct and
 *                      nonzero, the first one drawn 1.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <nth.h>
#include "trace_core.h"
#include "trace_rt.h"

#define LINE 64
#define PUSHES 20000          /* per pushing thread and round */
#define ROUNDS 8

static char bin_path[64];

static void rq_count_lines(void **state)
{
    (void)state;
    size_t head = offsetof(struct nth_rq, head) / LINE, tail = offsetof(struct nth_rq, tail) / LINE;
    size_t push = offsetof(struct nth_rq, npush) / LINE, pop = offsetof(struct nth_rq, npop) / LINE;
    assert_int_equal(push, tail);
    assert_int_equal(pop, head);
    assert_int_equal(offsetof(struct nth_rq, lock) / LINE, head);
    assert_true(push != pop);
    assert_true(_Alignof(struct nth_rq) >= LINE);
}

static struct nth_rq q;
static struct nth_thread items[2][PUSHES];
static long popped;
static int pushers_done;

static pthread_barrier_t start;

static void *pusher(void *a)
{
    struct nth_thread *it = a;
    pthread_barrier_wait(&start);     /* both pushers at once, with the popper */
    for (int i = 0; i < PUSHES; i++)
        nth_rq_push(&q, &it[i]);
    __atomic_add_fetch(&pushers_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *popper(void *a)
{
    (void)a;
    pthread_barrier_wait(&start);
    for (;;) {
        int done = __atomic_load_n(&pushers_done, __ATOMIC_ACQUIRE) == 2;
        /* Half the pops as a thief's (trypop), half as the owner's. */
        struct nth_thread *t = popped & 1 ? nth_rq_trypop(&q) : nth_rq_pop(&q);
        if (t)
            popped++;
        else if (done && nth_rq_empty(&q))
            break;
        if (popped == PUSHES)      /* leave some queued: the length is not 0 */
            break;
    }
    return NULL;
}

static void rq_count_exact(void **state)
{
    (void)state;
    assert_true(nth_trace_enabled());
    /* Rounds: on a loaded 2-CPU machine the pushers do not always overlap. */
    for (int round = 0; round < ROUNDS; round++) {
        nth_rq_init(&q);
        popped = 0;
        pushers_done = 0;
        assert_int_equal(pthread_barrier_init(&start, NULL, 3), 0);
        pthread_t p[3];
        assert_int_equal(pthread_create(&p[0], NULL, pusher, items[0]), 0);
        assert_int_equal(pthread_create(&p[1], NULL, pusher, items[1]), 0);
        assert_int_equal(pthread_create(&p[2], NULL, popper, NULL), 0);
        for (int i = 0; i < 3; i++)
            assert_int_equal(pthread_join(p[i], NULL), 0);
        pthread_barrier_destroy(&start);
        long left = 0;
        while (nth_rq_pop(&q) != NULL)   /* count what is really queued, counting its pops */
            left++;
        assert_int_equal(popped + left, 2 * PUSHES);
        assert_int_equal(__atomic_load_n(&q.npush, __ATOMIC_RELAXED), 2 * PUSHES);
        assert_int_equal(__atomic_load_n(&q.npop, __ATOMIC_RELAXED), 2 * PUSHES);
        assert_int_equal(nth_trace_rt_rq_len(&q), 0);
    }
    /* And a length in between: 3 pushed, 1 popped. */
    for (int i = 0; i < 3; i++)
        nth_rq_push(&q, &items[0][i]);
    assert_non_null(nth_rq_pop(&q));
    assert_int_equal(nth_trace_rt_rq_len(&q), 2);
}

#define DRAWS 1000
static uint64_t drawn[4][DRAWS];

static int nano_done;

static void *draw_nano(void *a)
{
    uint64_t *out = a;
    for (int i = 0; i < DRAWS; i++) {
        out[i] = nth_trace_rt_region_id();
        if (i % 50 == 0)
            nth_yield();           /* let the other drawer in */
    }
    __atomic_add_fetch(&nano_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *draw_kernel(void *a)
{
    uint64_t *out = a;
    for (int i = 0; i < DRAWS; i++)
        out[i] = nth_trace_rt_region_id();
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void region_ids_unique(void **state)
{
    (void)state;
    nth_t t[2];
    pthread_t k;
    uint64_t first = nth_trace_rt_region_id();
    assert_int_equal(first, 1);    /* the process's first region is "parallel region 1" */
    assert_int_equal(nth_create(&t[0], NULL, draw_nano, drawn[0]), 0);
    assert_int_equal(nth_create(&t[1], NULL, draw_nano, drawn[1]), 0);
    assert_int_equal(pthread_create(&k, NULL, draw_kernel, drawn[2]), 0);
    /* Main draws on VP 0 while the two nano-threads draw on VP 1, and waits
     * for them in the kernel (usleep), never by switching: cmocka keeps its
     * state in __thread variables, and a main nano-thread resumed on VP 1's
     * kernel thread crashed in cmocka's end-of-test check (1 run in 10;
     * tests/sync/test_sync.c forks for the same reason). Joining exited
     * nano-threads does not switch. */
    int m = 0;
    while (__atomic_load_n(&nano_done, __ATOMIC_ACQUIRE) < 2 || m < DRAWS) {
        if (m < DRAWS)
            drawn[3][m++] = nth_trace_rt_region_id();
        usleep(m < DRAWS ? 10 : 1000);
    }
    assert_int_equal(nth_join(t[0], NULL), 0);
    assert_int_equal(nth_join(t[1], NULL), 0);
    assert_int_equal(pthread_join(k, NULL), 0);
    static uint64_t all[4 * DRAWS + 1];
    size_t n = 0;
    for (int d = 0; d < 4; d++)
        for (int i = 0; i < DRAWS; i++) {
            assert_true(drawn[d][i] > first);
            /* Increasing along a kernel thread's draws (main's on VP 0's
             * blocks, or the global counter); a nano-thread may change VPs. */
            if (i && d >= 2)
                assert_true(drawn[d][i] > drawn[d][i - 1]);
            all[n++] = drawn[d][i];
        }
    all[n++] = first;
    qsort(all, n, sizeof *all, cmp_u64);
    for (size_t i = 1; i < n; i++)
        if (all[i] == all[i - 1])
            fail_msg("region number %llu drawn twice", (unsigned long long)all[i]);
}

static int setup(void **state)
{
    (void)state;
    unsetenv("NTH_TRACE_MAIN_PID");
    snprintf(bin_path, sizeof bin_path, "/tmp/nth-trace-rqcount.%ld.bin", (long)getpid());
    nth_config_t cfg;
    nth_config_default(&cfg);
    cfg.vps = 2;
    cfg.cpumgr = "off";
    cfg.trace = bin_path;
    if (nth_init(&cfg) != 0 || !nth_trace_enabled()) {
        fprintf(stderr, "test_trace_rq_count: cannot start the runtime traced to %s\n", bin_path);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(bin_path);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rq_count_lines),
        cmocka_unit_test(rq_count_exact),
        cmocka_unit_test(region_ids_unique),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
