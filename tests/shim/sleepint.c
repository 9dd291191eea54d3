/*
 * sleepint.c -- a process-directed signal (alarm's SIGALRM) whose handler
 * runs while a thread sleeps ends the sleep early, as natively:
 * sleep(3p) returns the unslept seconds, nanosleep(3p) -1/EINTR with the
 * remaining time, clock_nanosleep(3p) EINTR. Cases: main the only live
 * thread; main sleeping while another thread that blocks SIGALRM sleeps
 * too (the kernel must hand the signal to main); a read on an empty pipe
 * (-1/EINTR without SA_RESTART). A signal ignored by default (SIGCHLD of
 * an exiting child) must not end a sleep. Each sleep asks for 30 s and the
 * alarm comes after 1 s, so a sleep that is not interrupted shows up as a
 * wrong result (and a 30 s run), never as a near-miss on a timing bound.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include "check.h"

static volatile sig_atomic_t alarms;

static void on_alrm(int sig)
{
    (void)sig;
    alarms++;
}

static void *nothing(void *arg)
{
    return arg;
}

static int stop_sleeper;

/* Sleeps in short naps with SIGALRM blocked until told to stop. */
static void *sleeper(void *arg)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    while (!__atomic_load_n(&stop_sleeper, __ATOMIC_ACQUIRE)) {
        struct timespec ts = { 0, 20 * 1000000L };
        nanosleep(&ts, NULL);
    }
    return arg;
}

/* The 60 s watchdog of check_start is re-armed after each case. */
static void cases(const char *who)
{
    alarms = 0;
    alarm(1);
    unsigned left = sleep(30);
    printf("%s: sleep interrupted: %s, handler ran: %d\n", who, left > 0 && left < 30 ? "yes" : "no", (int)alarms);
    CHECK(left > 0 && left < 30);
    CHECK(alarms == 1);

    alarms = 0;
    alarm(1);
    struct timespec req = { 30, 0 }, rem = { 0, 0 };
    int r = nanosleep(&req, &rem);
    int e = errno;
    printf("%s: nanosleep: %d %s, rem > 0: %d, handler ran: %d\n", who, r, r ? errname(e) : "-",
           rem.tv_sec > 0 && rem.tv_sec < 30, (int)alarms);
    CHECK(r == -1 && e == EINTR && rem.tv_sec > 0 && rem.tv_sec < 30);

    alarms = 0;
    alarm(1);
    r = clock_nanosleep(CLOCK_MONOTONIC, 0, &req, NULL);
    printf("%s: clock_nanosleep: %s, handler ran: %d\n", who, errname(r), (int)alarms);
    CHECK(r == EINTR);
    alarm(60);
}

int main(void)
{
    check_start("sleepint");
    pthread_t t;
    pthread_create(&t, NULL, nothing, NULL);
    pthread_join(t, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alrm;        /* no SA_RESTART: read must fail */
    sigaction(SIGALRM, &sa, NULL);

    cases("alone");

    pthread_create(&t, NULL, sleeper, NULL);
    cases("with a sleeper");
    __atomic_store_n(&stop_sleeper, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);

    /* A read on an empty pipe: -1/EINTR (signal(7), no SA_RESTART). */
    int p[2];
    CHECK(pipe(p) == 0);
    for (int i = 0; i < 3; i++) {
        alarms = 0;
        alarm(1);
        char b;
        ssize_t n = read(p[0], &b, 1);
        int e = errno;
        printf("read %d: %zd %s, handler ran: %d\n", i, n, n < 0 ? errname(e) : "-", (int)alarms);
        CHECK(n == -1 && e == EINTR);
    }
    alarm(60);

    /* SIGCHLD is ignored by default: it must not end the sleep. */
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    struct timespec req = { 0, 300 * 1000000L };
    int r = nanosleep(&req, NULL);
    printf("nanosleep with SIGCHLD: %d\n", r);
    CHECK(r == 0);
    CHECK(waitpid(c, NULL, 0) == c);
    return check_end("sleepint");
}
