/*
 * ready_queue.c -- local (per-VP) and global ready queues.
 *
 * liburcu's wait-free concurrent queue: any kernel thread enqueues without
 * waiting; dequeuers (the owner VP and stealers) are serialised by a spin
 * lock of ours, because the dequeue side of __cds_wfcq_* needs mutual
 * exclusion and liburcu's own variant takes a pthread mutex, which the shim
 * will replace. Emptiness is read from the queue itself (two loads), so
 * idle VPs and thieves skip empty queues without touching their lock, and
 * the hot path pays for no counter.
 */
#include "internal.h"
#include "trace_core.h"

void nth_rq_init(struct nth_rq *q)
{
    __cds_wfcq_init(&q->head, &q->tail);
    q->lock = (nth_spinlock_t)NTH_SPINLOCK_INIT;
    q->n = 0;
}

void nth_rq_push(struct nth_rq *q, struct nth_thread *t)
{
    nth_trace_rt_rq(q, 1);
    cds_wfcq_node_init(&t->rq_node);
    NTH_TSAN_RELEASE(t);
    cds_wfcq_enqueue(&q->head, &q->tail, &t->rq_node);
}

static struct nth_thread *pop_locked(struct nth_rq *q)
{
    struct cds_wfcq_node *n = __cds_wfcq_dequeue_blocking(&q->head, &q->tail);
    if (!n)
        return NULL;
    struct nth_thread *t = caa_container_of(n, struct nth_thread, rq_node);
    nth_trace_rt_rq(q, -1);
    NTH_TSAN_ACQUIRE(t);
    return t;
}

struct nth_thread *nth_rq_pop(struct nth_rq *q)
{
    if (cds_wfcq_empty(&q->head, &q->tail))
        return NULL;
    nth_spin_lock(&q->lock);
    struct nth_thread *t = pop_locked(q);
    nth_spin_unlock(&q->lock);
    return t;
}

/* For stealers: give up rather than wait on a busy victim. */
struct nth_thread *nth_rq_trypop(struct nth_rq *q)
{
    if (cds_wfcq_empty(&q->head, &q->tail) || !nth_spin_trylock(&q->lock))
        return NULL;
    struct nth_thread *t = pop_locked(q);
    nth_spin_unlock(&q->lock);
    return t;
}
