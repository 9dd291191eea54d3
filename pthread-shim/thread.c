/*
 * thread.c -- POSIX threads as nano-threads: create, join (also try/timed/
 * clock), detach, exit, self, equal, names, scheduling attributes (stored
 * and returned, not acted on), concurrency, affinity hints, getattr_np.
 * Semantics after pthread_create(3p), pthread_join(3p), pthread_exit(3p),
 * pthread_detach(3p) and glibc's _np manual pages.
 *
 * pthread_t is the address of the thread's struct shim_thread. The record
 * of a joinable thread is freed by its joiner; that of a detached thread
 * waits on a zombie list until its nano-thread is gone (its nth_id changes
 * or vanishes), because key destructors still run after the shim's last
 * code on that thread.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nth/trace.h"
#include "shim.h"

void shim_set_self(struct shim_thread *st);
void shim_going_multithreaded(void);
extern cpu_set_t shim_process_cpus;

/* ---- zombies: detached threads whose nano-thread may still be ending --- */

static struct shim_thread *zombies;
static int zombie_lock;

static void zlock(void)
{
    while (__atomic_exchange_n(&zombie_lock, 1, __ATOMIC_ACQUIRE))
        nth_yield();
}
static void zunlock(void) { __atomic_store_n(&zombie_lock, 0, __ATOMIC_RELEASE); }

static void zombie_push(struct shim_thread *st)
{
    zlock();
    st->next_zombie = zombies;
    zombies = st;
    zunlock();
}

static void zombies_reap(void)
{
    if (!__atomic_load_n(&zombies, __ATOMIC_RELAXED))
        return;
    zlock();
    struct shim_thread **p = &zombies;
    while (*p) {
        struct shim_thread *z = *p;
        if (nth_id(z->nt) != z->nid) {
            *p = z->next_zombie;
            shim_defer_forget_thread(z);
            shim_sigwatch_remove(z);
            free(z);
        } else {
            p = &z->next_zombie;
        }
    }
    zunlock();
}

/* A detached record goes to the zombie list exactly once, by whichever of
 * the thread's end and its detaching (pthread_detach, or the attribute at
 * creation) comes second. A joinable one is freed by its joiner. */
static int zombie_claim(struct shim_thread *st)
{
    return __atomic_add_fetch(&st->zclaim, 1, __ATOMIC_ACQ_REL) == 2;
}

/* ---- create / exit ------------------------------------------------------- */

/* The thread's function, below the frame where a forced unwind ends
 * (unwind.c): thread_run's CFA is thread_start's stack pointer at the
 * call, which the unwinder reports at thread_start's frame and at no frame
 * thread_run called, as glibc's start_thread stops pthread_exit's unwind at
 * its own frame. noinline: inlined, its CFA would be thread_start's, and
 * the unwind would end one frame further, in nthlib's entry. */
__attribute__((noreturn)) static void thread_return(struct shim_thread *st, void *value);

__attribute__((noinline)) static void *thread_run(struct shim_thread *st)
{
    st->entry_cfa = (uintptr_t)__builtin_dwarf_cfa();
    return st->fn(st->arg);
}

static void *thread_start(void *arg)
{
    struct shim_thread *st = arg;
    shim_tls_thread_begin();     /* its own TLS, before anything reads it */
    __atomic_store_n(&st->nt, nth_self(), __ATOMIC_RELEASE);
    st->nid = nth_id(st->nt);
    shim_set_self(st);
    shim_sig_started(st);
    thread_return(st, thread_run(st));
}

__attribute__((noreturn)) void shim_run_cleanup_and_exit(struct shim_thread *self);

__attribute__((noreturn)) void shim_finish(struct shim_thread *self);

/* A return from the thread's function: nothing to unwind (glibc's
 * start_thread does not either), unless it returned between a C
 * pthread_cleanup_push and its pop (undefined; their handlers run). */
__attribute__((noreturn)) static void thread_return(struct shim_thread *st, void *value)
{
    if (st->cleanup_top)
        shim_exit(value);
    st->exit_value = value;
    st->exiting |= 1;
    shim_finish(st);
}

__attribute__((noreturn)) void shim_exit(void *value)
{
    struct shim_thread *self = shim_self();
    self->exit_value = value;
    self->exiting |= 1;
    shim_run_cleanup_and_exit(self);
}

/* Called once every cleanup handler has run: from the forced unwind's
 * stop function (unwind.c) on top of the unwinder's frames, or, without
 * libgcc_s, after the last setjmp buffer's handler. */
__attribute__((noreturn)) void shim_finish(struct shim_thread *self)
{
    while (self->old_cleanup) {
        struct _pthread_cleanup_buffer *b = self->old_cleanup;
        self->old_cleanup = b->__prev;
        b->__routine(b->__arg);
    }
    void *value = self->exit_value;
    if (self->created) {
        shim_tls_thread_end();   /* thread_local destructors, as glibc's threads */
        __atomic_store_n(&self->done, 1, __ATOMIC_SEQ_CST);
        nth_sem_post(&self->done_sem);
        if (zombie_claim(self))
            zombie_push(self);
    }
    nth_exit(value);
}

/* The stack size of a thread created without attributes: glibc's default,
 * the one pthread_attr_getstacksize reports for a freshly initialised
 * attr (and pthread_getattr_default_np), which a thread created with such
 * an attr gets too: POSIX has pthread_create(NULL attr) use "the default
 * attributes", so the two must agree. glibc's rule (nptl
 * __pthread_initialize_minimal / __libc_early_init): RLIMIT_STACK when
 * finite (8 MiB on Debian), rounded to pages, at least PTHREAD_STACK_MIN;
 * 2 MiB on x86-64 (ARCH_STACK_DEFAULT_SIZE) when unlimited; or what the
 * program set with pthread_setattr_default_np. So `ulimit -s` is the knob,
 * as natively; NTH_STACK_SIZE stays the nano-thread API's default only.
 *
 * Why not a smaller default (1 MiB before): unmodified programs size
 * their frames for glibc's threads, and a 3 MiB local array died with a
 * bare SIGSEGV. Stacks are mapped lazily, so the cost is address space:
 * 10 000 threads alive at once under the shim grew RSS alike with 1 and
 * 8 MiB stacks (about 10 KiB each), page tables 20 vs 40 MB (as glibc's),
 * the address space 11 GB vs 80 GB (of 128 TiB), mappings a few dozen
 * either way (guard regions do not split a slab), create time within the
 * noise (bench/RESULTS.md "Shim default stack"). 0 if glibc will not say
 * (then the runtime's default). */
static size_t default_stack(void)
{
    pthread_attr_t a;
    size_t ss = 0;
    if (REAL(pthread_getattr_default_np)(&a) == 0) {
        REAL(pthread_attr_getstacksize)(&a, &ss);
        REAL(pthread_attr_destroy)(&a);
    }
    return ss;
}

SHIM_DECL(pthread_create)
int nth_shim_pthread_create(pthread_t *restrict t, const pthread_attr_t *restrict attr,
                            void *(*fn)(void *), void *restrict arg)
{
    zombies_reap();
    struct shim_thread *st = calloc(1, sizeof *st);
    if (!st)
        return EAGAIN;
    st->created = 1;
    st->fn = fn;
    st->arg = arg;
    st->cancel_state = PTHREAD_CANCEL_ENABLE;
    st->cancel_type = PTHREAD_CANCEL_DEFERRED;
    st->sched_policy = SCHED_OTHER;
    st->stacksize = default_stack();
    st->guardsize = (size_t)sysconf(_SC_PAGESIZE);
    nth_sem_init(&st->done_sem, 0);
    void *ustack = NULL;
    size_t ustack_size = 0;
    if (attr) {
        int ds = PTHREAD_CREATE_JOINABLE;
        size_t ss = 0, gs = 0;
        REAL(pthread_attr_getdetachstate)(attr, &ds);
        REAL(pthread_attr_getstacksize)(attr, &ss);
        REAL(pthread_attr_getguardsize)(attr, &gs);
        REAL(pthread_attr_getschedpolicy)(attr, &st->sched_policy);
        REAL(pthread_attr_getschedparam)(attr, &st->sched_param);
        st->detached = ds == PTHREAD_CREATE_DETACHED;
        st->zclaim = st->detached;
        if (ss)
            st->stacksize = ss;
        st->guardsize = gs;
        /* glibc's attr has a stack address only after setstack(addr) (its
         * getstack derives one from nothing otherwise). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        void *top = NULL;
        REAL(pthread_attr_getstackaddr)(attr, &top);
#pragma GCC diagnostic pop
        if (top)
            REAL(pthread_attr_getstack)(attr, &ustack, &ustack_size);
    }
    nth_attr_t na;
    nth_attr_init(&na);
    if (st->stacksize) {
        size_t ss = st->stacksize < NTH_STACK_MIN ? NTH_STACK_MIN : st->stacksize;
        if (nth_attr_setstacksize(&na, ss) != 0) {
            free(st);
            return EINVAL;
        }
    }
    if (ustack && nth_attr_setstack(&na, ustack, ustack_size) != 0) {
        free(st);
        return EINVAL;           /* smaller than NTH_STACK_MIN (16 KiB) */
    }
    /* glibc puts no guard on a caller's stack, and so does nth. */
    if (!ustack && nth_attr_setguardsize(&na, st->guardsize) != 0) {
        free(st);
        return EINVAL;           /* above 1 GiB */
    }
    nth_attr_setdetached(&na, st->detached);
    shim_going_multithreaded();
    shim_defer_need(2);          /* a handler may signal it (sigdefer.c) */
    /* the creator has a record before any child; the child starts with
     * its mask (pthread_create(3p)) */
    shim_sig_init(st, shim_self());
    shim_sigwatch_add(st);       /* a process-directed signal may go to it */
    nth_t nt;
    int r = nth_create(&nt, &na, thread_start, st);
    if (r != 0) {
        shim_sigwatch_remove(st);
        free(st);
        return r == ENOMEM ? EAGAIN : r;
    }
    __atomic_store_n(&st->nt, nt, __ATOMIC_RELEASE);   /* thread_start does too */
    *t = (pthread_t)st;
    return 0;
}
SHIM_EXPORT(pthread_create)

SHIM_DECL(pthread_exit)
void nth_shim_pthread_exit(void *value)
{
    /* A kernel thread, not a nano-thread. Not "off a VP": a thread that a
     * stand-in runs (its VP in the kernel) is a nano-thread all the same,
     * and libc's pthread_exit ended the stand-in under it. */
    if (FROM_RUNTIME() || (!shim_on_nano() && !nth_self()))
        REAL(pthread_exit)(value);
    shim_exit(value);
}
SHIM_EXPORT(pthread_exit)

SHIM_DECL(pthread_self)
pthread_t nth_shim_pthread_self(void)
{
    /* In a handler: no allocation (it may have interrupted malloc). */
    if (__builtin_expect(shim_in_handler(), 0))
        return (pthread_t)shim_self_in_handler();
    return (pthread_t)shim_self();
}
SHIM_EXPORT(pthread_self)

SHIM_DECL(pthread_equal)
int nth_shim_pthread_equal(pthread_t a, pthread_t b)
{
    return a == b;
}
SHIM_EXPORT(pthread_equal)

/* ---- join ---------------------------------------------------------------- */

/* Wait until st is done or the monotonic deadline passes (INT64_MAX: no
 * deadline; a try when deadline is 0). Join is a cancellation point. An
 * untimed join needs no timer: pthread_cancel of the joiner posts the
 * target's done_sem to wake it; done_sem is a "look again" signal, the
 * done flag says what is true. A signal queued for the joiner
 * (pthread_kill, or a process-directed one the watcher gave it,
 * sigwatch.c) interrupts the wait as it does sem_wait's (waiting_sem):
 * the handler runs when it resumes, and the join goes on, as natively
 * (pthread_join(3p): never EINTR). */
static int wait_done(struct shim_thread *st, int64_t deadline)
{
    if (deadline == INT64_MAX) {
        struct shim_thread *self = shim_self();
        for (;;) {
            if (__atomic_load_n(&st->done, __ATOMIC_SEQ_CST))
                return 0;
            shim_testcancel();
            (void)shim_signals();
            __atomic_store_n(&self->joining, st, __ATOMIC_SEQ_CST);
            /* Stop flag, then where we wait, then the requests: Dekker
             * with shim_interrupt_waits, as in sem_wait (sem.c). */
            __atomic_store_n(&self->cond_wake, 0, __ATOMIC_SEQ_CST);
            __atomic_store_n(&self->waiting_sem, (sem_t *)&st->done_sem, __ATOMIC_SEQ_CST);
            int r = EINTR;
            uint64_t open = __atomic_load_n(&self->pending, __ATOMIC_SEQ_CST) &
                            ~__atomic_load_n(&self->sigmask, __ATOMIC_RELAXED);
            int cancel = __atomic_load_n(&self->cancel_pending, __ATOMIC_SEQ_CST) &&
                         self->cancel_state == PTHREAD_CANCEL_ENABLE;
            if (!cancel && !open)
                r = nth_sem_clockwait_interruptible(&st->done_sem, CLOCK_MONOTONIC, NULL, &self->cond_wake);
            __atomic_store_n(&self->waiting_sem, NULL, __ATOMIC_SEQ_CST);
            __atomic_store_n(&self->joining, NULL, __ATOMIC_SEQ_CST);
            if (r == 0 && __atomic_load_n(&st->done, __ATOMIC_SEQ_CST)) {
                nth_sem_post(&st->done_sem);  /* leave it for a later look */
                return 0;
            }
        }
    }
    for (;;) {
        if (__atomic_load_n(&st->done, __ATOMIC_SEQ_CST))
            return 0;
        shim_testcancel();
        int64_t now = shim_now(CLOCK_MONOTONIC);
        if (now >= deadline)
            return ETIMEDOUT;
        int64_t end = deadline - now > SHIM_SLICE_NS ? now + SHIM_SLICE_NS : deadline;
        struct timespec ts = shim_ns_ts(end);
        uint64_t prev = shim_slices_begin(CLOCK_MONOTONIC, deadline);
        int r = nth_sem_clockwait(&st->done_sem, CLOCK_MONOTONIC, &ts);
        nth_wait_slices(prev);
        if (r == 0) {
            nth_sem_post(&st->done_sem);     /* leave it for a later look */
            return 0;
        }
    }
}

static int join_common(pthread_t t, void **ret, int64_t deadline)
{
    struct shim_thread *st = (struct shim_thread *)t, *self = shim_self();
    if (!st)
        return ESRCH;
    if (st == self)
        return EDEADLK;
    if (__atomic_load_n(&st->detached, __ATOMIC_SEQ_CST))
        return EINVAL;
    if (st->created) {
        nth_trace_wait_join(st->nt);   /* traced as SYNCH join, not the semaphore */
        int r = wait_done(st, deadline);
        nth_trace_wait_join(NULL);
        if (r)
            return deadline == 0 ? EBUSY : r;
    }
    void *v = NULL;
    int r = nth_join(st->nt, &v);
    if (r)
        return r;
    if (ret)
        *ret = v;
    if (st->created) {
        shim_defer_forget_thread(st);
        shim_sigwatch_remove(st);
        free(st);
    }
    return 0;
}

SHIM_DECL(pthread_join)
int nth_shim_pthread_join(pthread_t t, void **ret)
{
    return join_common(t, ret, INT64_MAX);
}
SHIM_EXPORT(pthread_join)

SHIM_DECL(pthread_tryjoin_np)
int nth_shim_pthread_tryjoin_np(pthread_t t, void **ret)
{
    return join_common(t, ret, 0);
}
SHIM_EXPORT(pthread_tryjoin_np)

SHIM_DECL(pthread_clockjoin_np)
int nth_shim_pthread_clockjoin_np(pthread_t t, void **ret, clockid_t clock, const struct timespec *abstime)
{
    if (!abstime)
        return join_common(t, ret, INT64_MAX);
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    if (shim_check_deadline(abstime))
        return EINVAL;
    int64_t left = shim_ts_ns(abstime) - shim_now(clock);
    int64_t deadline = shim_now(CLOCK_MONOTONIC) + (left > 0 ? left : 0);
    int r = join_common(t, ret, left > 0 ? deadline : 1);
    return r == EBUSY ? ETIMEDOUT : r;
}
SHIM_EXPORT(pthread_clockjoin_np)

SHIM_DECL(pthread_timedjoin_np)
int nth_shim_pthread_timedjoin_np(pthread_t t, void **ret, const struct timespec *abstime)
{
    return nth_shim_pthread_clockjoin_np(t, ret, CLOCK_REALTIME, abstime);
}
SHIM_EXPORT(pthread_timedjoin_np)

SHIM_DECL(pthread_detach)
int nth_shim_pthread_detach(pthread_t t)
{
    struct shim_thread *st = (struct shim_thread *)t;
    if (!st)
        return ESRCH;
    int was = 0;
    if (!__atomic_compare_exchange_n(&st->detached, &was, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        return EINVAL;
    int r = nth_detach(st->nt);
    if (r == ESRCH && st->created && __atomic_load_n(&st->done, __ATOMIC_SEQ_CST)) {
        /* It ended before being detached: reap it here (POSIX says detaching
         * a terminated thread succeeds). */
        nth_join(st->nt, NULL);
        shim_defer_forget_thread(st);
        shim_sigwatch_remove(st);
        free(st);
        return 0;
    }
    if (r)
        return r;
    if (st->created && __atomic_load_n(&st->done, __ATOMIC_SEQ_CST) && zombie_claim(st))
        zombie_push(st);
    return 0;
}
SHIM_EXPORT(pthread_detach)

/* ---- names ----------------------------------------------------------------- */

SHIM_DECL(pthread_setname_np)
int nth_shim_pthread_setname_np(pthread_t t, const char *name)
{
    if (strlen(name) > 15)       /* glibc's limit: the kernel's comm size */
        return ERANGE;
    return nth_setname(((struct shim_thread *)t)->nt, name);
}
SHIM_EXPORT(pthread_setname_np)

SHIM_DECL(pthread_getname_np)
int nth_shim_pthread_getname_np(pthread_t t, char *buf, size_t len)
{
    if (len < 16)
        return ERANGE;
    return nth_getname(((struct shim_thread *)t)->nt, buf, len);
}
SHIM_EXPORT(pthread_getname_np)

/* ---- scheduling: stored and returned, the nano-thread scheduler ignores it */

static int policy_ok(int policy)
{
    return policy == SCHED_OTHER || policy == SCHED_FIFO || policy == SCHED_RR ||
           policy == SCHED_BATCH || policy == SCHED_IDLE;
}

/* The kernel's range for the policy (sched_get_priority_min/max, which
 * glibc's calls meet as EINVAL from sched_setscheduler(2)): 0 only for the
 * normal policies, 1..99 for SCHED_FIFO and SCHED_RR on Linux. */
static int prio_ok(int policy, int prio)
{
    return prio >= sched_get_priority_min(policy) && prio <= sched_get_priority_max(policy);
}

SHIM_DECL(pthread_setschedparam)
int nth_shim_pthread_setschedparam(pthread_t t, int policy, const struct sched_param *p)
{
    struct shim_thread *st = (struct shim_thread *)t;
    if (!policy_ok(policy) || !prio_ok(policy, p->sched_priority))
        return EINVAL;
    st->sched_policy = policy;
    st->sched_param = *p;
    return 0;
}
SHIM_EXPORT(pthread_setschedparam)

SHIM_DECL(pthread_getschedparam)
int nth_shim_pthread_getschedparam(pthread_t t, int *restrict policy, struct sched_param *restrict p)
{
    struct shim_thread *st = (struct shim_thread *)t;
    *policy = st->sched_policy;
    *p = st->sched_param;
    return 0;
}
SHIM_EXPORT(pthread_getschedparam)

SHIM_DECL(pthread_setschedprio)
int nth_shim_pthread_setschedprio(pthread_t t, int prio)
{
    struct shim_thread *st = (struct shim_thread *)t;
    if (!prio_ok(st->sched_policy, prio))
        return EINVAL;           /* as glibc's sched_setparam(2) */
    st->sched_param.sched_priority = prio;
    return 0;
}
SHIM_EXPORT(pthread_setschedprio)

static int concurrency;

SHIM_DECL(pthread_setconcurrency)
int nth_shim_pthread_setconcurrency(int level)
{
    if (level < 0)
        return EINVAL;
    __atomic_store_n(&concurrency, level, __ATOMIC_RELAXED);
    /* The level is how many CPUs the program wants to run on at once: with
     * a CPU manager that is a CPU request (0, "the implementation's
     * choice", asks for every CPU the process may use). Alone, it stays a
     * hint: nth_cpus_request would shrink the VPs to the level, which
     * POSIX does not allow a hint to do. */
    if (nth_cpumgr_attached()) {
        int n = level ? level : CPU_COUNT(&shim_process_cpus);
        if (n < 1)
            n = 1;
        if (n > 1024)
            n = 1024;
        int e = nth_cpus_request(n);
        if (e)
            return e == ENOMEM ? EAGAIN : e;
    }
    return 0;
}
SHIM_EXPORT(pthread_setconcurrency)

SHIM_DECL(pthread_getconcurrency)
int nth_shim_pthread_getconcurrency(void)
{
    return __atomic_load_n(&concurrency, __ATOMIC_RELAXED);
}
SHIM_EXPORT(pthread_getconcurrency)

SHIM_DECL(pthread_getcpuclockid)
int nth_shim_pthread_getcpuclockid(pthread_t t, clockid_t *clock)
{
    (void)t;
    (void)clock;
    return ENOENT;               /* no CPU-time clock per nano-thread */
}
SHIM_EXPORT(pthread_getcpuclockid)

SHIM_DECL(sched_yield)
int nth_shim_sched_yield(void)
{
    /* libnth's own yields are raw system calls (nthlib/libc_real.h): any
     * caller here is the program's. */
    nth_yield();
    return 0;
}
SHIM_EXPORT(sched_yield)

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
SHIM_DECL(pthread_yield)
int nth_shim_pthread_yield(void)
{
    nth_yield();
    return 0;
}
#pragma GCC diagnostic pop
SHIM_EXPORT(pthread_yield)

void pthread_kill_other_threads_np(void);
SHIM_DECL(pthread_kill_other_threads_np)
void nth_shim_pthread_kill_other_threads_np(void)
{
}
SHIM_EXPORT(pthread_kill_other_threads_np)

/* ---- affinity: a placement hint for the CPUs the process may use -------- */

static int cpus_ok(size_t size, const cpu_set_t *set)
{
    cpu_set_t both;
    size_t n = size < sizeof(cpu_set_t) ? size : sizeof(cpu_set_t);
    CPU_ZERO(&both);
    memcpy(&both, set, n);
    CPU_AND(&both, &both, &shim_process_cpus);
    return CPU_COUNT(&both) > 0 ? 0 : EINVAL;
}

SHIM_DECL(pthread_setaffinity_np)
int nth_shim_pthread_setaffinity_np(pthread_t t, size_t size, const cpu_set_t *set)
{
    struct shim_thread *st = (struct shim_thread *)t;
    int r = cpus_ok(size, set);
    if (r)
        return r;
    CPU_ZERO(&st->cpus);
    memcpy(&st->cpus, set, size < sizeof(cpu_set_t) ? size : sizeof(cpu_set_t));
    st->has_cpus = 1;            /* a hint: the runtime places nano-threads itself */
    return 0;
}
SHIM_EXPORT(pthread_setaffinity_np)

SHIM_DECL(pthread_getaffinity_np)
int nth_shim_pthread_getaffinity_np(pthread_t t, size_t size, cpu_set_t *set)
{
    struct shim_thread *st = (struct shim_thread *)t;
    if (size < sizeof(cpu_set_t) / 8)
        return EINVAL;
    memset(set, 0, size);
    memcpy(set, st->has_cpus ? &st->cpus : &shim_process_cpus, size < sizeof(cpu_set_t) ? size : sizeof(cpu_set_t));
    return 0;
}
SHIM_EXPORT(pthread_getaffinity_np)

/* ---- getattr_np ------------------------------------------------------------ */

SHIM_DECL(pthread_getattr_np)
int nth_shim_pthread_getattr_np(pthread_t t, pthread_attr_t *attr)
{
    struct shim_thread *st = (struct shim_thread *)t;
    if (!st->created)            /* main's: its kernel thread's stack */
        return REAL(pthread_getattr_np)(REAL(pthread_self)(), attr);
    int r = REAL(pthread_attr_init)(attr);
    if (r)
        return r;
    REAL(pthread_attr_setdetachstate)(attr, st->detached ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE);
    /* The nano-thread's real stack, as glibc reports a thread's: setstack
     * makes getstack give back the lowest usable address and the size,
     * which stack scanners (GCs, guard checks) rely on. The guard is the
     * one the runtime put below it: the requested one rounded up to pages,
     * none on a caller's stack. Once done, its descriptor may be reused:
     * then the requested sizes. */
    void *lo;
    size_t bytes, guard;
    nth_t nt = __atomic_load_n(&st->nt, __ATOMIC_ACQUIRE);
    if (nt && !__atomic_load_n(&st->done, __ATOMIC_SEQ_CST) &&
        nth_getstack(nt, &lo, &bytes, &guard) == 0) {
        REAL(pthread_attr_setstack)(attr, lo, bytes);
        REAL(pthread_attr_setguardsize)(attr, guard);
    } else {
        if (st->stacksize)
            REAL(pthread_attr_setstacksize)(attr, st->stacksize);
        REAL(pthread_attr_setguardsize)(attr, st->guardsize);
    }
    REAL(pthread_attr_setschedpolicy)(attr, st->sched_policy);
    REAL(pthread_attr_setschedparam)(attr, &st->sched_param);
    return 0;
}
SHIM_EXPORT(pthread_getattr_np)
