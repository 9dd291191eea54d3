/*
 * pingpong.c -- a plain pthread program (compiled with -pthread only, never
 * linked with nthlib) for bench/shim.sh, which times it natively and under
 * LD_PRELOAD=libnth-pthread.so. One workload per run:
 *   create N   N pthread_create + pthread_join of an empty thread, in turn
 *   exit N     the same, the thread ending by pthread_exit three calls deep
 *              (the forced unwind of its stack: glibc's, and the shim's
 *              since pthread-shim/unwind.c)
 *   mutex N    2 threads, each N lock / increment / unlock of one mutex
 *   cond N     2 threads pass a turn back and forth N times (mutex + condvar)
 *   pipe N     2 threads pass a byte back and forth N times over two pipes
 *              (blocking read/write: the shim's wrapped blocking calls)
 *   readcpu N  one thread sleeps in read() on a pipe nobody writes until
 *              the end while 2 threads each do N units of arithmetic
 *              (the computing threads must not wait for the reader)
 *   yield N    2 threads, each N sched_yield (with NTH_VPS=1 every yield is
 *              a switch between the two threads: the per-switch cost, and
 *              with NTH_SHIM_TLS=thread a thread-pointer change each)
 *   semsig N   N rounds of: a thread blocked in sem_wait gets pthread_kill,
 *              its handler runs and sem_wait returns EINTR (latency of a
 *              signal to a semaphore waiter)
 *   futexteam N  N teams of 8 threads, each created, crossing one barrier
 *              made of raw futex system calls (libgomp's and Rust std's
 *              waits: no pthread call, so under the shim each waiter holds
 *              its kernel thread asleep and the rest need stand-ins), joined
 * Prints the final count (a check that the work was done); the script
 * measures wall time around the whole process.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static long n, count;
static int turn;

static void *empty(void *a) { return a; }

static __attribute__((noinline)) void exit_1(void *v) { pthread_exit(v); }
static __attribute__((noinline)) void exit_2(void *v) { exit_1(v); __asm__ __volatile__(""); }
static __attribute__((noinline)) void exit_3(void *v) { exit_2(v); __asm__ __volatile__(""); }

static void *exiter(void *a)
{
    exit_3(a);
    return NULL;
}

static void *locker(void *a)
{
    (void)a;
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&m);
        count++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static void *player(void *a)
{
    int me = (int)(long)a;
    pthread_mutex_lock(&m);
    for (long i = 0; i < n; i++) {
        while (turn != me)
            pthread_cond_wait(&c, &m);
        turn = 1 - me;
        count++;
        pthread_cond_signal(&c);
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

static int p1[2], p2[2];

static void *pipe_echo(void *a)
{
    (void)a;
    char b;
    for (long i = 0; i < n; i++) {
        if (read(p1[0], &b, 1) != 1 || write(p2[1], &b, 1) != 1)
            exit(1);
    }
    return NULL;
}

static void *pipe_sleeper(void *a)
{
    (void)a;
    char b;
    if (read(p1[0], &b, 1) != 1)
        exit(1);
    return NULL;
}

static volatile unsigned long sink;

static void *compute(void *a)
{
    (void)a;
    unsigned long x = 1;
    for (long i = 0; i < n; i++)
        for (int k = 0; k < 1000; k++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
    __atomic_add_fetch(&count, n, __ATOMIC_RELAXED);
    sink = x;
    return NULL;
}

static sem_t sem, semready;
static volatile sig_atomic_t handled;

static void on_usr1(int s) { (void)s; handled++; }

static void *yielder(void *a)
{
    (void)a;
    for (long i = 0; i < n; i++)
        sched_yield();
    __atomic_add_fetch(&count, n, __ATOMIC_RELAXED);
    return NULL;
}

static void *sem_waiter(void *a)
{
    (void)a;
    for (long i = 0; i < n; i++) {
        sem_post(&semready);
        if (sem_wait(&sem) == 0)
            break;                   /* posted: the end */
        if (errno != EINTR)
            exit(1);
        count++;
    }
    return NULL;
}

enum { TEAM = 8 };
static int fx_count, fx_gen;

static void *futex_member(void *a)
{
    int g = __atomic_load_n(&fx_gen, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&fx_count, 1, __ATOMIC_ACQ_REL) == TEAM) {
        __atomic_store_n(&fx_count, 0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&fx_gen, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &fx_gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
        return a;
    }
    while (__atomic_load_n(&fx_gen, __ATOMIC_ACQUIRE) == g)
        syscall(SYS_futex, &fx_gen, FUTEX_WAIT_PRIVATE, g, NULL, NULL, 0);
    return a;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (n = atol(argv[2])) <= 0) {
        fprintf(stderr, "usage: %s create|exit|mutex|cond|pipe|readcpu|semsig|yield|futexteam N\n", argv[0]);
        return 2;
    }
    pthread_t t[2];
    if (!strcmp(argv[1], "create") || !strcmp(argv[1], "exit")) {
        void *(*fn)(void *) = argv[1][0] == 'c' ? empty : exiter;
        for (long i = 0; i < n; i++) {
            if (pthread_create(&t[0], NULL, fn, NULL) != 0)
                return 1;
            pthread_join(t[0], NULL);
            count++;
        }
    } else if (!strcmp(argv[1], "mutex") || !strcmp(argv[1], "cond")) {
        void *(*fn)(void *) = argv[1][0] == 'm' ? locker : player;
        for (long i = 0; i < 2; i++)
            if (pthread_create(&t[i], NULL, fn, (void *)i) != 0)
                return 1;
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    } else if (!strcmp(argv[1], "futexteam")) {
        pthread_t m[TEAM];
        for (long i = 0; i < n; i++) {
            for (int k = 0; k < TEAM; k++)
                if (pthread_create(&m[k], NULL, futex_member, NULL) != 0)
                    return 1;
            for (int k = 0; k < TEAM; k++)
                pthread_join(m[k], NULL);
            count++;
        }
    } else if (!strcmp(argv[1], "yield")) {
        for (long i = 0; i < 2; i++)
            if (pthread_create(&t[i], NULL, yielder, NULL) != 0)
                return 1;
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    } else if (!strcmp(argv[1], "pipe")) {
        if (pipe(p1) || pipe(p2) || pthread_create(&t[0], NULL, pipe_echo, NULL))
            return 1;
        char b = 'x';
        for (long i = 0; i < n; i++) {
            if (write(p1[1], &b, 1) != 1 || read(p2[0], &b, 1) != 1)
                return 1;
            count++;
        }
        pthread_join(t[0], NULL);
    } else if (!strcmp(argv[1], "readcpu")) {
        pthread_t c2[2];
        if (pipe(p1) || pthread_create(&t[0], NULL, pipe_sleeper, NULL))
            return 1;
        for (int i = 0; i < 2; i++)
            if (pthread_create(&c2[i], NULL, compute, NULL))
                return 1;
        for (int i = 0; i < 2; i++)
            pthread_join(c2[i], NULL);
        if (write(p1[1], "x", 1) != 1)
            return 1;
        pthread_join(t[0], NULL);
    } else if (!strcmp(argv[1], "semsig")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;          /* no SA_RESTART: sem_wait returns EINTR anyway */
        sigaction(SIGUSR1, &sa, NULL);
        sem_init(&sem, 0, 0);
        sem_init(&semready, 0, 0);
        if (pthread_create(&t[0], NULL, sem_waiter, NULL))
            return 1;
        for (long i = 0; i < n; i++) {
            sem_wait(&semready);
            /* It may not be in sem_wait yet: the handler then runs
             * early and sem_wait blocks, so kill again now and then. */
            pthread_kill(t[0], SIGUSR1);
            for (long spins = 1; __atomic_load_n(&count, __ATOMIC_RELAXED) == i; spins++) {
                sched_yield();
                if (spins % 1000 == 0)
                    pthread_kill(t[0], SIGUSR1);
            }
        }
        sem_post(&sem);
        pthread_join(t[0], NULL);
        if (handled < n)
            return 1;
    } else {
        fprintf(stderr, "unknown workload %s\n", argv[1]);
        return 2;
    }
    printf("%s %ld\n", argv[1], count);
    return 0;
}
