/*
 * cpumgr_rt.c -- the cpumgr client inside the running runtime: the assigned
 * CPU set drives the VPs, and a small watcher thread keeps the contract with
 * the daemon when no VP can (all busy, or all parked).
 *
 *  - Assignment -> VPs: the client's callback calls nth_vps_set_allowed();
 *    an empty set (the daemon rotates CPUs among more applications than it
 *    has) disables every VP, so each parks at its next scheduling point and
 *    its ready nano-threads wait on the global queue (DESIGN invariant 2).
 *  - Scheduling points: a hook does nth_cpumgr_poll(), one atomic load when
 *    nothing changed, and learns each VP's kernel thread id. It is added at
 *    the first attach: a VP already inside a long nano-thread then has no
 *    known tid until its next scheduling point and cannot be moved before.
 *  - Watcher: one kernel thread from libc's real pthread_create (the pthread
 *    shim will interpose pthread_create; the watcher must stay a kernel
 *    thread). It sleeps on the slot's epoch word, which the daemon wakes
 *    (shared futex), or at most TICK_NS; then it ticks the client (daemon
 *    death -> alone on the affinity mask, daemon back -> re-attach,
 *    DESIGN invariant 8) and enforces bounded reclaim. It stays on the CPU
 *    it was born on, VP 0's (see watcher()).
 *  - Bounded reclaim: a VP disabled for reclaim_us that has not parked runs
 *    a nano-thread that does not reach a scheduling point. Its kernel thread
 *    is rebound (sched_setaffinity on its tid, through hwloc) onto the CPUs
 *    the application still owns, so the CPU's new owner has it at once; it
 *    stays there, parked, until the VP gets a CPU again, and binds to that
 *    one then (enable()'s rebind, or note_vps() if it is still running). No signal reaches user code. With no CPU
 *    left at all there is nowhere to move it: it stays until it yields.
 *    A VP the daemon's --enforce moved instead (we were late, or ignore
 *    the contract) is bound back by the watcher when it has its CPU
 *    again and still reaches no scheduling point (restore_if_due()).
 *  - Dormancy (issue 5, DESIGN invariant 3): every VP idle with nothing
 *    queued for DORMANT_NS, and no real deadline within it, the watcher
 *    tells the daemon the application needs no CPU now (the slot's dormant
 *    word: no CPU, no turn in the rotation, nothing billed). Idle is
 *    parked, or in a blocking call (nth_blocking_enter: read() on an empty
 *    pipe, accept, poll, waitpid under the pthread shim) with no stand-in
 *    running for the VP: that kernel thread uses no CPU either. A real
 *    deadline is an alarm's, except for the slices of a longer wait
 *    (nth_wait_slices: the shim's 10 ms slices of a timed condvar wait or
 *    a sleep, which only look for cancellation and signals), counted at
 *    that wait's end; while dormant the slices do not fire (a parked VP
 *    sleeps to the real deadline, the backstop leaves the shared queue).
 *    Dormancy ends when work is queued (nth_dormant_check() on the
 *    enqueue path kicks the watcher), when a blocking call returns
 *    (nth_blocking_leave), when a new signal is pending on the process
 *    (every kernel thread blocks it until a nano-thread's slice ends:
 *    sigpending() here), or DORMANT_LEAD_NS before the earliest real
 *    deadline, which the watcher sleeps until: the app asks for its CPUs
 *    again and the daemon answers at once. Then the slices due fire, and
 *    the app stays a requester until a VP has had a CPU (D.hold). A call
 *    that returns meanwhile runs its nano-thread on its VP's kernel
 *    thread, on a CPU now another's, to its next scheduling point, where
 *    the disabled VP parks (as a bounded reclaim would make it). Without
 *    dormancy, apps that only sleep held the rotation: 8 sleeping 1 s took
 *    6.5 s on 2 CPUs (notes f13t); shim programs waiting in read() or a
 *    timed wait were billed 0.6-0.7 CPU-s per second (bench/RESULTS.md
 *    "Dormancy under the pthread shim").
 */
#include "internal.h"
#include "libc_real.h"
#include "cpumgr_client.h"
#include "cpumgr_probe.h"
#include "cpumgr_reclaim.h"
#include "cpumgr_wait.h"
#include "sched_slice.h"
#include "timer_queue.h"
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TICK_NS (10 * 1000000LL) /* client tick: daemon death seen within ~3 periods anyway */
/* Every VP parked with nothing queued this long, and no alarm due within
 * it: dormant. Short against the daemon's quantum (100 ms) and a sleeper's
 * sleeps: at 10 ms (plus the watcher's 10 ms tick) eight apps sleeping
 * 50 ms at a time each held a CPU ~30% of the time, enough to keep 2 CPUs
 * rotating. Each dormancy costs two daemon passes, so an app with work
 * every millisecond or so stays a requester. */
#define DORMANT_NS (2 * 1000000LL)
/* Ask for the CPUs again this long before the earliest alarm, so the
 * daemon's answer (a pass, a VP woken) is in by its deadline. */
#define DORMANT_LEAD_NS (1000000LL)
/* The longest a newcomer's start waits for the daemon's first answer. Its
 * pass takes well under a millisecond on a quiet machine; the bound covers
 * a loaded one, and is short against a process's life in a mix (LU 1000:
 * ~200 ms) and against the daemon's --exit-grace that keeps a CPU for it. */
#define FIRST_ANSWER_WAIT_NS (20 * 1000000LL)
/* Moves whose cost sets the margin: the largest of 32 is about their p97,
 * so about 1 move in 30 may be late by a little, not 1 in 2. */
#define COST_WINDOW 32

struct vp_state {
    int tid;            /* kernel thread id, 0 until seen (atomic) */
    uint32_t *word;     /* slot word it sleeps on while disabled (atomic) */
    int64_t since;      /* ns when found disabled and not parked; 0 = not pending */
    int moved;          /* bound off its CPU by bounded reclaim */
    /* Enabled again after it overstayed disabled (its clock ran, we did
     * not move it): ns when the watcher looks at its kernel thread's mask
     * if it has reached no scheduling point by then; 0 = nothing to look
     * at. The daemon (cpumgr --enforce) may have bound it elsewhere, and
     * its own rebind waits for a scheduling point (restore_binding()). */
    int64_t check_due;
    /* Its kernel thread's slice (wake_slice_*): 0 the default, -1 short
     * and parked disabled, > 0 short since that CLOCK_MONOTONIC ns (it
     * left the park). Written by the VP's own thread, and by note_vps()
     * (R.lock) when it restores a spinning VP's slice. Atomic. */
    int64_t short_since;
};

static struct {
    nth_futex_lock_t lock;   /* serialises the callback's and the watcher's passes */
    int64_t reclaim_ns;
    hwloc_bitmap_t assigned; /* last set from the client */
    struct vp_state *vps;
    int kick;                /* futex word: the callback wakes the watcher (private) */
    int running;
    int hooked;              /* on_sched_point registered (atomic) */
    int stop, stopped;       /* at exit: the watcher leaves the segment first */
    unsigned long nreclaims; /* atomic */
    unsigned long nrebinds;  /* of which moves of an enabled VP bound
                                to a CPU taken away (atomic) */
    int64_t cost_ns;         /* margin a move starts before its deadline:
                                the largest due-to-moved time of the
                                last COST_WINDOW moves (their ~p97) */
    int64_t costs[COST_WINDOW]; /* those times, a ring (R.lock) */
    unsigned ncosts;
    /* The last move's reclaim clock start and the time it was due
     * (CLOCK_MONOTONIC ns, 0 before any move; R.lock): what a test checks
     * the margin on, the plan rather than when a loaded machine let the
     * watcher carry it out. */
    int64_t last_since, last_due;
    /* Which VP it moved, and how (NTH_CPUMGR_MOVE_*): a test tells the
     * move it watched from another one. R.lock. */
    int last_vp, last_path;
    int no_reclaim;          /* test hook NTH_TEST_NO_RECLAIM: the client
                                ignores the contract (the daemon enforces) */
    /* Lazy VPs (vp.c) held back: 1 until the daemon's first answer, during
     * which the standalone set reaches VP 0's CPU only; ends also when the
     * attach fails or the daemon goes (we run alone: every CPU). Client
     * lock (the callback's). */
    int hold;
    int followed;            /* the daemon's first answer with a CPU was
                                seen (VP 0 followed it, nth_vp0_follow_grant);
                                client lock */
    int attach_tried;        /* nth_cpumgr_rt_start's attach is done */
    int dormancy_on;         /* the watcher watches for idleness (attached);
                                atomic */
} R;

struct nth_cpumgr_probe nth_cpumgr_probe;

int nth_dormant;
unsigned long nth_unparks;

/* The watcher's dormancy state (watcher thread only, but for nents). */
static struct {
    int64_t idle_since;      /* ns when first seen idle, 0 = not idle */
    unsigned long unparks;   /* nth_unparks then */
    /* Dormancy just ended, or a new signal was seen pending (new_signal):
     * none again until a VP has had a CPU and left its park since
     * (hold_enabled, then nth_unparks moved from hold_unparks). The slices
     * that came due while dormant (a cancellation or a signal to look
     * for) fire when the VPs have their CPUs back; before the daemon's
     * answer every VP is still parked and disabled, so without the hold
     * the watcher went dormant again at once and a pthread_cancel waited
     * for the wait's real deadline. Not nth_unparks alone: a disabled VP
     * leaves its park at each change of the slot's word, and parks again. */
    int hold;
    int hold_enabled;
    unsigned long hold_unparks;
    int published;           /* what the slot says (client_set_dormant) */
    unsigned long nents;     /* dormancies begun (atomic; tests) */
} D;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int gettid_(void) { return (int)syscall(SYS_gettid); }

static void bind_tid(int tid, hwloc_const_bitmap_t set)
{
    if (tid > 0 && set && !hwloc_bitmap_iszero(set))
        (void)hwloc_set_proc_cpubind(nth_rt.topo, (hwloc_pid_t)tid, set, HWLOC_CPUBIND_THREAD);
}

/* Wake the watcher. It sleeps on this private word and on the segment's
 * shared assignment word at once (nth_cpumgr_wait2), so a kick made between
 * its checks and its sleep is seen by the kernel's comparison, not lost. */
static void kick_watcher(void)
{
    __atomic_add_fetch(&R.kick, 1, __ATOMIC_RELEASE);
    nth_futex_wake(&R.kick, 1);
}

/* A short slice across a disabled park: the VP's kernel thread takes
 * NTH_SHORT_SLICE_NS before it sleeps, so that the wake-up of a grant
 * preempts whatever runs on the CPU granted (EEVDF PREEMPT_SHORT, Linux
 * 6.12) -- usually the releaser, still leaving the CPU, whose own timer
 * wake-ups otherwise took the CPU back between the grant and the first
 * nano-thread (bench/RESULTS.md "realloc2"). The default slice comes back
 * WAKE_SLICE_HOLD_NS after the wake-up, at the first scheduling point
 * (on_sched_point), or, for a VP whose nano-thread reaches none, when it
 * loses its CPU (note_vps): with the short slice kept, the watcher (100 us
 * as well) no longer preempted a spinning VP at its reclaim deadline
 * (reclaims over 1.1 ms 7 -> 25 of 360, bench/RESULTS.md "realloc"). */
#define WAKE_SLICE_HOLD_NS 1000000LL

/* Set thread tid's (0: the caller's) slice, ns = 0 for the default.
 * Returns 0 or an errno value (nth_sched_set_slice's). */
static int slice_set(int tid, uint64_t ns)
{
    return nth_sched_set_slice(tid, ns);
}

/* Before a disabled park (the VP's own thread): the short slice, once. */
static void wake_slice_park(struct vp_state *s)
{
    int64_t ss = __atomic_load_n(&s->short_since, __ATOMIC_ACQUIRE);
    if (ss == 0 && slice_set(0, NTH_SHORT_SLICE_NS) != 0)
        return; /* a kernel or policy without it: nothing to restore */
    __atomic_store_n(&s->short_since, -1, __ATOMIC_RELEASE);
}

/* Out of the park: the hold starts. */
static void wake_slice_woke(struct vp_state *s)
{
    int64_t m1 = -1;
    (void)__atomic_compare_exchange_n(&s->short_since, &m1, now_ns(), 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED);
}

/* At a scheduling point: the default slice back once the hold is over.
 * One load while the slice is the default. */
static void wake_slice_check(struct vp_state *s)
{
    int64_t ss = __atomic_load_n(&s->short_since, __ATOMIC_RELAXED);
    if (__builtin_expect(ss <= 0, 1) || now_ns() - ss < WAKE_SLICE_HOLD_NS)
        return;
    if (__atomic_compare_exchange_n(&s->short_since, &ss, 0, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED))
        (void)slice_set(0, 0);
}

void nth_dormant_end(void)
{
    /* Any thread, any context (a signal handler, the assignment
     * callback): a flag and a futex wake, the watcher does the rest. */
    if (__atomic_exchange_n(&nth_dormant, 0, __ATOMIC_SEQ_CST))
        kick_watcher();
}

void nth_dormant_all_parked(void)
{
    /* The watcher starts its clock now rather than at its next tick (up
     * to TICK_NS later, 5 times DORMANT_NS). */
    if (__atomic_load_n(&R.dormancy_on, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&nth_dormant, __ATOMIC_RELAXED))
        kick_watcher();
}

/* Every VP idle and nothing queued anywhere: only alarms, sleeps,
 * blocked calls or waits are pending. A VP is idle when parked, or when
 * its nano-thread sits in a blocking call (nth_blocking_enter: read() on
 * an empty pipe, waitpid, poll) and no stand-in runs its queue: its
 * kernel thread then uses no CPU either. When the call returns,
 * nth_blocking_leave ends dormancy; until the CPUs come back the
 * nano-thread runs on its VP's kernel thread to its next scheduling
 * point, where the disabled VP parks, as after a reclaim. A VP in a call
 * nobody wrapped (neither parked nor blocking) is busy. */
static int all_idle(void)
{
    if (!nth_rq_empty(&nth_rt.grq))
        return 0;
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_vp *vp = nth_rt.vps[i];
        if (!nth_rq_empty(&vp->rq) || __atomic_load_n(&vp->next_local, __ATOMIC_SEQ_CST))
            return 0;
        if (__atomic_load_n(&vp->parked, __ATOMIC_SEQ_CST))
            continue;
        if (!__atomic_load_n(&vp->blocking, __ATOMIC_SEQ_CST) || nth_standin_serving(vp))
            return 0;
    }
    return 1;
}

static int all_parked(void)
{
    return __atomic_load_n(&nth_rt.nparked, __ATOMIC_SEQ_CST) >= nth_rt.nvps;
}

/* A signal pending on the process that no kernel thread takes: every VP's
 * idle context blocks all signals (the pthread shim's nano-threads take
 * them when they resume, at a slice's end), and so does this watcher, so
 * sigpending() here shows the process-directed ones. Dormant, no slice
 * ends: a new one must end dormancy. Only signals not pending at the
 * last look count, so one that every nano-thread blocks for good does not
 * keep the application from dormancy. Watcher thread only. */
static sigset_t sig_seen;

static int new_signal(void)
{
    sigset_t p;
    if (sigpending(&p) != 0)
        return 0;
    int fresh = 0;
    for (int s = 1; s < NSIG; s++)
        if (sigismember(&p, s) == 1 && sigismember(&sig_seen, s) != 1)
            fresh = 1;
    sig_seen = p;
    return fresh;
}

static void hold_start(void)
{
    D.hold = 1;
    D.hold_enabled = 0;
}

static void hold_check(void)
{
    if (!D.hold_enabled) {
        for (int i = 0; i < nth_rt.nvps; i++)
            if (!__atomic_load_n(&nth_rt.vps[i]->disabled, __ATOMIC_SEQ_CST)) {
                D.hold_enabled = 1;
                D.hold_unparks = __atomic_load_n(&nth_unparks, __ATOMIC_SEQ_CST);
                break;
            }
        /* Enabled and running already (not parked): it has left its park. */
        if (D.hold_enabled && !all_parked())
            D.hold = 0;
        return;
    }
    if (__atomic_load_n(&nth_unparks, __ATOMIC_SEQ_CST) != D.hold_unparks || !all_parked())
        D.hold = 0;
}

/* The watcher's dormancy step at t (attached). Returns when it must look
 * again (ns; INT64_MAX: its tick will do). */
static int64_t dormancy(int64_t t)
{
    int64_t next = INT64_MAX;
    int d = __atomic_load_n(&nth_dormant, __ATOMIC_SEQ_CST);
    /* Slices of longer waits (nth_wait_slices) count at their wait's end:
     * the pthread shim cuts every long wait into 10 ms slices. */
    uint64_t tm = nth_timers_earliest_real();
    int64_t alarm = tm == NTH_TQ_NONE || tm > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)tm;
    int sig = new_signal();
    if (sig)
        hold_start();
    else if (D.hold)
        hold_check();
    if (d) {
        /* The enqueue hook ends it for queued work, nth_blocking_leave for
         * a call that returned; this is the alarm, a new signal, and the
         * net for a VP that found work some other way. */
        if (!all_idle() || sig || alarm - DORMANT_LEAD_NS <= t) {
            __atomic_store_n(&nth_dormant, 0, __ATOMIC_SEQ_CST);
            d = 0;
        } else if (alarm != INT64_MAX) {
            next = alarm - DORMANT_LEAD_NS;
        }
    } else if (D.hold || !all_idle()) {
        D.idle_since = 0;
    } else {
        unsigned long u = __atomic_load_n(&nth_unparks, __ATOMIC_SEQ_CST);
        if (!D.idle_since || u != D.unparks) {
            D.idle_since = t;
            D.unparks = u;
        }
        if (t - D.idle_since < DORMANT_NS) {
            next = D.idle_since + DORMANT_NS;
        } else if (alarm - DORMANT_NS > t) {
            /* Dekker with nth_sched_enqueue (it queues, fences, then reads
             * nth_dormant): either it sees the flag and kicks us, or we
             * see its work here. */
            __atomic_store_n(&nth_dormant, 1, __ATOMIC_SEQ_CST);
            nth_full_fence();
            if (all_idle() && __atomic_load_n(&nth_unparks, __ATOMIC_SEQ_CST) == u) {
                d = 1;
                if (alarm != INT64_MAX)
                    next = alarm - DORMANT_LEAD_NS;
            } else {
                __atomic_store_n(&nth_dormant, 0, __ATOMIC_SEQ_CST);
                D.idle_since = 0;
            }
        }
    }
    if (d != D.published) {
        if (d)
            __atomic_add_fetch(&D.nents, 1, __ATOMIC_RELAXED);
        D.published = d;
        (void)nth_cpumgr_client_set_dormant(d);
        D.idle_since = 0;
        if (!d) {
            hold_start();
            nth_dormancy_ended();   /* parked VPs, the backstop's shared queue */
        }
    }
    return next;
}

/* Every VP disabled: the empty assignment. Same steps as the shrinking half
 * of nth_vps_set_allowed(), which refuses an empty set. */
static void disable_all(void)
{
    nth_futex_lock(&nth_rt.vps_lock);
    for (int i = 0; i < nth_rt.nvps; i++)
        __atomic_store_n(&nth_rt.vps[i]->disabled, 1, __ATOMIC_SEQ_CST);
    nth_futex_unlock(&nth_rt.vps_lock);
}

/* Is vp, enabled, still bound to a CPU no longer ours, its rebind to
 * vp->cpu pending (cpumgr_reclaim.h, NTH_OVERSTAY_REBIND)? A VP running
 * the caller is at a scheduling point: it rebinds itself. R.lock held. */
static int stale_binding(struct nth_vp *vp, int watcher)
{
    int b1 = __atomic_load_n(&vp->bound_cpu1, __ATOMIC_ACQUIRE);
    int ours = b1 > 0 && hwloc_bitmap_isset(R.assigned, (unsigned)(b1 - 1));
    return nth_cpumgr_overstays(0, __atomic_load_n(&vp->parked, __ATOMIC_ACQUIRE),
                                __atomic_load_n(&vp->cpu, __ATOMIC_RELAXED), b1, ours,
                                !watcher && vp == nth_vp_self()) == NTH_OVERSTAY_REBIND;
}

/* vp, whose state is s, is enabled: its reclaim clock stops. If it ran
 * and we did not move the VP, it may have run on past the daemon's
 * --enforce, which then bound its kernel thread to our other CPUs; a
 * nano-thread that never reaches a scheduling point would keep it there,
 * and the CPU given back idle, for good. The watcher looks at its mask
 * once, NTH_RECLAIM_US from now, unless it has rebound itself by then
 * (restore_binding()). Not at once: nearly every VP disabled while it ran
 * has parked since (its wake-up rebinds it), and this may run on the
 * grant's path. No kick either: the watcher's next tick is soon enough
 * for a CPU of our own. R.lock held. */
static void note_enabled(struct vp_state *s)
{
    if (s->since && !s->moved && !s->check_due)
        s->check_due = now_ns() + R.reclaim_ns;
    s->since = 0;
}

/* Bookkeeping after a change, R.lock held: start the reclaim clock of newly
 * disabled VPs; give a moved VP that has its CPU again its binding back.
 * Returns nonzero if a clock started (the watcher has a new deadline). */
static int note_vps(int64_t t)
{
    int started = 0;
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_vp *vp = nth_rt.vps[i];
        struct vp_state *s = &R.vps[i];
        if (__atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE)) {
            /* Never given a CPU: it runs no nano-thread and parks at its
             * first turn, wherever the kernel started it; moving it would
             * be the migration its lazy birth saved. */
            if (__atomic_load_n(&vp->lazy, __ATOMIC_ACQUIRE))
                continue;
            if (!s->since && !__atomic_load_n(&vp->parked, __ATOMIC_ACQUIRE)) {
                s->since = t;
                started = 1;
                /* Its nano-thread may reach no scheduling point (bounded
                 * reclaim): its slice must be the default again for the
                 * watcher to preempt it at the deadline. */
                int64_t ss = __atomic_load_n(&s->short_since, __ATOMIC_ACQUIRE);
                int tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
                /* tid 0 (not seen yet) would name the caller's own slice. */
                if (ss > 0 && tid > 0 &&
                    __atomic_compare_exchange_n(&s->short_since, &ss, 0, 0, __ATOMIC_ACQ_REL,
                                                __ATOMIC_RELAXED))
                    (void)slice_set(tid, 0);
            } else if (!s->since) {
                s->since = t;
            }
            continue;
        }
        if (s->moved) {
            s->since = 0;
            s->moved = 0;
            if (nth_rt.cfg.bind && vp->cpu >= 0) {
                hwloc_bitmap_t one = hwloc_bitmap_alloc();
                if (one) {
                    hwloc_bitmap_only(one, (unsigned)vp->cpu);
                    bind_tid(__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE), one);
                    __atomic_store_n(&vp->bound_cpu1, 0, __ATOMIC_RELEASE);
                    hwloc_bitmap_free(one);
                }
            }
        }
        /* Enabled on another CPU while its kernel thread, bound to one
         * taken away, has not reached the scheduling point that rebinds
         * it: it overstays there as a disabled VP would. */
        if (stale_binding(vp, 0)) {
            if (!s->since) {
                s->since = t;
                started = 1;
            }
            continue;
        }
        /* Its clock ran and we did not move it: it may have run on past
         * the daemon's --enforce, which then bound its kernel thread to
         * our other CPUs. A nano-thread that never reaches a scheduling
         * point would keep it there (and our CPU idle) for good; the
         * watcher looks at its mask once, NTH_RECLAIM_US from now, unless
         * it has rebound itself by then. Not now: nearly every VP disabled
         * while running has parked since, and this runs on the grant's
         * path. No kick: its next tick (TICK_NS) is soon enough. */
        note_enabled(s);
    }
    return started;
}

/* While held (R.hold): the part of cpus that VP 0 has, or NULL to apply
 * cpus as it is. Client lock held. */
static hwloc_bitmap_t held_set(hwloc_const_bitmap_t cpus)
{
    if (!__atomic_load_n(&R.hold, __ATOMIC_RELAXED))
        return NULL;
    if (nth_cpumgr_client_answered() ||
        (__atomic_load_n(&R.attach_tried, __ATOMIC_ACQUIRE) && !nth_cpumgr_client_attached())) {
        __atomic_store_n(&R.hold, 0, __ATOMIC_RELAXED); /* the daemon's word, or alone: all */
        return NULL;
    }
    int c0 = nth_rt.nvps > 0 ? __atomic_load_n(&nth_rt.vps[0]->cpu, __ATOMIC_RELAXED) : -1;
    if (c0 < 0 || !hwloc_bitmap_isset(cpus, (unsigned)c0))
        return NULL;
    hwloc_bitmap_t one = hwloc_bitmap_alloc();
    if (one)
        hwloc_bitmap_only(one, (unsigned)c0);
    return one;
}

/* At exit (stop_watcher ran, R.stop): the client, alone once its slot is
 * freed, gives us the standalone set (go_alone_at_exit), so that an exit
 * handler run after it finds an enabled VP (test_exit_with_no_cpu). When an
 * enabled VP keeps a CPU of cpus, only those CPUs: every other one would go
 * to a lazy VP, whose first CPU binds its sleeping kernel thread and wakes
 * it -- a migration at every exit of a process that never used that VP
 * (14 of 18 migrations of an lu+sor+lu run, bench/RESULTS.md "mix2").
 * NULL: apply cpus as it is. Client lock held. */
static hwloc_bitmap_t exit_set(hwloc_const_bitmap_t cpus)
{
    if (!__atomic_load_n(&R.stop, __ATOMIC_ACQUIRE))
        return NULL;
    hwloc_bitmap_t keep = hwloc_bitmap_alloc();
    for (int i = 0; keep && i < nth_rt.nvps; i++) {
        struct nth_vp *vp = nth_rt.vps[i];
        int c = __atomic_load_n(&vp->cpu, __ATOMIC_RELAXED);
        if (!__atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE) && c >= 0 &&
            hwloc_bitmap_isset(cpus, (unsigned)c))
            hwloc_bitmap_set(keep, (unsigned)c);
    }
    if (keep && hwloc_bitmap_iszero(keep)) {
        hwloc_bitmap_free(keep);
        keep = NULL;
    }
    return keep;
}

/* The client's assignment callback (client lock held). */
static void on_assign(hwloc_const_bitmap_t all, void *arg)
{
    (void)arg;
    /* The first answer: VP 0, busy with main's serial start-up, moves to a
     * granted CPU at once rather than being disabled under it (then moved
     * by bounded reclaim, and back when its CPU returned). */
    if (!R.followed && nth_cpumgr_client_answered() && !hwloc_bitmap_iszero(all)) {
        R.followed = 1;
        (void)nth_vp0_follow_grant(all);
    }
    hwloc_bitmap_t held = held_set(all);
    if (!held)
        held = exit_set(all);
    hwloc_const_bitmap_t cpus = held ? held : all;
    if (hwloc_bitmap_iszero(cpus) || nth_vps_set_allowed(cpus) == EINVAL)
        disable_all(); /* no CPU of ours (EINVAL: none in our topology) */
    nth_futex_lock(&R.lock);
    hwloc_bitmap_copy(R.assigned, cpus);
    /* The reclaim budget runs from the new owner's request (budget_ns): by
     * the time we see it, part of it is spent (the daemon's wake-up and
     * pass, ours). */
    int64_t t = now_ns();
    int started = note_vps(nth_cpumgr_budget_start(t, (int64_t)nth_cpumgr_budget_ns(),
                                                   (int64_t)nth_cpumgr_grant_ns(), R.reclaim_ns));
    nth_futex_unlock(&R.lock);
    /* Only a new reclaim deadline needs the watcher now (the daemon wakes
     * it at every grant anyway): each wake is a system call on the path of
     * the thread that noticed, often the VP about to use a granted CPU. */
    if (started || !nth_cpumgr_client_attached())
        kick_watcher();
    hwloc_bitmap_free(held);
}

/* Bit of vp in the slot word's futex bitset: a local enable wakes that VP
 * only; the daemon's plain FUTEX_WAKE matches every bit. */
static uint32_t vp_bit(const struct nth_vp *vp) { return 1u << ((unsigned)vp->id % 32u); }

/* Disabled park while attached (nth_park_ops). Lost wake-ups: the word is
 * recorded, then read, then `disabled` and the pending assignment are
 * checked (all seq_cst); enable() clears `disabled` before it reads the
 * recorded word and bumps it, the daemon publishes before it bumps. */
static void park_wait(struct nth_vp *vp)
{
    uint32_t *w = __atomic_load_n(&nth_cpumgr_vp_word, __ATOMIC_ACQUIRE);
    if (!w || !R.vps || vp->id < 0) {
        nth_futex_wait(&vp->park_word, 0, -1);
        return;
    }
    struct vp_state *s = &R.vps[vp->id];
    wake_slice_park(s);
    __atomic_store_n(&s->word, w, __ATOMIC_SEQ_CST);
    /* Detached since (detach_words(), the client's exit handler): it
     * cleared the words it saw and woke their sleepers; this one it may
     * have missed, so take it back and let the idle loop park us on our
     * own word. Our store-then-check of the word against its
     * NULL-then-exchange: one of the two sees the other (seq_cst). */
    if (__atomic_load_n(&nth_cpumgr_vp_word, __ATOMIC_SEQ_CST) != w) {
        uint32_t *mine = w;
        __atomic_compare_exchange_n(&s->word, &mine, NULL, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED);
        wake_slice_woke(s);
        return;
    }
    uint32_t v = __atomic_load_n(w, __ATOMIC_SEQ_CST);
    /* A grant published already, or a CPU handed to us by its releaser
     * before we read the word: take it ourselves (it may enable us). */
    if (nth_cpumgr_refresh_handoff()) {
        wake_slice_woke(s);
        return;
    }
    const uint32_t *aw = __atomic_load_n(&nth_cpumgr_watch, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&vp->disabled, __ATOMIC_SEQ_CST) &&
        !__atomic_load_n(&vp->park_word, __ATOMIC_SEQ_CST) &&
        __atomic_load_n(aw, __ATOMIC_ACQUIRE) ==
            __atomic_load_n(&nth_cpumgr_watch_seen, __ATOMIC_RELAXED))
        /* Shared futex: the daemon, another process, wakes it. */
        syscall(SYS_futex, w, FUTEX_WAIT_BITSET, v, NULL, NULL, vp_bit(vp));
    if (__builtin_expect(__atomic_load_n(&nth_cpumgr_probe.on, __ATOMIC_RELAXED), 0)) {
        __atomic_store_n(&nth_cpumgr_probe.vp_woke_cpu, sched_getcpu(), __ATOMIC_RELAXED);
        nth_cpumgr_stamp(&nth_cpumgr_probe.vp_woke_ns);
    }
    wake_slice_woke(s);
    /* Woken by a grant or a hand-off: read it on this thread, no other
     * hop (a hand-off bumps no word the poll watches). */
    nth_cpumgr_refresh_handoff();
}

static void park_wake(struct nth_vp *vp)
{
    if (!R.vps || vp->id < 0)
        return;
    uint32_t *w = __atomic_load_n(&R.vps[vp->id].word, __ATOMIC_SEQ_CST);
    if (!w)
        return;
    __atomic_add_fetch(w, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, w, FUTEX_WAKE_BITSET, INT_MAX, NULL, NULL, vp_bit(vp));
}

static const struct nth_park_ops park_ops = { park_wait, park_wake };

/* The client's detach hook (nth_cpumgr_set_detach_hook), run from its exit
 * handler once nth_cpumgr_vp_word is NULL: no VP keeps a slot word, and a
 * VP asleep on one is woken to park on its own word (park_wait, the word
 * NULL), where enable() and nth_switch_hook_set() reach it. Without it a
 * later exit handler waking a disabled VP (the pthread shim's first
 * sleep installs its switch hook) wrote through the recorded word into
 * the segment the client had unmapped: SIGSEGV (fresh14, issue 4/5). The
 * bump moves the futex word so a sleeper about to wait sees it changed. */
static void detach_words(void)
{
    if (!R.vps)
        return;
    for (int i = 0; i < nth_rt.nvps; i++) {
        uint32_t *w = __atomic_exchange_n(&R.vps[i].word, NULL, __ATOMIC_SEQ_CST);
        if (!w)
            continue;
        __atomic_add_fetch(w, 1, __ATOMIC_SEQ_CST);
        syscall(SYS_futex, w, FUTEX_WAKE_BITSET, INT_MAX, NULL, NULL,
                1u << ((unsigned)i % 32u));
    }
}

static void on_sched_point(struct nth_vp *vp, int where)
{
    (void)where;
    if (!R.vps || vp->id < 0)
        return;   /* a watchdog stand-in's shell VP */
    struct vp_state *s = &R.vps[vp->id];
    if (!__atomic_load_n(&s->tid, __ATOMIC_RELAXED))
        __atomic_store_n(&s->tid, gettid_(), __ATOMIC_RELEASE);
    wake_slice_check(s);
    /* Nano-threads a disabled VP left on the global queue need nothing
     * here: nth_sched_pick gives the global queue its turn. */
    nth_cpumgr_poll();
}

/* The scheduling-point hook matters only under a daemon (alone, the
 * assignment changes only through calls that apply it themselves), so it
 * is added at the first attach and kept: hook slots are few. */
static void hook_if_attached(void)
{
    if (!__atomic_load_n(&R.hooked, __ATOMIC_ACQUIRE) && nth_cpumgr_client_attached() &&
        nth_sched_hook_add(on_sched_point) == 0)
        __atomic_store_n(&R.hooked, 1, __ATOMIC_RELEASE);
}

/* Record what a move cost, from the moment it was due (the watcher's
 * futex timeout is late by the wake-up of a vCPU, its preemption of the
 * spinner, sched_setaffinity waiting for the thread to leave the CPU), and
 * set the margin to the largest of the last COST_WINDOW: the deadline is a
 * bound (DESIGN: free for its new owner within NTH_RECLAIM_US), so the
 * margin covers the slow moves, not the typical one -- with a mean or a
 * median, every other move would be late. Capped at half the
 * budget: one move stalled for milliseconds (a preempted watcher) must not
 * turn a 1 ms budget into none. R.lock held. */
static void note_move_cost(int64_t late)
{
    if (late < 0)
        late = 0;
    R.costs[R.ncosts++ % COST_WINDOW] = late;
    unsigned n = R.ncosts < COST_WINDOW ? R.ncosts : COST_WINDOW;
    int64_t m = 0;
    for (unsigned i = 0; i < n; i++)
        if (R.costs[i] > m)
            m = R.costs[i];
    /* Until the window is full, never below the first guess (the cap):
     * a few fast moves are no measure of the slow ones. */
    if (R.ncosts < COST_WINDOW && m < R.cost_ns)
        m = R.cost_ns;
    R.cost_ns = m < R.reclaim_ns / 2 ? m : R.reclaim_ns / 2;
}

/* A VP's CPU as the watcher may read it: enable() writes it from the VP's
 * own kernel thread at any time. */
static inline int vp_cpu(const struct nth_vp *vp) { return __atomic_load_n(&vp->cpu, __ATOMIC_RELAXED); }

/* The look note_enabled() asked for, due at s->check_due: a VP enabled
 * again, not parked since, whose rebind is still pending (no scheduling
 * point) gets its kernel thread bound to its CPU if its mask is anything
 * else -- the daemon's enforcement bound it to the CPUs we had left
 * (cpumgr(8) --enforce). One sched_getaffinity, and a move only when the
 * daemon moved it. The VP's own pending rebind then runs too (bound_cpu1
 * 0). Not with NTH_BIND=none, where VPs have no CPU of their own to go
 * back to. R.lock held; *next gets the deadline while it is pending. */
static void restore_if_due(struct nth_vp *vp, struct vp_state *s, int64_t t, int64_t *next)
{
    if (!s->check_due)
        return;
    if (__atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&vp->parked, __ATOMIC_ACQUIRE) ||
        !__atomic_load_n(&vp->rebind, __ATOMIC_ACQUIRE)) {
        s->check_due = 0; /* it parks or rebinds itself */
        return;
    }
    if (t < s->check_due) {
        if (s->check_due < *next)
            *next = s->check_due;
        return;
    }
    s->check_due = 0;
    int tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE), c = vp_cpu(vp);
    if (!nth_rt.cfg.bind || tid <= 0 || c < 0)
        return;
    hwloc_bitmap_t have = hwloc_bitmap_alloc(), one = hwloc_bitmap_alloc();
    if (have && one) {
        hwloc_bitmap_only(one, (unsigned)c);
        if (hwloc_get_proc_cpubind(nth_rt.topo, (hwloc_pid_t)tid, have, HWLOC_CPUBIND_THREAD) == 0 &&
            !hwloc_bitmap_isequal(have, one)) {
            bind_tid(tid, one);
            __atomic_store_n(&vp->bound_cpu1, 0, __ATOMIC_RELEASE);
        }
    }
    hwloc_bitmap_free(have);
    hwloc_bitmap_free(one);
}

/* Move the kernel threads of VPs that overstayed on a CPU taken away (and
 * bind back those the daemon moved, restore_if_due()). Returns the next
 * pending deadline (CLOCK_MONOTONIC ns), or t + TICK_NS. */
static int64_t reclaim_pass(void)
{
    int64_t t = now_ns(), next = t + TICK_NS;
    nth_futex_lock(&R.lock);
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_vp *vp = nth_rt.vps[i];
        struct vp_state *s = &R.vps[i];
        int dis = __atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE);
        int stale = !dis && s->since && !s->moved && stale_binding(vp, 1);
        restore_if_due(vp, s, t, &next);
        if (!dis && !stale)
            note_enabled(s); /* it rebound itself, or has its CPU back */
        if (!stale && (!s->since || s->moved || !dis)) {
            if (__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED))
                nth_cpumgr_probe_skip(s->moved ? NTH_PROBE_SKIP_MOVED : NTH_PROBE_SKIP_NO_CLOCK, 0, i,
                                      vp_cpu(vp));
            continue;
        }
        if (__atomic_load_n(&vp->parked, __ATOMIC_ACQUIRE)) {
            nth_cpumgr_probe_skip(NTH_PROBE_SKIP_PARKED, 0, i, vp_cpu(vp));
            continue; /* it left by itself */
        }
        /* Start the move early by what a move has cost lately (the
         * futex timeout's lateness plus sched_setaffinity, which returns
         * once the thread is off the CPU), so the CPU is free on time. */
        int64_t due = s->since + R.reclaim_ns - R.cost_ns;
        if (t < due) {
            nth_cpumgr_probe_skip(NTH_PROBE_SKIP_NOT_DUE, due - t, i, vp_cpu(vp));
            if (due < next)
                next = due;
            continue;
        }
        if (stale) {
            /* To its own CPU, where its pending rebind would put it. */
            int c = vp_cpu(vp);
            hwloc_bitmap_t one = hwloc_bitmap_alloc();
            if (R.no_reclaim || !one || c < 0) {
                hwloc_bitmap_free(one);
                continue;
            }
            hwloc_bitmap_only(one, (unsigned)c);
            nth_cpumgr_stamp(&nth_cpumgr_probe.move_ns);
            bind_tid(__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE), one);
            nth_cpumgr_stamp(&nth_cpumgr_probe.moved_ns);
            hwloc_bitmap_free(one);
            /* Its own rebind still runs (a system call, at its next
             * scheduling point): what bound it is not known to it. */
            __atomic_store_n(&vp->bound_cpu1, 0, __ATOMIC_RELEASE);
            R.last_since = s->since;
            R.last_due = due;
            R.last_vp = i;
            R.last_path = NTH_CPUMGR_MOVE_STALE;
            s->since = 0;
            note_move_cost(now_ns() - due);
            __atomic_add_fetch(&R.nreclaims, 1, __ATOMIC_RELAXED);
            __atomic_add_fetch(&R.nrebinds, 1, __ATOMIC_RELAXED);
            continue;
        }
        if (hwloc_bitmap_iszero(R.assigned)) {
            nth_cpumgr_probe_skip(NTH_PROBE_SKIP_NOWHERE, 0, i, vp_cpu(vp));
            continue; /* nowhere to go: it stays until its next scheduling point */
        }
        /* Bind first, then ask for the VP's own binding back: it is
         * carried out only once the VP is enabled again (a disabled VP
         * that bound itself back would park on the CPU just taken, one
         * more migration), and if that happens while we bind, note_vps()
         * runs after us (R.lock) and binds it to its CPU. */
        if (R.no_reclaim)
            continue;
        nth_cpumgr_stamp(&nth_cpumgr_probe.move_ns);
        if (__atomic_load_n(&nth_cpumgr_probe.on, __ATOMIC_RELAXED))
            __atomic_store_n(&nth_cpumgr_probe.move_cpu, sched_getcpu(), __ATOMIC_RELAXED);
        bind_tid(__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE), R.assigned);
        nth_cpumgr_stamp(&nth_cpumgr_probe.moved_ns);
        /* Before the rebind request: its rebind must not be skipped. */
        __atomic_store_n(&vp->bound_cpu1, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&vp->rebind, 1, __ATOMIC_RELEASE);
        s->moved = 1;
        R.last_since = s->since;
        R.last_due = due;
        R.last_vp = i;
        R.last_path = NTH_CPUMGR_MOVE_DISABLED;
        note_move_cost(now_ns() - due);
        __atomic_add_fetch(&R.nreclaims, 1, __ATOMIC_RELAXED);
    }
    nth_futex_unlock(&R.lock);
    return next;
}

static void *watcher(void *arg)
{
    (void)arg;
    nth_helper_block_signals(NULL);
    prctl(PR_SET_NAME, "nth-cpumgr", 0, 0, 0);
    /* Created from VP 0's kernel thread, it is bound to VP 0's CPU and
     * stays there, even once that CPU is another application's: it needs
     * a few microseconds every tick, and each move is a migration.
     * Unbound, the load balancer moved it at most wake-ups (about 5 times
     * per malleable process, perf record -e sched:sched_migrate_task);
     * following the assignment moved it at most changes (3-4 per process
     * in a 3-application mix, where the CPUs rotate). When it must move a
     * VP off a reclaimed CPU that it shares, its short slice (below) lets
     * it preempt that VP. With unbound VPs it is unbound too. */
    if (!nth_rt.cfg.bind)
        nth_unbind_self();
    /* Timer slack is 50 µs by default: too coarse for a 1 ms bound. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    /* It wakes at a reclaim deadline on a CPU that VPs keep busy (often the
     * spinning one's): with the default EEVDF slice it waits for theirs to
     * end, 1.4 ms on 2 CPUs, longer than the whole budget. A short slice
     * lets it preempt at once; its share of the CPU does not grow (it
     * sleeps nearly all the time) and nothing is needed from root. */
    (void)nth_sched_short_slice(NTH_SHORT_SLICE_NS);
    int64_t last_tick = 0;
    for (;;) {
        int kick = __atomic_load_n(&R.kick, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&R.stop, __ATOMIC_ACQUIRE))
            break;
        int64_t t = now_ns();
        if (t - last_tick >= TICK_NS) {
            nth_cpumgr_tick();
            last_tick = t;
            /* Gone alone before the daemon's first answer: the standalone
             * set is the one held back already, so the client does not
             * call back; end the hold ourselves. */
            if (__atomic_load_n(&R.hold, __ATOMIC_RELAXED) && !nth_cpumgr_client_attached())
                nth_cpumgr_set_assign_callback(on_assign, NULL);
        }
        hook_if_attached();
        nth_cpumgr_poll();
        int64_t until = reclaim_pass();
        int att = nth_cpumgr_client_attached();
        if (att != __atomic_load_n(&R.dormancy_on, __ATOMIC_RELAXED))
            __atomic_store_n(&R.dormancy_on, att, __ATOMIC_RELAXED);
        if (att) {
            int64_t dn = dormancy(now_ns());
            if (dn < until)
                until = dn;
        } else if (D.published) {
            /* Alone: every CPU of the mask is ours; a re-attach
             * publishes the request (and dormant 0) afresh. */
            __atomic_store_n(&nth_dormant, 0, __ATOMIC_SEQ_CST);
            D.published = 0;
            D.idle_since = 0;
            (void)nth_cpumgr_client_set_dormant(0);
            /* Parked VPs slept to the real deadline: the slices again. */
            nth_dormancy_ended();
        }
        if (last_tick + TICK_NS < until)
            until = last_tick + TICK_NS;
        if (until <= now_ns())
            continue;
        /* An absolute deadline on CLOCK_MONOTONIC, the clock of the
         * daemon's grant stamp: a relative one would also count the time
         * since reclaim_pass() read the clock, and a preemption in between
         * makes the move late. */
        const uint32_t *w = __atomic_load_n(&nth_cpumgr_watch, __ATOMIC_ACQUIRE);
        uint32_t seen = __atomic_load_n(&nth_cpumgr_watch_seen, __ATOMIC_RELAXED);
        /* The daemon, another process, wakes the shared word (its
         * FUTEX_WAKE matches any bitset); our own threads kick R.kick. */
        if (__atomic_load_n(&nth_cpumgr_probe.on, __ATOMIC_RELAXED))
            __atomic_store_n(&nth_cpumgr_probe.wait_until_ns, until, __ATOMIC_RELAXED);
        int wr = nth_cpumgr_wait2(nth_cpumgr_client_attached() ? w : NULL, seen, &R.kick, kick,
                                  until);
        nth_cpumgr_stamp(&nth_cpumgr_probe.woke_ns);
        /* Woken with the word unchanged: a releaser's hand-off to a VP
         * that does not sleep on vp_wake (a lazy one, nth_cpumgr_handoff).
         * The poll of the next turn would miss it (a hand-off bumps no
         * word it watches) until the tick; read it now. */
        if (wr == 0 && nth_cpumgr_client_attached() &&
            __atomic_load_n(w, __ATOMIC_ACQUIRE) == seen &&
            __atomic_load_n(&R.kick, __ATOMIC_ACQUIRE) == kick)
            nth_cpumgr_refresh_handoff();
    }
    __atomic_store_n(&R.stopped, 1, __ATOMIC_RELEASE);
    nth_futex_wake(&R.stopped, 1);
    return NULL;
}

/* Registered after the client's own exit handler, so it runs first: the
 * watcher must not touch the segment the client then unmaps. Bounded wait,
 * in case exit() is called by the watcher's own callback chain. */
static void stop_watcher(void)
{
    __atomic_store_n(&R.stop, 1, __ATOMIC_RELEASE);
    kick_watcher();
    for (int i = 0; i < 100 && !__atomic_load_n(&R.stopped, __ATOMIC_ACQUIRE); i++)
        nth_futex_wait(&R.stopped, 0, 1000000);
}

int nth_cpumgr_rt_start(const struct nth_config *cfg)
{
    if (__atomic_exchange_n(&R.running, 1, __ATOMIC_ACQ_REL))
        return 0;
    int rc = nth_cpumgr_client_init(cfg->cpumgr);
    if (rc == ENOMEM)
        return ENOMEM;
    /* VP 0 runs main's serial start-up: ask for its CPU first. */
    if (nth_rt.nvps > 0 && nth_rt.cfg.bind)
        nth_cpumgr_client_set_home(__atomic_load_n(&nth_rt.vps[0]->cpu, __ATOMIC_RELAXED));
    /* The default request is min(VPs, mask) (cpumgr_request.h), also
     * with NTH_CPUMGR=off: nth_cpus_assigned() sizes malleable teams. */
    hwloc_bitmap_t vpc = hwloc_bitmap_alloc();
    for (int i = 0; vpc && i < nth_rt.nvps; i++) {
        int c = __atomic_load_n(&nth_rt.vps[i]->cpu, __ATOMIC_RELAXED);
        if (c >= 0)
            hwloc_bitmap_set(vpc, (unsigned)c);
    }
    nth_cpumgr_client_set_vps(nth_rt.nvps, vpc);
    hwloc_bitmap_free(vpc);
    const char *name = cfg->cpumgr ? cfg->cpumgr : getenv("NTH_CPUMGR");
    if (name && !strcmp(name, "off"))
        return 0; /* alone on the affinity mask: nothing to follow */
    R.reclaim_ns = (int64_t)cfg->reclaim_us * 1000;
    /* Before any move is measured, the largest margin allowed (half the
     * budget, note_move_cost()): the cost of a move is unknown until one
     * is made, and under load it is hundreds of microseconds (the move
     * alone, sched_setaffinity to return, p50 163-186 us and p99 640-719
     * us at load 14-16, bench/RESULTS.md "reclaim9"), more from the moment
     * it was due; a smaller first guess (it was 50 us) made the first
     * reclaims of a process late (the first of 60 was over 1.1 ms, up to
     * 3 ms, in 12 of 16 base bench runs). It stays until COST_WINDOW moves
     * are measured. */
    R.cost_ns = R.reclaim_ns / 2;
    const char *nr = getenv("NTH_TEST_NO_RECLAIM");
    R.no_reclaim = nr && *nr == '1';
    R.assigned = hwloc_bitmap_alloc();
    R.vps = calloc((size_t)nth_rt.nvps, sizeof *R.vps);
    if (!R.assigned || !R.vps)
        return ENOMEM;
    __atomic_store_n(&nth_park_ops, &park_ops, __ATOMIC_RELEASE);
    nth_cpumgr_set_detach_hook(detach_words);
    /* We run on VP 0's kernel thread; the others record theirs at their
     * first idle-loop turn, before they run any nano-thread. */
    struct nth_vp *self = nth_vp_self();
    if (self)
        R.vps[self->id].tid = gettid_();
    /* VPs born lazy (a daemon ran at nth_vps_start): the standalone set
     * the callback gets now would enable them all before the daemon says
     * which CPUs are ours; hold them back until its first answer. */
    for (int i = 1; i < nth_rt.nvps; i++)
        if (__atomic_load_n(&nth_rt.vps[i]->lazy, __ATOMIC_ACQUIRE))
            __atomic_store_n(&R.hold, 1, __ATOMIC_RELAXED);
    nth_cpumgr_set_assign_callback(on_assign, NULL);
    /* Only now, with every VP able to follow it, may the daemon count on
     * us (nth_cpumgr_client_init_held() in init.c). */
    nth_cpumgr_client_attach();
    /* A newcomer: the daemon answers a claim within its pass (the claim
     * wakes it). Wait for that answer here, in the kernel, before main's
     * serial start-up: VP 0 is then bound to its first grant (on_assign)
     * and the start-up runs there, not on a CPU another application holds
     * (bench/RESULTS.md "mix2"). Bounded: a stopped or slow daemon costs
     * FIRST_ANSWER_WAIT_NS once, and the answer is then followed when it
     * comes, as before. */
    if (nth_cpumgr_client_attached()) {
        /* Test hook NTH_TEST_FIRST_ANSWER_MS (1..600000): a longer bound,
         * so that a test's check of the binding does not depend on how
         * fast a loaded machine runs the daemon. */
        int64_t wait_ns = FIRST_ANSWER_WAIT_NS;
        const char *fw = getenv("NTH_TEST_FIRST_ANSWER_MS");
        char *end = NULL;
        long ms = fw ? strtol(fw, &end, 10) : 0;
        if (fw && end != fw && !*end && ms >= 1 && ms <= 600000)
            wait_ns = (int64_t)ms * 1000000;
        (void)nth_cpumgr_client_wait_answer(now_ns() + wait_ns);
    }
    /* Not attached after all (the daemon went, every slot taken): alone,
     * the held VPs get their CPUs now (the callback ends the hold). */
    __atomic_store_n(&R.attach_tried, 1, __ATOMIC_RELEASE);
    if (!nth_cpumgr_client_attached())
        nth_cpumgr_set_assign_callback(on_assign, NULL);
    hook_if_attached();
    pthread_t th;
    pthread_attr_t a;
    pthread_attr_init(&a);
    /* Detached: stop_watcher() waits for it through R.stopped, never joins. */
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int e = nth_helper_thread_create(&th, &a, watcher, NULL);
    pthread_attr_destroy(&a);
    if (e != 0) {
        fprintf(stderr, "nthlib: cannot start the cpumgr watcher thread; the assignment is "
                "followed at scheduling points only\n");
        return EAGAIN;
    }
    atexit(stop_watcher);
    return 0;
}

int nth_cpumgr_rt_vp_tid(int vp)
{
    if (!R.vps || vp < 0 || vp >= nth_rt.nvps)
        return 0;
    return __atomic_load_n(&R.vps[vp].tid, __ATOMIC_ACQUIRE);
}

unsigned long nth_cpumgr_rt_reclaims(void)
{
    return __atomic_load_n(&R.nreclaims, __ATOMIC_RELAXED);
}

int nth_cpumgr_rt_last_move(struct nth_cpumgr_move *m)
{
    nth_futex_lock(&R.lock);   /* zeroed static: usable before any start */
    /* Under the lock that each move holds from its record to its count. */
    struct nth_cpumgr_move last = {R.last_since, R.last_due,
                                   __atomic_load_n(&R.nreclaims, __ATOMIC_RELAXED), R.last_vp,
                                   R.last_path};
    nth_futex_unlock(&R.lock);
    if (!last.due_ns)
        return 0;
    *m = last;
    return 1;
}

unsigned long nth_cpumgr_rt_dormancies(void)
{
    return __atomic_load_n(&D.nents, __ATOMIC_RELAXED);
}

void nth_cpumgr_rt_fork_child(void)
{
    /* No watcher in the child: its exit must not wait for one
     * (stop_watcher), and no VP sleeps on the parent's slot word. The
     * per-VP records (indexed by the parent's VP ids) are dropped, which
     * turns on_sched_point and the park operations into no-ops. */
    R.lock = (nth_futex_lock_t)NTH_FUTEX_LOCK_INIT;
    R.vps = NULL;
    R.stop = 1;
    __atomic_store_n(&R.stopped, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&nth_dormant, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&R.dormancy_on, 0, __ATOMIC_RELAXED);
    D.published = 0;
    D.idle_since = 0;
    __atomic_store_n(&nth_park_ops, NULL, __ATOMIC_RELEASE);
}
