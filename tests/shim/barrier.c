/*
 * barrier.c -- barriers: exactly one PTHREAD_BARRIER_SERIAL_THREAD per round,
 * no thread leaves a round before all arrive, attribute and count errors.
 * After pthread_barrier_wait(3p), pthread_barrier_init(3p).
 */
#include <pthread.h>
#include <stdint.h>
#include "check.h"

enum { T = 4, ROUNDS = 50 };
static pthread_barrier_t b;
static int round_of[T];
static int serials[ROUNDS];
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg, early = 0;
    for (int r = 0; r < ROUNDS; r++) {
        __atomic_store_n(&round_of[me], r, __ATOMIC_SEQ_CST);
        int ret = pthread_barrier_wait(&b);
        if (ret == PTHREAD_BARRIER_SERIAL_THREAD) {
            pthread_mutex_lock(&m);
            serials[r]++;
            pthread_mutex_unlock(&m);
        } else if (ret != 0) {
            early = 1;
        }
        for (int o = 0; o < T; o++)
            if (__atomic_load_n(&round_of[o], __ATOMIC_SEQ_CST) < r) early = 1;
        /* second barrier: nobody starts round r+1 while another still checks r */
        ret = pthread_barrier_wait(&b);
        if (ret != 0 && ret != PTHREAD_BARRIER_SERIAL_THREAD) early = 1;
    }
    return (void *)(intptr_t)early;
}

int main(void)
{
    check_start("barrier");
    pthread_barrierattr_t a;
    int v;
    EXPECT("barrier_init(count 0)", pthread_barrier_init(&b, NULL, 0), EINVAL);
    pthread_barrierattr_init(&a);
    pthread_barrierattr_getpshared(&a, &v);
    printf("default pshared private: %d\n", v == PTHREAD_PROCESS_PRIVATE);
    EXPECT("barrierattr_setpshared(42)", pthread_barrierattr_setpshared(&a, 42), EINVAL);
    /* a refused PROCESS_SHARED (ENOTSUP under the shim) must not give a
     * private barrier to a program that ignores the error: init agrees with
     * the setter (natively both succeed) */
    int r1 = pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    int r2 = pthread_barrier_init(&b, &a, T);
    if (r2 == 0) pthread_barrier_destroy(&b);
    printf("pshared: setter and init agree: %d\n", r2 == r1);
    CHECK(r2 == r1);
    EXPECT("barrierattr_setpshared(PRIVATE)", pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE), 0);
    EXPECT("barrier_init(4)", pthread_barrier_init(&b, &a, T), 0);
    pthread_barrierattr_destroy(&a);
    pthread_t t[T];
    for (intptr_t i = 0; i < T; i++) CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
    int bad = 0;
    void *res;
    for (int i = 0; i < T; i++) { pthread_join(t[i], &res); bad |= res != NULL; }
    int one_each = 1;
    for (int r = 0; r < ROUNDS; r++) one_each &= serials[r] == 1;
    printf("%d rounds, one serial thread per round: %d, nobody left early: %d\n", ROUNDS, one_each, !bad);
    CHECK(one_each && !bad);
    EXPECT("barrier_destroy", pthread_barrier_destroy(&b), 0);

    /* a barrier of one never blocks and always elects the caller */
    EXPECT("barrier_init(1)", pthread_barrier_init(&b, NULL, 1), 0);
    printf("barrier of one returns serial: %d\n", pthread_barrier_wait(&b) == PTHREAD_BARRIER_SERIAL_THREAD);
    pthread_barrier_destroy(&b);
    return check_end("barrier");
}
