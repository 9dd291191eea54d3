/*
 * idle_shim_app.c -- a plain POSIX program (never linked with nthlib) that
 * only waits, for dormant_shim.sh (issue 5): run under the pthread shim
 * (LD_PRELOAD=libnth-pthread.so) it must become dormant like an nthlib
 * application whose VPs are parked.
 *   idle_shim_app read     read() of one line on stdin (a pipe): prints "READ <line>"
 *   idle_shim_app cond S   pthread_cond_timedwait, S s from now, nobody
 *                          signals: prints "TIMEDOUT waited_ms=W"
 *   idle_shim_app wait F   fork + exec of /bin/sh polling for file F (a plain
 *                          process, empty environment), waitpid:
 *                          prints "CHILD status=0"
 *   idle_shim_app signal S pthread_cond_timedwait for S s with a SIGUSR1
 *                          handler that writes "SIGNALED" at once; then
 *                          prints "TIMEDOUT waited_ms=W"
 *   idle_shim_app cancel S a thread in pthread_cond_timedwait for S s, main
 *                          in read() on stdin; once a line comes, main
 *                          cancels the thread and joins it: prints
 *                          "CANCELED waited_ms=W" (W: the line to the join)
 *   idle_shim_app cancelsleep S MS  a thread in pthread_cond_timedwait
 *                          for S s; main sleeps MS ms (nanosleep), then
 *                          cancels it and joins: prints "CANCELED early=E"
 *                          (E 1 when the cancel acted before the wait's
 *                          deadline, as its cleanup handler saw the clock)
 * Bad arguments: a usage line, status 2.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Wait on cv for secs s (nobody signals it; spurious wake-ups wait on). */
static int timed_wait(double secs)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += (time_t)secs;
    int r = 0;
    pthread_mutex_lock(&mu);
    while (r == 0)
        r = pthread_cond_timedwait(&cv, &mu, &dl);
    pthread_mutex_unlock(&mu);
    return r;
}

static void on_usr1(int sig)
{
    (void)sig;
    static const char m[] = "SIGNALED\n";
    (void)!write(1, m, sizeof m - 1);
}

static void *waiter(void *arg)
{
    timed_wait(*(double *)arg);
    return (void *)1;
}

/* The cancelsleep waiter: its deadline, and what its cleanup handler saw. */
static struct timespec waiter_dl;
static int waiter_early = -1;

static void waiter_cleanup(void *arg)
{
    (void)arg;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    waiter_early = now.tv_sec < waiter_dl.tv_sec ||
                   (now.tv_sec == waiter_dl.tv_sec && now.tv_nsec < waiter_dl.tv_nsec);
    pthread_mutex_unlock(&mu);   /* acted on with the mutex held */
}

static void *deadline_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    pthread_cleanup_push(waiter_cleanup, NULL);
    int r = 0;
    while (r == 0)
        r = pthread_cond_timedwait(&cv, &mu, &waiter_dl);
    pthread_cleanup_pop(1);
    return NULL;
}

static int read_line(char *buf, size_t n)
{
    size_t k = 0;
    while (k + 1 < n) {
        ssize_t r = read(0, buf + k, 1);
        if (r <= 0)
            return -1;
        if (buf[k] == '\n')
            break;
        k++;
    }
    buf[k] = 0;
    return 0;
}

static void *nop(void *arg) { return arg; }

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    /* A threaded program: under the shim its first pthread call starts
     * the runtime (and attaches it to the daemon); a program that never
     * makes one runs on libc alone. */
    pthread_t t0;
    if (pthread_create(&t0, NULL, nop, NULL) || pthread_join(t0, NULL))
        return 1;
    if (argc == 2 && !strcmp(argv[1], "read")) {
        char buf[64];
        if (read_line(buf, sizeof buf))
            return 1;
        printf("READ %s\n", buf);
        return 0;
    }
    double secs = argc >= 3 ? atof(argv[2]) : 0;
    if (argc == 3 && !strcmp(argv[1], "cond") && secs > 0) {
        double t0 = now_ms();
        int r = timed_wait(secs);
        printf("%s waited_ms=%.0f\n", r == ETIMEDOUT ? "TIMEDOUT" : strerror(r), now_ms() - t0);
        return r == ETIMEDOUT ? 0 : 1;
    }
    if (argc == 3 && !strcmp(argv[1], "signal") && secs > 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sigaction(SIGUSR1, &sa, NULL);
        printf("READY\n");
        double t0 = now_ms();
        int r = timed_wait(secs);
        printf("%s waited_ms=%.0f\n", r == ETIMEDOUT ? "TIMEDOUT" : strerror(r), now_ms() - t0);
        return r == ETIMEDOUT ? 0 : 1;
    }
    if (argc == 3 && !strcmp(argv[1], "cancel") && secs > 0) {
        pthread_t t;
        void *ret = NULL;
        char buf[64];
        if (pthread_create(&t, NULL, waiter, &secs) || read_line(buf, sizeof buf))
            return 1;
        double t0 = now_ms();
        pthread_cancel(t);
        pthread_join(t, &ret);
        printf("%s waited_ms=%.0f\n", ret == PTHREAD_CANCELED ? "CANCELED" : "NOT-CANCELED",
               now_ms() - t0);
        return ret == PTHREAD_CANCELED ? 0 : 1;
    }
    if (argc == 4 && !strcmp(argv[1], "cancelsleep") && secs > 0) {
        double ms = atof(argv[3]);
        pthread_t t;
        void *ret = NULL;
        clock_gettime(CLOCK_REALTIME, &waiter_dl);
        waiter_dl.tv_sec += (time_t)secs;
        if (pthread_create(&t, NULL, deadline_waiter, NULL))
            return 1;
        struct timespec nap = { (time_t)(ms / 1000), (long)((ms - (time_t)(ms / 1000) * 1000) * 1e6) };
        nanosleep(&nap, NULL);
        pthread_cancel(t);
        pthread_join(t, &ret);
        printf("%s early=%d\n", ret == PTHREAD_CANCELED ? "CANCELED" : "NOT-CANCELED", waiter_early);
        return ret == PTHREAD_CANCELED ? 0 : 1;
    }
    if (argc == 3 && !strcmp(argv[1], "wait")) {
        char script[512];
        snprintf(script, sizeof script, "while [ ! -e '%s' ]; do sleep 0.1; done", argv[2]);
        pid_t p = fork();
        if (p < 0)
            return 1;
        if (p == 0) {
            char *const env[] = { "PATH=/usr/bin:/bin", NULL };
            execle("/bin/sh", "sh", "-c", script, (char *)NULL, env);
            _exit(127);
        }
        int st = -1;
        if (waitpid(p, &st, 0) != p)
            return 1;
        printf("CHILD status=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return 0;
    }
    fprintf(stderr, "usage: idle_shim_app read | cond SECS | signal SECS | cancel SECS | cancelsleep SECS MS | wait FILE\n");
    return 2;
}
