/*
 * trace_overhead.c -- what tracing costs, on and off in the same run.
 *
 *   trace_overhead    a nthlib workload (LU-1000-sized row updates done by
 *                     nano-threads created, yielding and joined in waves,
 *                     with a user state pushed around each update): time
 *                     with tracing on / off - 1, in %. (LU 1000 itself,
 *                     bench/lu-nth, traced vs untraced: bench/trace_lu.sh;
 *                     the target < 1% is for that one.)
 *   trace_overhead    also the bare create/join/yield loop (no work): the
 *   (impl nth-bare)   cost per traced scheduling operation, in ns/op.
 *   probe_overhead    nth_trace_function_enter + _exit (what
 *                     libnth-probes records per instrumented call), on and
 *                     off, ns per call.
 *   trace_bytes_per_event  bytes per record of the binary file (fixed) and
 *                     of the JSON and gzipped JSON it converts to.
 *
 * On and off alternate in one process: tracing is started once (to a .bin
 * in $TMPDIR) and the record flag is switched between batches, so both see
 * the same VPs, caches and neighbours. Each figure is the median of REPS
 * alternated batches. Usage: trace_overhead [--json] [--quick]
 */
#include "internal.h"
#include "trace_convert.h"
#include "trace_hooks.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REPS 7
#define N 1000             /* LU 1000: row length */
#define USER_STATE (NTH_TRACE_STATE_USER + 1)

static int quick, json;
static double a[2 * 64][N];   /* per task: pivot row and its row */

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

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, dcmp);
    return v[n / 2];
}

static void set_tracing(int on)
{
    __atomic_store_n(&nth_trace_on, on, __ATOMIC_RELEASE);
}

/* One task: the row updates of LU's elimination step for one row, in
 * chunks, pushing a user state around each chunk and yielding between
 * them (about the scheduling density of LU 1000 with 2 nano-threads per VP). */
static void *task(void *arg)
{
    long k = (long)arg;
    double *piv = a[2 * k], *row = a[2 * k + 1];
    for (int c = 0; c < 8; c++) {
        nth_trace_state_push(USER_STATE);
        for (int rep = 0; rep < 16; rep++) {
            double l = row[c] / (piv[c] + 1.0);
            for (int j = 0; j < N; j++)
                row[j] -= l * piv[j];
        }
        nth_trace_state_pop();
        nth_yield();
    }
    return NULL;
}

static void *bare(void *arg)
{
    (void)arg;
    nth_yield();
    return NULL;
}

/* waves of 2 nano-threads per VP, created, run and joined */
static double run(void *(*fn)(void *), int waves)
{
    int per = 2 * nth_num_vps();
    if (per > 64) per = 64;
    nth_t th[64];
    double t0 = now_ns();
    for (int w = 0; w < waves; w++) {
        for (long i = 0; i < per; i++)
            if (nth_create(&th[i], NULL, fn, (void *)i)) { fprintf(stderr, "nth_create failed\n"); exit(1); }
        for (int i = 0; i < per; i++)
            nth_join(th[i], NULL);
    }
    return now_ns() - t0;
}

static double probe_batch(int on, long n)
{
    set_tracing(on);
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        nth_trace_function_enter((const void *)probe_batch, 0);
        nth_trace_function_exit((const void *)probe_batch, 0);
    }
    double t = now_ns() - t0;
    set_tracing(0);
    return t / n;
}

static long fsize(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static void out(const char *bench, const char *impl, double v, const char *unit, const char *params)
{
    if (json)
        printf("{\"bench\":\"%s\",\"impl\":\"%s\",\"value\":%.3f,\"unit\":\"%s\",\"params\":%s}\n",
               bench, impl, v, unit, params);
    else
        printf("%-22s %-16s %12.3f  %-8s %s\n", bench, impl, v, unit, params);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else { fprintf(stderr, "usage: %s [--json] [--quick]\n", argv[0]); return 2; }
    }
    char bin[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(bin, sizeof bin, "%s/nth-trace-overhead-%ld.bin", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    setenv("NTH_TRACE", bin, 1);
    /* The writer keeps the first 8 MiB of records and counts the rest as
     * lost: the record path (what is measured) is the same, and the file
     * stays small enough to convert for the bytes-per-event figures. */
    setenv("NTH_TRACE_LIMIT", "8M", 0);
    if (nth_init(NULL) != 0 || !nth_trace_enabled()) {
        fprintf(stderr, "trace_overhead: cannot start the runtime with tracing to %s\n", bin);
        return 1;
    }
    for (int r = 0; r < 2 * 64; r++)
        for (int j = 0; j < N; j++)
            a[r][j] = 1.0 + (double)((r * 7 + j * 13) % 17) / 17.0;
    int waves = quick ? 20 : 60, bare_waves = quick ? 2000 : 5000;
    long probes = quick ? 100000 : 200000;
    double on[REPS], off[REPS], bon[REPS], boff[REPS], pon[REPS], poff[REPS];
    run(task, waves / 10 + 1);   /* warm: stacks, caches, buffers */
    for (int r = 0; r < REPS; r++) {
        /* alternate which goes first, so drift favours neither */
        int first = r & 1;
        for (int k = 0; k < 2; k++) {
            int o = k ^ first;
            set_tracing(o);
            double t = run(task, waves);
            double b = run(bare, bare_waves);
            set_tracing(0);
            (o ? on : off)[r] = t;
            (o ? bon : boff)[r] = b;
        }
        pon[r] = probe_batch(1, probes);
        poff[r] = probe_batch(0, probes);
    }
    int per = 2 * nth_num_vps();
    double mon = median(on, REPS), moff = median(off, REPS);
    double bops = (double)bare_waves * per * 4;   /* create, 2 switches in, yield, join ~ 4 ops */
    char params[200];
    if (!json)
        printf("%-22s %-16s %12s  %-8s %s\n", "bench", "impl", "value", "unit", "params");
    snprintf(params, sizeof params, "{\"vps\":%d,\"waves\":%d,\"tasks_per_wave\":%d,\"row\":%d,\"reps\":%d,\"on_ms\":%.2f,\"off_ms\":%.2f}",
             nth_num_vps(), waves, per, N, REPS, mon / 1e6, moff / 1e6);
    out("trace_overhead", "nth", (mon / moff - 1) * 100, "%", params);
    snprintf(params, sizeof params, "{\"vps\":%d,\"waves\":%d,\"reps\":%d,\"on_ns_per_op\":%.1f,\"off_ns_per_op\":%.1f}",
             nth_num_vps(), bare_waves, REPS, median(bon, REPS) / bops, median(boff, REPS) / bops);
    out("trace_overhead", "nth-bare", (median(bon, REPS) - median(boff, REPS)) / bops, "ns/op", params);
    snprintf(params, sizeof params, "{\"calls\":%ld,\"reps\":%d,\"off_ns\":%.2f}", probes, REPS, median(poff, REPS));
    out("probe_overhead", "nth", median(pon, REPS), "ns/call", params);
    out("probe_overhead", "nth-off", median(poff, REPS), "ns/call", params);

    /* Bytes per event: finish the trace, convert it, divide. */
    set_tracing(1);
    run(task, quick ? 5 : 20);
    nth_trace_finish();
    struct nth_tr_file f;
    memset(&f, 0, sizeof f);
    if (nth_tr_load(bin, &f, NULL) != 0) {
        fprintf(stderr, "trace_overhead: cannot read back %s\n", bin);
        return 1;
    }
    double nrec = (double)f.nrecs;   /* records kept in the file (the limit) */
    long bsize = fsize(bin);
    nth_tr_free(&f);
    char js[300], gz[300];
    snprintf(js, sizeof js, "%s.json", bin);
    snprintf(gz, sizeof gz, "%s.json.gz", bin);
    const char *in[1] = { bin };
    if (nth_trace_convert(in, 1, js, NULL, NULL, NULL) || nth_trace_convert(in, 1, gz, NULL, NULL, NULL)) {
        fprintf(stderr, "trace_overhead: conversion failed\n");
        return 1;
    }
    snprintf(params, sizeof params, "{\"records\":%.0f,\"bytes\":%ld}", nrec, bsize);
    out("trace_bytes_per_event", "bin", (double)bsize / nrec, "B/event", params);
    snprintf(params, sizeof params, "{\"records\":%.0f,\"bytes\":%ld}", nrec, fsize(js));
    out("trace_bytes_per_event", "json", (double)fsize(js) / nrec, "B/event", params);
    snprintf(params, sizeof params, "{\"records\":%.0f,\"bytes\":%ld}", nrec, fsize(gz));
    out("trace_bytes_per_event", "json.gz", (double)fsize(gz) / nrec, "B/event", params);
    unlink(bin);
    unlink(js);
    unlink(gz);
    return 0;
}
