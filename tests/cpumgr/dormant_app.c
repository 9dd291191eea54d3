/*
 * dormant_app.c -- the two kinds of application of the dormancy test
 * (dormant.sh, issue 5), through the public API only:
 *   dormant_app sleep MS COUNT   COUNT sleeps of MS ms, nothing computed;
 *                                prints "SLEPT wall_ms=W"
 *   dormant_app busy SECS WANT   back-to-back parallel regions for SECS s;
 *                                prints "BUSY entries=E full=F", F the
 *                                entries at which nth_cpus_assigned() was
 *                                WANT (every CPU it asked for)
 * Bad arguments: a usage line, status 2.
 */
#include <nth.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long sink; /* keeps the loop from being optimised away; atomic */

static void body(long b, long e, void *arg)
{
    (void)arg;
    unsigned long s = 0;
    for (long i = b; i < e; i++)
        s += (unsigned long)i ^ (s >> 3);
    __atomic_add_fetch(&sink, s, __ATOMIC_RELAXED);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "sleep")) {
        long ms = atol(argv[2]), count = atol(argv[3]);
        if (ms <= 0 || count <= 0)
            goto usage;
        if (nth_init(NULL) != 0)
            return 1;
        double t0 = now_s();
        for (long i = 0; i < count; i++)
            nth_sleep_ns((uint64_t)ms * 1000000u);
        printf("SLEPT wall_ms=%.0f\n", (now_s() - t0) * 1e3);
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "busy")) {
        double secs = atof(argv[2]);
        int want = atoi(argv[3]);
        if (secs <= 0 || want < 1)
            goto usage;
        if (nth_init(NULL) != 0 || nth_cpus_request(want) != 0)
            return 1;
        long entries = 0, full = 0;
        double t0 = now_s();
        do {
            full += nth_cpus_assigned() == want;
            entries++;
            nth_parallel_for(0, 2000000, NTH_SCHED_STATIC, 0, body, NULL);
        } while (now_s() - t0 < secs);
        printf("BUSY entries=%ld full=%ld\n", entries, full);
        return 0;
    }
usage:
    fprintf(stderr, "usage: dormant_app sleep MS COUNT | dormant_app busy SECS WANT\n");
    return 2;
}
