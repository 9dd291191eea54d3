/*
 * sigsuspend.c -- sigsuspend and pause are real waits: a thread waits in
 * one sleep of its kernel thread until a signal it leaves open comes, from
 * pthread_kill (thread-directed) or from another process (kill(2) to the
 * process, sent by a child), then returns -1/EINTR after the handler ran on
 * that thread. After sigsuspend(3p), pause(3p) and signal(7).
 *
 * How "a real wait" shows without timing anything: the waiting thread reads
 * its kernel thread's id and voluntary context switches
 * (/proc/thread-self/status) before and after the wait. Natively a wait is
 * one sleep (a switch or two). A wait that polls (naps in a loop) sleeps and
 * wakes many times while the sender holds off for SEND_DELAY, or comes back
 * on another kernel thread. The sender's delay only makes a polling wait
 * visible; nothing depends on its length.
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "check.h"

#define SEND_DELAY_NS (200 * 1000000L)
#define MAX_SWITCHES 5            /* per wait; a polling wait makes dozens */

static volatile sig_atomic_t hits;
static pthread_t handled_by;
static void on_signal(int sig)
{
    (void)sig;
    handled_by = pthread_self();
    hits++;
}

static void set_handler(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(sig, &sa, NULL) == 0);
}

static sigset_t only(int sig)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    return s;
}

/* This kernel thread's voluntary context switches. */
static long voluntary_switches(void)
{
    FILE *f = fopen("/proc/thread-self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long n = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
            break;
    fclose(f);
    return n;
}

static sem_t ready;

struct waiter {
    int use_pause;               /* pause() rather than sigsuspend(mask) */
    int sig;                     /* the signal it waits for */
    int r, e, on_me;             /* what the call returned, handler here */
    int same_kthread;            /* came back on the kernel thread it left */
    long switches;               /* its kernel thread's sleeps meanwhile */
};

static void *wait_for_signal(void *arg)
{
    struct waiter *w = arg;
    sigset_t open;
    pthread_sigmask(SIG_BLOCK, NULL, &open);
    sigdelset(&open, w->sig);
    if (w->use_pause) {
        /* pause() waits with the thread's own mask: open it first. The
         * signal is blocked until then, so one sent early stays pending. */
        sigset_t s = only(w->sig);
        pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    }
    long tid0 = syscall(SYS_gettid), sw0 = voluntary_switches();
    sem_post(&ready);
    int r = w->use_pause ? pause() : sigsuspend(&open);
    int e = errno;
    long tid1 = syscall(SYS_gettid), sw1 = voluntary_switches();
    w->r = r;
    w->e = e;
    w->on_me = pthread_equal(handled_by, pthread_self());
    w->same_kthread = tid0 == tid1;
    w->switches = sw1 - sw0;
    return NULL;
}

static void hold_off(void)
{
    struct timespec ts = { 0, SEND_DELAY_NS };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A child process that sends sig to us after the delay: raw system calls
 * only (async-signal-safe, and no libc state of a threaded parent). */
static pid_t send_from_child(int sig)
{
    pid_t parent = getpid();
    pid_t c = fork();
    if (c == 0) {
        struct timespec ts = { 0, SEND_DELAY_NS };
        syscall(SYS_nanosleep, &ts, NULL);
        syscall(SYS_kill, parent, sig);
        syscall(SYS_exit_group, 0);
    }
    return c;
}

static void report(const char *what, const struct waiter *w)
{
    printf("%s: %s, handler ran on the waiter: %d, one sleep of its kernel thread: %d\n", what,
           w->r == -1 ? errname(w->e) : "returned", w->on_me,
           w->same_kthread && w->switches >= 0 && w->switches <= MAX_SWITCHES);
    if (!(w->same_kthread && w->switches <= MAX_SWITCHES))
        fprintf(stderr, "%s: same kernel thread %d, voluntary switches %ld\n", what, w->same_kthread,
                w->switches);
    CHECK(w->r == -1 && w->e == EINTR && w->on_me);
    CHECK(w->same_kthread && w->switches >= 0 && w->switches <= MAX_SWITCHES);
}

int main(void)
{
    check_start("sigsuspend");
    set_handler(SIGUSR1);
    set_handler(SIGUSR2);
    sem_init(&ready, 0, 0);
    /* Every thread blocks both but while it waits for one. */
    sigset_t both = only(SIGUSR1);
    sigaddset(&both, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &both, NULL);
    pthread_t t;

    /* thread-directed: pthread_kill ends a sigsuspend */
    struct waiter w1 = { .sig = SIGUSR1 };
    hits = 0;
    CHECK(pthread_create(&t, NULL, wait_for_signal, &w1) == 0);
    sem_wait(&ready);
    hold_off();
    CHECK(pthread_kill(t, SIGUSR1) == 0);
    pthread_join(t, NULL);
    report("sigsuspend, pthread_kill", &w1);
    CHECK(hits == 1);

    /* process-directed, from another process: kill(2) ends a sigsuspend */
    struct waiter w2 = { .sig = SIGUSR2 };
    hits = 0;
    CHECK(pthread_create(&t, NULL, wait_for_signal, &w2) == 0);
    sem_wait(&ready);
    pid_t c = send_from_child(SIGUSR2);
    CHECK(c > 0);
    pthread_join(t, NULL);
    int st = -1;
    while (waitpid(c, &st, 0) < 0 && errno == EINTR)
        ;
    report("sigsuspend, kill from a child process", &w2);
    CHECK(hits == 1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* pause: thread-directed, then process-directed */
    struct waiter w3 = { .use_pause = 1, .sig = SIGUSR1 };
    hits = 0;
    CHECK(pthread_create(&t, NULL, wait_for_signal, &w3) == 0);
    sem_wait(&ready);
    hold_off();
    CHECK(pthread_kill(t, SIGUSR1) == 0);
    pthread_join(t, NULL);
    report("pause, pthread_kill", &w3);
    CHECK(hits == 1);

    struct waiter w4 = { .use_pause = 1, .sig = SIGUSR2 };
    hits = 0;
    CHECK(pthread_create(&t, NULL, wait_for_signal, &w4) == 0);
    sem_wait(&ready);
    c = send_from_child(SIGUSR2);
    CHECK(c > 0);
    pthread_join(t, NULL);
    while (waitpid(c, &st, 0) < 0 && errno == EINTR)
        ;
    report("pause, kill from a child process", &w4);
    CHECK(hits == 1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return check_end("sigsuspend");
}
