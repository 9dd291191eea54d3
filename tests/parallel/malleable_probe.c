/*
 * malleable_probe.c -- helper of tests/parallel_malleable.sh: a malleable
 * application that asks for `want` CPUs and runs regions with n = 0 for
 * `ms` milliseconds, checking each team (every id once, n members), and
 * prints what it saw: "attached A sizes S1,S2,... bad B".
 *
 * The test drives two of these; on a loaded machine a fixed run time let
 * one end before the other had even started, so an optional third
 * argument makes the run wait for an event instead (each wait bounded, so
 * a daemon that never shares or never gives back still fails the test):
 *   share      after `ms`, go on until a team smaller than `want` ran
 *              while attached (at most 30 s more);
 *   file:PATH  after `ms`, go on until PATH exists (at most 120 s), then
 *              until a team of `want` members ran after it (30 s);
 *   until:PATH after `ms`, go on until PATH exists (at most 120 s).
 * The first attachment is said at once on stdout ("# attached"), so the
 * test can start the second application when the first holds CPUs; so is
 * the first team smaller than `want` run while attached ("# shared"), so
 * the test can keep the second running until both have had a share. (B
 * in `share` mode ended 300 ms after its own share: on a loaded machine A
 * ran no region in that window and the test failed, "A never ran a team
 * smaller than 2".)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s WANT_CPUS MILLISECONDS [share|file:PATH]\n", argv[0]);
        return 2;
    }
    int want = atoi(argv[1]);
    double ms = atof(argv[2]);
    const char *until = argc == 4 ? argv[3] : "";
    const char *stop = strncmp(until, "file:", 5) == 0 ? until + 5 : NULL;
    int stop_only = 0;           /* until:PATH: no full team wanted after it */
    if (strncmp(until, "until:", 6) == 0) {
        stop = until + 6;
        stop_only = 1;
    }
    if (*until && !stop && strcmp(until, "share") != 0) {
        fprintf(stderr, "malleable_probe: '%s': expected share, file:PATH or until:PATH\n", until);
        return 2;
    }
    int err = nth_cpus_request(want);
    if (err) {
        fprintf(stderr, "nth_cpus_request: %s\n", strerror(err));
        return 1;
    }
    int sizes[65] = { 0 }, bad = 0, attached = 0;
    int shared = 0;          /* a team smaller than want ran, attached */
    int stopped = 0, full_after = 0;
    double end = now_ms() + ms, stop_seen = 0;
    for (;;) {
        double now = now_ms();
        if (stop && !stopped && access(stop, F_OK) == 0) {
            stopped = 1;
            stop_seen = now;
        }
        if (now >= end) {
            if (!*until)
                break;
            if (!stop && (shared || now >= end + 30e3))
                break;
            if (stop && !stopped && now >= end + 120e3)
                break;
            if (stopped && (stop_only || full_after || now >= stop_seen + 30e3))
                break;
        }
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
        int a = nth_cpumgr_attached();
        if (a && !attached) {
            printf("# attached\n");
            fflush(stdout);
        }
        attached |= a;
        if (a && s.n < want && !shared) {
            printf("# shared\n");
            fflush(stdout);
        }
        shared |= a && s.n < want;
        full_after |= stopped && s.n == want;
        struct timespec d = { 0, 2000000 }; /* 2 ms between regions */
        nanosleep(&d, NULL);
    }
    if (stop && !stop_only)
        printf("# full team after the stop file: %d\n", full_after);
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
