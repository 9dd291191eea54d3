/*
 * trace_clock.h -- the trace clock: CLOCK_MONOTONIC nanoseconds, read from
 * the TSC where the kernel itself keeps time with it (internal to libnth).
 *
 * Why: every record reads the clock, and clock_gettime(CLOCK_MONOTONIC)
 * (vDSO) orders its TSC read (lfence/rdtscp), so it waits for every load
 * before it -- on the switch path, the cache misses of the other VP's
 * lines. An empty 2-member region with its ~16 records cost ~650 ns more
 * with that clock than with none (bench/RESULTS.md, "trov"). A plain rdtsc
 * does not wait; the records stay in CLOCK_MONOTONIC ns, so the binary file,
 * the converters and `merge` with other processes are unchanged.
 *
 * The mapping is ns = ns0 + (tsc - tsc0) * mult / 2^32: calibrated against
 * CLOCK_MONOTONIC for 1 ms when tracing starts, then re-anchored at every
 * flush tick (trace_writer.c's rescuer), continuous at the anchor, with a
 * slope that takes back the drift measured since the trace start over the
 * next second (at most 0.1 % faster or slower), so the trace clock never
 * jumps and stays within microseconds of CLOCK_MONOTONIC.
 */
#ifndef NTH_TRACE_CLOCK_H
#define NTH_TRACE_CLOCK_H

#include <stdint.h>
#include "trace_hooks.h"

/* One mapping from TSC ticks to ns. */
struct nth_trace_cal {
    uint64_t tsc0, ns0;
    uint64_t mult;             /* ns per tick, 32.32 fixed point */
};

/* ns of tick count tsc under c; a tsc before tsc0 (a read that ran ahead
 * of the anchor's publication) maps before ns0. Pure. */
static inline uint64_t nth_trace_cal_ns(const struct nth_trace_cal *c, uint64_t tsc)
{
    if (tsc >= c->tsc0)
        return c->ns0 + (uint64_t)(((unsigned __int128)(tsc - c->tsc0) * c->mult) >> 32);
    return c->ns0 - (uint64_t)(((unsigned __int128)(c->tsc0 - tsc) * c->mult) >> 32);
}

/* The next mapping, anchored at tick tsc where `cur` gives cur(tsc), so the
 * clock is continuous there. (start_tsc, start_ns) and (tsc, mono) are
 * (TSC, CLOCK_MONOTONIC) pairs taken at the trace start and now: the slope
 * is their long-run rate, sped up or slowed down to take back mono -
 * cur(tsc) over the next second, by at most 0.1 %. Returns cur unchanged
 * when the pairs make no sense (tsc not after start_tsc, mono not after
 * start_ns). Pure. */
NTH_HIDDEN struct nth_trace_cal nth_trace_cal_next(const struct nth_trace_cal *cur, uint64_t start_tsc,
                                                   uint64_t start_ns, uint64_t tsc, uint64_t mono);

#if defined(__x86_64__)
#include <x86intrin.h>
#define NTH_TRACE_HAVE_TSC 1
static inline uint64_t nth_trace_tsc_read(void) { return __rdtsc(); }
#else
#define NTH_TRACE_HAVE_TSC 0
static inline uint64_t nth_trace_tsc_read(void) { return 0; }
#endif

/* The mapping readers use, under a sequence count (odd while it changes),
 * and whether to use it (set once, before any record): one cache line,
 * written once per flush tick, read by every record. Internal to the
 * clock; visible here only for nth_trace_now_inline. */
struct nth_trace_clock_cur {
    uint32_t seq;
    int use_tsc;
    uint64_t tsc0, ns0, mult;
} __attribute__((aligned(64)));
NTH_HIDDEN extern struct nth_trace_clock_cur nth_trace_clock_cur;
NTH_HIDDEN uint64_t nth_trace_clock_mono_ns(void);

/* The TSC clock alone, for the record path's fast case: 1 and *ns set
 * (CLOCK_MONOTONIC ns) when the trace clock is the TSC, else 0 (the
 * caller then takes nth_trace_now()). Inlined: a call made every record
 * function save and restore six callee-saved registers (bench/RESULTS.md
 * "trace2"). Thread-safe, lock-free, async-signal-safe (the sequence count
 * retries, never waits on a lock). */
static inline int nth_trace_tsc_now(uint64_t *ns)
{
    struct nth_trace_clock_cur *c = &nth_trace_clock_cur;
    if (__builtin_expect(!__atomic_load_n(&c->use_tsc, __ATOMIC_ACQUIRE), 0))
        return 0;
    struct nth_trace_cal m;
    uint32_t s;
    /* Acquire loads, no fence (GCC's ThreadSanitizer rejects fences): the
     * second read of seq cannot move above them. Plain loads on x86-64. */
    do {
        s = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
        m.tsc0 = __atomic_load_n(&c->tsc0, __ATOMIC_ACQUIRE);
        m.ns0 = __atomic_load_n(&c->ns0, __ATOMIC_ACQUIRE);
        m.mult = __atomic_load_n(&c->mult, __ATOMIC_ACQUIRE);
    } while ((s & 1) || s != __atomic_load_n(&c->seq, __ATOMIC_RELAXED));
    *ns = nth_trace_cal_ns(&m, nth_trace_tsc_read());
    return 1;
}

/* nth_trace_now(), inlined (the record path's multi-record functions). */
static inline uint64_t nth_trace_now_inline(void)
{
    uint64_t ns;
    return nth_trace_tsc_now(&ns) ? ns : nth_trace_clock_mono_ns();
}

/* Choose the trace clock, when tracing starts: the TSC (calibrated for 1
 * ms, a busy wait) on x86-64 when the kernel's clock source is "tsc" --
 * the kernel has then checked that the TSC is invariant and synchronised
 * between CPUs -- unless NTH_TRACE_CLOCK says otherwise ("monotonic":
 * clock_gettime(CLOCK_MONOTONIC) for every record; "tsc": the TSC even
 * with another clock source, at the user's risk; "auto", the default). A
 * bad NTH_TRACE_CLOCK prints one line and keeps "auto". Not thread-safe:
 * called once by the trace start, before any record. */
NTH_HIDDEN void nth_trace_clock_start(void);

/* Re-anchor the TSC mapping (nothing with clock_gettime). Called by the
 * rescuer thread at each flush tick; one caller at a time. Readers
 * (nth_trace_now) never wait: they retry the few loads when an update
 * overlapped them. */
NTH_HIDDEN void nth_trace_clock_refine(void);

/* 1 if records take their time from the TSC. */
NTH_HIDDEN int nth_trace_clock_is_tsc(void);

#endif
