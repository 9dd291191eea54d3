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
