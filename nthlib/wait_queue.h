/*
 * wait_queue.h -- per-object wait queues of nano-threads, and the waiter
 * record every blocking construct uses.
 *
 * A waiter lives on the waiting nano-thread's stack. Under the object's
 * spinlock it enqueues itself, releases the lock, then nth_wait()s until its
 * state is final. Waking is decided by one CAS on w->state (WAITING ->
 * CLAIMED): a waker (signal, unlock, post) and a timeout alarm may race for
 * the same waiter, and exactly one wins. The winner finishes the wake-up
 * (nth_to_rq) and only then stores the final state, so the waiter never
 * returns, and frees its record, while a waker still uses it.
 *
 * The queue is doubly linked so a timed-out waiter can be removed from the
 * middle. w->queued says, under the object lock, whether w is still in it
 * (a waker may have dequeued it and then lost the CAS).
 */
#ifndef NTH_WAIT_QUEUE_H
#define NTH_WAIT_QUEUE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include "nth.h"
#include "olock.h"
#include "timer_queue.h"
#include "sync_core.h"
#include "mutex_bias.h"

enum {
    NTH_W_WAITING = 0,
    NTH_W_CLAIMED_WAKE,      /* a waker won, nth_to_rq in progress */
    NTH_W_CLAIMED_TIMEOUT,   /* the alarm won, removal in progress */
    NTH_W_WOKEN,             /* final */
    NTH_W_TIMEDOUT,          /* final */
};

struct nth_waiter {
    struct nth_waiter *next, *prev;
    nth_t t;
    _Atomic int state;
    int queued;               /* under the object lock */
    unsigned gen;             /* nth_wait_gen when queued (wait_gen.c) */
    uintptr_t data;           /* per object: reader/writer, once key, ... */
    /* Timed waits only: */
    struct nth_alarm alarm;
    uint32_t *olock;          /* object lock guarding the queue */
    uint32_t *obias;          /* its bias word (nth_olock_biased), or NULL */
    void **qhead, **qtail;    /* the queue w is in */
    clockid_t clock;          /* the deadline's clock */
    struct timespec abs;      /* the deadline, on clock */
    /* Called by the alarm after removal, under the object lock, e.g. to
     * pass on a hand-off the timed-out waiter can no longer take. */
    void (*on_timeout)(struct nth_waiter *w);
};

/* The fork generation (wait_gen.c): bumped in each fork() child, so that
 * waiters queued by the parent's threads, which do not exist in the child,
 * are told from the child's own. Written only by the child's fork handler. */
extern unsigned nth_wait_gen __attribute__((visibility("hidden")));
/* In a fork() child, before any other code runs: every waiter queued so far
 * belongs to a thread that is gone. Not thread-safe: the child's only
 * kernel thread calls it (nth_fork_child). */
void nth_wait_gen_fork_child(void) __attribute__((visibility("hidden")));

/* 1 if w was queued by a thread that did not survive a fork(). */
static inline int nth_waiter_stale(const struct nth_waiter *w)
{
    return w->gen != __atomic_load_n(&nth_wait_gen, __ATOMIC_RELAXED);
}

static inline void nth_waiter_init(struct nth_waiter *w, nth_t self)
{
    w->next = w->prev = NULL;
    w->t = self;
    atomic_store_explicit(&w->state, NTH_W_WAITING, memory_order_relaxed);
    w->queued = 0;
    w->gen = __atomic_load_n(&nth_wait_gen, __ATOMIC_RELAXED);
    w->data = 0;
    /* Relaxed: a plain `=` on the _Atomic field is a sequentially
     * consistent store, an xchg on x86-64 (a locked instruction per wait);
     * nobody sees w before the object lock publishes it. */
    atomic_store_explicit(&w->alarm.state, NTH_ALARM_IDLE, memory_order_relaxed);
    w->olock = NULL;
    w->obias = NULL;
    w->on_timeout = NULL;
}

/* The head is written under the object lock but read without it by the
 * condvar's "any waiter?" fast path (nth_cond_signal/broadcast, and the
 * interruptible wait's Dekker): an atomic store, a plain move on x86 and
 * arm64, so that read is no data race. */
static inline void nth_wq_set_head(void **head, struct nth_waiter *w)
{
    __atomic_store_n(head, (void *)w, __ATOMIC_RELAXED);
}

/* The tail likewise: tests look at head and tail unlocked to see that
 * waiters have queued (test_sync's interruptible semaphore case). */
static inline void nth_wq_set_tail(void **tail, struct nth_waiter *w)
{
    __atomic_store_n(tail, (void *)w, __ATOMIC_RELAXED);
}

static inline void nth_wq_push(void **head, void **tail, struct nth_waiter *w)
{
    struct nth_waiter *t = (struct nth_waiter *)*tail;
    w->next = NULL;
    w->prev = t;
    if (t)
        t->next = w;
    else
        nth_wq_set_head(head, w);
    nth_wq_set_tail(tail, w);
    w->queued = 1;
}

/* At the head: a woken waiter that lost the race keeps its turn. */
static inline void nth_wq_push_front(void **head, void **tail, struct nth_waiter *w)
{
    struct nth_waiter *h = (struct nth_waiter *)*head;
    w->prev = NULL;
    w->next = h;
    if (h)
        h->prev = w;
    else
        nth_wq_set_tail(tail, w);
    nth_wq_set_head(head, w);
    w->queued = 1;
}

static inline void nth_wq_remove(void **head, void **tail, struct nth_waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        nth_wq_set_head(head, w->next);
    if (w->next)
        w->next->prev = w->prev;
    else
        nth_wq_set_tail(tail, w->prev);
    w->next = w->prev = NULL;
    w->queued = 0;
}

/* Under the object lock: unlink and return the first waiter, NULL when
 * none. Waiters left by the threads of a parent process (fork()) are
 * unlinked and skipped: they never run again, so they cannot be handed an
 * object or woken. */
static inline struct nth_waiter *nth_wq_pop(void **head, void **tail)
{
    struct nth_waiter *w;
    while ((w = (struct nth_waiter *)*head) != NULL) {
        nth_wq_remove(head, tail, w);
        if (__builtin_expect(!nth_waiter_stale(w), 1))
            break;
    }
    return w;
}

/* Under the object lock: take the first waiter that can still be woken
 * (CAS WAITING -> CLAIMED_WAKE); waiters that lost to their alarm are left
 * to it. Returns NULL when none. The caller, after dropping the lock, calls
 * nth_waiter_wake(). */
static inline struct nth_waiter *nth_wq_claim(void **head, void **tail)
{
    struct nth_waiter *w;
    while ((w = nth_wq_pop(head, tail)) != NULL) {
        int exp = NTH_W_WAITING;
        if (atomic_compare_exchange_strong_explicit(&w->state, &exp, NTH_W_CLAIMED_WAKE,
                                                    memory_order_acq_rel,
                                                    memory_order_acquire))
            return w;
    }
    return NULL;
}

/* Finish waking a claimed waiter (without any lock). */
static inline void nth_waiter_wake(struct nth_waiter *w)
{
    nth_t t = w->t;
    /* Store the final state first would let the waiter return and reuse
     * its stack before we read w; t was read above, and a waiter that sees
     * WOKEN early only meets a spare permit at its next nth_wait. But t's
     * descriptor must outlive this call, so the waiter waits for FINAL. */
    nth__wake_any(t);
    atomic_store_explicit(&w->state, NTH_W_WOKEN, memory_order_release);
}

/* Block the caller until w's state is final; returns NTH_W_WOKEN or
 * NTH_W_TIMEDOUT. obj (of enum nth_trace_obj_kind kind; NULL: none) is
 * what the trace names if the caller is switched out meanwhile. */
static inline int nth_waiter_block(struct nth_waiter *w, const void *obj, unsigned kind)
{
    unsigned spins = 0;
    int s;
    int foreign = nth_is_foreign(w->t);
    nth_sync_trace_wait(obj, kind);
    for (;;) {
        s = atomic_load_explicit(&w->state, memory_order_acquire);
        if (s == NTH_W_WOKEN || s == NTH_W_TIMEDOUT)
            break;
        if (s == NTH_W_WAITING && !foreign) {
            nth_wait();
        } else if (s == NTH_W_WAITING) {
            /* A timed foreign waiter's alarm is not queued (nth_waiter_arm):
             * at the deadline it fires it itself; 1 means re-armed (the wall
             * clock went back), with a new deadline. */
            uint64_t d = w->olock ? w->alarm.deadline : NTH_TQ_NONE;
            if (nth__foreign_wait(w->t, d) == ETIMEDOUT)
                (void)w->alarm.fn(&w->alarm, nth_now_ns());
        } else if (++spins % 64) {
            nth_sync_relax();  /* a waker or the alarm is mid-way... */
        } else {
            nth_yield();      /* ...and its kernel thread may be preempted */
        }
    }
    nth_sync_trace_wait(NULL, 0);
    return s;
}

/* Timed waits (timeout.c). Validate a deadline: 0 or EINVAL. */
int nth_check_abs(clockid_t clock, const struct timespec *abs)
    __attribute__((visibility("hidden")));
/* The deadline of a wait on an object (mutex, condvar, rwlock,
 * semaphore), checked when the caller would block: 0; EINVAL for a bad
 * clock or tv_nsec outside [0, 1e9); ETIMEDOUT for tv_sec < 0, a valid
 * time long past (glibc's pthread_*_timed* and sem_timedwait give
 * ETIMEDOUT there; only sleeps, like the kernel's, refuse it: nth_check_abs). */
int nth_check_deadline(clockid_t clock, const struct timespec *abs)
    __attribute__((visibility("hidden")));
/* 1 if the deadline has passed now. */
int nth_abs_passed(clockid_t clock, const struct timespec *abs)
    __attribute__((visibility("hidden")));
/* Arm w's alarm for (clock, abs) on the caller's VP; w must be queued in
 * (head, tail) guarded by olock before the alarm can fire, i.e. arm after
 * enqueueing, before releasing olock (the alarm callback takes olock). */
void nth_waiter_arm(struct nth_waiter *w, uint32_t *olock, void **head, void **tail,
                    clockid_t clock, const struct timespec *abs)
    __attribute__((visibility("hidden")));
/* After nth_waiter_block(): make sure the alarm is gone. */
static inline void nth_waiter_disarm(struct nth_waiter *w)
{
    if (w->olock)
        nth_tq_cancel(&w->alarm);
}

#endif
