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
 *
 * Block 0 is the warm-up (the script drops it); from block 1 on the six
 * orders come in turn, so blocks 1..6k see each arm at each position, and
 * after each arm, equally often. After every run, outside its timing,
 * harness_settle writes whatever records the run left in the buffers: the
 * background writer would otherwise write an "on" run's records during
 * a later run of any arm (a carry-over that the rotation does not
 * cancel). That write is timed and printed (settle_s, settle_cpu_s); the
 * script charges it to its run, an upper bound of the draining's cost (a
 * writer pass during a run shows in the run's own time). At exit, the
 * writer threads' CPU time and wake-ups go to stderr.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <nth.h>
#include "kernels/harness.h"
#include "trace_rt.h"
#include "trace_clock.h"

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The writer threads' CPU time and wake-ups (their kernel threads' run
 * time and time slices, /proc/self/task/TID/schedstat), against the
 * process's CPU time, one line on stderr. Runs before nth_trace_finish
 * (registered after it: atexit is last in, first out), writers alive. */
static void writer_report(void)
{
    /* Which clock the records read: "auto" takes the TSC only when the
     * kernel's clock source is tsc, and this project's VM has booted with
     * either (bench/RESULTS.md "trace9": ~360 vs ~140 ns of tracing per
     * region), so figures from different days compare only with this. */
    fprintf(stderr, "lu-trace-ab: nth-trace clock: %s\n", nth_trace_clock_is_tsc() ? "tsc" : "clock_gettime");
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[96], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%.40s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (!fgets(comm, sizeof comm, f))
            comm[0] = 0;
        fclose(f);
        comm[strcspn(comm, "\n")] = 0;
        if (strncmp(comm, "nth-trace", 9) != 0)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%.40s/schedstat", e->d_name);
        unsigned long long run_ns = 0, wait_ns = 0, slices = 0;
        f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%llu %llu %llu", &run_ns, &wait_ns, &slices) != 3)
                run_ns = slices = 0;
            fclose(f);
        }
        fprintf(stderr, "lu-trace-ab: %s: %.3f ms CPU, %llu time slices, %.3f ms runnable waiting; process CPU %.3f s\n",
                comm, run_ns / 1e6, slices, wait_ns / 1e6, clock_s(CLOCK_PROCESS_CPUTIME_ID));
    }
    closedir(d);
}

double harness_settle(long run, double *cpu)
{
    (void)run;
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = clock_s(CLOCK_MONOTONIC);
    if (nth_trace_drain_now())
        fprintf(stderr, "lu-trace-ab: run %ld: could not write the records (drain lock busy)\n", run);
    *cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    return clock_s(CLOCK_MONOTONIC) - t0;
}

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
        atexit(writer_report);
    }
    long block = run / 3 ? run / 3 - 1 : 0, k = run % 3;
    long i = block % 2 ? (2 - k + block / 2) % 3 : (k + block / 2) % 3;
    const char *arm = arms[i];
    __atomic_store_n(&nth_trace_on, i == 0, __ATOMIC_RELEASE);
    return arm;
}
