/*
 * slice_wake.c -- how late a timer wake-up is on a CPU that a thread of the
 * same process keeps busy, with the default EEVDF slice and with the short
 * one the cpumgr watcher and daemon ask for (nthlib/sched_slice.h).
 *
 * A spinner and a sleeper are both bound to CPU 0; the sleeper sleeps to an
 * absolute CLOCK_MONOTONIC deadline (FUTEX_WAIT_BITSET, timer slack 1 ns,
 * as the watcher does) 1.0-1.5 ms ahead, --samples times, and reports how
 * late it ran (p50/p90/p99/max, us). The same binary measures both settings
 * in one run, alternating, so they see the same load.
 *
 * usage: slice-wake [--samples N]   (default 200 per setting)
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sched_slice.h"

static volatile int stop;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void pin0(void)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(0, &s);
    sched_setaffinity(0, sizeof s, &s);
}

static void *spin(void *a)
{
    pin0();
    while (!stop)
        ;
    return a;
}

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t late_once(void)
{
    static int word;
    int64_t due = now_ns() + 1000000 + (rand() % 500) * 1000;
    struct timespec ts = {(time_t)(due / 1000000000), (long)(due % 1000000000)};
    syscall(SYS_futex, &word, FUTEX_WAIT_BITSET_PRIVATE, 0, &ts, NULL, FUTEX_BITSET_MATCH_ANY);
    return now_ns() - due;
}

int main(int argc, char **argv)
{
    int n = 200;
    if (argc == 3 && !strcmp(argv[1], "--samples"))
        n = atoi(argv[2]);
    if (n < 10) {
        fprintf(stderr, "usage: slice-wake [--samples N>=10]\n");
        return 2;
    }
    uint64_t dflt = nth_sched_slice_of(0);
    int64_t *l[2] = {calloc((size_t)n, sizeof(int64_t)), calloc((size_t)n, sizeof(int64_t))};
    if (!l[0] || !l[1])
        return 1;
    pthread_t t;
    pin0();
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (pthread_create(&t, NULL, spin, NULL) != 0)
        return 1;
    int have_short = 1;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            uint64_t want = k ? NTH_SHORT_SLICE_NS : dflt;
            if (nth_sched_short_slice(want) != 0 || nth_sched_slice_of(0) != want)
                have_short = 0;
            l[k][i] = late_once();
        }
    stop = 1;
    pthread_join(t, NULL);
    printf("timer wake-up lateness on a busy CPU (us), %d samples each\n", n);
    printf("%-22s %8s %8s %8s %8s\n", "slice", "p50", "p90", "p99", "max");
    for (int k = 0; k < 2; k++) {
        qsort(l[k], (size_t)n, sizeof(int64_t), cmp);
        printf("%-15llu ns %s %8.1f %8.1f %8.1f %8.1f\n",
               (unsigned long long)(k ? NTH_SHORT_SLICE_NS : dflt), k ? "   " : "dfl",
               l[k][n / 2] / 1e3, l[k][n * 9 / 10] / 1e3, l[k][n * 99 / 100] / 1e3,
               l[k][n - 1] / 1e3);
    }
    if (!have_short)
        printf("note: this kernel did not keep the slice (before Linux 6.12?): both rows are the default\n");
    free(l[0]);
    free(l[1]);
    return 0;
}
