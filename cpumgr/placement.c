/*
 * placement.c -- compact, stable CPU placement over the hwloc tree.
 * "Close" means a deep common ancestor: two PUs of one core beat two cores
 * of one L3, which beat two L3s of one package, and so on.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "placement.h"

/* PU objects by OS index, built once per call of cm_place_all/cm_share:
 * hwloc_get_pu_obj_by_os_index() walks the PU level, and the scoring below
 * asks for a PU per candidate per step (cubic on a big machine: 6 s for a
 * rebalance of 128 PUs, 86 s for 256, bench/RESULTS.md "audit5"). */
struct pus {
    hwloc_obj_t *by_os;
    unsigned n;            /* entries of by_os */
    hwloc_bitmap_t tmp;    /* scratch for score() */
};

static int pus_init(hwloc_topology_t topo, struct pus *t)
{
    t->by_os = NULL;
    t->n = 0;
    t->tmp = hwloc_bitmap_alloc();
    if (!t->tmp)
        return ENOMEM;
    hwloc_obj_t pu = NULL;
    while ((pu = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, pu)) != NULL)
        if (pu->os_index + 1 > t->n)
            t->n = pu->os_index + 1;
    t->by_os = calloc(t->n ? t->n : 1, sizeof *t->by_os);
    if (!t->by_os) {
        hwloc_bitmap_free(t->tmp);
        return ENOMEM;
    }
    while ((pu = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, pu)) != NULL)
        t->by_os[pu->os_index] = pu;
    return 0;
}

static void pus_free(struct pus *t)
{
    free(t->by_os);
    hwloc_bitmap_free(t->tmp);
}

static hwloc_obj_t pu_of(const struct pus *t, unsigned cpu)
{
    return cpu < t->n ? t->by_os[cpu] : NULL;
}

/* How close cpu is to the members of set (excluding itself): best, the
 * depth of the deepest common ancestor with any member (-1 if none or
 * unknown), and sum, those depths summed over all members (-1 for a member
 * outside the topology). "Close" is a deep common ancestor: two PUs of one
 * core beat two cores of one L3, and so on. Computed by walking up cpu's
 * ancestors and counting the members each one adds -- the members first
 * met at ancestor A have A as their common ancestor with cpu -- so a
 * score costs (depth x set words), not (members x depth). */
static void score(const struct pus *t, unsigned cpu, hwloc_const_bitmap_t set,
                  int *best, long *sum)
{
    int self = hwloc_bitmap_isset(set, cpu);
    int others = hwloc_bitmap_weight(set) - self;
    *best = -1;
    *sum = 0;
    if (others <= 0)
        return;
    hwloc_obj_t o = pu_of(t, cpu);
    if (!o) {
        *sum = -(long)others;
        return;
    }
    int seen = 0; /* members other than cpu inside the last ancestor */
    for (hwloc_obj_t a = o->parent; a; a = a->parent) {
        if (!a->cpuset)
            continue;
        hwloc_bitmap_and(t->tmp, a->cpuset, set);
        int in = hwloc_bitmap_weight(t->tmp) - (self && hwloc_bitmap_isset(a->cpuset, cpu));
        if (in > seen) {
            if (*best < 0)
                *best = a->depth;
            *sum += (long)a->depth * (in - seen);
            seen = in;
        }
    }
    *sum -= others - seen; /* members outside the topology: -1 each */
}

static int logical(const struct pus *t, unsigned cpu)
{
    hwloc_obj_t o = pu_of(t, cpu);
    return o ? (int)o->logical_index : INT_MAX;
}

/* Drop members of set until it has count CPUs: first those in avoid (CPUs
 * that apps without any CPU call home), highest logical index first, then
 * the least compact. avoid may be NULL. */
static void shrink(const struct pus *t, hwloc_bitmap_t set, int count, hwloc_const_bitmap_t avoid)
{
    while (avoid && hwloc_bitmap_weight(set) > count && hwloc_bitmap_intersects(set, avoid)) {
        int victim = -1, vl = 0;
        unsigned c;
        hwloc_bitmap_foreach_begin(c, set) {
            int l = logical(t, c);
            if (hwloc_bitmap_isset(avoid, c) && (victim < 0 || l > vl)) {
                victim = (int)c; vl = l;
            }
        } hwloc_bitmap_foreach_end();
        hwloc_bitmap_clr(set, (unsigned)victim);
    }
    while (hwloc_bitmap_weight(set) > count) {
        int victim = -1, vb = 0, vl = 0;
        long vs = 0;
        unsigned c;
        hwloc_bitmap_foreach_begin(c, set) {
            int b, l = logical(t, c);
            long s;
            score(t, c, set, &b, &s);
            if (victim < 0 || b < vb || (b == vb && (s < vs || (s == vs && l > vl)))) {
                victim = (int)c; vb = b; vs = s; vl = l;
            }
        } hwloc_bitmap_foreach_end();
        hwloc_bitmap_clr(set, (unsigned)victim);
    }
}

/* First CPU of cand in logical (topology) order inside cpuset within. */
static int first_logical(hwloc_topology_t topo, hwloc_const_bitmap_t cand,
                         hwloc_const_bitmap_t within)
{
    int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    for (int i = 0; i < n; i++) {
        hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)i);
        if (hwloc_bitmap_isset(cand, pu->os_index) &&
            (!within || hwloc_bitmap_isset(within, pu->os_index)))
            return (int)pu->os_index;
    }
    return hwloc_bitmap_first(cand);
}

/* Seed for an app with no CPU yet: the smallest object (deepest, then
 * fewest candidates) holding at least need candidates, so a 2-CPU app takes
 * one core and an 8-CPU app one L3 without splitting others' room. home
 * (OS index, or -1) is taken instead when it is a candidate and its own
 * ancestor at that depth holds need candidates too: the app is as compact
 * there, and its main VP need not move. */
static int seed(hwloc_topology_t topo, const struct pus *t, hwloc_const_bitmap_t cand, int need,
                int home, hwloc_bitmap_t tmp)
{
    hwloc_obj_t hpu = home >= 0 && hwloc_bitmap_isset(cand, (unsigned)home)
                          ? pu_of(t, (unsigned)home) : NULL;
    int pudepth = hwloc_get_type_depth(topo, HWLOC_OBJ_PU);
    for (int d = pudepth - 1; d >= 0; d--) {
        hwloc_obj_t best = NULL;
        int bw = INT_MAX;
        int nb = hwloc_get_nbobjs_by_depth(topo, (unsigned)d);
        for (int i = 0; i < nb; i++) {
            hwloc_obj_t o = hwloc_get_obj_by_depth(topo, (unsigned)d, (unsigned)i);
            if (!o->cpuset)
                continue;
            hwloc_bitmap_and(tmp, o->cpuset, cand);
            int w = hwloc_bitmap_weight(tmp);
            if (w >= need && w < bw) { best = o; bw = w; }
        }
        if (best) {
            hwloc_obj_t a = hpu ? hwloc_get_ancestor_obj_by_depth(topo, (unsigned)d, hpu) : NULL;
            if (a && a->cpuset) {
                hwloc_bitmap_and(tmp, a->cpuset, cand);
                if (hwloc_bitmap_weight(tmp) >= need)
                    return home;
            }
            return first_logical(topo, cand, best->cpuset);
        }
    }
    return hpu ? home : first_logical(topo, cand, NULL);
}

/* Add to app the candidate closest to its current CPUs. */
static int closest(const struct pus *t, hwloc_const_bitmap_t cand, hwloc_const_bitmap_t set)
{
    int pick = -1, pb = 0, pl = 0;
    long ps = 0;
    unsigned c;
    hwloc_bitmap_foreach_begin(c, cand) {
        int b, l = logical(t, c);
        long s;
        score(t, c, set, &b, &s);
        if (pick < 0 || b > pb || (b == pb && (s > ps || (s == ps && l < pl)))) {
            pick = (int)c; pb = b; ps = s; pl = l;
        }
    } hwloc_bitmap_foreach_end();
    return pick;
}

int cm_place_all(hwloc_topology_t topo, hwloc_const_bitmap_t owned,
                 struct cm_place *apps, int n)
{
    int rc = ENOMEM;
    struct pus t;
    if (pus_init(topo, &t) != 0)
        return ENOMEM;
    hwloc_bitmap_t freeset = hwloc_bitmap_dup(owned);
    hwloc_bitmap_t cand = hwloc_bitmap_alloc();
    hwloc_bitmap_t tmp = hwloc_bitmap_alloc();
    hwloc_bitmap_t homes = hwloc_bitmap_alloc();
    int *order = calloc((size_t)(n > 0 ? n : 1), sizeof *order);
    if (!freeset || !cand || !tmp || !homes || !order)
        goto out;
    /* Homes of the apps that hold no CPU and get some: an app that must
     * shrink gives these up first. */
    for (int i = 0; i < n; i++) {
        int h = apps[i].home1 - 1;
        if (h >= 0 && apps[i].count > 0 && (!apps[i].prev || hwloc_bitmap_iszero(apps[i].prev)) &&
            hwloc_bitmap_isset(apps[i].allowed, (unsigned)h) && hwloc_bitmap_isset(owned, (unsigned)h))
            hwloc_bitmap_set(homes, (unsigned)h);
    }
    /* Keep: stability first, every app keeps what it still may have. */
    for (int i = 0; i < n; i++) {
        hwloc_bitmap_zero(apps[i].shared);
        hwloc_bitmap_zero(apps[i].out);
        if (apps[i].prev)
            hwloc_bitmap_and(apps[i].out, apps[i].prev, apps[i].allowed);
        hwloc_bitmap_and(apps[i].out, apps[i].out, freeset);
        shrink(&t, apps[i].out, apps[i].count > 0 ? apps[i].count : 0, homes);
        hwloc_bitmap_andnot(freeset, freeset, apps[i].out);
    }
    /* Make room at home: an app that keeps a newcomer's home CPU moves to
     * a free CPU of its allowed set (not another newcomer's home) when
     * there is one. Its VP of the home CPU parks at its next scheduling
     * point and its VP of the free CPU takes over -- no thread moves if it
     * parks within the reclaim budget -- while the newcomer's VP 0 runs
     * its serial start-up there, with no scheduling point to park at. */
    for (int i = 0; i < n; i++) {
        int h = apps[i].home1 - 1;
        if (h < 0 || !hwloc_bitmap_isset(homes, (unsigned)h) || hwloc_bitmap_isset(freeset, (unsigned)h) ||
            !hwloc_bitmap_iszero(apps[i].out))
            continue;
        for (int j = 0; j < n; j++) {
            struct cm_place *b = &apps[j];
            if (j == i || !hwloc_bitmap_isset(b->out, (unsigned)h))
                continue;
            hwloc_bitmap_and(cand, freeset, b->allowed);
            hwloc_bitmap_andnot(cand, cand, homes);
            if (hwloc_bitmap_iszero(cand))
                break;
            hwloc_bitmap_clr(b->out, (unsigned)h);
            int alt = hwloc_bitmap_iszero(b->out) ? first_logical(topo, cand, NULL)
                                                  : closest(&t, cand, b->out);
            hwloc_bitmap_set(b->out, (unsigned)alt);
            hwloc_bitmap_clr(freeset, (unsigned)alt);
            hwloc_bitmap_set(freeset, (unsigned)h);
            break;
        }
    }
    /* Grow: largest deficit first, so big apps find whole caches free. */
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            struct cm_place *a = &apps[order[j]], *b = &apps[order[j - 1]];
            if (a->count - hwloc_bitmap_weight(a->out) > b->count - hwloc_bitmap_weight(b->out)) {
                int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
            } else break;
        }
    for (int k = 0; k < n; k++) {
        struct cm_place *a = &apps[order[k]];
        for (;;) {
            int have = hwloc_bitmap_weight(a->out);
            if (have >= a->count)
                break;
            hwloc_bitmap_and(cand, freeset, a->allowed);
            if (hwloc_bitmap_iszero(cand))
                break;
            int c = have == 0 ? seed(topo, &t, cand, a->count, a->home1 - 1, tmp)
                              : closest(&t, cand, a->out);
            if (c < 0)
                break;
            hwloc_bitmap_set(a->out, (unsigned)c);
            hwloc_bitmap_clr(freeset, (unsigned)c);
        }
    }
    /* Repair: an app still short whose allowed CPUs are all held by others
     * (keeping came first, and kept a CPU only it may use) takes one from
     * an app that can move to a free CPU of its own allowed set. */
    for (int k = 0; k < n; k++) {
        struct cm_place *a = &apps[order[k]];
        while (hwloc_bitmap_weight(a->out) < a->count) {
            int done = 0;
            for (int j = 0; j < n && !done; j++) {
                struct cm_place *b = &apps[j];
                if (b == a)
                    continue;
                hwloc_bitmap_and(cand, freeset, b->allowed);
                hwloc_bitmap_and(tmp, b->out, a->allowed);
                if (hwloc_bitmap_iszero(cand) || hwloc_bitmap_iszero(tmp))
                    continue;
                int c = hwloc_bitmap_first(tmp);
                hwloc_bitmap_clr(b->out, (unsigned)c);
                int alt = hwloc_bitmap_iszero(b->out) ? hwloc_bitmap_first(cand)
                                                      : closest(&t, cand, b->out);
                if (alt < 0)
                    alt = hwloc_bitmap_first(cand);
                hwloc_bitmap_set(b->out, (unsigned)alt);
                hwloc_bitmap_clr(freeset, (unsigned)alt);
                hwloc_bitmap_set(a->out, (unsigned)c);
                done = 1;
            }
            if (!done)
                break;
        }
    }
    rc = 0;
out:
    hwloc_bitmap_free(freeset);
    hwloc_bitmap_free(cand);
    hwloc_bitmap_free(tmp);
    hwloc_bitmap_free(homes);
    free(order);
    pus_free(&t);
    return rc;
}

int cm_share(hwloc_topology_t topo, struct cm_place *apps, int n)
{
    struct pus t;
    if (pus_init(topo, &t) != 0)
        return ENOMEM;
    hwloc_bitmap_t cand = hwloc_bitmap_alloc(), tmp = hwloc_bitmap_alloc(),
                   taken = hwloc_bitmap_alloc();
    int rc = ENOMEM;
    int *done = calloc((size_t)(n > 0 ? n : 1), sizeof *done);
    int *received = calloc((size_t)(n > 0 ? n : 1), sizeof *received);
    if (!cand || !tmp || !taken || !done || !received)
        goto out;
    for (;;) {
        /* Next unsatisfied app: highest priority, then lowest index. */
        int b = -1;
        for (int i = 0; i < n; i++)
            if (!done[i] && hwloc_bitmap_weight(apps[i].out) < apps[i].request &&
                (b < 0 || apps[i].priority > apps[b].priority))
                b = i;
        if (b < 0)
            break;
        done[b] = 1;
        struct cm_place *B = &apps[b];
        hwloc_bitmap_zero(cand);
        for (int i = 0; i < n; i++) {
            struct cm_place *A = &apps[i];
            if (i == b || A->priority > B->priority)
                continue;
            /* Only a donor satisfied by its own CPUs, each CPU shared once. */
            if (received[i] || hwloc_bitmap_weight(A->out) < A->request)
                continue;
            hwloc_bitmap_andnot(tmp, A->out, A->shared);
            hwloc_bitmap_or(cand, cand, tmp);
        }
        hwloc_bitmap_and(cand, cand, B->allowed);
        hwloc_bitmap_andnot(cand, cand, taken);
        while (hwloc_bitmap_weight(B->out) < B->request && !hwloc_bitmap_iszero(cand)) {
            int c = hwloc_bitmap_iszero(B->out)
                        ? seed(topo, &t, cand, B->request, B->home1 - 1, tmp)
                        : closest(&t, cand, B->out);
            if (c < 0)
                break;
            hwloc_bitmap_clr(cand, (unsigned)c);
            hwloc_bitmap_set(taken, (unsigned)c);
            hwloc_bitmap_set(B->out, (unsigned)c);
            hwloc_bitmap_set(B->shared, (unsigned)c);
            received[b] = 1;
            for (int i = 0; i < n; i++)
                if (i != b && hwloc_bitmap_isset(apps[i].out, (unsigned)c))
                    hwloc_bitmap_set(apps[i].shared, (unsigned)c);
        }
    }
    rc = 0;
out:
    hwloc_bitmap_free(cand);
    hwloc_bitmap_free(tmp);
    hwloc_bitmap_free(taken);
    free(done);
    free(received);
    pus_free(&t);
    return rc;
}

int cm_moved(hwloc_const_bitmap_t a, hwloc_const_bitmap_t b)
{
    hwloc_bitmap_t x = hwloc_bitmap_alloc();
    if (!x)
        return -1;
    hwloc_bitmap_xor(x, a, b);
    int w = hwloc_bitmap_weight(x);
    hwloc_bitmap_free(x);
    return w;
}
