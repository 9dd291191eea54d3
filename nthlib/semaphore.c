/*
 * semaphore.c -- counting semaphores, after sem_wait(3p) and sem_post(3p).
 *
 * The value is taken with a lock-free CAS when positive. A post with
 * waiters hands its unit straight to the first waiter that can still be
 * woken (the value stays 0), so a queue is never non-empty while the value
 * is positive, and a timed-out waiter never swallows a post.
 *
 * Interruptible waits (for sem_wait's EINTR in the pthread shim) keep their
 * stop flag in the waiter's data word; nth_sem_interrupt claims those
 * whose flag is set, as a post would, and marks them (bit 0 of data, the
 * flag being an aligned int) so that they return EINTR with no unit.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>          /* NTH_TSAN, for nth_full_fence */
#endif
#include <errno.h>
#include "futex_lock.h"
#include "sync_core.h"
#include "wait_queue.h"

int nth_sem_init(nth_sem_t *s, unsigned value)
{
    if (!s || value > NTH_SEM_VALUE_MAX)
        return EINVAL;
    *s = (nth_sem_t){ value, 0, NULL, NULL, 0 };
    return 0;
}

int nth_sem_destroy(nth_sem_t *s)
{
    if (!s)
        return EINVAL;
    nth_olock(&s->__lock);
    int busy = s->__head != NULL;
    nth_ounlock(&s->__lock);
    return busy ? EBUSY : 0;
}

int nth_sem_trywait(nth_sem_t *s)
{
    if (!s)
        return EINVAL;
    uint32_t v = __atomic_load_n(&s->__value, __ATOMIC_RELAXED);
    while (v > 0)
        if (__atomic_compare_exchange_n(&s->__value, &v, v - 1, 1, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            return 0;
    return EAGAIN;
}

#define SEM_INTERRUPTED ((uintptr_t)1)

static int sem_wait_common(nth_sem_t *s, clockid_t clock, const struct timespec *abs, const int *stop)
{
    if (!s)
        return EINVAL;
    if (nth_sem_trywait(s) == 0)
        return 0;
    if (abs) {
        int e = nth_check_deadline(clock, abs);
        if (e)
            return e;
    }
    struct nth_waiter w;
    nth_waiter_init(&w, nth__me());
    w.data = (uintptr_t)stop;
    nth_olock(&s->__lock);
    /* Posts increment only under the lock with no waiter, so this check
     * and the enqueue below cannot miss one. */
    if (nth_sem_trywait(s) == 0) {
        nth_ounlock(&s->__lock);
        return 0;
    }
    if (abs && nth_abs_passed(clock, abs)) {
        nth_ounlock(&s->__lock);
        nth_yield();   /* let a poster on this VP run (see mutex.c) */
        return ETIMEDOUT;
    }
    nth_wq_push(&s->__head, &s->__tail, &w);
    if (abs)
        nth_waiter_arm(&w, &s->__lock, &s->__head, &s->__tail, clock, abs);
    nth_ounlock(&s->__lock);
    if (stop) {
        /* Dekker with the interrupter (store *stop, fence, read the queue
         * in nth_sem_interrupt): we are queued, then we read *stop. */
        nth_full_fence();
        int exp = NTH_W_WAITING;
        if (__atomic_load_n(stop, __ATOMIC_RELAXED) &&
            atomic_compare_exchange_strong(&w.state, &exp, NTH_W_CLAIMED_WAKE)) {
            nth_olock(&s->__lock);
            if (w.queued)
                nth_wq_remove(&s->__head, &s->__tail, &w);
            nth_ounlock(&s->__lock);
            nth_waiter_disarm(&w);
            return EINTR;
        }
    }
    int st = nth_waiter_block(&w, s, NTH_OBJ_SEMAPHORE);
    nth_waiter_disarm(&w);
    if (st == NTH_W_WOKEN && (__atomic_load_n(&w.data, __ATOMIC_ACQUIRE) & SEM_INTERRUPTED))
        return EINTR;
    return st == NTH_W_WOKEN ? 0 : ETIMEDOUT;
}

int nth_sem_wait(nth_sem_t *s)
{
    return sem_wait_common(s, CLOCK_REALTIME, NULL, NULL);
}

int nth_sem_timedwait(nth_sem_t *s, const struct timespec *abstime)
{
    return nth_sem_clockwait(s, CLOCK_REALTIME, abstime);
}

int nth_sem_clockwait(nth_sem_t *s, clockid_t clock, const struct timespec *abstime)
{
    if (!abstime || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
        return EINVAL;
    return sem_wait_common(s, clock, abstime, NULL);
}

int nth_sem_clockwait_interruptible(nth_sem_t *s, clockid_t clock, const struct timespec *abstime,
                                    const int *stop)
{
    if (!stop || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
        return EINVAL;
    return sem_wait_common(s, clock, abstime, stop);
}

int nth_sem_interrupt(nth_sem_t *s)
{
    if (!s)
        return EINVAL;
    struct nth_waiter *woken = NULL;
    nth_olock(&s->__lock);
    for (struct nth_waiter *w = s->__head, *next; w; w = next) {
        next = w->next;
        if (nth_waiter_stale(w)) {
            nth_wq_remove(&s->__head, &s->__tail, w);   /* gone with fork() */
            continue;
        }
        const int *stop = (const int *)w->data;
        if (!stop || !__atomic_load_n(stop, __ATOMIC_SEQ_CST))
            continue;
        int exp = NTH_W_WAITING;
        if (!atomic_compare_exchange_strong(&w->state, &exp, NTH_W_CLAIMED_WAKE))
            continue;            /* its alarm won: it times out */
        nth_wq_remove(&s->__head, &s->__tail, w);
        __atomic_store_n(&w->data, (uintptr_t)stop | SEM_INTERRUPTED, __ATOMIC_RELAXED);
        w->next = woken;         /* off the queue: the link is ours */
        woken = w;
    }
    nth_ounlock(&s->__lock);
    while (woken) {
        struct nth_waiter *w = woken;
        woken = w->next;         /* before the wake: w may be gone after */
        nth_waiter_wake(w);
    }
    return 0;
}

int nth_sem_post(nth_sem_t *s)
{
    if (!s)
        return EINVAL;
    nth_olock(&s->__lock);
    struct nth_waiter *w = s->__head ? nth_wq_claim(&s->__head, &s->__tail) : NULL;
    if (!w) {
        uint32_t v = __atomic_load_n(&s->__value, __ATOMIC_RELAXED);
        if (v >= NTH_SEM_VALUE_MAX) {
            nth_ounlock(&s->__lock);
            return EOVERFLOW;
        }
        __atomic_fetch_add(&s->__value, 1, __ATOMIC_RELEASE);
    }
    nth_ounlock(&s->__lock);
    if (w)
        nth_waiter_wake(w);
    return 0;
}

int nth_sem_getvalue(nth_sem_t *s, int *value)
{
    if (!s || !value)
        return EINVAL;
    *value = (int)__atomic_load_n(&s->__value, __ATOMIC_RELAXED);
    return 0;
}
