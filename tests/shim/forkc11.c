/*
 * forkc11.c -- fork() from a kernel thread that libc made itself: a C11
 * thrd_create thread and a timer_create(SIGEV_THREAD) notification thread.
 * Under the shim these run no nano-thread (glibc starts them without the
 * pthread_create symbol the shim replaces), and before the fork the
 * runtime runs with other threads waiting. The child must be a whole
 * threaded program again, as after a fork from any other thread (fork(3p):
 * "a replica of the calling thread"): it creates and joins threads, uses a
 * mutex and a condvar, sleeps, and exits with a status the parent checks.
 * Before the fix the shim's child hung in its first pthread_join (the
 * parent's VPs, which would have run the new thread, are gone); its own
 * alarm turns that into status 214.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <threads.h>
#include "check.h"

static pthread_mutex_t gm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gc = PTHREAD_COND_INITIALIZER;
static long gcount;
static int gready;

static void *add_one(void *arg)
{
    sched_yield();
    pthread_mutex_lock(&gm);
    gcount++;
    pthread_mutex_unlock(&gm);
    return (void *)((intptr_t)arg + 1);
}

static void *signal_later(void *arg)
{
    (void)arg;
    usleep(2000);
    pthread_mutex_lock(&gm);
    gready = 1;
    pthread_cond_signal(&gc);
    pthread_mutex_unlock(&gm);
    return NULL;
}

/* The child's work: the number of failed steps, its exit status. */
static int child_work(void)
{
    int bad = 0;
    enum { T = 20 };
    pthread_t t[T];
    for (intptr_t i = 0; i < T; i++)
        bad += pthread_create(&t[i], NULL, add_one, (void *)i) != 0;
    for (intptr_t i = 0; i < T; i++) {
        void *r = NULL;
        bad += pthread_join(t[i], &r) != 0 || r != (void *)(i + 1);
    }
    bad += gcount != T;
    pthread_t s;
    bad += pthread_create(&s, NULL, signal_later, NULL) != 0;
    pthread_mutex_lock(&gm);
    while (!gready)
        bad += pthread_cond_wait(&gc, &gm) != 0;
    pthread_mutex_unlock(&gm);
    bad += pthread_join(s, NULL) != 0;
    bad += usleep(1000) != 0;
    return bad > 100 ? 100 : bad;
}

/* Fork from the calling thread; the child exits with child_work's count.
 * Returns the child's status (200 + signal when it died of one). */
static int fork_and_wait(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20);               /* a hung child dies of SIGALRM: 214 */
        _exit(child_work());
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 200 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static int c11_forker(void *arg)
{
    *(int *)arg = fork_and_wait();
    return 0;
}

static int timer_status = -2;
static pthread_mutex_t tm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tc = PTHREAD_COND_INITIALIZER;
static int timer_fired;

static void timer_forker(union sigval v)
{
    (void)v;
    int st = fork_and_wait();
    pthread_mutex_lock(&tm);
    timer_status = st;
    timer_fired = 1;
    pthread_cond_signal(&tc);
    pthread_mutex_unlock(&tm);
}

/* Threads of the parent that are there, waiting, when it forks. */
static pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pc = PTHREAD_COND_INITIALIZER;
static int pdone;

static void *waiter(void *arg)
{
    pthread_mutex_lock(&pm);
    while (!pdone)
        pthread_cond_wait(&pc, &pm);
    pthread_mutex_unlock(&pm);
    return arg;
}

int main(void)
{
    check_start("forkc11");
    pthread_t w[3];
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&w[i], NULL, waiter, NULL) == 0);

    thrd_t c;
    int st = -2;
    CHECK(thrd_create(&c, c11_forker, &st) == thrd_success);
    CHECK(thrd_join(c, NULL) == thrd_success);
    printf("fork from a C11 thread: child status %d\n", st);
    CHECK(st == 0);

    struct sigevent se;
    memset(&se, 0, sizeof se);
    se.sigev_notify = SIGEV_THREAD;
    se.sigev_notify_function = timer_forker;
    timer_t tid;
    CHECK(timer_create(CLOCK_MONOTONIC, &se, &tid) == 0);
    struct itimerspec its = { { 0, 0 }, { 0, 1000000 } };
    CHECK(timer_settime(tid, 0, &its, NULL) == 0);
    pthread_mutex_lock(&tm);
    while (!timer_fired)
        pthread_cond_wait(&tc, &tm);
    pthread_mutex_unlock(&tm);
    timer_delete(tid);
    printf("fork from a timer_create(SIGEV_THREAD) thread: child status %d\n", timer_status);
    CHECK(timer_status == 0);

    pthread_mutex_lock(&pm);
    pdone = 1;
    pthread_cond_broadcast(&pc);
    pthread_mutex_unlock(&pm);
    for (int i = 0; i < 3; i++)
        CHECK(pthread_join(w[i], NULL) == 0);
    return check_end("forkc11");
}
