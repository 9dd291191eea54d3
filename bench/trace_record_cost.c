/*
 * trace_record_cost.c -- the record path alone: N pairs of
 * nth_trace_function_enter/_exit (two records, two clock reads) on one
 * kernel thread traced standalone (no runtime, no scheduling), so that an
 * instruction count (valgrind --tool=callgrind) or a time per pair measures
 * only what recording costs. Linked with the shared libnth, as a program
 * using libnth-probes is.
 *
 *   NTH_TRACE=/tmp/x.bin bench/trace-record-cost [--json] [PAIRS]
 *
 * Prints the median over 5 batches of PAIRS pairs (default 1000000), ns per
 * pair, and the clock read alone (clock_gettime CLOCK_MONOTONIC, the clock
 * of every record) for scale.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "nth/trace.h"

#define BATCHES 5

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int dcmp(const void *x, const void *y)
{
    double p = *(const double *)x, q = *(const double *)y;
    return p < q ? -1 : p > q;
}

int main(int argc, char **argv)
{
    int json = 0;
    long n = 1000000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if ((n = atol(argv[i])) <= 0) { fprintf(stderr, "usage: %s [--json] [PAIRS]\n", argv[0]); return 2; }
    }
    if (nth_trace_start_standalone() != 0 || !nth_trace_enabled()) {
        fprintf(stderr, "trace-record-cost: set NTH_TRACE=FILE.bin\n");
        return 1;
    }
    double pair[BATCHES], clk[BATCHES];
    volatile uint64_t sink = 0;
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
            nth_trace_function_enter((const void *)main, 0);
            nth_trace_function_exit((const void *)main, 0);
        }
        double t1 = now_ns();
        for (long i = 0; i < n; i++)
            sink += nth_trace_clock_ns();
        pair[b] = (t1 - t0) / n;
        clk[b] = (now_ns() - t1) / n;
    }
    qsort(pair, BATCHES, sizeof *pair, dcmp);
    qsort(clk, BATCHES, sizeof *clk, dcmp);
    if (json) {
        printf("{\"bench\":\"trace_record_pair\",\"impl\":\"nth\",\"value\":%.1f,\"unit\":\"ns/pair\",\"params\":{\"pairs\":%ld,\"batches\":%d}}\n",
               pair[BATCHES / 2], n, BATCHES);
        printf("{\"bench\":\"trace_clock_read\",\"impl\":\"clock_gettime\",\"value\":%.1f,\"unit\":\"ns\",\"params\":{\"reads\":%ld,\"batches\":%d}}\n",
               clk[BATCHES / 2], n, BATCHES);
    } else {
        printf("enter+exit pair (2 records): %.1f ns   clock read: %.1f ns   (medians of %d x %ld)\n",
               pair[BATCHES / 2], clk[BATCHES / 2], BATCHES, n);
    }
    return 0;
}
