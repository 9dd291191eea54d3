/*
 * sync_glue.c -- where the synchronisation part plugs into the runtime
 * core: per-VP timer queues fired by the core's scheduling-point hook and
 * bounding its idle park, alarms of disabled VPs moved to running ones,
 * alarms of VPs in a system call moved to the shared queue (fired by the
 * other VPs, or by the stall watchdog's backstop when every VP is in the
 * kernel), and key destructors run by the core's exit hook.
 *
 * The hooks are registered on first use (first timed wait or sleep, first
 * key), so a program that never uses timers pays nothing at its
 * scheduling points.
 */
#include <errno.h>
#include <stdlib.h>
#include "internal.h"
#include "sync_core.h"
#include "trace_core.h"

static int hooks_state; /* 0 none, 1 installing, 2 installed */

static struct nth_tq *vp_tq(struct nth_vp *vp);

/* Fire what is due on vp's queue and on the shared fallback queue; when
 * idle or about to wait, also adopt the alarms of VPs whose CPU was taken
 * away, since a disabled VP parks without a timeout and would never fire
 * them. */
static void timer_hook(struct nth_vp *vp, int where)
{
    if (vp->id < 0)
        return; /* a watchdog stand-in's shell VP owns no timers */
    if (where == NTH_SP_IDLE || where == NTH_SP_WAIT) {
        for (int i = 0; i < nth_rt.nvps; i++) {
            struct nth_vp *o = nth_rt.vps[i];
            struct nth_tq *q = __atomic_load_n((struct nth_tq **)&o->timerq, __ATOMIC_ACQUIRE);
            if (o != vp && q && __atomic_load_n(&o->disabled, __ATOMIC_RELAXED) &&
                nth_tq_next_deadline(q) != NTH_TQ_NONE) {
                struct nth_tq *mine = vp_tq(vp);
                if (mine)
                    nth_tq_move(q, mine);
            }
        }
    }
    struct nth_tq *q = __atomic_load_n((struct nth_tq **)&vp->timerq, __ATOMIC_ACQUIRE);
    /* The common case, nothing queued, costs no clock read. */
    if ((!q || nth_tq_next_deadline(q) == NTH_TQ_NONE) &&
        nth_tq_next_deadline(nth__sync_fallback_tq()) == NTH_TQ_NONE)
        return;
    nth__timers_poll(q);
}

/* The idle park's timeout for vp, ns (-1: none). Called after vp has
 * published itself as parked. A disabled VP gets no timeout; if its queue
 * holds alarms (armed by the nano-thread that ran last before its CPU went
 * away), it wakes a parked enabled VP, which would otherwise sleep forever
 * if it had parked before those alarms existed: its wake-up adopts them
 * (timer_hook) and recomputes its timeout here. Dekker with that VP's own
 * park: we publish parked then read its parked flag; it publishes parked
 * then reads our queue below, so one of us sees the other. */
static int64_t earliest_ns(struct nth_vp *vp)
{
    if (__atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE)) {
        struct nth_tq *dq = __atomic_load_n((struct nth_tq **)&vp->timerq, __ATOMIC_ACQUIRE);
        if (dq && nth_tq_next_deadline(dq) != NTH_TQ_NONE)
            nth_wake_one(vp);
        return -1;
    }
    /* Dormant (cpumgr_rt.c), a VP not yet disabled by the daemon's answer
     * sleeps to the next real deadline: a slice (nth_wait_slices) fired
     * meanwhile would end dormancy for nothing. Dekker with
     * nth_dormancy_ended, which clears nth_dormant, then wakes the parked
     * VPs: we published parked before this load. */
    int dorm = __atomic_load_n(&nth_dormant, __ATOMIC_SEQ_CST);
    uint64_t next = dorm ? nth_tq_next_real(nth__sync_fallback_tq())
                         : nth_tq_next_deadline(nth__sync_fallback_tq());
    struct nth_tq *q = __atomic_load_n((struct nth_tq **)&vp->timerq, __ATOMIC_ACQUIRE);
    uint64_t mine = !q ? NTH_TQ_NONE : dorm ? nth_tq_next_real(q) : nth_tq_next_deadline(q);
    if (mine < next)
        next = mine;
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_vp *o = nth_rt.vps[i];
        struct nth_tq *oq = __atomic_load_n((struct nth_tq **)&o->timerq, __ATOMIC_ACQUIRE);
        if (o != vp && oq && __atomic_load_n(&o->disabled, __ATOMIC_RELAXED) &&
            nth_tq_next_deadline(oq) < next)
            next = 0; /* wake to adopt them */
    }
    if (next == NTH_TQ_NONE)
        return -1;
    uint64_t now = nth_now_ns();
    return next <= now ? 0 : (int64_t)(next - now);
}

/* Earliest alarm deadline of the process (CLOCK_MONOTONIC ns, NTH_TQ_NONE
 * if none): every VP's queue and the shared one, lock-free, may be stale
 * (an alarm armed meanwhile is armed by a running nano-thread, so the
 * application is not dormant then). The cpumgr watcher wakes at it while
 * the application holds no CPU (cpumgr_rt.c, dormancy). */
uint64_t nth_timers_earliest(void)
{
    uint64_t next = nth_tq_next_deadline(nth__sync_fallback_tq());
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_tq *q = __atomic_load_n((struct nth_tq **)&nth_rt.vps[i]->timerq,
                                           __ATOMIC_ACQUIRE);
        if (q && nth_tq_next_deadline(q) < next)
            next = nth_tq_next_deadline(q);
    }
    return next;
}

/* Someone must fire the shared queue (it holds alarms, the earliest at
 * fb_next): an enabled VP outside the kernel does, at its scheduling
 * points or when its idle park times out; if every such VP is parked and
 * the earliest alarm came after it parked (fb_next < before, the earliest
 * deadline before the caller added to it), one is woken to recompute its
 * park timeout. With none (every enabled VP in a system call), the
 * backstop does. Dekker with park() (publishes parked, then reads the
 * queue in earliest_ns) and with another VP's nth_blocking_enter
 * (publishes blocking, then reads the queue here): the alarms are
 * published before the fence, the VPs' states read after it. */
static void fallback_watch(struct nth_vp *self, uint64_t before)
{
    uint64_t next = nth_tq_next_deadline(nth__sync_fallback_tq());
    if (next == NTH_TQ_NONE)
        return;
    nth_full_fence();
    struct nth_vp *sleeper = NULL;
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_vp *o = nth_rt.vps[i];
        if (o == self || __atomic_load_n(&o->disabled, __ATOMIC_SEQ_CST) ||
            __atomic_load_n(&o->blocking, __ATOMIC_SEQ_CST))
            continue;
        if (!__atomic_load_n(&o->parked, __ATOMIC_SEQ_CST))
            return;                /* it runs: its next scheduling point */
        if (!sleeper)
            sleeper = o;
    }
    if (sleeper) {
        if (next < before)
            nth_wake_one(sleeper);
        return;
    }
    nth_watchdog_timers_kick(next);
}

/* nth_blocking_enter's hook (vp has published `blocking`). */
static void timers_blocking(struct nth_vp *vp)
{
    struct nth_tq *q = __atomic_load_n((struct nth_tq **)&vp->timerq, __ATOMIC_ACQUIRE);
    struct nth_tq *fb = nth__sync_fallback_tq();
    uint64_t before = nth_tq_next_deadline(fb);
    if (nth_tq_next_deadline(q) != NTH_TQ_NONE)
        nth_tq_move(q, fb);
    else if (before == NTH_TQ_NONE)
        return;                    /* no alarm anywhere to care for */
    fallback_watch(vp, before);
}

void nth__sync_fallback_armed(uint64_t before)
{
    struct nth_vp *vp = nth_vp_self();
    fallback_watch(vp && vp->id >= 0 ? vp : NULL, before);
}

/* An alarm of a running VP's queue this late (ns past its deadline) is
 * held: every scheduling point of that VP fires what is due
 * (timer_hook), so the VP has run one nano-thread all that time -- a
 * compute-bound one that makes no nthlib call (DESIGN invariant 1: it is
 * never preempted), or one stuck in the kernel without
 * nth_blocking_enter. Far above a VP's usual gap between scheduling points,
 * and below the backstop's period (watchdog.c, BACKSTOP_NS), which bounds
 * how late a held alarm fires. */
#define HELD_NS (2 * 1000000ULL)

/* Fire the held alarms of the enabled VPs (disabled ones are adopted by
 * timer_hook; a VP in nth_blocking_enter moved its alarms to the shared
 * queue). On the backstop's kernel thread, which is no VP: a woken
 * nano-thread goes to the global queue and unparks an idle VP
 * (make_ready), which runs it while the holder computes on. The owner may
 * reach a scheduling point meanwhile and fire the same queue: nth_tq_fire
 * pops each alarm under the queue's lock, so each fires once; a cancel
 * waits for a callback already running (nth_tq_cancel). One relaxed load
 * per VP when nothing is held. */
static void held_timers(void)
{
    uint64_t now = 0;
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_vp *o = nth_rt.vps[i];
        struct nth_tq *q = __atomic_load_n((struct nth_tq **)&o->timerq, __ATOMIC_ACQUIRE);
        if (!q || nth_tq_next_deadline(q) == NTH_TQ_NONE ||
            __atomic_load_n(&o->disabled, __ATOMIC_RELAXED))
            continue;
        if (!now)
            now = nth_now_ns();
        /* Held: everything due goes, not only what is that late. */
        if (now > HELD_NS && nth_tq_next_deadline(q) <= now - HELD_NS)
            (void)nth_tq_fire(q, now);
    }
}

/* The backstop's: fire the alarms held by a VP that reaches no scheduling
 * point, and the shared queue if no enabled VP outside the kernel will,
 * or if its alarms are held too: an enabled VP's kernel thread may sit in
 * a call nobody wraps (a dlsym waiting for ld.so's lock, which a
 * constructor pinned to its kernel thread holds while it sleeps or joins
 * a sleeper: nth_ldso_held), and then fires nothing until that wait
 * ends, which may need this very alarm. */
static uint64_t orphan_timers(void)
{
    /* Dormant (cpumgr_rt.c): every VP is idle and the earliest real
     * deadline is far; what the shared queue holds before it is slices
     * (nth_wait_slices), and firing one would end dormancy for nothing.
     * The watcher ends dormancy before the real deadline and kicks us
     * (nth_dormancy_ended). */
    if (__atomic_load_n(&nth_dormant, __ATOMIC_SEQ_CST))
        return NTH_TQ_NONE;
    held_timers();
    struct nth_tq *fb = nth__sync_fallback_tq();
    uint64_t next = nth_tq_next_deadline(fb);
    if (next == NTH_TQ_NONE)
        return NTH_TQ_NONE;
    uint64_t now = nth_now_ns();
    if (now > HELD_NS && next <= now - HELD_NS)
        return nth__timers_poll(NULL);
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_vp *o = nth_rt.vps[i];
        if (!__atomic_load_n(&o->disabled, __ATOMIC_SEQ_CST) &&
            !__atomic_load_n(&o->blocking, __ATOMIC_SEQ_CST))
            return NTH_TQ_NONE;    /* that VP fires them (fallback_watch) */
    }
    return nth__timers_poll(NULL);
}

static void install_timer_hooks(void)
{
    if (__atomic_load_n(&hooks_state, __ATOMIC_ACQUIRE) == 2)
        return;
    int z = 0;
    if (__atomic_compare_exchange_n(&hooks_state, &z, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        nth_idle_timeout_set(earliest_ns);
        nth_sched_hook_add(timer_hook);
        nth_watchdog_timers_set(orphan_timers);
        /* Every VP gets its queue now, so that nth_blocking_enter's test of
         * it (one load) also sends a VP that never armed an alarm to
         * timers_blocking, which sees to the shared queue's alarms. */
        __atomic_store_n(&nth_blocking_timers, timers_blocking, __ATOMIC_RELEASE);
        for (int i = 0; i < nth_rt.nvps; i++)
            (void)vp_tq(nth_rt.vps[i]);
        __atomic_store_n(&hooks_state, 2, __ATOMIC_RELEASE);
        /* Parked VPs computed their timeout without us: wake them to
         * recompute it. */
        for (int i = 0; i < nth_rt.nvps; i++)
            if (__atomic_load_n(&nth_rt.vps[i]->parked, __ATOMIC_ACQUIRE))
                nth_wake_one(nth_rt.vps[i]);
        return;
    }
    while (__atomic_load_n(&hooks_state, __ATOMIC_ACQUIRE) != 2)
        nth_cpu_relax();
}

/* vp's timer queue, created on first use (never freed: VPs live as long
 * as the process). NULL only when out of memory. */
static struct nth_tq *vp_tq(struct nth_vp *vp)
{
    struct nth_tq *q = __atomic_load_n((struct nth_tq **)&vp->timerq, __ATOMIC_ACQUIRE);
    if (q)
        return q;
    q = malloc(sizeof *q);
    if (!q)
        return NULL;
    nth_tq_init(q);
    void *expected = NULL;
    if (!__atomic_compare_exchange_n(&vp->timerq, &expected, q, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        free(q);
        q = expected;
    }
    return q;
}

uint64_t nth__wait_real(void)
{
    struct nth_vp *vp = nth_vp_self();
    struct nth_thread *t = vp ? vp->current : NULL;
    return t && !(t->flags & NTH_TF_IDLE) ? t->wait_real : 0;
}

uint64_t nth_wait_slices(uint64_t real_deadline)
{
    struct nth_vp *vp = nth_vp_self();
    struct nth_thread *t = vp ? vp->current : NULL;
    if (!t || (t->flags & NTH_TF_IDLE))
        return 0;
    uint64_t old = t->wait_real;
    t->wait_real = real_deadline;
    return old;
}

void nth_dormancy_ended(void)
{
    /* Parked VPs that the daemon had not disabled yet sleep to the next
     * real deadline (earliest_ns): wake them to fire the slices due. */
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_vp *o = nth_rt.vps[i];
        int zero = 0;
        if (__atomic_load_n(&o->parked, __ATOMIC_SEQ_CST) &&
            !__atomic_load_n(&o->disabled, __ATOMIC_RELAXED) &&
            __atomic_compare_exchange_n(&o->park_word, &zero, 1, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED))
            nth_futex_wake(&o->park_word, 1);
    }
    uint64_t next = nth_tq_next_deadline(nth__sync_fallback_tq());
    if (next != NTH_TQ_NONE)
        nth_watchdog_timers_kick(next);
}

/* Earliest real deadline of the process (nth_tq_next_real over every
 * queue; NTH_TQ_NONE if none): the slices of longer waits
 * (nth_wait_slices) count at their wait's end. The cpumgr watcher's, for
 * dormancy: may be stale as nth_timers_earliest. */
uint64_t nth_timers_earliest_real(void)
{
    uint64_t next = nth_tq_next_real(nth__sync_fallback_tq());
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_tq *q = __atomic_load_n((struct nth_tq **)&nth_rt.vps[i]->timerq,
                                           __ATOMIC_ACQUIRE);
        uint64_t r = q ? nth_tq_next_real(q) : NTH_TQ_NONE;
        if (r < next)
            next = r;
    }
    return next;
}

struct nth_tq *nth__vp_timer_queue(void)
{
    nth_ensure_started();
    install_timer_hooks();
    struct nth_vp *vp = nth_vp_self();
    if (!vp || vp->id < 0)
        return NULL; /* no VP (or a blocking-call spare): the fallback queue */
    return vp_tq(vp);
}

void **nth__specific_slot(void)
{
    struct nth_thread *t = (struct nth_thread *)nth_self();
    return t ? &t->specific : NULL;
}

static void keys_exit_hook(struct nth_thread *t)
{
    nth__keys_exit(&t->specific);
}

void nth__keys_exit_hook_install(void)
{
    static int installed;
    int z = 0;
    nth_ensure_started();
    if (__atomic_compare_exchange_n(&installed, &z, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        nth_exit_hook_add(keys_exit_hook);
}

void nth__sync_trace_wait(const void *obj, unsigned kind)
{
    struct nth_vp *vp = nth_vp_self();
    if (vp && vp->current && (vp->current->trace_kind & NTH_OBJ_HELD))
        return;   /* nth_trace_wait_join named this wait already */
    nth_trace_rt_wait_obj_self((uintptr_t)obj, kind);
}

void nth_timers_fork_child(struct nth_vp *vp0)
{
    /* Every alarm belongs to a waiter of a nano-thread or kernel thread
     * that did not survive the fork (the forking nano-thread is in fork(),
     * not in a timed wait): an empty shared queue, and vp0 starts with an
     * empty one of its own. The parent's queues are left as they are. */
    nth_tq_init(nth__sync_fallback_tq());
    /* Installing when the fork came: the installer is gone; install again
     * at the next timed wait. */
    int one = 1;
    (void)__atomic_compare_exchange_n(&hooks_state, &one, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    vp0->timerq = NULL;
    if (__atomic_load_n(&hooks_state, __ATOMIC_ACQUIRE) == 2)
        (void)vp_tq(vp0);
}
