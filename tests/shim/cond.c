/*
 * cond.c -- condition variables: signal, broadcast, timed waits on
 * CLOCK_REALTIME and (pthread_condattr_setclock) CLOCK_MONOTONIC,
 * pthread_cond_clockwait, attribute errors. After pthread_cond_wait(3p),
 * pthread_cond_timedwait(3p), pthread_condattr_setclock(3p).
 */
#include <pthread.h>
#include <stdint.h>
#include "check.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
enum { CAP = 4, ITEMS = 5000, PRODUCERS = 2, CONSUMERS = 3 };
static int buf[CAP], head, count, produced_left = ITEMS * PRODUCERS;
static long consumed_sum;

static void *producer(void *arg)
{
    for (int i = 1; i <= ITEMS; i++) {
        pthread_mutex_lock(&m);
        while (count == CAP)
            pthread_cond_wait(&not_full, &m);
        buf[(head + count++) % CAP] = i;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&m);
    }
    return arg;
}

static void *consumer(void *arg)
{
    long sum = 0;
    for (;;) {
        pthread_mutex_lock(&m);
        while (count == 0 && produced_left > 0)
            pthread_cond_wait(&not_empty, &m);
        if (count == 0) {
            pthread_mutex_unlock(&m);
            break;
        }
        sum += buf[head];
        head = (head + 1) % CAP;
        count--;
        if (--produced_left == 0)
            pthread_cond_broadcast(&not_empty);   /* let the others leave */
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&m);
    }
    pthread_mutex_lock(&m);
    consumed_sum += sum;
    pthread_mutex_unlock(&m);
    return arg;
}

static pthread_cond_t go = PTHREAD_COND_INITIALIZER;
static int go_flag, waiting;
static pthread_cond_t mono;

/* Waits on the monotonic condvar with a deadline far away: only a signal
 * can end it in time; returns the wait's result. */
static void *wait_mono(void *arg)
{
    int r = 0;
    (void)arg;
    pthread_mutex_lock(&m);
    waiting++;
    pthread_cond_signal(&not_full);
    struct timespec dl = deadline_ms(CLOCK_MONOTONIC, 30000);
    while (!go_flag && r == 0)
        r = pthread_cond_timedwait(&mono, &m, &dl);
    waiting--;
    pthread_mutex_unlock(&m);
    return (void *)(intptr_t)r;
}
static void *wait_go(void *arg)
{
    pthread_mutex_lock(&m);
    waiting++;
    pthread_cond_signal(&not_full);
    while (!go_flag)
        pthread_cond_wait(&go, &m);
    waiting--;
    pthread_mutex_unlock(&m);
    return arg;
}

/* The error cases of pthread_condattr_setclock(3p) and
 * pthread_cond_timedwait(3p) not covered above (issue 4's audit). */
static void test_error_audit(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    EXPECT("condattr_setclock(12345)", pthread_condattr_setclock(&ca, 12345), EINVAL);
    EXPECT("condattr_setclock(CLOCK_THREAD_CPUTIME_ID)", pthread_condattr_setclock(&ca, CLOCK_THREAD_CPUTIME_ID), EINVAL);
    pthread_condattr_destroy(&ca);
    pthread_mutexattr_t ma;
    pthread_mutex_t ec;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
    CHECK(pthread_mutex_init(&ec, &ma) == 0);
    pthread_mutexattr_destroy(&ma);
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 20);
    /* glibc: the error-checking mutex's unlock error (EPERM), before any wait. */
    EXPECT("timedwait(errorcheck mutex not held)", pthread_cond_timedwait(&c, &ec, &dl), EPERM);
    pthread_mutex_lock(&ec);
    dl = deadline_ms(CLOCK_MONOTONIC, 20);
    EXPECT("clockwait(clock 12345)", pthread_cond_clockwait(&c, &ec, 12345, &dl), EINVAL);
    pthread_mutex_unlock(&ec);
    CHECK(pthread_mutex_destroy(&ec) == 0);
    CHECK(pthread_cond_destroy(&c) == 0);
}

int main(void)
{
    check_start("cond");
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++) CHECK(pthread_create(&c[i], NULL, consumer, NULL) == 0);
    for (int i = 0; i < PRODUCERS; i++) CHECK(pthread_create(&p[i], NULL, producer, NULL) == 0);
    for (int i = 0; i < PRODUCERS; i++) pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++) pthread_join(c[i], NULL);
    printf("bounded buffer: consumed sum %ld\n", consumed_sum);
    CHECK(consumed_sum == (long)PRODUCERS * ITEMS * (ITEMS + 1) / 2);

    /* broadcast wakes every waiter */
    enum { W = 10 };
    pthread_t w[W];
    for (int i = 0; i < W; i++) CHECK(pthread_create(&w[i], NULL, wait_go, NULL) == 0);
    pthread_mutex_lock(&m);
    while (waiting < W)
        pthread_cond_wait(&not_full, &m);
    go_flag = 1;
    EXPECT("broadcast", pthread_cond_broadcast(&go), 0);
    pthread_mutex_unlock(&m);
    for (int i = 0; i < W; i++) pthread_join(w[i], NULL);
    printf("broadcast released waiters, left waiting: %d\n", waiting);
    CHECK(waiting == 0);

    /* signal with no waiter is not remembered */
    pthread_cond_t lone = PTHREAD_COND_INITIALIZER;
    EXPECT("signal(no waiter)", pthread_cond_signal(&lone), 0);
    pthread_mutex_lock(&m);
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 20);
    EXPECT("timedwait(after lone signal, +20ms)", pthread_cond_timedwait(&lone, &m, &dl), ETIMEDOUT);
    pthread_mutex_unlock(&m);

    /* realtime timed wait */
    pthread_mutex_lock(&m);
    struct timespec t0, t1;
    clock_gettime(CLOCK_REALTIME, &t0);
    dl = deadline_ms(CLOCK_REALTIME, 30);
    EXPECT("timedwait realtime +30ms", pthread_cond_timedwait(&go, &m, &dl), ETIMEDOUT);
    clock_gettime(CLOCK_REALTIME, &t1);
    printf("did not return before the deadline: %d\n", elapsed_ns(dl, t1) >= 0);
    CHECK(elapsed_ns(dl, t1) >= 0);
    struct timespec bad = { 0, 1000000000L };
    EXPECT("timedwait(tv_nsec 1e9)", pthread_cond_timedwait(&go, &m, &bad), EINVAL);
    struct timespec past = { 1, 0 };
    EXPECT("timedwait(deadline in 1970)", pthread_cond_timedwait(&go, &m, &past), ETIMEDOUT);
    pthread_mutex_unlock(&m);

    /* monotonic clock */
    pthread_condattr_t ca;
    clockid_t clk;
    pthread_condattr_init(&ca);
    pthread_condattr_getclock(&ca, &clk);
    printf("default clock realtime: %d\n", clk == CLOCK_REALTIME);
    EXPECT("setclock(CLOCK_PROCESS_CPUTIME_ID)", pthread_condattr_setclock(&ca, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
    EXPECT("setclock(CLOCK_MONOTONIC)", pthread_condattr_setclock(&ca, CLOCK_MONOTONIC), 0);
    pthread_condattr_getclock(&ca, &clk);
    printf("getclock monotonic: %d\n", clk == CLOCK_MONOTONIC);
    int ps;
    pthread_condattr_getpshared(&ca, &ps);
    printf("default pshared private: %d\n", ps == PTHREAD_PROCESS_PRIVATE);
    EXPECT("condattr_setpshared(42)", pthread_condattr_setpshared(&ca, 42), EINVAL);
    /* a refused PROCESS_SHARED (ENOTSUP) must not give a private condvar to
     * a program that ignores the error: init agrees with the setter */
    pthread_cond_t psc;
    int r1 = pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    int r2 = pthread_cond_init(&psc, &ca);
    if (r2 == 0) pthread_cond_destroy(&psc);
    printf("pshared: setter and init agree: %d\n", r2 == r1);
    CHECK(r2 == r1);
    EXPECT("condattr_setpshared(PRIVATE)", pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_PRIVATE), 0);
    EXPECT("cond_init(monotonic)", pthread_cond_init(&mono, &ca), 0);
    pthread_condattr_destroy(&ca);
    pthread_mutex_lock(&m);
    dl = deadline_ms(CLOCK_MONOTONIC, 30);
    EXPECT("timedwait monotonic +30ms", pthread_cond_timedwait(&mono, &m, &dl), ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("did not return before the monotonic deadline: %d\n", elapsed_ns(dl, t1) >= 0);
    CHECK(elapsed_ns(dl, t1) >= 0);
    dl = deadline_ms(CLOCK_MONOTONIC, 20);
    EXPECT("clockwait(CLOCK_MONOTONIC, +20ms)", pthread_cond_clockwait(&go, &m, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
    EXPECT("clockwait(CLOCK_PROCESS_CPUTIME_ID)", pthread_cond_clockwait(&go, &m, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);
    pthread_mutex_unlock(&m);

    /* a monotonic timed wait is woken by a signal well before its deadline */
    go_flag = 0;
    pthread_t s;
    CHECK(pthread_create(&s, NULL, wait_mono, NULL) == 0);
    pthread_mutex_lock(&m);
    while (waiting < 1)
        pthread_cond_wait(&not_full, &m);
    go_flag = 1;
    pthread_cond_signal(&mono);
    pthread_mutex_unlock(&m);
    void *res;
    pthread_join(s, &res);
    printf("monotonic timed wait ended by signal: %s\n", errname((int)(intptr_t)res));
    CHECK(res == NULL);
    EXPECT("cond_destroy(monotonic)", pthread_cond_destroy(&mono), 0);
    EXPECT("cond_destroy(go)", pthread_cond_destroy(&go), 0);
    test_error_audit();
    return check_end("cond");
}
