/*
 * timer_queue.c -- per-VP timer queue: pairing heap of alarms keyed by
 * absolute CLOCK_MONOTONIC deadline (Fredman, Sedgewick, Sleator, Tarjan,
 * "The pairing heap", Algorithmica 1986), under a spinlock.
 */
#include <stddef.h>
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "timer_queue.h"
#include "olock.h"

uint64_t nth_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t nth_abs_to_mono(clockid_t clock, const struct timespec *ts)
{
    uint64_t want = (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
    if (clock == CLOCK_MONOTONIC)
        return want;
    struct timespec now;
    clock_gettime(clock, &now);
    uint64_t n = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    uint64_t mono = nth_now_ns();
    if (want <= n)
        return mono > 0 ? mono : 1;
    uint64_t d = want - n;
    return mono + d < mono ? NTH_TQ_NONE - 1 : mono + d;
}

void nth_tq_init(struct nth_tq *q)
{
    q->lock = 0;
    q->root = NULL;
    q->next = NTH_TQ_NONE;
    q->count = 0;
    q->nslices = 0;
}

/* Meld two heap roots (either may be NULL); the result has no sibling. */
static struct nth_alarm *meld(struct nth_alarm *a, struct nth_alarm *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    if (b->deadline < a->deadline) {
        struct nth_alarm *t = a;
        a = b;
        b = t;
    }
    /* b becomes a's first child. */
    b->prev = a;
    b->sibling = a->child;
    if (a->child)
        a->child->prev = b;
    a->child = b;
    a->sibling = NULL;
    a->prev = NULL;
    return a;
}

/* Two-pass pairing of a sibling list into one heap. */
static struct nth_alarm *merge_pairs(struct nth_alarm *first)
{
    struct nth_alarm *paired = NULL; /* reversed list of melded pairs */
    while (first) {
        struct nth_alarm *a = first, *b = a->sibling;
        first = b ? b->sibling : NULL;
        a->sibling = a->prev = NULL;
        if (b)
            b->sibling = b->prev = NULL;
        struct nth_alarm *m = meld(a, b);
        m->sibling = paired;
        paired = m;
    }
    struct nth_alarm *r = NULL;
    while (paired) {
        struct nth_alarm *n = paired->sibling;
        paired->sibling = NULL;
        r = meld(r, paired);
        paired = n;
    }
    return r;
}

static void publish_next(struct nth_tq *q)
{
    __atomic_store_n((uint64_t *)&q->next, q->root ? q->root->deadline : NTH_TQ_NONE,
                     __ATOMIC_RELEASE);
}

static void insert_locked(struct nth_tq *q, struct nth_alarm *a)
{
    a->child = a->sibling = a->prev = NULL;
    atomic_store_explicit(&a->q, q, memory_order_relaxed);
    atomic_store_explicit(&a->state, NTH_ALARM_ARMED, memory_order_release);
    q->root = meld(q->root, a);
    q->count++;
    if (a->real)
        __atomic_store_n(&q->nslices, q->nslices + 1, __ATOMIC_RELAXED);
}

static void remove_locked(struct nth_tq *q, struct nth_alarm *a)
{
    if (a == q->root) {
        q->root = merge_pairs(a->child);
    } else {
        /* Unlink a's subtree from its parent or left sibling. */
        if (a->prev->child == a)
            a->prev->child = a->sibling;
        else
            a->prev->sibling = a->sibling;
        if (a->sibling)
            a->sibling->prev = a->prev;
        a->sibling = a->prev = NULL;
        q->root = meld(q->root, merge_pairs(a->child));
    }
    a->child = NULL;
    q->count--;
    if (a->real)
        __atomic_store_n(&q->nslices, q->nslices - 1, __ATOMIC_RELAXED);
}

void nth_tq_arm(struct nth_tq *q, struct nth_alarm *a)
{
    nth_olock((uint32_t *)&q->lock);
    insert_locked(q, a);
    publish_next(q);
    nth_ounlock((uint32_t *)&q->lock);
}

int nth_tq_cancel(struct nth_alarm *a)
{
    unsigned spins = 0;
    for (;;) {
        int s = atomic_load_explicit(&a->state, memory_order_acquire);
        if (s == NTH_ALARM_IDLE || s == NTH_ALARM_DONE)
            return 0;
        if (s == NTH_ALARM_FIRING) {
            /* The callback is short and never blocks, but its kernel
             * thread may be preempted. */
            if (++spins % 256)
                nth_sync_relax();
            else
                syscall(SYS_sched_yield);   /* libc's, never a shim's */
            continue;
        }
        struct nth_tq *q = atomic_load_explicit(&a->q, memory_order_acquire);
        nth_olock((uint32_t *)&q->lock);
        /* It may have fired or moved to another VP's queue meanwhile. */
        if (atomic_load_explicit(&a->state, memory_order_relaxed) == NTH_ALARM_ARMED &&
            atomic_load_explicit(&a->q, memory_order_relaxed) == q) {
            remove_locked(q, a);
            publish_next(q);
            atomic_store_explicit(&a->state, NTH_ALARM_DONE, memory_order_release);
            nth_ounlock((uint32_t *)&q->lock);
            return 1;
        }
        nth_ounlock((uint32_t *)&q->lock);
    }
}

uint64_t nth_tq_fire(struct nth_tq *q, uint64_t now)
{
    /* Unlocked peek: the common case at a scheduling point is "nothing". */
    if (nth_tq_next_deadline(q) > now)
        return nth_tq_next_deadline(q);
    nth_olock((uint32_t *)&q->lock);
    while (q->root && q->root->deadline <= now) {
        struct nth_alarm *a = q->root;
        remove_locked(q, a);
        atomic_store_explicit(&a->state, NTH_ALARM_FIRING, memory_order_relaxed);
        publish_next(q);
        nth_ounlock((uint32_t *)&q->lock);
        int again = a->fn(a, now);
        nth_olock((uint32_t *)&q->lock);
        if (again)
            insert_locked(q, a);    /* a later deadline: not this round */
        else
            atomic_store_explicit(&a->state, NTH_ALARM_DONE, memory_order_release);
    }
    publish_next(q);
    uint64_t next = q->root ? q->root->deadline : NTH_TQ_NONE;
    nth_ounlock((uint32_t *)&q->lock);
    return next;
}

uint64_t nth_tq_next_real(struct nth_tq *q)
{
    if (!__atomic_load_n(&q->nslices, __ATOMIC_RELAXED))
        return nth_tq_next_deadline(q);
    uint64_t best = NTH_TQ_NONE;
    nth_olock((uint32_t *)&q->lock);
    struct nth_alarm *root = q->root, *a = root;
    /* Depth first through the child/sibling links, back up through prev
     * (a first child's is its parent, another's its left sibling). A
     * node's subtree has deadlines >= its own, and real >= deadline. */
    while (a) {
        if (a->deadline < best) {
            uint64_t r = a->real > a->deadline ? a->real : a->deadline;
            if (r < best)
                best = r;
            if (a->child) {
                a = a->child;
                continue;
            }
        }
        while (a != root && !a->sibling) {
            while (a->prev->child != a)
                a = a->prev;
            a = a->prev;
        }
        a = a == root ? NULL : a->sibling;
    }
    nth_ounlock((uint32_t *)&q->lock);
    return best;
}

void nth_tq_move(struct nth_tq *from, struct nth_tq *to)
{
    if (from == to)
        return;
    /* Lock in address order so two VPs moving towards each other cannot
     * deadlock. */
    struct nth_tq *l1 = from < to ? from : to, *l2 = from < to ? to : from;
    nth_olock((uint32_t *)&l1->lock);
    nth_olock((uint32_t *)&l2->lock);
    while (from->root) {
        struct nth_alarm *a = from->root;
        remove_locked(from, a);
        insert_locked(to, a);
    }
    publish_next(from);
    publish_next(to);
    nth_ounlock((uint32_t *)&l2->lock);
    nth_ounlock((uint32_t *)&l1->lock);
}
