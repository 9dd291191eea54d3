/*
 * micro.c -- microbenchmarks of the runtime core, each compared within one
 * run against what glibc's kernel threads do for the same job:
 *
 *   create_join     create + join an empty nano-thread, vs pthread_create +
 *                   pthread_join (glibc). Target: >= 1000x faster.
 *   yield           two nano-threads yielding to each other on one VP, vs
 *                   sched_yield between two kernel threads pinned to one CPU.
 *                   Target: >= 30x faster.
 *   switch_floor    a bare loop of nth_ctx_switch between two contexts: the
 *                   floor a yield can approach. Target: yield <= 2x floor.
 *   rss_per_thread  resident memory per nano-thread with 100 000 of them
 *                   alive at once (16 KiB stacks). Target: <= 8 KiB.
 *
 * Usage: micro [--json] [--quick]
 * Default output is a table; --json prints one JSON object per line and
 * nothing else on stdout (DESIGN.md, "Benchmark output"). --quick runs
 * shorter loops (for smoke tests). Run on a quiet machine: the glibc sides
 * are sensitive to load.
 */
#include "internal.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct result {
    const char *bench, *impl, *unit;
    double value;
    char params[160];
};

static struct result results[16];
static int nresults;
static int quick;

/* Each figure is the fastest of REPS batches: on a shared machine a batch
 * that was preempted says more about the neighbours than about us. */
#define REPS 5

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void add(const char *bench, const char *impl, double v, const char *unit, const char *params)
{
    struct result *r = &results[nresults++];
    r->bench = bench;
    r->impl = impl;
    r->value = v;
    r->unit = unit;
    snprintf(r->params, sizeof r->params, "%s", params);
}

static const struct result *find(const char *bench, const char *impl)
{
    for (int i = 0; i < nresults; i++)
        if (!strcmp(results[i].bench, bench) && !strcmp(results[i].impl, impl))
            return &results[i];
    return NULL;
}

/* ---- glibc sides (measured before the runtime starts) -------------------- */

static void *empty(void *a) { return a; }

static void glibc_create_join(int n)
{
    pthread_t t;
    for (int i = 0; i < n / 10; i++) {              /* warm glibc's stack cache */
        pthread_create(&t, NULL, empty, NULL);
        pthread_join(t, NULL);
    }
    double best = 1e300;
    for (int r = 0; r < REPS; r++) {
        double t0 = now_ns();
        for (int i = 0; i < n; i++) {
            if (pthread_create(&t, NULL, empty, NULL) != 0 || pthread_join(t, NULL) != 0) {
                fprintf(stderr, "micro: pthread_create failed\n");
                exit(1);
            }
        }
        double v = (now_ns() - t0) / n;
        best = v < best ? v : best;
    }
    char p[160];
    snprintf(p, sizeof p, "{\"n\":%d,\"reps\":%d}", n, REPS);
    add("create_join", "glibc", best, "ns/op", p);
}

static long yield_iters;
static pthread_barrier_t yield_bar;

static void *sched_yielder(void *a)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)(intptr_t)a, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    pthread_barrier_wait(&yield_bar);
    for (long i = 0; i < yield_iters; i++)
        sched_yield();
    return NULL;
}

static void glibc_yield(long n)
{
    cpu_set_t cur;
    int cpu = 0;
    if (sched_getaffinity(0, sizeof cur, &cur) == 0)
        for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &cur); cpu++)
            ;
    yield_iters = n;
    double best = 1e300;
    for (int r = 0; r < REPS; r++) {
        pthread_barrier_init(&yield_bar, NULL, 3);
        pthread_t a, b;
        pthread_create(&a, NULL, sched_yielder, (void *)(intptr_t)cpu);
        pthread_create(&b, NULL, sched_yielder, (void *)(intptr_t)cpu);
        pthread_barrier_wait(&yield_bar);
        double t0 = now_ns();
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        double v = (now_ns() - t0) / (2.0 * n);
        best = v < best ? v : best;
        pthread_barrier_destroy(&yield_bar);
    }
    char p[160];
    snprintf(p, sizeof p, "{\"n\":%ld,\"threads\":2,\"cpu\":%d,\"reps\":%d}", n, cpu, REPS);
    add("yield", "glibc", best, "ns/op", p);
}

/* ---- nthlib sides ----------------------------------------------------------- */

static void nth_create_join(int n)
{
    nth_t t;
    for (int i = 0; i < n / 10; i++) {
        nth_create(&t, NULL, empty, NULL);
        nth_join(t, NULL);
    }
    double best = 1e300;
    for (int r = 0; r < REPS; r++) {
        double t0 = now_ns();
        for (int i = 0; i < n; i++) {
            if (nth_create(&t, NULL, empty, NULL) != 0 || nth_join(t, NULL) != 0) {
                fprintf(stderr, "micro: nth_create failed\n");
                exit(1);
            }
        }
        double v = (now_ns() - t0) / n;
        best = v < best ? v : best;
    }
    char p[160];
    snprintf(p, sizeof p, "{\"n\":%d,\"vps\":1,\"stack\":%zu,\"reps\":%d}", n,
             nth_rt.cfg.stack_size, REPS);
    add("create_join", "nth", best, "ns/op", p);
}

static void *nth_yielder(void *a)
{
    long n = (long)(intptr_t)a;
    for (long i = 0; i < n; i++)
        nth_yield();
    return NULL;
}

static void nth_yield_bench(long n)
{
    nth_attr_t attr;
    nth_attr_init(&attr);
    nth_attr_setvp(&attr, 0);
    double best = 1e300;
    for (int r = 0; r < REPS; r++) {
        nth_t a, b;
        nth_create(&a, &attr, nth_yielder, (void *)(intptr_t)n);
        nth_create(&b, &attr, nth_yielder, (void *)(intptr_t)n);
        double t0 = now_ns();
        nth_join(a, NULL);      /* main blocks: only the two yielders run */
        nth_join(b, NULL);
        double v = (now_ns() - t0) / (2.0 * n);
        best = v < best ? v : best;
    }
    char p[160];
    snprintf(p, sizeof p, "{\"n\":%ld,\"threads\":2,\"vps\":1,\"reps\":%d}", n, REPS);
    add("yield", "nth", best, "ns/op", p);
}

static nth_ctx_t floor_main, floor_other;
static long floor_n;

static void floor_loop(void *a)
{
    (void)a;
    for (;;)
        nth_ctx_switch(&floor_other, &floor_main);
}

static void switch_floor(long n)
{
    static char stack[64 * 1024] __attribute__((aligned(64)));
    floor_n = n;
    nth_ctx_make(&floor_other, stack, sizeof stack, floor_loop, NULL);
    nth_ctx_switch(&floor_main, &floor_other);     /* warm */
    double best = 1e300;
    for (int r = 0; r < REPS; r++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++)
            nth_ctx_switch(&floor_main, &floor_other);
        double v = (now_ns() - t0) / (2.0 * n);
        best = v < best ? v : best;
    }
    char p[160];
    snprintf(p, sizeof p, "{\"n\":%ld,\"reps\":%d}", n, REPS);
    add("switch_floor", "nth", best, "ns/switch", p);
}

static long rss_bytes(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &pages, &res) != 2) {
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    return res * sysconf(_SC_PAGESIZE);
}

static int rss_go;

static void *rss_waiter(void *a)
{
    (void)a;
    while (!__atomic_load_n(&rss_go, __ATOMIC_ACQUIRE))
        nth_wait();
    return NULL;
}

static void rss_per_thread(int n)
{
    nth_t *t = malloc((size_t)n * sizeof *t);
    if (!t)
        exit(1);
    memset(t, 0, (size_t)n * sizeof *t);           /* count the array before */
    nth_attr_t attr;
    nth_attr_init(&attr);
    nth_attr_setstacksize(&attr, NTH_STACK_MIN);
    long before = rss_bytes();
    for (int i = 0; i < n; i++) {
        if (nth_create(&t[i], &attr, rss_waiter, NULL) != 0) {
            fprintf(stderr, "micro: nth_create failed at %d\n", i);
            exit(1);
        }
    }
    nth_yield();                                   /* each runs once and blocks */
    while (!nth_rq_empty(&nth_rt.vps[0]->rq))
        nth_yield();
    long after = rss_bytes();
    __atomic_store_n(&rss_go, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < n; i++)
        nth_to_rq(t[i]);
    for (int i = 0; i < n; i++)
        nth_join(t[i], NULL);
    free(t);
    char p[160];
    snprintf(p, sizeof p, "{\"n\":%d,\"stack\":%d,\"guard\":\"%s\"}", n, NTH_STACK_MIN,
             nth_guard_uses_madvise() ? "madvise" : "mprotect");
    add("rss_per_thread", "nth", (after - before) / 1024.0 / n, "KiB", p);
}

/* ---- report ----------------------------------------------------------------- */

static void print_json(void)
{
    for (int i = 0; i < nresults; i++) {
        struct result *r = &results[i];
        printf("{\"bench\":\"%s\",\"impl\":\"%s\",\"value\":%.2f,\"unit\":\"%s\",\"params\":%s}\n",
               r->bench, r->impl, r->value, r->unit, r->params);
    }
}

static void print_table(void)
{
    printf("%-16s %-6s %12s  %-10s\n", "bench", "impl", "value", "unit");
    for (int i = 0; i < nresults; i++)
        printf("%-16s %-6s %12.2f  %-10s\n", results[i].bench, results[i].impl,
               results[i].value, results[i].unit);
    const struct result *cn = find("create_join", "nth"), *cg = find("create_join", "glibc");
    const struct result *yn = find("yield", "nth"), *yg = find("yield", "glibc");
    const struct result *fl = find("switch_floor", "nth"), *rs = find("rss_per_thread", "nth");
    printf("\n%-36s %10s  %-10s %s\n", "ratio (same run)", "value", "target", "met");
    if (cn && cg)
        printf("%-36s %9.0fx  %-10s %s\n", "create_join: glibc / nth", cg->value / cn->value,
               ">= 1000x", cg->value / cn->value >= 1000 ? "yes" : "NO");
    if (yn && yg)
        printf("%-36s %9.1fx  %-10s %s\n", "yield: sched_yield / nth_yield", yg->value / yn->value,
               ">= 30x", yg->value / yn->value >= 30 ? "yes" : "NO");
    if (yn && fl)
        printf("%-36s %9.2fx  %-10s %s\n", "yield: nth_yield / switch floor", yn->value / fl->value,
               "<= 2x", yn->value / fl->value <= 2 ? "yes" : "NO");
    if (rs)
        printf("%-36s %6.2f KiB  %-10s %s\n", "rss per nano-thread (16 KiB stack)", rs->value,
               "<= 8 KiB", rs->value <= 8 ? "yes" : "NO");
}

int main(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            fprintf(stderr, "usage: %s [--json] [--quick]\n", argv[0]);
            return 2;
        }
    }
    /* glibc first, before any VP kernel thread exists. */
    glibc_create_join(quick ? 200 : 2000);
    glibc_yield(quick ? 10000 : 50000);

    nth_config_t c;
    nth_config_default(&c);
    c.vps = 1;                  /* one VP: nothing is stolen, no VP is woken */
    int r = nth_init(&c);
    if (r) {
        fprintf(stderr, "micro: nth_init: %s\n", strerror(r));
        return 1;
    }
    nth_create_join(quick ? 20000 : 200000);
    switch_floor(quick ? 200000 : 2000000);
    nth_yield_bench(quick ? 100000 : 1000000);
    rss_per_thread(quick ? 10000 : 100000);
    if (json)
        print_json();
    else
        print_table();
    return 0;
}
