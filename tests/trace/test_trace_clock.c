/*
 * test_trace_clock.c -- the trace clock (nthlib/trace_clock.c): records are
 * stamped from the TSC where the kernel keeps time with it or the CPU says
 * it is invariant, mapped to CLOCK_MONOTONIC ns. Checked: the mapping's arithmetic (continuous at each
 * re-anchoring, drift taken back at a bounded rate, nonsense ignored), that
 * auto takes the TSC where the kernel or the CPU vouches for it, and
 * the live clock against CLOCK_MONOTONIC: every reading lies between the
 * CLOCK_MONOTONIC reads around it (give or take 1 ms of calibration error,
 * far above what 1 ms of calibration leaves) and never goes back on one
 * thread, also across re-anchorings. No timing is asserted: a preempted
 * reader only widens the bracket.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "trace_clock.h"

#define ONE_S 1000000000ull

static uint64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * ONE_S + (uint64_t)ts.tv_nsec;
}

/* 0.4 ns per tick (2.5 GHz), 32.32 fixed point. */
static const uint64_t MULT_04 = (uint64_t)(0.4 * 4294967296.0);

static void mapping_before_and_after_the_anchor(void **st)
{
    (void)st;
    struct nth_trace_cal c = { .tsc0 = 1000000, .ns0 = 5000000, .mult = MULT_04 };
    assert_int_equal(nth_trace_cal_ns(&c, 1000000), 5000000);
    assert_int_equal(nth_trace_cal_ns(&c, 1000000 + 2500), 5000000 + 999);   /* floor of 1000 - rounding */
    uint64_t before = nth_trace_cal_ns(&c, 1000000 - 2500);
    assert_true(before < 5000000 && before >= 5000000 - 1001);
    /* 100 s of ticks: no overflow of the 64-bit product. */
    uint64_t far = nth_trace_cal_ns(&c, 1000000 + 250000000000ull);
    assert_true(far > 5000000 + 99 * ONE_S && far < 5000000 + 101 * ONE_S);
}

static void reanchoring_is_continuous_and_bounded(void **st)
{
    (void)st;
    /* Start pair (0 ticks, 0 ns); the true rate 0.4 ns per tick; the
     * current mapping runs 0.01 % slow, so after 10 s it is 1 ms behind. */
    struct nth_trace_cal c = { .tsc0 = 0, .ns0 = 0, .mult = MULT_04 - MULT_04 / 10000 };
    uint64_t tsc = 25000000000ull, truth = 10 * ONE_S;
    uint64_t at = nth_trace_cal_ns(&c, tsc);
    assert_true(at < truth);
    uint64_t s_tsc = 0, s_ns = 0;
    struct nth_trace_cal n = nth_trace_cal_next(&c, &s_tsc, &s_ns, tsc, truth);
    assert_true(s_tsc == 0 && s_ns == 0);   /* no jump: the start pair stays */
    /* continuous where it is re-anchored */
    assert_int_equal(n.tsc0, tsc);
    assert_int_equal(n.ns0, at);
    /* behind: faster than the true rate, by at most 0.1 % */
    assert_true(n.mult > MULT_04);
    assert_true(n.mult <= MULT_04 + MULT_04 / 1000 + 1);
    /* a second later (by the ticks) it has caught up part of the lag and
     * not overshot by more than the bound allows */
    uint64_t later = nth_trace_cal_ns(&n, tsc + 2500000000ull);
    assert_true(later > at + ONE_S);
    assert_true(later <= truth + ONE_S + ONE_S / 1000);
    /* ahead: slower, bounded the same way */
    struct nth_trace_cal a = { .tsc0 = 0, .ns0 = 0, .mult = MULT_04 + MULT_04 / 10000 };
    struct nth_trace_cal m = nth_trace_cal_next(&a, &s_tsc, &s_ns, tsc, truth);
    assert_true(m.mult < MULT_04 && m.mult >= MULT_04 - MULT_04 / 1000 - 1);
    assert_int_equal(m.ns0, nth_trace_cal_ns(&a, tsc));
    /* pairs that make no sense leave the mapping as it was: no tick
     * since the start pair, CLOCK_MONOTONIC not after it */
    s_tsc = tsc;
    struct nth_trace_cal same = nth_trace_cal_next(&c, &s_tsc, &s_ns, tsc, truth);
    assert_memory_equal(&same, &c, sizeof c);
    s_tsc = 0;
    s_ns = truth;
    same = nth_trace_cal_next(&c, &s_tsc, &s_ns, tsc, truth);
    assert_memory_equal(&same, &c, sizeof c);
}

/* Reads of nth_trace_now() bracketed by CLOCK_MONOTONIC, re-anchoring
 * every `every` reads. */
static void bracket(int reads, int every)
{
    const uint64_t tol = 1000000;   /* 1 ms */
    uint64_t last = 0;
    for (int i = 0; i < reads; i++) {
        if (every && i % every == 0)
            nth_trace_clock_refine();
        uint64_t m1 = mono(), t = nth_trace_now(), m2 = mono();
        if (t + tol < m1 || t > m2 + tol)
            fail_msg("trace clock %llu outside [%llu, %llu] +- 1 ms at read %d", (unsigned long long)t,
                     (unsigned long long)m1, (unsigned long long)m2, i);
        if (t < last)
            fail_msg("trace clock went back: %llu after %llu at read %d", (unsigned long long)t,
                     (unsigned long long)last, i);
        last = t;
    }
}

/* 1 if /proc/cpuinfo's first "flags" line holds both words. */
static int cpu_flags(const char *a, const char *b)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    int found = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5))
            continue;
        int ha = 0, hb = 0;
        for (char *w = strtok(line + 5, " \t\n:"); w; w = strtok(NULL, " \t\n:")) {
            ha |= !strcmp(w, a);
            hb |= !strcmp(w, b);
        }
        found = ha && hb;
        break;
    }
    if (f)
        fclose(f);
    return found;
}

static void live_clock_follows_monotonic(void **st)
{
    (void)st;
    unsetenv("NTH_TRACE_CLOCK");
    nth_trace_clock_start();
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    char src[32] = "";
    if (f) {
        if (!fgets(src, sizeof src, f))
            src[0] = 0;
        fclose(f);
    }
#if defined(__x86_64__)
    /* The kernel keeps time with the TSC, or the CPU says its TSC is
     * invariant (Linux shows CPUID 0x80000007 EDX bit 8 as both flags):
     * so do the records. */
    if (!strcmp(src, "tsc\n") || cpu_flags("constant_tsc", "nonstop_tsc"))
        assert_true(nth_trace_clock_is_tsc());
#endif
    printf("# clock source %s# trace clock: %s\n", src[0] ? src : "(unknown)\n",
           nth_trace_clock_is_tsc() ? "TSC" : "clock_gettime");
    bracket(200000, 0);
    bracket(200000, 1000);   /* re-anchored 200 times */
}

static void monotonic_on_request(void **st)
{
    (void)st;
    setenv("NTH_TRACE_CLOCK", "monotonic", 1);
    nth_trace_clock_start();
    assert_false(nth_trace_clock_is_tsc());
    bracket(10000, 0);
    unsetenv("NTH_TRACE_CLOCK");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mapping_before_and_after_the_anchor),
        cmocka_unit_test(reanchoring_is_continuous_and_bounded),
        cmocka_unit_test(live_clock_follows_monotonic),
        cmocka_unit_test(monotonic_on_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
