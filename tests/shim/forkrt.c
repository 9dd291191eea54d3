/*
 * forkrt.c -- after fork() the child is a whole threaded program again:
 * fork from a thread that is not main while other threads run, wait on a
 * condvar and sleep; the child creates and joins 50 threads, uses a mutex,
 * a condvar (woken, and timed out), a semaphore, a barrier, a rwlock, a
 * sleep and a blocking read of a pipe that another thread writes, and
 * exits with a status the parent checks. After fork(3p) ("a replica of
 * the calling thread"), pthread_atfork(3p).
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/wait.h>
#include "check.h"

/* ---- the child's work ------------------------------------------------- */

static pthread_mutex_t gm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gc = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t grw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t gb;
static sem_t gs;
static long gcount;
static int gready;

static void *add_one(void *arg)
{
    sched_yield();
    pthread_mutex_lock(&gm);
    gcount++;
    pthread_mutex_unlock(&gm);
    pthread_rwlock_rdlock(&grw);
    pthread_rwlock_unlock(&grw);
    return (void *)((intptr_t)arg + 1);
}

static void *signal_later(void *arg)
{
    (void)arg;
    usleep(5000);
    pthread_mutex_lock(&gm);
    gready = 1;
    pthread_cond_signal(&gc);
    pthread_mutex_unlock(&gm);
    sem_post(&gs);
    return NULL;
}

static void *at_barrier(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&gb);
    return NULL;
}

static void *write_later(void *arg)
{
    usleep(10000);
    return (void *)(intptr_t)write((int)(intptr_t)arg, "x", 1);
}

/* Returns the number of failed steps (the child's exit status). */
static int child_work(void)
{
    int bad = 0;
    pthread_t t[50];
    for (intptr_t i = 0; i < 50; i++)
        bad += pthread_create(&t[i], NULL, add_one, (void *)i) != 0;
    for (intptr_t i = 0; i < 50; i++) {
        void *r = NULL;
        bad += pthread_join(t[i], &r) != 0 || r != (void *)(i + 1);
    }
    bad += gcount != 50;

    sem_init(&gs, 0, 0);
    pthread_t s;
    bad += pthread_create(&s, NULL, signal_later, NULL) != 0;
    pthread_mutex_lock(&gm);
    while (!gready)
        bad += pthread_cond_wait(&gc, &gm) != 0;
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 20);
    bad += pthread_cond_timedwait(&gc, &gm, &dl) != ETIMEDOUT;
    pthread_mutex_unlock(&gm);
    bad += sem_wait(&gs) != 0;
    bad += pthread_join(s, NULL) != 0;

    pthread_barrier_init(&gb, NULL, 2);
    pthread_t b;
    bad += pthread_create(&b, NULL, at_barrier, NULL) != 0;
    int br = pthread_barrier_wait(&gb);
    bad += br != 0 && br != PTHREAD_BARRIER_SERIAL_THREAD;
    bad += pthread_join(b, NULL) != 0;

    int p[2];
    bad += pipe(p) != 0;
    pthread_t w;
    bad += pthread_create(&w, NULL, write_later, (void *)(intptr_t)p[1]) != 0;
    char c = 0;
    bad += read(p[0], &c, 1) != 1 || c != 'x';
    void *wr = NULL;
    bad += pthread_join(w, &wr) != 0 || wr != (void *)1;

    bad += usleep(1000) != 0;
    return bad > 100 ? 100 : bad;
}

/* ---- the parent's threads --------------------------------------------- */

static pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pc = PTHREAD_COND_INITIALIZER;
static volatile int pdone;

static void *spinner(void *arg)
{
    (void)arg;
    while (!pdone)
        sched_yield();
    return NULL;
}

static void *cond_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pm);
    while (!pdone)
        pthread_cond_wait(&pc, &pm);
    pthread_mutex_unlock(&pm);
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    while (!pdone)
        usleep(2000);
    return NULL;
}

static int child_atfork_ran;
static void child_handler(void) { child_atfork_ran++; }

/* Fork; the child ends by exit() (how == 0) or by pthread_exit from its
 * only thread (how == 1: the process then exits 0). Returns the status. */
static void *forker(void *arg)
{
    int how = (int)(intptr_t)arg;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = child_work() + (child_atfork_ran != 1);
        if (how == 1 && bad == 0)
            pthread_exit(NULL);
        exit(bad);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return (void *)(intptr_t)-1;
    return (void *)(intptr_t)(WIFEXITED(st) ? WEXITSTATUS(st) : 200 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0));
}

int main(void)
{
    check_start("forkrt");
    CHECK(pthread_atfork(NULL, NULL, child_handler) == 0);
    pthread_t others[6];
    void *(*fns[3])(void *) = { spinner, cond_waiter, sleeper };
    for (int i = 0; i < 6; i++)
        CHECK(pthread_create(&others[i], NULL, fns[i % 3], NULL) == 0);
    usleep(1000);

    for (int how = 0; how < 2; how++) {
        pthread_t f;
        void *r = NULL;
        CHECK(pthread_create(&f, NULL, forker, (void *)(intptr_t)how) == 0);
        CHECK(pthread_join(f, &r) == 0);
        printf("fork from a thread, child ends by %s: status %d\n",
               how ? "pthread_exit" : "exit", (int)(intptr_t)r);
        CHECK(r == NULL);
    }
    /* From main, with the others still there. */
    void *r = forker(0);
    printf("fork from main: status %d\n", (int)(intptr_t)r);
    CHECK(r == NULL);

    pdone = 1;
    pthread_mutex_lock(&pm);
    pthread_cond_broadcast(&pc);
    pthread_mutex_unlock(&pm);
    for (int i = 0; i < 6; i++)
        CHECK(pthread_join(others[i], NULL) == 0);
    return check_end("forkrt");
}
