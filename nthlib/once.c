/*
 * once.c -- nth_once, after pthread_once(3p).
 *
 * nth_once_t has only 4 bytes (like pthread_once_t), no room for a wait
 * queue, so nano-threads that find the routine running wait in a small
 * process-wide table of wait queues hashed by the once object's address
 * (a "parking lot"). *once: 0 not run, 1 running, 3 running with waiters,
 * 2 done.
 */
#include <errno.h>
#include "sync_core.h"
#include "wait_queue.h"

#define ONCE_DONE 2
#define ONCE_RUNNING 1
#define ONCE_WAITERS 3
#define LOT_BUCKETS 64

static struct lot_bucket {
    uint32_t lock;
    void *head, *tail;
} lot[LOT_BUCKETS];

static struct lot_bucket *bucket_of(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    return &lot[((a >> 2) ^ (a >> 9)) % LOT_BUCKETS];
}

int nth_once(nth_once_t *once, void (*routine)(void))
{
    if (!once || !routine)
        return EINVAL;
    int s = __atomic_load_n(once, __ATOMIC_ACQUIRE);
    if (s == ONCE_DONE)
        return 0;
    s = 0;
    if (__atomic_compare_exchange_n(once, &s, ONCE_RUNNING, 0, __ATOMIC_ACQUIRE,
                                    __ATOMIC_ACQUIRE)) {
        routine();
        if (__atomic_exchange_n(once, ONCE_DONE, __ATOMIC_ACQ_REL) == ONCE_WAITERS) {
            struct lot_bucket *b = bucket_of(once);
            struct nth_waiter *list = NULL, *w, *n;
            nth_olock(&b->lock);
            for (w = b->head; w; w = n) {
                n = w->next;
                if (nth_waiter_stale(w)) {
                    nth_wq_remove(&b->head, &b->tail, w);   /* gone with fork() */
                    continue;
                }
                if (w->data == (uintptr_t)once) {
                    nth_wq_remove(&b->head, &b->tail, w);
                    atomic_store_explicit(&w->state, NTH_W_CLAIMED_WAKE, memory_order_relaxed);
                    w->next = list;
                    list = w;
                }
            }
            nth_ounlock(&b->lock);
            while (list) {
                w = list;
                list = w->next;
                nth_waiter_wake(w);
            }
        }
        return 0;
    }
    /* Someone else runs it: wait in the lot until it is done. */
    struct lot_bucket *b = bucket_of(once);
    struct nth_waiter w;
    nth_waiter_init(&w, nth__me());
    w.data = (uintptr_t)once;
    nth_olock(&b->lock);
    /* Flag waiters with the bucket locked: the runner's exchange to DONE
     * then either comes before (we see DONE and leave) or after (it locks
     * the bucket after our enqueue and finds us). */
    s = __atomic_load_n(once, __ATOMIC_ACQUIRE);
    while (s == ONCE_RUNNING &&
           !__atomic_compare_exchange_n(once, &s, ONCE_WAITERS, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
        ;
    if (s == ONCE_DONE) {
        nth_ounlock(&b->lock);
        return 0;
    }
    nth_wq_push(&b->head, &b->tail, &w);
    nth_ounlock(&b->lock);
    nth_waiter_block(&w, once, NTH_OBJ_ONCE);
    return 0;
}
