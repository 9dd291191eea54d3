/*
 * placement.h -- which CPUs each application gets, given how many: compact
 * in the hwloc topology and stable across rebalances. Pure functions of the
 * topology and the bitmaps passed in (OS CPU indices, as hwloc cpusets).
 */
#ifndef CPUMGR_PLACEMENT_H
#define CPUMGR_PLACEMENT_H

#include <hwloc.h>

struct cm_place {
    hwloc_const_bitmap_t allowed; /* app's affinity mask within the owned CPUs */
    hwloc_const_bitmap_t prev;    /* its exclusive CPUs before this rebalance */
    int count;                    /* CPUs it should own exclusively now */
    int request;                  /* what it asked for (for --share) */
    int priority;                 /* for --share */
    hwloc_bitmap_t out;           /* result: its CPUs (exclusive + shared) */
    hwloc_bitmap_t shared;        /* result: those of out shared with another app */
    int home1;                    /* OS index + 1 of the CPU its main VP is bound
                                     to, 0 = unknown or none (the daemon gives
                                     it only to an app never given a CPU; last:
                                     positional initialisers leave it 0) */
};

/* Place every app: keep as many of its previous CPUs as it may still have
 * (dropping the least compact ones when it shrinks, and first of all a CPU
 * that an app without CPUs calls home; one that keeps such a home moves to
 * a free CPU when there is one), then grow each app, largest first,
 * seeded in the smallest topology object that fits its missing CPUs --
 * at its home CPU when that CPU is free and its objects fit as tightly --
 * and extended by closest common ancestor. No CPU goes to two apps and none
 * outside owned or an app's allowed set; an app may get fewer than count
 * when affinity masks overlap badly. Clears shared.
 * Why home: an app's main VP runs its serial start-up without a scheduling
 * point; given another CPU it is moved there by bounded reclaim and back
 * later, two CPU migrations per process start (bench/RESULTS.md "mig2").
 * Returns 0 or ENOMEM. Pure: no locking, callers own the bitmaps. */
int cm_place_all(hwloc_topology_t topo, hwloc_const_bitmap_t owned,
                 struct cm_place *apps, int n);

/* The --share rule, applied after cm_place_all(): an app B that got fewer
 * CPUs than it asked for may also use a CPU of an app A that got all it
 * asked for, when A's priority is not higher than B's and the CPU is in B's
 * allowed set; each CPU is shared by at most two apps. Higher-priority B
 * choose first. Marks the CPU in both apps' shared. Returns 0 or ENOMEM. */
int cm_share(hwloc_topology_t topo, struct cm_place *apps, int n);

/* Number of CPUs that differ between two assignments (moved CPUs). */
int cm_moved(hwloc_const_bitmap_t a, hwloc_const_bitmap_t b);

#endif
