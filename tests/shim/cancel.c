/*
 * cancel.c -- deferred cancellation at cancellation points (condvar wait,
 * join, sleep, semaphore wait, read, pthread_testcancel), cleanup handlers
 * as glibc's pthread_cleanup_push/pop macros expand them (run in reverse
 * order, then key destructors), PTHREAD_CANCELED from join,
 * setcancelstate/setcanceltype and their errors. Asynchronous cancellation
 * may be refused with an error code; if accepted it must work.
 * After pthread_cancel(3p), pthread_cleanup_push(3p),
 * pthread_setcancelstate(3p) and pthreads(7) "Cancellation points".
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include "check.h"

static char trail[128];          /* what ran, in order */
static pthread_mutex_t tm = PTHREAD_MUTEX_INITIALIZER;
static void note(const char *s)
{
    pthread_mutex_lock(&tm);
    strncat(trail, s, sizeof trail - strlen(trail) - 1);
    pthread_mutex_unlock(&tm);
}
static void reset(void) { trail[0] = 0; }

static pthread_key_t key;
static void key_destructor(void *v) { (void)v; note("K"); }
static void cleanup_a(void *arg) { (void)arg; note("A"); }
static void cleanup_b(void *arg) { (void)arg; note("B"); }
static void cleanup_unlock(void *arg) { note("U"); pthread_mutex_unlock(arg); }

static sem_t ready;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;

static void *in_cond_wait(void *arg)
{
    (void)arg;
    pthread_setspecific(key, (void *)1);
    pthread_cleanup_push(cleanup_a, NULL);
    pthread_cleanup_push(cleanup_b, NULL);
    pthread_mutex_lock(&m);
    pthread_cleanup_push(cleanup_unlock, &m);
    sem_post(&ready);
    for (;;)
        pthread_cond_wait(&c, &m);     /* cancellation point; relocks m first */
    pthread_cleanup_pop(1);
    pthread_cleanup_pop(1);
    pthread_cleanup_pop(1);
    return NULL;
}

static sem_t never;
static int pipe_fd[2];
static pthread_t join_target;
static void *at_point(void *arg)
{
    int which = (int)(intptr_t)arg;
    pthread_cleanup_push(cleanup_a, NULL);
    sem_post(&ready);
    switch (which) {
    case 0: { struct timespec ts = { 30, 0 }; nanosleep(&ts, NULL); break; }
    case 1: sem_wait(&never); break;
    case 2: { char b; (void)!read(pipe_fd[0], &b, 1); break; }
    case 3: pthread_join(join_target, NULL); break;
    case 4: sleep(30); break;
    case 5: for (;;) pthread_testcancel(); break;
    }
    pthread_cleanup_pop(0);
    return (void *)1;
}

static void *disabled_then_enabled(void *arg)
{
    (void)arg;
    int old = -1;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    pthread_cleanup_push(cleanup_a, NULL);
    sem_post(&ready);
    sem_wait(&never);                      /* not cancelled here: disabled */
    note("R");                             /* reached with cancel pending */
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
    note(old == PTHREAD_CANCEL_DISABLE ? "D" : "?");
    pthread_testcancel();
    note("X");                             /* never reached */
    pthread_cleanup_pop(0);
    return NULL;
}

static void *pop_and_exit(void *arg)
{
    (void)arg;
    pthread_cleanup_push(cleanup_a, NULL);
    pthread_cleanup_push(cleanup_b, NULL);
    pthread_cleanup_pop(0);                /* B removed, not run */
    pthread_cleanup_push(cleanup_b, NULL);
    pthread_cleanup_pop(1);                /* B runs now */
    pthread_setspecific(key, (void *)1);
    pthread_exit((void *)7);               /* runs A, then the destructor */
    pthread_cleanup_pop(0);
    return NULL;
}

static volatile int spin_forever = 1;
static void *async_target(void *arg)
{
    (void)arg;
    int old;
    int r = pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
    if (r != 0) {
        fprintf(stderr, "note: asynchronous cancellation refused: %s\n", errname(r));
        sem_post(&ready);
        return (void *)(intptr_t)(r == ENOTSUP || r == EINVAL ? 2 : 3);
    }
    sem_post(&ready);
    while (spin_forever) { }               /* no cancellation point */
    return (void *)3;
}

static void *self_cancel(void *arg)
{
    (void)arg;
    pthread_cancel(pthread_self());
    note("S");                             /* deferred: still runs */
    pthread_testcancel();
    note("X");
    return NULL;
}

int main(void)
{
    check_start("cancel");
    sem_init(&ready, 0, 0);
    sem_init(&never, 0, 0);
    pthread_key_create(&key, key_destructor);
    pthread_t t;
    void *res;
    int old;

    EXPECT("setcancelstate(42)", pthread_setcancelstate(42, &old), EINVAL);
    EXPECT("setcanceltype(42)", pthread_setcanceltype(42, &old), EINVAL);
    EXPECT("setcancelstate(ENABLE)", pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old), 0);
    printf("default state enabled: %d\n", old == PTHREAD_CANCEL_ENABLE);
    EXPECT("setcanceltype(DEFERRED)", pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old), 0);
    printf("default type deferred: %d\n", old == PTHREAD_CANCEL_DEFERRED);

    /* cond wait: handlers in reverse order, mutex relocked, destructor last */
    reset();
    CHECK(pthread_create(&t, NULL, in_cond_wait, NULL) == 0);
    sem_wait(&ready);
    EXPECT("cancel(in cond_wait)", pthread_cancel(t), 0);
    pthread_join(t, &res);
    printf("cond_wait: canceled %d, trail %s\n", res == PTHREAD_CANCELED, trail);
    CHECK(res == PTHREAD_CANCELED && strcmp(trail, "UBAK") == 0);
    CHECK(pthread_mutex_trylock(&m) == 0);   /* the handler released it */
    pthread_mutex_unlock(&m);

    /* the other cancellation points the shim owns */
    CHECK(pipe(pipe_fd) == 0);
    const char *names[] = { "nanosleep", "sem_wait", "read", "join", "sleep", "testcancel" };
    for (int i = 0; i < 6; i++) {
        reset();
        pthread_t blocker = 0;
        if (i == 3) {
            CHECK(pthread_create(&blocker, NULL, at_point, (void *)1) == 0);
            sem_wait(&ready);
            join_target = blocker;
        }
        CHECK(pthread_create(&t, NULL, at_point, (void *)(intptr_t)i) == 0);
        sem_wait(&ready);
        pthread_cancel(t);
        pthread_join(t, &res);
        printf("%s: canceled %d, trail %s\n", names[i], res == PTHREAD_CANCELED, trail);
        CHECK(res == PTHREAD_CANCELED && strcmp(trail, "A") == 0);
        if (i == 3) {                          /* the join target is still there */
            pthread_cancel(blocker);
            pthread_join(blocker, &res);
            CHECK(res == PTHREAD_CANCELED);
        }
    }

    /* disabled, then enabled: acts at the next cancellation point only */
    reset();
    CHECK(pthread_create(&t, NULL, disabled_then_enabled, NULL) == 0);
    sem_wait(&ready);
    pthread_cancel(t);
    sem_post(&never);
    pthread_join(t, &res);
    printf("disabled then enabled: canceled %d, trail %s\n", res == PTHREAD_CANCELED, trail);
    CHECK(res == PTHREAD_CANCELED && strcmp(trail, "RDA") == 0);

    /* pop(0) / pop(1), pthread_exit runs handlers then destructors */
    reset();
    CHECK(pthread_create(&t, NULL, pop_and_exit, NULL) == 0);
    pthread_join(t, &res);
    printf("pop and exit: value %d, trail %s\n", (int)(intptr_t)res, trail);
    CHECK(res == (void *)7 && strcmp(trail, "BAK") == 0);

    /* cancelling oneself is deferred to the next cancellation point */
    reset();
    CHECK(pthread_create(&t, NULL, self_cancel, NULL) == 0);
    pthread_join(t, &res);
    printf("self cancel: canceled %d, trail %s\n", res == PTHREAD_CANCELED, trail);
    CHECK(res == PTHREAD_CANCELED && strcmp(trail, "S") == 0);

    /* asynchronous: works, or the type is refused with an error code */
    CHECK(pthread_create(&t, NULL, async_target, NULL) == 0);
    sem_wait(&ready);
    pthread_cancel(t);
    pthread_join(t, &res);
    int async_ok = res == PTHREAD_CANCELED || res == (void *)2;
    printf("asynchronous cancel: ok %d\n", async_ok);
    CHECK(async_ok);
    return check_end("cancel");
}
