/*
 * standinsig.c -- sigwait, sigsuspend and pause see a process-directed
 * signal while the thread that waits shares its CPU with a thread stuck in
 * a call the shim does not wrap: main waits in thrd_join (glibc's own
 * futex), and a C11 thread sends kill(getpid(), SIGUSR1) 0.3 s later,
 * then waits up to 8 s for the waiter to report it. After sigwait(3p), sigsuspend(3p),
 * pause(3p): the signal is accepted or its handler runs "when" it is
 * generated, not when an unrelated thread's call returns.
 *
 * Under the shim with one VP, main's VP stalls in thrd_join and the stall
 * watchdog's stand-in runs the waiter. Before the fix the waiter's naps
 * between its polls of the pending set were alarms that nobody fired
 * until main's VP came back: the signal was seen only after the join
 * (the killer's 8 s ran out).
 */
#include <pthread.h>
#include <signal.h>
#include <threads.h>
#include "check.h"

static int mode;                 /* 0 sigwait, 1 sigsuspend, 2 pause */
static int seen;                 /* the waiter saw the signal (atomic) */
static volatile sig_atomic_t handled;
static pthread_mutex_t ready_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_c = PTHREAD_COND_INITIALIZER;
static int ready;

static void on_usr1(int sig) { (void)sig; handled = 1; }

static void *waiter(void *arg)
{
    (void)arg;
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_mutex_lock(&ready_m);
    ready = 1;
    pthread_cond_signal(&ready_c);
    pthread_mutex_unlock(&ready_m);
    int ok = 0;
    if (mode == 0) {
        int sig = 0;
        ok = sigwait(&usr1, &sig) == 0 && sig == SIGUSR1;
    } else if (mode == 1) {
        sigset_t during;
        pthread_sigmask(SIG_BLOCK, NULL, &during);
        sigdelset(&during, SIGUSR1);
        ok = sigsuspend(&during) == -1 && errno == EINTR && handled;
    } else {
        pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
        while (!handled)
            pause();
        ok = 1;
        pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    }
    __atomic_store_n(&seen, ok ? 1 : -1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* A C11 thread: send the signal, then wait for the waiter's report while
 * main is stuck joining us. 1 seen, -1 seen wrongly, 0 not within 8 s. */
static int killer(void *arg)
{
    int *out = arg;
    struct timespec ms = { 0, 1000000 }, later = { 0, 300000000 };
    /* Later: the waiter's naps then run where main's VP is stalled (on a
     * stand-in), not only the one it began on main's VP. */
    nanosleep(&later, NULL);
    kill(getpid(), SIGUSR1);
    int s = 0;
    for (int i = 0; i < 8000 && !(s = __atomic_load_n(&seen, __ATOMIC_SEQ_CST)); i++)
        nanosleep(&ms, NULL);
    *out = s;
    return 0;
}

int main(void)
{
    check_start("standinsig");
    static const char *names[] = { "sigwait", "sigsuspend", "pause" };
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    /* Blocked in main, and so in the C11 thread, which inherits it: the
     * signal is the waiter's to take. */
    CHECK(pthread_sigmask(SIG_BLOCK, &usr1, NULL) == 0);
    for (mode = 0; mode < 3; mode++) {
        __atomic_store_n(&seen, 0, __ATOMIC_SEQ_CST);
        handled = 0;
        ready = 0;
        pthread_t w;
        CHECK(pthread_create(&w, NULL, waiter, NULL) == 0);
        pthread_mutex_lock(&ready_m);
        while (!ready)
            pthread_cond_wait(&ready_c, &ready_m);
        pthread_mutex_unlock(&ready_m);
        usleep(20000);           /* let it start waiting (either way is correct) */
        thrd_t k;
        int s = 0;
        CHECK(thrd_create(&k, killer, &s) == thrd_success);
        CHECK(thrd_join(k, NULL) == thrd_success);
        printf("%s: signal seen while another thread waits in thrd_join: %s\n", names[mode],
               s == 1 ? "yes" : s < 0 ? "wrongly" : "no");
        CHECK(s == 1);
        CHECK(pthread_join(w, NULL) == 0);
    }
    return check_end("standinsig");
}
