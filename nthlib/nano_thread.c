/*
 * nano_thread.c -- nano-thread life cycle: create, join, detach, exit, and
 * the two blocking primitives every later construct is built on, nth_wait
 * and nth_to_rq.
 *
 * Join/detach/exit agree through one CAS word (jstate) so that exactly one of
 * the joiner, the detacher or the exiting thread releases the stack, and a
 * released descriptor turns stale (magic) so later calls on its handle return
 * ESRCH instead of touching a reused unit by accident.
 */
#include "internal.h"
#include "trace_core.h"
#include "libc_real.h"
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static nth_exit_hook_fn exit_hooks[NTH_HOOKS_MAX];
static int nexit_hooks;                 /* so exits skip the scan when none */
static nth_futex_lock_t exit_hooks_lock = NTH_FUTEX_LOCK_INIT;

int nth_exit_hook_add(nth_exit_hook_fn fn)
{
    if (!fn)
        return EINVAL;
    int r = ENOSPC;
    nth_futex_lock(&exit_hooks_lock);
    for (int i = 0; i < NTH_HOOKS_MAX; i++) {
        if (!exit_hooks[i]) {
            __atomic_store_n(&exit_hooks[i], fn, __ATOMIC_RELEASE);
            __atomic_fetch_add(&nexit_hooks, 1, __ATOMIC_RELEASE);
            r = 0;
            break;
        }
    }
    nth_futex_unlock(&exit_hooks_lock);
    return r;
}

/* The runtime is almost always running: test inline, call only to start. */
static inline void ensure_started(void)
{
    if (__builtin_expect(!nth_started(), 0))
        nth_ensure_started();
}

/* ---- attributes --------------------------------------------------------- */

#define STACK_MAX ((size_t)1 << 30)

int nth_attr_init(nth_attr_t *attr)
{
    if (!attr)
        return EINVAL;
    memset(attr, 0, sizeof(*attr));
    attr->vp = NTH_VP_ANY;
    return 0;
}

int nth_attr_setstacksize(nth_attr_t *attr, size_t bytes)
{
    if (!attr || bytes < NTH_STACK_MIN || bytes > STACK_MAX)
        return EINVAL;
    attr->stack_size = bytes;
    return 0;
}

int nth_attr_getstacksize(const nth_attr_t *attr, size_t *bytes)
{
    if (!attr || !bytes)
        return EINVAL;
    *bytes = attr->stack_size;
    return 0;
}

int nth_attr_setstack(nth_attr_t *attr, void *addr, size_t bytes)
{
    if (!attr || !addr || bytes < NTH_STACK_MIN || bytes > STACK_MAX)
        return EINVAL;
    attr->reserved[0] = (uintptr_t)addr;
    attr->stack_size = bytes;
    return 0;
}

int nth_attr_getstack(const nth_attr_t *attr, void **addr, size_t *bytes)
{
    if (!attr || !addr || !bytes)
        return EINVAL;
    *addr = (void *)attr->reserved[0];
    *bytes = attr->stack_size;
    return 0;
}

int nth_attr_setguardsize(nth_attr_t *attr, size_t bytes)
{
    if (!attr || bytes > STACK_MAX)
        return EINVAL;
    attr->reserved[1] = bytes + 1;
    return 0;
}

int nth_attr_getguardsize(const nth_attr_t *attr, size_t *bytes)
{
    if (!attr || !bytes)
        return EINVAL;
    *bytes = attr->reserved[1] ? attr->reserved[1] - 1 : nth_page_size();
    return 0;
}

int nth_attr_setdetached(nth_attr_t *attr, int detached)
{
    if (!attr || (detached != 0 && detached != 1))
        return EINVAL;
    attr->detached = detached;
    return 0;
}

int nth_attr_getdetached(const nth_attr_t *attr, int *detached)
{
    if (!attr || !detached)
        return EINVAL;
    *detached = attr->detached;
    return 0;
}

int nth_attr_setvp(nth_attr_t *attr, int vp)
{
    if (!attr || (vp != NTH_VP_ANY && vp < 0))
        return EINVAL;
    attr->vp = vp;
    return 0;
}

int nth_attr_getvp(const nth_attr_t *attr, int *vp)
{
    if (!attr || !vp)
        return EINVAL;
    *vp = attr->vp;
    return 0;
}

int nth_attr_setname(nth_attr_t *attr, const char *name)
{
    if (!attr || !name)
        return EINVAL;
    strncpy(attr->name, name, NTH_NAME_MAX - 1);
    attr->name[NTH_NAME_MAX - 1] = '\0';
    return 0;
}

static int attr_check(const nth_attr_t *a)
{
    if (a->stack_size && (a->stack_size < NTH_STACK_MIN || a->stack_size > STACK_MAX))
        return EINVAL;
    if (a->detached != 0 && a->detached != 1)
        return EINVAL;
    if (a->reserved[1] > STACK_MAX + 1)
        return EINVAL;
    if (a->vp != NTH_VP_ANY && (a->vp < 0 || a->vp >= nth_rt.nvps))
        return EINVAL;
    if (memchr(a->name, '\0', NTH_NAME_MAX) == NULL)
        return EINVAL;
    return 0;
}

/* ---- create ------------------------------------------------------------- */

/* The fields of a new descriptor that both create paths set alike. */
static inline __attribute__((always_inline))
void desc_init(struct nth_thread *t, void *(*fn)(void *), void *arg)
{
    t->flags = NTH_TF_FRESH;             /* nth_sched_switch makes its context */
    /* RUNNING, like a yielder in a queue: nth_to_rq treats both as ready,
     * and the VP that dequeues it needs no CAS to READY -> RUNNING. */
    t->state = NTH_ST_RUNNING;
    t->on_cpu = 0;
    t->jstate = NTH_J_JOINABLE;
    t->fn = fn;
    t->arg = arg;
    t->result = NULL;
    t->vp = NULL;
    t->move_to = 0;
    t->specific = NULL;
    t->wait_real = 0;   /* a cancelled sliced wait may have left it set */
    t->trace_obj = 0;
    t->trace_kind = 0;
    /* Not memset: GCC made a rep stos of it here (slow to start). */
    for (unsigned i = 0; i < sizeof t->user / sizeof t->user[0]; i++)
        t->user[i] = NULL;
}

/* nth_create in general: attributes, tracing, tools, a kernel thread that
 * is no VP, a unit not in the cache, a busy local queue. */
static __attribute__((noinline))
int create_general(nth_t *out, const nth_attr_t *attr, void *(*fn)(void *), void *arg)
{
    uint64_t tr0 = nth_trace_rt_clock();
    if (!out || !fn)
        return EINVAL;
    ensure_started();
    if (attr && attr_check(attr))
        return EINVAL;
    struct nth_vp *vp = nth_vp_self();
    char *ustack = attr ? (char *)attr->reserved[0] : NULL;
    size_t size = attr && attr->stack_size ? attr->stack_size : nth_rt.cfg.stack_size;
    /* On the caller's stack the unit only holds the descriptor: take the
     * smallest; nth_unit_free gives the unit its own stack back. */
    size_t usize = ustack ? NTH_STACK_MIN : size;
    size_t pg = nth_page_size();
    size_t guard = pg;
    if (attr && attr->reserved[1] && !ustack)
        guard = (attr->reserved[1] - 1 + pg - 1) & ~(pg - 1);
    struct nth_thread *t = vp && guard == pg ? nth_unit_get(vp, usize)
                                             : nth_unit_alloc(vp, usize, guard);
    if (!t)
        return EAGAIN;
    desc_init(t, fn, arg);
    if (ustack) {
        t->stack_lo = ustack;
        t->stack_size = size;
        t->flags = NTH_TF_FRESH | NTH_TF_USTACK;
    }
    if (attr && attr->detached)
        t->jstate = NTH_J_DETACHED;
    t->id = nth_new_id(vp);
    if (vp)
        vp->last_created = t;
    t->home_vp = attr ? attr->vp : NTH_VP_ANY;
    if (attr)
        memcpy(t->name, attr->name, NTH_NAME_MAX);
    else
        t->name[0] = '\0';
    nth_tool_thread_created(t);
    nth_trace_rt_create(vp, t, tr0);
    /* A stand-in's shell (id -1) is in no VP list that live_count sums:
     * count it as a creator that is no VP. */
    if (vp && vp->id >= 0)
        __atomic_store_n(&vp->ncreated, vp->ncreated + 1, __ATOMIC_RELAXED);
    else
        __atomic_fetch_add(&nth_rt.live, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&t->magic, NTH_MAGIC_LIVE, __ATOMIC_RELEASE);
    *out = t;
    struct nth_vp *target = attr && attr->vp != NTH_VP_ANY ? nth_rt.vps[attr->vp] : vp;
    if (target == vp && vp && vp->id >= 0 &&
        !__atomic_load_n(&vp->next_local, __ATOMIC_RELAXED) && nth_rq_empty(&vp->rq) &&
        !__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&vp->blocking, __ATOMIC_RELAXED)) {
        /* The local queue is empty, so its head slot is its tail: the
         * order is the same as behind rq, and the VP takes it without the
         * queue's lock (create then join: no queue operation at all). A
         * plain store: only this VP ever fills the slot; thieves only
         * empty it (after steal.c's grace, while we run). */
        __atomic_store_n(&vp->next_local, t, __ATOMIC_RELEASE);
        if (nth_rt.nvps > 1)            /* else no other VP could take it */
            nth_sched_wake_idle(vp);
        return 0;
    }
    nth_sched_enqueue(target, t);
    return 0;
}


/* The common case inline, with no call and no register to save: no
 * attributes, untraced, no tool, a VP whose local queue is empty and whose
 * cache has a unit of the default size, an id left in its block. Anything
 * else, create_general. Tracing is tested once, at entry: a trace that
 * starts during the call sees the nano-thread as one created just before
 * it (nth_trace_rt_create's own test had the same window). */
int nth_create(nth_t *out, const nth_attr_t *attr, void *(*fn)(void *), void *arg)
{
    struct nth_vp *vp;
    if (__builtin_expect(!attr && out && fn && nth_started(), 1) &&
        !__atomic_load_n(&nth_trace_on, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&nth_tool_active, __ATOMIC_RELAXED) &&
        (vp = nth_vp_self()) != NULL && vp->id >= 0 &&
        vp->id_next != vp->id_end &&
        !__atomic_load_n(&vp->next_local, __ATOMIC_RELAXED) && nth_rq_empty(&vp->rq) &&
        !__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&vp->blocking, __ATOMIC_RELAXED)) {
        struct nth_unit_cache *uc = &vp->cache[0];
        struct nth_thread *t = uc->head;
        if (__builtin_expect(t && uc->stack_size == nth_rt.cfg.stack_size, 1)) {
            uc->head = t->next_free;
            uc->n--;
            desc_init(t, fn, arg);
            t->id = vp->id_next++;
            t->home_vp = NTH_VP_ANY;
            t->name[0] = '\0';
            vp->last_created = t;
            __atomic_store_n(&vp->ncreated, vp->ncreated + 1, __ATOMIC_RELAXED);
            __atomic_store_n(&t->magic, NTH_MAGIC_LIVE, __ATOMIC_RELEASE);
            *out = t;
            /* As create_general: the head slot of an empty local queue. */
            __atomic_store_n(&vp->next_local, t, __ATOMIC_RELEASE);
            if (nth_rt.nvps > 1)
                nth_sched_wake_idle(vp);
            return 0;
        }
    }
    return create_general(out, attr, fn, arg);
}

uint64_t nth__new_id(struct nth_vp *vp)
{
    if (!vp)
        return __atomic_fetch_add(&nth_rt.next_id, 1, __ATOMIC_RELAXED);
    if (vp->id_next == vp->id_end) {
        vp->id_next = __atomic_fetch_add(&nth_rt.next_id, NTH_ID_BLOCK, __ATOMIC_RELAXED);
        vp->id_end = vp->id_next + NTH_ID_BLOCK;
    }
    return vp->id_next++;
}

/* Live nano-threads: the exits are read before the creations, so a sum of
 * zero means that at the time of the first read none was alive, and none
 * can have been created since (only a live one could). */
static long live_count(void)
{
    long n = 0;
    for (int i = 0; i < nth_rt.nvps; i++)
        n -= (long)__atomic_load_n(&nth_rt.vps[i]->nexited, __ATOMIC_ACQUIRE);
    n += __atomic_load_n(&nth_rt.live, __ATOMIC_ACQUIRE);
    for (int i = 0; i < nth_rt.nvps; i++)
        n += (long)__atomic_load_n(&nth_rt.vps[i]->ncreated, __ATOMIC_ACQUIRE);
    return n;
}

void nth_exit_if_last(void)
{
    nth_full_fence();
    if (live_count() != 0)
        return;
    int zero = 0;
    if (__atomic_compare_exchange_n(&nth_rt.exiting, &zero, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        exit(0);                        /* after pthread_exit from main */
}

/* ---- release ------------------------------------------------------------ */

/* Free an exited nano-thread once its context is saved; the caller won the
 * jstate CAS to NTH_J_REAPED. */
static inline __attribute__((always_inline)) void reap(struct nth_thread *t)
{
    while (__atomic_load_n(&t->on_cpu, __ATOMIC_ACQUIRE))
        nth_cpu_relax();
    if (t->flags & NTH_TF_MAIN) {
        __atomic_store_n(&t->magic, NTH_MAGIC_FREE, __ATOMIC_RELEASE);
        return;
    }
    nth_tool_thread_freed(t);
    struct nth_vp *vp = nth_vp_self();
    if (vp)
        nth_unit_put(vp, t);
    else
        nth_unit_free(NULL, t);
}

#ifdef NTH_CTX_HAVE_CALL
static void call_entry(void *desc);

/* Run t, fresh and taken by the direct join (ours alone: in no queue, its
 * jstate naming us), as a function call on its own stack rather than a
 * switch to it and, at its exit, a switch back: the two returns then pair
 * with their calls and are predicted, and there is no post-switch work.
 * vp->current is t, as after a switch, so nth_self(), keys, blocking and
 * migration are t's; so are its stack size and guard page, and with them
 * the overflow message. Our frame waits below nth_ctx_call on our own
 * stack (no queue holds us: only t's end resumes us), by t's return, or by
 * nth_ctx_jump when t calls nth_exit (exit_current). t may block and end
 * on another VP: we go on there, as a joiner woken by its exit would. */
static void call_child(struct nth_vp *vp, struct nth_thread *self, struct nth_thread *t)
{
    t->flags = (t->flags & ~NTH_TF_FRESH) | NTH_TF_CALLED;
    t->on_cpu = 1;
    t->vp = vp;
    /* What a switch to t records (switch_to in sched.c). */
    __atomic_store_n(&vp->current, t, __ATOMIC_RELAXED);
    __atomic_store_n(&vp->nswitch, vp->nswitch + 1, __ATOMIC_RELAXED);
    nth_trace_rt_switch(vp, self, t);
    int e = *vp->errno_loc;
    nth_ctx_call(&self->ctx, t->stack_lo, t->stack_size, call_entry, t);
    vp = nth_vp_self();
    *vp->errno_loc = e;
    /* A hook installed while t ran (it was none at the call): our signal
     * mask back, as after a switch. */
    nth_switch_hook_fn h = __atomic_load_n(&nth_switch_hook, __ATOMIC_RELAXED);
    if (__builtin_expect(h != NULL, 0))
        h(self->user[NTH_SWITCH_SLOT]);
}
#endif

/* Join of the head of the caller's own local queue (create then join):
 * switch to it at once instead of blocking and letting the pick find it,
 * which it would, first (the global queue's turn aside, checked here). The
 * joiner stays RUNNING and in no queue, registered as self | NTH_J_DIRECT;
 * nth_exit resumes it directly. 1 when t has exited (jstate EXITED), 0 when
 * nothing was done and the caller takes the general path. Called with
 * tracing off at the join's entry: traced, the joiner must show blocked
 * (SYNCH on the join) at the switch, which the general path does. */
static int join_direct(struct nth_vp *vp, struct nth_thread *self, struct nth_thread *t)
{
    if (vp->id < 0 || __atomic_load_n(&vp->disabled, __ATOMIC_RELAXED) ||
        ((vp->npick + 1) % NTH_GRQ_EVERY == 0 && !nth_rq_empty(&nth_rt.grq)))
        return 0;
    if (__builtin_expect(__atomic_load_n(&nth_nsched_hooks, __ATOMIC_RELAXED) != 0, 0)) {
        nth_run_sched_hooks(vp, NTH_SP_WAIT);
        vp = nth_vp_self();             /* hooks may have switched */
        if (vp->id < 0 || __atomic_load_n(&vp->disabled, __ATOMIC_RELAXED))
            return 0;
    }
    struct nth_thread *x = t;
    if (!__atomic_compare_exchange_n(&vp->next_local, &x, NULL, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return 0;
    /* Ours now: no thief or stand-in can run it. */
    uintptr_t j = NTH_J_JOINABLE;
    if (!__atomic_compare_exchange_n(&t->jstate, &j, (uintptr_t)self | NTH_J_DIRECT, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        /* Detached or joined meanwhile: back to the head, where it was
         * (only this VP fills the slot). */
        x = NULL;
        if (__atomic_compare_exchange_n(&vp->next_local, &x, t, 0,
                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
            nth_sched_wake_idle_rmw(vp);
        else
            nth_sched_enqueue(vp, t);
        return 0;
    }
    vp->npick++;                        /* a pick, for the global queue's turn */
    if ((__atomic_load_n(&t->state, __ATOMIC_RELAXED) & NTH_ST_MASK) != NTH_ST_RUNNING)
        nth_thread_try_run(t);
    /* Tracing was off: no SYNCH to name, no leave time to take (a trace
     * started just now records this switch without it). */
    nth_vp_rebind_if_due(vp);
#ifdef NTH_CTX_HAVE_CALL
    /* Not when a tool annotates stacks (sanitizers, valgrind: their fiber
     * and stack records follow real switches), nor with a switch hook
     * (the pthread shim's signal masks are switched by it), nor with
     * per-nano-thread thread pointers (loaded by the switch). */
    if ((t->flags & NTH_TF_FRESH) && __atomic_load_n(&nth_tool_active, __ATOMIC_RELAXED) == 0 &&
        !__atomic_load_n(&nth_switch_hook, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&nth_tp_on, __ATOMIC_RELAXED)) {
        call_child(vp, self, t);
        vp = nth_vp_self();
        /* Our CPU was taken away while t ran: leave it, as at the switch
         * to us the exit would have (through the global queue). */
        if (__builtin_expect(__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED), 0))
            nth_yield();
        return 1;
    }
#endif
    nth_sched_switch(vp, t, NTH_PS_NONE);
    return 1;
}

/* A joiner that is no VP (NTH_J_FOREIGN) sleeps on the low 32 bits of
 * jstate, which the exit changes to NTH_J_EXITED. */
static int *join_word(struct nth_thread *t)
{
    _Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "jstate's low half");
    return (int *)(void *)&t->jstate;
}

int nth_join(nth_t th, void **ret)
{
    uint64_t tr0 = nth_trace_rt_clock();
    ensure_started();
    struct nth_vp *vp = nth_vp_self();
    struct nth_thread *t;
    /* th non-NULL: a VP that never created has last_created NULL, and
     * nth_join(NULL) must be ESRCH there too. */
    if (vp && th && th == vp->last_created)
        t = __atomic_load_n(&th->magic, __ATOMIC_ACQUIRE) == NTH_MAGIC_LIVE ? th : NULL;
    else
        t = nth_desc_check(th);
    if (!t)
        return ESRCH;
    struct nth_thread *self = vp ? vp->current : NULL;
    if (t == self)
        return EDEADLK;
    uintptr_t j = __atomic_load_n(&t->jstate, __ATOMIC_ACQUIRE);
    for (;;) {
        if (j == NTH_J_DETACHED)
            return EINVAL;
        if (j == NTH_J_REAPED)
            return ESRCH;
        if (j == NTH_J_EXITED) {
            if (__atomic_compare_exchange_n(&t->jstate, &j, NTH_J_REAPED, 0,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                break;
            continue;
        }
        if (j != NTH_J_JOINABLE)
            return EINVAL;              /* another nano-thread joins it */
        /* Untraced at entry (tr0 0), the head of our own queue: direct.
         * Not while this kernel thread holds an ld.so lock: the direct
         * path switches to t, and we might come back on another. */
        if (self && !tr0 && __atomic_load_n(&vp->next_local, __ATOMIC_RELAXED) == t &&
            !nth_ldso_held(vp) && join_direct(vp, self, t)) {
            /* It exited (EXITED) and switched back to us: only we write
             * jstate now. No OVERHEAD level was pushed (tr0 0). */
            __atomic_store_n(&t->jstate, NTH_J_REAPED, __ATOMIC_RELEASE);
            nth_trace_rt_join_done(self, 0);    /* a trace started meanwhile */
            if (ret)
                *ret = t->result;
            reap(t);
            return 0;
        }
        uintptr_t me = self ? (uintptr_t)self : NTH_J_FOREIGN;
        if (!__atomic_compare_exchange_n(&t->jstate, &j, me, 0,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            continue;
        /* Registered: sleep until the exit sets EXITED (nth_wait may return
         * early on a stale permit, so re-check). */
        nth_trace_rt_wait_obj(self, t->id, NTH_OBJ_JOIN);
        while ((j = __atomic_load_n(&t->jstate, __ATOMIC_ACQUIRE)) != NTH_J_EXITED) {
            if (self)
                nth_wait();
            else                        /* a kernel thread that is no VP */
                nth_futex_wait(join_word(t), (int)NTH_J_FOREIGN, -1);
        }
        __atomic_store_n(&t->jstate, NTH_J_REAPED, __ATOMIC_RELEASE);
        nth_trace_rt_wait_obj(self, 0, 0);
        nth_trace_rt_join_done(self, tr0);
        break;
    }
    if (ret)
        *ret = t->result;
    reap(t);
    nth_trace_rt_join_end(self, tr0);
    return 0;
}

int nth_detach(nth_t th)
{
    ensure_started();
    struct nth_thread *t = nth_desc_check(th);
    if (!t)
        return ESRCH;
    uintptr_t j = __atomic_load_n(&t->jstate, __ATOMIC_ACQUIRE);
    for (;;) {
        if (j == NTH_J_JOINABLE) {
            if (__atomic_compare_exchange_n(&t->jstate, &j, NTH_J_DETACHED, 0,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return 0;
        } else if (j == NTH_J_EXITED) {
            if (__atomic_compare_exchange_n(&t->jstate, &j, NTH_J_REAPED, 0,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                reap(t);
                return 0;
            }
        } else if (j == NTH_J_REAPED) {
            return ESRCH;
        } else {
            return EINVAL;              /* detached, or being joined */
        }
    }
}

/* ---- exit --------------------------------------------------------------- */

static int to_rq(struct nth_thread *t, int home);

/* Never returns; not declared noreturn, which GCC reads as "executed
 * once" and then stops inlining in it (the exit of every nano-thread). */
static void exit_current(struct nth_vp *vp, struct nth_thread *t, void *ret, int called)
    __attribute__((always_inline));

void nth_exit(void *ret)
{
    ensure_started();
    struct nth_vp *vp = nth_vp_self();
    if (!vp) {
        /* A kernel thread that is no VP has no nano-thread to end. */
        pthread_exit(ret);
    }
    exit_current(vp, vp->current, ret, 0);
    __builtin_unreachable();
}

/* sched.c: t's function returned ret; t runs on this VP. */
void nth__exit_return(struct nth_thread *t, void *ret)
{
    exit_current(nth_vp_self(), t, ret, 0);
}

#ifdef NTH_CTX_HAVE_CALL
/* First code of a nano-thread run by call_child, on its own stack: as
 * nth_thread_entry, but its end returns to the joiner's call. */
static void call_entry(void *desc)
{
    struct nth_thread *t = desc;
    struct nth_vp *vp = nth_vp_self();
    vp->nstarted++;
    vp->ncalled++;
    void *r = t->fn(t->arg);
    exit_current(nth_vp_self(), t, r, 1);
}
#endif

/* The end of t, the nano-thread running on vp (the runtime is started).
 * Never returns, but for called 1 (t's function returned in call_entry)
 * and t run by call_child: then it returns, to go back to the joiner. */
static inline void exit_current(struct nth_vp *vp, struct nth_thread *t, void *ret, int called)
{
    if (__atomic_load_n(&nexit_hooks, __ATOMIC_ACQUIRE) != 0) {
        for (int i = 0; i < NTH_HOOKS_MAX; i++) {
            nth_exit_hook_fn f = __atomic_load_n(&exit_hooks[i], __ATOMIC_ACQUIRE);
            if (f)
                f(t);
        }
        vp = nth_vp_self();             /* hooks may have switched */
    }
    nth_sched_point(vp, NTH_SP_EXIT);
    vp = nth_vp_self();
    t->result = ret;
    /* The test here too: GCC, inlining this into the noreturn nth_exit
     * as well, leaves the hook out of line, a call on every exit. */
    NTH_TRACE_IF_ON nth_trace_rt_exit(t);
    if (t->flags & NTH_TF_MAIN)
        __atomic_store_n(&nth_rt.main_exited, 1, __ATOMIC_SEQ_CST);
    /* An exit on a stand-in's shell (id -1), which live_count does not
     * sum, comes off the shared count: counted there, a nano-thread that
     * ended while a stand-in ran it kept the count above zero for ever,
     * and a process whose main had exited never ended. */
    if (__builtin_expect(vp->id >= 0, 1))
        __atomic_store_n(&vp->nexited, vp->nexited + 1, __ATOMIC_RELAXED);
    else
        __atomic_fetch_sub(&nth_rt.live, 1, __ATOMIC_SEQ_CST);
    if (__builtin_expect(__atomic_load_n(&nth_rt.main_exited, __ATOMIC_RELAXED), 0))
        nth_exit_if_last();
    __atomic_store_n(&t->state, NTH_ST_EXITED, __ATOMIC_RELEASE);
    int action = NTH_PS_EXITED;
    struct nth_thread *joiner = NULL;
    uintptr_t j = __atomic_load_n(&t->jstate, __ATOMIC_ACQUIRE);
    for (;;) {
        if (j == NTH_J_DETACHED) {
            if (__atomic_compare_exchange_n(&t->jstate, &j, NTH_J_REAPED, 0,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                action = NTH_PS_FREE;
                break;
            }
            continue;
        }
        if (j > NTH_J_REAPED) {
            /* A registered joiner: from now on only we write jstate (join
             * and detach of others fail on a joiner), so a store does. */
            __atomic_store_n(&t->jstate, NTH_J_EXITED, __ATOMIC_RELEASE);
            if (j != NTH_J_FOREIGN)
                joiner = (struct nth_thread *)(j & ~NTH_J_DIRECT);
            else
                nth_futex_wake(join_word(t), 1);  /* mapped still: no write */
            break;
        }
        if (__atomic_compare_exchange_n(&t->jstate, &j, NTH_J_EXITED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            break;                      /* JOINABLE: no joiner yet */
    }
    if (joiner && (j & NTH_J_DIRECT)) {
#ifdef NTH_CTX_HAVE_CALL
        if (t->flags & NTH_TF_CALLED) {
            /* It called us (call_child) and waits in that call: from now
             * on it is the VP's nano-thread, as after a switch to it. A
             * disabled VP: the joiner leaves it itself (join_direct). */
            __atomic_store_n(&vp->current, joiner, __ATOMIC_RELAXED);
            __atomic_store_n(&vp->nswitch, vp->nswitch + 1, __ATOMIC_RELAXED);
            joiner->vp = vp;
            nth_trace_rt_switch(vp, t, joiner);
            /* Our stack is freed only by the joiner, on its own stack. */
            __atomic_store_n(&t->on_cpu, 0, __ATOMIC_RELEASE);
            if (called)
                return;
            nth_ctx_jump(&joiner->ctx);     /* nth_exit: out of the call */
        }
#else
        (void)called;
#endif
        /* It switched to us and waits RUNNING in no queue: the VP's next
         * nano-thread, as a dequeued yielder would be. */
        if (!__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED)) {
            nth_sched_switch_exit(vp, joiner, action);
            __builtin_unreachable();
        }
        nth_sched_enqueue(vp, joiner);  /* the global queue, for another VP */
    } else if (joiner) {
        /* Hand the VP straight to a joiner that already sleeps: no trip
         * through a ready queue (the create/join fast path). Otherwise it is
         * about to sleep, and the permit makes its nth_wait return. */
        int s = NTH_ST_BLOCKED;
        if (!__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED) &&
            __atomic_compare_exchange_n(&joiner->state, &s, NTH_ST_RUNNING, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            nth_sched_switch_exit(vp, joiner, action);
            __builtin_unreachable();
        }
        to_rq(joiner, 0);               /* it waits for EXITED: alive */
    }
    nth_sched_block(vp, action);
    __builtin_unreachable();
}

/* ---- blocking ----------------------------------------------------------- */

/* nth_wait of a nano-thread whose kernel thread holds one of ld.so's
 * locks (nth_ldso_held): it must come back on this kernel thread, the
 * lock's owner, and no other nano-thread may run here meanwhile (it would
 * enter ld.so as the owner). So the kernel thread sleeps on the state word
 * (BLOCKED | KWAIT; to_rq wakes it) with the VP lent to a stand-in, as in
 * a system call (nth_blocking_enter). No scheduling-point hooks: they may
 * switch. */
static void wait_pinned(struct nth_thread *self)
{
    int s = __atomic_load_n(&self->state, __ATOMIC_ACQUIRE);
    for (;;) {
        if (s & NTH_ST_PERMIT) {
            if (__atomic_compare_exchange_n(&self->state, &s, s & ~NTH_ST_PERMIT, 1,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return;
            continue;
        }
        if (__atomic_compare_exchange_n(&self->state, &s, NTH_ST_BLOCKED | NTH_ST_KWAIT, 1,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            break;
    }
    int e = errno;
    int entered = nth_blocking_enter();  /* EBUSY: inside one already */
    while (__atomic_load_n(&self->state, __ATOMIC_ACQUIRE) == (NTH_ST_BLOCKED | NTH_ST_KWAIT))
        nth_futex_wait(&self->state, NTH_ST_BLOCKED | NTH_ST_KWAIT, -1);
    if (entered != EBUSY)
        nth_blocking_leave();
    errno = e;
}

void nth_wait(void)
{
    ensure_started();
    struct nth_vp *vp = nth_vp_self();
    if (!vp)
        return;                          /* no nano-thread to block */
    struct nth_thread *self = vp->current;
    if (__builtin_expect(nth_ldso_held(vp), 0)) {
        wait_pinned(self);
        return;
    }
    nth_sched_point(vp, NTH_SP_WAIT);
    vp = nth_vp_self();
    int s = __atomic_load_n(&self->state, __ATOMIC_ACQUIRE);
    for (;;) {
        if (s & NTH_ST_PERMIT) {
            if (__atomic_compare_exchange_n(&self->state, &s, s & ~NTH_ST_PERMIT, 1,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return;
            continue;
        }
        if (__atomic_compare_exchange_n(&self->state, &s, NTH_ST_BLOCKED, 1,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            break;
    }
    nth_sched_block(vp, NTH_PS_NONE);
}

/* make_ready's home: 0 the waker's choice (next_local), 1 t's last VP
 * with a grace, 2 t's last VP without, WAKE_FIFO the tail of the waker's
 * local queue (nth__wake_fifo). */
#define WAKE_FIFO 3

/* Where a nano-thread made ready goes. Called once its state is READY. */
static void make_ready(struct nth_thread *t, int home)
{
    nth_trace_state(t->id, NTH_TRACE_READY, NULL);
    struct nth_vp *vp = nth_vp_self();
    if (home == WAKE_FIFO) {
        /* Behind what is ready already (nth__wake_fifo says why); no VP
         * (the backstop firing held alarms): the global queue. */
        nth_sched_enqueue(vp && vp->id >= 0 ? vp : NULL, t);
        return;
    }
    if (home) {
        /* Back to the VP it last ran on (parallel.c: a team member keeps
         * its VP and the data it touched there), if that VP may run. */
        struct nth_vp *h = t->vp;
        if (h && h->id >= 0 && !__atomic_load_n(&h->disabled, __ATOMIC_RELAXED)) {
            vp = h;
            if (home == 2) {
                nth_sched_enqueue(vp, t);   /* nth__to_rq_last_vp: no grace */
                return;
            }
            /* Kept there for thieves a moment (NTH_HOME_GRACE_NS); the
             * woken one clears it (parallel.c, home_arrived). Stored before the
             * enqueue publishes t. */
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            __atomic_store_n(&t->move_until,
                             (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + NTH_HOME_GRACE_NS,
                             __ATOMIC_RELAXED);
            __atomic_store_n(&t->move_to, h->id + 1, __ATOMIC_RELAXED);
        }
        nth_sched_enqueue(vp, t);
        return;
    }
    if (vp && vp->id >= 0 && vp->current != &vp->idle &&
        !__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&vp->blocking, __ATOMIC_RELAXED)) {
        /* The waker's VP runs it next, when the waker blocks or yields
         * (Go's runnext: a producer and its consumer share a VP and a
         * cache instead of bouncing between CPUs). An earlier occupant
         * goes to the tail of the local queue. Thieves leave the slot
         * alone for a moment (steal.c). */
        if (__atomic_load_n(&nth_next_local_plain, __ATOMIC_RELAXED) &&
            !__atomic_load_n(&vp->next_local, __ATOMIC_RELAXED)) {
            /* One VP, an empty slot: only this kernel thread fills it, so
             * a plain store; no idle VP to wake; the monitor's membarrier
             * orders it against a doze (nth_next_local_plain). */
            __atomic_store_n(&vp->next_local, t, __ATOMIC_RELEASE);
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
            nth_watchdog_unparked();
            return;
        }
        struct nth_thread *old = __atomic_exchange_n(&vp->next_local, t, __ATOMIC_SEQ_CST);
        if (old) {
            nth_rq_push(&vp->rq, old);
            nth_sched_wake_idle(vp);
        } else {
            nth_sched_wake_idle_rmw(vp);
        }
        return;
    }
    nth_sched_enqueue(vp, t);
}

/* t is a live descriptor. BLOCKED goes straight to RUNNING, not READY: a
 * nano-thread in a ready queue that is RUNNING is handled like a yielder
 * (a later nth_to_rq only sets the permit, the VP that takes it needs no
 * CAS), so a wake-up costs one CAS instead of two. */
static int to_rq(struct nth_thread *t, int home)
{
    int s = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
    for (;;) {
        int st = s & NTH_ST_MASK;
        if (st == NTH_ST_BLOCKED) {
            if (__atomic_compare_exchange_n(&t->state, &s, NTH_ST_RUNNING, 1,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                /* s is what we replaced: a waiter on its own kernel
                 * thread (wait_pinned) is woken there, never queued. If
                 * it woke early and went on (even ended) before this
                 * wake, the wake is a spurious one for whoever sleeps on
                 * that word now, which every futex waiter re-checks, or
                 * EFAULT on memory given back. */
                if (s & NTH_ST_KWAIT)
                    nth_futex_wake(&t->state, 1);
                else
                    make_ready(t, home);
                return 0;
            }
            continue;
        }
        if (st == NTH_ST_EXITED || (s & NTH_ST_PERMIT))
            return 0;
        if (__atomic_compare_exchange_n(&t->state, &s, s | NTH_ST_PERMIT, 1,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return 0;
    }
}

int nth_to_rq(nth_t th)
{
    struct nth_thread *t = nth_desc_check(th);
    return t ? to_rq(t, 0) : ESRCH;
}

int nth__to_rq_home(nth_t th)
{
    struct nth_thread *t = nth_desc_check(th);
    return t ? to_rq(t, 1) : ESRCH;
}

int nth__to_rq_last_vp(nth_t th)
{
    struct nth_thread *t = nth_desc_check(th);
    return t ? to_rq(t, 2) : ESRCH;
}

/* sync_core.h. No handle check: the caller holds a waiter record of t's,
 * and t waits for that record's final state, so it is alive. */
void nth__wake(nth_t t)
{
    to_rq(t, 0);
}

/* sync_core.h. The same liveness argument as nth__wake. */
void nth__wake_fifo(nth_t t)
{
    to_rq(t, WAKE_FIFO);
}

int nth_move_to_vp(int id)
{
    struct nth_vp *vp = nth_vp_self();
    if (!vp || (vp->current->flags & NTH_TF_IDLE))
        return EPERM;
    if (id < 0 || id >= nth_rt.nvps)
        return EINVAL;
    struct nth_vp *to = nth_rt.vps[id];
    if (vp == to)
        return 0;
    if (__atomic_load_n(&to->disabled, __ATOMIC_RELAXED))
        return EAGAIN;              /* its kernel thread parks: no way there */
    if (nth_ldso_held(vp))
        return EAGAIN;              /* pinned to this kernel thread (nth_wait) */
    nth_sched_point(vp, NTH_SP_YIELD);
    vp = nth_vp_self();
    if (vp == to)
        return 0;                   /* a hook switched and we landed there */
    /* What this VP runs next; the mover itself is neither queued nor
     * ready, so the pick cannot return it. The idle context when nothing
     * is ready (or when this is a disabled VP or a stand-in's shell). */
    struct nth_thread *next = NULL;
    if (!__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED))
        next = nth_sched_pick(vp);
    if (!next)
        next = &vp->idle;
    struct nth_thread *self = vp->current;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    __atomic_store_n(&self->move_until, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + NTH_MOVE_GRACE_NS,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&self->move_to, id + 1, __ATOMIC_RELAXED);
    vp->prev_target = to;
    nth_sched_switch(vp, next, NTH_PS_MOVE);
    __atomic_store_n(&self->move_to, 0, __ATOMIC_RELAXED);
    return nth_vp_self() == to ? 0 : EAGAIN;
}

int nth_yield(void)
{
    struct nth_vp *vp = nth_vp_self();
    if (__builtin_expect(!vp, 0)) {
        nth_ensure_started();           /* lazy start: main becomes VP 0 */
        vp = nth_vp_self();
        if (!vp)
            return nth_sys_yield() ? errno : 0;
    }
    /* Holding an ld.so lock, nothing else may run on this kernel thread
     * (nth_wait says why): yield the CPU, not the VP. */
    if (__builtin_expect(nth_ldso_held(vp), 0))
        return nth_sys_yield() ? errno : 0;
    nth_sched_point(vp, NTH_SP_YIELD);
    vp = nth_vp_self();
    nth_trace_rt_leave(vp);
    nth_vp_rebind_if_due(vp);
    if (__builtin_expect(__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED), 0)) {
        /* Our CPU was taken away: leave through the idle loop, which parks. */
        nth_sched_switch(vp, &vp->idle, NTH_PS_GLOBAL);
        return 0;
    }
    struct nth_thread *self = vp->current;
    /* The local queue is next_local (its head slot) followed by rq. We go
     * behind everything ready: into next_local if nothing else is ready
     * (a plain store, no queue lock: the two-nano-thread case), else at
     * the tail of rq, after the switch (post-switch hook). */
    /* The global queue's turn (nth_sched_grq_turn) applies to yields too:
     * busy yielders alone keep a local queue from ever emptying. */
    struct nth_thread *next = NULL;
    if (!nth_sched_grq_turn(vp)) {
        next = nth_next_local_take(&vp->next_local);
        if (!next && !nth_rq_empty(&vp->rq))
            next = nth_rq_pop(&vp->rq);  /* NULL if thieves took it */
    }
    if (next) {
        if ((__atomic_load_n(&next->state, __ATOMIC_RELAXED) & NTH_ST_MASK) != NTH_ST_RUNNING)
            nth_thread_try_run(next);
        if (nth_rq_empty(&vp->rq)) {
            /* Published for thieves too: self may be taken (and waited
             * for through on_cpu) before this switch completes. */
            __atomic_store_n(&vp->next_local, self, __ATOMIC_RELEASE);
            nth_sched_switch(vp, next, NTH_PS_NONE);
        } else {
            nth_sched_switch(vp, next, NTH_PS_YIELD);
        }
        return 0;
    }
    next = nth_rq_pop(&nth_rt.grq);
    if (!next)
        return 0;                        /* nothing else to run: go on */
    nth_thread_try_run(next);
    nth_sched_switch(vp, next, NTH_PS_YIELD);
    return 0;
}

/* ---- identity ----------------------------------------------------------- */

nth_t nth_self(void)
{
    struct nth_vp *vp = nth_vp_self();
    if (__builtin_expect(!vp, 0)) {
        ensure_started();
        vp = nth_vp_self();
        if (!vp)
            return NULL;                 /* a kernel thread that is no VP */
    }
    return vp->current;
}

int nth_equal(nth_t a, nth_t b)
{
    return a == b;
}

uint64_t nth_id(nth_t th)
{
    struct nth_thread *t = nth_desc_check(th);
    return t ? t->id : 0;
}

int nth_getname(nth_t th, char *buf, size_t len)
{
    struct nth_thread *t = nth_desc_check(th);
    if (!t)
        return ESRCH;
    /* The length first: a buffer too small for the name is ERANGE, as
     * pthread_getname_np(3), also when it is (NULL, 0). */
    size_t n = strnlen(t->name, NTH_NAME_MAX);
    if (len < n + 1)
        return ERANGE;
    if (!buf)
        return EINVAL;
    memcpy(buf, t->name, n);
    buf[n] = '\0';
    return 0;
}

int nth_setname(nth_t th, const char *name)
{
    if (!name)
        return EINVAL;
    struct nth_thread *t = nth_desc_check(th);
    if (!t)
        return ESRCH;
    strncpy(t->name, name, NTH_NAME_MAX - 1);
    t->name[NTH_NAME_MAX - 1] = '\0';
    nth_trace_rt_rename(t);
    return 0;
}

void nth_exit_hooks_fork_child(void)
{
    exit_hooks_lock = (nth_futex_lock_t)NTH_FUTEX_LOCK_INIT;
}
