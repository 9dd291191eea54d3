/*
 * sigmask.c -- per-thread signal masks and pending queues when many
 * threads share few kernel threads (run by run-compare.sh natively, under
 * the shim with the default VPs and with NTH_VPS=1, where every thread
 * takes turns on one kernel thread):
 *  - a thread's mask survives switches to threads with other masks;
 *  - a process-directed signal blocked by the sender runs its handler on
 *    the one thread that does not block it, never on the others;
 *  - a thread-directed signal blocked by the target stays pending on that
 *    thread only (sigpending), is delivered to it on unblock, and real-time
 *    ones queue with their values, in order, for sigwaitinfo;
 *  - pthread_kill to a thread sleeping in nanosleep wakes it: EINTR, with
 *    the handler run on it;
 *  - of two threads in sigwait for the same signal, only the target of a
 *    pthread_kill takes it;
 *  - a thread created by a thread inherits that thread's mask;
 *  - error codes: EINVAL for bad signal numbers and a bad `how`.
 * After pthread_sigmask(3p), pthread_kill(3p), sigpending(3p), sigwait(3p),
 * sigqueue(3p), nanosleep(3p), pthread_create(3p) and signal(7).
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
    sa.sa_handler = on_signal;     /* no SA_RESTART: sleeps see EINTR */
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

static int blocks(int sig)
{
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    return sigismember(&cur, sig) == 1;
}

/* ---- masks survive switches ------------------------------------------- */

#define ROUNDS 200
static pthread_barrier_t both;

/* Blocks SIGUSR1 (block != 0) or not, then yields ROUNDS times, checking
 * its mask after every switch: 1 if it always was its own. */
static void *keep_mask(void *arg)
{
    int block = (int)(intptr_t)arg;
    sigset_t u1 = only(SIGUSR1);
    pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &u1, NULL);
    pthread_barrier_wait(&both);
    int ok = 1;
    for (int i = 0; i < ROUNDS; i++) {
        sched_yield();
        ok &= blocks(SIGUSR1) == block;
    }
    return (void *)(intptr_t)ok;
}

/* ---- process-directed: to the one thread that does not block it -------- */

static volatile int open_done;

/* Leaves SIGUSR1 open and waits (yielding) until its handler has run. */
static void *open_waiter(void *arg)
{
    (void)arg;
    sigset_t u1 = only(SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &u1, NULL);
    pthread_barrier_wait(&both);
    while (!hits)
        sched_yield();
    __atomic_store_n(&open_done, 1, __ATOMIC_SEQ_CST);
    return (void *)(intptr_t)pthread_equal(handled_by, pthread_self());
}

/* Blocks SIGUSR1, sends it to the process, and yields until it is handled
 * elsewhere: 1 if the handler never ran on this thread. */
static void *blocked_sender(void *arg)
{
    (void)arg;
    sigset_t u1 = only(SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &u1, NULL);
    pthread_barrier_wait(&both);
    kill(getpid(), SIGUSR1);
    while (!__atomic_load_n(&open_done, __ATOMIC_SEQ_CST))
        sched_yield();
    return (void *)(intptr_t)!pthread_equal(handled_by, pthread_self());
}

/* ---- thread-directed, blocked by the target ----------------------------- */

static sem_t go, ready;

/* Blocks SIGUSR2, says ready, waits for go (meanwhile main queues it):
 * bit 0 pending here, bit 1 not handled while blocked, bit 2 handled on
 * this thread once unblocked. */
static void *pending_here(void *arg)
{
    (void)arg;
    sigset_t u2 = only(SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &u2, NULL);
    sem_post(&ready);
    while (sem_wait(&go) != 0)
        ;
    sigset_t pend;
    sigpending(&pend);
    int r = sigismember(&pend, SIGUSR2) == 1;
    r |= (hits == 0) << 1;
    pthread_sigmask(SIG_UNBLOCK, &u2, NULL);
    r |= (hits == 1 && pthread_equal(handled_by, pthread_self())) << 2;
    return (void *)(intptr_t)r;
}

/* Blocks SIGRTMIN+3, then takes three queued values with sigwaitinfo. */
static void *take_rt_values(void *arg)
{
    (void)arg;
    sigset_t rt = only(SIGRTMIN + 3);
    pthread_sigmask(SIG_BLOCK, &rt, NULL);
    sem_post(&ready);
    while (sem_wait(&go) != 0)
        ;
    int got = 0;
    for (int i = 0; i < 3; i++) {
        siginfo_t si;
        if (sigwaitinfo(&rt, &si) != SIGRTMIN + 3 || si.si_code != SI_QUEUE)
            return (void *)-1;
        got = got * 10 + si.si_value.sival_int;
    }
    return (void *)(intptr_t)got;
}

/* ---- pthread_kill wakes a sleeper ----------------------------------------- */

static volatile int sleeper_done;
static void *long_sleep(void *arg)
{
    (void)arg;
    sigset_t u1 = only(SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &u1, NULL);
    sem_post(&ready);
    struct timespec ten = { 10, 0 }, rem = { 0, 0 };
    int r = nanosleep(&ten, &rem);
    int e = errno;
    __atomic_store_n(&sleeper_done, 1, __ATOMIC_SEQ_CST);
    return (void *)(intptr_t)(r == -1 && e == EINTR && rem.tv_sec > 0 &&
                              hits >= 1 && pthread_equal(handled_by, pthread_self()));
}

/* ---- two sigwaits, one target ------------------------------------------------ */

static void *sigwait_usr2(void *arg)
{
    (void)arg;
    sigset_t s = only(SIGUSR2);
    int sig = 0;
    sem_post(&ready);
    int r = sigwait(&s, &sig);
    return (void *)(intptr_t)(r == 0 ? sig : -1);
}

/* ---- inheritance from a thread that is not main --------------------------- */

static void *report_sigint_blocked(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)blocks(SIGINT);
}

static void *block_sigint_then_create(void *arg)
{
    (void)arg;
    sigset_t si = only(SIGINT);
    pthread_sigmask(SIG_BLOCK, &si, NULL);
    pthread_t c;
    void *res = (void *)-1;
    if (pthread_create(&c, NULL, report_sigint_blocked, NULL) == 0)
        pthread_join(c, &res);
    return res;
}

int main(void)
{
    check_start("sigmask");
    set_handler(SIGUSR1);
    set_handler(SIGUSR2);
    sem_init(&go, 0, 0);
    sem_init(&ready, 0, 0);
    pthread_t a, b, t;
    void *ra, *rb, *res;

    EXPECT("pthread_kill(self, -1)", pthread_kill(pthread_self(), -1), EINVAL);
    EXPECT("pthread_kill(self, 65)", pthread_kill(pthread_self(), 65), EINVAL);
    EXPECT("pthread_sigmask(how -1)", pthread_sigmask(-1, &(sigset_t){ { 0 } }, NULL), EINVAL);
    EXPECT("pthread_sigmask(how -1, no set)", pthread_sigmask(-1, NULL, NULL), 0);

    /* masks of threads taking turns stay their own */
    pthread_barrier_init(&both, NULL, 2);
    CHECK(pthread_create(&a, NULL, keep_mask, (void *)1) == 0);
    CHECK(pthread_create(&b, NULL, keep_mask, (void *)0) == 0);
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    printf("masks kept across %d switches: blocking %d, open %d\n", ROUNDS, (int)(intptr_t)ra, (int)(intptr_t)rb);
    CHECK(ra == (void *)1 && rb == (void *)1);
    printf("main's mask untouched by them: %d\n", !blocks(SIGUSR1));
    CHECK(!blocks(SIGUSR1));

    /* process-directed, the sender blocks it: handled by the open thread */
    sigset_t u1 = only(SIGUSR1), u2 = only(SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &u1, NULL);
    hits = 0;
    pthread_barrier_destroy(&both);
    pthread_barrier_init(&both, NULL, 2);
    CHECK(pthread_create(&a, NULL, blocked_sender, NULL) == 0);
    CHECK(pthread_create(&b, NULL, open_waiter, NULL) == 0);
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    printf("kill() by a blocking thread: not handled there %d, handled by the open one %d, once %d\n",
           (int)(intptr_t)ra, (int)(intptr_t)rb, hits == 1);
    CHECK(ra == (void *)1 && rb == (void *)1 && hits == 1);

    /* thread-directed, blocked by the target: pending there only */
    pthread_sigmask(SIG_BLOCK, &u2, NULL);
    hits = 0;
    CHECK(pthread_create(&t, NULL, pending_here, NULL) == 0);
    sem_wait(&ready);
    EXPECT("pthread_kill(blocking thread, SIGUSR2)", pthread_kill(t, SIGUSR2), 0);
    sigset_t pend;
    sigpending(&pend);
    printf("not pending on the sender: %d\n", sigismember(&pend, SIGUSR2) == 0);
    CHECK(sigismember(&pend, SIGUSR2) == 0);
    sem_post(&go);
    pthread_join(t, &res);
    printf("pending on the target %d, held while blocked %d, handled there on unblock %d\n",
           (int)(intptr_t)res & 1, (int)(intptr_t)res >> 1 & 1, (int)(intptr_t)res >> 2 & 1);
    CHECK(res == (void *)7);

    /* queued real-time signals keep their values, per target */
    CHECK(pthread_create(&t, NULL, take_rt_values, NULL) == 0);
    sem_wait(&ready);
    for (int v = 1; v <= 3; v++)
        EXPECT("pthread_sigqueue(other, SIGRTMIN+3)", pthread_sigqueue(t, SIGRTMIN + 3, (union sigval){ .sival_int = v }), 0);
    sem_post(&go);
    pthread_join(t, &res);
    printf("values taken in order by the target: %d\n", (int)(intptr_t)res);
    CHECK(res == (void *)123);

    /* pthread_kill wakes a thread in a long nanosleep. The signal may come
     * before the sleep starts (then it is just handled): send until the
     * sleep reports, 10 s at most (then the check fails). */
    hits = 0;
    CHECK(pthread_create(&t, NULL, long_sleep, NULL) == 0);
    sem_wait(&ready);
    for (int i = 0; i < 2000 && !__atomic_load_n(&sleeper_done, __ATOMIC_SEQ_CST); i++) {
        pthread_kill(t, SIGUSR1);
        struct timespec ms5 = { 0, 5 * 1000000L };
        nanosleep(&ms5, NULL);
    }
    pthread_join(t, &res);
    printf("nanosleep woken by pthread_kill, EINTR, handler on the sleeper: %d\n", (int)(intptr_t)res);
    CHECK(res == (void *)1);

    /* two threads in sigwait for SIGUSR2: only the target takes it */
    hits = 0;
    CHECK(pthread_create(&a, NULL, sigwait_usr2, NULL) == 0);
    CHECK(pthread_create(&b, NULL, sigwait_usr2, NULL) == 0);
    sem_wait(&ready);
    sem_wait(&ready);
    pthread_kill(b, SIGUSR2);
    pthread_join(b, &rb);
    pthread_kill(a, SIGUSR2);
    pthread_join(a, &ra);
    printf("each sigwait took its own: %d %d, handler ran: %d\n",
           rb == (void *)(intptr_t)SIGUSR2, ra == (void *)(intptr_t)SIGUSR2, hits != 0);
    CHECK(ra == (void *)(intptr_t)SIGUSR2 && rb == (void *)(intptr_t)SIGUSR2 && hits == 0);

    /* a child inherits its creating thread's mask, not main's */
    CHECK(pthread_create(&t, NULL, block_sigint_then_create, NULL) == 0);
    pthread_join(t, &res);
    printf("grandchild inherits its creator's mask: %d; main's still open: %d\n",
           (int)(intptr_t)res, !blocks(SIGINT));
    CHECK(res == (void *)1 && !blocks(SIGINT));
    return check_end("sigmask");
}
