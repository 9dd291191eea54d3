/*
 * steal.c -- work stealing, nearest victim first.
 *
 * Each VP walks the other VPs in order of topological distance from its
 * PU: the deeper the common hwloc ancestor, the nearer
 * (same core, then same cache, then same NUMA node, then the rest), ties
 * broken by VP index rotated from the thief so thieves spread over victims.
 * Stealing takes the oldest ready nano-thread of the victim with a trylock:
 * a busy victim is skipped, never waited for.
 */
#include "internal.h"
#include <stdlib.h>
#include <time.h>

/*
 * The order is computed per PU, not per VP: all the VPs on one PU see the
 * others at the same distances, and the rotation from the thief's index is
 * applied when walking (nth_steal) rather than stored. One array of nvps
 * indices per PU in use, and a start offset per distance per VP: memory
 * linear in VPs for a fixed machine, PUs x nvps ints (it was one
 * nvps-entry list per VP, 64 MB at 4096 VPs, and building it sorted
 * nvps^2 entries: 1.6 s of CPU at start). The order a thief walks is the same as before: distance,
 * then VP index rotated from the thief's.
 */

/* Distance class of two PUs: depth of their common ancestor + 1 (the PU's
 * own depth + 1 when equal), 0 when either is unknown. */
static int pu_depth(hwloc_topology_t topo, hwloc_obj_t a, hwloc_obj_t b)
{
    if (!a || !b)
        return 0;
    hwloc_obj_t c = a == b ? a : hwloc_get_common_ancestor_obj(topo, a, b);
    return c ? c->depth + 1 : 0;
}

/* The group of the VPs on PU p: every VP j by pu_depth(p, pus[j]),
 * deepest first, by index within one depth (counting sort: stable). */
static struct nth_steal_group *group_new(hwloc_topology_t topo, hwloc_obj_t p, int n, const int *gof,
                                         const hwloc_obj_t *gpu, int ng, int maxd)
{
    int *dg = calloc((size_t)ng, sizeof(*dg));           /* depth to each group's PU */
    int *cnt = calloc((size_t)maxd + 1, sizeof(*cnt));   /* VPs at each depth */
    int *at = calloc((size_t)maxd + 1, sizeof(*at));     /* next slot of each depth */
    struct nth_steal_group *g = malloc(sizeof(*g) + (size_t)(maxd + 2) * sizeof(int));
    int *order = malloc((size_t)n * sizeof(int));
    if (!dg || !cnt || !at || !g || !order) {
        free(g);
        free(order);
        g = NULL;
        goto out;
    }
    for (int h = 0; h < ng; h++) {
        dg[h] = pu_depth(topo, p, gpu[h]);
        if (dg[h] > maxd)
            dg[h] = maxd;
    }
    for (int j = 0; j < n; j++)
        cnt[dg[gof[j]]]++;
    /* Segments from the deepest depth down, empty ones left out. */
    int nlev = 0, pos = 0;
    for (int d = maxd; d >= 0; d--) {
        if (!cnt[d])
            continue;
        g->lev[nlev++] = pos;
        at[d] = pos;
        pos += cnt[d];
    }
    g->lev[nlev] = pos;
    g->nlev = nlev;
    for (int j = 0; j < n; j++)
        order[at[dg[gof[j]]]++] = j;
    g->order = order;
out:
    free(at);
    free(dg);
    free(cnt);
    return g;
}

/* pus[i]: the PU object of VP i (NULL when unknown), objects of topo.
 * Called once, at start (vp.c). Returns 0 or ENOMEM. */
int nth_steal_order(struct nth_vp **vps, int n, hwloc_topology_t topo, hwloc_obj_t *pus)
{
    int npu = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    if (npu < 0)
        npu = 0;
    int maxd = hwloc_topology_get_depth(topo);
    if (maxd < 1)
        maxd = 1;
    /* Groups: one per PU in use (by logical index), one for unknown PUs. */
    int *gidx = malloc(((size_t)npu + 1) * sizeof(int));
    int *gof = malloc((size_t)n * sizeof(int));
    hwloc_obj_t *gpu = malloc(((size_t)npu + 1) * sizeof(*gpu));
    struct nth_steal_group **gs = calloc((size_t)npu + 1, sizeof(*gs));
    int r = ENOMEM, ng = 0;
    if (!gidx || !gof || !gpu || !gs)
        goto out;
    for (int k = 0; k <= npu; k++)
        gidx[k] = -1;
    for (int j = 0; j < n; j++) {
        int k = pus[j] && pus[j]->logical_index < (unsigned)npu ? (int)pus[j]->logical_index : npu;
        if (gidx[k] < 0) {
            gidx[k] = ng;
            gpu[ng++] = k < npu ? pus[j] : NULL;
        }
        gof[j] = gidx[k];
    }
    for (int h = 0; h < ng; h++)
        if (!(gs[h] = group_new(topo, gpu[h], n, gof, gpu, ng, maxd)))
            goto out;
    for (int i = 0; i < n; i++) {
        const struct nth_steal_group *g = gs[gof[i]];
        int *st = malloc((size_t)g->nlev * sizeof(int));
        if (!st)
            goto out;
        /* Where the rotation from i starts in each segment: its first VP
         * above i (binary search; the segment end when there is none, which
         * the walk treats as its start). */
        for (int l = 0; l < g->nlev; l++) {
            int lo = g->lev[l], hi = g->lev[l + 1];
            while (lo < hi) {
                int mid = lo + (hi - lo) / 2;
                if (g->order[mid] <= i)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            st[l] = lo < g->lev[l + 1] ? lo : g->lev[l];
        }
        free(vps[i]->steal_start);
        vps[i]->steal_start = st;
        vps[i]->steal_grp = g;
        vps[i]->nsteal = n - 1;
    }
    r = 0;
out:
    if (r) {
        for (int i = 0; i < n; i++) {
            free(vps[i]->steal_start);
            vps[i]->steal_start = NULL;
            vps[i]->steal_grp = NULL;
            vps[i]->nsteal = 0;
        }
        for (int h = 0; h < ng; h++)
            if (gs[h]) {
                free(gs[h]->order);
                free(gs[h]);
            }
    }
    free(gidx);
    free(gof);
    free(gpu);
    free(gs);
    return r;
}

/* Walk vp's victims, nearest first: each segment from steal_start[l] to
 * its end, then from its beginning, skipping vp itself. BODY sees the
 * victim's index as `victim_id`. */
#define NTH_STEAL_WALK(vp, BODY)                                                     \
    do {                                                                           \
        const struct nth_steal_group *g_ = (vp)->steal_grp;                          \
        for (int l_ = 0; l_ < g_->nlev; l_++) {                                      \
            int a_ = g_->lev[l_], b_ = g_->lev[l_ + 1], s_ = (vp)->steal_start[l_]; \
            for (int k_ = s_; k_ < b_ + (s_ - a_); k_++) {                           \
                int victim_id = g_->order[k_ < b_ ? k_ : k_ - (b_ - a_)];            \
                if (victim_id == (vp)->id)                                         \
                    continue;                                                      \
                BODY                                                               \
            }                                                                      \
        }                                                                          \
    } while (0)

int nth_steal_victims(const struct nth_vp *vp, int *out)
{
    int k = 0;
    if (!vp->nsteal)
        return 0;
    NTH_STEAL_WALK(vp, { out[k++] = victim_id; });
    return k;
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

static struct nth_thread *steal_next_local(struct nth_vp *victim, int64_t now)
{
    struct nth_peek *pk = &victim->seen;
    struct nth_thread *t = __atomic_load_n(&victim->next_local, __ATOMIC_ACQUIRE);
    if (!t) {
        /* Written only when it changes: every thief passes here. */
        if (__atomic_load_n(&pk->t, __ATOMIC_RELAXED))
            __atomic_store_n(&pk->t, NULL, __ATOMIC_RELAXED);
        return NULL;
    }
    if (__atomic_load_n(&victim->current, __ATOMIC_RELAXED) != &victim->idle &&
        !__atomic_load_n(&victim->blocking, __ATOMIC_RELAXED)) {
        uint64_t sw = __atomic_load_n(&victim->nswitch, __ATOMIC_RELAXED);
        if (__atomic_load_n(&pk->t, __ATOMIC_RELAXED) != t ||
            __atomic_load_n(&pk->nswitch, __ATOMIC_RELAXED) != sw) {
            /* First sight: the grace starts. Two thieves may write this
             * record at once and leave a mixed one; the worst is a grace
             * cut short or started again, never a nano-thread run twice
             * (the exchange below decides who takes it). */
            __atomic_store_n(&pk->since, now, __ATOMIC_RELAXED);
            __atomic_store_n(&pk->nswitch, sw, __ATOMIC_RELAXED);
            __atomic_store_n(&pk->t, t, __ATOMIC_RELAXED);
            return NULL;
        }
        if (now - __atomic_load_n(&pk->since, __ATOMIC_RELAXED) < NTH_NEXT_LOCAL_GRACE_NS)
            return NULL;
    }
    if (__atomic_load_n(&pk->t, __ATOMIC_RELAXED))
        __atomic_store_n(&pk->t, NULL, __ATOMIC_RELAXED);
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
     * (the clock is read at every call: the grace needs it). */
    int64_t now = now_ns();
    int peek = now >= vp->peek_next;
    if (peek)
        vp->peek_next = now + NTH_NEXT_LOCAL_PEEK_NS;
    NTH_STEAL_WALK(vp, {
        struct nth_vp *victim = nth_rt.vps[victim_id];
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
            t = steal_next_local(victim, now);
        if (t)
            return t;
    });
    return NULL;
}
