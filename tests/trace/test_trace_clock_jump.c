/*
 * test_trace_clock_jump.c -- the trace clock when the TSC jumps (a VM
 * snapshot restored on another host, CPUs whose TSCs disagree): the clock
 * (nthlib/trace_clock.c) is built into this test with
 * NTH_TRACE_TSC_TEST_HOOK, so each kernel thread's TSC reads its own
 * offset, which the test moves backwards and forwards. Checked: the
 * re-anchoring's arithmetic on jumps (a hard re-anchor at CLOCK_MONOTONIC,
 * the start pair replaced) and the mapping's window; then, live, that one
 * kernel thread's stamps never go back across jumps either way, that a
 * jump out of the window falls back to CLOCK_MONOTONIC at once and the
 * next re-anchoring brings the TSC back, within 1 ms of CLOCK_MONOTONIC;
 * and that a nano-thread's track handed from a kernel thread whose TSC
 * runs ahead to one whose TSC is behind never goes back
 * (nth_trace_clock_raise, as the runtime's switch does with the
 * descriptor's last stamp). No timing is asserted: sleeps only make
 * CLOCK_MONOTONIC pass a bound.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "trace_clock.h"

#define ONE_MS 1000000ull
#define ONE_S 1000000000ull

static uint64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * ONE_S + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / ONE_S), (long)(ns % ONE_S) };
    while (nanosleep(&ts, &ts))
        ;
}

/* 0.4 ns per tick (2.5 GHz), 32.32 fixed point. */
static const uint64_t MULT_04 = (uint64_t)(0.4 * 4294967296.0);

static void jumps_make_a_hard_reanchor(void **st)
{
    (void)st;
    /* Start pair (1e12 ticks, 400 s); the mapping exact, anchored 10 s later. */
    uint64_t s_tsc = 1000000000000ull, s_ns = 400 * ONE_S;
    struct nth_trace_cal c = nth_trace_cal_window(
        (struct nth_trace_cal){ .tsc0 = s_tsc + 25000000000ull, .ns0 = 410 * ONE_S, .mult = MULT_04 });
    /* 100 ms later, the TSC 1 h behind the start (a snapshot restored on
     * another host): CLOCK_MONOTONIC's time at the TSC's tick, same slope,
     * and the pair becomes the start. */
    uint64_t tsc = s_tsc - 9000000000000ull, now = 410 * ONE_S + 100 * ONE_MS;
    struct nth_trace_cal n = nth_trace_cal_next(&c, &s_tsc, &s_ns, tsc, now);
    assert_int_equal(n.tsc0, tsc);
    assert_int_equal(n.ns0, now);
    assert_int_equal(n.mult, MULT_04);
    assert_int_equal(s_tsc, tsc);
    assert_int_equal(s_ns, now);
    assert_true(nth_trace_cal_covers(&n, tsc));
    /* Then forwards by 1 s (2.5e9 ticks) more than CLOCK_MONOTONIC moved. */
    uint64_t tsc2 = tsc + 250000000ull + 2500000000ull, now2 = now + 100 * ONE_MS;
    struct nth_trace_cal f = nth_trace_cal_next(&n, &s_tsc, &s_ns, tsc2, now2);
    assert_int_equal(f.tsc0, tsc2);
    assert_int_equal(f.ns0, now2);
    assert_int_equal(s_tsc, tsc2);
    /* A mapping 2 ms off, with no jump of the TSC: the same. */
    struct nth_trace_cal g = nth_trace_cal_next(&f, &s_tsc, &s_ns, tsc2 + 250000000ull, now2 + 102 * ONE_MS);
    assert_int_equal(g.ns0, now2 + 102 * ONE_MS);
    /* 0.5 ms off: continuous, slewed (the start pair stays). */
    uint64_t keep = s_tsc;
    uint64_t t3 = tsc2 + 500000000ull;
    struct nth_trace_cal h = nth_trace_cal_next(&g, &s_tsc, &s_ns, t3, nth_trace_cal_ns(&g, t3) + ONE_MS / 2);
    assert_int_equal(h.ns0, nth_trace_cal_ns(&g, t3));
    assert_int_equal(s_tsc, keep);
}

static void window_bounds_the_mapping(void **st)
{
    (void)st;
    struct nth_trace_cal c = nth_trace_cal_window(
        (struct nth_trace_cal){ .tsc0 = 10000000000ull, .ns0 = 5 * ONE_S, .mult = MULT_04 });
    uint64_t ms = 2500000;   /* ticks per ms at 0.4 ns */
    assert_true(nth_trace_cal_covers(&c, c.tsc0));
    assert_true(nth_trace_cal_covers(&c, c.tsc0 - ms / 2));
    assert_false(nth_trace_cal_covers(&c, c.tsc0 - 2 * ms));
    assert_true(nth_trace_cal_covers(&c, c.tsc0 + 1900 * ms));
    assert_false(nth_trace_cal_covers(&c, c.tsc0 + 2100 * ms));
    assert_false(nth_trace_cal_covers(&c, 0));
    assert_false(nth_trace_cal_covers(&c, UINT64_MAX));
    /* An anchor near tick 0: the window wraps below it, covers() too. */
    struct nth_trace_cal z = nth_trace_cal_window((struct nth_trace_cal){ .tsc0 = 1000, .ns0 = ONE_S, .mult = MULT_04 });
    assert_true(nth_trace_cal_covers(&z, 0));
    assert_true(nth_trace_cal_covers(&z, 1000 + 1000 * ms));
    assert_false(nth_trace_cal_covers(&z, UINT64_MAX - 3 * ms));
}

/* One stamp, checked against the CLOCK_MONOTONIC reads around it (tol
 * either side) and against the previous stamp of this kernel thread. */
static uint64_t last;
static uint64_t stamp(uint64_t tol, const char *what)
{
    uint64_t m1 = mono(), t = nth_trace_now(), m2 = mono();
    if (t + tol < m1 || t > m2 + tol)
        fail_msg("%s: stamp %llu outside [%llu, %llu] +- %llu ns", what, (unsigned long long)t,
                 (unsigned long long)m1, (unsigned long long)m2, (unsigned long long)tol);
    if (t < last)
        fail_msg("%s: stamp went back: %llu after %llu", what, (unsigned long long)t, (unsigned long long)last);
    last = t;
    return t;
}

static void stamps(int n, uint64_t tol, const char *what)
{
    for (int i = 0; i < n; i++)
        stamp(tol, what);
}

/* 1 if this kernel thread's next read comes from the TSC. */
static int from_tsc(void)
{
    uint64_t ns;
    return nth_trace_tsc_now(&ns);
}

/* A jump meant to stay inside the window: said when it did not (the
 * anchor went stale meanwhile, a preemption of seconds), not failed. */
static void in_window_note(int tsc, const char *what)
{
    if (!tsc)
        printf("# %s: out of the window (a stale anchor), clock_gettime\n", what);
}

static void live_jumps_stay_monotonic_and_bounded(void **st)
{
    (void)st;
    nth_trace_tsc_test_offset = 0;
    setenv("NTH_TRACE_CLOCK", "tsc", 1);   /* whatever this CPU says */
    nth_trace_clock_start();
    unsetenv("NTH_TRACE_CLOCK");
    if (!nth_trace_clock_is_tsc())
        skip();   /* no TSC (not x86-64), or one that does not advance */
    const uint64_t tol = ONE_MS;
    uint64_t ticks_per_s = 0;
    {
        uint64_t m0 = mono(), t0 = nth_trace_tsc_read();
        sleep_ns(20 * ONE_MS);
        uint64_t m1 = mono(), t1 = nth_trace_tsc_read();
        ticks_per_s = (uint64_t)((double)(t1 - t0) * ONE_S / (double)(m1 - m0));
    }
    last = 0;
    stamps(10000, tol, "before any jump");
    assert_true(from_tsc());

    /* Backwards by 1 h: out of the window, clock_gettime at once. */
    nth_trace_tsc_test_offset = -(int64_t)(3600 * ticks_per_s);
    assert_false(from_tsc());
    stamps(10000, tol, "TSC 1 h back");
    nth_trace_clock_refine();   /* hard re-anchor: the TSC again */
    assert_true(from_tsc());
    stamps(10000, tol, "re-anchored after 1 h back");

    /* Forwards by 1 h: the same. */
    nth_trace_tsc_test_offset += (int64_t)(7200 * ticks_per_s);
    assert_false(from_tsc());
    stamps(10000, tol, "TSC 1 h forward");
    nth_trace_clock_refine();
    assert_true(from_tsc());
    stamps(10000, tol, "re-anchored after 1 h forward");

    /* Backwards by 50 ms, inside the window (the anchor is more than 50
     * ms old; when it is more than 2 s old, after a long preemption, the
     * read takes clock_gettime and the checks hold all the same): stamps
     * stay at this kernel thread's floor (late by up to 50 ms, never
     * back) until the re-anchoring puts the mapping back on
     * CLOCK_MONOTONIC. */
    nth_trace_clock_refine();
    sleep_ns(60 * ONE_MS);
    nth_trace_tsc_test_offset -= (int64_t)(ticks_per_s / 20);
    in_window_note(from_tsc(), "50 ms back");
    stamps(10000, 50 * ONE_MS + tol, "TSC 50 ms back");
    nth_trace_clock_refine();
    stamps(10000, tol, "re-anchored after 50 ms back");

    /* Forwards by 50 ms, inside the window: stamps up to 50 ms early until
     * the re-anchoring; then held at the floor (never back) until
     * CLOCK_MONOTONIC has passed it, within 1 ms of it after that. */
    sleep_ns(60 * ONE_MS);
    nth_trace_tsc_test_offset += (int64_t)(ticks_per_s / 20);
    in_window_note(from_tsc(), "50 ms forward");
    stamps(10000, 50 * ONE_MS + tol, "TSC 50 ms forward");
    nth_trace_clock_refine();
    assert_true(from_tsc());
    stamps(1000, 50 * ONE_MS + tol, "re-anchored after 50 ms forward");
    sleep_ns(60 * ONE_MS);
    stamps(10000, tol, "60 ms after the re-anchoring");
    nth_trace_tsc_test_offset = 0;
}

/* Two kernel threads whose TSCs disagree by 0.5 s (inside the window):
 * a nano-thread's last record on the one ahead, its next on the one
 * behind. */
struct hop {
    int64_t offset;
    uint64_t in, out;     /* floor handed in (0 = none); stamp handed out */
    int raise;
};

static void *hop_run(void *arg)
{
    struct hop *h = arg;
    nth_trace_tsc_test_offset = h->offset;
    if (h->raise)
        nth_trace_clock_raise(h->in);
    h->out = nth_trace_now();
    return NULL;
}

static uint64_t hop_on_new_thread(int64_t offset, uint64_t in, int raise)
{
    struct hop h = { offset, in, 0, raise };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hop_run, &h), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    return h.out;
}

static void track_hopping_between_kernel_threads(void **st)
{
    (void)st;
    nth_trace_tsc_test_offset = 0;
    setenv("NTH_TRACE_CLOCK", "tsc", 1);
    nth_trace_clock_start();
    unsetenv("NTH_TRACE_CLOCK");
    if (!nth_trace_clock_is_tsc())
        skip();
    uint64_t m0 = mono(), t0 = nth_trace_tsc_read();
    sleep_ns(20 * ONE_MS);
    uint64_t m1 = mono(), t1 = nth_trace_tsc_read();
    int64_t half_s = (int64_t)((double)(t1 - t0) * (ONE_S / 2) / (double)(m1 - m0));
    /* Without the hand-off the second stamp is ~0.5 s before the first
     * (unless creating a thread took longer): what the raise is for. */
    uint64_t ahead = hop_on_new_thread(half_s, 0, 0);
    uint64_t behind = hop_on_new_thread(0, 0, 0);
    printf("# without the hand-off: %+.3f ms\n", ((double)behind - (double)ahead) / 1e6);
    /* With it, the track goes on from where it was. */
    for (int i = 0; i < 100; i++) {
        uint64_t a = hop_on_new_thread(half_s, 0, 1);
        uint64_t b = hop_on_new_thread(0, a, 1);
        if (b < a)
            fail_msg("hop %d: %llu after %llu", i, (unsigned long long)b, (unsigned long long)a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(jumps_make_a_hard_reanchor),
        cmocka_unit_test(window_bounds_the_mapping),
        cmocka_unit_test(live_jumps_stay_monotonic_and_bounded),
        cmocka_unit_test(track_hopping_between_kernel_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
