/*
 * timeout.c -- timed waits: deadline checks and the alarm that times a
 * waiter out of an object's wait queue.
 */
#include <errno.h>
#include "sync_core.h"
#include "wait_queue.h"

int nth_check_abs(clockid_t clock, const struct timespec *abs)
{
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    if (!abs || abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L || abs->tv_sec < 0)
        return EINVAL;
    return 0;
}

int nth_check_deadline(clockid_t clock, const struct timespec *abs)
{
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    if (!abs || abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L)
        return EINVAL;
    /* Before the epoch (or the clock's start): a valid time, long past. */
    return abs->tv_sec < 0 ? ETIMEDOUT : 0;
}

int nth_abs_passed(clockid_t clock, const struct timespec *abs)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return now.tv_sec > abs->tv_sec ||
           (now.tv_sec == abs->tv_sec && now.tv_nsec >= abs->tv_nsec);
}

/* The alarm of a timed waiter. It first wins or loses the waiter with one
 * CAS, without touching the object: a waiter that was woken may already be
 * on its way out and the object destroyed (destroy after broadcast is
 * legal). Only the winner takes the object lock to unqueue it. */
static int waiter_alarm(struct nth_alarm *a, uint64_t now)
{
    struct nth_waiter *w = a->arg;
    (void)now;
    if (w->clock == CLOCK_REALTIME && !nth_abs_passed(CLOCK_REALTIME, &w->abs)) {
        /* The wall clock went back: wait for it to reach the deadline. */
        a->deadline = nth_abs_to_mono(CLOCK_REALTIME, &w->abs);
        if (a->deadline <= nth_now_ns())
            a->deadline = nth_now_ns() + 1;
        return 1;
    }
    int exp = NTH_W_WAITING;
    if (!atomic_compare_exchange_strong_explicit(&w->state, &exp, NTH_W_CLAIMED_TIMEOUT,
                                                 memory_order_acq_rel, memory_order_acquire))
        return 0;
    int b = 0;
    if (w->obias)
        b = nth_olock_biased(w->olock, w->obias);
    else
        nth_olock(w->olock);
    if (w->queued)
        nth_wq_remove(w->qhead, w->qtail, w);
    if (w->on_timeout)
        w->on_timeout(w);
    if (w->obias)
        nth_ounlock_biased(w->olock, b);
    else
        nth_ounlock(w->olock);
    /* At the tail of the ready queue, not in next_local: a due alarm at
     * every switch would otherwise keep that queue from running
     * (sync_core.h, nth__wake_fifo). */
    nth__wake_any_fifo(w->t);
    atomic_store_explicit(&w->state, NTH_W_TIMEDOUT, memory_order_release);
    return 0;
}

void nth_waiter_arm(struct nth_waiter *w, uint32_t *olock, void **head, void **tail,
                    clockid_t clock, const struct timespec *abs)
{
    w->olock = olock;
    w->qhead = head;
    w->qtail = tail;
    w->clock = clock;
    w->abs = *abs;
    w->alarm.deadline = nth_abs_to_mono(clock, abs);
    w->alarm.fn = waiter_alarm;
    w->alarm.arg = w;
    if (nth_is_foreign(w->t))
        return;         /* it fires it itself (nth_waiter_block) */
    nth__sync_arm(&w->alarm);
}

/* Without the core's per-VP queues (or from a kernel thread that is no
 * VP) timed waits share this one, fired at every VP's scheduling points. */
static struct nth_tq fallback_tq = { 0, NULL, NTH_TQ_NONE, 0, 0 };

struct nth_tq *nth__sync_fallback_tq(void)
{
    return &fallback_tq;
}

struct nth_tq *nth__sync_tq(void)
{
    struct nth_tq *q = nth__vp_timer_queue();
    return q ? q : &fallback_tq;
}

void nth__sync_arm(struct nth_alarm *a)
{
    /* A slice of a longer wait (nth_wait_slices): its real deadline. */
    uint64_t real = nth__wait_real();
    a->real = real > a->deadline ? real : 0;
    struct nth_tq *q = nth__sync_tq();
    if (q != &fallback_tq) {
        nth_tq_arm(q, a);
        return;
    }
    uint64_t before = nth_tq_next_deadline(q);
    nth_tq_arm(q, a);
    nth__sync_fallback_armed(before);
}

uint64_t nth__timers_poll(struct nth_tq *q)
{
    uint64_t now = nth_now_ns();
    uint64_t next = q ? nth_tq_fire(q, now) : NTH_TQ_NONE;
    uint64_t fb = nth_tq_fire(&fallback_tq, now);
    return fb < next ? fb : next;
}
