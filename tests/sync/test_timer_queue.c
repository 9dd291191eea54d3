/*
 * test_timer_queue.c -- the timer queue as a data structure: alarms fire in
 * deadline order, never early, cancel removes from anywhere, re-arm, move.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "timer_queue.h"

static uint64_t fired[4096];
static int nfired;

static int record(struct nth_alarm *a, uint64_t now)
{
    assert_true(a->deadline <= now); /* never early */
    fired[nfired++] = a->deadline;
    return 0;
}

/* Slices of longer waits (nth_alarm.real) count at their real deadline:
 * the earliest real deadline of a heap of random alarms, a third of them
 * slices, is the brute-force minimum, as alarms fire and are cancelled. */
static void test_next_real(void **st)
{
    (void)st;
    enum { N = 3000 };
    static struct nth_alarm al[N];
    struct nth_tq q;
    nth_tq_init(&q);
    assert_int_equal(nth_tq_next_real(&q), NTH_TQ_NONE);
    srand(11);
    for (int i = 0; i < N; i++) {
        uint64_t d = 1 + (uint64_t)(rand() % 100000);
        al[i] = (struct nth_alarm){ .deadline = d, .fn = record };
        if (i % 3 == 0)   /* a slice: real end later, or none */
            al[i].real = i % 6 ? d + 1 + (uint64_t)(rand() % 200000) : NTH_TQ_NONE;
        nth_tq_arm(&q, &al[i]);
    }
    int cancel = 0;
    for (uint64_t now = 0; now < 120000; now += 7919) {
        nfired = 0;
        (void)nth_tq_fire(&q, now);
        for (int k = 0; k < 40; k++, cancel = (cancel + 37) % N)
            (void)nth_tq_cancel(&al[cancel]);
        uint64_t want = NTH_TQ_NONE;
        int slices = 0;
        for (int i = 0; i < N; i++) {
            if (atomic_load(&al[i].state) != NTH_ALARM_ARMED)
                continue;
            uint64_t r = al[i].real ? al[i].real : al[i].deadline;
            slices += al[i].real != 0;
            if (r < want)
                want = r;
        }
        assert_int_equal(q.nslices, slices);
        assert_true(nth_tq_next_real(&q) == want);
        /* Without slices it is the next deadline. */
        if (!slices)
            assert_true(nth_tq_next_real(&q) == nth_tq_next_deadline(&q));
    }
    nth_tq_fire(&q, UINT64_MAX - 1);
    assert_int_equal(q.nslices, 0);
    assert_int_equal(nth_tq_next_real(&q), NTH_TQ_NONE);
}

static void test_fires_in_order(void **st)
{
    (void)st;
    enum { N = 2000 };
    static struct nth_alarm al[N];
    struct nth_tq q;
    nth_tq_init(&q);
    srand(7);
    for (int i = 0; i < N; i++) {
        al[i] = (struct nth_alarm){ .deadline = 1 + (uint64_t)(rand() % 100000), .fn = record };
        nth_tq_arm(&q, &al[i]);
    }
    /* Cancel every third one, from anywhere in the heap. */
    int cancelled = 0;
    for (int i = 0; i < N; i += 3) {
        assert_int_equal(nth_tq_cancel(&al[i]), 1);
        assert_int_equal(nth_tq_cancel(&al[i]), 0); /* second cancel: no-op */
        cancelled++;
    }
    nfired = 0;
    uint64_t next = nth_tq_fire(&q, 50000);
    for (int i = 0; i < nfired; i++) {
        assert_true(fired[i] <= 50000);
        if (i)
            assert_true(fired[i - 1] <= fired[i]);
    }
    assert_true(next > 50000);
    assert_int_equal(nth_tq_next_deadline(&q), next);
    int first = nfired;
    nth_tq_fire(&q, UINT64_MAX - 1);
    assert_int_equal(nfired, N - cancelled);
    for (int i = first; i < nfired; i++)
        assert_true(fired[i - 1] <= fired[i]);
    assert_int_equal(nth_tq_next_deadline(&q), NTH_TQ_NONE);
    for (int i = 1; i < N; i += 3)
        assert_int_equal(nth_tq_cancel(&al[i]), 0); /* already fired */
}

static int rearms;
static int rearm_once(struct nth_alarm *a, uint64_t now)
{
    if (rearms++ == 0) {
        a->deadline = now + 100;
        return 1;
    }
    return 0;
}

static void test_rearm(void **st)
{
    (void)st;
    struct nth_tq q;
    nth_tq_init(&q);
    struct nth_alarm a = { .deadline = 10, .fn = rearm_once };
    rearms = 0;
    nth_tq_arm(&q, &a);
    assert_int_equal(nth_tq_fire(&q, 10), 110);
    assert_int_equal(a.state, NTH_ALARM_ARMED);
    assert_int_equal(nth_tq_fire(&q, 109), 110);
    assert_int_equal(rearms, 1);
    assert_int_equal(nth_tq_fire(&q, 110), NTH_TQ_NONE);
    assert_int_equal(rearms, 2);
    assert_int_equal(a.state, NTH_ALARM_DONE);
}

static void test_move(void **st)
{
    (void)st;
    struct nth_tq a, b;
    nth_tq_init(&a);
    nth_tq_init(&b);
    struct nth_alarm x[10];
    for (int i = 0; i < 10; i++) {
        x[i] = (struct nth_alarm){ .deadline = (uint64_t)(100 - i), .fn = record };
        nth_tq_arm(i % 2 ? &a : &b, &x[i]);
    }
    nth_tq_move(&a, &b);
    assert_int_equal(nth_tq_next_deadline(&a), NTH_TQ_NONE);
    assert_int_equal(nth_tq_next_deadline(&b), 91);
    /* A moved alarm is cancelled in its new queue. */
    assert_int_equal(nth_tq_cancel(&x[1]), 1);
    assert_true(atomic_load(&x[3].q) == &b);
    nfired = 0;
    assert_int_equal(nth_tq_fire(&a, 1000), NTH_TQ_NONE);
    assert_int_equal(nfired, 0);
    nth_tq_fire(&b, 1000);
    assert_int_equal(nfired, 9);
}

static void test_abs_to_mono(void **st)
{
    (void)st;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t m0 = nth_now_ns();
    rt.tv_sec += 2;
    uint64_t m = nth_abs_to_mono(CLOCK_REALTIME, &rt);
    assert_true(m >= m0 + 1900000000u && m <= m0 + 2100000000u);
    struct timespec past = { 1, 0 };
    assert_true(nth_abs_to_mono(CLOCK_REALTIME, &past) <= nth_now_ns());
}


/* Random interleaving of arm, cancel (from anywhere in the heap, also deep
 * after pops have restructured it) and fire; every armed alarm fires once,
 * in order, never early, unless cancelled. */
static int rnd_fired[512];
static int rnd_fire(struct nth_alarm *a, uint64_t now)
{
    assert_true(a->deadline <= now);
    rnd_fired[(struct nth_alarm (*)[1])a - (struct nth_alarm (*)[1])a->arg]++;
    return 0;
}

static void test_random_ops(void **st)
{
    (void)st;
    enum { N = 512 };
    static struct nth_alarm al[N];
    static int armed[N];
    struct nth_tq q;
    nth_tq_init(&q);
    srand(99);
    memset(rnd_fired, 0, sizeof rnd_fired);
    uint64_t now = 0;
    int expect_fired[N] = { 0 };
    for (int step = 0; step < 200000; step++) {
        int i = rand() % N, op = rand() % 10;
        if (op < 5 && !armed[i]) {
            al[i] = (struct nth_alarm){ .deadline = now + 1 + (uint64_t)(rand() % 1000),
                                        .fn = rnd_fire, .arg = al };
            nth_tq_arm(&q, &al[i]);
            armed[i] = 1;
        } else if (op < 8 && armed[i]) {
            int c = nth_tq_cancel(&al[i]);
            assert_int_equal(c, al[i].deadline > now ? 1 : 0);
            armed[i] = 0;
        } else if (op == 9) {
            now += (uint64_t)(rand() % 300);
            for (int k = 0; k < N; k++)
                if (armed[k] && al[k].deadline <= now) {
                    expect_fired[k]++;
                    armed[k] = 0;
                }
            uint64_t next = nth_tq_fire(&q, now);
            uint64_t want = NTH_TQ_NONE;
            for (int k = 0; k < N; k++)
                if (armed[k] && al[k].deadline < want)
                    want = al[k].deadline;
            assert_int_equal(next, want);
            for (int k = 0; k < N; k++)
                assert_int_equal(rnd_fired[k], expect_fired[k]);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fires_in_order),
        cmocka_unit_test(test_next_real),
        cmocka_unit_test(test_rearm),
        cmocka_unit_test(test_move),
        cmocka_unit_test(test_abs_to_mono),
        cmocka_unit_test(test_random_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
