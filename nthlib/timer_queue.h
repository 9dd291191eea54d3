/*
 * timer_queue.h -- a timer queue: alarms ordered by absolute CLOCK_MONOTONIC
 * deadline, one per VP, as NthLib's timed waits had.
 *
 * An alarm is embedded in its owner's record (usually a waiter on its
 * stack), so arming never allocates and never fails. The queue is a pairing
 * heap (intrusive, O(1) insert, O(log n) amortised removal) under a tiny
 * spinlock: other VPs touch it when a woken waiter that migrated cancels its
 * alarm, and when alarms move between VPs.
 *
 * An alarm's life: ARMED (in a queue) -> FIRING (popped, callback running)
 * -> DONE, or ARMED -> DONE by nth_tq_cancel(). The callback may re-arm the
 * alarm (a CLOCK_REALTIME deadline that the wall clock has not reached yet).
 * nth_tq_cancel() returns only when the callback no longer runs, so the
 * owner may free the record afterwards.
 */
#ifndef NTH_TIMER_QUEUE_H
#define NTH_TIMER_QUEUE_H

#include <stdint.h>
#include <time.h>
#include <stdatomic.h>

struct nth_alarm;
/* Called once the deadline passed, on some VP's kernel thread, without the
 * queue's lock; must not block. Returns 0 when done, or 1 after setting
 * a->deadline to a later time to be queued again. */
typedef int (*nth_alarm_fn)(struct nth_alarm *a, uint64_t now);

struct nth_alarm {
    struct nth_alarm *child, *sibling, *prev; /* pairing heap links */
    uint64_t deadline;            /* CLOCK_MONOTONIC, ns */
    /* 0, or this alarm is one slice of a longer wait whose real deadline
     * this is (> deadline; NTH_TQ_NONE: untimed): it ends the slice so
     * that the waiter can look for a cancellation or a signal, and is no
     * work that is due for dormancy (nth_tq_next_real). Set before arming,
     * constant while armed. */
    uint64_t real;
    nth_alarm_fn fn;
    void *arg;
    struct nth_tq *_Atomic q;     /* queue holding it while ARMED */
    _Atomic int state;            /* NTH_ALARM_* */
};

enum { NTH_ALARM_IDLE = 0, NTH_ALARM_ARMED, NTH_ALARM_FIRING, NTH_ALARM_DONE };

struct nth_tq {
    _Atomic uint32_t lock;
    struct nth_alarm *root;
    _Atomic uint64_t next;        /* root's deadline or UINT64_MAX, read
                                     without the lock by a parking VP */
    uint64_t count;
    uint64_t nslices;             /* alarms with real set (under lock; read
                                     without it by nth_tq_next_real) */
};

#define NTH_TQ_NONE UINT64_MAX

uint64_t nth_now_ns(void) __attribute__((visibility("hidden")));
/* Convert an absolute timespec on clock (REALTIME or MONOTONIC) to
 * CLOCK_MONOTONIC ns, saturating at 0 for a time in the past. */
uint64_t nth_abs_to_mono(clockid_t clock, const struct timespec *ts) __attribute__((visibility("hidden")));

void nth_tq_init(struct nth_tq *q) __attribute__((visibility("hidden")));
/* Queue a (IDLE or DONE) with a->deadline, a->fn, a->arg set. */
void nth_tq_arm(struct nth_tq *q, struct nth_alarm *a) __attribute__((visibility("hidden")));
/* 1 if a was removed before firing, 0 if it fired (or was never armed);
 * either way its callback is not running when this returns. */
int nth_tq_cancel(struct nth_alarm *a) __attribute__((visibility("hidden")));
/* Fire every alarm with deadline <= now; return the next deadline. */
uint64_t nth_tq_fire(struct nth_tq *q, uint64_t now) __attribute__((visibility("hidden")));
/* Earliest deadline (NTH_TQ_NONE if empty); lock-free, may be stale. */
static inline uint64_t nth_tq_next_deadline(struct nth_tq *q)
{
    return __atomic_load_n((uint64_t *)&q->next, __ATOMIC_ACQUIRE);
}
/* Earliest real deadline (NTH_TQ_NONE if none): an alarm's own, or its
 * wait's for a slice (nth_alarm.real). Without slices, nth_tq_next_deadline;
 * with them, a walk of the heap under the lock, pruned where a subtree's
 * deadlines cannot beat the best found (the cpumgr watcher's, only when
 * every VP is idle). */
uint64_t nth_tq_next_real(struct nth_tq *q) __attribute__((visibility("hidden")));
/* Move every alarm of from to to (a VP parking for good). */
void nth_tq_move(struct nth_tq *from, struct nth_tq *to) __attribute__((visibility("hidden")));

#endif
