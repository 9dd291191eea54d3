/*
 * rwlock.c -- read-write locks, after pthread_rwlock_rdlock(3p) and
 * pthread_rwlock_wrlock(3p), phase-fair so neither side starves:
 *  - once a writer waits, new readers queue (writers are not starved);
 *  - a writer's unlock admits every reader that queued meanwhile before the
 *    next writer (readers are not starved either), so a waiting writer gets
 *    in after at most one reader phase;
 *  - the lock is handed over to the woken under the spinlock, so nobody
 *    barges in between.
 */
#include <errno.h>
#include "sync_core.h"
#include "wait_queue.h"

int nth_rwlock_init(nth_rwlock_t *rw, const void *attr)
{
    (void)attr;
    if (!rw)
        return EINVAL;
    *rw = (nth_rwlock_t)NTH_RWLOCK_INITIALIZER;
    return 0;
}

int nth_rwlock_destroy(nth_rwlock_t *rw)
{
    if (!rw)
        return EINVAL;
    nth_olock(&rw->__lock);
    int busy = rw->__readers || rw->__writer || rw->__rhead || rw->__whead;
    nth_ounlock(&rw->__lock);
    return busy ? EBUSY : 0;
}

/* Under the lock: hand the lock to whoever may have it now, returning the
 * claimed waiters as a list (wake them after unlocking). */
static struct nth_waiter *grant(nth_rwlock_t *rw, int prefer_readers)
{
    struct nth_waiter *list = NULL, *w;
    if (rw->__writer)
        return NULL;
    if (!prefer_readers && rw->__readers == 0 &&
        (w = nth_wq_claim(&rw->__whead, &rw->__wtail)) != NULL) {
        rw->__writers_waiting--;
        rw->__writer = 1;
        rw->__owner = w->t;
        w->next = NULL;
        return w;
    }
    if (prefer_readers || rw->__writers_waiting == 0) {
        while ((w = nth_wq_claim(&rw->__rhead, &rw->__rtail)) != NULL) {
            rw->__readers++;
            w->next = list;
            list = w;
        }
        if (list)
            return list;
    }
    if (rw->__readers == 0 && (w = nth_wq_claim(&rw->__whead, &rw->__wtail)) != NULL) {
        rw->__writers_waiting--;
        rw->__writer = 1;
        rw->__owner = w->t;
        w->next = NULL;
        return w;
    }
    return NULL;
}

static void wake_list(struct nth_waiter *list)
{
    while (list) {
        struct nth_waiter *w = list;
        list = w->next;
        nth_waiter_wake(w);
    }
}

static void writer_left(struct nth_waiter *w)
{
    nth_rwlock_t *rw = (nth_rwlock_t *)(void *)((char *)w->olock - offsetof(nth_rwlock_t, __lock));
    rw->__writers_waiting--;
}

/* Under the lock, for a reader or a writer that cannot have rw now: why
 * it must not wait (EBUSY for a try, EDEADLK on its own write lock,
 * EINVAL for a bad deadline, ETIMEDOUT for one already passed), having
 * released the lock; 0 (lock still held) when it may queue. One place for
 * both sides, as pthread_rwlock_timedrdlock(3p) and _timedwrlock(3p) list
 * the same errors. Inlined, so that each side's code stays as it was
 * written out twice (no call on the try-lock failure path). */
static inline __attribute__((always_inline))
int no_wait(nth_rwlock_t *rw, nth_t self, const struct timespec *abs, int try)
{
    int e = 0;
    if (try)
        e = EBUSY;   /* also on our own write lock, as pthread_rwlock_try*lock */
    else if (rw->__writer && rw->__owner == self)
        e = EDEADLK;
    else if (abs && (e = nth_check_deadline(CLOCK_REALTIME, abs)) == 0 &&
             nth_abs_passed(CLOCK_REALTIME, abs))
        e = ETIMEDOUT;
    if (e) {
        nth_ounlock(&rw->__lock);
        if (e == ETIMEDOUT)
            nth_yield();   /* let the holder on this VP run (see mutex.c) */
    }
    return e;
}

static int rdlock(nth_rwlock_t *rw, const struct timespec *abs, int try)
{
    if (!rw)
        return EINVAL;
    nth_t self = nth__me();
    nth_olock(&rw->__lock);
    if (!rw->__writer && rw->__writers_waiting == 0) {
        int e = 0;
        if (rw->__readers == UINT32_MAX)
            e = EAGAIN;
        else
            rw->__readers++;
        nth_ounlock(&rw->__lock);
        return e;
    }
    int e = no_wait(rw, self, abs, try);
    if (e)
        return e;
    struct nth_waiter w;
    nth_waiter_init(&w, self);
    nth_wq_push(&rw->__rhead, &rw->__rtail, &w);
    if (abs)
        nth_waiter_arm(&w, &rw->__lock, &rw->__rhead, &rw->__rtail, CLOCK_REALTIME, abs);
    nth_ounlock(&rw->__lock);
    int s = nth_waiter_block(&w, rw, NTH_OBJ_RWLOCK);
    nth_waiter_disarm(&w);
    return s == NTH_W_WOKEN ? 0 : ETIMEDOUT;
}

static int wrlock(nth_rwlock_t *rw, const struct timespec *abs, int try)
{
    if (!rw)
        return EINVAL;
    nth_t self = nth__me();
    nth_olock(&rw->__lock);
    if (!rw->__writer && rw->__readers == 0) {
        rw->__writer = 1;
        rw->__owner = self;
        nth_ounlock(&rw->__lock);
        return 0;
    }
    int e = no_wait(rw, self, abs, try);
    if (e)
        return e;
    struct nth_waiter w;
    nth_waiter_init(&w, self);
    rw->__writers_waiting++;
    nth_wq_push(&rw->__whead, &rw->__wtail, &w);
    if (abs) {
        w.on_timeout = writer_left;
        nth_waiter_arm(&w, &rw->__lock, &rw->__whead, &rw->__wtail, CLOCK_REALTIME, abs);
    }
    nth_ounlock(&rw->__lock);
    int s = nth_waiter_block(&w, rw, NTH_OBJ_RWLOCK);
    nth_waiter_disarm(&w);
    if (s == NTH_W_WOKEN)
        return 0;
    /* Readers queued only because we waited may go in now. */
    nth_olock(&rw->__lock);
    struct nth_waiter *list = grant(rw, 0);
    nth_ounlock(&rw->__lock);
    wake_list(list);
    return ETIMEDOUT;
}

int nth_rwlock_rdlock(nth_rwlock_t *rw) { return rdlock(rw, NULL, 0); }
int nth_rwlock_tryrdlock(nth_rwlock_t *rw) { return rdlock(rw, NULL, 1); }
int nth_rwlock_wrlock(nth_rwlock_t *rw) { return wrlock(rw, NULL, 0); }
int nth_rwlock_trywrlock(nth_rwlock_t *rw) { return wrlock(rw, NULL, 1); }

int nth_rwlock_timedrdlock(nth_rwlock_t *rw, const struct timespec *abstime)
{
    return abstime ? rdlock(rw, abstime, 0) : EINVAL;
}

int nth_rwlock_timedwrlock(nth_rwlock_t *rw, const struct timespec *abstime)
{
    return abstime ? wrlock(rw, abstime, 0) : EINVAL;
}

int nth_rwlock_unlock(nth_rwlock_t *rw)
{
    if (!rw)
        return EINVAL;
    struct nth_waiter *list = NULL;
    nth_t self = nth__me();
    nth_olock(&rw->__lock);
    if (rw->__writer) {
        if (rw->__owner != self) {
            nth_ounlock(&rw->__lock);
            return EPERM;
        }
        rw->__writer = 0;
        rw->__owner = NULL;
        list = grant(rw, 1);
    } else if (rw->__readers > 0) {
        if (--rw->__readers == 0)
            list = grant(rw, 0);
    } else {
        nth_ounlock(&rw->__lock);
        return EPERM;
    }
    nth_ounlock(&rw->__lock);
    wake_list(list);
    return 0;
}
