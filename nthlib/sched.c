/*
 * sched.c -- the switch path: pick the next nano-thread, switch to it
 * directly (one switch per yield), and run the deferred actions of the
 * previous one in the post-switch hook, on the new stack.
 *
 * Why a post-switch hook: until nth_ctx_switch() has saved the previous
 * nano-thread's registers, no other VP may resume it, and its stack may not
 * be released. So "enqueue me" (yield) and "free me" (detached exit) are done
 * by whoever runs next, and every switched-out descriptor carries an on_cpu
 * flag that the next context clears (store-release); a VP that picks a
 * nano-thread whose flag is still set waits for it (rare: only when an
 * nth_to_rq from another VP races with the switch-out of an nth_wait).
 */
#include "internal.h"
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "trace_core.h"
#include <errno.h>
#include <stdlib.h>

#ifdef NTH_ASAN
#include <sanitizer/common_interface_defs.h>
#include <sanitizer/asan_interface.h>
#endif
#ifdef HAVE_VALGRIND_VALGRIND_H
#include <valgrind/valgrind.h>
#endif

__thread struct nth_vp *nth_tls_vp __attribute__((tls_model("initial-exec")));

#if !defined(__x86_64__)
__attribute__((noinline)) struct nth_vp *nth_vp_self(void)
{
    __asm__ __volatile__("" ::: "memory");
    return nth_tls_vp;
}
#endif

/* errno lives in the kernel thread's TLS and __errno_location() is declared
 * const, so the compiler may reuse its address across a switch: the switch
 * goes through the errno address of the VP it runs on (vp->errno_loc), read
 * after nth_vp_self() on each side. */
void nth_vp_self_set(struct nth_vp *vp)
{
    nth_tls_vp = vp;
    if (vp) {
        vp->errno_loc = &errno;
        vp->tp_own = vp->tp_loaded = nth_tp_current();
    }
}

/* ---- tooling ------------------------------------------------------------ */

/* -1 until the first nano-thread is made, then 1 when its stack needs
 * annotations (a sanitizer build, or under valgrind), 0 when not: a
 * process does not start running under valgrind later. */
#if defined(NTH_ASAN) || defined(NTH_TSAN)
int nth_tool_active = 1;
#elif defined(HAVE_VALGRIND_VALGRIND_H)
int nth_tool_active = -1;
#else
int nth_tool_active = 0;
#endif

#ifdef HAVE_VALGRIND_VALGRIND_H
/* RUNNING_ON_VALGRIND once, not two client requests per nano-thread. */
static int on_valgrind = -1;
static inline int under_valgrind(void)
{
    int v = __atomic_load_n(&on_valgrind, __ATOMIC_RELAXED);
    if (__builtin_expect(v < 0, 0)) {
        v = RUNNING_ON_VALGRIND ? 1 : 0;
        __atomic_store_n(&on_valgrind, v, __ATOMIC_RELAXED);
#if !defined(NTH_ASAN) && !defined(NTH_TSAN)
        __atomic_store_n(&nth_tool_active, v, __ATOMIC_RELAXED);
#endif
    }
    return v;
}
#endif

void nth_tool__created(struct nth_thread *t)
{
    t->asan_fake = NULL;
    t->asan_bottom = t->stack_lo;
    t->asan_size = t->stack_size;
#ifdef NTH_ASAN
    /* A reused stack may still carry a previous owner's poisoning. */
    __asan_unpoison_memory_region(t->stack_lo, t->stack_size);
#endif
#ifdef NTH_TSAN
    t->tsan_fiber = __tsan_create_fiber(0);
#endif
#ifdef HAVE_VALGRIND_VALGRIND_H
    t->vg_stack_id = 0;
    if (under_valgrind())
        t->vg_stack_id = VALGRIND_STACK_REGISTER(t->stack_lo, (char *)t->stack_lo + t->stack_size);
#endif
}

void nth_tool__freed(struct nth_thread *t)
{
    (void)t;
#ifdef NTH_TSAN
    if (t->tsan_fiber)
        __tsan_destroy_fiber(t->tsan_fiber);
    t->tsan_fiber = NULL;
#endif
#ifdef HAVE_VALGRIND_VALGRIND_H
    if (under_valgrind())
        VALGRIND_STACK_DEREGISTER(t->vg_stack_id);
#endif
}

static inline void tool_before(struct nth_thread *self, struct nth_thread *next, int dying)
{
    (void)self; (void)next; (void)dying;
#ifdef NTH_ASAN
    __sanitizer_start_switch_fiber(dying ? NULL : &self->asan_fake,
                                   next->asan_bottom, next->asan_size);
#endif
#ifdef NTH_TSAN
    __tsan_switch_to_fiber(next->tsan_fiber, 0);
#endif
}

static inline void tool_after(struct nth_thread *self, struct nth_vp *vp)
{
    (void)self; (void)vp;
#ifdef NTH_ASAN
    const void *b; size_t s;
    __sanitizer_finish_switch_fiber(self ? self->asan_fake : NULL, &b, &s);
    struct nth_thread *p = vp->prev;
    /* Stacks we did not allocate (main's, a VP's own) learn their bounds here. */
    if (p && !p->asan_bottom) {
        p->asan_bottom = b;
        p->asan_size = s;
    }
#endif
}

/* ---- state transitions -------------------------------------------------- */

/* READY(|PERMIT) -> RUNNING(|PERMIT), by the one VP that dequeued t; a
 * yielded nano-thread is still RUNNING and needs nothing. */
int nth_thread_try_run(struct nth_thread *t)
{
    int s = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
    for (;;) {
        if ((s & NTH_ST_MASK) == NTH_ST_RUNNING)
            return 1;
        int n = (s & NTH_ST_PERMIT) | NTH_ST_RUNNING;
        if (__atomic_compare_exchange_n(&t->state, &s, n, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            return 1;
    }
}

/* RUNNING(|PERMIT) -> READY(|PERMIT), by the running thread itself. */
void nth_thread_set_ready(struct nth_thread *t)
{
    int s = __atomic_load_n(&t->state, __ATOMIC_RELAXED);
    for (;;) {
        int n = (s & NTH_ST_PERMIT) | NTH_ST_READY;
        if (__atomic_compare_exchange_n(&t->state, &s, n, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            return;
    }
}

/* ---- enqueue and wake-up ----------------------------------------------- */

void nth_wake_one(struct nth_vp *prefer)
{
    int n = nth_rt.nvps;
    int start = prefer && prefer->id >= 0 ? prefer->id : 0; /* id -1: a spare or stand-in */
    for (int i = 0; i < n; i++) {
        struct nth_vp *v = nth_rt.vps[(start + i) % n];
        if (!__atomic_load_n(&v->parked, __ATOMIC_ACQUIRE) ||
            __atomic_load_n(&v->disabled, __ATOMIC_RELAXED))
            continue;
        int zero = 0;
        if (__atomic_compare_exchange_n(&v->park_word, &zero, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
            nth_futex_wake(&v->park_word, 1);
            return;
        }
    }
}

/* New work wakes a dozing stall monitor only when no VP spins in its idle
 * loop. A spinning VP takes the work itself if the VP it was queued on
 * stalls in the kernel (it steals from every local queue, and the head slot
 * after steal.c's grace), and it does not park while any queue holds work
 * (idle.c's any_work), so the monitor has nothing to rescue. Waking it
 * there cost every parallel region one: LU 1000 creates each region's
 * member on the other VP, spinning between regions, so the monitor never
 * dozed and woke every NTH_STALL_US/2 on the computing VPs' CPUs, with the
 * backstop at each doze's end (watchdog.c, "dozes"). If that spinner
 * instead finds other work and runs it for long, or loses its CPU
 * (disabled: it parks whatever is queued), a stall is seen when the doze
 * times out (DOZE_NS), as after a yield. */
static inline void wake_monitor_unless_spinning(void)
{
    if (__atomic_load_n(&nth_rt.nspinning, __ATOMIC_SEQ_CST) == 0)
        nth_watchdog_unparked();
}

int nth_sched_wake_idle(struct nth_vp *vp)
{
    nth_full_fence();
    wake_monitor_unless_spinning();
    if (__atomic_load_n(&nth_rt.nspinning, __ATOMIC_RELAXED) == 0 &&
        __atomic_load_n(&nth_rt.nparked, __ATOMIC_RELAXED) > 0) {
        nth_wake_one(vp);
        return 1;
    }
    return 0;
}

int nth_sched_wake_idle_rmw(struct nth_vp *vp)
{
    wake_monitor_unless_spinning();
    if (__atomic_load_n(&nth_rt.nspinning, __ATOMIC_SEQ_CST) == 0 &&
        __atomic_load_n(&nth_rt.nparked, __ATOMIC_SEQ_CST) > 0) {
        nth_wake_one(vp);
        return 1;
    }
    return 0;
}

void nth_sched_enqueue(struct nth_vp *vp, struct nth_thread *t)
{
    struct nth_rq *q = (vp && !__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED))
                           ? &vp->rq : &nth_rt.grq;
    nth_rq_push(q, t);
    int woke = nth_sched_wake_idle(vp);
    /* After the wake-up's fence: Dekker with the cpumgr watcher, which
     * sets nth_dormant and then looks at the queues (cpumgr_rt.c). */
    nth_dormant_check();
    if (woke)
        return;
    /* Dekker with nth_blocking_enter (it publishes blocking, then looks at
     * the queues): a VP whose kernel thread sits in a system call gets a
     * stand-in for what we just queued. */
    if (q != &nth_rt.grq) {
        if (__builtin_expect(__atomic_load_n(&vp->blocking, __ATOMIC_SEQ_CST), 0))
            nth_standin_lend(vp);
    } else if (__atomic_load_n(&nth_rt.nspinning, __ATOMIC_RELAXED) == 0) {
        /* The global queue, nobody idle: a VP in a system call may be
         * the only one that could take it (one VP, or all of them). */
        for (int i = 0; i < nth_rt.nvps; i++) {
            struct nth_vp *v = nth_rt.vps[i];
            if (__atomic_load_n(&v->blocking, __ATOMIC_SEQ_CST) &&
                !__atomic_load_n(&v->disabled, __ATOMIC_RELAXED)) {
                nth_standin_lend(v);
                break;
            }
        }
    }
}

/* ---- picking ------------------------------------------------------------ */

NTH_HIDDEN struct nth_thread *nth_steal(struct nth_vp *vp);

/* Local queue first (cache-warm, FIFO), then the global one, then steal.
 * Every NTH_GRQ_EVERY-th pick takes the global queue first: otherwise a
 * nano-thread there (handed over by a disabled VP, or made ready by a
 * kernel thread that is no VP) starves behind a local queue that never
 * empties. Go's scheduler does the same every 61st schedule (findRunnable
 * in runtime/proc.go); a prime does not fall in step with periodic work. */
struct nth_thread *nth_sched_pick(struct nth_vp *vp)
{
    struct nth_thread *t = NULL;
    if (nth_sched_grq_turn(vp))
        t = nth_rq_pop(&nth_rt.grq);
    if (!t)
        t = nth_next_local_take(&vp->next_local); /* a yielder (RUNNING) or a woken one */
    if (!t)
        t = nth_rq_pop(&vp->rq);
    if (!t)
        t = nth_rq_pop(&nth_rt.grq);
    if (!t)
        t = nth_steal(vp);
    if (t)
        nth_thread_try_run(t);
    return t;
}

/* ---- switching ---------------------------------------------------------- */

void nth_post_switch(struct nth_vp *vp)
{
    struct nth_thread *p = vp->prev;
    if (!p)
        return;
    vp->prev = NULL;
    switch (vp->prev_action) {
    case NTH_PS_YIELD:
        /* No wake-up check: a yield makes no new work, and this VP runs. */
        __atomic_store_n(&p->on_cpu, 0, __ATOMIC_RELEASE);
        nth_rq_push(__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED) ? &nth_rt.grq : &vp->rq, p);
        break;
    case NTH_PS_GLOBAL:
        __atomic_store_n(&p->on_cpu, 0, __ATOMIC_RELEASE);
        nth_sched_enqueue(NULL, p);
        break;
    case NTH_PS_MOVE: {
        struct nth_vp *to = vp->prev_target;
        __atomic_store_n(&p->on_cpu, 0, __ATOMIC_RELEASE);
        if (__atomic_load_n(&to->disabled, __ATOMIC_RELAXED)) {
            nth_sched_enqueue(NULL, p);      /* its CPU went away meanwhile */
            break;
        }
        nth_rq_push(&to->rq, p);
        /* Dekker with the target's idle loop, as nth_sched_enqueue; a
         * parked target is woken itself (the generic wake-up would let
         * any spinning VP take p, which defeats the move). */
        nth_full_fence();
        if (__atomic_load_n(&to->parked, __ATOMIC_ACQUIRE))
            nth_wake_one(to);
        break;
    }
    case NTH_PS_FREE:
        p->on_cpu = 0;
        if (!(p->flags & NTH_TF_MAIN)) {
            nth_tool_thread_freed(p);
            nth_unit_free(vp, p);
        }
        break;
    default:
        __atomic_store_n(&p->on_cpu, 0, __ATOMIC_RELEASE);
        break;
    }
}

/* The common cases inline: the previous one only needs its on_cpu cleared
 * (blocked, or exited joinable: the joiner reaps it). */
static inline void post_switch(struct nth_vp *vp)
{
    struct nth_thread *p = vp->prev;
    /* NTH_PS_NONE and NTH_PS_EXITED are 0 and 1: one compare. */
    if (p && (unsigned)vp->prev_action <= NTH_PS_EXITED) {
        vp->prev = NULL;
        __atomic_store_n(&p->on_cpu, 0, __ATOMIC_RELEASE);
        return;
    }
    nth_post_switch(vp);
}

/* The switch, with dying a constant: 1 for a nano-thread that exited
 * (action NTH_PS_EXITED or NTH_PS_FREE) and is never resumed, whose
 * registers need no saving (nth_ctx_jump) and which has nothing after. */
static inline __attribute__((always_inline))
void switch_to(struct nth_vp *vp, struct nth_thread *next, int action, int dying)
{
    struct nth_thread *self = vp->current;
    if (__builtin_expect(__atomic_load_n(&next->on_cpu, __ATOMIC_ACQUIRE), 0)) {
        if (self != &vp->idle) {
            /* next is still being switched out on another VP. Waiting for
             * it here, with self still on this CPU, deadlocks when that VP
             * picked self and waits for it in turn. Switch to the idle
             * context first (which saves self) and let it wait: only idle
             * contexts ever wait, and nobody waits for an idle context. */
            vp->deferred = next;
            next = &vp->idle;
        }
        while (__atomic_load_n(&next->on_cpu, __ATOMIC_ACQUIRE))
            nth_cpu_relax();
    }
    next->on_cpu = 1;
    next->vp = vp;
    vp->prev = self;
    vp->prev_action = action;
    /* Relaxed atomics, plain moves on x86 and arm64: the watchdog and
     * thieves read both without a lock (ThreadSanitizer sees why). */
    __atomic_store_n(&vp->current, next, __ATOMIC_RELAXED);
    __atomic_store_n(&vp->nswitch, vp->nswitch + 1, __ATOMIC_RELAXED);
    nth_trace_rt_switch(vp, self, next);
    int e = *vp->errno_loc;
    tool_before(self, next, dying);
    /* Per-nano-thread TLS (the pthread shim): one predictable branch when off. */
    if (__builtin_expect(__atomic_load_n(&nth_tp_on, __ATOMIC_ACQUIRE), 0))
        nth_tp_switch(vp, next);
    if (next->flags & NTH_TF_FRESH) {
        /* First run: its context is made here, not by nth_create (a
         * nano-thread joined at once never needs the frame stored). */
        next->flags &= ~NTH_TF_FRESH;
#ifdef NTH_CTX_HAVE_START
        nth_ctx_start(&self->ctx, next->stack_lo, next->stack_size, nth_thread_entry, next);
#else
        nth_ctx_make(&next->ctx, next->stack_lo, next->stack_size, nth_thread_entry, next);
        nth_ctx_switch(&self->ctx, &next->ctx);
#endif
    } else {
#ifdef NTH_CTX_HAVE_JUMP
        if (dying)
            nth_ctx_jump(&next->ctx);
#endif
        nth_ctx_switch(&self->ctx, &next->ctx);
    }
    if (dying)
        __builtin_unreachable();        /* an exited context never resumes */
    /* Resumed, possibly on another VP's kernel thread. */
    vp = nth_vp_self();
    tool_after(self, vp);
    *vp->errno_loc = e;
    post_switch(vp);
    /* One predictable branch while no hook is installed (the pthread shim
     * installs one only once a signal mask or a queued signal exists). */
    nth_switch_hook_fn h = __atomic_load_n(&nth_switch_hook, __ATOMIC_RELAXED);
    if (__builtin_expect(h != NULL, 0)) {
        h(self->user[NTH_SWITCH_SLOT]);
        if (self == &vp->idle)
            __atomic_store_n(&vp->hook_seen, h, __ATOMIC_RELEASE);
    }
}

void nth_sched_switch(struct nth_vp *vp, struct nth_thread *next, int action)
{
    switch_to(vp, next, action, 0);
}

void nth_sched_switch_exit(struct nth_vp *vp, struct nth_thread *next, int action)
{
    switch_to(vp, next, action, 1);
    __builtin_unreachable();
}

void nth_sched_block(struct nth_vp *vp, int action)
{
    struct nth_thread *next = NULL;
    nth_trace_rt_leave(vp);
    nth_vp_rebind_if_due(vp);
    if (!__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED))
        next = nth_sched_pick(vp);
    if (next == vp->current)
        return;              /* woken before we left: just go on */
    if (!next)
        next = &vp->idle;
    if (action == NTH_PS_EXITED || action == NTH_PS_FREE)
        nth_sched_switch_exit(vp, next, action);
    else
        nth_sched_switch(vp, next, action);
}

void nth_ctx_first_run(struct nth_vp *vp)
{
    tool_after(NULL, vp);
    post_switch(vp);    /* inline: a joiner that switched here directly */
}

/* First code of every nano-thread, called by the context trampoline. */
void nth_thread_entry(void *desc)
{
    struct nth_thread *t = desc;
    struct nth_vp *vp = nth_vp_self();
    nth_ctx_first_run(vp);
    vp->nstarted++;
    nth__exit_return(t, t->fn(t->arg));
    __builtin_unreachable();
}

/* ---- scheduling-point hooks --------------------------------------------- */

int nth_nsched_hooks;
static nth_sched_hook_fn sched_hooks[NTH_HOOKS_MAX];
static nth_futex_lock_t hooks_lock = NTH_FUTEX_LOCK_INIT;

void nth_sched_fork_child(void)
{
    hooks_lock = (nth_futex_lock_t)NTH_FUTEX_LOCK_INIT;
}

void nth_run_sched_hooks(struct nth_vp *vp, int where)
{
    for (int i = 0; i < NTH_HOOKS_MAX; i++) {
        nth_sched_hook_fn f = __atomic_load_n(&sched_hooks[i], __ATOMIC_ACQUIRE);
        if (f)
            f(vp, where);
    }
}

int nth_sched_hook_add(nth_sched_hook_fn fn)
{
    if (!fn)
        return EINVAL;
    int r = ENOSPC;
    nth_futex_lock(&hooks_lock);
    for (int i = 0; i < NTH_HOOKS_MAX; i++) {
        if (!sched_hooks[i]) {
            __atomic_store_n(&sched_hooks[i], fn, __ATOMIC_RELEASE);
            __atomic_fetch_add(&nth_nsched_hooks, 1, __ATOMIC_RELEASE);
            r = 0;
            break;
        }
    }
    nth_futex_unlock(&hooks_lock);
    return r;
}

int nth_sched_hook_remove(nth_sched_hook_fn fn)
{
    int r = ESRCH;
    nth_futex_lock(&hooks_lock);
    for (int i = 0; i < NTH_HOOKS_MAX; i++) {
        if (sched_hooks[i] == fn) {
            __atomic_store_n(&sched_hooks[i], NULL, __ATOMIC_RELEASE);
            __atomic_fetch_sub(&nth_nsched_hooks, 1, __ATOMIC_RELEASE);
            r = 0;
            break;
        }
    }
    nth_futex_unlock(&hooks_lock);
    return r;
}

nth_idle_timeout_fn nth_idle_timeout;

nth_switch_hook_fn nth_switch_hook;

int nth_switch_hook_set(nth_switch_hook_fn fn)
{
    /* Sequentially consistent: Dekker with park() (idle.c), which clears
     * park_word, fences, then loads the hook. */
    __atomic_store_n(&nth_switch_hook, fn, __ATOMIC_SEQ_CST);
    if (!fn || !nth_rt.vps)
        return 0;
    /* The idle contexts call the hook before they park (idle.c), but one
     * parked before it was set would sleep on without it, maybe for good:
     * the pthread shim blocks signals there, and a VP asleep with the
     * process's start-up mask took process-directed signals every running
     * thread blocked (their default action ended the process). Wake each:
     * with nothing to do it goes round its loop, through the hook, and
     * parks again. */
    struct nth_vp *self = nth_vp_self();
    const struct nth_park_ops *ops = __atomic_load_n(&nth_park_ops, __ATOMIC_ACQUIRE);
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_vp *v = nth_rt.vps[i];
        if (!v || v == self)
            continue;
        int zero = 0;
        if (__atomic_compare_exchange_n(&v->park_word, &zero, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
            nth_futex_wake(&v->park_word, 1);
        if (ops && __atomic_load_n(&v->disabled, __ATOMIC_ACQUIRE))
            ops->wake(v);
    }
    /* Return only once each other VP's idle context has called it, or the
     * VP runs a nano-thread (whose data the hook gets when it next
     * resumes; until then the kernel thread has that nano-thread's state,
     * as before the hook). A woken VP may wait tens of milliseconds for
     * its CPU on a loaded machine: the pthread shim's first mask change
     * returned meanwhile, and a process-directed signal every nano-thread
     * now blocked went to that idle VP, still with the start-up mask
     * (SIGRTMIN killed posix-signals about 1 run in 10 at load 15). Kernel
     * sleeps, not nth_yield: the caller may be no nano-thread, and under
     * the shim nanosleep would be its nap. At most about 2 s per VP (a VP
     * that never runs again is a bug elsewhere; the hook still applies
     * when it does). */
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_vp *v = nth_rt.vps[i];
        if (!v || v == self)
            continue;
        for (int k = 0; k < 100000; k++) {
            if (__atomic_load_n(&v->hook_seen, __ATOMIC_ACQUIRE) == fn)
                break;
            struct nth_thread *c = __atomic_load_n(&v->current, __ATOMIC_ACQUIRE);
            if (c && c != &v->idle)
                break;
            struct timespec ts = { 0, 20000 };
            syscall(SYS_nanosleep, &ts, NULL);
        }
    }
    return 0;
}

int nth_switch_data_set(void *data)
{
    struct nth_vp *vp = nth_vp_self();
    if (!vp || (vp->current->flags & NTH_TF_IDLE))
        return EPERM;
    vp->current->user[NTH_SWITCH_SLOT] = data;
    return 0;
}

void nth_idle_timeout_set(nth_idle_timeout_fn fn)
{
    __atomic_store_n(&nth_idle_timeout, fn, __ATOMIC_RELEASE);
}

int nth_vp_handoff(struct nth_vp *vp)
{
    (void)vp;
    return ENOSYS;
}
