/*
 * blocking.c -- nth_blocking_enter / nth_blocking_leave: a nano-thread about
 * to make a system call that may block in the kernel lends its VP's CPU and
 * ready queue to a stand-in kernel thread, so the VP's other nano-threads go
 * on running while it sits in the kernel (DESIGN invariant 4).
 *
 * This is Go's syscall hand-off (runtime.entersyscall / exitsyscall and
 * sysmon's retake), made lazy: enter only marks the VP as being in a system
 * call (vp->blocking) and lends the VP at once if something is ready for it;
 * anything made ready for it later lends it then (nth_sched_enqueue), and
 * leave takes it back by moving the VP's switch counter, which ends the
 * stand-in's lease at its next scheduling point. A call that does not block,
 * with nothing else ready, costs a store, a fence and a few loads: no kernel
 * thread is woken. The caller never leaves its kernel thread, so its errno
 * and any address of it the compiler cached stay right.
 *
 * The stand-in is the stall watchdog's (watchdog.c): bound to the VP's CPU,
 * which the VP's kernel thread does not use while it sleeps in the kernel;
 * it runs the VP's local and the global ready nano-threads as a VP-less
 * runner, so they see nth_vp_id() == -1 until they come back to a VP.
 *
 * Between enter and leave the nano-thread makes plain system calls and libc
 * calls only: no other nthlib call but nth_self(), nth_vp_id() (-1 there)
 * and nth_to_rq().
 */
#include <errno.h>
#include "internal.h"
#include "trace_core.h"

nth_blocking_timers_fn nth_blocking_timers;

int nth_blocking_enter(void)
{
    struct nth_vp *vp = nth_vp_self();
    if (vp && vp->id < 0)
        return nth_blocking_handoff();
    nth_ensure_started();         /* main becomes a nano-thread on VP 0 */
    vp = nth_vp_self();
    if (!vp)
        return 0;                 /* a plain kernel thread: no VP to lend */
    if (__atomic_load_n(&vp->blocking, __ATOMIC_RELAXED))
        return EBUSY;             /* already entered */
    int e = errno;
    nth_trace_rt_blocking_enter(vp->current);
    /* Dekker with nth_sched_enqueue: we publish blocking, then look at the
     * queues; an enqueuer publishes its node, then reads blocking. */
    __atomic_store_n(&vp->blocking, 1, __ATOMIC_SEQ_CST);
    nth_full_fence();
    /* Nobody fires this VP's alarms while its kernel thread is in the
     * call (a nano-thread sleeping in it, or timed out of a condvar, would
     * wait for the call to return, forever if that waits for it): they
     * move to the shared queue. A VP gets a queue on the program's first
     * timer, so without timers this is the one load. */
    if (__atomic_load_n((void **)&vp->timerq, __ATOMIC_ACQUIRE))
        __atomic_load_n(&nth_blocking_timers, __ATOMIC_ACQUIRE)(vp);
    if (__atomic_load_n(&vp->next_local, __ATOMIC_SEQ_CST) || !nth_rq_empty(&vp->rq) ||
        !nth_rq_empty(&nth_rt.grq)) {
        if (nth_standin_lend(vp)) {
            /* No stand-in: the call will hold the VP (correct, slower). */
            __atomic_store_n(&vp->blocking, 0, __ATOMIC_SEQ_CST);
            nth_trace_rt_blocking_leave(vp->current);
            errno = e;
            return EAGAIN;
        }
    }
    errno = e;
    return 0;
}

int nth_blocking_handoff(void)
{
    struct nth_vp *vp = nth_vp_self();
    if (!vp || vp->id >= 0)
        return 0;                 /* not on a stand-in */
    /* The call then holds only this kernel thread, whose lease ends at the
     * nano-thread's next scheduling point (nth_standin_handoff). */
    int e = errno;
    int r = nth_standin_handoff(vp);
    errno = e;
    return r;
}

int nth_on_standin(void)
{
    struct nth_vp *vp = nth_vp_self();
    /* A stand-in's shell VP has id -1 (watchdog.c); its idle context is
     * the stand-in's own loop, which is no nano-thread. */
    return vp && vp->id < 0 && !(vp->current->flags & NTH_TF_IDLE);
}

int nth_blocking_leave(void)
{
    struct nth_vp *vp = nth_vp_self();
    if (!vp || vp->id < 0 || !__atomic_load_n(&vp->blocking, __ATOMIC_RELAXED)) {
        /* A stand-in's call counted as idle too (cpumgr_rt.c). */
        nth_dormant_check();
        return 0;                 /* enter was a no-op, or no enter */
    }
    int e = errno;
    __atomic_store_n(&vp->blocking, 0, __ATOMIC_SEQ_CST);
    /* The call that returned may be what a dormant application waited
     * for (cpumgr_rt.c): it wants its CPUs back now. Dekker with the
     * watcher, which sets nth_dormant, fences, then reads blocking: one
     * load when not dormant. */
    nth_dormant_check();
    /* Ends a stand-in's lease: it stops once the nano-thread it runs
     * reaches a scheduling point (watchdog.c, still_stalled). */
    __atomic_add_fetch(&vp->nswitch, 1, __ATOMIC_RELEASE);
    nth_trace_rt_blocking_leave(vp->current);
    errno = e;
    return 0;
}
