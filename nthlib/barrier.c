/*
 * barrier.c -- barriers, after pthread_barrier_wait(3p). The last arrival
 * of a round claims every waiter under the lock, opens the next round, and
 * wakes them after dropping it; a generation counter keeps rounds apart.
 */
#include <errno.h>
#include "sync_core.h"
#include "wait_queue.h"

int nth_barrier_init(nth_barrier_t *b, unsigned count)
{
    if (!b || count == 0)
        return EINVAL;
    *b = (nth_barrier_t){ 0, count, 0, 0, NULL, NULL };
    return 0;
}

int nth_barrier_destroy(nth_barrier_t *b)
{
    if (!b)
        return EINVAL;
    nth_olock(&b->__lock);
    int busy = b->__arrived != 0;
    nth_ounlock(&b->__lock);
    return busy ? EBUSY : 0;
}

int nth_barrier_wait(nth_barrier_t *b)
{
    if (!b || b->__count == 0)
        return EINVAL;
    nth_olock(&b->__lock);
    if (++b->__arrived == b->__count) {
        b->__arrived = 0;
        b->__generation++;
        struct nth_waiter *list = NULL, *w;
        while ((w = nth_wq_claim(&b->__head, &b->__tail)) != NULL) {
            w->next = list;
            list = w;
        }
        nth_ounlock(&b->__lock);
        while (list) {
            w = list;
            list = w->next;
            nth_waiter_wake(w);
        }
        return NTH_BARRIER_SERIAL_THREAD;
    }
    struct nth_waiter w;
    nth_waiter_init(&w, nth__me());
    nth_wq_push(&b->__head, &b->__tail, &w);
    nth_ounlock(&b->__lock);
    nth_waiter_block(&w, b, NTH_OBJ_BARRIER);
    return 0;
}
