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
 * inside a region), the best of 5 batches of R repetitions each.
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
    team_stop();
    if (json) {
        printf("{\"bench\":\"region_parallel\",\"impl\":\"%s\",\"value\":%.1f,\"unit\":\"ns\","
               "\"params\":{\"threads\":%d}}\n", team_impl(), par, n);
        printf("{\"bench\":\"region_barrier\",\"impl\":\"%s\",\"value\":%.1f,\"unit\":\"ns\","
               "\"params\":{\"threads\":%d}}\n", team_impl(), bar, n);
    } else {
        printf("%-10s threads=%d  parallel %9.1f ns  barrier %9.1f ns\n", team_impl(), n, par, bar);
    }
    return 0;
}
