/*
 * c11.c -- C11 threads beside pthreads. Under the shim, thrd_create makes
 * a kernel thread that is no VP (glibc's thrd_create does not go through
 * the pthread_create symbol the shim replaces), and such a thread waits on
 * the same pthread objects as the nano-threads: a contended mutex both
 * ways, a condition variable signalled across the two kinds, a timed wait
 * that nobody signals, a semaphore ping-pong. Before foreign waiters
 * (nthlib/foreign.c) the shim run died of SIGSEGV (nth__wake(NULL)).
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <threads.h>
#include "check.h"

enum { N = 20000, C11 = 2 };

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long n;
static sem_t ping, pong;

static int c11_count(void *a)
{
    (void)a;
    for (int i = 0; i < N; i++) {
        pthread_mutex_lock(&m);
        n++;
        pthread_mutex_unlock(&m);
    }
    return 0;
}

static void *pt_count(void *a)
{
    for (int i = 0; i < N; i++) {
        pthread_mutex_lock(&m);
        n++;
        if (i % 1000 == 0)
            usleep(100);        /* hold it while the C11 threads queue */
        pthread_mutex_unlock(&m);
    }
    return a;
}

/* Ping-pong over a flag under m: the C11 thread waits, timed and untimed,
 * for the pthread's moves and the other way round. */
static int turn;
enum { MOVES = 200 };

static int c11_player(void *a)
{
    (void)a;
    int timeouts_ok = 1;
    for (int i = 0; i < MOVES; i++) {
        pthread_mutex_lock(&m);
        while (turn != 0) {
            if (i % 2) {
                struct timespec d = deadline_ms(CLOCK_REALTIME, 50);
                int r = pthread_cond_timedwait(&cv, &m, &d);
                timeouts_ok &= r == 0 || r == ETIMEDOUT;
            } else {
                pthread_cond_wait(&cv, &m);
            }
        }
        turn = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&m);
    }
    return timeouts_ok;
}

static void *pt_player(void *a)
{
    for (int i = 0; i < MOVES; i++) {
        pthread_mutex_lock(&m);
        while (turn != 1)
            pthread_cond_wait(&cv, &m);
        turn = 0;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&m);
    }
    return a;
}

static int c11_timeout(void *a)
{
    (void)a;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct timespec d = deadline_ms(CLOCK_REALTIME, 20);
    pthread_mutex_lock(&m);
    int r = pthread_cond_timedwait(&cv, &m, &d);
    pthread_mutex_unlock(&m);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return r == ETIMEDOUT && elapsed_ns(t0, t1) >= 19000000;
}

static int c11_sem(void *a)
{
    (void)a;
    for (int i = 0; i < MOVES; i++) {
        if (sem_wait(&ping) != 0)
            return 0;
        sem_post(&pong);
    }
    return 1;
}

static void *pt_sem(void *a)
{
    for (int i = 0; i < MOVES; i++) {
        sem_post(&ping);
        sem_wait(&pong);
    }
    return a;
}

int main(void)
{
    check_start("c11");
    pthread_t p;
    thrd_t t[C11];
    int res;

    CHECK(pthread_create(&p, NULL, pt_count, NULL) == 0);
    for (int i = 0; i < C11; i++)
        CHECK(thrd_create(&t[i], c11_count, NULL) == thrd_success);
    for (int i = 0; i < C11; i++)
        thrd_join(t[i], NULL);
    pthread_join(p, NULL);
    printf("contended mutex: n == %d: %d\n", (C11 + 1) * N, n == (C11 + 1) * N);
    CHECK(n == (C11 + 1) * N);

    CHECK(pthread_create(&p, NULL, pt_player, NULL) == 0);
    CHECK(thrd_create(&t[0], c11_player, NULL) == thrd_success);
    thrd_join(t[0], &res);
    pthread_join(p, NULL);
    printf("condvar ping-pong, %d moves, timed waits ok: %d\n", MOVES, res);
    CHECK(res == 1);

    CHECK(sem_init(&ping, 0, 0) == 0 && sem_init(&pong, 0, 0) == 0);
    CHECK(thrd_create(&t[0], c11_sem, NULL) == thrd_success);
    CHECK(pthread_create(&p, NULL, pt_sem, NULL) == 0);
    thrd_join(t[0], &res);
    pthread_join(p, NULL);
    printf("semaphore ping-pong, %d moves: %d\n", MOVES, res);
    CHECK(res == 1);

    /* Nobody signals: its own deadline ends the C11 thread's wait. */
    CHECK(pthread_create(&p, NULL, pt_count, NULL) == 0);
    CHECK(thrd_create(&t[0], c11_timeout, NULL) == thrd_success);
    thrd_join(t[0], &res);
    pthread_join(p, NULL);
    printf("unsignalled timedwait: ETIMEDOUT after its deadline: %d\n", res);
    CHECK(res == 1);
    return check_end("c11");
}
