/*
 * malleable_probe.c -- helper of tests/parallel_malleable.sh: a malleable
 * application that asks for `want` CPUs and runs regions with n = 0 for
 * `ms` milliseconds, checking each team (every id once, n members), and
 * prints what it saw: "attached A sizes S1,S2,... bad B".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nth.h"

struct seen {
    int ids[64];
    int n;
};

static void body(int id, int n, void *p)
{
    struct seen *s = p;
    if (id == 0)
        s->n = n;
    if (id >= 0 && id < 64)
        __atomic_add_fetch(&s->ids[id], 1, __ATOMIC_RELAXED);
    nth_team_barrier();
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s WANT_CPUS MILLISECONDS\n", argv[0]);
        return 2;
    }
    int want = atoi(argv[1]);
    double ms = atof(argv[2]);
    int err = nth_cpus_request(want);
    if (err) {
        fprintf(stderr, "nth_cpus_request: %s\n", strerror(err));
        return 1;
    }
    int sizes[65] = { 0 }, bad = 0, attached = 0;
    double end = now_ms() + ms;
    while (now_ms() < end) {
        struct seen s;
        memset(&s, 0, sizeof(s));
        if (nth_parallel(0, body, &s) != 0 || s.n < 1 || s.n > 64) {
            bad++;
            continue;
        }
        for (int i = 0; i < 64; i++)
            if (s.ids[i] != (i < s.n))
                bad++;
        sizes[s.n] = 1;
        attached |= nth_cpumgr_attached();
        struct timespec d = { 0, 2000000 }; /* 2 ms between regions */
        nanosleep(&d, NULL);
    }
    printf("attached %d sizes", attached);
    const char *sep = " ";
    for (int i = 1; i <= 64; i++)
        if (sizes[i]) {
            printf("%s%d", sep, i);
            sep = ",";
        }
    printf(" bad %d\n", bad);
    return bad ? 1 : 0;
}
