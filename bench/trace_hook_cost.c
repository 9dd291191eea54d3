/*
 * trace_hook_cost.c -- bench/trace-hook-cost: the cost of one call of each
 * record-path entry (the nth/trace.h API and the runtime's own hooks), with
 * tracing on, for bench/trace_cost.sh's bound on the tracing overhead of
 * LU 1000 (issue 7: < 1 %). A tight loop measures what a call costs its
 * caller, free of the wall-clock noise that hides a 1 % difference in a
 * whole LU run on this shared 2-CPU machine.
 *
 *   NTH_VPS=1 NTH_CPUMGR=off NTH_TRACE=/tmp/x.bin bench/trace-hook-cost [--json] [--batches B] [--calls N]
 *
 * Each row: BATCHES batches (default 31) of N calls (default 8192, a
 * quarter of the default 32768-record ring; fewer for a call of several
 * records, N records per batch), the median ns per call; after
 * each batch, outside its timing, the records are written to the file by
 * nth_trace_drain_now() on this thread, and that write's CPU time
 * (CLOCK_THREAD_CPUTIME_ID) per record is the row's "drain" column: the
 * writer thread's work per record. The ring's head runs on across batches,
 * so the producer's own flush work (the writer's wake-up at half full, the
 * rescuer's at three quarters) falls inside the timed loops in proportion.
 * "off" rows run the same loop with the record flag cleared (one branch).
 * The program stops with status 1 if any record was lost (a loop faster
 * than the drain would measure the cheap refusal path instead).
 *
 * The rows (records per call in brackets):
 *   api_event          nth_trace_event (1)
 *   api_state_push_pop nth_trace_state_push + _pop, per call (1)
 *   probe_enter_exit   nth_trace_function_enter + _exit, per call (1)
 *   rt_rec             nth_trace__rec: the runtime's one-record sites (1)
 *   rt_region          nth_trace_rt_region_begin + _end, per call (1):
 *                      parallel.c's hook, VP and nano-thread looked up
 *   rt_overhead        nth_trace__overhead: an OVERHEAD slice (2)
 *   rt_switch_1        nth_trace__switch_rt, the SWITCH record alone (1)
 *   rt_switch_3        the same with WAIT_OBJ and the queue-length sample (3)
 *   rt_create          nth_trace__create_rt named, with the creator's
 *                      OVERHEAD (1 NAME + its bytes + 3)
 *   clock              nth_trace_now(): nth_trace_rt_leave and
 *                      nth_trace_rt_clock (0)
 *   rq_atomic          the ready-queue length's counts, a push's atomic add
 *                      and a pop's plain increment in turn
 *                      (nth_trace_rt_rq_pushed / _popped) (0)
 *   rq_atomic_shared   the same while another kernel thread keeps
 *                      writing the queue head's line, where the pop count
 *                      lives (until trover both counts were one locked
 *                      add there): each may wait for a line transfer. How often the
 *                      two meet depends on the other thread getting a CPU
 *                      (under load it often does not): a lower bound of
 *                      the contended cost, not a figure for LU.
 *   yield_pair         in context: two nano-threads on one VP (NTH_VPS=1)
 *                      yield to each other; per switch, with every hook of
 *                      the switch path (rt_leave's clock, the queue count,
 *                      the switch records); its "off" row is the untraced
 *                      switch, and on - off is what tracing adds to one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* pthread_attr_setaffinity_np, sched_getcpu */
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <nth.h>
#include "trace_rt.h"
#include "trace_core.h"

static long batches = 31, calls = 8192;
static int json;

static double now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int dcmp(const void *x, const void *y)
{
    double p = *(const double *)x, q = *(const double *)y;
    return p < q ? -1 : p > q;
}

static double median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, dcmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint64_t lost_total(void)
{
    uint64_t n = __atomic_load_n(&nth_trace_alloc_lost, __ATOMIC_RELAXED);
    for (struct nth_trace_buf *b = __atomic_load_n(&nth_trace_bufs, __ATOMIC_ACQUIRE); b; b = b->next)
        n += __atomic_load_n(&b->lost_total, __ATOMIC_RELAXED);
    return n;
}

static volatile uint64_t sink;
static struct nth_rq scratch_rq;
static volatile int pong_stop;

/* rq_atomic_shared: a kernel thread writing the scratch queue's head line
 * (its lock word, beside the pop count) for as long as that row runs. */
static int share_quit;
static void *line_writer(void *a)
{
    (void)a;
    while (!__atomic_load_n(&share_quit, __ATOMIC_RELAXED))
        __atomic_store_n(&scratch_rq.lock.v, 0, __ATOMIC_RELAXED);
    return NULL;
}

static void *pong(void *a)
{
    (void)a;
    while (!pong_stop)
        nth_yield();
    return NULL;
}

enum { API_EVENT, API_PUSH_POP, PROBE, RT_REC, RT_REGION, RT_OVERHEAD, RT_SWITCH1, RT_SWITCH3,
       RT_CREATE, CLOCK, RQ_ATOMIC, RQ_SHARED, YIELD_PAIR, NROWS };
static const char *const row_name[NROWS] = {
    "api_event", "api_state_push_pop", "probe_enter_exit", "rt_rec", "rt_region", "rt_overhead",
    "rt_switch_1", "rt_switch_3", "rt_create", "clock", "rq_atomic", "rq_atomic_shared", "yield_pair" };
static const double row_records[NROWS] = { 1, 1, 1, 1, 1, 2, 1, 3, 0 /* set below */, 0, 0, 0, 0 };

/* n calls of row r; the hooks that test the flag themselves do so here
 * too, so that the "off" loop is the one branch a call site pays. */
static void loop(int r, long n)
{
    struct nth_thread *self = nth_vp_self()->current;
    uint64_t id = self->id;
    struct nth_trace_sw sw1 = { .from = id, .to = id + 1, .t0 = 0, .rq_vp = -1, .why = NTH_SWITCH_YIELD };
    struct nth_trace_sw sw3 = { .from = id, .to = id + 1, .t0 = 0, .obj = 0x1000, .kind = 1, .rq_vp = 0, .rq_len = 1,
                                .why = NTH_SWITCH_BLOCK };
    switch (r) {
    case API_EVENT: for (long i = 0; i < n; i++) nth_trace_event(1, (uint64_t)i); break;
    case API_PUSH_POP:
        for (long i = 0; i < n; i += 2) { nth_trace_state_push(NTH_TRACE_STATE_USER); nth_trace_state_pop(); }
        break;
    case PROBE:
        for (long i = 0; i < n; i += 2) {
            nth_trace_function_enter((const void *)loop, 0);
            nth_trace_function_exit((const void *)loop, 0);
        }
        break;
    case RT_REC: for (long i = 0; i < n; i++) nth_trace_state_push_id(id, NTH_TRACE_READY, NULL); break;
    case RT_REGION: {
        uint64_t reg = nth_trace_rt_region_id();
        for (long i = 0; i < n; i += 2) { nth_trace_rt_region_begin(reg, 2, 0); nth_trace_rt_region_end(reg); }
        break;
    }
    case RT_OVERHEAD:
        for (long i = 0; i < n; i++) { NTH_TRACE_IF_ON nth_trace__overhead(id, nth_trace_now() - 100); }
        break;
    case RT_SWITCH1: for (long i = 0; i < n; i++) { NTH_TRACE_IF_ON nth_trace__switch_rt(&sw1); } break;
    case RT_SWITCH3: for (long i = 0; i < n; i++) { NTH_TRACE_IF_ON nth_trace__switch_rt(&sw3); } break;
    case RT_CREATE:
        for (long i = 0; i < n; i++) { NTH_TRACE_IF_ON nth_trace__create_rt(id + 2 + (uint64_t)i, id, "team-member", nth_trace_now() - 100); }
        break;
    case CLOCK: for (long i = 0; i < n; i++) sink += nth_trace_rt_clock(); break;
    case RQ_ATOMIC:
    case RQ_SHARED:
        for (long i = 0; i < n; i++) {
            if (i & 1) nth_trace_rt_rq_popped(&scratch_rq);
            else nth_trace_rt_rq_pushed(&scratch_rq);
        }
        break;
    case YIELD_PAIR: for (long i = 0; i < n; i += 2) nth_yield(); break;
    }
    /* A switch record names `to` as running: put this one back. */
    if (r == RT_SWITCH1 || r == RT_SWITCH3)
        nth_trace__switch(id + 1, id);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc) batches = atol(argv[++i]);
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atol(argv[++i]);
        else { batches = 0; break; }
    }
    if (batches < 3 || calls < 2 || calls % 2 || calls > 1 << 20) {
        fprintf(stderr, "usage: %s [--json] [--batches B>=3] [--calls N, even, <= 1048576]\n", argv[0]);
        return 2;
    }
    int err = nth_init(NULL);
    if (err) {
        fprintf(stderr, "trace-hook-cost: nth_init: %s\n", strerror(err));
        return 1;
    }
    if (!nth_trace_enabled()) {
        fprintf(stderr, "trace-hook-cost: start it with NTH_TRACE=FILE.bin (tracing is not on)\n");
        return 2;
    }
    if (nth_num_vps() != 1)
        fprintf(stderr, "trace-hook-cost: %d VPs: yield_pair wants NTH_VPS=1 (both nano-threads on one VP)\n",
                nth_num_vps());
    nth_t p;
    if ((err = nth_create(&p, NULL, pong, NULL)) != 0) {
        fprintf(stderr, "trace-hook-cost: nth_create: %s\n", strerror(err));
        return 1;
    }
    /* The create row's records per call: its name's slots + 3. */
    double create_recs = 1 + (strlen("team-member") + 31) / 32 + 3;
    double *on = malloc(sizeof(double) * (size_t)batches), *off = malloc(sizeof(double) * (size_t)batches);
    double *drain = malloc(sizeof(double) * (size_t)batches);
    if (!on || !off || !drain) {
        fprintf(stderr, "trace-hook-cost: %s\n", strerror(ENOMEM));
        return 1;
    }
    if (!json)
        printf("%-20s %8s %10s %10s %12s\n", "call", "records", "on ns", "off ns", "drain ns/rec");
    for (int r = 0; r < NROWS; r++) {
        pthread_t lw;
        /* on another CPU than this VP's (a thread inherits its creator's binding) */
        pthread_attr_t la;
        cpu_set_t cs;
        int me = sched_getcpu();
        CPU_ZERO(&cs);
        for (int c = 0; c < CPU_SETSIZE && c < 1024; c++)
            if (c != me)
                CPU_SET(c, &cs);
        pthread_attr_init(&la);
        pthread_attr_setaffinity_np(&la, sizeof cs, &cs);
        if (r == RQ_SHARED && (err = pthread_create(&lw, &la, line_writer, NULL)) != 0) {
            fprintf(stderr, "trace-hook-cost: pthread_create: %s\n", strerror(err));
            return 1;
        }
        pthread_attr_destroy(&la);
        double recs = r == RT_CREATE ? create_recs : row_records[r];
        long nd = 0;
        /* at most `calls` records per batch: a batch must fit the ring
         * (the drain follows it), 5 records per create */
        long n = recs > 1 ? (long)(calls / recs) & ~1L : calls;
        loop(r, n);                          /* warm-up */
        (void)nth_trace_drain_now();
        for (long b = 0; b < batches; b++) {
            /* on and off alternate, so a drift of the machine hits both */
            for (int arm = 0; arm < 2; arm++) {
                int traced = (b + arm) % 2 == 0;
                __atomic_store_n(&nth_trace_on, traced, __ATOMIC_RELEASE);
                double t0 = now_ns(CLOCK_MONOTONIC);
                loop(r, n);
                double t = (now_ns(CLOCK_MONOTONIC) - t0) / (double)n;
                __atomic_store_n(&nth_trace_on, 1, __ATOMIC_RELEASE);
                double c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
                if (nth_trace_drain_now())
                    fprintf(stderr, "trace-hook-cost: drain lock busy\n");
                double c = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
                (traced ? on : off)[b] = t;
                if (traced && recs > 0)
                    drain[nd++] = c / (recs * (double)n);
            }
        }
        if (r == RQ_SHARED) {
            __atomic_store_n(&share_quit, 1, __ATOMIC_RELAXED);
            pthread_join(lw, NULL);
        }
        double m_on = median(on, batches), m_off = median(off, batches), m_dr = nd ? median(drain, nd) : 0;
        if (json)
            printf("{\"bench\":\"trace_hook_cost\",\"impl\":\"nth\",\"call\":\"%s\",\"value\":%.2f,\"unit\":\"ns/call\","
                   "\"off_ns\":%.2f,\"records_per_call\":%.2f,\"drain_ns_per_record\":%.2f,"
                   "\"params\":{\"batches\":%ld,\"calls\":%ld}}\n",
                   row_name[r], m_on, m_off, recs, m_dr, batches, calls);
        else
            printf("%-20s %8.2f %10.2f %10.2f %12.2f\n", row_name[r], recs, m_on, m_off, m_dr);
    }
    free(on);
    free(off);
    free(drain);
    pong_stop = 1;
    nth_join(p, NULL);
    uint64_t lost = lost_total();
    if (lost) {
        fprintf(stderr, "trace-hook-cost: %llu records lost: the figures measured the refusal path\n",
                (unsigned long long)lost);
        return 1;
    }
    return 0;
}
