/*
 * sigidle.c -- a process-directed signal reaches a program whose every
 * thread is in an untimed wait (sigidle.sh runs it, natively and under
 * the pthread shim, and sends the signals from outside).
 *
 * Each case first starts a thread that waits for ever in sem_wait and
 * sleeps 10 ms (under the shim that turns on the switch-in hook, which
 * used to block every signal on an idle VP), says
 * "ready" on stdout, then waits for ever. A handler says what it got
 * with write(2) and ends the process with _exit(0), so a wait that goes
 * on after it does not matter; a default action ends the process by the
 * signal. Under the shim before the fix every case hung: no kernel
 * thread of the process left the signal open.
 *
 *   term     main in sem_wait; SIGTERM with its default action (sent by
 *            the script): the process dies of SIGTERM.
 *   usr1     main in sem_wait, SIGUSR1 handler that posts the semaphore
 *            (sent by the script): sem_wait returns, main returns 0.
 *   alarm    main in pthread_join of a thread in pthread_cond_wait,
 *            alarm(1), SIGALRM handler: it runs.
 *   mutex    main holds a mutex and waits in sem_wait, a thread waits for
 *            the mutex; SIGHUP with its default action (sent by the
 *            script): the process dies of SIGHUP.
 *   deadlock two threads each wait for the mutex the other holds (main
 *            in pthread_join); SIGHUP with its default action (a
 *            background job of a script ignores SIGINT).
 *   blocked  as usr1, but SIGUSR1 blocked in main and open in a thread
 *            waiting in pthread_cond_wait: the handler runs there
 *            (pthread_self says which), main stays in sem_wait.
 *   rt       main in sem_wait, SIGRTMIN handler with SA_SIGINFO, three
 *            sigqueue(3)s (values 1, 2, 3) from a child process: each
 *            instance runs the handler once, with its value and the
 *            sender's pid (in any order: natively two threads may
 *            run them at once).
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static sem_t never, posted;
static pthread_mutex_t m1 = PTHREAD_MUTEX_INITIALIZER, m2 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_t worker;
static volatile sig_atomic_t got;

static void say(const char *s)
{
    (void)!write(1, s, strlen(s));
}

static void *idler(void *arg)
{
    (void)arg;
    sem_wait(&never);
    return NULL;
}

/* A second thread waiting for ever (under the shim: the runtime has
 * started, so the sleep is a nano-thread's), then the sleep. */
static void ready(void)
{
    pthread_t t;
    pthread_create(&t, NULL, idler, NULL);
    pthread_detach(t);
    struct timespec ts = { 0, 10000000 };
    nanosleep(&ts, NULL);      /* glibc's usleep calls it inside libc: not wrapped */
    say("ready\n");
}

static void on_usr1(int sig)
{
    (void)sig;
    got = 1;
    sem_post(&posted);
}

static void on_alarm(int sig)
{
    (void)sig;
    say("alarm handled\n");
    _exit(0);
}

static void on_blocked(int sig)
{
    (void)sig;
    say(pthread_equal(pthread_self(), worker) ? "handled on the worker\n" : "handled elsewhere\n");
    _exit(0);
}

static int rt_seen, rt_n;
static pid_t rt_sender;
/* Handlers may run at once on two threads (natively the kernel picks any
 * thread that leaves the signal open): each value once, in any order. */
static void on_rt(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    char b[96];
    int v = si->si_value.sival_int;
    int fresh = v >= 1 && v <= 3 && !(__atomic_fetch_or(&rt_seen, 1 << v, __ATOMIC_SEQ_CST) & (1 << v));
    int ok = fresh && si->si_code == SI_QUEUE && si->si_pid == rt_sender;
    snprintf(b, sizeof b, "rt %d %s\n", v, ok ? "ok" : "wrong siginfo or twice");
    say(b);
    if (__atomic_add_fetch(&rt_n, 1, __ATOMIC_SEQ_CST) == 3)
        sem_post(&posted);
}

static void *cond_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&cm);
    for (;;)
        pthread_cond_wait(&cv, &cm);
    return NULL;
}

static void *mutex_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m1);
    return NULL;
}

static void *deadlocker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m2);
    sem_post(&posted);
    pthread_mutex_lock(&m1);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    /* The default actions are what the term, mutex and deadlock cases
     * test; a runner started under nohup(1) hands SIGHUP down ignored. */
    signal(SIGHUP, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sem_init(&never, 0, 0);
    sem_init(&posted, 0, 0);
    if (!strcmp(c, "term")) {
        ready();
        sem_wait(&never);
    } else if (!strcmp(c, "usr1")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR1, &sa, NULL);
        ready();
        while (sem_wait(&posted) != 0 && errno == EINTR)
            ;
        say(got ? "usr1 handled\n" : "sem_wait returned without the handler\n");
        return got ? 0 : 1;
    } else if (!strcmp(c, "alarm")) {
        signal(SIGALRM, on_alarm);
        pthread_create(&worker, NULL, cond_waiter, NULL);
        ready();
        alarm(1);
        pthread_join(worker, NULL);
    } else if (!strcmp(c, "mutex")) {
        pthread_mutex_lock(&m1);
        pthread_create(&worker, NULL, mutex_waiter, NULL);
        ready();
        sem_wait(&never);
    } else if (!strcmp(c, "deadlock")) {
        pthread_mutex_lock(&m1);
        pthread_create(&worker, NULL, deadlocker, NULL);
        sem_wait(&posted);
        ready();
        pthread_mutex_lock(&m2);
    } else if (!strcmp(c, "blocked")) {
        signal(SIGUSR1, on_blocked);
        pthread_create(&worker, NULL, cond_waiter, NULL);   /* SIGUSR1 open there */
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGUSR1);
        pthread_sigmask(SIG_BLOCK, &s, NULL);
        ready();
        sem_wait(&never);
    } else if (!strcmp(c, "rt")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_rt;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGRTMIN, &sa, NULL);
        ready();
        pid_t parent = getpid();
        rt_sender = fork();
        if (rt_sender == 0) {
            /* After the parent is in its wait (best effort: an earlier
             * signal is taken as natively, and the case still passes). */
            struct timespec ts = { 0, 200000000 };
            nanosleep(&ts, NULL);
            for (int i = 1; i <= 3; i++)
                sigqueue(parent, SIGRTMIN, (union sigval){ .sival_int = i });
            _exit(0);
        }
        while (sem_wait(&posted) != 0 && errno == EINTR)
            ;
        waitpid(rt_sender, NULL, 0);
        say("rt done\n");
        return 0;
    } else {
        fprintf(stderr, "usage: sigidle term|usr1|alarm|mutex|deadlock|blocked|rt\n");
        return 2;
    }
    say("wait returned\n");
    return 1;
}
