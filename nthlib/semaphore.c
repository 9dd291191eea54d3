/*
 * semaphore.c -- counting semaphores, after sem_wait(3p) and sem_post(3p).
 *
 * The value word holds the count (bits 0..30) and SEM_WAITERS (bit 31:
 * nano-threads may be queued). The count is taken with a lock-free CAS
 * when positive. A post with no SEM_WAITERS is one CAS too, no lock: so
 * it can be made from a signal handler (nth_sem_post_async), which may
 * have interrupted a holder of the queue's lock on its own kernel thread
 * (sem_post is async-signal-safe, signal-safety(7)). A waiter sets
 * SEM_WAITERS with the lock held before it queues, so a lock-free post
 * that raced with it fails its CAS and takes the lock.
 *
 * With waiters, a post adds its unit to the count and then, under the
 * lock, hands units to waiters (drain): one unit each, the count going
 * back down, so a woken waiter returns with its unit and a timed-out
 * waiter never swallows a post. A handler's post cannot take the lock:
 * it only adds the unit ("owed" to the queue), and its caller has
 * nth_sem_drain run later from normal context. An owed unit is a unit
 * like any other: sem_trywait takes it at once (a handler's post is
 * visible when sem_post returns, as natively); the drain hands on only
 * what is left. SEM_WAITERS is cleared by a drain that finds the queue
 * empty.
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

#define SEM_WAITERS 0x80000000u
#define SEM_COUNT(v) ((v) & ~SEM_WAITERS)

/* Take one unit if the count is positive: 1, else 0. */
static int take_unit(nth_sem_t *s)
{
    uint32_t v = __atomic_load_n(&s->__value, __ATOMIC_RELAXED);
    while (SEM_COUNT(v) > 0)
        if (__atomic_compare_exchange_n(&s->__value, &v, v - 1, 1, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            return 1;
    return 0;
}

/* Add one unit: 0, or EOVERFLOW at NTH_SEM_VALUE_MAX. *had_waiters says
 * whether SEM_WAITERS was set (the unit is then owed to the queue). */
static int add_unit(nth_sem_t *s, int *had_waiters)
{
    uint32_t v = __atomic_load_n(&s->__value, __ATOMIC_RELAXED);
    do {
        if (SEM_COUNT(v) >= NTH_SEM_VALUE_MAX)
            return EOVERFLOW;
    } while (!__atomic_compare_exchange_n(&s->__value, &v, v + 1, 1, __ATOMIC_SEQ_CST,
                                          __ATOMIC_RELAXED));
    *had_waiters = (v & SEM_WAITERS) != 0;
    return 0;
}

int nth_sem_trywait(nth_sem_t *s)
{
    if (!s)
        return EINVAL;
    return take_unit(s) ? 0 : EAGAIN;
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
    /* Take a unit, or set SEM_WAITERS with the count at 0 (one CAS, so a
     * lock-free post either came before, and its unit is taken here, or
     * comes after and sees the flag: it then drains, under this lock,
     * after the enqueue below). */
    uint32_t v = __atomic_load_n(&s->__value, __ATOMIC_RELAXED);
    for (;;) {
        if (SEM_COUNT(v) > 0) {
            if (__atomic_compare_exchange_n(&s->__value, &v, v - 1, 1, __ATOMIC_ACQUIRE,
                                            __ATOMIC_RELAXED)) {
                nth_ounlock(&s->__lock);
                return 0;
            }
            continue;
        }
        if (abs && nth_abs_passed(clock, abs)) {
            nth_ounlock(&s->__lock);
            nth_yield();   /* let a poster on this VP run (see mutex.c) */
            return ETIMEDOUT;
        }
        if ((v & SEM_WAITERS) ||
            __atomic_compare_exchange_n(&s->__value, &v, SEM_WAITERS, 1, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED))
            break;
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

/* Under s's lock: hand the count's units to queued waiters, one each,
 * and clear SEM_WAITERS once the queue is empty. Returns the claimed
 * waiters, linked through next, for nth_waiter_wake after the unlock. */
static struct nth_waiter *drain_locked(nth_sem_t *s)
{
    struct nth_waiter *woken = NULL;
    uint32_t v = __atomic_load_n(&s->__value, __ATOMIC_RELAXED);
    for (;;) {
        if (!s->__head) {
            /* No waiter: the units stay (taken by trywait), the flag goes. */
            if (!(v & SEM_WAITERS) ||
                __atomic_compare_exchange_n(&s->__value, &v, v & ~SEM_WAITERS, 1,
                                            __ATOMIC_RELEASE, __ATOMIC_RELAXED))
                break;
            continue;
        }
        if (SEM_COUNT(v) == 0)
            break;
        if (!__atomic_compare_exchange_n(&s->__value, &v, v - 1, 1, __ATOMIC_ACQUIRE,
                                         __ATOMIC_RELAXED))
            continue;
        struct nth_waiter *w = nth_wq_claim(&s->__head, &s->__tail);
        if (!w) {
            /* Every queued waiter lost to its alarm: the unit goes back;
             * the queue is empty now, the next round clears the flag. */
            v = __atomic_add_fetch(&s->__value, 1, __ATOMIC_RELEASE);
            continue;
        }
        w->next = woken;         /* off the queue: the link is ours */
        woken = w;
        v = __atomic_load_n(&s->__value, __ATOMIC_RELAXED);
    }
    return woken;
}

static void wake_list(struct nth_waiter *woken)
{
    while (woken) {
        struct nth_waiter *w = woken;
        woken = w->next;         /* before the wake: w may be gone after */
        nth_waiter_wake(w);
    }
}

int nth_sem_drain(nth_sem_t *s)
{
    if (!s)
        return EINVAL;
    nth_olock(&s->__lock);
    struct nth_waiter *woken = drain_locked(s);
    nth_ounlock(&s->__lock);
    wake_list(woken);
    return 0;
}

int nth_sem_post_async(nth_sem_t *s)
{
    if (!s)
        return EINVAL;
    int had_waiters = 0;
    int r = add_unit(s, &had_waiters);
    if (r)
        return r;
    return had_waiters ? EINPROGRESS : 0;
}

int nth_sem_post(nth_sem_t *s)
{
    int r = nth_sem_post_async(s);
    if (r == EINPROGRESS)
        r = nth_sem_drain(s);
    return r;
}

int nth_sem_getvalue(nth_sem_t *s, int *value)
{
    if (!s || !value)
        return EINVAL;
    *value = (int)SEM_COUNT(__atomic_load_n(&s->__value, __ATOMIC_RELAXED));
    return 0;
}
