/*
 * test_sync.c -- semantics, error codes and bounded stress of the
 * synchronisation objects, timed waits and sleeping. Uses only nth.h, so
 * it runs both on the real runtime and on mock_core.c (kernel threads as
 * nano-threads, NTH_TEST_MOCK), which has fewer threads to spare.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "nth.h"
#include "child.h"


/* Every case runs in a forked child that starts its own runtime: cmocka
 * keeps its state in __thread variables and longjmps on failure, which
 * breaks once main's nano-thread resumes on another VP's kernel thread.
 * Inside the child, a failed T_* check prints the condition and exits 99;
 * the cmocka parent asserts on the exit status. */
#define T_PEQ(a, b) do { const void *_a = (a), *_b = (b); \
        if (_a != _b) T_FAIL("%s == %p, expected %p", #a, _a, _b); } while (0)

/* fn in a child (tests/core/child.h: its alarm is 8 times longer under
 * the sanitizers, where the stress cases -- 3000 rounds of the
 * interruptible wait, the barrier and rwlock stress -- take most of 30 s
 * under ThreadSanitizer on 2 loaded cores; a deadlock still ends in the
 * alarm); the failure names fn. */
#define run_case(fn, timeout_s) assert_child_ok_within(fn, NULL, timeout_s, "deadlock?")

#ifdef NTH_TEST_MOCK
#define STRESS_N 64
#else
#define STRESS_N 1000
#endif

_Static_assert(sizeof(nth_mutex_t) <= sizeof(pthread_mutex_t), "mutex fits glibc");
_Static_assert(sizeof(nth_cond_t) <= sizeof(pthread_cond_t), "cond fits glibc");
_Static_assert(sizeof(nth_rwlock_t) <= sizeof(pthread_rwlock_t), "rwlock fits glibc");
_Static_assert(sizeof(nth_barrier_t) <= sizeof(pthread_barrier_t), "barrier fits glibc");
_Static_assert(sizeof(nth_sem_t) <= sizeof(sem_t), "sem fits glibc");
_Static_assert(sizeof(nth_once_t) == sizeof(pthread_once_t), "once fits glibc");

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct timespec in_ns(clockid_t clock, uint64_t ns)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + ns;
    ts.tv_sec = (time_t)(t / 1000000000u);
    ts.tv_nsec = (long)(t % 1000000000u);
    return ts;
}

static int ts_passed(clockid_t clock, const struct timespec *d)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return now.tv_sec > d->tv_sec || (now.tv_sec == d->tv_sec && now.tv_nsec >= d->tv_nsec);
}

static nth_t spawn(void *(*fn)(void *), void *arg)
{
    nth_t t;
    T_EQ(nth_create(&t, NULL, fn, arg), 0);
    return t;
}

static void *join(nth_t t)
{
    void *r;
    T_EQ(nth_join(t, &r), 0);
    return r;
}

/* ---- mutex ------------------------------------------------------------ */

static nth_mutex_t gm;

static void *try_then_ret(void *p)
{
    return (void *)(intptr_t)nth_mutex_trylock(p);
}

static void *unlock_ret(void *p)
{
    return (void *)(intptr_t)nth_mutex_unlock(p);
}

static void test_mutex_basic(void *st)
{
    (void)st;
    nth_mutex_t z;
    memset(&z, 0, sizeof z);       /* all-zero = NTH_MUTEX_INITIALIZER */
    T_EQ(nth_mutex_lock(&z), 0);
    T_EQ(nth_mutex_destroy(&z), EBUSY);
    T_EQ((intptr_t)join(spawn(try_then_ret, &z)), EBUSY);
    T_EQ(nth_mutex_unlock(&z), 0);
    T_EQ(nth_mutex_trylock(&z), 0);
    T_EQ(nth_mutex_unlock(&z), 0);
    T_EQ(nth_mutex_destroy(&z), 0);

    nth_mutexattr_t a;
    T_EQ(nth_mutexattr_init(&a), 0);
    T_EQ(nth_mutexattr_settype(&a, 7), EINVAL);
    T_EQ(nth_mutexattr_settype(&a, -1), EINVAL);
    a.__type = 9;
    T_EQ(nth_mutex_init(&z, &a), EINVAL);
    T_EQ(nth_mutex_init(NULL, NULL), EINVAL);
}

static void test_mutex_errorcheck(void *st)
{
    (void)st;
    nth_mutexattr_t a;
    nth_mutex_t m;
    nth_mutexattr_init(&a);
    T_EQ(nth_mutexattr_settype(&a, NTH_MUTEX_ERRORCHECK), 0);
    int ty;
    T_EQ(nth_mutexattr_gettype(&a, &ty), 0);
    T_EQ(ty, NTH_MUTEX_ERRORCHECK);
    T_EQ(nth_mutex_init(&m, &a), 0);
    T_EQ(nth_mutex_unlock(&m), EPERM);     /* not locked */
    T_EQ(nth_mutex_lock(&m), 0);
    T_EQ(nth_mutex_lock(&m), EDEADLK);
    T_EQ(nth_mutex_trylock(&m), EBUSY);
    T_EQ((intptr_t)join(spawn(unlock_ret, &m)), EPERM);
    T_EQ(nth_mutex_unlock(&m), 0);
    T_EQ(nth_mutex_destroy(&m), 0);
}

static void test_mutex_recursive(void *st)
{
    (void)st;
    nth_mutexattr_t a;
    nth_mutex_t m;
    nth_mutexattr_init(&a);
    nth_mutexattr_settype(&a, NTH_MUTEX_RECURSIVE);
    T_EQ(nth_mutex_init(&m, &a), 0);
    T_EQ(nth_mutex_lock(&m), 0);
    T_EQ(nth_mutex_lock(&m), 0);
    T_EQ(nth_mutex_trylock(&m), 0);
    T_EQ((intptr_t)join(spawn(unlock_ret, &m)), EPERM);
    T_EQ((intptr_t)join(spawn(try_then_ret, &m)), EBUSY);
    for (int i = 0; i < 3; i++)
        T_EQ(nth_mutex_unlock(&m), 0);
    T_EQ(nth_mutex_unlock(&m), EPERM);
    T_EQ((intptr_t)join(spawn(try_then_ret, &m)), 0); /* the child exits holding it */
    T_EQ(nth_mutex_destroy(&m), EBUSY);
}

static void *hold_then_release(void *p)
{
    nth_mutex_t *m = p;
    nth_mutex_lock(m);
    nth_sleep_ns(60 * 1000 * 1000);
    nth_mutex_unlock(m);
    return NULL;
}

static void test_mutex_timedlock(void *st)
{
    (void)st;
    nth_mutex_t m = NTH_MUTEX_INITIALIZER;
    struct timespec bad = { 0, 1000000000L }, past = { 1, 0 };
    /* Free mutex: the deadline is not even looked at. */
    T_EQ(nth_mutex_timedlock(&m, &past), 0);
    T_EQ(nth_mutex_timedlock(&m, &bad), EINVAL);
    bad.tv_nsec = -1;
    T_EQ(nth_mutex_timedlock(&m, &bad), EINVAL);
    T_EQ(nth_mutex_timedlock(&m, &past), ETIMEDOUT);
    T_EQ(nth_mutex_clocklock(&m, 12345, &past), EINVAL);
    nth_mutex_unlock(&m);

    nth_t h = spawn(hold_then_release, &m);
    while (nth_mutex_trylock(&m) == 0) {  /* wait until the child holds it */
        nth_mutex_unlock(&m);
        nth_yield();
    }
    struct timespec d = in_ns(CLOCK_REALTIME, 10 * 1000 * 1000);
    T_EQ(nth_mutex_timedlock(&m, &d), ETIMEDOUT);
    T_TRUE(ts_passed(CLOCK_REALTIME, &d));    /* never early */
    d = in_ns(CLOCK_MONOTONIC, 5ull * 1000 * 1000 * 1000);
    T_EQ(nth_mutex_clocklock(&m, CLOCK_MONOTONIC, &d), 0); /* gets it on release */
    nth_mutex_unlock(&m);
    join(h);
}

static long counter;
enum { ROUNDS = 200 };
/* Where the workers publish counter for a progress watcher (NULL: none). */
static long *progress;

static void publish_progress(void)
{
    if (progress)
        __atomic_store_n(progress, counter, __ATOMIC_RELAXED);
}

/* A hang is no progress, not a long run: fork a watcher process that
 * reads *progress every 100 ms and, when it has not moved for quiet_s
 * seconds (scaled as run_child's alarm), says so and ends the case with
 * SIGALRM, the verdict of a child's alarm. A process, not a thread: under
 * the pthread shim a thread would be a nano-thread, starved by the very
 * stall it is to see. Raw system calls, so that neither the shim nor a
 * runtime is involved. Returns the watcher's pid (end it with
 * stop_progress_watch). */
static pid_t start_progress_watch(unsigned quiet_s)
{
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    quiet_s *= 8;
#endif
    const char *k = getenv("NTH_TEST_TIMEOUT_SCALE");
    if (k && atoi(k) > 0)
        quiet_s *= (unsigned)atoi(k);
    progress = mmap(NULL, sizeof *progress, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    T_TRUE(progress != MAP_FAILED);
    *progress = 0;
    pid_t parent = getpid();
    pid_t w = (pid_t)syscall(SYS_fork);
    T_TRUE(w >= 0);
    if (w > 0)
        return w;
    long last = -1;
    unsigned still = 0;               /* polls without progress */
    for (;;) {
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
        if (getppid() != parent)
            _exit(0);
        long now = __atomic_load_n(progress, __ATOMIC_RELAXED);
        still = now == last ? still + 1 : 0;
        last = now;
        if (still >= quiet_s * 10) {
            char msg[96];
            int n = snprintf(msg, sizeof msg, "no critical section for %u s (counter %ld): a hang\n",
                             quiet_s, now);
            syscall(SYS_write, 2, msg, (size_t)n);
            syscall(SYS_kill, parent, SIGALRM);
            _exit(0);
        }
    }
}

static void stop_progress_watch(pid_t w)
{
    kill(w, SIGKILL);
    while (waitpid(w, NULL, 0) < 0 && errno == EINTR)
        ;
    munmap(progress, sizeof *progress);
    progress = NULL;
}

static void *count_worker(void *p)
{
    nth_mutex_t *m = p;
    for (int i = 0; i < ROUNDS; i++) {
        T_EQ(nth_mutex_lock(m), 0);
        long c = counter;
        if (i % 7 == 0)
            nth_yield();               /* hold it across a switch */
        counter = c + 1;
        publish_progress();
        T_EQ(nth_mutex_unlock(m), 0);
    }
    return NULL;
}

static void *count_worker_timed(void *p)
{
    nth_mutex_t *m = p;
    int got = 0;
    while (got < ROUNDS) {
        struct timespec d = in_ns(CLOCK_MONOTONIC, (uint64_t)(rand() % 50) * 1000);
        int e = nth_mutex_clocklock(m, CLOCK_MONOTONIC, &d);
        if (e == ETIMEDOUT)
            continue;
        T_EQ(e, 0);
        counter++;
        publish_progress();
        got++;
        nth_mutex_unlock(m);
    }
    return NULL;
}

static void mutex_stress(int with_timed)
{
    static nth_t t[STRESS_N];
    static nth_mutex_t m = NTH_MUTEX_INITIALIZER;  /* static: visible to a debugger */
    counter = 0;
    for (int i = 0; i < STRESS_N; i++)
        t[i] = spawn(with_timed && i % 4 == 3 ? count_worker_timed : count_worker, &m);
    for (int i = 0; i < STRESS_N; i++)
        join(t[i]);
    T_EQ(counter, (long)STRESS_N * ROUNDS);
    T_EQ(nth_mutex_destroy(&m), 0);
}

static void test_mutex_stress(void *st)
{
    (void)st;
    mutex_stress(0);
}

/* A quarter of the nano-threads retry timed locks with 0-50 us deadlines.
 * Regression test for issue 3's "hang", a convoy rather than a lost
 * wake-up: unlock used to hand the mutex to the first waiter, which then
 * had to reach the head of a ready queue full of these retry loops before
 * anyone could lock again (about 1000 locks/s, the counter still rising
 * under gdb). Unlock now frees the mutex and wakes the first waiter.
 * And for issue 4's 30 s alarm: a worker that yields holding the mutex
 * waited in a ready queue that never ran while alarm wake-ups took the
 * next_local slot at every switch (case_test_mutex_alarm_wakes_queue_fairly
 * below). What is left is slowness, not a hang: on a machine at load 25-33
 * (other suites on its 2 vCPUs) the same workload, with critical sections
 * timestamped, still took 1-50 s, its longest gap without one 2.1 s,
 * because the worker that yielded holding the mutex waits behind 100-200
 * nano-threads of its VP's queue while that VP's kernel thread gets a
 * sliver of a CPU. So a hang is what the case fails on: no critical
 * section for 20 s (a watcher process); the child's alarm, 300 s, only
 * bounds a run that crawls. */
static void test_mutex_stress_timed(void *st)
{
    (void)st;
    pid_t w = start_progress_watch(20);
    mutex_stress(1);
    stop_progress_watch(w);
}

#ifndef NTH_TEST_MOCK
/* The cause of that case's rare 30 s alarm (issue 4, under the pthread
 * shim and natively alike): alarm wake-ups jumped the ready queue. A
 * timed waiter's alarm, fired at a scheduling point, made it ready in
 * the VP's next_local slot (Go's runnext: run next, before the local
 * queue). A nano-thread that yields holding the mutex waits in that
 * queue; while any timed waiter's alarm was due at each switch -- the
 * stress case's 250 retry loops with 0-50 us deadlines, or here two
 * nano-threads that each block only once the other's deadline has
 * passed -- next_local was never empty, the queue never ran, and the
 * holder never came back to unlock (gdb in a stalled run: mutex state 2,
 * its owner a yielder in VP 1's queue, both VPs cycling timed waiters;
 * gaps of 1-3.4 s without a critical section, runs of 30-45 s).
 * Counted, not timed: on one VP the holder must be back within a few
 * rounds of the pair; without the fix it waits until both finish all
 * theirs. */
enum { PAIR_ROUNDS = 1000, PAIR_DEADLINE_NS = 50 * 1000 };
static nth_mutex_t pair_m;
static int pair_go;
static long pair_rounds;            /* rounds of both, so far */
static uint64_t pair_deadline[2];   /* each one's last deadline, CLOCK_MONOTONIC ns */
static int holder_back;

static void *pair_timed(void *p)
{
    int me = (int)(intptr_t)p;
    while (!__atomic_load_n(&pair_go, __ATOMIC_ACQUIRE))
        nth_yield();
    for (int i = 0; i < PAIR_ROUNDS && !__atomic_load_n(&holder_back, __ATOMIC_ACQUIRE); i++) {
        /* Block only once the other's alarm is due: the switch away from
         * us then fires it (a condition on the clock, no timed check). */
        uint64_t other = __atomic_load_n(&pair_deadline[1 - me], __ATOMIC_ACQUIRE);
        while (mono_ns() < other)
            ;
        uint64_t d = mono_ns() + PAIR_DEADLINE_NS;
        __atomic_store_n(&pair_deadline[me], d, __ATOMIC_RELEASE);
        struct timespec ts = { (time_t)(d / 1000000000u), (long)(d % 1000000000u) };
        int e = nth_mutex_clocklock(&pair_m, CLOCK_MONOTONIC, &ts);
        __atomic_fetch_add(&pair_rounds, 1, __ATOMIC_RELAXED);
        if (e == 0) {                 /* the holder is back and let go */
            nth_mutex_unlock(&pair_m);
            break;
        }
        T_EQ(e, ETIMEDOUT);
    }
    return NULL;
}

static void test_mutex_alarm_wakes_queue_fairly(void *st)
{
    (void)st;
    /* One VP, no thief to rescue the holder; no stall watchdog, whose
     * backstop fires the alarms of a VP preempted for 2 ms (a busy wait on
     * a loaded machine) from a kernel thread that is no VP, which queues
     * them globally and so lets the holder run without the fix too. */
    nth_config_t cfg = child_config_alone(1);
    cfg.stall_us = 0;
    T_EQ(nth_init(&cfg), 0);
    T_EQ(nth_num_vps(), 1);
    nth_mutex_init(&pair_m, NULL);
    nth_t a = spawn(pair_timed, (void *)0), b = spawn(pair_timed, (void *)1);
    T_EQ(nth_mutex_lock(&pair_m), 0);
    __atomic_store_n(&pair_go, 1, __ATOMIC_RELEASE);
    nth_yield();                      /* holding it, behind the pair */
    long seen = __atomic_load_n(&pair_rounds, __ATOMIC_RELAXED);
    __atomic_store_n(&holder_back, 1, __ATOMIC_RELEASE);
    nth_mutex_unlock(&pair_m);
    join(a);
    join(b);
    /* Alarm wake-ups queued FIFO: back as soon as the pair has blocked
     * once each (0 rounds in 10 of 10 runs). In next_local: back only
     * when the pair is done, after 2 * PAIR_ROUNDS - 1 (8 of 8 runs). */
    if (seen >= 10)
        T_FAIL("the holder came back after %ld timed-out rounds (of %d)", seen,
               2 * PAIR_ROUNDS);
}
#endif

/* ---- condition variable ------------------------------------------------ */

static nth_cond_t gc;
static int ready_flag;

static void *cond_waiter(void *p)
{
    (void)p;
    nth_mutex_lock(&gm);
    while (!ready_flag)
        T_EQ(nth_cond_wait(&gc, &gm), 0);
    nth_mutex_unlock(&gm);
    return NULL;
}

static void test_cond_broadcast(void *st)
{
    (void)st;
    enum { N = 16 };
    nth_t t[N];
    nth_mutex_init(&gm, NULL);
    nth_cond_init(&gc, NULL);
    ready_flag = 0;
    for (int i = 0; i < N; i++)
        t[i] = spawn(cond_waiter, NULL);
    for (;;) {               /* wait until someone waits, then check EBUSY */
        int e = nth_cond_destroy(&gc);
        if (e == EBUSY)
            break;
        T_EQ(e, 0);
        nth_yield();
    }
    nth_mutex_lock(&gm);
    ready_flag = 1;
    nth_cond_broadcast(&gc);
    nth_mutex_unlock(&gm);
    for (int i = 0; i < N; i++)
        join(t[i]);
    T_EQ(nth_cond_destroy(&gc), 0);
}

static void test_cond_timedwait(void *st)
{
    (void)st;
    nth_cond_t c = NTH_COND_INITIALIZER;
    nth_mutex_t m = NTH_MUTEX_INITIALIZER;
    struct timespec bad = { 0, 1000000000L }, past = { 0, 0 };
    nth_mutex_lock(&m);
    T_EQ(nth_cond_timedwait(&c, &m, &bad), EINVAL);
    uint64_t t0 = mono_ns();
    T_EQ(nth_cond_timedwait(&c, &m, &past), ETIMEDOUT);
    T_TRUE(mono_ns() - t0 < 1000000000u);  /* at once, not after a long wait */
    T_EQ(nth_cond_clockwait(&c, &m, 999, &past), EINVAL);
    struct timespec d = in_ns(CLOCK_REALTIME, 5 * 1000 * 1000);
    T_EQ(nth_cond_timedwait(&c, &m, &d), ETIMEDOUT);
    T_TRUE(ts_passed(CLOCK_REALTIME, &d));
    T_EQ(nth_mutex_trylock(&m), EBUSY); /* relocked on return */
    nth_mutex_unlock(&m);

    /* Error-checking mutex not held: EPERM, and the condvar stays clean. */
    nth_mutexattr_t a;
    nth_mutexattr_init(&a);
    nth_mutexattr_settype(&a, NTH_MUTEX_ERRORCHECK);
    nth_mutex_t em;
    nth_mutex_init(&em, &a);
    T_EQ(nth_cond_wait(&c, &em), EPERM);
    T_EQ(nth_cond_destroy(&c), 0);
}

static void test_cond_monotonic(void *st)
{
    (void)st;
    /* A CLOCK_MONOTONIC deadline 30 ms ahead is long past when read as
     * wall-clock time: the wait lasting >= 30 ms shows the condvar counts
     * on the monotonic clock, which wall-clock changes do not move. */
    nth_condattr_t ca;
    nth_cond_t c;
    nth_mutex_t m = NTH_MUTEX_INITIALIZER;
    T_EQ(nth_condattr_init(&ca), 0);
    T_EQ(nth_condattr_setclock(&ca, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
    T_EQ(nth_condattr_setclock(&ca, CLOCK_MONOTONIC), 0);
    clockid_t ck;
    nth_condattr_getclock(&ca, &ck);
    T_EQ(ck, CLOCK_MONOTONIC);
    T_EQ(nth_cond_init(&c, &ca), 0);
    nth_mutex_lock(&m);
    uint64_t t0 = mono_ns();
    struct timespec d = in_ns(CLOCK_MONOTONIC, 30 * 1000 * 1000);
    T_EQ(nth_cond_timedwait(&c, &m, &d), ETIMEDOUT);
    T_TRUE(ts_passed(CLOCK_MONOTONIC, &d));
    T_TRUE(mono_ns() - t0 >= 30 * 1000 * 1000);
    nth_mutex_unlock(&m);
}

/* nth_cond_wait_interruptible: a flag set before the wait returns EINTR
 * with the mutex still held; then many rounds of an interrupter that sets
 * the flag and broadcasts WITHOUT the waiter's mutex, at a random moment
 * around the waiter's queueing. A lost broadcast leaves the waiter asleep
 * forever: the join never returns and the case's alarm fails it. */
static nth_mutex_t im = NTH_MUTEX_INITIALIZER;
static nth_cond_t ic = NTH_COND_INITIALIZER;
static int istop;

static void *interruptible_waiter(void *a)
{
    (void)a;
    nth_mutex_lock(&im);
    while (!__atomic_load_n(&istop, __ATOMIC_SEQ_CST)) {
        int r = nth_cond_wait_interruptible(&ic, &im, &istop);
        T_TRUE(r == 0 || r == EINTR);
    }
    nth_mutex_unlock(&im);
    return NULL;
}

static void test_cond_interruptible(void *st)
{
    (void)st;
    T_EQ(nth_cond_wait_interruptible(&ic, &im, NULL), EINVAL);
    int stop = 1;
    nth_mutex_lock(&im);
    T_EQ(nth_cond_wait_interruptible(&ic, &im, &stop), EINTR);
    T_EQ(nth_mutex_trylock(&im), EBUSY);          /* still ours */
    nth_mutex_unlock(&im);
    unsigned x = 2463534242u;
    for (int round = 0; round < 3000; round++) {
        __atomic_store_n(&istop, 0, __ATOMIC_SEQ_CST);
        nth_t w;
        T_EQ(nth_create(&w, NULL, interruptible_waiter, NULL), 0);
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        for (unsigned k = x % 4; k > 0; k--)
            nth_yield();
        for (unsigned k = (x >> 8) % 200; k > 0; k--)
            __asm__ __volatile__("" ::: "memory");   /* a short, random delay */
        /* The interrupter's store-then-fence (nth_cond_wait_interruptible):
         * a seq_cst exchange is both (GCC's ThreadSanitizer rejects fences). */
        (void)__atomic_exchange_n(&istop, 1, __ATOMIC_SEQ_CST);
        T_EQ(nth_cond_broadcast(&ic), 0);
        T_EQ(nth_join(w, NULL), 0);
    }
}

/* nth_cond_clockwait_interruptible: as above with a deadline (60 s, far
 * beyond the case's alarm, so only the interrupter ends the waits): the
 * errors, EINTR for a flag set before, ETIMEDOUT once the deadline
 * passed (mutex held either way), then rounds of an interrupter at a
 * random moment. Without the interruptible timed wait, the pthread
 * shim's cancel of a timed wait waited for the waiter's own next
 * wake-up (tests/cpumgr/dormant_cancel.sh). */
static void *interruptible_timed_waiter(void *a)
{
    (void)a;
    struct timespec d = in_ns(CLOCK_MONOTONIC, 60ULL * 1000 * 1000 * 1000);
    nth_mutex_lock(&im);
    while (!__atomic_load_n(&istop, __ATOMIC_SEQ_CST)) {
        int r = nth_cond_clockwait_interruptible(&ic, &im, CLOCK_MONOTONIC, &d, &istop);
        T_TRUE(r == 0 || r == EINTR);
    }
    nth_mutex_unlock(&im);
    return NULL;
}

static void test_cond_clockwait_interruptible(void *st)
{
    (void)st;
    int stop = 1;
    struct timespec far = in_ns(CLOCK_MONOTONIC, 60ULL * 1000 * 1000 * 1000);
    T_EQ(nth_cond_clockwait_interruptible(&ic, &im, CLOCK_MONOTONIC, &far, NULL), EINVAL);
    T_EQ(nth_cond_clockwait_interruptible(&ic, &im, CLOCK_MONOTONIC, NULL, &stop), EINVAL);
    T_EQ(nth_cond_clockwait_interruptible(&ic, &im, CLOCK_PROCESS_CPUTIME_ID, &far, &stop), EINVAL);
    nth_mutex_lock(&im);
    T_EQ(nth_cond_clockwait_interruptible(&ic, &im, CLOCK_MONOTONIC, &far, &stop), EINTR);
    T_EQ(nth_mutex_trylock(&im), EBUSY);          /* still ours */
    stop = 0;
    struct timespec soon = in_ns(CLOCK_MONOTONIC, 1000 * 1000);
    T_EQ(nth_cond_clockwait_interruptible(&ic, &im, CLOCK_MONOTONIC, &soon, &stop), ETIMEDOUT);
    T_EQ(nth_mutex_trylock(&im), EBUSY);
    nth_mutex_unlock(&im);
    unsigned x = 88675123u;
    for (int round = 0; round < 1000; round++) {
        __atomic_store_n(&istop, 0, __ATOMIC_SEQ_CST);
        nth_t w;
        T_EQ(nth_create(&w, NULL, interruptible_timed_waiter, NULL), 0);
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        for (unsigned k = x % 4; k > 0; k--)
            nth_yield();
        for (unsigned k = (x >> 8) % 200; k > 0; k--)
            __asm__ __volatile__("" ::: "memory");   /* a short, random delay */
        (void)__atomic_exchange_n(&istop, 1, __ATOMIC_SEQ_CST);
        T_EQ(nth_cond_broadcast(&ic), 0);
        T_EQ(nth_join(w, NULL), 0);
    }
}

/* Signal racing timeout: a waiter with a deadline right now-ish and a
 * signaller firing at about the same time. Each round: the signal is
 * delivered at most once, a waiter that returns 0 was really signalled,
 * and a signal that lost to a timeout is not lost: the predicate wait
 * below always ends. */
static nth_mutex_t rm = NTH_MUTEX_INITIALIZER;
static nth_cond_t rc = NTH_COND_INITIALIZER;
static int tokens, woke_ok, timed_out;

static void *race_waiter(void *p)
{
    (void)p;
    nth_mutex_lock(&rm);
    struct timespec d = in_ns(CLOCK_MONOTONIC, (uint64_t)(rand() % 40) * 1000);
    while (tokens == 0) {
        int e = nth_cond_clockwait(&rc, &rm, CLOCK_MONOTONIC, &d);
        if (e == ETIMEDOUT) {
            timed_out++;
            d = in_ns(CLOCK_MONOTONIC, 2000000000u); /* now wait for real */
        } else {
            T_EQ(e, 0);
            woke_ok++;
        }
    }
    tokens--;
    nth_mutex_unlock(&rm);
    return NULL;
}

static void test_cond_signal_vs_timeout(void *st)
{
    (void)st;
#ifdef NTH_TEST_MOCK
    enum { R = 300 };
#else
    enum { R = 2000 };
#endif
    woke_ok = timed_out = tokens = 0;
    for (int r = 0; r < R; r++) {
        nth_t w = spawn(race_waiter, NULL);
        for (int i = rand() % 3; i > 0; i--)
            nth_yield();
        nth_mutex_lock(&rm);
        tokens++;
        nth_cond_signal(&rc);
        nth_mutex_unlock(&rm);
        join(w);
    }
    T_EQ(tokens, 0);
    T_TRUE(woke_ok <= R);
    print_message("signal vs timeout: %d woken by signal, %d timeouts in %d rounds\n",
                  woke_ok, timed_out, R);
}

/* Semaphore conservation under racing timeouts: every post is taken by
 * exactly one waiter or stays in the value. */
static nth_sem_t rs;
static int sem_taken;

static void *sem_racer(void *p)
{
    (void)p;
    for (int i = 0; i < 50; i++) {
        struct timespec d = in_ns(CLOCK_MONOTONIC, (uint64_t)(rand() % 30) * 1000);
        int e = nth_sem_clockwait(&rs, CLOCK_MONOTONIC, &d);
        if (e == 0)
            __atomic_fetch_add(&sem_taken, 1, __ATOMIC_RELAXED);
        else
            T_EQ(e, ETIMEDOUT);
    }
    return NULL;
}

static void *sem_poster(void *p)
{
    for (int i = 0; i < 100; i++) {
        nth_sem_post(&rs);
        if (i % 3 == 0)
            nth_yield();
    }
    return p;
}

static void test_sem_post_vs_timeout(void *st)
{
    (void)st;
    enum { W = 8, P = 4 };
    nth_t t[W + P];
    nth_sem_init(&rs, 0);
    sem_taken = 0;
    for (int i = 0; i < W + P; i++)
        t[i] = spawn(i < W ? sem_racer : sem_poster, NULL);
    for (int i = 0; i < W + P; i++)
        join(t[i]);
    int v;
    nth_sem_getvalue(&rs, &v);
    T_EQ(sem_taken + v, P * 100);
    T_EQ(nth_sem_destroy(&rs), 0);
}

static void test_sem_errors(void *st)
{
    (void)st;
    nth_sem_t s;
    T_EQ(nth_sem_init(&s, (unsigned)NTH_SEM_VALUE_MAX + 1), EINVAL);
    T_EQ(nth_sem_init(&s, 1), 0);
    T_EQ(nth_sem_trywait(&s), 0);
    T_EQ(nth_sem_trywait(&s), EAGAIN);
    struct timespec bad = { 0, -5 }, past = { 0, 0 };
    T_EQ(nth_sem_timedwait(&s, &bad), EINVAL);
    T_EQ(nth_sem_timedwait(&s, &past), ETIMEDOUT);
    T_EQ(nth_sem_clockwait(&s, 77, &past), EINVAL);
    struct timespec d = in_ns(CLOCK_REALTIME, 3 * 1000 * 1000);
    T_EQ(nth_sem_timedwait(&s, &d), ETIMEDOUT);
    T_TRUE(ts_passed(CLOCK_REALTIME, &d));
    T_EQ(nth_sem_init(&s, NTH_SEM_VALUE_MAX), 0);
    T_EQ(nth_sem_post(&s), EOVERFLOW);
    int v;
    nth_sem_getvalue(&s, &v);
    T_EQ(v, NTH_SEM_VALUE_MAX);
}

/* Interruptible semaphore waits (the pthread shim's sem_wait EINTR): a
 * set stop flag ends the wait with EINTR and no unit, whether it was set
 * before the wait or while it sleeps; a waiter whose flag is clear keeps
 * waiting through nth_sem_interrupt and then gets the post. */
static nth_sem_t isem;
static int sem_stopflag[2];

static void *isem_waiter(void *p)
{
    int i = (int)(intptr_t)p;
    return (void *)(intptr_t)nth_sem_clockwait_interruptible(&isem, CLOCK_MONOTONIC, NULL, &sem_stopflag[i]);
}

static void test_sem_interruptible(void *st)
{
    (void)st;
    T_EQ(nth_sem_init(&isem, 0), 0);
    T_EQ(nth_sem_clockwait_interruptible(&isem, CLOCK_MONOTONIC, NULL, NULL), EINVAL);
    sem_stopflag[0] = 1;
    T_EQ(nth_sem_clockwait_interruptible(&isem, CLOCK_MONOTONIC, NULL, &sem_stopflag[0]), EINTR);
    struct timespec d = in_ns(CLOCK_MONOTONIC, 2 * 1000 * 1000);
    sem_stopflag[0] = 0;
    T_EQ(nth_sem_clockwait_interruptible(&isem, CLOCK_MONOTONIC, &d, &sem_stopflag[0]), ETIMEDOUT);
    nth_t a = spawn(isem_waiter, (void *)0), b = spawn(isem_waiter, (void *)1);
    /* Until both sleep on it (nth_sem_destroy: EBUSY while waited on).
     * Bounded in time (10 s), not in yields: a waiter stolen by the other
     * VP needs that VP's kernel thread to run, and 100000 yields that
     * return at once are a few ms on a loaded machine. */
    int queued = 0;
    struct timespec q0, qn;
    clock_gettime(CLOCK_MONOTONIC, &q0);
    for (int i = 0; !queued; i++) {
        clock_gettime(CLOCK_MONOTONIC, &qn);
        if (qn.tv_sec - q0.tv_sec > 10)
            break;
        nth_yield();
        if (i > 1000)
            syscall(SYS_sched_yield); /* the kernel's, also under the shim */
        void *h = __atomic_load_n(&isem.__head, __ATOMIC_ACQUIRE);
        queued = h && h != __atomic_load_n(&isem.__tail, __ATOMIC_ACQUIRE);
    }
    T_TRUE(queued);
    /* A seq_cst read-modify-write, not a fence: GCC rejects
     * atomic_thread_fence under -fsanitize=thread. */
    (void)__atomic_exchange_n(&sem_stopflag[0], 1, __ATOMIC_SEQ_CST);
    T_EQ(nth_sem_interrupt(&isem), 0);
    T_EQ((intptr_t)join(a), EINTR);
    int v;
    nth_sem_getvalue(&isem, &v);
    T_EQ(v, 0);                    /* no unit was made up for the interrupted one */
    T_EQ(nth_sem_post(&isem), 0);
    T_EQ((intptr_t)join(b), 0);    /* still waiting after the interrupt, then posted */
    nth_sem_getvalue(&isem, &v);
    T_EQ(v, 0);
    T_EQ(nth_sem_interrupt(NULL), EINVAL);
    T_EQ(nth_sem_destroy(&isem), 0);
}

/* ---- barrier ------------------------------------------------------------ */

static nth_barrier_t gb;
enum { BROUNDS = 20 };
static int arrived[BROUNDS], serials[BROUNDS];

static void *barrier_worker(void *p)
{
    int n = (int)(intptr_t)p;
    for (int r = 0; r < BROUNDS; r++) {
        __atomic_fetch_add(&arrived[r], 1, __ATOMIC_RELAXED);
        int e = nth_barrier_wait(&gb);
        T_TRUE(e == 0 || e == NTH_BARRIER_SERIAL_THREAD);
        if (e)
            __atomic_fetch_add(&serials[r], 1, __ATOMIC_RELAXED);
        /* Nobody passes before everyone arrived. */
        T_EQ(__atomic_load_n(&arrived[r], __ATOMIC_RELAXED), n);
    }
    return NULL;
}

static void test_barrier(void *st)
{
    (void)st;
    static nth_t t[STRESS_N];
    T_EQ(nth_barrier_init(&gb, 0), EINVAL);
    T_EQ(nth_barrier_init(&gb, STRESS_N), 0);
    memset(arrived, 0, sizeof arrived);
    memset(serials, 0, sizeof serials);
    for (int i = 0; i < STRESS_N; i++)
        t[i] = spawn(barrier_worker, (void *)(intptr_t)STRESS_N);
    for (int i = 0; i < STRESS_N; i++)
        join(t[i]);
    for (int r = 0; r < BROUNDS; r++) {
        T_EQ(arrived[r], STRESS_N);
        T_EQ(serials[r], 1);
    }
    T_EQ(nth_barrier_destroy(&gb), 0);
}

static void *barrier_one(void *p)
{
    nth_barrier_wait(p);
    return NULL;
}

static void test_barrier_busy(void *st)
{
    (void)st;
    nth_barrier_t b;
    nth_barrier_init(&b, 2);
    nth_t t = spawn(barrier_one, &b);
    while (nth_barrier_destroy(&b) == 0)
        nth_yield();
    T_EQ(nth_barrier_destroy(&b), EBUSY);
    T_EQ(nth_barrier_wait(&b), NTH_BARRIER_SERIAL_THREAD);
    join(t);
    T_EQ(nth_barrier_destroy(&b), 0);
}

/* ---- rwlock ----------------------------------------------------------------- */

static nth_rwlock_t grw = NTH_RWLOCK_INITIALIZER;
static struct { long a, b; } record;
static int stop_readers;
static long reader_turns;

static void *rw_reader(void *p)
{
    (void)p;
    int n = 0;
    while (!__atomic_load_n(&stop_readers, __ATOMIC_RELAXED) || n < 5) {
        T_EQ(nth_rwlock_rdlock(&grw), 0);
        long a = record.a;
        nth_yield();
        T_EQ(record.b, a);       /* never half-written */
        __atomic_fetch_add(&reader_turns, 1, __ATOMIC_RELAXED);
        T_EQ(nth_rwlock_unlock(&grw), 0);
        n++;
    }
    return NULL;
}

static void *rw_writer(void *p)
{
    (void)p;
    for (int i = 0; i < 20; i++) {
        T_EQ(nth_rwlock_wrlock(&grw), 0);
        record.a++;
        nth_yield();
        record.b++;
        T_EQ(nth_rwlock_unlock(&grw), 0);
        nth_yield();
    }
    return NULL;
}

static void test_rwlock_stress(void *st)
{
    (void)st;
    enum { R = STRESS_N / 2, W = 4 };
    static nth_t t[R + W];
    stop_readers = 0;
    for (int i = 0; i < R + W; i++)
        t[i] = spawn(i < R ? rw_reader : rw_writer, NULL);
    for (int i = R; i < R + W; i++)
        join(t[i]);           /* writers finish although readers never stop */
    __atomic_store_n(&stop_readers, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < R; i++)
        join(t[i]);
    T_EQ(record.a, W * 20);
    T_EQ(record.b, W * 20);
}

/* A waiting writer gets in within a bounded number of reader turns: with
 * K readers cycling, at most the K holding when it queued. On one VP, so
 * nothing runs between the writer's count and its queueing (cooperative)
 * and the bound is exact. */
static void *bounded_writer(void *p)
{
    long *turns = p;
    long before = __atomic_load_n(&reader_turns, __ATOMIC_RELAXED);
    nth_rwlock_wrlock(&grw);
    *turns = __atomic_load_n(&reader_turns, __ATOMIC_RELAXED) - before;
    nth_rwlock_unlock(&grw);
    return NULL;
}

static void test_rwlock_writer_bounded(void *st)
{
    (void)st;
    enum { K = 8 };
    nth_t t[K];
    long turns = -1;
#ifndef NTH_TEST_MOCK
    nth_config_t cfg;
    nth_config_default(&cfg);
    cfg.vps = 1;
    T_EQ(nth_init(&cfg), 0);   /* a fresh child: the runtime is not running */
#endif
    stop_readers = 0;
    reader_turns = 0;
    for (int i = 0; i < K; i++)
        t[i] = spawn(rw_reader, NULL);
    while (__atomic_load_n(&reader_turns, __ATOMIC_RELAXED) < 50)
        nth_yield();
    join(spawn(bounded_writer, &turns));
    __atomic_store_n(&stop_readers, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < K; i++)
        join(t[i]);
#ifdef NTH_TEST_MOCK
    T_TRUE(turns >= 0);   /* kernel threads: readers run during the count */
#else
    T_TRUE(turns >= 0 && turns <= K);
#endif
}

static void *try_rd(void *p) { return (void *)(intptr_t)nth_rwlock_tryrdlock(p); }
static void *try_wr(void *p) { return (void *)(intptr_t)nth_rwlock_trywrlock(p); }
static void *timed_wr(void *p)
{
    struct timespec d = in_ns(CLOCK_REALTIME, 5 * 1000 * 1000);
    int e = nth_rwlock_timedwrlock(p, &d);
    if (e == ETIMEDOUT && !ts_passed(CLOCK_REALTIME, &d))
        e = -1;
    return (void *)(intptr_t)e;
}

static void test_rwlock_errors(void *st)
{
    (void)st;
    nth_rwlock_t rw;
    T_EQ(nth_rwlock_init(&rw, NULL), 0);
    T_EQ(nth_rwlock_unlock(&rw), EPERM);
    T_EQ(nth_rwlock_wrlock(&rw), 0);
    T_EQ(nth_rwlock_wrlock(&rw), EDEADLK);
    T_EQ(nth_rwlock_rdlock(&rw), EDEADLK);
    /* The try-locks are EBUSY also on the caller's own write lock
     * (POSIX, glibc), not EDEADLK. */
    T_EQ(nth_rwlock_tryrdlock(&rw), EBUSY);
    T_EQ(nth_rwlock_trywrlock(&rw), EBUSY);
    T_EQ(nth_rwlock_destroy(&rw), EBUSY);
    T_EQ((intptr_t)join(spawn(try_rd, &rw)), EBUSY);
    T_EQ(nth_rwlock_unlock(&rw), 0);
    T_EQ(nth_rwlock_rdlock(&rw), 0);
    T_EQ((intptr_t)join(spawn(try_rd, &rw)), 0);   /* two readers now */
    T_EQ((intptr_t)join(spawn(try_wr, &rw)), EBUSY);
    T_EQ((intptr_t)join(spawn(timed_wr, &rw)), ETIMEDOUT);
    /* The timed-out writer no longer blocks new readers. */
    T_EQ(nth_rwlock_tryrdlock(&rw), 0);
    struct timespec bad = { 0, 2000000000L };
    T_EQ(nth_rwlock_timedwrlock(&rw, &bad), EINVAL);
    for (int i = 0; i < 3; i++)
        T_EQ(nth_rwlock_unlock(&rw), 0);
    T_EQ(nth_rwlock_unlock(&rw), EPERM);
    T_EQ(nth_rwlock_destroy(&rw), 0);
}

/* ---- once --------------------------------------------------------------- */

static nth_once_t gonce = NTH_ONCE_INIT;
static int once_runs, once_done;

static void once_routine(void)
{
    __atomic_fetch_add(&once_runs, 1, __ATOMIC_RELAXED);
    nth_yield();                   /* let the others pile up */
    nth_sleep_ns(1000000);
    __atomic_store_n(&once_done, 1, __ATOMIC_RELEASE);
}

static void *once_caller(void *p)
{
    (void)p;
    T_EQ(nth_once(&gonce, once_routine), 0);
    T_EQ(__atomic_load_n(&once_done, __ATOMIC_ACQUIRE), 1);
    return NULL;
}

static void test_once(void *st)
{
    (void)st;
    static nth_t t[STRESS_N];
    for (int i = 0; i < STRESS_N; i++)
        t[i] = spawn(once_caller, NULL);
    for (int i = 0; i < STRESS_N; i++)
        join(t[i]);
    T_EQ(once_runs, 1);
    T_EQ(nth_once(NULL, once_routine), EINVAL);
}

/* ---- keys --------------------------------------------------------------- */

static nth_key_t k1, k2;
static int d1_calls, d2_calls;

static void d1(void *v)
{
    T_TRUE(v);
    d1_calls++;
    /* Set a value again: POSIX repeats the destructors for it. */
    if (d1_calls < 100)
        nth_setspecific(k1, v);
}

static void d2(void *v)
{
    T_PEQ(v, &d2_calls);
    d2_calls++;
}

static void *key_user(void *p)
{
    (void)p;
    T_TRUE(!(nth_getspecific(k1)));
    T_EQ(nth_setspecific(k1, &d1_calls), 0);
    T_EQ(nth_setspecific(k2, &d2_calls), 0);
    T_PEQ(nth_getspecific(k1), &d1_calls);
    return NULL;
}

static void test_keys(void *st)
{
    (void)st;
    T_EQ(nth_key_create(&k1, d1), 0);
    T_EQ(nth_key_create(&k2, d2), 0);
    d1_calls = d2_calls = 0;
    join(spawn(key_user, NULL));
    T_EQ(d1_calls, NTH_DESTRUCTOR_ITERATIONS);
    T_EQ(d2_calls, 1);

    /* Values are per nano-thread. */
    T_EQ(nth_setspecific(k2, &k2), 0);
    join(spawn(key_user, NULL));
    T_PEQ(nth_getspecific(k2), &k2);

    T_EQ(nth_key_delete(k1), 0);
    T_EQ(nth_key_delete(k1), EINVAL);
    T_EQ(nth_setspecific(k1, &k1), EINVAL);
    T_EQ(nth_key_delete(NTH_KEYS_MAX), EINVAL);
    T_EQ(nth_key_delete(k2), 0);
    T_TRUE(!(nth_getspecific(k2)));   /* deleted key: its value is gone */

    /* The reserve (a layered library's keys): usable like any key, and
     * outside the NTH_KEYS_MAX a program may create. */
    nth_key_t rk[NTH_KEYS_RESERVED], extra;
    for (int i = 0; i < NTH_KEYS_RESERVED; i++) {
        T_EQ(nth_key_create_reserved(&rk[i], NULL), 0);
        T_TRUE(rk[i] >= NTH_KEYS_MAX);
    }
    T_EQ(nth_key_create_reserved(&extra, NULL), EAGAIN);
    T_EQ(nth_key_create_reserved(NULL, NULL), EINVAL);
    T_EQ(nth_setspecific(rk[NTH_KEYS_RESERVED - 1], &extra), 0);
    T_TRUE(nth_getspecific(rk[NTH_KEYS_RESERVED - 1]) == &extra);

    /* Exhaust the table: EAGAIN, then everything can be deleted. */
    static nth_key_t all[NTH_KEYS_MAX];
    int n = 0, e;
    while ((e = nth_key_create(&all[n], NULL)) == 0)
        n++;
    T_EQ(e, EAGAIN);
    T_TRUE(n <= NTH_KEYS_MAX && n >= NTH_KEYS_MAX - 8);
    for (int i = 0; i < n; i++)
        T_EQ(nth_key_delete(all[i]), 0);
    T_EQ(nth_setspecific(rk[NTH_KEYS_RESERVED - 1], NULL), 0);
    for (int i = 0; i < NTH_KEYS_RESERVED; i++)
        T_EQ(nth_key_delete(rk[i]), 0);
}

/* ---- sleep and errno -------------------------------------------------------- */

static void test_sleep(void *st)
{
    (void)st;
    uint64_t t0 = mono_ns();
    T_EQ(nth_sleep_ns(3 * 1000 * 1000), 0);
    T_TRUE(mono_ns() - t0 >= 3 * 1000 * 1000);
    struct timespec past = { 0, 0 }, bad = { 0, 1000000000L };
    T_EQ(nth_sleep_until(CLOCK_REALTIME, &past), 0);
    T_EQ(nth_sleep_until(CLOCK_REALTIME, &bad), EINVAL);
    T_EQ(nth_sleep_until(CLOCK_BOOTTIME + 100, &past), EINVAL);
    struct timespec d = in_ns(CLOCK_REALTIME, 2 * 1000 * 1000);
    T_EQ(nth_sleep_until(CLOCK_REALTIME, &d), 0);
    T_TRUE(ts_passed(CLOCK_REALTIME, &d));
}

/* errno through a fresh __errno_location() call each time: the compiler may
 * keep errno's address across nth_yield() (it is declared const), and after a
 * steal that address is the other VP's (README, "Per-thread state"). The
 * value itself must follow the nano-thread. */
static __attribute__((noinline)) void errno_put(int e)
{
    errno = e;
}
static __attribute__((noinline)) int errno_take(void)
{
    return errno;
}

static void *errno_setter(void *p)
{
    for (int i = 0; i < 50; i++) {
        errno_put((int)(intptr_t)p + i);
        nth_yield();
        T_EQ(errno_take(), (int)(intptr_t)p + i);
    }
    return NULL;
}

static void test_errno_per_nano_thread(void *st)
{
    (void)st;
    nth_t a = spawn(errno_setter, (void *)1000), b = spawn(errno_setter, (void *)2000);
    join(a);
    join(b);
}

static void case_test_mutex_basic(void **st) { (void)st; run_case(test_mutex_basic, 30); }
static void case_test_mutex_errorcheck(void **st) { (void)st; run_case(test_mutex_errorcheck, 30); }
static void case_test_mutex_recursive(void **st) { (void)st; run_case(test_mutex_recursive, 30); }
static void case_test_mutex_timedlock(void **st) { (void)st; run_case(test_mutex_timedlock, 30); }
static void case_test_mutex_stress(void **st) { (void)st; run_case(test_mutex_stress, 30); }
static void case_test_mutex_stress_timed(void **st) { (void)st; run_case(test_mutex_stress_timed, 300); }
#ifndef NTH_TEST_MOCK
static void case_test_mutex_alarm_wakes_queue_fairly(void **st) { (void)st; run_case(test_mutex_alarm_wakes_queue_fairly, 30); }
#endif
static void case_test_cond_broadcast(void **st) { (void)st; run_case(test_cond_broadcast, 30); }
static void case_test_cond_timedwait(void **st) { (void)st; run_case(test_cond_timedwait, 30); }
static void case_test_cond_monotonic(void **st) { (void)st; run_case(test_cond_monotonic, 30); }
static void case_test_cond_interruptible(void **st) { (void)st; run_case(test_cond_interruptible, 30); }
static void case_test_cond_clockwait_interruptible(void **st) { (void)st; run_case(test_cond_clockwait_interruptible, 30); }
static void case_test_cond_signal_vs_timeout(void **st) { (void)st; run_case(test_cond_signal_vs_timeout, 30); }
static void case_test_sem_post_vs_timeout(void **st) { (void)st; run_case(test_sem_post_vs_timeout, 30); }
static void case_test_sem_errors(void **st) { (void)st; run_case(test_sem_errors, 30); }
static void case_test_sem_interruptible(void **st) { (void)st; run_case(test_sem_interruptible, 30); }
static void case_test_barrier(void **st) { (void)st; run_case(test_barrier, 30); }
static void case_test_barrier_busy(void **st) { (void)st; run_case(test_barrier_busy, 30); }
static void case_test_rwlock_stress(void **st) { (void)st; run_case(test_rwlock_stress, 30); }
static void case_test_rwlock_writer_bounded(void **st) { (void)st; run_case(test_rwlock_writer_bounded, 30); }
static void case_test_rwlock_errors(void **st) { (void)st; run_case(test_rwlock_errors, 30); }
static void case_test_once(void **st) { (void)st; run_case(test_once, 30); }
static void case_test_keys(void **st) { (void)st; run_case(test_keys, 30); }
static void case_test_sleep(void **st) { (void)st; run_case(test_sleep, 30); }
static void case_test_errno_per_nano_thread(void **st) { (void)st; run_case(test_errno_per_nano_thread, 30); }

int main(void)
{
    srand(12345);
    /* NTH_TEST_ONLY=glob runs the matching cases only (e.g. when looping
     * one case to chase a rare failure). */
    if (getenv("NTH_TEST_ONLY"))
        cmocka_set_test_filter(getenv("NTH_TEST_ONLY"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(case_test_mutex_basic),
        cmocka_unit_test(case_test_mutex_errorcheck),
        cmocka_unit_test(case_test_mutex_recursive),
        cmocka_unit_test(case_test_mutex_timedlock),
        cmocka_unit_test(case_test_mutex_stress),
        cmocka_unit_test(case_test_mutex_stress_timed),
#ifndef NTH_TEST_MOCK
        cmocka_unit_test(case_test_mutex_alarm_wakes_queue_fairly),
#endif
        cmocka_unit_test(case_test_cond_broadcast),
        cmocka_unit_test(case_test_cond_timedwait),
        cmocka_unit_test(case_test_cond_monotonic),
        cmocka_unit_test(case_test_cond_interruptible),
        cmocka_unit_test(case_test_cond_clockwait_interruptible),
        cmocka_unit_test(case_test_cond_signal_vs_timeout),
        cmocka_unit_test(case_test_sem_post_vs_timeout),
        cmocka_unit_test(case_test_sem_errors),
        cmocka_unit_test(case_test_sem_interruptible),
        cmocka_unit_test(case_test_barrier),
        cmocka_unit_test(case_test_barrier_busy),
        cmocka_unit_test(case_test_rwlock_stress),
        cmocka_unit_test(case_test_rwlock_writer_bounded),
        cmocka_unit_test(case_test_rwlock_errors),
        cmocka_unit_test(case_test_once),
        cmocka_unit_test(case_test_keys),
        cmocka_unit_test(case_test_sleep),
        cmocka_unit_test(case_test_errno_per_nano_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
