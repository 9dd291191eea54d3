/*
 * idle.c -- the idle loop of a VP: spin NTH_SPIN_US looking for work, then
 * park on the VP's futex (DESIGN invariant 3: an idle application burns no
 * CPU). Runs in the VP's idle context (its own small stack), never on a
 * nano-thread's stack: a blocked nano-thread may be resumed by another VP
 * as soon as it is switched out, so nobody may linger on its stack.
 *
 * Lost wake-ups are avoided Dekker-style: the parker clears its futex word,
 * publishes itself in nparked, then re-checks every queue; an enqueuer
 * publishes its node, then reads nparked (nth_sched_enqueue). A disabled VP
 * (its CPU taken away) hands its ready nano-threads to the global queue and
 * parks until nth_vps_set_allowed() gives it a CPU again.
 */
#include "internal.h"
#include "cpumgr_probe.h"
#include <time.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void nth_vp_drain_local(struct nth_vp *vp)
{
    struct nth_thread *t = nth_next_local_take(&vp->next_local);
    if (t)
        nth_sched_enqueue(NULL, t);
    /* Until empty, not until a pop fails: a pop gives up on a node whose
     * enqueuer is still linking it, and a disabled VP parks for good. */
    while (!nth_rq_empty(&vp->rq)) {
        if ((t = nth_rq_pop(&vp->rq)) != NULL)
            nth_sched_enqueue(NULL, t);
        else
            nth_cpu_relax();
    }
}

static int any_work(struct nth_vp *vp)
{
    if (!nth_rq_empty(&vp->rq) || !nth_rq_empty(&nth_rt.grq))
        return 1;
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_rq *q = &nth_rt.vps[i]->rq;
        if (!nth_rq_empty(q) ||
            __atomic_load_n(&nth_rt.vps[i]->next_local, __ATOMIC_RELAXED))
            return 1;
    }
    return 0;
}

static void park(struct nth_vp *vp, int was_spinning)
{
    __atomic_store_n(&vp->park_word, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&vp->parked, 1, __ATOMIC_SEQ_CST);
    /* The last VP to park starts the cpumgr watcher's idle clock
     * (dormancy, issue 5): a kick only while attached and not dormant. */
    if (__atomic_fetch_add(&nth_rt.nparked, 1, __ATOMIC_SEQ_CST) + 1 ==
        __atomic_load_n(&nth_rt.nvps, __ATOMIC_RELAXED))
        nth_dormant_all_parked();
    if (was_spinning)
        __atomic_fetch_sub(&nth_rt.nspinning, 1, __ATOMIC_SEQ_CST);
    nth_full_fence();
    /* The switch-in hook sees the idle context before it sleeps (the
     * pthread shim blocks signals there), loaded after the fence: Dekker
     * with nth_switch_hook_set, which stores the hook, then wakes a parked
     * VP through park_word. A hook loaded before our clear of park_word
     * (as the idle loop did) could be set just after that load and its
     * wake-up land before the clear: the CAS found park_word 1 (our last
     * wake-up) or a VP not yet asleep, and the clear erased it, so the VP
     * slept on with the mask its idle context had before the hook -- under
     * the shim the process's start-up mask, which took process-directed
     * signals every nano-thread blocked (posix-signals died of SIGRTMIN
     * about 1 run in 5 at load 20). Now either we see the hook here, or
     * its CAS comes after our clear and ends the wait below. */
    nth_switch_hook_fn h = __atomic_load_n(&nth_switch_hook, __ATOMIC_SEQ_CST);
    if (h) {
        h(NULL);
        __atomic_store_n(&vp->hook_seen, h, __ATOMIC_RELEASE);
    }
    /* The last exit may have missed main's exit (or main the last exit):
     * after this fence, one of the VPs parking last sees both. */
    if (__builtin_expect(__atomic_load_n(&nth_rt.main_exited, __ATOMIC_SEQ_CST), 0))
        nth_exit_if_last();
    int disabled = __atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE);
    if (disabled || !any_work(vp)) {
        int64_t timeout = -1;
        nth_idle_timeout_fn f = __atomic_load_n(&nth_idle_timeout, __ATOMIC_ACQUIRE);
        /* A disabled VP parks until it is enabled again, but the callback
         * still sees it: alarms left in its timer queue must reach a VP
         * that will fire them, even one already parked without a timeout. */
        if (f) {
            int64_t t = f(vp);
            if (!disabled)
                timeout = t;
        }
        const struct nth_park_ops *ops = __atomic_load_n(&nth_park_ops, __ATOMIC_ACQUIRE);
        /* A lazy VP (vp.c: never given a CPU, unbound) sleeps on its own
         * word, which only enable() wakes: on the slot's word every
         * assignment change of the application woke it, and each wake-up
         * of an unbound thread may place it on another CPU (perf: VP 1
         * moved 13-16 times per --short run, against 2-8 bound). */
        if (disabled && ops && !__atomic_load_n(&vp->lazy, __ATOMIC_ACQUIRE))
            ops->wait(vp);
        else if (timeout != 0)
            nth_futex_wait(&vp->park_word, 0, timeout);
        if (disabled)
            nth_cpumgr_stamp(&nth_cpumgr_probe.unpark_ns);
    }
    __atomic_store_n(&vp->parked, 0, __ATOMIC_SEQ_CST);
    /* Activity for the cpumgr watcher's idle clock (dormancy, issue 5). */
    __atomic_add_fetch(&nth_unparks, 1, __ATOMIC_RELAXED);
    int was_parked = __atomic_fetch_sub(&nth_rt.nparked, 1, __ATOMIC_SEQ_CST);
    /* A running VP may stall: watch it again -- but a VP given a CPU back
     * (it parked disabled) while another VP runs leaves a dozing monitor
     * asleep. The monitor sleeps for good only while every VP is parked,
     * and the first VP out of that state wakes it (was_parked == nvps);
     * otherwise it dozes, woken by the enqueues that wake idle VPs and at
     * DOZE_NS, as after a yield. The wake was a system call (~20 us on
     * this VM) and a helper thread woken onto the CPU just granted, on
     * every cpumgr grant: bench/RESULTS.md "realloc". */
    if (!disabled || was_parked >= __atomic_load_n(&nth_rt.nvps, __ATOMIC_ACQUIRE))
        nth_watchdog_unparked();
    if (disabled)
        nth_cpumgr_stamp(&nth_cpumgr_probe.wd_ns);
}

void nth_idle_loop(struct nth_vp *vp)
{
    for (;;) {
        if (__atomic_load_n(&vp->rebind, __ATOMIC_ACQUIRE) &&
            !__atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE)) {
            /* Not while disabled: nth_vp_rebind_if_due() says why. */
            __atomic_store_n(&vp->rebind, 0, __ATOMIC_RELAXED);
            nth_vp_bind(vp);
            nth_cpumgr_stamp(&nth_cpumgr_probe.bound_ns);
        }
        struct nth_thread *d = vp->deferred;
        if (d) {
            /* Handed over by nth_sched_switch: wait here for its context. */
            vp->deferred = NULL;
            if (!__atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE)) {
                nth_sched_switch(vp, d, NTH_PS_NONE);
                continue;
            }
            while (__atomic_load_n(&d->on_cpu, __ATOMIC_ACQUIRE))
                nth_cpu_relax();
            nth_sched_enqueue(NULL, d);
        }
        if (__atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE)) {
            nth_vp_drain_local(vp);
            park(vp, 0);           /* calls the switch-in hook first */
            continue;
        }
        nth_sched_point(vp, NTH_SP_IDLE);
        struct nth_thread *t = nth_sched_pick(vp);
        if (t) {
            nth_sched_switch(vp, t, NTH_PS_NONE);
            continue;
        }
        __atomic_fetch_add(&nth_rt.nspinning, 1, __ATOMIC_SEQ_CST);
        /* After a team member, as libgomp's idle team threads do: a VP
         * parked between two regions costs the next one a futex wake-up
         * of an idle vCPU (tens of µs on a virtual machine). */
        int64_t spin = nth_rt.spin_ns;
        if (vp->team_linger) {
            vp->team_linger = 0;
            if (nth_rt.team_spin_ns > spin)
                spin = nth_rt.team_spin_ns;
        }
        int64_t until = now_ns() + spin;
        nth__team_door_open(vp);
        do {
            nth_cpu_relax();
            if (__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED))
                break;
            nth__team_door_poll(vp);
            t = nth_sched_pick(vp);
        } while (!t && now_ns() < until);
        if (nth__team_door_close(vp) && !t && !__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED))
            t = nth_sched_pick(vp);   /* the worker just queued here */
        if (t) {
            __atomic_fetch_sub(&nth_rt.nspinning, 1, __ATOMIC_SEQ_CST);
            nth_sched_switch(vp, t, NTH_PS_NONE);
            continue;
        }
        park(vp, 1);               /* calls the switch-in hook first */
    }
}

/* Entry of an idle context that has its own stack (VP 0's). */
void nth_idle_entry(void *arg)
{
    struct nth_vp *vp = arg;
    nth_ctx_first_run(vp);
    nth_idle_loop(vp);
}
