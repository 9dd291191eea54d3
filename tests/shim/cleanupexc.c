/*
 * cleanupexc.c -- C compiled with -fexceptions: <pthread.h> expands
 * pthread_cleanup_push into a cleanup-attribute variable (no setjmp
 * buffer, nothing registered with the library), so only an unwind of the
 * stack runs its handlers; __attribute__((cleanup)) variables of the same
 * frames run in the same unwind, newest first. At pthread_exit and at a
 * cancellation acted upon (condvar wait, pthread_testcancel), then key
 * destructors. After pthread_cleanup_push(3p), pthread_exit(3p).
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include "check.h"

#ifndef __EXCEPTIONS
#error "cleanupexc.c tests the -fexceptions expansion of pthread_cleanup_push"
#endif

static char trail[128];          /* read after the join */
static void note(const char *s) { strncat(trail, s, sizeof trail - strlen(trail) - 1); }
static void handler(void *arg) { note(arg); }
static void scope_end(const char **s) { note(*s); }

static pthread_key_t key;
static void key_destructor(void *v) { (void)v; note("key "); }

static sem_t ready;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static void unlock(void *mu) { note("unlock "); pthread_mutex_unlock(mu); }

static __attribute__((noinline)) void inner_exit(void)
{
    const char *v __attribute__((cleanup(scope_end))) = "inner-var ";
    (void)v;
    pthread_cleanup_push(handler, (void *)"inner-handler ");
    pthread_exit((void *)9);
    pthread_cleanup_pop(0);
}

static void *exits(void *arg)
{
    (void)arg;
    pthread_setspecific(key, (void *)1);
    const char *v __attribute__((cleanup(scope_end))) = "outer-var ";
    (void)v;
    pthread_cleanup_push(handler, (void *)"outer-handler ");
    inner_exit();
    pthread_cleanup_pop(0);
    return NULL;
}

static void *waits(void *arg)
{
    (void)arg;
    pthread_setspecific(key, (void *)1);
    pthread_cleanup_push(handler, (void *)"outer-handler ");
    pthread_mutex_lock(&m);
    pthread_cleanup_push(unlock, &m);
    sem_post(&ready);
    for (;;)
        pthread_cond_wait(&c, &m);   /* cancellation point: relocks m first */
    pthread_cleanup_pop(1);
    pthread_cleanup_pop(1);
    return NULL;
}

static void *loops(void *arg)
{
    (void)arg;
    const char *v __attribute__((cleanup(scope_end))) = "loop-var ";
    (void)v;
    pthread_cleanup_push(handler, (void *)"loop-handler ");
    sem_post(&ready);
    for (;;)
        pthread_testcancel();
    pthread_cleanup_pop(0);
    return NULL;
}

static void *join_one(void *(*fn)(void *), int cancel)
{
    trail[0] = 0;
    pthread_t t;
    void *ret = NULL;
    EXPECT("create", pthread_create(&t, NULL, fn, NULL), 0);
    if (cancel) {
        sem_wait(&ready);
        EXPECT("cancel", pthread_cancel(t), 0);
    }
    EXPECT("join", pthread_join(t, &ret), 0);
    return ret;
}

int main(void)
{
    check_start("cleanupexc");
    sem_init(&ready, 0, 0);
    pthread_key_create(&key, key_destructor);

    CHECK(join_one(exits, 0) == (void *)9);
    printf("pthread_exit: %s\n", trail);
    CHECK(strcmp(trail, "inner-handler inner-var outer-handler outer-var key ") == 0);

    CHECK(join_one(waits, 1) == PTHREAD_CANCELED);
    printf("cancelled in a condvar wait: %s\n", trail);
    CHECK(strcmp(trail, "unlock outer-handler key ") == 0);
    CHECK(pthread_mutex_trylock(&m) == 0);
    pthread_mutex_unlock(&m);

    CHECK(join_one(loops, 1) == PTHREAD_CANCELED);
    printf("cancelled in pthread_testcancel: %s\n", trail);
    CHECK(strcmp(trail, "loop-handler loop-var ") == 0);
    return check_end("cleanupexc");
}
