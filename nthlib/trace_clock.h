/*
 * trace_clock.h -- the trace clock: CLOCK_MONOTONIC nanoseconds, read from
 * the TSC wherever the CPU says it is invariant (internal to libnth).
 *
 * Why: every record reads the clock, and clock_gettime(CLOCK_MONOTONIC)
 * (vDSO) orders its TSC read (lfence/rdtscp), so it waits for every load
 * before it -- on the switch path, the cache misses of the other VP's
 * lines. An empty 2-member region with its ~16 records cost ~650 ns more
 * with that clock than with none (bench/RESULTS.md, "trov"). Where the
 * kernel keeps time with something else (kvm-clock: a guest booted with
 * tsc=unstable, as this project's VM), clock_gettime is no vDSO TSC read
 * but a pvclock read, ~24 ns a record: LU 1000 traced cost +0.99 % with
 * it, +0.53 % with the TSC (bench/RESULTS.md "trace9", issue 7). A plain
 * rdtsc does not wait; the records stay in CLOCK_MONOTONIC ns, so the
 * binary file, the converters and `merge` with other processes are
 * unchanged.
 *
 * The mapping is ns = ns0 + (tsc - tsc0) * mult / 2^32: calibrated against
 * CLOCK_MONOTONIC for 1 ms when tracing starts, then re-anchored at every
 * flush tick (trace_writer.c's rescuer), continuous at the anchor, with a
 * slope that takes back the drift measured since the trace start over the
 * next second (at most 0.1 % faster or slower), so the trace clock stays
 * within microseconds of CLOCK_MONOTONIC.
 *
 * Not trusting the TSC blindly (the kernel did not check it here): a TSC
 * that jumps -- a VM snapshot restored on another host, a migration, a
 * CPU whose TSC was written -- is caught twice. Each read uses the mapping
 * only within a window of its anchor (1 ms before it to 2 s after it,
 * re-anchoring comes every flush interval); outside it the read takes
 * clock_gettime. And a re-anchoring that finds the mapping more than 1 ms
 * off CLOCK_MONOTONIC (or the TSC behind the calibration's start) starts
 * over from the pair it just took (a hard re-anchor, the trace clock jumps
 * to CLOCK_MONOTONIC). The error of a stamp is thus bounded by the jump
 * and by the window. What a jump must never do is make a track go back
 * (issue 7): every kernel thread keeps a floor, the last time it stamped,
 * and never stamps below it; a nano-thread carries the time of its last
 * record in its descriptor to the VP that runs it next, which raises its
 * own floor to it (nth_trace_clock_raise): a nano-thread's track is its
 * own and may hop between VPs whose TSCs disagree.
 */
#ifndef NTH_TRACE_CLOCK_H
#define NTH_TRACE_CLOCK_H

#include <stdint.h>
#include "trace_hooks.h"

/* One mapping from TSC ticks to ns. */
struct nth_trace_cal {
    uint64_t tsc0, ns0;
    uint64_t mult;             /* ns per tick, 32.32 fixed point */
    uint64_t lo, span;         /* trusted for ticks lo .. lo + span */
};

/* The window around an anchor: reads from 1 ms before it (a read that ran
 * ahead of the anchor's publication, TSCs of two CPUs a little apart) to
 * 2 s after it (re-anchoring comes every NTH_TRACE_FLUSH_MS, 100 ms by
 * default; a longer interval leaves the reads past 2 s to clock_gettime). */
#define NTH_TRACE_CAL_BEFORE_NS 1000000ull
#define NTH_TRACE_CAL_AFTER_NS 2000000000ull
/* A re-anchoring that finds the mapping off by more than this starts over. */
#define NTH_TRACE_CAL_JUMP_NS 1000000ll

/* 1 if the mapping may be used for tick count tsc: one unsigned compare. Pure. */
static inline int nth_trace_cal_covers(const struct nth_trace_cal *c, uint64_t tsc)
{
    return tsc - c->lo <= c->span;
}

/* c with its window set around its anchor (tsc0, mult). Pure. */
NTH_HIDDEN struct nth_trace_cal nth_trace_cal_window(struct nth_trace_cal c);

/* ns of tick count tsc under c; a tsc before tsc0 (a read that ran ahead
 * of the anchor's publication) maps before ns0. Pure. */
static inline uint64_t nth_trace_cal_ns(const struct nth_trace_cal *c, uint64_t tsc)
{
    if (tsc >= c->tsc0)
        return c->ns0 + (uint64_t)(((unsigned __int128)(tsc - c->tsc0) * c->mult) >> 32);
    return c->ns0 - (uint64_t)(((unsigned __int128)(c->tsc0 - tsc) * c->mult) >> 32);
}

/* The next mapping, anchored at tick tsc where `cur` gives cur(tsc), so the
 * clock is continuous there. (*start_tsc, *start_ns) and (tsc, mono) are
 * (TSC, CLOCK_MONOTONIC) pairs taken at the trace start and now: the slope
 * is their long-run rate, sped up or slowed down to take back mono -
 * cur(tsc) over the next second, by at most 0.1 %. A jump -- cur(tsc) more
 * than NTH_TRACE_CAL_JUMP_NS off mono, or tsc before *start_tsc -- gives a
 * hard re-anchor instead: ns0 = mono at tsc0 = tsc, cur's slope, and
 * (tsc, mono) becomes the start pair. Returns cur unchanged when no tick
 * has passed since the start pair or CLOCK_MONOTONIC went back (nonsense).
 * The result's window is set (nth_trace_cal_window). Pure but for the
 * start pair it may replace. */
NTH_HIDDEN struct nth_trace_cal nth_trace_cal_next(const struct nth_trace_cal *cur, uint64_t *start_tsc,
                                                   uint64_t *start_ns, uint64_t tsc, uint64_t mono);

#if defined(__x86_64__)
#include <x86intrin.h>
#define NTH_TRACE_HAVE_TSC 1
#ifdef NTH_TRACE_TSC_TEST_HOOK
/* Tests only (tests/trace/test_trace_clock_jump.c builds the clock with
 * it): a TSC that jumps, per kernel thread, by what the test adds. */
extern __thread int64_t nth_trace_tsc_test_offset;
static inline uint64_t nth_trace_tsc_read(void) { return __rdtsc() + (uint64_t)nth_trace_tsc_test_offset; }
#else
static inline uint64_t nth_trace_tsc_read(void) { return __rdtsc(); }
#endif
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
    uint64_t tsc0, ns0, mult, lo, span;
} __attribute__((aligned(64)));
NTH_HIDDEN extern struct nth_trace_clock_cur nth_trace_clock_cur;
NTH_HIDDEN uint64_t nth_trace_clock_mono_ns(void);

/* The calling kernel thread's floor: its last stamp (trace_clock.h's top
 * comment). Initial-exec TLS, as trace_record.c's state: one %fs access. */
NTH_HIDDEN extern __thread uint64_t nth_trace_clock_floor __attribute__((tls_model("initial-exec")));

/* t, or the floor when t is below it; the floor follows. */
static inline uint64_t nth_trace_clock_clamp(uint64_t t)
{
    uint64_t f = nth_trace_clock_floor;
    if (__builtin_expect(t < f, 0))
        return f;
    nth_trace_clock_floor = t;
    return t;
}

/* A nano-thread whose last record was stamped `ns` (on whatever kernel
 * thread) is about to be recorded on the calling one: no stamp of this
 * kernel thread from now on is below ns, so its track never goes back.
 * Thread-safe (touches the caller's own floor); async-signal-safe. */
static inline void nth_trace_clock_raise(uint64_t ns)
{
    if (nth_trace_clock_floor < ns)
        nth_trace_clock_floor = ns;
}

/* The TSC clock alone, for the record path's fast case: 1 and *ns set
 * (CLOCK_MONOTONIC ns, never below the kernel thread's floor) when the
 * trace clock is the TSC and the tick count lies in the mapping's window,
 * else 0 (the caller then takes nth_trace_now(), which reads
 * clock_gettime). Inlined: a call made every record
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
        m.lo = __atomic_load_n(&c->lo, __ATOMIC_ACQUIRE);
        m.span = __atomic_load_n(&c->span, __ATOMIC_ACQUIRE);
    } while ((s & 1) || s != __atomic_load_n(&c->seq, __ATOMIC_RELAXED));
    uint64_t tsc = nth_trace_tsc_read();
    if (__builtin_expect(!nth_trace_cal_covers(&m, tsc), 0))
        return 0;
    *ns = nth_trace_clock_clamp(nth_trace_cal_ns(&m, tsc));
    return 1;
}

/* nth_trace_now(), inlined (the record path's multi-record functions). */
static inline uint64_t nth_trace_now_inline(void)
{
    uint64_t ns;
    return nth_trace_tsc_now(&ns) ? ns : nth_trace_clock_clamp(nth_trace_clock_mono_ns());
}

/* Choose the trace clock, when tracing starts: the TSC (calibrated for 1
 * ms, a busy wait) on x86-64 when the kernel's clock source is "tsc" (the
 * kernel has checked that the TSC is invariant and synchronised between
 * CPUs) or the CPU says its TSC is invariant (CPUID 0x80000007 EDX bit 8:
 * constant rate, running in every C-state; a KVM guest with kvm-clock
 * gets it from the host) -- the windows, hard re-anchors and floors above
 * keep what the kernel did not check bounded and the tracks monotonic --
 * unless NTH_TRACE_CLOCK says otherwise ("monotonic": clock_gettime
 * (CLOCK_MONOTONIC) for every record; "tsc": the TSC whatever the CPU
 * says, at the user's risk; "auto", the default). A bad NTH_TRACE_CLOCK
 * prints one line and keeps "auto". Not thread-safe: called once by the
 * trace start, before any record. */
NTH_HIDDEN void nth_trace_clock_start(void);

/* Re-anchor the TSC mapping (nothing with clock_gettime). Called by the
 * rescuer thread at each flush tick; one caller at a time. Readers
 * (nth_trace_now) never wait: they retry the few loads when an update
 * overlapped them. */
NTH_HIDDEN void nth_trace_clock_refine(void);

/* 1 if records take their time from the TSC. */
NTH_HIDDEN int nth_trace_clock_is_tsc(void);

#endif
