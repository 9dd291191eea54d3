/*
 * micro_sync.c -- microbenchmarks of the synchronisation part, nthlib and
 * glibc threads side by side in one run (bench/micro-sync).
 *
 *   mutex_uncontended        lock+unlock by one thread, ns/op (nth: the
 *                            mutex biased to the VP's kernel thread;
 *                            nth-nobias: NTH_MUTEX_BIAS=0, the atomic path)
 *   condvar_pingpong_1vp     two nano-threads on one VP vs two glibc threads
 *                            bound to one CPU, ns per round trip
 *   condvar_pingpong_2vp     two VPs vs two glibc threads on two CPUs
 *   mutex_contended_2vp      4 threads (2 per VP / CPU), each a tight loop of
 *                            lock, increment, unlock: ns per critical
 *                            section (the worst case for a mutex that hands
 *                            off to starving waiters, issue 4)
 *   barrier                  N threads, ns per barrier round
 *   timedwait_lateness_p50   wake-up lateness after a timed wait's deadline
 *   timedwait_lateness_p99   (condvar, CLOCK_MONOTONIC, 100 us deadlines), ns
 *   blocking_handoff         nth_blocking_enter+leave around a call that does
 *                            not block (glibc: the bare call), ns/op
 *   stall_rescue_p50/_p99    stall watchdog, one VP: from a nano-thread
 *                            entering a raw read() (no enter/leave) to a
 *                            ready nano-thread of that VP running on the
 *                            stand-in, us (nth only; includes NTH_STALL_US)
 *
 * Each nthlib case runs in a forked child with its own runtime (1 or 2
 * VPs); the parent never starts the runtime. Without --json: a table with
 * the glibc/nth ratio. With --json: one JSON object per line, nothing else.
 * --mutex: only the mutex and condvar cases; --no-glibc: no glibc side
 * (both to compare two builds of libnth.so through LD_LIBRARY_PATH,
 * bench/mutex_ab.sh).
 */
#include <errno.h>
#include <hwloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "nth.h"
#include "pingpong.h"

static int json;
static int quick;   /* --quick: fewer iterations (smoke test) */
static int mutex_only;   /* --mutex: the mutex and condvar cases only */
static int no_glibc;     /* --no-glibc: nthlib's side only */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct result {
    char bench[40], impl[16], unit[16], params[96];
    double value;
};
static struct result results[32];
static int nresults;

static void add(const char *bench, const char *impl, double v, const char *unit,
                const char *params)
{
    struct result *r = &results[nresults++];
    snprintf(r->bench, sizeof r->bench, "%s", bench);
    snprintf(r->impl, sizeof r->impl, "%s", impl);
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    snprintf(r->params, sizeof r->params, "%s", params);
    r->value = v;
}

/* ---- glibc side ---------------------------------------------------------- */

static hwloc_topology_t topo;

/* Bind the calling kernel thread to the idx-th allowed PU (hwloc). */
static void bind_pu(int idx)
{
    int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, idx % n);
    if (pu)
        hwloc_set_cpubind(topo, pu->cpuset, HWLOC_CPUBIND_THREAD);
}

static pthread_mutex_t gm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gc = PTHREAD_COND_INITIALIZER;
static int g_turn;
static long g_rounds;
static int g_pu[2];

static void *g_ping(void *p)
{
    int me = (int)(intptr_t)p;
    bind_pu(g_pu[me]);
    for (long i = 0; i < g_rounds; i++) {
        pthread_mutex_lock(&gm);
        while (g_turn != me)
            pthread_cond_wait(&gc, &gm);
        g_turn = !me;
        pthread_cond_signal(&gc);
        pthread_mutex_unlock(&gm);
    }
    return NULL;
}

static double glibc_pingpong(int pu0, int pu1, long rounds)
{
    pthread_t a, b;
    g_turn = 0;
    g_rounds = rounds;
    g_pu[0] = pu0;
    g_pu[1] = pu1;
    uint64_t t0 = now_ns();
    pthread_create(&a, NULL, g_ping, (void *)0);
    pthread_create(&b, NULL, g_ping, (void *)1);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return (double)(now_ns() - t0) / (double)rounds;
}

static long g_count, g_ops;
static void *g_contend(void *p)
{
    bind_pu((int)(intptr_t)p);
    for (long i = 0; i < g_ops; i++) {
        pthread_mutex_lock(&gm);
        g_count++;
        pthread_mutex_unlock(&gm);
    }
    return NULL;
}

/* n threads bound round-robin to the first two PUs; ns per critical section. */
static double glibc_contended(int n, long ops)
{
    pthread_t t[8];
    g_ops = ops;
    g_count = 0;
    uint64_t t0 = now_ns();
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, g_contend, (void *)(intptr_t)(i % 2));
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    return (double)(now_ns() - t0) / (double)(ops * n);
}

static pthread_barrier_t gb;
static long g_brounds;
static void *g_bar(void *p)
{
    bind_pu((int)(intptr_t)p);
    for (long i = 0; i < g_brounds; i++)
        pthread_barrier_wait(&gb);
    return NULL;
}

static double glibc_barrier(int n, long rounds)
{
    pthread_t t[64];
    g_brounds = rounds;
    pthread_barrier_init(&gb, NULL, (unsigned)n);
    uint64_t t0 = now_ns();
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, g_bar, (void *)(intptr_t)i);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&gb);
    return (double)(now_ns() - t0) / (double)rounds;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void percentiles(uint64_t *s, int n, double *p50, double *p99)
{
    qsort(s, (size_t)n, sizeof *s, cmp_u64);
    *p50 = (double)s[n / 2];
    *p99 = (double)s[(n * 99) / 100];
}

static struct timespec ns_ts(uint64_t ns)
{
    struct timespec t = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    return t;
}

#define LAT_SAMPLES 2000
#define LAT_DELAY 100000u /* ns */

static void glibc_lateness(double *p50, double *p99, int n)
{
    static uint64_t s[LAT_SAMPLES];
    pthread_condattr_t a;
    pthread_cond_t c;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&c, &a);
    pthread_mutex_lock(&m);
    for (int i = 0; i < n; i++) {
        uint64_t d = now_ns() + LAT_DELAY;
        struct timespec ts = ns_ts(d);
        while (pthread_cond_timedwait(&c, &m, &ts) != ETIMEDOUT)
            ;
        s[i] = now_ns() - d;
    }
    pthread_mutex_unlock(&m);
    percentiles(s, n, p50, p99);
}

/* ---- nthlib side (runs in a child) ---------------------------------------- */

/* nm, nc and the ping-pong's players: pingpong.h. */
static double nth_pingpong(long rounds, int two_vps)
{
    uint64_t t0 = now_ns();
    n_pingpong(rounds, two_vps);
    return (double)(now_ns() - t0) / (double)rounds;
}

enum { CONTENDERS = 4 };
static long n_count, n_ops;
static void *n_contend(void *p)
{
    (void)p;
    for (long i = 0; i < n_ops; i++) {
        nth_mutex_lock(&nm);
        n_count++;
        nth_mutex_unlock(&nm);
    }
    return NULL;
}

/* CONTENDERS nano-threads spread over the VPs; ns per critical section. */
static double nth_contended(long ops)
{
    nth_t t[CONTENDERS];
    nth_attr_t at;
    n_ops = ops;
    n_count = 0;
    nth_attr_init(&at);
    uint64_t t0 = now_ns();
    for (int i = 0; i < CONTENDERS; i++) {
        nth_attr_setvp(&at, i % nth_num_vps());
        nth_create(&t[i], &at, n_contend, NULL);
    }
    for (int i = 0; i < CONTENDERS; i++)
        nth_join(t[i], NULL);
    if (n_count != ops * CONTENDERS)
        fprintf(stderr, "micro-sync: contended count %ld, expected %ld\n", n_count, ops * CONTENDERS);
    return (double)(now_ns() - t0) / (double)(ops * CONTENDERS);
}

static nth_barrier_t nb;
static long n_brounds;
static void *n_bar(void *p)
{
    (void)p;
    for (long i = 0; i < n_brounds; i++)
        nth_barrier_wait(&nb);
    return NULL;
}

static double nth_barrier_bench(int n, long rounds)
{
    nth_t t[64];
    n_brounds = rounds;
    nth_barrier_init(&nb, (unsigned)n);
    uint64_t t0 = now_ns();
    for (int i = 0; i < n; i++)
        nth_create(&t[i], NULL, n_bar, NULL);
    for (int i = 0; i < n; i++)
        nth_join(t[i], NULL);
    nth_barrier_destroy(&nb);
    return (double)(now_ns() - t0) / (double)rounds;
}

static void nth_lateness(double *p50, double *p99, int n)
{
    static uint64_t s[LAT_SAMPLES];
    nth_condattr_t a;
    nth_cond_t c;
    nth_mutex_t m = NTH_MUTEX_INITIALIZER;
    nth_condattr_init(&a);
    nth_condattr_setclock(&a, CLOCK_MONOTONIC);
    nth_cond_init(&c, &a);
    nth_mutex_lock(&m);
    for (int i = 0; i < n; i++) {
        uint64_t d = now_ns() + LAT_DELAY;
        struct timespec ts = ns_ts(d);
        while (nth_cond_timedwait(&c, &m, &ts) != ETIMEDOUT)
            ;
        s[i] = now_ns() - d;
    }
    nth_mutex_unlock(&m);
    percentiles(s, n, p50, p99);
}

/* Run fn in a child whose runtime has vps VPs; the child sends its results
 * back through a pipe as struct result records. */
static void in_child(unsigned vps, void (*fn)(void))
{
    int fd[2];
    if (pipe(fd))
        exit(1);
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        close(fd[0]);
        nth_config_t cfg;
        nth_config_from_env(&cfg);
        cfg.vps = vps;
        if (nth_init(&cfg))
            _exit(2);
        nresults = 0;
        fn();
        if (write(fd[1], results, sizeof results[0] * (size_t)nresults) < 0)
            _exit(3);
        _exit(0);
    }
    close(fd[1]);
    ssize_t n;
    while ((n = read(fd[0], &results[nresults], sizeof results[0])) == (ssize_t)sizeof results[0])
        nresults++;
    close(fd[0]);
    int st;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fprintf(stderr, "micro-sync: a %u-VP child failed (status %d)\n", vps, st);
}

static long iters(long n) { return quick ? n / 20 : n; }

/* ---- stall watchdog: how long the ready nano-threads of a VP wait when
 * its nano-thread sits in the kernel without nth_blocking_enter. */
static int st_pipe[2];
static uint64_t st_enter, st_run;

static void *st_reader(void *p)
{
    (void)p;
    char c;
    st_enter = now_ns();
    if (read(st_pipe[0], &c, 1) != 1)
        _exit(4);
    return NULL;
}

static void *st_runner(void *p)
{
    (void)p;
    st_run = now_ns();
    if (write(st_pipe[1], "x", 1) != 1)
        _exit(4);
    return NULL;
}

static void nth_stall_rescue(double *p50, double *p99, int n)
{
    static uint64_t s[LAT_SAMPLES];
    if (pipe(st_pipe))
        _exit(4);
    for (int i = 0; i < n; i++) {
        nth_t r, w;
        /* FIFO: the reader runs first and stalls the only VP; the runner
         * waits on that VP's ready queue until the watchdog lends it a
         * stand-in. */
        nth_create(&r, NULL, st_reader, NULL);
        nth_create(&w, NULL, st_runner, NULL);
        nth_join(r, NULL);
        nth_join(w, NULL);
        s[i] = st_run - st_enter;
    }
    close(st_pipe[0]);
    close(st_pipe[1]);
    percentiles(s, n, p50, p99);
}

static double nth_mutex_loop(long n)
{
    nth_mutex_t m = NTH_MUTEX_INITIALIZER;
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        nth_mutex_lock(&m);
        nth_mutex_unlock(&m);
    }
    return (double)(now_ns() - t0) / (double)n;
}

/* The same loop without biased locking (read at the first slow path, so
 * setting it here, before any mutex, is in time). */
static void child_nobias(void)
{
    setenv("NTH_MUTEX_BIAS", "0", 1);
    add("mutex_uncontended", "nth-nobias", nth_mutex_loop(iters(5000000)), "ns/op",
        "{\"vps\":1,\"NTH_MUTEX_BIAS\":0}");
}

static void child_1vp(void)
{
    long n;
    add("mutex_uncontended", "nth", nth_mutex_loop(iters(5000000)), "ns/op", "{\"vps\":1}");
    long r = iters(500000);
    add("condvar_pingpong_1vp", "nth", nth_pingpong(r, 0), "ns/roundtrip", "{\"vps\":1}");
    if (mutex_only)
        return;
    double p50, p99;
    nth_lateness(&p50, &p99, quick ? 200 : LAT_SAMPLES);
    add("timedwait_lateness_p50", "nth", p50, "ns", "{\"vps\":1,\"delay_ns\":100000}");
    add("timedwait_lateness_p99", "nth", p99, "ns", "{\"vps\":1,\"delay_ns\":100000}");
    n = iters(200000);
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        nth_blocking_enter();
        getppid();
        nth_blocking_leave();
    }
    add("blocking_handoff", "nth", (double)(now_ns() - t0) / (double)n, "ns/op",
        "{\"vps\":1,\"call\":\"getppid\"}");
    const char *sv = getenv("NTH_STALL_US");
    if (!sv || strcmp(sv, "0")) {
        char params[96];
        snprintf(params, sizeof params, "{\"vps\":1,\"stall_us\":%s}", sv && *sv ? sv : "1000");
        nth_stall_rescue(&p50, &p99, quick ? 20 : 200);
        add("stall_rescue_p50", "nth", p50 / 1000.0, "us", params);
        add("stall_rescue_p99", "nth", p99 / 1000.0, "us", params);
    }
}

static void child_2vp(void)
{
    long r = iters(200000);
    add("condvar_pingpong_2vp", "nth", nth_pingpong(r, 1), "ns/roundtrip", "{\"vps\":2}");
    add("mutex_contended_2vp", "nth", nth_contended(iters(500000)), "ns/op",
        "{\"threads\":4,\"vps\":2}");
    if (mutex_only)
        return;
    add("barrier", "nth", nth_barrier_bench(8, iters(50000)), "ns/round", "{\"threads\":8,\"vps\":2}");
}

static double glibc_mutex_loop(long n)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
    return (double)(now_ns() - t0) / (double)n;
}

static int idle_stop;
static void *idle_thread(void *p)
{
    (void)p;
    while (!__atomic_load_n(&idle_stop, __ATOMIC_ACQUIRE))
        usleep(1000);
    return NULL;
}

static void run_glibc(void)
{
    long n = iters(5000000);
    /* glibc drops the lock prefix while the process has one thread; a
     * threads library is used with threads, so the compared figure is taken
     * with a second (sleeping) thread alive, the single-threaded one is
     * kept in params. */
    double st = glibc_mutex_loop(n);
    pthread_t idle;
    pthread_create(&idle, NULL, idle_thread, NULL);
    double mt = glibc_mutex_loop(n);
    __atomic_store_n(&idle_stop, 1, __ATOMIC_RELEASE);
    pthread_join(idle, NULL);
    char params[96];
    snprintf(params, sizeof params, "{\"threads_alive\":2,\"single_threaded_ns\":%.1f}", st);
    add("mutex_uncontended", "glibc", mt, "ns/op", params);
    add("condvar_pingpong_1vp", "glibc", glibc_pingpong(0, 0, iters(50000)), "ns/roundtrip",
        "{\"cpus\":1}");
    add("condvar_pingpong_2vp", "glibc", glibc_pingpong(0, 1, iters(50000)), "ns/roundtrip",
        "{\"cpus\":2}");
    add("mutex_contended_2vp", "glibc", glibc_contended(4, iters(500000)), "ns/op",
        "{\"threads\":4,\"cpus\":2}");
    if (mutex_only)
        return;
    add("barrier", "glibc", glibc_barrier(8, iters(5000)), "ns/round", "{\"threads\":8,\"cpus\":2}");
    double p50, p99;
    glibc_lateness(&p50, &p99, quick ? 200 : LAT_SAMPLES);
    add("timedwait_lateness_p50", "glibc", p50, "ns", "{\"delay_ns\":100000}");
    add("timedwait_lateness_p99", "glibc", p99, "ns", "{\"delay_ns\":100000}");
    n = iters(200000);
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++)
        getppid();
    add("blocking_handoff", "glibc", (double)(now_ns() - t0) / (double)n, "ns/op",
        "{\"call\":\"getppid\",\"note\":\"bare call\"}");
}

static const struct result *find(const char *bench, const char *impl)
{
    for (int i = 0; i < nresults; i++)
        if (!strcmp(results[i].bench, bench) && !strcmp(results[i].impl, impl))
            return &results[i];
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--mutex"))
            mutex_only = 1;
        else if (!strcmp(argv[i], "--no-glibc"))
            no_glibc = 1;
        else {
            fprintf(stderr, "usage: %s [--json] [--quick] [--mutex] [--no-glibc]\n", argv[0]);
            return 2;
        }
    }
    hwloc_topology_init(&topo);
    hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_RESTRICT_TO_CPUBINDING);
    hwloc_topology_load(topo);
    in_child(1, child_1vp);
    in_child(1, child_nobias);
    in_child(2, child_2vp);
    if (!no_glibc)
        run_glibc();
    if (json) {
        for (int i = 0; i < nresults; i++)
            printf("{\"bench\":\"%s\",\"impl\":\"%s\",\"value\":%.1f,\"unit\":\"%s\",\"params\":%s}\n",
                   results[i].bench, results[i].impl, results[i].value, results[i].unit,
                   results[i].params);
        return 0;
    }
    static const char *order[] = { "mutex_uncontended", "condvar_pingpong_1vp",
                                   "condvar_pingpong_2vp", "mutex_contended_2vp", "barrier",
                                   "timedwait_lateness_p50", "timedwait_lateness_p99",
                                   "blocking_handoff", "stall_rescue_p50", "stall_rescue_p99" };
    printf("%-24s %14s %14s %-13s %s\n", "bench", "nth", "glibc", "unit", "glibc/nth");
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const struct result *n = find(order[i], "nth"), *g = find(order[i], "glibc");
        if (!n && !g)
            continue;
        char nb[32] = "-", gb[32] = "-", rb[32] = "-";
        if (n)
            snprintf(nb, sizeof nb, "%.1f", n->value);
        if (g)
            snprintf(gb, sizeof gb, "%.1f", g->value);
        if (n && g && n->value > 0)
            snprintf(rb, sizeof rb, "%.2fx", g->value / n->value);
        printf("%-24s %14s %14s %-13s %s\n", order[i], nb, gb, (n ? n : g)->unit, rb);
    }
    const struct result *nb = find("mutex_uncontended", "nth-nobias"),
                        *g = find("mutex_uncontended", "glibc");
    if (nb && g && nb->value > 0)
        printf("%-24s %14.1f %14.1f %-13s %.2fx\n", "mutex_unc.. NTH_MUTEX_BIAS=0", nb->value,
               g->value, nb->unit, g->value / nb->value);
    return 0;
}
