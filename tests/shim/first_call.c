/*
 * first_call.c -- the first pthread call of a process starts the runtime
 * under the shim, whichever call it is. Each case runs in a fresh process
 * (this program executed again with the case's name), so that its call is
 * really the process's first: pthread_sigmask (xz and zstd begin so),
 * pthread_self, pthread_key_create, pthread_once, pthread_mutex_lock,
 * pthread_create, sched_yield. The call succeeds and leaves errno as it
 * was (POSIX lets only a failing call set it; starting the runtime read
 * files and left ENOENT there, which broke a program that checks errno
 * after a run of calls, e.g. tests/sync/test-sync-mock). After it, the process runs a ring of threads passing a
 * token under a mutex and a condvar, as a worker pool does.
 *
 * Regression: when the first call was one that looks up the calling
 * thread's record (pthread_sigmask, pthread_self, ...), the runtime started
 * from inside the shim's making of its thread key, and the stall watchdog's
 * monitor thread, made through the shim's pthread_create instead of libc's,
 * waited for that key forever: every such process hung at its first call.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include "check.h"

enum { RING = 4, LAPS = 200 };

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int turn;                       /* whose turn, under m */
static long passes[RING];

static void *ring_member(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int lap = 0; lap < LAPS; lap++) {
        pthread_mutex_lock(&m);
        while (turn != me)
            pthread_cond_wait(&c, &m);
        passes[me]++;
        turn = (me + 1) % RING;
        pthread_cond_broadcast(&c);
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static void *nop(void *arg)
{
    return arg;
}

static void once_fn(void)
{
}

/* The case's first call; 0 when it did what it should. */
static int first_call(const char *name)
{
    if (!strcmp(name, "pthread_sigmask")) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGUSR1);
        return pthread_sigmask(SIG_BLOCK, &s, NULL);
    }
    if (!strcmp(name, "pthread_self"))
        return pthread_equal(pthread_self(), pthread_self()) ? 0 : 1;
    if (!strcmp(name, "pthread_key_create")) {
        pthread_key_t k;
        int r = pthread_key_create(&k, NULL);
        return r ? r : pthread_key_delete(k);
    }
    if (!strcmp(name, "pthread_once")) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        return pthread_once(&once, once_fn);
    }
    if (!strcmp(name, "pthread_mutex_lock")) {
        int r = pthread_mutex_lock(&m);
        return r ? r : pthread_mutex_unlock(&m);
    }
    if (!strcmp(name, "pthread_create")) {
        pthread_t t;
        void *v = NULL;
        int r = pthread_create(&t, NULL, nop, &turn);
        if (r)
            return r;
        r = pthread_join(t, &v);
        return r ? r : v != &turn;
    }
    if (!strcmp(name, "sched_yield"))
        return sched_yield();
    return EINVAL;
}

/* The child: the first call, then the ring. Quiet on success. */
static int run_case(const char *name)
{
    alarm(20);                         /* a hang guard: a run takes milliseconds */
    errno = EINTR;                     /* none of the calls sets it when it succeeds */
    int r = first_call(name);
    if (r) {
        printf("FAIL %s: the first call returned %s\n", name, errname(r));
        return 1;
    }
    if (errno != EINTR) {
        printf("FAIL %s: the first call succeeded but changed errno to %s\n", name, errname(errno));
        return 1;
    }
    pthread_t t[RING];
    for (int i = 0; i < RING; i++)
        if ((r = pthread_create(&t[i], NULL, ring_member, (void *)(intptr_t)i)) != 0) {
            printf("FAIL %s: pthread_create returned %s\n", name, errname(r));
            return 1;
        }
    for (int i = 0; i < RING; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < RING; i++)
        if (passes[i] != LAPS) {
            printf("FAIL %s: member %d passed the token %ld times, want %d\n", name, i,
                   passes[i], LAPS);
            return 1;
        }
    return 0;
}

static const char *const cases[] = {
    "pthread_sigmask", "pthread_self", "pthread_key_create",
    "pthread_once", "pthread_mutex_lock", "pthread_create", "sched_yield",
};

int main(int argc, char **argv)
{
    if (argc == 2)
        return run_case(argv[1]);
    check_start("first_call");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            /* A fresh process (LD_PRELOAD is inherited): its first pthread
             * call is the case's. */
            execl("/proc/self/exe", argv[0], cases[i], (char *)NULL);
            _exit(127);
        }
        CHECK(p > 0);
        int st = 0;
        CHECK(p > 0 && waitpid(p, &st, 0) == p);
        if (WIFSIGNALED(st))
            printf("first call %s: killed by signal %d%s\n", cases[i], WTERMSIG(st),
                   WTERMSIG(st) == SIGALRM ? " (hung)" : "");
        else
            printf("first call %s: status %d\n", cases[i], WEXITSTATUS(st));
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    return check_end("first_call");
}
