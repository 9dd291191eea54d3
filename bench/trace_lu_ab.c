/*
 * trace_lu_ab.c -- the arms of bench/lu-trace-ab: LU (bench/kernels/lu.c on
 * nthlib, as bench/lu-nth) whose runs, in one process, alternate between
 * tracing on and off, with an A/A arm (off again) in the same sequence.
 *
 * Runs come in blocks of three: "on" (records kept), "off" and "aa" (both
 * untraced), in an order that rotates with the block and reverses every
 * other block, so that a drift within the process favours no arm. The
 * process must be started with NTH_TRACE set (the runtime starts tracing,
 * and its writer threads, at start-up; a binary file is the cheapest
 * output); between runs only the record flag changes. So the "off" runs
 * still have the writers (asleep: nothing to drain) and differ from "on"
 * exactly by the records and their draining -- what the < 1 % target of
 * issue 7 is about. bench/trace_lu_ab.sh runs it and computes the ratios.
 */
#include <stdio.h>
#include <stdlib.h>
#include <nth.h>
#include "kernels/harness.h"
#include "trace_hooks.h"

const char *harness_arm(long run)
{
    static const char *const arms[3] = { "on", "off", "aa" };
    static int checked;
    if (!checked) {
        checked = 1;
        (void)nth_init(NULL);   /* the runtime starts lazily; EBUSY if it already runs */
        if (!nth_trace_enabled()) {
            fprintf(stderr, "lu-trace-ab: start it with NTH_TRACE=FILE.bin (tracing is not on)\n");
            exit(2);
        }
    }
    long block = run / 3, k = run % 3;
    long i = block % 2 ? (2 - k + block / 2) % 3 : (k + block / 2) % 3;
    const char *arm = arms[i];
    __atomic_store_n(&nth_trace_on, i == 0, __ATOMIC_RELEASE);
    return arm;
}
