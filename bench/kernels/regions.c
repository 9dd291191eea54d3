/*
 * regions.c -- what a parallel region and a team barrier cost each backend
 * of the team layer (team.h), after EPCC's OpenMP syncbench (PARALLEL and
 * BARRIER overheads; Bull, "Measuring synchronisation and scheduling
 * overheads in OpenMP", EWOMP 1999): an empty region, and a region whose
 * workers pass K barriers, timed over many repetitions, minus nothing (the
 * bodies are empty, so the time is the overhead).
 *
 * LU 1000 opens 1000 regions and SOR 1500 about 200 with a barrier each, so
 * these two numbers, side by side for glibc, OpenMP and libnth (built from
 * this one source, like the kernels), are where a kernel's parallel overhead
 * goes. bench/regions.sh runs the builds in alternation and prints ratios.
 *
 *   regions-BUILD [--threads N] [--reps R] [--json]
 * Prints "parallel" (ns per empty region) and "barrier" (ns per barrier
 * inside a region), the best of 5 batches of R repetitions each; and, for
 * teams of 2 to 64, "start" and "join": the medians over R regions whose
 * members all start before the caller's body ends (as in LU) of the time
 * from the region's call to its last member's start, and from its last
 * member's end to the call's return (JSON region_start, region_join).
 */
#include "team.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BARRIERS_PER_REGION 100

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int sink;

static void empty(int id, int n, void *arg)
{
    (void)n;
    (void)arg;
    __atomic_store_n(&sink, id, __ATOMIC_RELAXED);  /* every member: no data race */
}

static void barriers(int id, int n, void *arg)
{
    (void)id;
    (void)n;
    (void)arg;
    for (int i = 0; i < BARRIERS_PER_REGION; i++)
        team_barrier();
}

/* The hand-off of a region, as LU's regions see it: every member has work
 * to do, so the caller does not finish first and run the others itself.
 * Member id stamps when it starts and ends; member 0 waits (at most
 * HANDOFF_WAIT_NS) until every member has started, as the caller of a
 * region with work is still busy when the others begin. */
#define HANDOFF_MAX 64
#define HANDOFF_WAIT_NS 1000000.0

static struct {
    double start[HANDOFF_MAX], end[HANDOFF_MAX];
    int nstarted;
} ho;

static void handoff(int id, int n, void *arg)
{
    (void)arg;
    double t = now_ns();
    if (id < HANDOFF_MAX)
        ho.start[id] = t;
    __atomic_add_fetch(&ho.nstarted, 1, __ATOMIC_ACQ_REL);
    if (id == 0)
        while (__atomic_load_n(&ho.nstarted, __ATOMIC_ACQUIRE) < n && now_ns() - t < HANDOFF_WAIT_NS)
            ;
    if (id < HANDOFF_MAX)
        ho.end[id] = now_ns();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Medians over reps regions of a team of n (n <= HANDOFF_MAX): *start, ns
 * from team_run()'s call to the last member's start; *join, ns from the
 * last member's end to team_run()'s return. */
static void handoff_medians(int n, long reps, double *start, double *join)
{
    double *st = malloc(sizeof(double) * (size_t)reps), *jo = malloc(sizeof(double) * (size_t)reps);
    if (!st || !jo) {
        fprintf(stderr, "regions: out of memory\n");
        exit(1);
    }
    for (long r = 0; r < reps; r++) {
        ho.nstarted = 0;
        double t0 = now_ns();
        if (team_run(n, handoff, NULL) != 0) {
            fprintf(stderr, "regions: team_run failed\n");
            exit(1);
        }
        double t1 = now_ns(), last_start = t0, last_end = t0;
        for (int i = 0; i < n; i++) {
            if (ho.start[i] > last_start)
                last_start = ho.start[i];
            if (ho.end[i] > last_end)
                last_end = ho.end[i];
        }
        st[r] = last_start - t0;
        jo[r] = t1 - last_end;
    }
    qsort(st, (size_t)reps, sizeof(double), cmp_double);
    qsort(jo, (size_t)reps, sizeof(double), cmp_double);
    *start = st[reps / 2];
    *join = jo[reps / 2];
    free(st);
    free(jo);
}

/* Best of 5 batches: ns per region (per barrier when per > 1). */
static double best_of(team_fn fn, int threads, long reps, int per)
{
    double best = 0;
    for (int b = 0; b < 5; b++) {
        double t0 = now_ns();
        for (long r = 0; r < reps; r++)
            if (team_run(threads, fn, NULL) != 0) {
                fprintf(stderr, "regions: team_run failed\n");
                exit(1);
            }
        double t = (now_ns() - t0) / (double)reps / per;
        if (b == 0 || t < best)
            best = t;
    }
    return best;
}

int main(int argc, char **argv)
{
    int threads = 0, json = 0;
    long reps = 2000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atol(argv[++i]);
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else {
            fprintf(stderr, "usage: %s [--threads N] [--reps R] [--json]\n", argv[0]);
            return 2;
        }
    }
    if (threads < 0 || reps < 1) {
        fprintf(stderr, "%s: --threads expects N >= 0 and --reps R >= 1\n", argv[0]);
        return 2;
    }
    int err = team_start(threads, 0);
    if (err) {
        fprintf(stderr, "%s: cannot start a team of %d: %s\n", argv[0], threads, strerror(err));
        return 2;
    }
    int n = team_size();
    (void)best_of(empty, n, reps / 10 + 1, 1);          /* warm up pools and caches */
    double par = best_of(empty, n, reps, 1);
    double bar = best_of(barriers, n, reps / 20 + 1, BARRIERS_PER_REGION);
    double start = 0, join = 0;
    if (n > 1 && n <= HANDOFF_MAX)
        handoff_medians(n, reps, &start, &join);
    team_stop();
    if (json) {
        printf("{\"bench\":\"region_parallel\",\"impl\":\"%s\",\"value\":%.1f,\"unit\":\"ns\","
               "\"params\":{\"threads\":%d}}\n", team_impl(), par, n);
        printf("{\"bench\":\"region_barrier\",\"impl\":\"%s\",\"value\":%.1f,\"unit\":\"ns\","
               "\"params\":{\"threads\":%d}}\n", team_impl(), bar, n);
        if (start > 0) {
            printf("{\"bench\":\"region_start\",\"impl\":\"%s\",\"value\":%.1f,\"unit\":\"ns\","
                   "\"params\":{\"threads\":%d}}\n", team_impl(), start, n);
            printf("{\"bench\":\"region_join\",\"impl\":\"%s\",\"value\":%.1f,\"unit\":\"ns\","
                   "\"params\":{\"threads\":%d}}\n", team_impl(), join, n);
        }
    } else {
        printf("%-10s threads=%d  parallel %9.1f ns  barrier %9.1f ns  start %9.1f ns  join %9.1f ns\n",
               team_impl(), n, par, bar, start, join);
    }
    return 0;
}
