/*
 * test_foreign.c -- kernel threads that are no VP ("foreign": libc's own
 * pthread_create, not nano-threads) wait on every kind of nthlib object
 * against nano-threads, untimed and timed, on 1 and 2 VPs: they must block
 * their kernel thread and be woken by the nano-threads' unlocks, signals
 * and posts, and time out with the documented codes. Before foreign.c a
 * foreign waiter was queued as nano-thread NULL and its waker or alarm
 * crashed in nth__wake(NULL).
 * Each case runs in a forked child with its own runtime (see test_sync.c).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "nth.h"
#include "child.h"


/* fn on vps VPs in a child (tests/core/child.h); the failure names fn. */
#define run_case(fn, vps) assert_case_ok(fn, child_config(vps), 60, "deadlock")

static uint64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* An absolute deadline ms from now on CLOCK_REALTIME (the timed calls'). */
static struct timespec in_ms(unsigned ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    return ts;
}

enum { NFOREIGN = 3, NNANO = 3, ROUNDS = 300 };

static pthread_t foreign_start(void *(*fn)(void *), void *arg)
{
    pthread_t kt;
    T_EQ(pthread_create(&kt, NULL, fn, arg), 0);   /* libc's: no VP */
    return kt;
}

static nth_t nano_start(void *(*fn)(void *), void *arg)
{
    nth_t t;
    T_EQ(nth_create(&t, NULL, fn, arg), 0);
    return t;
}

/* ---- mutex: contended both ways, counted ---------------------------------- */

static nth_mutex_t mx = NTH_MUTEX_INITIALIZER;
static long counter;

static void *mutex_loop(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        T_EQ(nth_mutex_lock(&mx), 0);
        long c = counter;
        if (i % 16 == 0)
            nth_yield();             /* hold it across a scheduling point */
        counter = c + 1;
        T_EQ(nth_mutex_unlock(&mx), 0);
    }
    return NULL;
}

static void mutex_case(void)
{
    pthread_t kt[NFOREIGN];
    nth_t nt[NNANO];
    for (int i = 0; i < NFOREIGN; i++)
        kt[i] = foreign_start(mutex_loop, NULL);
    for (int i = 0; i < NNANO; i++)
        nt[i] = nano_start(mutex_loop, NULL);
    for (int i = 0; i < NNANO; i++)
        T_EQ(nth_join(nt[i], NULL), 0);
    for (int i = 0; i < NFOREIGN; i++)
        T_EQ(pthread_join(kt[i], NULL), 0);
    T_EQ(counter, (NFOREIGN + NNANO) * ROUNDS);
}

/* A nano-thread holds the lock for good: a foreign timedlock times out;
 * an error-checking mutex knows its foreign owner. */
static volatile int held, release_it;

static void *holder(void *arg)
{
    nth_mutex_t *m = arg;
    T_EQ(nth_mutex_lock(m), 0);
    __atomic_store_n(&held, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&release_it, __ATOMIC_ACQUIRE))
        nth_sleep_ns(1000000);
    T_EQ(nth_mutex_unlock(m), 0);
    return NULL;
}

static void *foreign_timedlock(void *arg)
{
    nth_mutex_t *m = arg;
    struct timespec d = in_ms(30);
    T_EQ(nth_mutex_timedlock(m, &d), ETIMEDOUT);
    __atomic_store_n(&release_it, 1, __ATOMIC_RELEASE);
    T_EQ(nth_mutex_lock(m), 0);       /* woken by the holder's unlock */
    T_EQ(nth_mutex_unlock(m), 0);
    nth_mutex_t ec;
    nth_mutexattr_t a;
    T_EQ(nth_mutexattr_init(&a), 0);
    T_EQ(nth_mutexattr_settype(&a, NTH_MUTEX_ERRORCHECK), 0);
    T_EQ(nth_mutex_init(&ec, &a), 0);
    T_EQ(nth_mutex_lock(&ec), 0);
    T_EQ(nth_mutex_lock(&ec), EDEADLK);
    T_EQ(nth_mutex_unlock(&ec), 0);
    T_EQ(nth_mutex_unlock(&ec), EPERM);
    return NULL;
}

static void mutex_timed_case(void)
{
    static nth_mutex_t m = NTH_MUTEX_INITIALIZER;
    nth_t h = nano_start(holder, &m);
    while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
        nth_sleep_ns(1000000);
    pthread_t kt = foreign_start(foreign_timedlock, &m);
    T_EQ(nth_join(h, NULL), 0);
    T_EQ(pthread_join(kt, NULL), 0);
}

/* ---- condvar: foreign waiters signalled by nano-threads and back ---------- */

static nth_mutex_t cm = NTH_MUTEX_INITIALIZER;
static nth_cond_t cv = NTH_COND_INITIALIZER;
static int turn;                     /* ping-pong: whose move, 0..NFOREIGN*2-1 */

/* Players 0..2N-1 (even: foreign, odd: nano) take turns ROUNDS times. */
static void *cond_player(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int r = 0; r < ROUNDS / 10; r++) {
        T_EQ(nth_mutex_lock(&cm), 0);
        while (turn != me) {
            if (me % 4 == 0) {
                struct timespec d = in_ms(5);
                int e = nth_cond_timedwait(&cv, &cm, &d);
                T_TRUE(e == 0 || e == ETIMEDOUT);
            } else {
                T_EQ(nth_cond_wait(&cv, &cm), 0);
            }
        }
        turn = (turn + 1) % (2 * NFOREIGN);
        T_EQ(nth_cond_broadcast(&cv), 0);
        T_EQ(nth_mutex_unlock(&cm), 0);
    }
    return NULL;
}

static void cond_case(void)
{
    pthread_t kt[NFOREIGN];
    nth_t nt[NFOREIGN];
    for (int i = 0; i < NFOREIGN; i++) {
        kt[i] = foreign_start(cond_player, (void *)(intptr_t)(2 * i));
        nt[i] = nano_start(cond_player, (void *)(intptr_t)(2 * i + 1));
    }
    for (int i = 0; i < NFOREIGN; i++) {
        T_EQ(nth_join(nt[i], NULL), 0);
        T_EQ(pthread_join(kt[i], NULL), 0);
    }
}

static void *foreign_cond_timeout(void *arg)
{
    (void)arg;
    T_EQ(nth_mutex_lock(&cm), 0);
    uint64_t t0 = now_ns(CLOCK_MONOTONIC);
    struct timespec d = in_ms(20);
    T_EQ(nth_cond_timedwait(&cv, &cm, &d), ETIMEDOUT);
    T_TRUE(now_ns(CLOCK_MONOTONIC) - t0 >= 19000000u);
    T_EQ(nth_mutex_unlock(&cm), 0);    /* the mutex is held again */
    struct timespec m;
    clock_gettime(CLOCK_MONOTONIC, &m);
    m.tv_nsec += 10000000;
    if (m.tv_nsec >= 1000000000) {
        m.tv_sec++;
        m.tv_nsec -= 1000000000;
    }
    T_EQ(nth_mutex_lock(&cm), 0);
    T_EQ(nth_cond_clockwait(&cv, &cm, CLOCK_MONOTONIC, &m), ETIMEDOUT);
    T_EQ(nth_mutex_unlock(&cm), 0);
    return NULL;
}

/* Nobody signals: the foreign waiter's own deadline ends the wait, also
 * while every VP is parked. */
static void cond_timeout_case(void)
{
    pthread_t kt = foreign_start(foreign_cond_timeout, NULL);
    T_EQ(nth_sleep_ns(5000000), 0);
    T_EQ(pthread_join(kt, NULL), 0);
}

/* ---- rwlock ---------------------------------------------------------------- */

static nth_rwlock_t rw = NTH_RWLOCK_INITIALIZER;
static long rwdata;

static void *rw_loop(void *arg)
{
    int writer = (int)(intptr_t)arg;
    for (int i = 0; i < ROUNDS; i++) {
        if (writer || i % 3 == 0) {
            T_EQ(nth_rwlock_wrlock(&rw), 0);
            long v = rwdata;
            if (i % 16 == 0)
                nth_yield();
            rwdata = v + 1;
        } else {
            T_EQ(nth_rwlock_rdlock(&rw), 0);
            (void)__atomic_load_n(&rwdata, __ATOMIC_RELAXED);
            if (i % 16 == 0)
                nth_yield();
        }
        T_EQ(nth_rwlock_unlock(&rw), 0);
    }
    return NULL;
}

static void *foreign_rw_timed(void *arg)
{
    (void)arg;
    struct timespec d = in_ms(20);
    T_EQ(nth_rwlock_timedwrlock(&rw, &d), ETIMEDOUT);
    d = in_ms(20);
    T_EQ(nth_rwlock_timedrdlock(&rw, &d), ETIMEDOUT);
    __atomic_store_n(&release_it, 1, __ATOMIC_RELEASE);
    T_EQ(nth_rwlock_rdlock(&rw), 0);   /* woken by the writer's unlock */
    T_EQ(nth_rwlock_unlock(&rw), 0);
    return NULL;
}

static void *rw_holder(void *arg)
{
    (void)arg;
    T_EQ(nth_rwlock_wrlock(&rw), 0);
    __atomic_store_n(&held, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&release_it, __ATOMIC_ACQUIRE))
        nth_sleep_ns(1000000);
    T_EQ(nth_rwlock_unlock(&rw), 0);
    return NULL;
}

static void rwlock_case(void)
{
    pthread_t kt[NFOREIGN];
    nth_t nt[NNANO];
    for (int i = 0; i < NFOREIGN; i++)
        kt[i] = foreign_start(rw_loop, (void *)(intptr_t)(i == 0));
    for (int i = 0; i < NNANO; i++)
        nt[i] = nano_start(rw_loop, (void *)(intptr_t)(i == 0));
    for (int i = 0; i < NNANO; i++)
        T_EQ(nth_join(nt[i], NULL), 0);
    for (int i = 0; i < NFOREIGN; i++)
        T_EQ(pthread_join(kt[i], NULL), 0);
    T_EQ(rwdata, 2 * ROUNDS + (NFOREIGN + NNANO - 2) * ((ROUNDS + 2) / 3));
    nth_t h = nano_start(rw_holder, NULL);
    while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
        nth_sleep_ns(1000000);
    pthread_t f = foreign_start(foreign_rw_timed, NULL);
    T_EQ(nth_join(h, NULL), 0);
    T_EQ(pthread_join(f, NULL), 0);
}

/* ---- barrier --------------------------------------------------------------- */

static nth_barrier_t bar;
static int phase[NFOREIGN + NNANO];

static void *bar_loop(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int r = 0; r < ROUNDS / 10; r++) {
        __atomic_store_n(&phase[me], r, __ATOMIC_RELAXED);
        int e = nth_barrier_wait(&bar);
        T_TRUE(e == 0 || e == NTH_BARRIER_SERIAL_THREAD);
        for (int i = 0; i < NFOREIGN + NNANO; i++)
            T_TRUE(__atomic_load_n(&phase[i], __ATOMIC_RELAXED) >= r);
        e = nth_barrier_wait(&bar);  /* nobody writes phase before all read */
        T_TRUE(e == 0 || e == NTH_BARRIER_SERIAL_THREAD);
    }
    return NULL;
}

static void barrier_case(void)
{
    T_EQ(nth_barrier_init(&bar, NFOREIGN + NNANO), 0);
    pthread_t kt[NFOREIGN];
    nth_t nt[NNANO];
    for (int i = 0; i < NFOREIGN; i++)
        kt[i] = foreign_start(bar_loop, (void *)(intptr_t)i);
    for (int i = 0; i < NNANO; i++)
        nt[i] = nano_start(bar_loop, (void *)(intptr_t)(NFOREIGN + i));
    for (int i = 0; i < NNANO; i++)
        T_EQ(nth_join(nt[i], NULL), 0);
    for (int i = 0; i < NFOREIGN; i++)
        T_EQ(pthread_join(kt[i], NULL), 0);
}

/* ---- semaphore ------------------------------------------------------------- */

static nth_sem_t sem_a, sem_b;

static void *sem_foreign(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        T_EQ(nth_sem_wait(&sem_a), 0);
        T_EQ(nth_sem_post(&sem_b), 0);
    }
    struct timespec d = in_ms(20);
    T_EQ(nth_sem_timedwait(&sem_a, &d), ETIMEDOUT);
    return NULL;
}

static void *sem_nano(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        T_EQ(nth_sem_post(&sem_a), 0);
        T_EQ(nth_sem_wait(&sem_b), 0);
    }
    return NULL;
}

static void sem_case(void)
{
    T_EQ(nth_sem_init(&sem_a, 0), 0);
    T_EQ(nth_sem_init(&sem_b, 0), 0);
    pthread_t kt = foreign_start(sem_foreign, NULL);
    nth_t nt = nano_start(sem_nano, NULL);
    T_EQ(nth_join(nt, NULL), 0);
    T_EQ(pthread_join(kt, NULL), 0);
}

/* ---- sleep, once, join ----------------------------------------------------- */

static nth_once_t once = NTH_ONCE_INIT;
static int once_runs, once_done, misc_done;

static void once_routine(void)
{
    once_runs++;
    nth_sleep_ns(20000000);          /* the foreign caller must wait for it */
    __atomic_store_n(&once_done, 1, __ATOMIC_RELEASE);
}

static void *nano_once(void *arg)
{
    (void)arg;
    T_EQ(nth_once(&once, once_routine), 0);
    return (void *)(intptr_t)42;
}

static void *foreign_misc(void *arg)
{
    nth_t nt = *(nth_t *)arg;
    uint64_t t0 = now_ns(CLOCK_MONOTONIC);
    T_EQ(nth_sleep_ns(10000000), 0);
    T_TRUE(now_ns(CLOCK_MONOTONIC) - t0 >= 10000000u);
    struct timespec d = in_ms(10);
    T_EQ(nth_sleep_until(CLOCK_REALTIME, &d), 0);
    T_TRUE(now_ns(CLOCK_REALTIME) >= (uint64_t)d.tv_sec * 1000000000u + (uint64_t)d.tv_nsec);
    T_EQ(nth_once(&once, once_routine), 0);
    T_EQ(__atomic_load_n(&once_done, __ATOMIC_ACQUIRE), 1);
    void *ret = NULL;
    T_EQ(nth_join(nt, &ret), 0);
    T_EQ((intptr_t)ret, 42);
    __atomic_store_n(&misc_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void misc_case(void)
{
    static nth_t nt;
    nt = nano_start(nano_once, NULL);
    pthread_t kt = foreign_start(foreign_misc, &nt);
    /* libc's pthread_join would hold the only VP from nano_once. */
    while (!__atomic_load_n(&misc_done, __ATOMIC_ACQUIRE))
        nth_sleep_ns(1000000);
    T_EQ(pthread_join(kt, NULL), 0);
    T_EQ(once_runs, 1);
}

#define CASE(name)                                                                 \
    static void name##_1(void **s) { (void)s; run_case(name##_case, 1); }          \
    static void name##_2(void **s) { (void)s; run_case(name##_case, 2); }
CASE(mutex)
CASE(mutex_timed)
CASE(cond)
CASE(cond_timeout)
CASE(rwlock)
CASE(barrier)
CASE(sem)
CASE(misc)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mutex_1),        cmocka_unit_test(mutex_2),
        cmocka_unit_test(mutex_timed_1),  cmocka_unit_test(mutex_timed_2),
        cmocka_unit_test(cond_1),         cmocka_unit_test(cond_2),
        cmocka_unit_test(cond_timeout_1), cmocka_unit_test(cond_timeout_2),
        cmocka_unit_test(rwlock_1),       cmocka_unit_test(rwlock_2),
        cmocka_unit_test(barrier_1),      cmocka_unit_test(barrier_2),
        cmocka_unit_test(sem_1),          cmocka_unit_test(sem_2),
        cmocka_unit_test(misc_1),         cmocka_unit_test(misc_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
