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
 *
 * Never liburcu's blocking dequeue: when it finds a node whose enqueuer has
 * swung the tail but not yet linked the node (two instructions apart), it
 * spins 10 times and then sleeps in poll() for 10 ms -- holding our lock,
 * so every VP that wants this queue stalls behind it. An enqueuer
 * descheduled in that window is rare, but on this project's 2-vCPU machine
 * it turned a third of the cross-VP condvar round trips' time into such
 * 10 ms sleeps (the bimodal 2-VP figures in bench/RESULTS.md). The
 * non-blocking dequeue leaves the queue as it was and says so; the owner
 * retries for a bounded spin, a thief gives up, and both report "nothing
 * here now" rather than wait for a kernel thread they cannot help.
 */
#include "internal.h"
#include "trace_core.h"

void nth_rq_init(struct nth_rq *q)
{
    NTH_TSAN_OPAQUE_BEGIN();
    __cds_wfcq_init(&q->head, &q->tail);
    NTH_TSAN_OPAQUE_END();
    q->lock = (nth_spinlock_t)NTH_SPINLOCK_INIT;
    q->npop = 0;
    q->npush = 0;
}

void nth_rq_push(struct nth_rq *q, struct nth_thread *t)
{
    NTH_TSAN_RELEASE(t);
    NTH_TSAN_OPAQUE_BEGIN();
    cds_wfcq_node_init(&t->rq_node);
    cds_wfcq_enqueue(&q->head, &q->tail, &t->rq_node);
    NTH_TSAN_OPAQUE_END();
    /* After the enqueue: its exchange on the tail has just made that line
     * ours and drained our stores, so the count's add waits for neither. */
    nth_trace_rt_rq_pushed(q);
}

/* Spins the owner allows an enqueuer to finish linking its node: about a
 * microsecond, far above the two instructions it needs when it runs. */
#define LINK_SPINS 256

static struct nth_thread *pop_locked(struct nth_rq *q, unsigned spins)
{
    struct cds_wfcq_node *n;
    for (;;) {
        NTH_TSAN_OPAQUE_BEGIN();
        n = __cds_wfcq_dequeue_nonblocking(&q->head, &q->tail);
        NTH_TSAN_OPAQUE_END();
        if (n != CDS_WFCQ_WOULDBLOCK)
            break;
        if (spins-- == 0)
            return NULL;   /* still linking: the caller comes back later */
        nth_cpu_relax();
    }
    if (!n)
        return NULL;
    struct nth_thread *t = caa_container_of(n, struct nth_thread, rq_node);
    nth_trace_rt_rq_popped(q);
    NTH_TSAN_ACQUIRE(t);
    return t;
}

struct nth_thread *nth_rq_pop(struct nth_rq *q)
{
    if (nth_rq_empty(q))
        return NULL;
    nth_spin_lock(&q->lock);
    struct nth_thread *t = pop_locked(q, LINK_SPINS);
    nth_spin_unlock(&q->lock);
    return t;
}

/* For stealers: give up rather than wait on a busy victim or a node that
 * is still being linked. */
struct nth_thread *nth_rq_trypop(struct nth_rq *q)
{
    if (nth_rq_empty(q) || !nth_spin_trylock(&q->lock))
        return NULL;
    struct nth_thread *t = pop_locked(q, 0);
    nth_spin_unlock(&q->lock);
    return t;
}
