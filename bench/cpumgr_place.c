/*
 * cpumgr_place.c -- the cost of one placement (cpumgr/placement.h) on
 * hwloc synthetic topologies of 64 to 512 PUs: the daemon runs it at every
 * rebalance (and once per application holding CPUs to arm hand-offs), so it
 * is on the path of every reallocation.
 *
 *  shrink: application 0 held every PU and now gets 1, application 1 gets
 *    the rest (the most CPUs dropped and added in one rebalance).
 *  fresh: two applications with no previous CPUs, half the PUs each.
 *
 * usage: cpumgr-place [--json] [--reps N] [TOPOLOGY...]
 * Default topologies: "pack:2 core:16 pu:2" (64), "pack:2 l3:2 core:16
 * pu:2" (128), "pack:4 l3:2 core:16 pu:2" (256). Prints the median of N
 * runs (default 5) per case, in ms: a table, or with --json one object per
 * line (DESIGN.md "Benchmark output").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hwloc.h>

#include "placement.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median time (ms) of reps placements of case c ("shrink" or "fresh"). */
static double run(hwloc_topology_t topo, hwloc_const_bitmap_t owned, const char *c, int reps)
{
    int n = hwloc_bitmap_weight(owned);
    double *t = calloc((size_t)reps, sizeof *t);
    hwloc_bitmap_t prev[2] = {hwloc_bitmap_alloc(), hwloc_bitmap_alloc()};
    struct cm_place a[2];
    if (!t || !prev[0] || !prev[1])
        exit(1);
    for (int i = 0; i < 2; i++)
        a[i] = (struct cm_place){owned, prev[i], 0, 0, 1, hwloc_bitmap_alloc(),
                                 hwloc_bitmap_alloc(), 0};
    for (int r = 0; r < reps; r++) {
        hwloc_bitmap_zero(prev[0]);
        hwloc_bitmap_zero(prev[1]);
        if (!strcmp(c, "shrink")) {
            hwloc_bitmap_copy(prev[0], owned);
            a[0].count = a[0].request = 1;
            a[1].count = a[1].request = n - 1;
        } else {
            a[0].count = a[0].request = n / 2;
            a[1].count = a[1].request = n - n / 2;
        }
        double t0 = now_ms();
        if (cm_place_all(topo, owned, a, 2) != 0)
            exit(1);
        t[r] = now_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    double med = t[reps / 2];
    for (int i = 0; i < 2; i++) {
        hwloc_bitmap_free(a[i].out);
        hwloc_bitmap_free(a[i].shared);
        hwloc_bitmap_free(prev[i]);
    }
    free(t);
    return med;
}

int main(int argc, char **argv)
{
    int json = 0, reps = 5, ntopo = 0;
    const char *topos[16];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc && atoi(argv[i + 1]) > 0)
            reps = atoi(argv[++i]);
        else if (argv[i][0] != '-' && ntopo < 16)
            topos[ntopo++] = argv[i];
        else {
            fprintf(stderr, "usage: %s [--json] [--reps N] [TOPOLOGY...]\n", argv[0]);
            return 2;
        }
    }
    if (!ntopo) {
        topos[ntopo++] = "pack:2 core:16 pu:2";
        topos[ntopo++] = "pack:2 l3:2 core:16 pu:2";
        topos[ntopo++] = "pack:4 l3:2 core:16 pu:2";
    }
    if (!json)
        printf("%-28s %5s %-7s %12s\n", "topology", "PUs", "case", "median ms");
    for (int k = 0; k < ntopo; k++) {
        hwloc_topology_t topo;
        if (hwloc_topology_init(&topo) != 0 || hwloc_topology_set_synthetic(topo, topos[k]) != 0 ||
            hwloc_topology_load(topo) != 0) {
            fprintf(stderr, "cpumgr-place: bad synthetic topology '%s'\n", topos[k]);
            return 2;
        }
        hwloc_const_bitmap_t owned = hwloc_topology_get_topology_cpuset(topo);
        const char *cases[] = {"shrink", "fresh"};
        for (int c = 0; c < 2; c++) {
            double ms = run(topo, owned, cases[c], reps);
            if (json)
                printf("{\"bench\":\"cpumgr_place\",\"impl\":\"cpumgr\",\"value\":%.3f,"
                       "\"unit\":\"ms\",\"params\":{\"topology\":\"%s\",\"pus\":%d,"
                       "\"case\":\"%s\",\"reps\":%d}}\n", ms, topos[k],
                       hwloc_bitmap_weight(owned), cases[c], reps);
            else
                printf("%-28s %5d %-7s %12.3f\n", topos[k], hwloc_bitmap_weight(owned),
                       cases[c], ms);
        }
        hwloc_topology_destroy(topo);
    }
    return 0;
}
