/*
 * trace_regions_ab.c -- what tracing adds to one parallel region (the unit
 * of LU's overhead: LU 1000 opens 1000 regions of 2 members, ~65 us each on
 * a quiet machine), on and off alternated in one process, with an A/A arm.
 *
 * LU 1000 traced costs ~3 % (bench/trace_lu_ab.sh), i.e. ~2-3 us per region,
 * a difference that the machine's load hides in LU's 65-150 ms runs. An
 * empty region (nth_parallel(2, fn) with an empty fn: create a member on
 * the other VP, run it, join it) is ~1-2 us, so the same per-region cost is
 * a large fraction of it and shows through the noise of a shared machine.
 *
 * Blocks of three batches ("on", "off", "aa"), the order rotating and
 * reversing as in trace_lu_ab.c; each batch opens REGIONS regions. After
 * each batch, untimed, the records are written to the file
 * (nth_trace_drain_now), so no batch pays for another's. Block 0 is a
 * warm-up. Printed: per arm the median ns per region, and the median over
 * blocks of on/off - 1 and aa/off - 1 in %, with the same percentile
 * bootstrap as bench/trace_lu_ab.sh (95 %, 2000 resamples, fixed seed).
 *
 *   NTH_TRACE=/tmp/x.bin bench/trace-regions-ab [--blocks B] [--regions R] [--json]
 *
 * Needs NTH_TRACE (a .bin: records only); NTH_VPS defaults to the CPUs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <nth.h>
#include "trace_rt.h"

static int sink;

static void empty(int id, int n, void *arg)
{
    (void)n;
    (void)arg;
    __atomic_store_n(&sink, id, __ATOMIC_RELAXED);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int dcmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double median(double *v, int n)
{
    double *c = malloc(sizeof *c * (size_t)n);
    if (!c)
        exit(1);
    memcpy(c, v, sizeof *c * (size_t)n);
    qsort(c, (size_t)n, sizeof *c, dcmp);
    double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    free(c);
    return m;
}

/* 95 % percentile-bootstrap interval of the median (xorshift, fixed seed). */
static void boot(double *v, int n, double ci[2])
{
    enum { R = 2000 };
    static double meds[R];
    double *s = malloc(sizeof *s * (size_t)n);
    if (!s)
        exit(1);
    uint64_t x = 88172645463325252ull;
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s[i] = v[x % (uint64_t)n];
        }
        meds[r] = median(s, n);
    }
    free(s);
    qsort(meds, R, sizeof *meds, dcmp);
    ci[0] = meds[(int)(0.025 * R)];
    ci[1] = meds[(int)(0.975 * R) - 1];
}

int main(int argc, char **argv)
{
    int blocks = 31, json = 0;
    long regions = 2000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--blocks") && i + 1 < argc)
            blocks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--regions") && i + 1 < argc)
            regions = atol(argv[++i]);
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else {
            fprintf(stderr, "usage: trace-regions-ab [--blocks B] [--regions R] [--json]\n");
            return 2;
        }
    }
    if (blocks < 2 || regions < 1) {
        fprintf(stderr, "trace-regions-ab: --blocks must be at least 2 and --regions at least 1\n");
        return 2;
    }
    int rc = nth_init(NULL);
    if (rc && rc != EBUSY) {
        fprintf(stderr, "trace-regions-ab: nth_init: %s\n", strerror(rc));
        return 1;
    }
    if (!nth_trace_enabled()) {
        fprintf(stderr, "trace-regions-ab: start it with NTH_TRACE=FILE.bin (tracing is not on)\n");
        return 2;
    }
    double *t[3], *ron = malloc(sizeof(double) * (size_t)blocks), *raa = malloc(sizeof(double) * (size_t)blocks);
    for (int a = 0; a < 3; a++)
        t[a] = malloc(sizeof(double) * (size_t)blocks);
    if (!ron || !raa || !t[0] || !t[1] || !t[2])
        return 1;
    for (int b = 0; b < blocks; b++) {
        long blk = b ? b - 1 : 0;
        for (int k = 0; k < 3; k++) {
            int a = blk % 2 ? (int)((2 - k + blk / 2) % 3) : (int)((k + blk / 2) % 3);
            __atomic_store_n(&nth_trace_on, a == 0, __ATOMIC_RELEASE);
            double t0 = now_ns();
            for (long r = 0; r < regions; r++)
                if (nth_parallel(2, empty, NULL)) {
                    fprintf(stderr, "trace-regions-ab: nth_parallel failed\n");
                    return 1;
                }
            t[a][b] = (now_ns() - t0) / (double)regions;
            if (nth_trace_drain_now())
                fprintf(stderr, "trace-regions-ab: could not write the records (drain lock busy)\n");
        }
    }
    int n = blocks - 1;   /* block 0: warm-up */
    for (int b = 1; b < blocks; b++) {
        ron[b - 1] = (t[0][b] / t[1][b] - 1) * 100;
        raa[b - 1] = (t[2][b] / t[1][b] - 1) * 100;
    }
    double con[2], caa[2];
    boot(ron, n, con);
    boot(raa, n, caa);
    double m[3];
    for (int a = 0; a < 3; a++)
        m[a] = median(t[a] + 1, n);
    if (json) {
        printf("{\"bench\":\"trace_overhead_region\",\"impl\":\"nth\",\"value\":%.3f,\"unit\":\"%%\",\"ci95_median\":[%.3f,%.3f],"
               "\"ns_per_region\":{\"on\":%.1f,\"off\":%.1f,\"aa\":%.1f},\"params\":{\"blocks_used\":%d,\"regions\":%ld}}\n",
               median(ron, n), con[0], con[1], m[0], m[1], m[2], n, regions);
        printf("{\"bench\":\"trace_overhead_region\",\"impl\":\"control-aa\",\"value\":%.3f,\"unit\":\"%%\",\"ci95_median\":[%.3f,%.3f],"
               "\"params\":{\"blocks_used\":%d,\"regions\":%ld}}\n", median(raa, n), caa[0], caa[1], n, regions);
    } else {
        printf("ns per empty 2-member region, median of %d blocks of %ld: on %.1f, off %.1f, aa %.1f\n",
               n, regions, m[0], m[1], m[2]);
        printf("on/off - 1: %+.2f %% [%+.2f, %+.2f]   A/A: %+.2f %% [%+.2f, %+.2f]\n",
               median(ron, n), con[0], con[1], median(raa, n), caa[0], caa[1]);
    }
    for (int a = 0; a < 3; a++)
        free(t[a]);
    free(ron);
    free(raa);
    return 0;
}
