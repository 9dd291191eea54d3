/*
 * steal.c -- work stealing, nearest victim first.
 *
 * Each VP keeps a precomputed list of the other VPs sorted by topological
 * distance from its PU: the deeper the common hwloc ancestor, the nearer
 * (same core, then same cache, then same NUMA node, then the rest), ties
 * broken by VP index rotated from the thief so thieves spread over victims.
 * Stealing takes the oldest ready nano-thread of the victim with a trylock:
 * a busy victim is skipped, never waited for.
 */
#include "internal.h"
#include <stdlib.h>
#include <time.h>

struct victim {
    int vp;
    int depth;
    int rot;
};

static int victim_cmp(const void *a, const void *b)
{
    const struct victim *x = a, *y = b;
    if (x->depth != y->depth)
        return y->depth - x->depth;
    return x->rot - y->rot;
}

/* pus[i]: the PU object of VP i (NULL when unknown). Returns 0 or ENOMEM. */
NTH_HIDDEN int nth_steal_order(struct nth_vp **vps, int n, hwloc_topology_t topo, hwloc_obj_t *pus);

int nth_steal_order(struct nth_vp **vps, int n, hwloc_topology_t topo, hwloc_obj_t *pus)
{
    struct victim *v = calloc(n > 1 ? (size_t)n : 1, sizeof(*v));
    if (!v)
        return ENOMEM;
    for (int i = 0; i < n; i++) {
        int k = 0;
        for (int j = 0; j < n; j++) {
            if (j == i)
                continue;
            int depth = 0;
            if (pus[i] && pus[j]) {
                hwloc_obj_t a = pus[i] == pus[j] ? pus[i]
                                : hwloc_get_common_ancestor_obj(topo, pus[i], pus[j]);
                depth = a ? a->depth + 1 : 0;
            }
            v[k].vp = j;
            v[k].depth = depth;
            v[k].rot = (j - i + n) % n;
            k++;
        }
        qsort(v, (size_t)k, sizeof(*v), victim_cmp);
        free(vps[i]->steal_order);
        vps[i]->steal_order = malloc((size_t)(k > 0 ? k : 1) * sizeof(int));
        if (!vps[i]->steal_order) {
            free(v);
            return ENOMEM;
        }
        for (int j = 0; j < k; j++)
            vps[i]->steal_order[j] = v[j].vp;
        vps[i]->nsteal = k;
        free(vps[i]->peek);
        vps[i]->peek = calloc((size_t)n, sizeof(struct nth_peek));
        if (!vps[i]->peek) {
            free(v);
            return ENOMEM;
        }
    }
    free(v);
    (void)topo;
    return 0;
}

/* A thief leaves a running victim's next_local alone for
 * NTH_NEXT_LOCAL_GRACE_NS: about the time the victim needs to block or
 * yield and run it itself. Go's runqgrab sleeps 3 µs for the same reason:
 * a nano-thread just woken into that slot (make_ready in nano_thread.c)
 * belongs next to its waker, and taking it at once turns every
 * producer/consumer hand-off into a cross-CPU one (the 2-VP condvar
 * ping-pong went from 0.3 to 3 µs). Longer than Go's: a waker that makes
 * a futex system call (to unpark an idle VP) takes several µs on a
 * virtual machine, and a 3 µs grace then split most ping-pong pairs again.
 *
 * The thief does not wait the grace out spinning on the victim's slot:
 * the victim writes that cache line at each switch (current, next_local,
 * nswitch), and an idle VP reading it in a loop made every one of those
 * writes a miss (the 2-VP ping-pong, whose pair shares one VP through
 * this slot, at 5-7 times the 1-VP round trip). It notes what it saw, the
 * occupant and the victim's switch count, looks again at most every
 * NTH_NEXT_LOCAL_PEEK_NS, and takes the occupant once the same one has sat
 * there for the grace with the victim not switching (stuck in a system
 * call, or computing for long). An idle VP does not park while such a
 * slot is occupied (any_work in idle.c), so it is there to take it. */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct nth_thread *steal_next_local(struct nth_vp *vp, struct nth_vp *victim, int64_t now)
{
    struct nth_peek *pk = vp->peek ? &vp->peek[victim->id] : NULL;
    struct nth_thread *t = __atomic_load_n(&victim->next_local, __ATOMIC_ACQUIRE);
    if (!t) {
        if (pk)
            pk->t = NULL;
        return NULL;
    }
    if (__atomic_load_n(&victim->current, __ATOMIC_RELAXED) != &victim->idle &&
        !__atomic_load_n(&victim->blocking, __ATOMIC_RELAXED)) {
        uint64_t sw = __atomic_load_n(&victim->nswitch, __ATOMIC_RELAXED);
        if (!pk)
            return NULL;
        if (pk->t != t || pk->nswitch != sw) {
            pk->t = t;                   /* first sight: the grace starts */
            pk->nswitch = sw;
            pk->since = now;
            return NULL;
        }
        if (now - pk->since < NTH_NEXT_LOCAL_GRACE_NS)
            return NULL;
    }
    if (pk)
        pk->t = NULL;
    if (__atomic_compare_exchange_n(&victim->next_local, &t, NULL, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED))
        return t;
    return NULL;
}

NTH_HIDDEN struct nth_thread *nth_steal(struct nth_vp *vp);

/* 1 while t moves to victim (nth_move_to_vp, or woken home by
 * nth__to_rq_home) and victim will take it: not disabled, and parked (it
 * was woken for t; the wake-up can take milliseconds on a loaded machine)
 * or within the grace time (move_until). */
static int moving_to(struct nth_thread *t, struct nth_vp *victim)
{
    if (__atomic_load_n(&t->move_to, __ATOMIC_RELAXED) != victim->id + 1 ||
        __atomic_load_n(&victim->disabled, __ATOMIC_RELAXED))
        return 0;
    if (__atomic_load_n(&victim->parked, __ATOMIC_ACQUIRE))
        return 1;
    return now_ns() < __atomic_load_n(&t->move_until, __ATOMIC_RELAXED);
}

struct nth_thread *nth_steal(struct nth_vp *vp)
{
    if (!vp->nsteal)
        return NULL; /* one VP: no victim, and no clock read */
    /* The victims' next_local slots, at most every NTH_NEXT_LOCAL_PEEK_NS
     * (without observations, which every VP has from nth_steal_order, a
     * thief would take only from idle or blocking victims). */
    int64_t now = 0;
    int peek = 1;
    if (vp->peek) {
        now = now_ns();
        peek = now >= vp->peek_next;
        if (peek)
            vp->peek_next = now + NTH_NEXT_LOCAL_PEEK_NS;
    }
    for (int i = 0; i < vp->nsteal; i++) {
        struct nth_vp *victim = nth_rt.vps[vp->steal_order[i]];
        struct nth_thread *t = NULL;
        if (!nth_rq_empty(&victim->rq))
            t = nth_rq_trypop(&victim->rq);
        if (t && moving_to(t, victim)) {
            /* Moving there on purpose (nth_move_to_vp, a home wake-up): taking it would
             * undo the move. Put back, with the enqueue's Dekker: the
             * victim may have looked at its empty queue while we held t,
             * and parked. */
            nth_rq_push(&victim->rq, t);
            nth_full_fence();
            if (__atomic_load_n(&victim->parked, __ATOMIC_ACQUIRE))
                nth_wake_one(victim);
            t = NULL;
        }
        /* Its queue's head too: with the victim's nano-thread in a long
         * computation or a system call, nothing else would run it. */
        if (!t && peek)
            t = steal_next_local(vp, victim, now);
        if (t)
            return t;
    }
    return NULL;
}
