/*
 * cpumgr_reclaim.h -- bounded reclaim's two decisions (internal), pure
 * functions so that they are tested by table (tests/cpumgr/test_client):
 * from when a CPU taken away counts its budget, and which VP's kernel
 * thread must be moved off a CPU no longer ours.
 *
 * The bound (issue 5, DESIGN invariant 2): a CPU taken from this
 * application is free for its new owner within NTH_RECLAIM_US of the
 * request that took it, even when the nano-thread running there never
 * reaches a scheduling point.
 */
#ifndef NTH_CPUMGR_RECLAIM_H
#define NTH_CPUMGR_RECLAIM_H

#include <stdint.h>

/* Start of the reclaim budget (CLOCK_MONOTONIC ns) of what an assignment
 * noticed at now_ns took away. budget_ns is the new owner's request date
 * and grant_ns the daemon's publication date, both from the slot (0 =
 * unknown); reclaim_ns the budget. The request date counts while the
 * budget has not run out at the notice: the daemon's wake-up and pass are
 * part of the new owner's wait. A notice later than that (a watcher or VP
 * waiting for a CPU) keeps the publication date: restarting the budget at
 * the notice gave the thread up to a whole budget more, after the
 * daemon's own enforcement (bench/RESULTS.md "flake": 9 of 94 late
 * reclaims, 2.2-19.6 ms), so the move is due at once instead. A
 * publication date after now or more than NTH_RECLAIM_STALE_NS old is no
 * date for this change (a clock mix-up, or the assignment read again at a
 * re-attach): the notice counts. Pure; any thread. */
#define NTH_RECLAIM_STALE_NS (1000LL * 1000000LL) /* 1 s */
static inline int64_t nth_cpumgr_budget_start(int64_t now_ns, int64_t budget_ns,
                                              int64_t grant_ns, int64_t reclaim_ns)
{
    if (budget_ns > 0 && budget_ns <= now_ns && now_ns - budget_ns < reclaim_ns)
        return budget_ns;
    if (grant_ns > 0 && grant_ns <= now_ns && now_ns - grant_ns < NTH_RECLAIM_STALE_NS)
        return grant_ns;
    return now_ns;
}

/* Must a VP's kernel thread leave the CPU it is on? What the runtime knows
 * of it: disabled (its CPU taken away), parked (asleep: it left by
 * itself), cpu (the CPU it is to run on, vp->cpu), bound_cpu1 (the CPU
 * its kernel thread bound itself to + 1, 0 = unknown, vp->bound_cpu1),
 * bound_ours (that CPU is still assigned to us), self (the caller runs on
 * that VP's kernel thread: it is at a scheduling point and rebinds
 * itself). Returns NTH_OVERSTAY_NONE, NTH_OVERSTAY_DISABLED (no CPU of
 * its own: move it onto the CPUs we still own) or NTH_OVERSTAY_REBIND
 * (given another CPU, its kernel thread still bound to one taken away,
 * its rebind pending until a scheduling point it may never reach: move it
 * to its own CPU). The second case was left to the daemon's enforcement
 * pass (2 ms): a VP disabled by the take, by vp->cpu, had parked, while
 * the nano-thread that never yields ran on this one (bench/RESULTS.md
 * "flake", 5 of 94 late reclaims at 2.3 ms). Pure; any thread. */
enum { NTH_OVERSTAY_NONE = 0, NTH_OVERSTAY_DISABLED = 1, NTH_OVERSTAY_REBIND = 2 };
static inline int nth_cpumgr_overstays(int disabled, int parked, int cpu, int bound_cpu1,
                                       int bound_ours, int self)
{
    if (disabled)
        return parked ? NTH_OVERSTAY_NONE : NTH_OVERSTAY_DISABLED;
    if (parked || self)
        return NTH_OVERSTAY_NONE;
    if (cpu >= 0 && bound_cpu1 > 0 && bound_cpu1 != cpu + 1 && !bound_ours)
        return NTH_OVERSTAY_REBIND;
    return NTH_OVERSTAY_NONE;
}

#endif
