/*
 * trace_clock.c -- the trace clock (trace_clock.h): the TSC mapped to
 * CLOCK_MONOTONIC ns, or clock_gettime itself.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#include "env_msg.h"
#endif
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include "libc_real.h"
#include "trace_clock.h"

struct nth_trace_clock_cur nth_trace_clock_cur;   /* trace_clock.h */
__thread uint64_t nth_trace_clock_floor __attribute__((tls_model("initial-exec")));
#ifdef NTH_TRACE_TSC_TEST_HOOK
__thread int64_t nth_trace_tsc_test_offset;
#endif
static uint64_t start_tsc, start_ns;      /* the calibration's first pair */

uint64_t nth_trace_clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t nth_trace_now(void)
{
    return nth_trace_now_inline();
}

int nth_trace_clock_is_tsc(void)
{
    return __atomic_load_n(&nth_trace_clock_cur.use_tsc, __ATOMIC_RELAXED);
}

/* A (TSC, CLOCK_MONOTONIC) pair: the best of 5 tries (the TSC reads closest
 * around the clock read), the TSC taken halfway. */
static void pair(uint64_t *tsc, uint64_t *mono)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t a = nth_trace_tsc_read(), m = nth_trace_clock_mono_ns(), b = nth_trace_tsc_read();
        if (b >= a && b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *mono = m;
        }
    }
}

static void publish(const struct nth_trace_cal *c)
{
    /* Release stores, no fence: none of them moves above the odd seq
     * store, and the even one moves above none of them. */
    uint32_t s = __atomic_load_n(&nth_trace_clock_cur.seq, __ATOMIC_RELAXED);
    __atomic_store_n(&nth_trace_clock_cur.seq, s + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&nth_trace_clock_cur.tsc0, c->tsc0, __ATOMIC_RELEASE);
    __atomic_store_n(&nth_trace_clock_cur.ns0, c->ns0, __ATOMIC_RELEASE);
    __atomic_store_n(&nth_trace_clock_cur.mult, c->mult, __ATOMIC_RELEASE);
    __atomic_store_n(&nth_trace_clock_cur.lo, c->lo, __ATOMIC_RELEASE);
    __atomic_store_n(&nth_trace_clock_cur.span, c->span, __ATOMIC_RELEASE);
    __atomic_store_n(&nth_trace_clock_cur.seq, s + 2, __ATOMIC_RELEASE);
}

/* ns -> ticks under slope mult (32.32 ns per tick), saturated. */
static uint64_t ticks_of(uint64_t ns, uint64_t mult)
{
    unsigned __int128 t = ((unsigned __int128)ns << 32) / (mult ? mult : 1);
    return t >> 62 ? (uint64_t)1 << 62 : (uint64_t)t;
}

struct nth_trace_cal nth_trace_cal_window(struct nth_trace_cal c)
{
    uint64_t before = ticks_of(NTH_TRACE_CAL_BEFORE_NS, c.mult);
    c.lo = c.tsc0 - before;   /* wraps near 0 ticks: covers() wraps the same way */
    c.span = before + ticks_of(NTH_TRACE_CAL_AFTER_NS, c.mult);
    return c;
}

struct nth_trace_cal nth_trace_cal_next(const struct nth_trace_cal *c, uint64_t *s_tsc, uint64_t *s_ns, uint64_t tsc,
                                        uint64_t mono)
{
    if (mono <= *s_ns || tsc == *s_tsc)
        return *c;
    int64_t err = (int64_t)(mono - nth_trace_cal_ns(c, tsc));
    if (tsc < *s_tsc || err > NTH_TRACE_CAL_JUMP_NS || err < -NTH_TRACE_CAL_JUMP_NS) {
        /* The TSC jumped (or the mapping is that far off): what it says
         * since the start pair means nothing; CLOCK_MONOTONIC does. */
        *s_tsc = tsc;
        *s_ns = mono;
        return nth_trace_cal_window((struct nth_trace_cal){ .tsc0 = tsc, .ns0 = mono, .mult = c->mult });
    }
    /* The long-run rate, 32.32 ns per tick. */
    unsigned __int128 rate = ((unsigned __int128)(mono - *s_ns) << 32) / (tsc - *s_tsc);
    /* Take back the drift over the next second: slope * (1 + err / 1 s),
     * the correction bounded to +-0.1 %. */
    const int64_t horizon = 1000000000, bound = horizon / 1000;
    if (err > bound)
        err = bound;
    if (err < -bound)
        err = -bound;
    unsigned __int128 mult = rate * (unsigned __int128)(horizon + err) / (unsigned __int128)horizon;
    if (mult == 0 || mult >> 63)
        return *c;
    return nth_trace_cal_window(
        (struct nth_trace_cal){ .tsc0 = tsc, .ns0 = nth_trace_cal_ns(c, tsc), .mult = (uint64_t)mult });
}

void nth_trace_clock_refine(void)
{
    if (!__atomic_load_n(&nth_trace_clock_cur.use_tsc, __ATOMIC_RELAXED))
        return;
    uint64_t tsc = 0, mono = 0;
    pair(&tsc, &mono);
    struct nth_trace_cal c = { __atomic_load_n(&nth_trace_clock_cur.tsc0, __ATOMIC_RELAXED),
                               __atomic_load_n(&nth_trace_clock_cur.ns0, __ATOMIC_RELAXED),
                               __atomic_load_n(&nth_trace_clock_cur.mult, __ATOMIC_RELAXED),
                               __atomic_load_n(&nth_trace_clock_cur.lo, __ATOMIC_RELAXED),
                               __atomic_load_n(&nth_trace_clock_cur.span, __ATOMIC_RELAXED) };
    struct nth_trace_cal n = nth_trace_cal_next(&c, &start_tsc, &start_ns, tsc, mono);
    if (n.tsc0 != c.tsc0)
        publish(&n);
}

/* 1 if the CPU says its TSC is invariant: constant rate whatever the
 * frequency, running in deep C-states (CPUID 0x80000007 EDX bit 8). */
static int cpu_tsc_invariant(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1;
#else
    return 0;
#endif
}

/* 1 if the kernel keeps CLOCK_MONOTONIC with the TSC. */
static int kernel_uses_tsc(void)
{
    char buf[32] = "";
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = nth_sys_read(fd, buf, sizeof buf - 1);   /* not the shim's read */
    close(fd);
    return n >= 3 && !strncmp(buf, "tsc", 3) && (n == 3 || buf[3] == '\n');
}

void nth_trace_clock_start(void)
{
    const char *env = getenv("NTH_TRACE_CLOCK");
    int want = 0;   /* 0 auto, 1 tsc, 2 monotonic */
    if (env && *env) {
        if (!strcmp(env, "tsc"))
            want = 1;
        else if (!strcmp(env, "monotonic"))
            want = 2;
        else if (strcmp(env, "auto")) {
#ifdef HAVE_CONFIG_H
            nth_env_bad("NTH_TRACE_CLOCK", env, "auto (the default), tsc or monotonic");
#endif
        }
    }
    __atomic_store_n(&nth_trace_clock_cur.use_tsc, 0, __ATOMIC_RELAXED);
    if (!NTH_TRACE_HAVE_TSC || want == 2 || (want == 0 && !kernel_uses_tsc() && !cpu_tsc_invariant()))
        return;
    uint64_t t2 = 0, m2 = 0;
    pair(&start_tsc, &start_ns);
    do
        pair(&t2, &m2);
    while (m2 >= start_ns && m2 - start_ns < 1000000u);
    if (t2 <= start_tsc || m2 <= start_ns)
        return;   /* a TSC that does not advance: keep clock_gettime */
    unsigned __int128 mult = ((unsigned __int128)(m2 - start_ns) << 32) / (t2 - start_tsc);
    /* 0.01 to 100 ns per tick (10 GHz to 10 MHz): else not a usable TSC. */
    if (mult < ((unsigned __int128)1 << 32) / 100 || mult > ((unsigned __int128)100 << 32))
        return;
    struct nth_trace_cal c = nth_trace_cal_window((struct nth_trace_cal){ .tsc0 = t2, .ns0 = m2, .mult = (uint64_t)mult });
    publish(&c);
    __atomic_store_n(&nth_trace_clock_cur.use_tsc, 1, __ATOMIC_RELEASE);
}
