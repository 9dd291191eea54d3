/*
 * semaphore.c -- counting semaphores, after sem_wait(3p) and sem_post(3p).
 *
 * The value is taken with a lock-free CAS when positive. A post with
 * waiters hands its unit straight to the first waiter that can still be
 * woken (the value stays 0), so a queue is never non-empty while the value
 * is positive, and a timed-out waiter never swallows a post.
 */
#include <errno.h>
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

static int sem_wait_common(nth_sem_t *s, clockid_t clock, const struct timespec *abs)
{
    if (!s)
        return EINVAL;
    if (nth_sem_trywait(s) == 0)
        return 0;
    if (abs) {
        int e = nth_check_abs(clock, abs);
        if (e)
            return e;
    }
    struct nth_waiter w;
    nth_waiter_init(&w, nth_self());
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
    int st = nth_waiter_block(&w, s, NTH_OBJ_SEMAPHORE);
    nth_waiter_disarm(&w);
    return st == NTH_W_WOKEN ? 0 : ETIMEDOUT;
}

int nth_sem_wait(nth_sem_t *s)
{
    return sem_wait_common(s, CLOCK_REALTIME, NULL);
}

int nth_sem_timedwait(nth_sem_t *s, const struct timespec *abstime)
{
    return nth_sem_clockwait(s, CLOCK_REALTIME, abstime);
}

int nth_sem_clockwait(nth_sem_t *s, clockid_t clock, const struct timespec *abstime)
{
    if (!abstime || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
        return EINVAL;
    return sem_wait_common(s, clock, abstime);
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
