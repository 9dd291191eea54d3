/*
 * rt_demo -- a real nthlib program traced through NTH_TRACE (not the
 * simulator): the runtime's own trace call sites produce the trace.
 *
 *   rt_demo MODE [CPUMGR_NAME]
 *   MODE: return | exit | sigterm | abort | overflow | segv-raise | segv-kill |
 *         segv-wait | cpumgr | cpumgr-early | recycle
 *
 * Every mode but cpumgr and cpumgr-early: main creates "sleeper" and joins it before it
 * can run (with NTH_VPS=1 the join is sure to block: cooperative scheduling),
 * then "migrant": it blocks in nth_wait and a kernel thread (no VP) makes it
 * ready, until it has been seen on two VPs (bounded; with one VP it cannot
 * move and says so; a stall watchdog's stand-in is no VP of its own). Then
 * the mode's way out, from a nano-thread that is not main:
 *   return    main returns            exit      exit(0)
 *   sigterm   kill(getpid(), SIGTERM) abort     abort()
 *   overflow  unbounded recursion on a small stack (guard page, SIGSEGV)
 *   segv-raise raise(SIGSEGV)          segv-kill kill(getpid(), SIGSEGV)
 *   segv-wait prints "leaver waiting" and naps for another process's
 *             kill -SEGV
 * (the segv modes: a signal that was swallowed leaves "survived" on stderr
 * and exit status 3)
 * cpumgr: attach to the daemon's segment CPUMGR_NAME, request 1 CPU, wait
 * until it is assigned, then 2, then leave (the assigned-CPUs counter).
 * cpumgr-early: request 1 CPU of CPUMGR_NAME before nth_init() and wait
 * until it is assigned, so that the grant is applied before the trace
 * starts; then start the runtime (NTH_TRACE), nap 200 ms and leave.
 * Prints "before N" and "assigned N": what nth_cpus_assigned() said just
 * before nth_init() and just before leaving.
 * recycle: only four "cycler" nano-threads, each created once the last is
 * joined; prints "recycled=0|1 ids=A,B,C,D" (1: some nth_t came back).
 * Prints "migrant=ID moved=0|1" before leaving. With RT_DEMO_CHDIR=DIR it
 * chdir()s to DIR just before the way out, with RT_DEMO_SPAWN=CMD it then
 * runs CMD with system(3).
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nth.h"
#include "nth/trace.h"
#include "cpumgr_client.h"

static int waiting, moved, done, waker_up;
static const char *mode;
static nth_t migrant_th;

static void *sleeper(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++)
        nth_yield();
    return (void *)7;
}

/* Whether the caller now runs on a VP other than *first (the first VP it
 * was seen on, -1 = none yet). A stall watchdog's stand-in, running a
 * stalled VP's queue on a kernel thread of its own, says -1 (nth_vp_id):
 * the trace shows that run on the stalled VP's track, so it is no move.
 * Counting it as one (-1 != first) made runtime.sh fail at load: the
 * migrant had run on VP 0 and on VP 0's stand-in, one VP track. */
static int on_other_vp(int *first)
{
    int v = nth_vp_id();
    if (v < 0)
        return 0;
    if (*first < 0)
        *first = v;
    return v != *first;
}

static void *migrant(void *arg)
{
    (void)arg;
    int first = -1;
    on_other_vp(&first);
    /* One VP: it cannot move. Only "return" (runtime.sh) needs it to have
     * moved; the exit modes bound it low, since the hog's yields meanwhile
     * fill the trace (550 MB of JSON at load 18, minutes of jq). */
    long cap = nth_num_vps() > 1 && !strcmp(mode, "return") ? 20000 : 50;
    for (long i = 0; i < cap && !moved; i++) {
        __atomic_store_n(&waiting, 1, __ATOMIC_RELEASE);
        nth_wait();
        if (on_other_vp(&first))
            moved = 1;
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* The waker is a kernel thread that is no VP: its nth_to_rq puts the migrant
 * on the global queue, where whichever VP looks first takes it. (A waker
 * that is itself a nano-thread yielding on the other VP can deadlock the
 * core: each VP then waits for the other's nano-thread to finish switching
 * out -- reported, not worked around here.) */
static void *waker(void *arg)
{
    (void)arg;
    __atomic_store_n(&waker_up, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        if (__atomic_exchange_n(&waiting, 0, __ATOMIC_ACQ_REL))
            nth_to_rq(migrant_th);
        else
            sched_yield();
    }
    return NULL;
}

/* Keeps its VP busy, yielding every few microseconds: with both VPs busy
 * the migrant, made ready on the global queue, goes to whichever VP yields
 * first (an idle VP would always take it back at once). It yields only
 * while the migrant is not waiting for the waker: a waker starved of CPU
 * by a loaded machine would otherwise let the hogs fill the trace with
 * yields (613 MB of JSON under ASan at load 30, and jq on it never ended).
 * Until the waker runs, main (which starts it) may need this VP. */
static void *hog(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        for (volatile int i = 0; i < 2000; i++)
            ;
        if (!__atomic_load_n(&waiting, __ATOMIC_ACQUIRE) ||
            !__atomic_load_n(&waker_up, __ATOMIC_ACQUIRE))
            nth_yield();
    }
    return NULL;
}

static volatile char sink;
static int recurse(int n)
{
    volatile char pad[512];
    pad[0] = (char)n;
    sink = pad[0];
    return n > 1000000 ? pad[0] : recurse(n + 1) + pad[0];
}

static void *leaver(void *arg)
{
    (void)arg;
    nth_trace_event(1, 42);
    if (!strcmp(mode, "exit")) exit(0);
    if (!strcmp(mode, "sigterm")) kill(getpid(), SIGTERM);
    if (!strcmp(mode, "abort")) abort();
    if (!strcmp(mode, "overflow")) recurse(0);
    if (!strncmp(mode, "segv-", 5)) {
        if (!strcmp(mode, "segv-raise"))
            raise(SIGSEGV);
        else if (!strcmp(mode, "segv-kill"))
            kill(getpid(), SIGSEGV);
        else {
            printf("leaver waiting\n");
            fflush(stdout);
        }
        for (int i = 0; i < (strcmp(mode, "segv-wait") ? 10 : 300); i++)
            nth_sleep_ns(100 * 1000 * 1000);
        fprintf(stderr, "survived\n");
        exit(3);
    }
    /* A process-directed signal may be handled by another kernel thread:
     * never return (main would exit meanwhile). */
    for (;;)
        pause();
    return NULL;
}

static int wait_assigned(int n)
{
    for (int i = 0; i < 5000; i++) {   /* at most ~5 s of 1 ms naps */
        nth_cpumgr_poll();
        nth_cpumgr_tick();
        if (nth_cpus_assigned() == n)
            return 0;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    return 1;
}

/* recycle: nano-threads created and joined one after the other, so that
 * the runtime may hand the next one the descriptor (nth_t) of the last. */
static void *cycler(void *arg)
{
    *(uint64_t *)arg = nth_id(nth_self());
    return NULL;
}

static int recycle(void)
{
    enum { N = 4 };
    nth_attr_t a;
    nth_attr_init(&a);
    nth_attr_setname(&a, "cycler");
    nth_t t[N];
    uint64_t id[N];
    int same = 0;
    for (int i = 0; i < N; i++) {
        if (nth_create(&t[i], &a, cycler, &id[i]) || nth_join(t[i], NULL))
            return 4;
        for (int j = 0; j < i; j++)
            same |= t[j] == t[i];
    }
    printf("recycled=%d ids=", same);
    for (int i = 0; i < N; i++)
        printf("%s%llu", i ? "," : "", (unsigned long long)id[i]);
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: rt_demo return|exit|sigterm|abort|overflow|segv-raise|segv-kill|segv-wait|cpumgr|cpumgr-early|recycle|request-first [NAME]\n");
        return 2;
    }
    mode = argv[1];
    if (!strcmp(mode, "cpumgr")) {
        /* The runtime starts the cpumgr client itself, from NTH_CPUMGR. */
        if (argc < 3 || setenv("NTH_CPUMGR", argv[2], 1) != 0 || nth_init(NULL) != 0)
            return 2;
        for (int i = 0; i < 5000 && !nth_cpumgr_attached(); i++) {
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
        }
        if (!nth_cpumgr_attached() || nth_cpus_request(1) || wait_assigned(1) ||
            nth_cpus_request(2) || wait_assigned(2)) {
            fprintf(stderr, "rt_demo: attached=%d assigned=%d\n", nth_cpumgr_attached(), nth_cpus_assigned());
            return 3;
        }
        printf("cpus 1 then 2\n");
        return 0;
    }
    if (!strcmp(mode, "cpumgr-early")) {
        if (argc < 3 || setenv("NTH_CPUMGR", argv[2], 1) != 0)
            return 2;
        for (int i = 0; i < 5000 && !nth_cpumgr_attached(); i++) {
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
        }
        if (!nth_cpumgr_attached() || nth_cpus_request(1) || wait_assigned(1)) {
            fprintf(stderr, "rt_demo: attached=%d assigned=%d\n", nth_cpumgr_attached(), nth_cpus_assigned());
            return 3;
        }
        printf("before %d\n", nth_cpus_assigned());
        if (nth_init(NULL) != 0)
            return 2;
        nth_sleep_ns(200 * 1000 * 1000);
        printf("assigned %d\n", nth_cpus_assigned());
        return 0;
    }
    if (!strcmp(mode, "request-first")) {
        /* The cpumgr API before the runtime starts: both read NTH_CPUMGR
         * (env_messages.sh: a bad value is said once). Then as "return". */
        nth_cpus_request(1);
        mode = "return";
    }
    if (nth_init(NULL) != 0)
        return 2;
    if (!strcmp(mode, "recycle"))
        return recycle();
    nth_attr_t a;
    nth_attr_init(&a);
    nth_attr_setname(&a, "sleeper");
    nth_t s, m, l;
    void *ret = NULL;
    if (nth_create(&s, &a, sleeper, NULL) || nth_join(s, &ret) || ret != (void *)7)
        return 4;
    nth_attr_setname(&a, "migrant");
    if (nth_create(&m, &a, migrant, NULL))
        return 4;
    migrant_th = m;
    uint64_t mid = nth_id(m);
    /* With one VP the hogs would starve the migrant: a yield looks at the
     * global queue only when the local one is empty (reported). */
    nth_t h[2];
    int nhog = nth_num_vps() > 1 ? 2 : 0;
    nth_attr_setname(&a, "hog");
    for (int i = 0; i < nhog; i++)
        if (nth_create(&h[i], &a, hog, NULL))
            return 4;
    pthread_t w;
    if (pthread_create(&w, NULL, waker, NULL))
        return 4;
    nth_join(m, NULL);
    pthread_join(w, NULL);
    for (int i = 0; i < nhog; i++)
        nth_join(h[i], NULL);
    printf("migrant=%llu moved=%d\n", (unsigned long long)mid, moved);
    fflush(stdout);
    /* RT_DEMO_CHDIR=DIR: leave from another directory, as servers
     * (chdir("/")) and solvers (into work directories) do. */
    const char *away = getenv("RT_DEMO_CHDIR");
    if (away && chdir(away)) {
        perror("rt_demo: chdir");
        return 4;
    }
    /* RT_DEMO_SPAWN=CMD: run CMD (sh -c) first, as a program that starts
     * others does; its children see RT_DEMO_SPAWN empty. */
    const char *spawn = getenv("RT_DEMO_SPAWN");
    if (spawn && *spawn) {
        char *cmd = strdup(spawn);
        if (!cmd || setenv("RT_DEMO_SPAWN", "", 1) || system(cmd) != 0) {
            fprintf(stderr, "rt_demo: '%s' failed\n", spawn);
            return 4;
        }
        free(cmd);
    }
    if (!strcmp(mode, "return"))
        return 0;
    nth_attr_setname(&a, "leaver");
    nth_attr_setstacksize(&a, NTH_STACK_MIN);
    if (nth_create(&l, &a, leaver, NULL))
        return 4;
    nth_join(l, NULL);
    return 5;   /* the way out did not leave */
}
