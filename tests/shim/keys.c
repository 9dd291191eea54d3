/*
 * keys.c -- thread-specific data: per-thread values, destructors at thread
 * exit (not for NULL values, repeated while values are set again, up to
 * PTHREAD_DESTRUCTOR_ITERATIONS), key deletion and exhaustion. After
 * pthread_key_create(3p), pthread_getspecific(3p), pthread_key_delete(3p).
 */
#include <pthread.h>
#include <limits.h>
#include <stdint.h>
#include "check.h"

static pthread_key_t k1, k2, again;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long destroyed_sum;
static int destroyed_calls, again_calls;

static void destroy_sum(void *v)
{
    pthread_mutex_lock(&m);
    destroyed_sum += (intptr_t)v;
    destroyed_calls++;
    pthread_mutex_unlock(&m);
}
/* Sets its value again twice: called three times in all for one thread. */
static void destroy_again(void *v)
{
    pthread_mutex_lock(&m);
    again_calls++;
    pthread_mutex_unlock(&m);
    if ((intptr_t)v < 3)
        pthread_setspecific(again, (void *)((intptr_t)v + 1));
}

static void *worker(void *arg)
{
    intptr_t me = (intptr_t)arg;
    int ok = pthread_getspecific(k1) == NULL && pthread_getspecific(k2) == NULL;
    pthread_setspecific(k1, (void *)(me * 10));
    if (me % 2) pthread_setspecific(k2, (void *)me);   /* even threads leave k2 NULL */
    for (int i = 0; i < 100; i++) sched_yield();
    ok &= pthread_getspecific(k1) == (void *)(me * 10);
    ok &= pthread_getspecific(k2) == (me % 2 ? (void *)me : NULL);
    return (void *)(intptr_t)ok;
}
static void *worker_exit(void *arg)
{
    pthread_setspecific(k1, arg);
    pthread_exit(NULL);   /* destructors run on pthread_exit too */
}
static void *worker_again(void *arg)
{
    pthread_setspecific(again, (void *)1);
    return arg;
}

/* pthread_key_delete(3p) and pthread_setspecific(3p): EINVAL for a key
 * that was never made (issue 4's audit). */
static void test_error_audit(void)
{
    pthread_key_t never = PTHREAD_KEYS_MAX + 5;
    EXPECT("key_delete(PTHREAD_KEYS_MAX+5)", pthread_key_delete(never), EINVAL);
    EXPECT("setspecific(PTHREAD_KEYS_MAX+5)", pthread_setspecific(never, &never), EINVAL);
    printf("getspecific(PTHREAD_KEYS_MAX+5) is NULL: %d\n", pthread_getspecific(never) == NULL);
}

int main(void)
{
    check_start("keys");
    EXPECT("key_create(k1)", pthread_key_create(&k1, destroy_sum), 0);
    EXPECT("key_create(k2)", pthread_key_create(&k2, destroy_sum), 0);
    EXPECT("key_create(again)", pthread_key_create(&again, destroy_again), 0);
    printf("distinct keys: %d\n", k1 != k2 && k2 != again);
    EXPECT("setspecific(main)", pthread_setspecific(k1, (void *)1000), 0);

    enum { T = 6 };
    pthread_t t[T];
    void *res;
    int ok = 1;
    for (intptr_t i = 1; i <= T; i++) CHECK(pthread_create(&t[i - 1], NULL, worker, (void *)i) == 0);
    for (int i = 0; i < T; i++) { pthread_join(t[i], &res); ok &= res == (void *)1; }
    printf("values are per thread: %d\n", ok);
    CHECK(ok);
    /* k1: 10+20+...+60 = 210 over 6 calls; k2: 1+3+5 over 3 calls */
    printf("destructor calls %d, sum %ld\n", destroyed_calls, destroyed_sum);
    CHECK(destroyed_calls == 9 && destroyed_sum == 219);
    printf("main's value untouched: %d\n", pthread_getspecific(k1) == (void *)1000);

    CHECK(pthread_create(&t[0], NULL, worker_exit, (void *)7) == 0);
    pthread_join(t[0], NULL);
    printf("destructor after pthread_exit: calls %d, sum %ld\n", destroyed_calls, destroyed_sum);
    CHECK(destroyed_calls == 10 && destroyed_sum == 226);

    CHECK(pthread_create(&t[0], NULL, worker_again, NULL) == 0);
    pthread_join(t[0], NULL);
    printf("destructor that sets its value again ran %d times (iterations max %d)\n", again_calls, PTHREAD_DESTRUCTOR_ITERATIONS);
    CHECK(again_calls == 3);

    EXPECT("key_delete(k2)", pthread_key_delete(k2), 0);
    EXPECT("key_delete(k2) again", pthread_key_delete(k2), EINVAL);
    EXPECT("setspecific(deleted key)", pthread_setspecific(k2, (void *)1), EINVAL);

    /* deleting one key leaves the others' destructors alone */
    int before = destroyed_calls;
    pthread_key_t k3;
    CHECK(pthread_key_create(&k3, NULL) == 0);
    CHECK(pthread_create(&t[0], NULL, worker_exit, (void *)5) == 0);
    pthread_join(t[0], NULL);
    printf("k1 destructor still runs after k2 was deleted: %d\n", destroyed_calls == before + 1);
    CHECK(destroyed_calls == before + 1);

    /* exhaustion: EAGAIN, and every key created can be deleted again */
    static pthread_key_t many[PTHREAD_KEYS_MAX + 8];
    int n = 0, r = 0;
    while (n < PTHREAD_KEYS_MAX + 8 && (r = pthread_key_create(&many[n], NULL)) == 0) n++;
    printf("key exhaustion: %s\n", errname(r));
    CHECK(r == EAGAIN && n <= PTHREAD_KEYS_MAX);
    /* Threads have run: the library must not have spent a key of the
     * program's (k1, again and k3 are live). */
    printf("keys created with 3 live, threads run: PTHREAD_KEYS_MAX - 3: %d\n", n == PTHREAD_KEYS_MAX - 3);
    CHECK(n == PTHREAD_KEYS_MAX - 3);
    int del_ok = 1;
    for (int i = 0; i < n; i++) del_ok &= pthread_key_delete(many[i]) == 0;
    printf("all created keys deleted: %d\n", del_ok);
    CHECK(del_ok);
    pthread_key_delete(k3);
    test_error_audit();
    return check_end("keys");
}
