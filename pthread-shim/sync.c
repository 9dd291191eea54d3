/*
 * sync.c -- condition variables, read-write locks, barriers and keys
 * on nthlib's objects, which fit in glibc's types (pthread_cond_t 48 bytes,
 * pthread_rwlock_t 56, pthread_barrier_t 32; an all-zero object is a valid
 * default one, so PTHREAD_COND_INITIALIZER and PTHREAD_RWLOCK_INITIALIZER
 * work as they are). After pthread_cond_wait(3p), pthread_rwlock_rdlock(3p),
 * pthread_barrier_wait(3p), pthread_key_create(3p). pthread_once is in once.c.
 *
 * Condition waits are cancellation points: pthread_cancel (and
 * pthread_kill) interrupts them (cond_wait_publish), and the request is
 * acted on with the mutex held, as POSIX wants when cleanup handlers run;
 * timed waits also wait in slices of SHIM_SLICE_NS and look between them.
 * Process-shared condvars, rwlocks and barriers are refused (ENOTSUP).
 */
#include <errno.h>
#include "shim.h"

/* ---- condition variables ---------------------------------------------------- */

/* pthread_condattr_t (4 bytes): the clock id in the low byte. */
#define CA_CLOCK 0xff
/* pthread_condattr_setpshared keeps a refused PROCESS_SHARED request here
 * (and returns ENOTSUP) so that pthread_cond_init refuses it too, rather
 * than give a private condvar to a program that ignored the error. */
#define CA_PSHARED_ASKED 0x100

#define mtx shim_mutex

/* Publish that self is about to wait on c, then look for a request
 * (cancellation, a queued signal the mask leaves open): 1 if the wait
 * must not start. pthread_cancel and pthread_kill set their request, then
 * cond_wake, then broadcast the condvar in waiting_cond without our mutex
 * (shim_interrupt_waits); a plain check before waiting lost that
 * broadcast when it came between the check and the queueing (posix-cancel
 * hung about once in 300 runs; a lost pthread_kill left its handler
 * waiting for the next real wake-up). Either the sender sees waiting_cond
 * and cond_wake stops the wait, or we see its request here. cond_wake,
 * not cancel_pending, is the stop flag: with cancellation disabled a
 * pending request must not turn every wait into a spin. */
static int cond_wait_publish(struct shim_thread *self, pthread_cond_t *c)
{
    __atomic_store_n(&self->cond_wake, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&self->waiting_cond, c, __ATOMIC_SEQ_CST);
    int cancel = __atomic_load_n(&self->cancel_pending, __ATOMIC_SEQ_CST) &&
                 self->cancel_state == PTHREAD_CANCEL_ENABLE;
    uint64_t open = __atomic_load_n(&self->pending, __ATOMIC_SEQ_CST) &
                    ~__atomic_load_n(&self->sigmask, __ATOMIC_RELAXED);
    return cancel || open;
}

/* Wait on c until the absolute time deadline on clock (INT64_MAX: none).
 * Interruptible as the untimed wait (cond_wait_publish): a cancellation
 * acts at once, not at the next slice. The slices alone left it to the
 * runtime to fire a slice, and a process that the cpumgr made dormant
 * meanwhile fires none until the wait's real deadline: dormant_shim.sh's
 * cancel of a 30 s wait took 28-29 s about once in 50 runs at load 20. */
static int cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock, int64_t deadline)
{
    struct shim_thread *self = shim_self();
    shim_testcancel();
    uint64_t prev = shim_slices_begin(clock, deadline);
    for (;;) {
        int64_t now = shim_now(clock);
        if (now >= deadline) {
            nth_wait_slices(prev);
            return ETIMEDOUT;
        }
        int64_t left = deadline - now;
        int64_t end = shim_now(CLOCK_MONOTONIC) + (left < SHIM_SLICE_NS ? left : SHIM_SLICE_NS);
        struct timespec ts = shim_ns_ts(end);
        int r = EINTR;
        if (!cond_wait_publish(self, c))
            r = nth_cond_clockwait_interruptible((nth_cond_t *)c, mtx(m), CLOCK_MONOTONIC, &ts,
                                                 &self->cond_wake);
        __atomic_store_n(&self->waiting_cond, NULL, __ATOMIC_SEQ_CST);
        uint64_t real = nth_wait_slices(prev);
        if (r != ETIMEDOUT) {
            /* Woken, or interrupted: a spurious wake-up to the caller
             * (POSIX allows one), after the handlers and the cancellation
             * point. */
            shim_signals();
            shim_testcancel();
            return r == EINTR ? 0 : r;
        }
        shim_testcancel();
        nth_wait_slices(real);
    }
}

/* An untimed wait needs no timer: pthread_cancel and pthread_kill
 * broadcast the condvar the target waits on (a spurious wake-up for the
 * others, which POSIX allows), and the target acts on the request when
 * the wait returns. */
SHIM_DECL(pthread_cond_wait)
int nth_shim_pthread_cond_wait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m)
{
    struct shim_thread *self = shim_self();
    shim_testcancel();
    /* Interruptible (cond_wait_publish). EINTR is a spurious wake-up to
     * the caller. */
    int r = 0;
    if (!cond_wait_publish(self, c))
        r = nth_cond_wait_interruptible((nth_cond_t *)c, mtx(m), &self->cond_wake);
    if (r == EINTR)
        r = 0;
    __atomic_store_n(&self->waiting_cond, NULL, __ATOMIC_SEQ_CST);
    shim_signals();
    shim_testcancel();
    return r;
}
SHIM_EXPORT(pthread_cond_wait)

SHIM_DECL(pthread_cond_clockwait)
int nth_shim_pthread_cond_clockwait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m,
                                    clockid_t clock, const struct timespec *restrict abstime)
{
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    if (shim_check_deadline(abstime))
        return EINVAL;
    return cond_wait_until(c, m, clock, shim_ts_ns(abstime));
}
SHIM_EXPORT(pthread_cond_clockwait)

SHIM_DECL(pthread_cond_timedwait)
int nth_shim_pthread_cond_timedwait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m,
                                    const struct timespec *restrict abstime)
{
    clockid_t clock = ((nth_cond_t *)c)->__clock ? (clockid_t)((nth_cond_t *)c)->__clock : CLOCK_REALTIME;
    return nth_shim_pthread_cond_clockwait(c, m, clock, abstime);
}
SHIM_EXPORT(pthread_cond_timedwait)

SHIM_DECL(pthread_cond_signal)
int nth_shim_pthread_cond_signal(pthread_cond_t *c) { return nth_cond_signal((nth_cond_t *)c); }
SHIM_EXPORT(pthread_cond_signal)

SHIM_DECL(pthread_cond_broadcast)
int nth_shim_pthread_cond_broadcast(pthread_cond_t *c) { return nth_cond_broadcast((nth_cond_t *)c); }
SHIM_EXPORT(pthread_cond_broadcast)

SHIM_DECL(pthread_cond_destroy)
int nth_shim_pthread_cond_destroy(pthread_cond_t *c) { return nth_cond_destroy((nth_cond_t *)c); }
SHIM_EXPORT(pthread_cond_destroy)

SHIM_DECL(pthread_cond_init)
int nth_shim_pthread_cond_init(pthread_cond_t *restrict c, const pthread_condattr_t *restrict attr)
{
    nth_condattr_t a;
    nth_condattr_init(&a);
    if (attr && (*(const int *)attr & CA_PSHARED_ASKED))
        return ENOTSUP;          /* as pthread_condattr_setpshared said */
    if (attr)
        nth_condattr_setclock(&a, *(const int *)attr & CA_CLOCK);
    return nth_cond_init((nth_cond_t *)c, &a);
}
SHIM_EXPORT(pthread_cond_init)

SHIM_DECL(pthread_condattr_init)
int nth_shim_pthread_condattr_init(pthread_condattr_t *a) { *(int *)a = CLOCK_REALTIME; return 0; }
SHIM_EXPORT(pthread_condattr_init)

SHIM_DECL(pthread_condattr_destroy)
int nth_shim_pthread_condattr_destroy(pthread_condattr_t *a) { (void)a; return 0; }
SHIM_EXPORT(pthread_condattr_destroy)

SHIM_DECL(pthread_condattr_setclock)
int nth_shim_pthread_condattr_setclock(pthread_condattr_t *a, clockid_t clock)
{
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    *(int *)a = (*(int *)a & ~CA_CLOCK) | clock;
    return 0;
}
SHIM_EXPORT(pthread_condattr_setclock)

SHIM_DECL(pthread_condattr_getclock)
int nth_shim_pthread_condattr_getclock(const pthread_condattr_t *restrict a, clockid_t *restrict clock)
{
    *clock = *(const int *)a & CA_CLOCK;
    return 0;
}
SHIM_EXPORT(pthread_condattr_getclock)

static int pshared_set(int pshared, const char *fn)
{
    if (pshared == PTHREAD_PROCESS_PRIVATE)
        return 0;
    if (pshared != PTHREAD_PROCESS_SHARED)
        return EINVAL;
    shim_note_refused(fn);
    return ENOTSUP;
}

SHIM_DECL(pthread_condattr_setpshared)
int nth_shim_pthread_condattr_setpshared(pthread_condattr_t *a, int pshared)
{
    int r = pshared_set(pshared, "pthread_condattr_setpshared(PTHREAD_PROCESS_SHARED)");
    if (r != EINVAL)
        *(int *)a = (*(int *)a & ~CA_PSHARED_ASKED) | (r ? CA_PSHARED_ASKED : 0);
    return r;
}
SHIM_EXPORT(pthread_condattr_setpshared)

SHIM_DECL(pthread_condattr_getpshared)
int nth_shim_pthread_condattr_getpshared(const pthread_condattr_t *restrict a, int *restrict p)
{
    (void)a;
    *p = PTHREAD_PROCESS_PRIVATE;
    return 0;
}
SHIM_EXPORT(pthread_condattr_getpshared)

/* ---- read-write locks ----------------------------------------------------- */

/* PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP puts 2 at byte 48, the
 * writers' queue tail of nth_rwlock_t; a real tail is a pointer, and is
 * NULL whenever the queue is empty. */
static nth_rwlock_t *rwl(pthread_rwlock_t *p)
{
    nth_rwlock_t *rw = (nth_rwlock_t *)p;
    void *tail = __atomic_load_n(&rw->__wtail, __ATOMIC_ACQUIRE);
    if (__builtin_expect((uintptr_t)tail - 1 < 3, 0) && !__atomic_load_n(&rw->__whead, __ATOMIC_ACQUIRE))
        __atomic_compare_exchange_n(&rw->__wtail, &tail, NULL, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return rw;
}

#define RW_FN(name, call)                                                   \
    SHIM_DECL(name)                                                         \
    int nth_shim_##name(pthread_rwlock_t *rw) { return call(rwl(rw)); }     \
    SHIM_EXPORT(name)

RW_FN(pthread_rwlock_rdlock, nth_rwlock_rdlock)
RW_FN(pthread_rwlock_wrlock, nth_rwlock_wrlock)
RW_FN(pthread_rwlock_tryrdlock, nth_rwlock_tryrdlock)
RW_FN(pthread_rwlock_trywrlock, nth_rwlock_trywrlock)
RW_FN(pthread_rwlock_unlock, nth_rwlock_unlock)
RW_FN(pthread_rwlock_destroy, nth_rwlock_destroy)

/* pthread_rwlockattr_t (8 bytes): kind, then pshared. pthread_rwlockattr_
 * setpshared keeps a refused PROCESS_SHARED request in pshared (and returns
 * ENOTSUP) so that pthread_rwlock_init refuses it too, as for condvars. */
struct rwattr { int kind, pshared; };

SHIM_DECL(pthread_rwlock_init)
int nth_shim_pthread_rwlock_init(pthread_rwlock_t *restrict rw, const pthread_rwlockattr_t *restrict attr)
{
    if (attr && ((const struct rwattr *)attr)->pshared != PTHREAD_PROCESS_PRIVATE)
        return ENOTSUP;          /* as pthread_rwlockattr_setpshared said */
    /* the kind is not used: nth rwlocks are phase-fair */
    return nth_rwlock_init((nth_rwlock_t *)rw, NULL);
}
SHIM_EXPORT(pthread_rwlock_init)

SHIM_DECL(pthread_rwlock_timedrdlock)
int nth_shim_pthread_rwlock_timedrdlock(pthread_rwlock_t *restrict rw, const struct timespec *restrict abstime)
{
    return nth_rwlock_timedrdlock(rwl(rw), abstime);
}
SHIM_EXPORT(pthread_rwlock_timedrdlock)

SHIM_DECL(pthread_rwlock_timedwrlock)
int nth_shim_pthread_rwlock_timedwrlock(pthread_rwlock_t *restrict rw, const struct timespec *restrict abstime)
{
    return nth_rwlock_timedwrlock(rwl(rw), abstime);
}
SHIM_EXPORT(pthread_rwlock_timedwrlock)

/* A CLOCK_MONOTONIC deadline as the CLOCK_REALTIME one nth rwlocks take. */
static int to_realtime(clockid_t clock, const struct timespec *abstime, struct timespec *rt)
{
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    if (shim_check_deadline(abstime))
        return EINVAL;
    if (clock == CLOCK_REALTIME) {
        *rt = *abstime;
        return 0;
    }
    int64_t left = shim_ts_ns(abstime) - shim_now(CLOCK_MONOTONIC);
    *rt = shim_ns_ts(shim_now(CLOCK_REALTIME) + (left > 0 ? left : 0));
    return 0;
}

SHIM_DECL(pthread_rwlock_clockrdlock)
int nth_shim_pthread_rwlock_clockrdlock(pthread_rwlock_t *restrict rw, clockid_t clock, const struct timespec *restrict abstime)
{
    struct timespec rt;
    int r = to_realtime(clock, abstime, &rt);
    return r ? r : nth_rwlock_timedrdlock(rwl(rw), &rt);
}
SHIM_EXPORT(pthread_rwlock_clockrdlock)

SHIM_DECL(pthread_rwlock_clockwrlock)
int nth_shim_pthread_rwlock_clockwrlock(pthread_rwlock_t *restrict rw, clockid_t clock, const struct timespec *restrict abstime)
{
    struct timespec rt;
    int r = to_realtime(clock, abstime, &rt);
    return r ? r : nth_rwlock_timedwrlock(rwl(rw), &rt);
}
SHIM_EXPORT(pthread_rwlock_clockwrlock)

SHIM_DECL(pthread_rwlockattr_init)
int nth_shim_pthread_rwlockattr_init(pthread_rwlockattr_t *a)
{
    struct rwattr *ra = (struct rwattr *)a;
    ra->kind = PTHREAD_RWLOCK_PREFER_READER_NP;
    ra->pshared = PTHREAD_PROCESS_PRIVATE;
    return 0;
}
SHIM_EXPORT(pthread_rwlockattr_init)

SHIM_DECL(pthread_rwlockattr_destroy)
int nth_shim_pthread_rwlockattr_destroy(pthread_rwlockattr_t *a) { (void)a; return 0; }
SHIM_EXPORT(pthread_rwlockattr_destroy)

SHIM_DECL(pthread_rwlockattr_setkind_np)
int nth_shim_pthread_rwlockattr_setkind_np(pthread_rwlockattr_t *a, int kind)
{
    if (kind != PTHREAD_RWLOCK_PREFER_READER_NP && kind != PTHREAD_RWLOCK_PREFER_WRITER_NP &&
        kind != PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
        return EINVAL;
    ((struct rwattr *)a)->kind = kind;
    return 0;
}
SHIM_EXPORT(pthread_rwlockattr_setkind_np)

SHIM_DECL(pthread_rwlockattr_getkind_np)
int nth_shim_pthread_rwlockattr_getkind_np(const pthread_rwlockattr_t *a, int *kind)
{
    *kind = ((const struct rwattr *)a)->kind;
    return 0;
}
SHIM_EXPORT(pthread_rwlockattr_getkind_np)

SHIM_DECL(pthread_rwlockattr_setpshared)
int nth_shim_pthread_rwlockattr_setpshared(pthread_rwlockattr_t *a, int pshared)
{
    int r = pshared_set(pshared, "pthread_rwlockattr_setpshared(PTHREAD_PROCESS_SHARED)");
    if (r != EINVAL)
        ((struct rwattr *)a)->pshared = pshared;
    return r;
}
SHIM_EXPORT(pthread_rwlockattr_setpshared)

SHIM_DECL(pthread_rwlockattr_getpshared)
int nth_shim_pthread_rwlockattr_getpshared(const pthread_rwlockattr_t *restrict a, int *restrict p)
{
    (void)a;
    *p = PTHREAD_PROCESS_PRIVATE;
    return 0;
}
SHIM_EXPORT(pthread_rwlockattr_getpshared)

#define RW_ALIAS(alias, target)                                             \
    int alias(pthread_rwlock_t *rw);                                        \
    SHIM_DECL(alias)                                                        \
    int nth_shim_##alias(pthread_rwlock_t *rw) { return nth_shim_##target(rw); } \
    SHIM_EXPORT(alias)
RW_ALIAS(__pthread_rwlock_rdlock, pthread_rwlock_rdlock)
RW_ALIAS(__pthread_rwlock_wrlock, pthread_rwlock_wrlock)
RW_ALIAS(__pthread_rwlock_tryrdlock, pthread_rwlock_tryrdlock)
RW_ALIAS(__pthread_rwlock_trywrlock, pthread_rwlock_trywrlock)
RW_ALIAS(__pthread_rwlock_unlock, pthread_rwlock_unlock)
RW_ALIAS(__pthread_rwlock_destroy, pthread_rwlock_destroy)

int __pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *a);
SHIM_DECL(__pthread_rwlock_init)
int nth_shim___pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *a) { return nth_shim_pthread_rwlock_init(rw, a); }
SHIM_EXPORT(__pthread_rwlock_init)

/* ---- barriers ------------------------------------------------------------------ */

/* pthread_barrierattr_t (4 bytes): the pshared value asked for.
 * pthread_barrierattr_setpshared keeps a refused PROCESS_SHARED request
 * (and returns ENOTSUP) so that pthread_barrier_init refuses it too. */
SHIM_DECL(pthread_barrier_init)
int nth_shim_pthread_barrier_init(pthread_barrier_t *restrict b, const pthread_barrierattr_t *restrict a, unsigned count)
{
    if (a && *(const int *)a != PTHREAD_PROCESS_PRIVATE)
        return ENOTSUP;          /* as pthread_barrierattr_setpshared said */
    return nth_barrier_init((nth_barrier_t *)b, count);
}
SHIM_EXPORT(pthread_barrier_init)

SHIM_DECL(pthread_barrier_wait)
int nth_shim_pthread_barrier_wait(pthread_barrier_t *b)
{
    int r = nth_barrier_wait((nth_barrier_t *)b);
    return r == NTH_BARRIER_SERIAL_THREAD ? PTHREAD_BARRIER_SERIAL_THREAD : r;
}
SHIM_EXPORT(pthread_barrier_wait)

SHIM_DECL(pthread_barrier_destroy)
int nth_shim_pthread_barrier_destroy(pthread_barrier_t *b) { return nth_barrier_destroy((nth_barrier_t *)b); }
SHIM_EXPORT(pthread_barrier_destroy)

SHIM_DECL(pthread_barrierattr_init)
int nth_shim_pthread_barrierattr_init(pthread_barrierattr_t *a) { *(int *)a = PTHREAD_PROCESS_PRIVATE; return 0; }
SHIM_EXPORT(pthread_barrierattr_init)

SHIM_DECL(pthread_barrierattr_destroy)
int nth_shim_pthread_barrierattr_destroy(pthread_barrierattr_t *a) { (void)a; return 0; }
SHIM_EXPORT(pthread_barrierattr_destroy)

SHIM_DECL(pthread_barrierattr_setpshared)
int nth_shim_pthread_barrierattr_setpshared(pthread_barrierattr_t *a, int pshared)
{
    int r = pshared_set(pshared, "pthread_barrierattr_setpshared(PTHREAD_PROCESS_SHARED)");
    if (r != EINVAL)
        *(int *)a = pshared;
    return r;
}
SHIM_EXPORT(pthread_barrierattr_setpshared)

SHIM_DECL(pthread_barrierattr_getpshared)
int nth_shim_pthread_barrierattr_getpshared(const pthread_barrierattr_t *restrict a, int *restrict p)
{
    (void)a;
    *p = PTHREAD_PROCESS_PRIVATE;
    return 0;
}
SHIM_EXPORT(pthread_barrierattr_getpshared)

/* ---- keys ------------------------------------------------------------- */

SHIM_DECL(pthread_key_create)
int nth_shim_pthread_key_create(pthread_key_t *key, void (*destructor)(void *))
{
    nth_key_t k;
    int r = nth_key_create(&k, destructor);
    if (r == 0)
        *key = k;
    return r;
}
SHIM_EXPORT(pthread_key_create)

int __pthread_key_create(pthread_key_t *key, void (*destructor)(void *));
SHIM_DECL(__pthread_key_create)
int nth_shim___pthread_key_create(pthread_key_t *key, void (*d)(void *)) { return nth_shim_pthread_key_create(key, d); }
SHIM_EXPORT(__pthread_key_create)

SHIM_DECL(pthread_key_delete)
int nth_shim_pthread_key_delete(pthread_key_t key) { return nth_key_delete(key); }
SHIM_EXPORT(pthread_key_delete)

SHIM_DECL(pthread_getspecific)
void *nth_shim_pthread_getspecific(pthread_key_t key) { return nth_getspecific(key); }
SHIM_EXPORT(pthread_getspecific)

void *__pthread_getspecific(pthread_key_t key);
SHIM_DECL(__pthread_getspecific)
void *nth_shim___pthread_getspecific(pthread_key_t key) { return nth_getspecific(key); }
SHIM_EXPORT(__pthread_getspecific)

/* glibc declares the value access(none); GCC then takes passing it on for
 * a read of uninitialised memory. */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
SHIM_DECL(pthread_setspecific)
int nth_shim_pthread_setspecific(pthread_key_t key, const void *v) { return nth_setspecific(key, v); }
SHIM_EXPORT(pthread_setspecific)

int __pthread_setspecific(pthread_key_t key, const void *v);
SHIM_DECL(__pthread_setspecific)
int nth_shim___pthread_setspecific(pthread_key_t key, const void *v) { return nth_setspecific(key, v); }
SHIM_EXPORT(__pthread_setspecific)
