/*
 * signals.c -- signals and threads: pthread_kill (also signal 0 and invalid
 * numbers), per-thread masks inherited at creation, delivery to the target
 * thread, pending signals delivered on unblock, sigwait / sigwaitinfo /
 * sigtimedwait, queued real-time signals in order, process-directed signals
 * (kill, sigqueue, a POSIX timer) reaching the one thread that does not
 * block them, and a blocking wait interrupted by a handler (EINTR).
 * After pthread_kill(3p), pthread_sigmask(3p), sigwait(3p), sigtimedwait(3p),
 * and signal(7) for "process-directed" and "thread-directed".
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include "check.h"

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
    sa.sa_handler = on_signal;     /* no SA_RESTART: blocking calls see EINTR */
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

/* "ready" handshake: the worker says it is about to wait */
static sem_t ready;

static void *check_inherited_mask(void *arg)
{
    (void)arg;
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    int inherited = sigismember(&cur, SIGUSR1) == 1;
    sigset_t u2 = only(SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &u2, NULL);        /* must not change main's mask */
    return (void *)(intptr_t)inherited;
}

/* Waits in sigsuspend with SIGUSR1 unblocked; reports whether the handler
 * ran on this very thread. */
static void *suspend_for_usr1(void *arg)
{
    (void)arg;
    sigset_t wait_mask;
    pthread_sigmask(SIG_BLOCK, NULL, &wait_mask);
    sigdelset(&wait_mask, SIGUSR1);
    sem_post(&ready);
    int r = sigsuspend(&wait_mask);
    int e = errno;
    return (void *)(intptr_t)(r == -1 && e == EINTR && pthread_equal(handled_by, pthread_self()));
}

static void *sigwait_usr2(void *arg)
{
    (void)arg;
    sigset_t s = only(SIGUSR2);
    int sig = 0;
    sem_post(&ready);
    int r = sigwait(&s, &sig);
    return (void *)(intptr_t)(r == 0 ? sig : -1);
}

static void *sigwaitinfo_rt(void *arg)
{
    (void)arg;
    sigset_t s = only(SIGRTMIN);
    siginfo_t si;
    sem_post(&ready);
    int r = sigwaitinfo(&s, &si);
    return (void *)(intptr_t)(r == SIGRTMIN && si.si_code == SI_QUEUE ? si.si_value.sival_int : -1);
}

static void *wait_timer_signal(void *arg)
{
    (void)arg;
    sigset_t s = only(SIGRTMIN + 1);
    siginfo_t si;
    struct timespec limit = { 20, 0 };
    int r = sigtimedwait(&s, &si, &limit);
    return (void *)(intptr_t)(r == SIGRTMIN + 1 && si.si_code == SI_TIMER);
}

static sem_t never;
static volatile int interrupted_done;
static void *sem_wait_interrupted(void *arg)
{
    (void)arg;
    sigset_t u1 = only(SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &u1, NULL);
    sem_post(&ready);
    int r = sem_wait(&never);
    int e = errno;
    __atomic_store_n(&interrupted_done, 1, __ATOMIC_SEQ_CST);
    return (void *)(intptr_t)(r == -1 ? e : 0);
}

static void *just_block_usr1(void *arg)
{
    /* a thread that blocks SIGUSR1 and waits: it must never take it */
    sem_wait((sem_t *)arg);
    return NULL;
}

/* The error cases of pthread_sigqueue(3), sigaction(2) and
 * sigprocmask(2) not covered above (issue 4's audit). */
static void test_error_audit(void)
{
    union sigval v = { .sival_int = 0 };
    EXPECT("pthread_sigqueue(self, 12345)", pthread_sigqueue(pthread_self(), 12345, v), EINVAL);
    EXPECT("pthread_sigqueue(self, 0)", pthread_sigqueue(pthread_self(), 0, v), 0);
    EXPECT("pthread_kill(self, 32 (glibc's))", pthread_kill(pthread_self(), 32), EINVAL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    EXPECT_ERRNO("sigaction(SIGKILL, SIG_IGN)", sigaction(SIGKILL, &sa, NULL), EINVAL);
    EXPECT_ERRNO("sigaction(SIGSTOP, SIG_IGN)", sigaction(SIGSTOP, &sa, NULL), EINVAL);
    EXPECT_ERRNO("sigaction(0)", sigaction(0, &sa, NULL), EINVAL);
    EXPECT_ERRNO("sigaction(65)", sigaction(65, &sa, NULL), EINVAL);
    EXPECT_ERRNO("sigaction(32 (glibc's))", sigaction(32, &sa, NULL), EINVAL);
    sigset_t s;
    sigemptyset(&s);
    EXPECT_ERRNO("sigprocmask(how 42)", sigprocmask(42, &s, NULL), EINVAL);
    /* No set: how is not looked at (Linux). */
    EXPECT_ERRNO("sigprocmask(how 42, no set)", sigprocmask(42, NULL, &s), 0);
}

int main(void)
{
    check_start("signals");
    set_handler(SIGUSR1);
    set_handler(SIGUSR2);
    sem_init(&ready, 0, 0);
    sem_init(&never, 0, 0);
    pthread_t t, u[2];
    void *res;

    EXPECT("pthread_kill(self, 0)", pthread_kill(pthread_self(), 0), 0);
    EXPECT("pthread_kill(self, 12345)", pthread_kill(pthread_self(), 12345), EINVAL);
    sigset_t s = only(SIGUSR1);
    EXPECT("pthread_sigmask(how 42)", pthread_sigmask(42, &s, NULL), EINVAL);

    /* thread-directed to the caller: handled before pthread_kill returns */
    hits = 0;
    EXPECT("pthread_kill(self, SIGUSR1)", pthread_kill(pthread_self(), SIGUSR1), 0);
    printf("handled at once on the caller: %d\n", hits == 1 && pthread_equal(handled_by, pthread_self()));
    CHECK(hits == 1 && pthread_equal(handled_by, pthread_self()));
    hits = 0;
    EXPECT_ERRNO("raise(SIGUSR1)", raise(SIGUSR1), 0);
    printf("raise handled on the caller: %d\n", hits == 1 && pthread_equal(handled_by, pthread_self()));
    CHECK(hits == 1);

    /* masks: inherited at creation, per thread afterwards */
    EXPECT("block SIGUSR1 in main", pthread_sigmask(SIG_BLOCK, &s, NULL), 0);
    CHECK(pthread_create(&t, NULL, check_inherited_mask, NULL) == 0);
    pthread_join(t, &res);
    printf("new thread inherits the mask: %d\n", (int)(intptr_t)res);
    CHECK(res == (void *)1);
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    printf("thread's own change left main's mask alone: %d\n", sigismember(&cur, SIGUSR2) == 0);
    CHECK(sigismember(&cur, SIGUSR2) == 0);

    /* pending while blocked, delivered on unblock */
    hits = 0;
    pthread_kill(pthread_self(), SIGUSR1);
    sigset_t pend;
    sigpending(&pend);
    printf("blocked signal pending: %d, not handled: %d\n", sigismember(&pend, SIGUSR1) == 1, hits == 0);
    CHECK(sigismember(&pend, SIGUSR1) == 1 && hits == 0);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    printf("delivered on unblock: %d\n", hits == 1);
    CHECK(hits == 1);
    pthread_sigmask(SIG_BLOCK, &s, NULL);

    /* thread-directed to another thread, waiting in sigsuspend */
    hits = 0;
    CHECK(pthread_create(&t, NULL, suspend_for_usr1, NULL) == 0);
    sem_wait(&ready);
    EXPECT("pthread_kill(live thread, 0)", pthread_kill(t, 0), 0);
    EXPECT("pthread_kill(other, SIGUSR1)", pthread_kill(t, SIGUSR1), 0);
    pthread_join(t, &res);
    printf("handled on the target thread, sigsuspend EINTR: %d\n", (int)(intptr_t)res);
    CHECK(res == (void *)1 && hits == 1);

    /* sigwait takes a thread-directed signal without running the handler */
    sigset_t s2 = only(SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &s2, NULL);
    hits = 0;
    CHECK(pthread_create(&t, NULL, sigwait_usr2, NULL) == 0);
    sem_wait(&ready);
    pthread_kill(t, SIGUSR2);
    pthread_join(t, &res);
    printf("sigwait got SIGUSR2: %d, handler ran: %d\n", res == (void *)(intptr_t)SIGUSR2, hits != 0);
    CHECK(res == (void *)(intptr_t)SIGUSR2 && hits == 0);

    /* sigtimedwait and sigwaitinfo on the caller */
    siginfo_t si;
    struct timespec short_wait = { 0, 20 * 1000000L };
    EXPECT_ERRNO("sigtimedwait(nothing pending, 20ms)", sigtimedwait(&s2, &si, &short_wait), EAGAIN);
    struct timespec badts = { 0, 1000000000L };
    EXPECT_ERRNO("sigtimedwait(tv_nsec 1e9)", sigtimedwait(&s2, &si, &badts), EINVAL);
    pthread_kill(pthread_self(), SIGUSR2);
    int r = sigwaitinfo(&s2, &si);
    printf("sigwaitinfo took the pending SIGUSR2: %d\n", r == SIGUSR2 && si.si_signo == SIGUSR2);
    CHECK(r == SIGUSR2);

    /* queued real-time signals come out in order with their values */
    sigset_t rt = only(SIGRTMIN + 2);
    pthread_sigmask(SIG_BLOCK, &rt, NULL);
    for (int v = 1; v <= 3; v++)
        CHECK(pthread_sigqueue(pthread_self(), SIGRTMIN + 2, (union sigval){ .sival_int = v }) == 0);
    int order_ok = 1;
    for (int v = 1; v <= 3; v++) {
        r = sigwaitinfo(&rt, &si);
        order_ok &= r == SIGRTMIN + 2 && si.si_value.sival_int == v;
    }
    printf("pthread_sigqueue values 1 2 3 in order: %d\n", order_ok);
    CHECK(order_ok);

    /* process-directed: sigqueue to the process, taken by a sigwaitinfo */
    sigset_t rt0 = only(SIGRTMIN);
    pthread_sigmask(SIG_BLOCK, &rt0, NULL);
    CHECK(pthread_create(&t, NULL, sigwaitinfo_rt, NULL) == 0);
    sem_wait(&ready);
    CHECK(sigqueue(getpid(), SIGRTMIN, (union sigval){ .sival_int = 42 }) == 0);
    pthread_join(t, &res);
    printf("sigqueue to the process reached the waiting thread, value %d\n", (int)(intptr_t)res);
    CHECK(res == (void *)42);

    /* process-directed: kill() reaches the only thread not blocking SIGUSR1 */
    sem_t hold;
    sem_init(&hold, 0, 0);
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&u[i], NULL, just_block_usr1, &hold) == 0);
    hits = 0;
    CHECK(pthread_create(&t, NULL, suspend_for_usr1, NULL) == 0);
    sem_wait(&ready);
    CHECK(kill(getpid(), SIGUSR1) == 0);
    pthread_join(t, &res);
    printf("kill() handled by the one thread that does not block it: %d\n", (int)(intptr_t)res);
    CHECK(res == (void *)1 && hits == 1);
    for (int i = 0; i < 2; i++) sem_post(&hold);
    for (int i = 0; i < 2; i++) pthread_join(u[i], NULL);

    /* process-directed: a POSIX timer's signal, taken by sigtimedwait */
    sigset_t rt1 = only(SIGRTMIN + 1);
    pthread_sigmask(SIG_BLOCK, &rt1, NULL);
    timer_t tm;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGRTMIN + 1;
    CHECK(timer_create(CLOCK_MONOTONIC, &sev, &tm) == 0);
    CHECK(pthread_create(&t, NULL, wait_timer_signal, NULL) == 0);
    struct itimerspec its = { { 0, 0 }, { 0, 10 * 1000000L } };
    CHECK(timer_settime(tm, 0, &its, NULL) == 0);
    pthread_join(t, &res);
    printf("timer signal reached the waiting thread: %d\n", (int)(intptr_t)res);
    CHECK(res == (void *)1);
    timer_delete(tm);

    /* a handler interrupts a blocked sem_wait: EINTR. The signal may come
     * before the wait starts (then it is just handled), so send until the
     * wait reports; a wait that is never interrupted ends the loop after
     * about 10 s and fails. */
    CHECK(pthread_create(&t, NULL, sem_wait_interrupted, NULL) == 0);
    sem_wait(&ready);
    int sent = 0;
    while (!__atomic_load_n(&interrupted_done, __ATOMIC_SEQ_CST) && sent < 2000) {
        pthread_kill(t, SIGUSR1);
        sent++;
        struct timespec ms5 = { 0, 5 * 1000000L };
        nanosleep(&ms5, NULL);
    }
    if (!__atomic_load_n(&interrupted_done, __ATOMIC_SEQ_CST))
        sem_post(&never);
    pthread_join(t, &res);
    printf("sem_wait interrupted by a handler: %s\n", errname((int)(intptr_t)res));
    CHECK(res == (void *)(intptr_t)EINTR);
    test_error_audit();
    return check_end("signals");
}
