/*
 * condvar.c -- condition variables, after pthread_cond_wait(3p) and
 * pthread_cond_timedwait(3p), with pthread_cond_clockwait's explicit clock.
 *
 * A waiter queues itself under the condvar's spinlock before it releases
 * the mutex, so a signal sent after the release always finds it. signal
 * claims the first waiter that its alarm has not already claimed: a signal
 * that races a timeout goes to a waiter that will really wake, never lost.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>          /* NTH_TSAN, for nth_full_fence */
#endif
#include <errno.h>
#include "futex_lock.h"
#include "sync_core.h"
#include "wait_queue.h"
#include "mutex_internal.h"
#include "mutex_bias.h"

/* The wait-queue lock, biased to the kernel thread that keeps using it
 * (two nano-threads of one VP ping-ponging hold it by their kernel
 * thread's announcement, mutex_bias.h). Returns what cond_unlock needs. */
static inline int cond_lock(nth_cond_t *c)
{
    return nth_olock_biased(&c->__lock, &c->__bias);
}

static inline void cond_unlock(nth_cond_t *c, int by_bias)
{
    nth_ounlock_biased(&c->__lock, by_bias);
}

int nth_condattr_init(nth_condattr_t *attr)
{
    if (!attr)
        return EINVAL;
    attr->__clock = CLOCK_REALTIME;
    attr->__reserved = 0;
    return 0;
}

int nth_condattr_destroy(nth_condattr_t *attr)
{
    return attr ? 0 : EINVAL;
}

int nth_condattr_setclock(nth_condattr_t *attr, clockid_t clock)
{
    if (!attr || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
        return EINVAL;
    attr->__clock = clock;
    return 0;
}

int nth_condattr_getclock(const nth_condattr_t *attr, clockid_t *clock)
{
    if (!attr || !clock)
        return EINVAL;
    *clock = attr->__clock;
    return 0;
}

int nth_cond_init(nth_cond_t *c, const nth_condattr_t *attr)
{
    if (!c || (attr && attr->__clock != CLOCK_REALTIME && attr->__clock != CLOCK_MONOTONIC))
        return EINVAL;
    *c = (nth_cond_t)NTH_COND_INITIALIZER;
    c->__clock = attr ? (uint32_t)attr->__clock : CLOCK_REALTIME;
    return 0;
}

int nth_cond_destroy(nth_cond_t *c)
{
    if (!c)
        return EINVAL;
    int b = cond_lock(c);
    int busy = c->__head != NULL;
    cond_unlock(c, b);
    return busy ? EBUSY : 0;
}

/* w->data: nobody but a waker holding the lock moves this waiter out of
 * WAITING (no alarm, no stop flag), so the claim needs no CAS. */
#define COND_W_PLAIN 1u
/* Under the lock: nth_wq_claim(), with a plain store instead of a CAS for
 * the waiters nobody else can claim. NULL when none; otherwise a
 * CLAIMED_WAKE waiter for nth_waiter_wake() after the lock is dropped. */
static struct nth_waiter *cond_claim(nth_cond_t *c)
{
    struct nth_waiter *w;
    while ((w = nth_wq_pop(&c->__head, &c->__tail)) != NULL) {
        if (w->data & COND_W_PLAIN) {
            atomic_store_explicit(&w->state, NTH_W_CLAIMED_WAKE, memory_order_relaxed);
            return w;
        }
        int exp = NTH_W_WAITING;
        if (atomic_compare_exchange_strong_explicit(&w->state, &exp, NTH_W_CLAIMED_WAKE,
                                                    memory_order_acq_rel,
                                                    memory_order_acquire))
            return w;
    }
    return NULL;
}

static int cond_wait(nth_cond_t *c, nth_mutex_t *m, clockid_t clock, const struct timespec *abs,
                     const int *stop)
{
    if (!c || !m)
        return EINVAL;
    if (abs) {
        int e = nth_check_deadline(clock, abs);
        if (e)
            return e;
        /* Already past: the mutex is still held, as POSIX requires. */
        if (nth_abs_passed(clock, abs))
            return ETIMEDOUT;
    }
    struct nth_waiter w;
    nth_waiter_init(&w, nth__me());
    /* No alarm, no stop flag: only a waker holding the lock moves w out
     * of WAITING. */
    if (!abs && !stop)
        w.data = COND_W_PLAIN;
    int b = cond_lock(c);
    nth_wq_push(&c->__head, &c->__tail, &w);
    if (abs) {
        w.obias = &c->__bias;
        nth_waiter_arm(&w, &c->__lock, &c->__head, &c->__tail, clock, abs);
    }
    cond_unlock(c, b);
    if (stop) {
        /* Dekker with the interrupter (store *stop, fence, read the queue
         * in nth_cond_broadcast): we are queued, then we read *stop. One
         * of us sees the other. */
        nth_full_fence();
        int exp = NTH_W_WAITING;
        if (__atomic_load_n(stop, __ATOMIC_RELAXED) &&
            atomic_compare_exchange_strong(&w.state, &exp, NTH_W_CLAIMED_WAKE)) {
            b = cond_lock(c);
            if (w.queued)
                nth_wq_remove(&c->__head, &c->__tail, &w);
            cond_unlock(c, b);
            nth_waiter_disarm(&w);
            return EINTR;                /* m was never released */
        }
    }
    uint32_t depth = 0;
    int e = nth__mutex_release_fast(m) ? 0 : nth__mutex_release(m, &depth);
    if (e) {
        /* Not the caller's mutex: leave the queue again, under the lock
         * (a plain waiter is claimed there without a CAS). */
        b = cond_lock(c);
        int exp = NTH_W_WAITING;
        if (atomic_compare_exchange_strong(&w.state, &exp, NTH_W_CLAIMED_WAKE)) {
            if (w.queued)
                nth_wq_remove(&c->__head, &c->__tail, &w);
            cond_unlock(c, b);
            nth_waiter_disarm(&w);
            return e;
        }
        cond_unlock(c, b);
        /* Signalled or timed out meanwhile: a signal we took must not be
         * lost, so pass it on. */
        int s = nth_waiter_block(&w, c, NTH_OBJ_CONDVAR);
        nth_waiter_disarm(&w);
        if (s == NTH_W_WOKEN)
            nth_cond_signal(c);
        return e;
    }
    int s = nth_waiter_block(&w, c, NTH_OBJ_CONDVAR);
    nth_waiter_disarm(&w);
    if (!nth__mutex_reacquire_fast(m))
        nth__mutex_reacquire(m, depth);
    return s == NTH_W_WOKEN ? 0 : ETIMEDOUT;
}

int nth_cond_wait(nth_cond_t *c, nth_mutex_t *m)
{
    return cond_wait(c, m, CLOCK_REALTIME, NULL, NULL);
}

int nth_cond_wait_interruptible(nth_cond_t *c, nth_mutex_t *m, const int *stop)
{
    if (!stop)
        return EINVAL;
    return cond_wait(c, m, CLOCK_REALTIME, NULL, stop);
}

int nth_cond_timedwait(nth_cond_t *c, nth_mutex_t *m, const struct timespec *abstime)
{
    if (!c)
        return EINVAL;
    if (!abstime)
        return EINVAL;
    return cond_wait(c, m, (clockid_t)c->__clock, abstime, NULL);
}

int nth_cond_clockwait(nth_cond_t *c, nth_mutex_t *m, clockid_t clock,
                       const struct timespec *abstime)
{
    if (!abstime || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
        return EINVAL;
    return cond_wait(c, m, clock, abstime, NULL);
}

int nth_cond_clockwait_interruptible(nth_cond_t *c, nth_mutex_t *m, clockid_t clock,
                                     const struct timespec *abstime, const int *stop)
{
    if (!stop || !abstime || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
        return EINVAL;
    return cond_wait(c, m, clock, abstime, stop);
}

int nth_cond_signal(nth_cond_t *c)
{
    if (!c)
        return EINVAL;
    if (!__atomic_load_n(&c->__head, __ATOMIC_ACQUIRE))
        return 0;  /* no waiter: waiters queue before releasing the mutex */
    int b = cond_lock(c);
    struct nth_waiter *w = cond_claim(c);
    cond_unlock(c, b);
    if (w)
        nth_waiter_wake(w);
    return 0;
}

int nth_cond_broadcast(nth_cond_t *c)
{
    if (!c)
        return EINVAL;
    if (!__atomic_load_n(&c->__head, __ATOMIC_ACQUIRE))
        return 0;
    struct nth_waiter *list = NULL, *w;
    int b = cond_lock(c);
    while ((w = cond_claim(c)) != NULL) {
        w->next = list;
        list = w;
    }
    cond_unlock(c, b);
    /* Reverse to wake in arrival order. */
    struct nth_waiter *fifo = NULL;
    while (list) {
        w = list;
        list = w->next;
        w->next = fifo;
        fifo = w;
    }
    while (fifo) {
        w = fifo;
        fifo = w->next;  /* read before the wake frees w */
        nth_waiter_wake(w);
    }
    return 0;
}
