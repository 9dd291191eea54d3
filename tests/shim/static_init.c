/*
 * static_init.c -- glibc's static initialisers and object sizes. Binaries
 * embed these layouts (PTHREAD_MUTEX_INITIALIZER and the _NP variants,
 * PTHREAD_COND_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER, PTHREAD_ONCE_INIT),
 * and many programs use zero-filled memory (calloc) as a default mutex or
 * condvar, so the shim must accept all of them as they are.
 */
#include <pthread.h>
#include <stdint.h>
#include "check.h"

static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rw_writer = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_count;
static void once_fn(void) { once_count++; }

/* Objects of the embedded sizes, used by several threads at once. */
struct shared {
    pthread_mutex_t m;
    pthread_cond_t c;
    long n;
    int turn;
};
static struct shared arr[4] = {
    { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 },
    { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 },
    { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 },
    { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 },
};
static void *hammer(void *arg)
{
    struct shared *s = arg;
    for (int i = 0; i < 5000; i++) {
        pthread_mutex_lock(&s->m);
        s->n++;
        pthread_mutex_unlock(&s->m);
    }
    pthread_once(&once, once_fn);
    return NULL;
}

/* Two threads alternate on a calloc'd (all-zero) mutex and condvar. */
static struct shared *zeroed;
static void *alternate(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&zeroed->m);
        while (zeroed->turn != me)
            pthread_cond_wait(&zeroed->c, &zeroed->m);
        zeroed->n++;
        zeroed->turn = 1 - me;
        pthread_cond_signal(&zeroed->c);
        pthread_mutex_unlock(&zeroed->m);
    }
    return NULL;
}

static void *try_rw(void *arg) { return (void *)(intptr_t)pthread_rwlock_trywrlock(arg); }

int main(void)
{
    check_start("static_init");
    printf("sizeof pthread_mutex_t %zu, pthread_cond_t %zu, pthread_rwlock_t %zu, pthread_barrier_t %zu, "
           "pthread_spinlock_t %zu, pthread_once_t %zu, pthread_t %zu, pthread_attr_t %zu\n",
           sizeof(pthread_mutex_t), sizeof(pthread_cond_t), sizeof(pthread_rwlock_t),
           sizeof(pthread_barrier_t), sizeof(pthread_spinlock_t), sizeof(pthread_once_t),
           sizeof(pthread_t), sizeof(pthread_attr_t));

    EXPECT("MUTEX_INITIALIZER lock", pthread_mutex_lock(&plain), 0);
    EXPECT("MUTEX_INITIALIZER trylock(held)", pthread_mutex_trylock(&plain), EBUSY);
    EXPECT("MUTEX_INITIALIZER unlock", pthread_mutex_unlock(&plain), 0);
    EXPECT("RECURSIVE_..._NP lock", pthread_mutex_lock(&recursive), 0);
    EXPECT("RECURSIVE_..._NP relock", pthread_mutex_lock(&recursive), 0);
    EXPECT("RECURSIVE_..._NP unlock", pthread_mutex_unlock(&recursive), 0);
    EXPECT("RECURSIVE_..._NP unlock", pthread_mutex_unlock(&recursive), 0);
    EXPECT("RECURSIVE_..._NP unlock(unlocked)", pthread_mutex_unlock(&recursive), EPERM);
    EXPECT("ERRORCHECK_..._NP lock", pthread_mutex_lock(&errorcheck), 0);
    EXPECT("ERRORCHECK_..._NP relock", pthread_mutex_lock(&errorcheck), EDEADLK);
    EXPECT("ERRORCHECK_..._NP unlock", pthread_mutex_unlock(&errorcheck), 0);
    EXPECT("ERRORCHECK_..._NP unlock(unlocked)", pthread_mutex_unlock(&errorcheck), EPERM);
    EXPECT("ADAPTIVE_..._NP lock", pthread_mutex_lock(&adaptive), 0);
    EXPECT("ADAPTIVE_..._NP trylock(held)", pthread_mutex_trylock(&adaptive), EBUSY);
    EXPECT("ADAPTIVE_..._NP unlock", pthread_mutex_unlock(&adaptive), 0);

    pthread_mutex_lock(&plain);
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 10);
    EXPECT("COND_INITIALIZER timedwait(+10ms)", pthread_cond_timedwait(&cond, &plain, &dl), ETIMEDOUT);
    EXPECT("COND_INITIALIZER signal", pthread_cond_signal(&cond), 0);
    EXPECT("COND_INITIALIZER broadcast", pthread_cond_broadcast(&cond), 0);
    pthread_mutex_unlock(&plain);

    pthread_t t;
    void *res;
    EXPECT("RWLOCK_INITIALIZER rdlock", pthread_rwlock_rdlock(&rw), 0);
    CHECK(pthread_create(&t, NULL, try_rw, &rw) == 0);
    pthread_join(t, &res);
    printf("RWLOCK_INITIALIZER trywrlock from other thread while read-locked: %s\n", errname((int)(intptr_t)res));
    EXPECT("RWLOCK_INITIALIZER unlock", pthread_rwlock_unlock(&rw), 0);
    EXPECT("RWLOCK_WRITER_NONRECURSIVE_..._NP wrlock", pthread_rwlock_wrlock(&rw_writer), 0);
    EXPECT("RWLOCK_WRITER_NONRECURSIVE_..._NP unlock", pthread_rwlock_unlock(&rw_writer), 0);

    pthread_t ts[8];
    for (int i = 0; i < 8; i++) CHECK(pthread_create(&ts[i], NULL, hammer, &arr[i % 4]) == 0);
    for (int i = 0; i < 8; i++) pthread_join(ts[i], NULL);
    long total = 0;
    for (int i = 0; i < 4; i++) total += arr[i].n;
    printf("statically initialised array of mutexes: total %ld; ONCE_INIT ran %d time(s)\n", total, once_count);
    CHECK(total == 40000 && once_count == 1);

    zeroed = calloc(1, sizeof *zeroed);
    pthread_t a, b;
    CHECK(pthread_create(&a, NULL, alternate, (void *)0) == 0);
    CHECK(pthread_create(&b, NULL, alternate, (void *)1) == 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("zero-filled mutex and condvar: %ld alternations\n", zeroed->n);
    CHECK(zeroed->n == 400);
    free(zeroed);

    EXPECT("destroy static mutex", pthread_mutex_destroy(&plain), 0);
    EXPECT("re-init it", pthread_mutex_init(&plain, NULL), 0);
    EXPECT("and lock it", pthread_mutex_lock(&plain), 0);
    pthread_mutex_unlock(&plain);
    return check_end("static_init");
}
