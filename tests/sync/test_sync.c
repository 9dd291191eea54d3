/*
 * test_sync.c -- semantics, error codes and bounded stress of the
 * synchronisation objects, timed waits and sleeping. Uses only nth.h, so
 * it runs both on the real runtime and on mock_core.c (kernel threads as
 * nano-threads, NTH_TEST_MOCK), which has fewer threads to spare.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "nth.h"

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
    assert_int_equal(nth_create(&t, NULL, fn, arg), 0);
    return t;
}

static void *join(nth_t t)
{
    void *r;
    assert_int_equal(nth_join(t, &r), 0);
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

static void test_mutex_basic(void **st)
{
    (void)st;
    nth_mutex_t z;
    memset(&z, 0, sizeof z);       /* all-zero = NTH_MUTEX_INITIALIZER */
    assert_int_equal(nth_mutex_lock(&z), 0);
    assert_int_equal(nth_mutex_destroy(&z), EBUSY);
    assert_int_equal((intptr_t)join(spawn(try_then_ret, &z)), EBUSY);
    assert_int_equal(nth_mutex_unlock(&z), 0);
    assert_int_equal(nth_mutex_trylock(&z), 0);
    assert_int_equal(nth_mutex_unlock(&z), 0);
    assert_int_equal(nth_mutex_destroy(&z), 0);

    nth_mutexattr_t a;
    assert_int_equal(nth_mutexattr_init(&a), 0);
    assert_int_equal(nth_mutexattr_settype(&a, 7), EINVAL);
    assert_int_equal(nth_mutexattr_settype(&a, -1), EINVAL);
    a.__type = 9;
    assert_int_equal(nth_mutex_init(&z, &a), EINVAL);
    assert_int_equal(nth_mutex_init(NULL, NULL), EINVAL);
}

static void test_mutex_errorcheck(void **st)
{
    (void)st;
    nth_mutexattr_t a;
    nth_mutex_t m;
    nth_mutexattr_init(&a);
    assert_int_equal(nth_mutexattr_settype(&a, NTH_MUTEX_ERRORCHECK), 0);
    int ty;
    assert_int_equal(nth_mutexattr_gettype(&a, &ty), 0);
    assert_int_equal(ty, NTH_MUTEX_ERRORCHECK);
    assert_int_equal(nth_mutex_init(&m, &a), 0);
    assert_int_equal(nth_mutex_unlock(&m), EPERM);     /* not locked */
    assert_int_equal(nth_mutex_lock(&m), 0);
    assert_int_equal(nth_mutex_lock(&m), EDEADLK);
    assert_int_equal(nth_mutex_trylock(&m), EBUSY);
    assert_int_equal((intptr_t)join(spawn(unlock_ret, &m)), EPERM);
    assert_int_equal(nth_mutex_unlock(&m), 0);
    assert_int_equal(nth_mutex_destroy(&m), 0);
}

static void test_mutex_recursive(void **st)
{
    (void)st;
    nth_mutexattr_t a;
    nth_mutex_t m;
    nth_mutexattr_init(&a);
    nth_mutexattr_settype(&a, NTH_MUTEX_RECURSIVE);
    assert_int_equal(nth_mutex_init(&m, &a), 0);
    assert_int_equal(nth_mutex_lock(&m), 0);
    assert_int_equal(nth_mutex_lock(&m), 0);
    assert_int_equal(nth_mutex_trylock(&m), 0);
    assert_int_equal((intptr_t)join(spawn(unlock_ret, &m)), EPERM);
    assert_int_equal((intptr_t)join(spawn(try_then_ret, &m)), EBUSY);
    for (int i = 0; i < 3; i++)
        assert_int_equal(nth_mutex_unlock(&m), 0);
    assert_int_equal(nth_mutex_unlock(&m), EPERM);
    assert_int_equal((intptr_t)join(spawn(try_then_ret, &m)), 0); /* the child exits holding it */
    assert_int_equal(nth_mutex_destroy(&m), EBUSY);
}

static void *hold_then_release(void *p)
{
    nth_mutex_t *m = p;
    nth_mutex_lock(m);
    nth_sleep_ns(60 * 1000 * 1000);
    nth_mutex_unlock(m);
    return NULL;
}

static void test_mutex_timedlock(void **st)
{
    (void)st;
    nth_mutex_t m = NTH_MUTEX_INITIALIZER;
    struct timespec bad = { 0, 1000000000L }, past = { 1, 0 };
    /* Free mutex: the deadline is not even looked at. */
    assert_int_equal(nth_mutex_timedlock(&m, &past), 0);
    assert_int_equal(nth_mutex_timedlock(&m, &bad), EINVAL);
    bad.tv_nsec = -1;
    assert_int_equal(nth_mutex_timedlock(&m, &bad), EINVAL);
    assert_int_equal(nth_mutex_timedlock(&m, &past), ETIMEDOUT);
    assert_int_equal(nth_mutex_clocklock(&m, 12345, &past), EINVAL);
    nth_mutex_unlock(&m);

    nth_t h = spawn(hold_then_release, &m);
    while (nth_mutex_trylock(&m) == 0) {  /* wait until the child holds it */
        nth_mutex_unlock(&m);
        nth_yield();
    }
    struct timespec d = in_ns(CLOCK_REALTIME, 10 * 1000 * 1000);
    assert_int_equal(nth_mutex_timedlock(&m, &d), ETIMEDOUT);
    assert_true(ts_passed(CLOCK_REALTIME, &d));    /* never early */
    d = in_ns(CLOCK_MONOTONIC, 5ull * 1000 * 1000 * 1000);
    assert_int_equal(nth_mutex_clocklock(&m, CLOCK_MONOTONIC, &d), 0); /* gets it on release */
    nth_mutex_unlock(&m);
    join(h);
}

static long counter;
enum { ROUNDS = 200 };

static void *count_worker(void *p)
{
    nth_mutex_t *m = p;
    for (int i = 0; i < ROUNDS; i++) {
        assert_int_equal(nth_mutex_lock(m), 0);
        long c = counter;
        if (i % 7 == 0)
            nth_yield();               /* hold it across a switch */
        counter = c + 1;
        assert_int_equal(nth_mutex_unlock(m), 0);
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
        assert_int_equal(e, 0);
        counter++;
        got++;
        nth_mutex_unlock(m);
    }
    return NULL;
}

static void test_mutex_stress(void **st)
{
    (void)st;
    static nth_t t[STRESS_N];
    nth_mutex_t m = NTH_MUTEX_INITIALIZER;
    counter = 0;
    for (int i = 0; i < STRESS_N; i++)
        t[i] = spawn(i % 4 == 3 ? count_worker_timed : count_worker, &m);
    for (int i = 0; i < STRESS_N; i++)
        join(t[i]);
    assert_int_equal(counter, (long)STRESS_N * ROUNDS);
    assert_int_equal(nth_mutex_destroy(&m), 0);
}

/* ---- condition variable ------------------------------------------------ */

static nth_cond_t gc;
static int ready_flag;

static void *cond_waiter(void *p)
{
    (void)p;
    nth_mutex_lock(&gm);
    while (!ready_flag)
        assert_int_equal(nth_cond_wait(&gc, &gm), 0);
    nth_mutex_unlock(&gm);
    return NULL;
}

static void test_cond_broadcast(void **st)
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
        assert_int_equal(e, 0);
        nth_yield();
    }
    nth_mutex_lock(&gm);
    ready_flag = 1;
    nth_cond_broadcast(&gc);
    nth_mutex_unlock(&gm);
    for (int i = 0; i < N; i++)
        join(t[i]);
    assert_int_equal(nth_cond_destroy(&gc), 0);
}

static void test_cond_timedwait(void **st)
{
    (void)st;
    nth_cond_t c = NTH_COND_INITIALIZER;
    nth_mutex_t m = NTH_MUTEX_INITIALIZER;
    struct timespec bad = { 0, 1000000000L }, past = { 0, 0 };
    nth_mutex_lock(&m);
    assert_int_equal(nth_cond_timedwait(&c, &m, &bad), EINVAL);
    uint64_t t0 = mono_ns();
    assert_int_equal(nth_cond_timedwait(&c, &m, &past), ETIMEDOUT);
    assert_true(mono_ns() - t0 < 1000000000u);  /* at once, not after a long wait */
    assert_int_equal(nth_cond_clockwait(&c, &m, 999, &past), EINVAL);
    struct timespec d = in_ns(CLOCK_REALTIME, 5 * 1000 * 1000);
    assert_int_equal(nth_cond_timedwait(&c, &m, &d), ETIMEDOUT);
    assert_true(ts_passed(CLOCK_REALTIME, &d));
    assert_int_equal(nth_mutex_trylock(&m), EBUSY); /* relocked on return */
    nth_mutex_unlock(&m);

    /* Error-checking mutex not held: EPERM, and the condvar stays clean. */
    nth_mutexattr_t a;
    nth_mutexattr_init(&a);
    nth_mutexattr_settype(&a, NTH_MUTEX_ERRORCHECK);
    nth_mutex_t em;
    nth_mutex_init(&em, &a);
    assert_int_equal(nth_cond_wait(&c, &em), EPERM);
    assert_int_equal(nth_cond_destroy(&c), 0);
}

static void test_cond_monotonic(void **st)
{
    (void)st;
    /* A CLOCK_MONOTONIC deadline 30 ms ahead is long past when read as
     * wall-clock time: the wait lasting >= 30 ms shows the condvar counts
     * on the monotonic clock, which wall-clock changes do not move. */
    nth_condattr_t ca;
    nth_cond_t c;
    nth_mutex_t m = NTH_MUTEX_INITIALIZER;
    assert_int_equal(nth_condattr_init(&ca), 0);
    assert_int_equal(nth_condattr_setclock(&ca, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
    assert_int_equal(nth_condattr_setclock(&ca, CLOCK_MONOTONIC), 0);
    clockid_t ck;
    nth_condattr_getclock(&ca, &ck);
    assert_int_equal(ck, CLOCK_MONOTONIC);
    assert_int_equal(nth_cond_init(&c, &ca), 0);
    nth_mutex_lock(&m);
    struct timespec d = in_ns(CLOCK_MONOTONIC, 30 * 1000 * 1000);
    uint64_t t0 = mono_ns();
    assert_int_equal(nth_cond_timedwait(&c, &m, &d), ETIMEDOUT);
    assert_true(mono_ns() - t0 >= 30 * 1000 * 1000);
    nth_mutex_unlock(&m);
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
            assert_int_equal(e, 0);
            woke_ok++;
        }
    }
    tokens--;
    nth_mutex_unlock(&rm);
    return NULL;
}

static void test_cond_signal_vs_timeout(void **st)
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
    assert_int_equal(tokens, 0);
    assert_true(woke_ok <= R);
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
            assert_int_equal(e, ETIMEDOUT);
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

static void test_sem_post_vs_timeout(void **st)
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
    assert_int_equal(sem_taken + v, P * 100);
    assert_int_equal(nth_sem_destroy(&rs), 0);
}

static void test_sem_errors(void **st)
{
    (void)st;
    nth_sem_t s;
    assert_int_equal(nth_sem_init(&s, (unsigned)NTH_SEM_VALUE_MAX + 1), EINVAL);
    assert_int_equal(nth_sem_init(&s, 1), 0);
    assert_int_equal(nth_sem_trywait(&s), 0);
    assert_int_equal(nth_sem_trywait(&s), EAGAIN);
    struct timespec bad = { 0, -5 }, past = { 0, 0 };
    assert_int_equal(nth_sem_timedwait(&s, &bad), EINVAL);
    assert_int_equal(nth_sem_timedwait(&s, &past), ETIMEDOUT);
    assert_int_equal(nth_sem_clockwait(&s, 77, &past), EINVAL);
    struct timespec d = in_ns(CLOCK_REALTIME, 3 * 1000 * 1000);
    assert_int_equal(nth_sem_timedwait(&s, &d), ETIMEDOUT);
    assert_true(ts_passed(CLOCK_REALTIME, &d));
    assert_int_equal(nth_sem_init(&s, NTH_SEM_VALUE_MAX), 0);
    assert_int_equal(nth_sem_post(&s), EOVERFLOW);
    int v;
    nth_sem_getvalue(&s, &v);
    assert_int_equal(v, NTH_SEM_VALUE_MAX);
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
        assert_true(e == 0 || e == NTH_BARRIER_SERIAL_THREAD);
        if (e)
            __atomic_fetch_add(&serials[r], 1, __ATOMIC_RELAXED);
        /* Nobody passes before everyone arrived. */
        assert_int_equal(__atomic_load_n(&arrived[r], __ATOMIC_RELAXED), n);
    }
    return NULL;
}

static void test_barrier(void **st)
{
    (void)st;
    static nth_t t[STRESS_N];
    assert_int_equal(nth_barrier_init(&gb, 0), EINVAL);
    assert_int_equal(nth_barrier_init(&gb, STRESS_N), 0);
    memset(arrived, 0, sizeof arrived);
    memset(serials, 0, sizeof serials);
    for (int i = 0; i < STRESS_N; i++)
        t[i] = spawn(barrier_worker, (void *)(intptr_t)STRESS_N);
    for (int i = 0; i < STRESS_N; i++)
        join(t[i]);
    for (int r = 0; r < BROUNDS; r++) {
        assert_int_equal(arrived[r], STRESS_N);
        assert_int_equal(serials[r], 1);
    }
    assert_int_equal(nth_barrier_destroy(&gb), 0);
}

static void *barrier_one(void *p)
{
    nth_barrier_wait(p);
    return NULL;
}

static void test_barrier_busy(void **st)
{
    (void)st;
    nth_barrier_t b;
    nth_barrier_init(&b, 2);
    nth_t t = spawn(barrier_one, &b);
    while (nth_barrier_destroy(&b) == 0)
        nth_yield();
    assert_int_equal(nth_barrier_destroy(&b), EBUSY);
    assert_int_equal(nth_barrier_wait(&b), NTH_BARRIER_SERIAL_THREAD);
    join(t);
    assert_int_equal(nth_barrier_destroy(&b), 0);
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
        assert_int_equal(nth_rwlock_rdlock(&grw), 0);
        long a = record.a;
        nth_yield();
        assert_int_equal(record.b, a);       /* never half-written */
        __atomic_fetch_add(&reader_turns, 1, __ATOMIC_RELAXED);
        assert_int_equal(nth_rwlock_unlock(&grw), 0);
        n++;
    }
    return NULL;
}

static void *rw_writer(void *p)
{
    (void)p;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(nth_rwlock_wrlock(&grw), 0);
        record.a++;
        nth_yield();
        record.b++;
        assert_int_equal(nth_rwlock_unlock(&grw), 0);
        nth_yield();
    }
    return NULL;
}

static void test_rwlock_stress(void **st)
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
    assert_int_equal(record.a, W * 20);
    assert_int_equal(record.b, W * 20);
}

/* A waiting writer gets in within a bounded number of reader turns: with
 * K readers cycling, at most the K holding when it queued. */
static void *bounded_writer(void *p)
{
    long *turns = p;
    long before = __atomic_load_n(&reader_turns, __ATOMIC_RELAXED);
    nth_rwlock_wrlock(&grw);
    *turns = __atomic_load_n(&reader_turns, __ATOMIC_RELAXED) - before;
    nth_rwlock_unlock(&grw);
    return NULL;
}

static void test_rwlock_writer_bounded(void **st)
{
    (void)st;
    enum { K = 8 };
    nth_t t[K];
    long turns = -1;
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
    assert_true(turns >= 0 && turns <= K);
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

static void test_rwlock_errors(void **st)
{
    (void)st;
    nth_rwlock_t rw;
    assert_int_equal(nth_rwlock_init(&rw, NULL), 0);
    assert_int_equal(nth_rwlock_unlock(&rw), EPERM);
    assert_int_equal(nth_rwlock_wrlock(&rw), 0);
    assert_int_equal(nth_rwlock_wrlock(&rw), EDEADLK);
    assert_int_equal(nth_rwlock_rdlock(&rw), EDEADLK);
    assert_int_equal(nth_rwlock_destroy(&rw), EBUSY);
    assert_int_equal((intptr_t)join(spawn(try_rd, &rw)), EBUSY);
    assert_int_equal(nth_rwlock_unlock(&rw), 0);
    assert_int_equal(nth_rwlock_rdlock(&rw), 0);
    assert_int_equal((intptr_t)join(spawn(try_rd, &rw)), 0);   /* two readers now */
    assert_int_equal((intptr_t)join(spawn(try_wr, &rw)), EBUSY);
    assert_int_equal((intptr_t)join(spawn(timed_wr, &rw)), ETIMEDOUT);
    /* The timed-out writer no longer blocks new readers. */
    assert_int_equal(nth_rwlock_tryrdlock(&rw), 0);
    struct timespec bad = { 0, 2000000000L };
    assert_int_equal(nth_rwlock_timedwrlock(&rw, &bad), EINVAL);
    for (int i = 0; i < 3; i++)
        assert_int_equal(nth_rwlock_unlock(&rw), 0);
    assert_int_equal(nth_rwlock_unlock(&rw), EPERM);
    assert_int_equal(nth_rwlock_destroy(&rw), 0);
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
    assert_int_equal(nth_once(&gonce, once_routine), 0);
    assert_int_equal(__atomic_load_n(&once_done, __ATOMIC_ACQUIRE), 1);
    return NULL;
}

static void test_once(void **st)
{
    (void)st;
    static nth_t t[STRESS_N];
    for (int i = 0; i < STRESS_N; i++)
        t[i] = spawn(once_caller, NULL);
    for (int i = 0; i < STRESS_N; i++)
        join(t[i]);
    assert_int_equal(once_runs, 1);
    assert_int_equal(nth_once(NULL, once_routine), EINVAL);
}

/* ---- keys --------------------------------------------------------------- */

static nth_key_t k1, k2;
static int d1_calls, d2_calls;

static void d1(void *v)
{
    assert_non_null(v);
    d1_calls++;
    /* Set a value again: POSIX repeats the destructors for it. */
    if (d1_calls < 100)
        nth_setspecific(k1, v);
}

static void d2(void *v)
{
    assert_ptr_equal(v, &d2_calls);
    d2_calls++;
}

static void *key_user(void *p)
{
    (void)p;
    assert_null(nth_getspecific(k1));
    assert_int_equal(nth_setspecific(k1, &d1_calls), 0);
    assert_int_equal(nth_setspecific(k2, &d2_calls), 0);
    assert_ptr_equal(nth_getspecific(k1), &d1_calls);
    return NULL;
}

static void test_keys(void **st)
{
    (void)st;
    assert_int_equal(nth_key_create(&k1, d1), 0);
    assert_int_equal(nth_key_create(&k2, d2), 0);
    d1_calls = d2_calls = 0;
    join(spawn(key_user, NULL));
    assert_int_equal(d1_calls, NTH_DESTRUCTOR_ITERATIONS);
    assert_int_equal(d2_calls, 1);

    /* Values are per nano-thread. */
    assert_int_equal(nth_setspecific(k2, &k2), 0);
    join(spawn(key_user, NULL));
    assert_ptr_equal(nth_getspecific(k2), &k2);

    assert_int_equal(nth_key_delete(k1), 0);
    assert_int_equal(nth_key_delete(k1), EINVAL);
    assert_int_equal(nth_setspecific(k1, &k1), EINVAL);
    assert_int_equal(nth_key_delete(NTH_KEYS_MAX), EINVAL);
    assert_int_equal(nth_key_delete(k2), 0);
    assert_null(nth_getspecific(k2));   /* deleted key: its value is gone */

    /* Exhaust the table: EAGAIN, then everything can be deleted. */
    static nth_key_t all[NTH_KEYS_MAX];
    int n = 0, e;
    while ((e = nth_key_create(&all[n], NULL)) == 0)
        n++;
    assert_int_equal(e, EAGAIN);
    assert_true(n <= NTH_KEYS_MAX && n >= NTH_KEYS_MAX - 8);
    for (int i = 0; i < n; i++)
        assert_int_equal(nth_key_delete(all[i]), 0);
}

/* ---- sleep and errno -------------------------------------------------------- */

static void test_sleep(void **st)
{
    (void)st;
    uint64_t t0 = mono_ns();
    assert_int_equal(nth_sleep_ns(3 * 1000 * 1000), 0);
    assert_true(mono_ns() - t0 >= 3 * 1000 * 1000);
    struct timespec past = { 0, 0 }, bad = { 0, 1000000000L };
    assert_int_equal(nth_sleep_until(CLOCK_REALTIME, &past), 0);
    assert_int_equal(nth_sleep_until(CLOCK_REALTIME, &bad), EINVAL);
    assert_int_equal(nth_sleep_until(CLOCK_BOOTTIME + 100, &past), EINVAL);
    struct timespec d = in_ns(CLOCK_REALTIME, 2 * 1000 * 1000);
    assert_int_equal(nth_sleep_until(CLOCK_REALTIME, &d), 0);
    assert_true(ts_passed(CLOCK_REALTIME, &d));
}

static void *errno_setter(void *p)
{
    for (int i = 0; i < 50; i++) {
        errno = (int)(intptr_t)p + i;
        nth_yield();
        assert_int_equal(errno, (int)(intptr_t)p + i);
    }
    return NULL;
}

static void test_errno_per_nano_thread(void **st)
{
    (void)st;
    nth_t a = spawn(errno_setter, (void *)1000), b = spawn(errno_setter, (void *)2000);
    join(a);
    join(b);
}

int main(void)
{
    srand(12345);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutex_basic),
        cmocka_unit_test(test_mutex_errorcheck),
        cmocka_unit_test(test_mutex_recursive),
        cmocka_unit_test(test_mutex_timedlock),
        cmocka_unit_test(test_mutex_stress),
        cmocka_unit_test(test_cond_broadcast),
        cmocka_unit_test(test_cond_timedwait),
        cmocka_unit_test(test_cond_monotonic),
        cmocka_unit_test(test_cond_signal_vs_timeout),
        cmocka_unit_test(test_sem_post_vs_timeout),
        cmocka_unit_test(test_sem_errors),
        cmocka_unit_test(test_barrier),
        cmocka_unit_test(test_barrier_busy),
        cmocka_unit_test(test_rwlock_stress),
        cmocka_unit_test(test_rwlock_writer_bounded),
        cmocka_unit_test(test_rwlock_errors),
        cmocka_unit_test(test_once),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_sleep),
        cmocka_unit_test(test_errno_per_nano_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
