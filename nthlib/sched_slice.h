/*
 * sched_slice.h -- ask the kernel for a short EEVDF time slice for the
 * calling thread. Header-only: shared by libnth (the cpumgr watcher) and the
 * cpumgr daemon, which links no libnth.
 *
 * Why: a thread that sleeps most of the time but must act on time (the
 * watcher's bounded-reclaim deadline, the daemon's answer to a request)
 * often wakes on a CPU that a computing thread keeps busy. Since Linux 6.6
 * (EEVDF) a woken thread with the default slice (0.75 ms x (1 + log2 CPUs),
 * 1.4 ms on 2 CPUs) may wait for the running thread's slice to end; since
 * 6.12 a thread with a shorter slice (sched_attr.sched_runtime of a
 * SCHED_OTHER thread) preempts it at once (PREEMPT_SHORT), and on recent
 * kernels the slice also shortens its group's entity, so it gets in ahead
 * of other sessions' threads. Its nice value and share of the CPU do not
 * change, and no privilege is needed. Measured on this project's 2-vCPU VM
 * at load 14 (bench/slice-wake, bench/RESULTS.md "cpumgr5"): a timer
 * wake-up on a CPU where a thread of the same process spins was late by
 * 2.5 ms at the median with the default slice, 60 us with 100 us.
 */
#ifndef NTH_SCHED_SLICE_H
#define NTH_SCHED_SLICE_H

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's smallest custom slice (it clamps to 0.1-100 ms). */
#define NTH_SHORT_SLICE_NS 100000u

struct nth_sched_attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
};

/* Give thread tid (0: the calling thread) a time slice of ns nanoseconds
 * (0: the kernel's default), keeping its policy (SCHED_OTHER or
 * SCHED_BATCH only) and nice value. Returns 0, or an errno value: ENOSYS
 * (no sched_setattr), EINVAL (another policy, or a kernel that refuses the
 * field), EPERM, ESRCH (no such thread). Before Linux 6.12 the kernel
 * ignores the slice (0 is returned; sched_getattr then reads another
 * runtime). Thread-safe; affects thread tid only. */
static inline int nth_sched_set_slice(int tid, uint64_t ns)
{
#if defined(SYS_sched_setattr) && defined(SYS_sched_getattr)
    struct nth_sched_attr a;
    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, tid, &a, (unsigned)sizeof a, 0) != 0)
        return errno;
    if (a.policy != SCHED_OTHER && a.policy != SCHED_BATCH)
        return EINVAL;
    a.size = sizeof a;
    a.flags = 0;
    a.runtime = ns;
    a.deadline = a.period = 0;
    return syscall(SYS_sched_setattr, tid, &a, 0) == 0 ? 0 : errno;
#else
    (void)tid;
    (void)ns;
    return ENOSYS;
#endif
}

/* The calling thread's slice: nth_sched_set_slice(0, ns). */
static inline int nth_sched_short_slice(uint64_t ns)
{
    return nth_sched_set_slice(0, ns);
}

/* The slice of thread tid (0: the caller) in ns, or 0 if unknown.
 * Thread-safe. For tests and diagnostics. */
static inline uint64_t nth_sched_slice_of(pid_t tid)
{
#if defined(SYS_sched_getattr)
    struct nth_sched_attr a;
    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, tid, &a, (unsigned)sizeof a, 0) != 0)
        return 0;
    return a.runtime;
#else
    (void)tid;
    return 0;
#endif
}

#endif
