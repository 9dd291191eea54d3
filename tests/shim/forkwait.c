/*
 * forkwait.c -- fork() while other threads wait on a mutex, an rwlock, a
 * semaphore and a condvar. POSIX fork(2p): the child is "a replica of the
 * calling thread"; objects keep their state (a mutex locked by the forking
 * thread stays locked, by it) but the other threads, and so their waits,
 * do not exist there. So in the child an unlock, a post or a broadcast
 * finds nobody to hand the object to, and no parent thread ever runs.
 * The mutex is unlocked by pthread_atfork parent and child handlers, as in
 * the canonical (lock, unlock, unlock) pattern (pthread_atfork(3p)
 * RATIONALE), locked by main before the fork so the waiters queue on it.
 *
 * Each round: the waiters say they are about to block, main gives them
 * time to queue (a short sleep: if one has not queued yet the round checks
 * less, it cannot pass wrongly), forks, and the child checks that
 *  - the mutex is its own after the atfork child handler's unlock
 *    (lock + unlock work, no waiter got it);
 *  - a sem_post leaves the count for its own sem_trywait;
 *  - after a broadcast and a few yields no parent thread ran (their
 *    "woke" counter stays as it was).
 * A child that hangs dies of its alarm; the parent reports its status.
 */
#include <pthread.h>
#include <semaphore.h>
#include <sched.h>
#include <sys/wait.h>
#include "check.h"

enum { WAITERS = 3, ROUNDS = 8 };

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t sem, ready;
static int go, woke, got_mutex, got_rw;
static int atfork_on;

/* The pattern's prepare handler would lock m here; main already holds it
 * (so that the waiters can queue on it before the fork), the parent and
 * child handlers unlock it as in the pattern. */
static void unlock(void) { if (atfork_on) pthread_mutex_unlock(&m); }

static void *mutex_waiter(void *a)
{
    sem_post(&ready);
    pthread_mutex_lock(&m);
    __atomic_add_fetch(&got_mutex, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&m);
    return a;
}

static void *rw_waiter(void *a)
{
    sem_post(&ready);
    if (a)
        pthread_rwlock_wrlock(&rw);
    else
        pthread_rwlock_rdlock(&rw);
    __atomic_add_fetch(&got_rw, 1, __ATOMIC_SEQ_CST);
    pthread_rwlock_unlock(&rw);
    return a;
}

static void *sem_waiter(void *a)
{
    sem_post(&ready);
    while (sem_wait(&sem) != 0 && errno == EINTR)
        ;
    return a;
}

static void *cond_waiter(void *a)
{
    pthread_mutex_lock(&cm);
    sem_post(&ready);
    while (!go)
        pthread_cond_wait(&cv, &cm);
    woke++;
    pthread_mutex_unlock(&cm);
    return a;
}

static void let_queue(void)
{
    for (int i = 0; i < 4 * WAITERS; i++)
        sem_wait(&ready);
    struct timespec ts = { 0, 20 * 1000000L };
    nanosleep(&ts, NULL);
}

/* The child's checks: 0 when all hold, else a bit per failed one. */
static int child(void)
{
    int bad = 0;
    int gm = __atomic_load_n(&got_mutex, __ATOMIC_SEQ_CST);
    int gr = __atomic_load_n(&got_rw, __ATOMIC_SEQ_CST);
    alarm(20);
    /* The atfork child handler unlocked m: it is free, and stays ours. */
    if (pthread_mutex_lock(&m) != 0 || pthread_mutex_unlock(&m) != 0)
        bad |= 1;
    if (pthread_mutex_trylock(&m) != 0)
        bad |= 1;
    else
        pthread_mutex_unlock(&m);
    /* The rwlock, write-locked by us before the fork, is left alone: glibc
     * ties a write lock to the kernel thread id, which the child does not
     * share, so its unlock is no reference to compare with; its waiters
     * only must not run (bit 16). */
    if (sem_post(&sem) != 0 || sem_trywait(&sem) != 0)
        bad |= 4;
    pthread_mutex_lock(&cm);
    int w = woke;
    go = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&cm);
    for (int i = 0; i < 20; i++) {
        sched_yield();
        struct timespec ts = { 0, 1000000L };
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&cm);
    if (woke != w)
        bad |= 8;
    pthread_mutex_unlock(&cm);
    if (__atomic_load_n(&got_mutex, __ATOMIC_SEQ_CST) != gm ||
        __atomic_load_n(&got_rw, __ATOMIC_SEQ_CST) != gr)
        bad |= 16;
    return bad;
}

int main(void)
{
    check_start("forkwait");
    CHECK(pthread_atfork(NULL, unlock, unlock) == 0);
    CHECK(sem_init(&ready, 0, 0) == 0);
    int status_ok = 0;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_t t[4 * WAITERS];
        CHECK(sem_init(&sem, 0, 0) == 0);
        go = 0;
        pthread_mutex_lock(&m);
        pthread_rwlock_wrlock(&rw);
        for (int i = 0; i < WAITERS; i++) {
            CHECK(pthread_create(&t[4 * i], NULL, mutex_waiter, NULL) == 0);
            CHECK(pthread_create(&t[4 * i + 1], NULL, rw_waiter, i & 1 ? NULL : &rw) == 0);
            CHECK(pthread_create(&t[4 * i + 2], NULL, sem_waiter, NULL) == 0);
            CHECK(pthread_create(&t[4 * i + 3], NULL, cond_waiter, NULL) == 0);
        }
        let_queue();
        atfork_on = 1;
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            _exit(child());
        atfork_on = 0;
        int st = -1;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            status_ok++;
        } else {
            printf("round %d: child %s %d\n", r, WIFEXITED(st) ? "exit" : "signal",
                   WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? WTERMSIG(st) : -1);
        }
        /* Release everyone in the parent. */
        pthread_rwlock_unlock(&rw);
        for (int i = 0; i < WAITERS; i++)
            sem_post(&sem);
        pthread_mutex_lock(&cm);
        go = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&cm);
        for (int i = 0; i < 4 * WAITERS; i++)
            CHECK(pthread_join(t[i], NULL) == 0);
        sem_destroy(&sem);
    }
    printf("children ok: %d of %d\n", status_ok, ROUNDS);
    CHECK(status_ok == ROUNDS);
    printf("mutex waiters got it: %d, rwlock waiters: %d\n", got_mutex, got_rw);
    return check_end("forkwait");
}
