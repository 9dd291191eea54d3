/*
 * mutex.c -- every mutex type and attribute with its POSIX error codes
 * (pthread_mutex_lock(3p), pthread_mutexattr_settype(3p),
 * pthread_mutexattr_setrobust(3p), pthread_mutex_timedlock(3p)).
 * Robust, process-shared and priority-inheritance mutexes must either work
 * or be refused with a documented error code at the attribute or init call;
 * stdout is the same in both cases (the detail goes to stderr), so that the
 * shim may take either road but never silently misbehave.
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "check.h"

static pthread_mutex_t m;

static void *try_other(void *arg) { (void)arg; return (void *)(intptr_t)pthread_mutex_trylock(&m); }
static void *unlock_other(void *arg) { (void)arg; return (void *)(intptr_t)pthread_mutex_unlock(&m); }
static void *timedlock_other(void *arg)
{
    (void)arg;
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 20);
    int r1 = pthread_mutex_timedlock(&m, &dl);
    struct timespec bad = { 0, 2000000000L };
    int r2 = pthread_mutex_timedlock(&m, &bad);
    struct timespec mdl = deadline_ms(CLOCK_MONOTONIC, 20);
    int r3 = pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &mdl);
    return (void *)(intptr_t)(r1 == ETIMEDOUT && r2 == EINVAL && r3 == ETIMEDOUT);
}
static int in_other(void *(*fn)(void *))
{
    pthread_t t;
    void *r;
    if (pthread_create(&t, NULL, fn, NULL) != 0 || pthread_join(t, &r) != 0) return -1;
    return (int)(intptr_t)r;
}

static void init_type(int type)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, type);
    CHECK(pthread_mutex_init(&m, &a) == 0);
    pthread_mutexattr_destroy(&a);
}

static pthread_mutex_t counter_m = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static void *count_up(void *arg)
{
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&counter_m);
        counter++;
        pthread_mutex_unlock(&counter_m);
    }
    return arg;
}

static pthread_mutex_t robust_m;
static void *die_holding(void *arg) { (void)arg; pthread_mutex_lock(&robust_m); return NULL; }

static void test_robust(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    int r = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (r == 0) r = pthread_mutex_init(&robust_m, &a);
    pthread_mutexattr_destroy(&a);
    if (r != 0) {
        fprintf(stderr, "note: robust mutexes refused: %s\n", errname(r));
        CHECK(r == ENOTSUP || r == EINVAL);
        printf("robust: ok\n");
        return;
    }
    int v;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutexattr_getrobust(&a, &v);
    CHECK(v == PTHREAD_MUTEX_ROBUST);
    pthread_mutexattr_destroy(&a);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, die_holding, NULL) == 0);
    pthread_join(t, NULL);
    int r1 = pthread_mutex_lock(&robust_m);
    int r2 = pthread_mutex_consistent(&robust_m);
    int r3 = pthread_mutex_unlock(&robust_m);
    int r4 = pthread_mutex_lock(&robust_m);
    pthread_mutex_unlock(&robust_m);
    /* owner dies again; this time nobody makes it consistent */
    CHECK(pthread_create(&t, NULL, die_holding, NULL) == 0);
    pthread_join(t, NULL);
    int r5 = pthread_mutex_lock(&robust_m);
    int r6 = pthread_mutex_unlock(&robust_m);
    int r7 = pthread_mutex_lock(&robust_m);
    fprintf(stderr, "note: robust: %s %s %s %s %s %s %s\n", errname(r1), errname(r2), errname(r3),
            errname(r4), errname(r5), errname(r6), errname(r7));
    CHECK(r1 == EOWNERDEAD && r2 == 0 && r3 == 0 && r4 == 0);
    CHECK(r5 == EOWNERDEAD && r6 == 0 && r7 == ENOTRECOVERABLE);
    printf("robust: ok\n");
}

/* A program that ignores a refused robust or process-shared setter must not
 * get a mutex without what it asked for: init then refuses the attribute
 * with the setter's error (natively both succeed). Asking for the default
 * again makes the attribute usable. */
static void test_refused_attr_init(void)
{
    pthread_mutexattr_t a;
    pthread_mutex_t m;
    pthread_mutexattr_init(&a);
    int r1 = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    int r2 = pthread_mutex_init(&m, &a);
    if (r2 == 0) pthread_mutex_destroy(&m);
    printf("robust: setter and init agree: %d\n", r2 == r1);
    CHECK(r2 == r1);
    EXPECT("setrobust(STALLED) after", pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_STALLED), 0);
    EXPECT("init after STALLED", pthread_mutex_init(&m, &a), 0);
    pthread_mutex_destroy(&m);
    r1 = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    r2 = pthread_mutex_init(&m, &a);
    if (r2 == 0) pthread_mutex_destroy(&m);
    printf("pshared: setter and init agree: %d\n", r2 == r1);
    CHECK(r2 == r1);
    EXPECT("setpshared(PRIVATE) after", pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE), 0);
    EXPECT("init after PRIVATE", pthread_mutex_init(&m, &a), 0);
    pthread_mutex_destroy(&m);
    pthread_mutexattr_destroy(&a);
}

static void test_pshared(void)
{
    pthread_mutexattr_t a;
    int v = -1;
    pthread_mutexattr_init(&a);
    EXPECT("mutexattr_setpshared(42)", pthread_mutexattr_setpshared(&a, 42), EINVAL);
    struct shared { pthread_mutex_t m; long n; } *sh =
        mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);
    int r = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    if (r == 0) r = pthread_mutex_init(&sh->m, &a);
    if (r != 0) {
        fprintf(stderr, "note: process-shared mutexes refused: %s\n", errname(r));
        CHECK(r == ENOTSUP || r == EINVAL);
        printf("pshared: ok\n");
    } else {
        pthread_mutexattr_getpshared(&a, &v);
        CHECK(v == PTHREAD_PROCESS_SHARED);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            for (int i = 0; i < 20000; i++) {
                pthread_mutex_lock(&sh->m);
                sh->n++;
                pthread_mutex_unlock(&sh->m);
            }
            _exit(0);
        }
        for (int i = 0; i < 20000; i++) {
            pthread_mutex_lock(&sh->m);
            sh->n++;
            pthread_mutex_unlock(&sh->m);
        }
        int st;
        CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        CHECK(sh->n == 40000);
        pthread_mutex_destroy(&sh->m);
        printf("pshared: ok\n");
    }
    pthread_mutexattr_destroy(&a);
    munmap(sh, sizeof *sh);
}

static void test_protocol(void)
{
    pthread_mutexattr_t a;
    int v = -1;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_getprotocol(&a, &v);
    printf("default protocol none: %d\n", v == PTHREAD_PRIO_NONE);
    EXPECT("setprotocol(42)", pthread_mutexattr_setprotocol(&a, 42), EINVAL);
    const int protos[] = { PTHREAD_PRIO_INHERIT, PTHREAD_PRIO_PROTECT };
    for (int i = 0; i < 2; i++) {
        pthread_mutex_t pm;
        int r = pthread_mutexattr_setprotocol(&a, protos[i]);
        if (r == 0) r = pthread_mutex_init(&pm, &a);
        if (r == 0) {
            r = pthread_mutex_lock(&pm);
            if (r == 0) CHECK(pthread_mutex_unlock(&pm) == 0);
            pthread_mutex_destroy(&pm);
        }
        if (r != 0) {
            fprintf(stderr, "note: protocol %d refused: %s\n", protos[i], errname(r));
            CHECK(r == ENOTSUP || r == EINVAL || r == EPERM);
        }
        printf("protocol %s: ok\n", i ? "protect" : "inherit");
    }
    pthread_mutexattr_destroy(&a);
}

/* The error cases of pthread_mutex_lock(3p), pthread_mutex_timedlock(3p),
 * pthread_mutex_getprioceiling(3p) not covered above (issue 4's audit):
 * a thread holds an error-checking, a recursive and a normal mutex while
 * main tries them. */
static pthread_mutex_t audit_ec, audit_rec, audit_norm = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t audit_bar;
static void *audit_holder(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&audit_ec);
    pthread_mutex_lock(&audit_rec);
    pthread_mutex_lock(&audit_norm);
    pthread_barrier_wait(&audit_bar);   /* held */
    pthread_barrier_wait(&audit_bar);   /* main is done */
    pthread_mutex_unlock(&audit_norm);
    pthread_mutex_unlock(&audit_rec);
    pthread_mutex_unlock(&audit_ec);
    return NULL;
}

static void test_error_audit(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    CHECK(pthread_mutex_init(&audit_ec, &a) == 0);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    CHECK(pthread_mutex_init(&audit_rec, &a) == 0);
    pthread_mutexattr_destroy(&a);
    pthread_barrier_init(&audit_bar, NULL, 2);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, audit_holder, NULL) == 0);
    pthread_barrier_wait(&audit_bar);
    EXPECT("errorcheck unlock(another thread's)", pthread_mutex_unlock(&audit_ec), EPERM);
    EXPECT("recursive unlock(another thread's)", pthread_mutex_unlock(&audit_rec), EPERM);
    EXPECT("recursive trylock(another thread's)", pthread_mutex_trylock(&audit_rec), EBUSY);
    struct timespec bad = deadline_ms(CLOCK_REALTIME, 20);
    bad.tv_nsec = 1000000000L;
    EXPECT("timedlock(held, tv_nsec 1e9)", pthread_mutex_timedlock(&audit_norm, &bad), EINVAL);
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 20);
    EXPECT("timedlock(held, +20ms)", pthread_mutex_timedlock(&audit_norm, &dl), ETIMEDOUT);
    dl = deadline_ms(CLOCK_MONOTONIC, 20);
    EXPECT("clocklock(held, clock 12345)", pthread_mutex_clocklock(&audit_norm, 12345, &dl), EINVAL);
    int ceiling;
    EXPECT("getprioceiling(not PRIO_PROTECT)", pthread_mutex_getprioceiling(&audit_norm, &ceiling), EINVAL);
    EXPECT("setprioceiling(not PRIO_PROTECT)", pthread_mutex_setprioceiling(&audit_norm, 1, &ceiling), EINVAL);
    pthread_barrier_wait(&audit_bar);
    CHECK(pthread_join(t, NULL) == 0);
    /* Free: the clock is refused before the lock is looked at. */
    dl = deadline_ms(CLOCK_MONOTONIC, 20);
    EXPECT("clocklock(free, clock 12345)", pthread_mutex_clocklock(&audit_norm, 12345, &dl), EINVAL);
    pthread_barrier_destroy(&audit_bar);
    CHECK(pthread_mutex_destroy(&audit_ec) == 0);
    CHECK(pthread_mutex_destroy(&audit_rec) == 0);
}

int main(void)
{
    check_start("mutex");
    pthread_mutexattr_t a;
    int v;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_gettype(&a, &v);
    printf("default type is DEFAULT: %d\n", v == PTHREAD_MUTEX_DEFAULT);
    EXPECT("settype(42)", pthread_mutexattr_settype(&a, 42), EINVAL);
    EXPECT("setrobust(42)", pthread_mutexattr_setrobust(&a, 42), EINVAL);
    pthread_mutexattr_getrobust(&a, &v);
    printf("default robust is STALLED: %d\n", v == PTHREAD_MUTEX_STALLED);
    pthread_mutexattr_getpshared(&a, &v);
    printf("default pshared is PRIVATE: %d\n", v == PTHREAD_PROCESS_PRIVATE);
    pthread_mutexattr_destroy(&a);

    /* normal */
    init_type(PTHREAD_MUTEX_NORMAL);
    EXPECT("normal lock", pthread_mutex_lock(&m), 0);
    EXPECT("normal trylock(held)", pthread_mutex_trylock(&m), EBUSY);
    printf("normal trylock from other thread: %s\n", errname(in_other(try_other)));
    printf("normal timedlock/clocklock from other thread (ETIMEDOUT, EINVAL, ETIMEDOUT): %d\n", in_other(timedlock_other));
    EXPECT("normal destroy(held)", pthread_mutex_destroy(&m), EBUSY);
    EXPECT("normal unlock", pthread_mutex_unlock(&m), 0);
    EXPECT("normal consistent(not robust)", pthread_mutex_consistent(&m), EINVAL);
    EXPECT("normal destroy", pthread_mutex_destroy(&m), 0);

    /* error checking */
    init_type(PTHREAD_MUTEX_ERRORCHECK);
    EXPECT("errorcheck unlock(unlocked)", pthread_mutex_unlock(&m), EPERM);
    EXPECT("errorcheck lock", pthread_mutex_lock(&m), 0);
    EXPECT("errorcheck relock", pthread_mutex_lock(&m), EDEADLK);
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 1000);
    EXPECT("errorcheck timedlock(own)", pthread_mutex_timedlock(&m, &dl), EDEADLK);
    printf("errorcheck unlock from other thread: %s\n", errname(in_other(unlock_other)));
    printf("errorcheck trylock from other thread: %s\n", errname(in_other(try_other)));
    EXPECT("errorcheck unlock", pthread_mutex_unlock(&m), 0);
    pthread_mutex_destroy(&m);

    /* recursive */
    init_type(PTHREAD_MUTEX_RECURSIVE);
    EXPECT("recursive lock 1", pthread_mutex_lock(&m), 0);
    EXPECT("recursive lock 2", pthread_mutex_lock(&m), 0);
    EXPECT("recursive trylock 3", pthread_mutex_trylock(&m), 0);
    printf("recursive trylock from other thread: %s\n", errname(in_other(try_other)));
    printf("recursive unlock from other thread: %s\n", errname(in_other(unlock_other)));
    EXPECT("recursive unlock 3", pthread_mutex_unlock(&m), 0);
    EXPECT("recursive unlock 2", pthread_mutex_unlock(&m), 0);
    EXPECT("recursive unlock 1", pthread_mutex_unlock(&m), 0);
    EXPECT("recursive unlock(unlocked)", pthread_mutex_unlock(&m), EPERM);
    printf("recursive trylock from other thread after release: %s\n", errname(in_other(try_other)));
    EXPECT("recursive unlock(owned by an exited thread)", pthread_mutex_unlock(&m), EPERM);
    pthread_mutex_destroy(&m);

    /* mutual exclusion */
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, count_up, NULL) == 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("counter under mutex: %ld\n", counter);
    CHECK(counter == 80000);

    test_robust();
    test_pshared();
    test_refused_attr_init();
    test_protocol();
    test_error_audit();
    return check_end("mutex");
}
