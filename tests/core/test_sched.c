/* Scheduling: yield fairness, errno and FP control state across switches,
 * stealing, nth_wait/nth_to_rq permit races, parking, nth_vps_set_allowed,
 * and the hooks other parts register. */
#include "child.h"
#include "internal.h"
#include <errno.h>
#include <fenv.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
#include <unistd.h>
#include <time.h>

/* ---- yield fairness ------------------------------------------------------- */

enum { FAIR_N = 8, FAIR_K = 200 };
static int fair_log[FAIR_N * FAIR_K];
static int fair_pos;

static void *fair_worker(void *a)
{
    int id = (int)(uintptr_t)a;
    for (int k = 0; k < FAIR_K; k++) {
        fair_log[fair_pos++] = id;
        CHECK_EQ(nth_yield(), 0);
    }
    return NULL;
}

static void c_yield_fairness(void *a)
{
    (void)a;
    /* No stall monitor: under TSan the VP's kernel thread sleeps in the
     * sanitizer's own locks, and a stand-in then ran queued workers beside
     * it, out of the order this case is about (failed once under --tsan). */
    nth_config_t c;
    nth_config_default(&c);
    c.vps = 1;
    c.stall_us = 0;
    CHECK_EQ(nth_init(&c), 0);
    nth_t t[FAIR_N];
    for (int i = 0; i < FAIR_N; i++)
        CHECK_EQ(nth_create(&t[i], NULL, fair_worker, (void *)(uintptr_t)i), 0);
    for (int i = 0; i < FAIR_N; i++)
        CHECK_EQ(nth_join(t[i], NULL), 0);
    CHECK_EQ(fair_pos, FAIR_N * FAIR_K);
    /* One VP, FIFO local queue: every round runs each nano-thread once, in
     * creation order. */
    for (int r = 0; r < FAIR_K; r++)
        for (int i = 0; i < FAIR_N; i++)
            CHECK_EQ(fair_log[r * FAIR_N + i], i);
}

static void test_yield_fairness(void **s) { (void)s; assert_child_ok(c_yield_fairness, NULL); }

static void *yield_alone(void *a)
{
    (void)a;
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(nth_yield(), 0);
    return NULL;
}

static void c_yield_alone(void *a)
{
    (void)a;
    child_init(1);
    /* Nothing else ready: nth_yield returns at once. */
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(nth_yield(), 0);
    nth_t t;
    CHECK_EQ(nth_create(&t, NULL, yield_alone, NULL), 0);
    CHECK_EQ(nth_join(t, NULL), 0);
}

static void test_yield_alone(void **s) { (void)s; assert_child_ok(c_yield_alone, NULL); }

/* ---- creation order --------------------------------------------------------- */

/* A new nano-thread goes to the tail of its creator's local queue. When that
 * queue is empty, nth_create puts it in the queue's head slot (next_local,
 * no queue lock) instead: that must never let it overtake nano-threads
 * already queued behind the slot. */
static char order_log[8];
static int order_pos;

static void *order_leaf(void *a)
{
    order_log[order_pos++] = (char)(uintptr_t)a;
    return NULL;
}

static void *order_first(void *a)
{
    (void)a;
    order_log[order_pos++] = 'A';
    /* The slot is empty (we were just taken from it), but B and main wait
     * in the queue behind it: C goes after them. */
    nth_t c;
    CHECK_EQ(nth_create(&c, NULL, order_leaf, (void *)(uintptr_t)'C'), 0);
    CHECK_EQ(nth_detach(c), 0);
    return NULL;
}

static void c_create_order(void *a)
{
    (void)a;
    child_init(1);
    nth_t x, y;
    CHECK_EQ(nth_create(&x, NULL, order_first, NULL), 0);   /* the empty queue's slot */
    CHECK_EQ(nth_create(&y, NULL, order_leaf, (void *)(uintptr_t)'B'), 0);
    CHECK_EQ(nth_yield(), 0);       /* A, B, then us; C queued behind us */
    CHECK_EQ(order_pos, 2);
    CHECK_EQ(order_log[0], 'A');
    CHECK_EQ(order_log[1], 'B');
    CHECK_EQ(nth_yield(), 0);       /* C */
    CHECK_EQ(order_pos, 3);
    CHECK_EQ(order_log[2], 'C');
    CHECK_EQ(nth_join(x, NULL), 0);
    CHECK_EQ(nth_join(y, NULL), 0);
}

static void test_create_order(void **s) { (void)s; assert_child_ok(c_create_order, NULL); }

/* ---- errno and FP control state ------------------------------------------ */

/* errno's address is that of the kernel thread we run on; read it fresh. */
static __attribute__((noinline)) int get_errno(void) { __asm__ __volatile__("" ::: "memory"); return errno; }
static __attribute__((noinline)) void set_errno(int e) { __asm__ __volatile__("" ::: "memory"); errno = e; }

static void *errno_worker(void *a)
{
    int mine = (int)(uintptr_t)a;
    for (int i = 0; i < 500; i++) {
        set_errno(mine + i);
        nth_yield();
        CHECK_EQ(get_errno(), mine + i);
    }
    return NULL;
}

static void errno_case(unsigned vps)
{
    child_init(vps);
    nth_t t[6];
    for (int i = 0; i < 6; i++)
        CHECK_EQ(nth_create(&t[i], NULL, errno_worker, (void *)(uintptr_t)(1000 * (i + 1))), 0);
    for (int i = 0; i < 6; i++)
        CHECK_EQ(nth_join(t[i], NULL), 0);
}

static void c_errno1(void *a) { (void)a; errno_case(1); }
static void c_errno2(void *a) { (void)a; errno_case(2); }
static void test_errno_one_vp(void **s) { (void)s; assert_child_ok(c_errno1, NULL); }
static void test_errno_two_vps(void **s) { (void)s; assert_child_ok(c_errno2, NULL); }

static const int modes[] = { FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO, FE_TONEAREST };

static double third(void)
{
    volatile double one = 1.0, three = 3.0;
    return one / three;
}

static void *fp_worker(void *a)
{
    int m = modes[(uintptr_t)a];
    CHECK_EQ(fesetround(m), 0);
    double mine = third();
    for (int i = 0; i < 200; i++) {
        nth_yield();
        CHECK_EQ(fegetround(), m);
        CHECK(third() == mine);
#if defined(__x86_64__)
        /* Both units: the SSE rounding field and the x87 control word. */
        unsigned mx = __builtin_ia32_stmxcsr();
        unsigned short cw;
        __asm__ __volatile__("fnstcw %0" : "=m"(cw));
        CHECK_EQ((mx >> 13) & 3, (cw >> 10) & 3);
#endif
    }
    return NULL;
}

static void c_fp(void *a)
{
    (void)a;
    child_init(1);
    nth_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK_EQ(nth_create(&t[i], NULL, fp_worker, (void *)(uintptr_t)i), 0);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(nth_join(t[i], NULL), 0);
    /* A new nano-thread starts with the ABI's default mode. */
    CHECK_EQ(fegetround(), FE_TONEAREST);
}

static void test_fp_control(void **s) { (void)s; assert_child_ok(c_fp, NULL); }

/* An exiting nano-thread's switch saves nothing (nth_ctx_jump on x86-64):
 * the joiner it resumes must still get its own FP control state back. */
static void *fp_exit_upward(void *a)
{
    (void)a;
    CHECK_EQ(fesetround(FE_UPWARD), 0);
    return NULL;
}

static void c_fp_exit(void *a)
{
    (void)a;
    child_init(1);
    CHECK_EQ(fesetround(FE_DOWNWARD), 0);
    for (int i = 0; i < 3; i++) {
        nth_t t;
        CHECK_EQ(nth_create(&t, NULL, fp_exit_upward, NULL), 0);
        CHECK_EQ(nth_join(t, NULL), 0);     /* direct join: resumed by its exit */
        CHECK_EQ(fegetround(), FE_DOWNWARD);
#if defined(__x86_64__)
        unsigned short cw;
        __asm__ __volatile__("fnstcw %0" : "=m"(cw));
        CHECK_EQ((cw >> 10) & 3, 1);        /* x87 round down */
#endif
    }
    CHECK_EQ(fesetround(FE_TONEAREST), 0);
}

static void test_fp_exit(void **s) { (void)s; assert_child_ok(c_fp_exit, NULL); }

/* ---- stealing ------------------------------------------------------------- */

static int ran_on[2];

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Busy (never yields) until both VPs have started one of these, at most
 * 2 s: so a thief cannot drain VP 0's queue before VP 0 gets to run one, on
 * a slow machine or under a sanitizer. */
static void *busy(void *a)
{
    (void)a;
    int vp = nth_vp_id();
    CHECK(vp == 0 || vp == 1);
    __atomic_fetch_add(&ran_on[vp], 1, __ATOMIC_SEQ_CST);
    double t0 = mono_s();
    while ((__atomic_load_n(&ran_on[0], __ATOMIC_SEQ_CST) == 0 ||
            __atomic_load_n(&ran_on[1], __ATOMIC_SEQ_CST) == 0) && mono_s() - t0 < 2)
        nth_cpu_relax();
    return NULL;
}

static void c_steal(void *a)
{
    (void)a;
    /* No stall monitor: a VP whose kernel thread is seen asleep for a
     * moment while its queue is full (seen under ThreadSanitizer, whose
     * runtime sleeps in locks of its own) gets a stand-in, and busy() then
     * runs on neither VP. This case is about stealing only. */
    nth_config_t c;
    nth_config_default(&c);
    c.vps = 2;
    c.stall_us = 0;
    CHECK_EQ(nth_init(&c), 0);
    nth_attr_t attr;
    nth_attr_init(&attr);
    nth_attr_setvp(&attr, 0);
    enum { N = 200 };
    nth_t t[N];
    for (int i = 0; i < N; i++)
        CHECK_EQ(nth_create(&t[i], &attr, busy, NULL), 0);
    for (int i = 0; i < N; i++)
        CHECK_EQ(nth_join(t[i], NULL), 0);
    CHECK_EQ(ran_on[0] + ran_on[1], N);
    CHECK(ran_on[0] > 0);
    CHECK(ran_on[1] > 0);
}

static void test_stealing(void **s) { (void)s; assert_child_ok(c_steal, NULL); }

/* A nano-thread made ready into a running VP's next_local, by a waker that
 * then computes without a scheduling point, is taken by an idle VP after
 * the grace (steal.c), even with NTH_SPIN_US shorter than that grace: the
 * idle VP spins on while its observation waits, rather than park with the
 * nano-thread stuck until the waker's next switch (it would wait forever
 * here). */
static int nl_go, nl_ran, nl_vp;

static void *nl_sleeper(void *a)
{
    (void)a;
    while (!__atomic_load_n(&nl_go, __ATOMIC_ACQUIRE))
        nth_wait();
    __atomic_store_n(&nl_vp, nth_vp_id(), __ATOMIC_RELAXED);
    __atomic_store_n(&nl_ran, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void c_next_local_stuck(void *a)
{
    (void)a;
    nth_config_t c;
    nth_config_default(&c);
    c.vps = 2;
    c.stall_us = 0;          /* no stand-in: stealing alone must do it */
    c.spin_us = 1;           /* shorter than NTH_NEXT_LOCAL_GRACE_NS */
    CHECK_EQ(nth_init(&c), 0);
    for (int round = 0; round < 5; round++) {
        __atomic_store_n(&nl_go, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&nl_ran, 0, __ATOMIC_RELAXED);
        nth_t b;
        CHECK_EQ(nth_create(&b, NULL, nl_sleeper, NULL), 0);
        struct nth_thread *bt = (struct nth_thread *)b;
        /* Until it sleeps, switched out: then our wake-up is a real one. */
        double t0 = mono_s();
        while (((__atomic_load_n(&bt->state, __ATOMIC_ACQUIRE) & NTH_ST_MASK) != NTH_ST_BLOCKED ||
                __atomic_load_n(&bt->on_cpu, __ATOMIC_ACQUIRE)) && mono_s() - t0 < 5)
            nth_yield();                /* (a thief may move us meanwhile) */
        int me = nth_vp_id();
        CHECK(me == 0 || me == 1);
        __atomic_store_n(&nl_go, 1, __ATOMIC_RELEASE);
        CHECK_EQ(nth_to_rq(b), 0);      /* into our VP's next_local: we run */
        t0 = mono_s();
        while (!__atomic_load_n(&nl_ran, __ATOMIC_ACQUIRE) && mono_s() - t0 < 2)
            nth_cpu_relax();            /* no scheduling point */
        CHECK(__atomic_load_n(&nl_ran, __ATOMIC_ACQUIRE));
        CHECK_EQ(__atomic_load_n(&nl_vp, __ATOMIC_RELAXED), 1 - me);
        CHECK_EQ(nth_join(b, NULL), 0);
    }
}

static void test_next_local_stuck(void **s) { (void)s; assert_child_ok(c_next_local_stuck, NULL); }

/* ---- nth_wait / nth_to_rq ---------------------------------------------------- */

enum { RING = 8, ROUNDS = 4000 };
static nth_t ring[RING];
static int token;              /* whose turn */
static int inside[RING];
static long turns[RING];
static int stop_noise;

static void *ring_worker(void *a)
{
    int me = (int)(uintptr_t)a;
    for (int r = 0; r < ROUNDS; r++) {
        while (__atomic_load_n(&token, __ATOMIC_ACQUIRE) != me)
            nth_wait();
        CHECK_EQ(__atomic_exchange_n(&inside[me], 1, __ATOMIC_SEQ_CST), 0);
        __atomic_fetch_add(&turns[me], 1, __ATOMIC_RELAXED);
        __atomic_store_n(&inside[me], 0, __ATOMIC_SEQ_CST);
        int next = (me + 1) % RING;
        __atomic_store_n(&token, next, __ATOMIC_RELEASE);
        CHECK_EQ(nth_to_rq(ring[next]), 0);
    }
    return NULL;
}

/* Spurious nth_to_rq calls: they may only leave permits behind. */
static void *noise(void *a)
{
    (void)a;
    unsigned x = 12345;
    while (!__atomic_load_n(&stop_noise, __ATOMIC_ACQUIRE)) {
        x = x * 1103515245 + 12345;
        CHECK_EQ(nth_to_rq(ring[(x >> 16) % RING]), 0);
        nth_yield();
    }
    return NULL;
}

static void c_permit_race(void *a)
{
    (void)a;
    child_init(2);
    nth_attr_t attr;
    nth_attr_init(&attr);
    /* Alternate VPs so every hand-off crosses kernel threads at first;
     * stealing mixes them further. */
    token = -1;
    for (int i = 0; i < RING; i++) {
        nth_attr_setvp(&attr, i % 2);
        CHECK_EQ(nth_create(&ring[i], &attr, ring_worker, (void *)(uintptr_t)i), 0);
    }
    nth_t n;
    CHECK_EQ(nth_create(&n, NULL, noise, NULL), 0);
    __atomic_store_n(&token, 0, __ATOMIC_RELEASE);
    CHECK_EQ(nth_to_rq(ring[0]), 0);
    /* Reap nobody until every turn is done: nth_to_rq on an exited but
     * unjoined nano-thread is fine, on a joined one it is ESRCH. */
    long done;
    do {
        nth_yield();
        done = 0;
        for (int i = 0; i < RING; i++)
            done += __atomic_load_n(&turns[i], __ATOMIC_RELAXED);
    } while (done < (long)RING * ROUNDS);
    __atomic_store_n(&stop_noise, 1, __ATOMIC_RELEASE);
    CHECK_EQ(nth_join(n, NULL), 0);
    for (int i = 0; i < RING; i++)
        CHECK_EQ(nth_join(ring[i], NULL), 0);
    for (int i = 0; i < RING; i++)
        CHECK_EQ(turns[i], ROUNDS);
}

static void test_permit_race(void **s) { (void)s; assert_child_ok(c_permit_race, NULL); }

/* Pairs of nano-threads on two VPs, each waking the other and then waiting,
 * so VPs keep picking nano-threads the other VP is still switching out. Every
 * round must complete (a lost wake-up or a VP waiting for a context that is
 * never saved hangs, and the child is killed by the timeout). The cross-wait
 * deadlock this pattern can reach was seen under gdb by the tracing work; it
 * does not show here on 2 shared CPUs in a bounded run, so this guards the
 * protocol rather than proving that fix. */
#define CROSS_PAIRS 4
#define CROSS_ROUNDS 20000
static nth_t cross[CROSS_PAIRS][2];
static int cross_done[CROSS_PAIRS][2];
static int cross_finished;     /* after the last wake: partners may be joined */

static void *cross_worker(void *a)
{
    int pair = (int)((uintptr_t)a >> 1), me = (int)((uintptr_t)a & 1);
    nth_t partner;
    while (!(partner = __atomic_load_n(&cross[pair][!me], __ATOMIC_ACQUIRE)))
        nth_yield();                 /* stolen before the partner exists */
    for (int r = 0; r < CROSS_ROUNDS; r++) {
        CHECK_EQ(nth_to_rq(partner), 0);
        if (!__atomic_load_n(&cross_done[pair][!me], __ATOMIC_ACQUIRE))
            nth_wait();
    }
    __atomic_store_n(&cross_done[pair][me], 1, __ATOMIC_RELEASE);
    CHECK_EQ(nth_to_rq(partner), 0);
    __atomic_fetch_add(&cross_finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void c_cross_wake(void *a)
{
    (void)a;
    child_init(2);
    nth_attr_t attr;
    nth_attr_init(&attr);
    for (int p = 0; p < CROSS_PAIRS; p++)
        for (int m = 0; m < 2; m++) {
            nth_attr_setvp(&attr, m);
            nth_t t;
            CHECK_EQ(nth_create(&t, &attr, cross_worker, (void *)(uintptr_t)(p * 2 + m)), 0);
            __atomic_store_n(&cross[p][m], t, __ATOMIC_RELEASE);
        }
    while (__atomic_load_n(&cross_finished, __ATOMIC_ACQUIRE) < 2 * CROSS_PAIRS)
        nth_yield();
    for (int p = 0; p < CROSS_PAIRS; p++)
        for (int m = 0; m < 2; m++)
            CHECK_EQ(nth_join(cross[p][m], NULL), 0);
}

static void test_cross_wake(void **s) { (void)s; assert_child_ok(c_cross_wake, NULL); }

static void *wait_once(void *a)
{
    int *flag = a;
    while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE))
        nth_wait();
    return NULL;
}

static void c_permit_basic(void *a)
{
    (void)a;
    child_init(1);
    /* A permit given to a running nano-thread makes its next wait return. */
    CHECK_EQ(nth_to_rq(nth_self()), 0);
    CHECK_EQ(nth_to_rq(nth_self()), 0);   /* permits do not accumulate */
    nth_wait();                           /* returns at once */
    /* nth_to_rq on a ready nano-thread: no second enqueue. */
    int flag = 0;
    nth_t t;
    CHECK_EQ(nth_create(&t, NULL, wait_once, &flag), 0);
    for (int i = 0; i < 10; i++)
        CHECK_EQ(nth_to_rq(t), 0);
    nth_yield();                          /* t runs, uses its permit, blocks */
    nth_yield();
    __atomic_store_n(&flag, 1, __ATOMIC_RELEASE);
    CHECK_EQ(nth_to_rq(t), 0);
    CHECK_EQ(nth_join(t, NULL), 0);
}

static void test_permit_basic(void **s) { (void)s; assert_child_ok(c_permit_basic, NULL); }

/* ---- one VP: next_local with a plain store ---------------------------------- */

/* With one VP a wake-up stores the woken nano-thread in next_local with a
 * plain store (nth_next_local_plain) when membarrier is there for the
 * monitor's side; with two VPs never (thieves and idle VPs need the
 * exchange's ordering). */
static void c_next_local_plain(void *a)
{
    unsigned vps = (unsigned)(uintptr_t)a;
    child_init(vps);
    long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    int have = q >= 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED);
    CHECK_EQ(__atomic_load_n(&nth_next_local_plain, __ATOMIC_RELAXED), vps == 1 && have);
}

static void test_next_local_plain(void **s)
{
    (void)s;
    assert_child_ok(c_next_local_plain, (void *)(uintptr_t)1);
    assert_child_ok(c_next_local_plain, (void *)(uintptr_t)2);
}

/* ---- the global queue's turn ------------------------------------------------ */

/* One VP whose local queue never empties (busy yielders), and a nano-thread
 * made ready by a kernel thread that is no VP, which puts it on the global
 * queue. It must run within a bounded number of yields: every
 * NTH_GRQ_EVERY-th scheduling point looks at the global queue first. */
enum { GRQ_BUSY = 3, GRQ_MAX_YIELDS = 50 * NTH_GRQ_EVERY };
static int grq_go, grq_ran, grq_stop;
static nth_t grq_target;

static void *grq_waiter(void *a)
{
    (void)a;
    while (!__atomic_load_n(&grq_go, __ATOMIC_ACQUIRE))
        nth_wait();
    __atomic_store_n(&grq_ran, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *grq_busy(void *a)
{
    long *yields = a;
    while (!__atomic_load_n(&grq_stop, __ATOMIC_ACQUIRE)) {
        if (__atomic_load_n(&grq_go, __ATOMIC_ACQUIRE))
            ++*yields;
        CHECK_EQ(nth_yield(), 0);
        if (__atomic_load_n(&grq_ran, __ATOMIC_ACQUIRE) || *yields > GRQ_MAX_YIELDS)
            __atomic_store_n(&grq_stop, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void *grq_waker(void *a)
{
    (void)a;
    __atomic_store_n(&grq_go, 1, __ATOMIC_RELEASE);
    CHECK_EQ(nth_to_rq(grq_target), 0);    /* no VP here: the global queue */
    return NULL;
}

static void c_grq_turn(void *a)
{
    (void)a;
    child_init(1);
    /* The waker must be a kernel thread that is no VP, and must run while
     * VP 0 spins in nth_yield: under the pthread shim it is a nano-thread
     * of the shim's runtime instead, whose one VP is this kernel thread
     * (bound to one CPU above), so it never ran (SIGALRM). */
    if (child_pthread_makes_nano_threads())
        CHILD_SKIP("pthread_create makes nano-threads here (a preloaded pthread shim)");
    CHECK_EQ(nth_create(&grq_target, NULL, grq_waiter, NULL), 0);
    while (__atomic_load_n(&grq_target->state, __ATOMIC_ACQUIRE) != NTH_ST_BLOCKED)
        nth_yield();                        /* until it sleeps, in no queue */
    static long yields[GRQ_BUSY];
    nth_t busy[GRQ_BUSY];
    for (int i = 0; i < GRQ_BUSY; i++)
        CHECK_EQ(nth_create(&busy[i], NULL, grq_busy, &yields[i]), 0);
    nth_yield();                            /* the yielders are running */
    pthread_t k;
    CHECK_EQ(pthread_create(&k, NULL, grq_waker, NULL), 0);
    while (!__atomic_load_n(&grq_go, __ATOMIC_ACQUIRE))
        nth_yield();                        /* never block VP 0 in the kernel */
    while (!__atomic_load_n(&grq_stop, __ATOMIC_ACQUIRE))
        nth_yield();
    CHECK_EQ(pthread_join(k, NULL), 0);
    for (int i = 0; i < GRQ_BUSY; i++)
        CHECK_EQ(nth_join(busy[i], NULL), 0);
    CHECK_EQ(nth_join(grq_target, NULL), 0);
    for (int i = 0; i < GRQ_BUSY; i++)
        CHECK(yields[i] <= GRQ_MAX_YIELDS);
    CHECK_EQ(grq_ran, 1);
}

static void test_grq_turn(void **s) { (void)s; assert_child_ok(c_grq_turn, NULL); }

/* ---- parking ---------------------------------------------------------------- */

static nth_t park_main;

static void *waker(void *a)
{
    (void)a;
    struct timespec ts = { 1, 0 };
    nanosleep(&ts, NULL);
    nth_to_rq(park_main);   /* from a kernel thread that is no VP */
    return NULL;
}

static int park_go;

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void c_park(void *a)
{
    (void)a;
    child_init(2);
    nth_t t[8];
    for (int i = 0; i < 8; i++)
        CHECK_EQ(nth_create(&t[i], NULL, wait_once, &park_go), 0);
    nth_yield();
    park_main = nth_self();
    /* Outside the measured second: whatever a first pthread_create starts
     * (under the pthread shim, a second runtime: hwloc's topology, its VPs)
     * took up to 0.044 of the 0.05 s allowed. */
    /* Under the shim the process holds two idle runtimes (this static test's
     * and the shim's), each with its watchdog: 0.035-0.054 s measured,
     * before and after this stop's changes; each gets the 0.05 s. */
    double limit = child_pthread_makes_nano_threads() ? 0.1 : 0.05;
    pthread_t k;
    double c0 = cpu_s();
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    CHECK_EQ(pthread_create(&k, NULL, waker, NULL), 0);
    do
        nth_wait();                       /* every nano-thread now waits */
    while (clock_gettime(CLOCK_MONOTONIC, &w1), w1.tv_sec - w0.tv_sec < 1 ||
           (w1.tv_sec - w0.tv_sec == 1 && w1.tv_nsec < w0.tv_nsec));
    double used = cpu_s() - c0;
    fprintf(stderr, "park: %.4f s of CPU in 1 s\n", used);
    CHECK(used < limit);
    pthread_join(k, NULL);
    __atomic_store_n(&park_go, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 8; i++) {
        CHECK_EQ(nth_to_rq(t[i]), 0);
        CHECK_EQ(nth_join(t[i], NULL), 0);
    }
}

static void test_park(void **s) { (void)s; assert_child_ok(c_park, NULL); }

/* ---- nth_vps_set_allowed -------------------------------------------------- */

enum { SA_N = 32, SA_R = 3000 };
static long sa_count[SA_N];
static int sa_inside[SA_N];

static void *sa_worker(void *a)
{
    int me = (int)(uintptr_t)a;
    for (int r = 0; r < SA_R; r++) {
        CHECK_EQ(__atomic_exchange_n(&sa_inside[me], 1, __ATOMIC_SEQ_CST), 0);
        sa_count[me]++;
        __atomic_store_n(&sa_inside[me], 0, __ATOMIC_SEQ_CST);
        nth_yield();
    }
    return NULL;
}

/* The kernel's yield and sleep, as the runtime's own are (libc_real.h):
 * under the pthread shim, sched_yield and usleep are nano-thread calls of
 * the shim's libnth.so, whose runtime the first of them starts beside this
 * program's static one, from inside it (VP 1 then did not park within
 * wait_parked's bound in 4 of 6 preloaded runs). */
static void kernel_yield(void)
{
    syscall(SYS_sched_yield);
}

static void kernel_sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    syscall(SYS_nanosleep, &ts, NULL);
}

/* Bounds in seconds, not in iterations: 200000 yields were not enough
 * for VP 1 to park at load 12-30 (test_set_allowed, wait_parked(1, 1),
 * twice, once under TSan), and how long a kernel thread waits for a CPU
 * is the machine's business. Behaviour that is wrong (a VP that never
 * parks, main never moved) still fails, after WAIT_S. */
enum { WAIT_S = 10 }; /* under the child's 30 s alarm (child.h) */

static int wait_parked(int vp, int want)
{
    double t0 = mono_s();
    for (int i = 0; mono_s() - t0 < WAIT_S; i++) {
        if (__atomic_load_n(&nth_rt.vps[vp]->parked, __ATOMIC_ACQUIRE) == want)
            return 1;
        nth_yield();
        if (i > 1000)
            kernel_yield();
    }
    fprintf(stderr, "wait_parked: VP %d parked=%d after %d s, want %d\n", vp,
            __atomic_load_n(&nth_rt.vps[vp]->parked, __ATOMIC_ACQUIRE), (int)WAIT_S, want);
    return 0;
}

/* Yield until the caller runs on VP vp (moved there by the runtime), at
 * most WAIT_S: the move needs the other VP's kernel thread to run. */
static void yield_until_vp(int vp)
{
    double t0 = mono_s();
    for (int i = 0; nth_vp_id() != vp && mono_s() - t0 < WAIT_S; i++) {
        nth_yield();
        if (i > 1000)
            kernel_yield();
    }
}

static void c_set_allowed(void *a)
{
    (void)a;
    child_init(2);
    if (nth_rt.npus < 2) {
        fprintf(stderr, "set_allowed: one CPU only, shrink/grow not exercised\n");
        return;
    }
    /* VP i is not on PU i: VP 0 takes the CPU the process was on at start
     * (no migration), so name the CPUs by the VPs that hold them. */
    if (nth_rt.vps[0]->cpu < 0 || nth_rt.vps[1]->cpu < 0) {
        fprintf(stderr, "set_allowed: VPs not bound, shrink/grow not exercised\n");
        return;
    }
    unsigned cpu0 = (unsigned)nth_rt.vps[0]->cpu;
    unsigned cpu1 = (unsigned)nth_rt.vps[1]->cpu;
    hwloc_bitmap_t only0 = hwloc_bitmap_alloc(), only1 = hwloc_bitmap_alloc(),
                   both = hwloc_bitmap_alloc(), none = hwloc_bitmap_alloc();
    hwloc_bitmap_only(only0, cpu0);
    hwloc_bitmap_only(only1, cpu1);
    hwloc_bitmap_or(both, only0, only1);
    CHECK_EQ(nth_vps_set_allowed(none), EINVAL);

    nth_t t[SA_N];
    for (int i = 0; i < SA_N; i++)
        CHECK_EQ(nth_create(&t[i], NULL, sa_worker, (void *)(uintptr_t)i), 0);
    nth_yield();
    /* Shrink to CPU 0: VP 1 parks, work goes on on VP 0. */
    CHECK_EQ(nth_vps_set_allowed(only0), 0);
    CHECK(wait_parked(1, 1));
    CHECK_EQ(nth_vp_id(), 0);
    long before = 0, after = 0;
    for (int i = 0; i < SA_N; i++) before += sa_count[i];
    for (int i = 0; i < 50; i++) nth_yield();
    for (int i = 0; i < SA_N; i++) after += sa_count[i];
    CHECK(after > before || after == (long)SA_N * SA_R);
    /* Move to CPU 1 only: main (on VP 0) moves to VP 1 at its next yield. */
    CHECK_EQ(nth_vps_set_allowed(only1), 0);
    yield_until_vp(1);
    CHECK_EQ(nth_vp_id(), 1);
    CHECK(wait_parked(0, 1));
    /* Grow back to both. */
    CHECK_EQ(nth_vps_set_allowed(both), 0);
    for (int i = 0; i < SA_N; i++)
        CHECK_EQ(nth_join(t[i], NULL), 0);
    for (int i = 0; i < SA_N; i++)
        CHECK_EQ(sa_count[i], SA_R);
    hwloc_bitmap_free(only0);
    hwloc_bitmap_free(only1);
    hwloc_bitmap_free(both);
    hwloc_bitmap_free(none);
}

static void test_set_allowed(void **s) { (void)s; assert_child_ok(c_set_allowed, NULL); }

/* One VP moved to another CPU: the parked VP is rebound and unparked. */
static void c_set_allowed_rebind(void *a)
{
    (void)a;
    child_init(1);
    if (nth_rt.npus < 2 || nth_rt.vps[0]->cpu < 0)
        return;
    /* "cpu1": the first PU that is not VP 0's (VP 0 starts where the
     * process was, not necessarily on PU 0). */
    unsigned cpu1 = hwloc_get_obj_by_type(nth_rt.topo, HWLOC_OBJ_PU, 0)->os_index;
    if ((int)cpu1 == nth_rt.vps[0]->cpu)
        cpu1 = hwloc_get_obj_by_type(nth_rt.topo, HWLOC_OBJ_PU, 1)->os_index;
    hwloc_bitmap_t only1 = hwloc_bitmap_alloc();
    hwloc_bitmap_only(only1, cpu1);
    nth_t t[SA_N];
    for (int i = 0; i < SA_N; i++)
        CHECK_EQ(nth_create(&t[i], NULL, sa_worker, (void *)(uintptr_t)i), 0);
    CHECK_EQ(nth_vps_set_allowed(only1), 0);
    CHECK_EQ(nth_rt.vps[0]->cpu, (int)cpu1);
    for (int i = 0; i < SA_N; i++)
        CHECK_EQ(nth_join(t[i], NULL), 0);
    for (int i = 0; i < SA_N; i++)
        CHECK_EQ(sa_count[i], SA_R);
    int bound = sched_getcpu();
    /* Binding may be refused in some sandboxes; where it works, it is CPU 1. */
    hwloc_bitmap_t cur = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(nth_rt.topo, cur, HWLOC_CPUBIND_THREAD) == 0 &&
        hwloc_bitmap_weight(cur) == 1)
        CHECK_EQ(bound, (int)cpu1);
    hwloc_bitmap_free(cur);
    hwloc_bitmap_free(only1);
}

static void test_set_allowed_rebind(void **s) { (void)s; assert_child_ok(c_set_allowed_rebind, NULL); }

/* The CPU of the only PU a kernel thread may run on, -1 if several or unknown. */
static int tid_only_cpu(pid_t tid)
{
    cpu_set_t m;
    CPU_ZERO(&m);
    if (sched_getaffinity(tid, sizeof m, &m) != 0 || CPU_COUNT(&m) != 1)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &m))
            return c;
    return -1;
}

/* Bounded reclaim's move, as nthlib/cpumgr_rt.c makes it: VP 0 lost its
 * CPU while its nano-thread ran on, so its kernel thread was bound to the
 * CPUs still ours (CPU 1) and asked to rebind. At its next scheduling
 * point the disabled VP parks; it must stay on CPU 1, not bind itself back
 * onto CPU 0 (no longer ours) to park there. Given a CPU again, it binds
 * to that CPU. */
static void c_reclaimed_vp_stays(void *a)
{
    (void)a;
    child_init(2);
    if (nth_rt.npus < 2 || nth_rt.vps[0]->cpu < 0 || nth_rt.vps[1]->cpu < 0 ||
        !nth_rt.cfg.bind)
        return;
    /* Main runs on VP 0 after init (child_init). */
    if (nth_vp_id() != 0)
        return;
    int cpu0 = nth_rt.vps[0]->cpu, cpu1 = nth_rt.vps[1]->cpu;
    pid_t tid0 = (pid_t)syscall(SYS_gettid);
    if (tid_only_cpu(tid0) != cpu0)
        return; /* binding refused here (a sandbox): nothing to check */
    hwloc_bitmap_t only1 = hwloc_bitmap_alloc(), both = hwloc_bitmap_alloc();
    hwloc_bitmap_only(only1, (unsigned)cpu1);
    hwloc_bitmap_only(both, (unsigned)cpu0);
    hwloc_bitmap_set(both, (unsigned)cpu1);
    CHECK_EQ(nth_vps_set_allowed(only1), 0);
    CHECK(__atomic_load_n(&nth_rt.vps[0]->disabled, __ATOMIC_ACQUIRE));
    /* The watcher's move (reclaim_pass): bind, then ask for a rebind. */
    CHECK_EQ(hwloc_set_cpubind(nth_rt.topo, only1, HWLOC_CPUBIND_THREAD), 0);
    __atomic_store_n(&nth_rt.vps[0]->bound_cpu1, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&nth_rt.vps[0]->rebind, 1, __ATOMIC_RELEASE);
    /* Main leaves VP 0 at this scheduling point; VP 0 parks. */
    yield_until_vp(1);
    CHECK_EQ(nth_vp_id(), 1);
    CHECK(wait_parked(0, 1));
    CHECK_EQ(tid_only_cpu(tid0), cpu1);
    CHECK_EQ(__atomic_load_n(&nth_rt.vps[0]->rebind, __ATOMIC_ACQUIRE), 1);
    /* CPU 0 given back: VP 0 binds there when it wakes. */
    CHECK_EQ(nth_vps_set_allowed(both), 0);
    int bound = 0;
    for (int i = 0; i < 2000 && !bound; i++) {
        bound = tid_only_cpu(tid0) == cpu0;
        if (!bound) {
            nth_yield();
            kernel_sleep_ms(1);
        }
    }
    CHECK(bound);
    hwloc_bitmap_free(only1);
    hwloc_bitmap_free(both);
}

static void test_reclaimed_vp_stays(void **s) { (void)s; assert_child_ok(c_reclaimed_vp_stays, NULL); }

/* ---- hooks ---------------------------------------------------------------- */

static int hook_calls[NTH_SP_IDLE + 1];
static uint64_t exited_id;
static int64_t idle_timeout_calls;

static void count_hook(struct nth_vp *vp, int where)
{
    CHECK(vp != NULL);
    CHECK(where >= NTH_SP_YIELD && where <= NTH_SP_IDLE);
    __atomic_fetch_add(&hook_calls[where], 1, __ATOMIC_RELAXED);
}

static void exit_hook(struct nth_thread *t)
{
    __atomic_store_n(&exited_id, t->id, __ATOMIC_SEQ_CST);
}

static int64_t one_ms(struct nth_vp *vp)
{
    (void)vp;
    __atomic_fetch_add(&idle_timeout_calls, 1, __ATOMIC_RELAXED);
    return 1000000;
}

static nth_t hook_main;

/* Wakes main once the idle loop has parked with the hook's timeout ten
 * times (or after 5 s, and then the test fails). */
static void *wake_after_idle_turns(void *a)
{
    (void)a;
    for (int i = 0; i < 5000 && __atomic_load_n(&idle_timeout_calls, __ATOMIC_RELAXED) < 10; i++) {
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    nth_to_rq(hook_main);
    return NULL;
}

static void *noop(void *a) { return a; }

static void c_hooks(void *a)
{
    (void)a;
    child_init(1);
    CHECK_EQ(nth_sched_hook_add(NULL), EINVAL);
    CHECK_EQ(nth_sched_hook_add(count_hook), 0);
    CHECK_EQ(nth_exit_hook_add(exit_hook), 0);
    nth_idle_timeout_set(one_ms);
    nth_t t;
    CHECK_EQ(nth_create(&t, NULL, noop, NULL), 0);
    uint64_t id = nth_id(t);
    CHECK_EQ(nth_join(t, NULL), 0);
    CHECK_EQ(exited_id, id);                 /* before the joiner woke */
    CHECK(hook_calls[NTH_SP_EXIT] >= 1);
    CHECK(hook_calls[NTH_SP_WAIT] >= 1);
    int y = hook_calls[NTH_SP_YIELD];
    nth_yield();
    CHECK_EQ(hook_calls[NTH_SP_YIELD], y + 1);
    /* All nano-threads blocked: the idle loop parks at most 1 ms at a time,
     * as the timeout hook asks, and runs the hooks at each turn. */
    hook_main = nth_self();
    pthread_t k;
    CHECK_EQ(pthread_create(&k, NULL, wake_after_idle_turns, NULL), 0);
    int idle0 = __atomic_load_n(&hook_calls[NTH_SP_IDLE], __ATOMIC_RELAXED);
    while (__atomic_load_n(&idle_timeout_calls, __ATOMIC_RELAXED) < 10)
        nth_wait();                          /* re-check: permits may be stale */
    pthread_join(k, NULL);
    CHECK(__atomic_load_n(&idle_timeout_calls, __ATOMIC_RELAXED) >= 10);
    CHECK(__atomic_load_n(&hook_calls[NTH_SP_IDLE], __ATOMIC_RELAXED) - idle0 >= 10);
    CHECK_EQ(nth_sched_hook_remove(count_hook), 0);
    CHECK_EQ(nth_sched_hook_remove(count_hook), ESRCH);
    nth_idle_timeout_set(NULL);
    for (int i = 0; i < NTH_HOOKS_MAX; i++)
        CHECK_EQ(nth_sched_hook_add(count_hook), 0);
    CHECK_EQ(nth_sched_hook_add(count_hook), ENOSPC);
    CHECK_EQ(nth_vp_handoff(nth_rt.vps[0]), ENOSYS);
}

static void test_hooks(void **s) { (void)s; assert_child_ok(c_hooks, NULL); }

/* ---- fork: the child gets the process's CPU mask back ---------------------- */

/* A child of fork() copies the forking VP's kernel thread, bound to one CPU;
 * through exec it would keep that one CPU (`sh -c 'xz -T4'` from a program
 * on nthlib ran on one CPU). The child must have the mask the process had
 * before nthlib bound its VPs. */
/* The calling kernel thread's own mask, 0 on success: the system call,
 * since under the pthread shim sched_getaffinity(0) reports the process's
 * mask (pthread-shim/cpumask.c), not the VP's binding this test is about. */
static int kernel_mask(cpu_set_t *set)
{
    CPU_ZERO(set);
    return syscall(SYS_sched_getaffinity, 0, sizeof *set, set) > 0 ? 0 : -1;
}

static void c_fork_mask(void *a)
{
    (void)a;
    cpu_set_t before, in_child;
    CHECK_EQ(sched_getaffinity(0, sizeof before, &before), 0);
    child_init(2);
    if (CPU_COUNT(&before) < 2 || nth_rt.vps[0]->cpu < 0) {
        fprintf(stderr, "fork_mask: one CPU or unbound VPs, not exercised\n");
        return;
    }
    cpu_set_t now;
    CHECK_EQ(kernel_mask(&now), 0);
    CHECK_EQ(CPU_COUNT(&now), 1);               /* VP 0 is bound: the premise */
    int p[2];
    CHECK_EQ(pipe(p), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int ok = kernel_mask(&in_child) == 0;
        (void)!write(p[1], &in_child, sizeof in_child);
        _exit(ok ? 0 : 1);
    }
    CHECK_EQ((int)read(p[0], &in_child, sizeof in_child), (int)sizeof in_child);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(CPU_EQUAL(&before, &in_child));
    close(p[0]);
    close(p[1]);
}

static void test_fork_mask(void **s) { (void)s; assert_child_ok(c_fork_mask, NULL); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yield_fairness),
        cmocka_unit_test(test_yield_alone),
        cmocka_unit_test(test_create_order),
        cmocka_unit_test(test_errno_one_vp),
        cmocka_unit_test(test_errno_two_vps),
        cmocka_unit_test(test_fp_control),
        cmocka_unit_test(test_fp_exit),
        cmocka_unit_test(test_stealing),
        cmocka_unit_test(test_next_local_stuck),
        cmocka_unit_test(test_permit_basic),
        cmocka_unit_test(test_permit_race),
        cmocka_unit_test(test_cross_wake),
        cmocka_unit_test(test_grq_turn),
        cmocka_unit_test(test_next_local_plain),
        cmocka_unit_test(test_park),
        cmocka_unit_test(test_set_allowed),
        cmocka_unit_test(test_set_allowed_rebind),
        cmocka_unit_test(test_reclaimed_vp_stays),
        cmocka_unit_test(test_hooks),
        cmocka_unit_test(test_fork_mask),
    };
    child_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
