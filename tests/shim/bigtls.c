/*
 * bigtls.c -- a program with 80 000 bytes of __thread data whose signal
 * handler posts a semaphore (sem_post(3p) is async-signal-safe) and sends
 * another thread a signal (pthread_kill(3p) is too): the thread waiting on
 * the semaphore wakes, and the other thread's handler runs and ends its
 * sem_wait with EINTR, as natively.
 *
 * Why the big TLS: glibc puts a thread's static TLS at the top of its
 * stack, and refuses (EINVAL) a stack size that leaves too little room for
 * it. Under the shim, a handler's sem_post and pthread_kill leave their
 * wake-ups to a helper kernel thread (pthread-shim/sigdefer.c) that it
 * asked glibc for with a 64 KiB stack: with this TLS glibc refused it, the
 * shim said "cannot start the signal helper thread" on stderr and the
 * handler's wake-ups were left undone. run-compare.sh checks that the
 * shim runs print nothing on stderr (quiet list) besides comparing stdout.
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include "check.h"

#define TLS_BYTES 80000
/* A wait longer than this is a lost wake-up (a failure, not a timing). */
#define LOST_AFTER_S 20

static __thread char big[TLS_BYTES];
static sem_t posted;         /* posted by main's handler */
static sem_t never;          /* never posted: the kicked thread waits here */
static pthread_t kicked;
static int kicked_handled;

static void on_usr1(int sig)
{
    (void)sig;
    int e = errno;
    sem_post(&posted);
    pthread_kill(kicked, SIGUSR2);
    errno = e;
}

static void on_usr2(int sig)
{
    (void)sig;
    __atomic_store_n(&kicked_handled, 1, __ATOMIC_RELEASE);
}

/* Each thread's copy of big starts zeroed and is its own. */
static int tls_own(char mark)
{
    int clean = 1;
    for (size_t i = 0; i < TLS_BYTES; i += 997)
        clean &= big[i] == 0;
    big[0] = big[TLS_BYTES - 1] = mark;
    return clean && big[0] == mark && big[TLS_BYTES - 1] == mark;
}

static void *post_waiter(void *arg)
{
    (void)arg;
    int own = tls_own('w');
    struct timespec dl = deadline_ms(CLOCK_REALTIME, LOST_AFTER_S * 1000L);
    int r;
    while ((r = sem_timedwait(&posted, &dl)) != 0 && errno == EINTR)
        ;
    return (void *)(intptr_t)((r == 0 ? 0 : 1) | (own ? 0 : 2));
}

/* Waits on a semaphore nobody posts: only the handler of the signal that
 * main's handler sends it ends the wait (EINTR; no SA_RESTART). */
static void *kick_waiter(void *arg)
{
    (void)arg;
    int own = tls_own('k');
    struct timespec dl = deadline_ms(CLOCK_REALTIME, LOST_AFTER_S * 1000L);
    int r = sem_timedwait(&never, &dl);
    int e = r ? errno : 0;
    int handled = __atomic_load_n(&kicked_handled, __ATOMIC_ACQUIRE);
    return (void *)(intptr_t)((e == EINTR && handled ? 0 : 1) | (own ? 0 : 2));
}

int main(void)
{
    check_start("bigtls");
    CHECK(tls_own('m'));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_usr1;
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    sa.sa_handler = on_usr2;
    CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);
    CHECK(sem_init(&posted, 0, 0) == 0);
    CHECK(sem_init(&never, 0, 0) == 0);

    pthread_t pw;
    EXPECT("create post waiter", pthread_create(&pw, NULL, post_waiter, NULL), 0);
    EXPECT("create kick waiter", pthread_create(&kicked, NULL, kick_waiter, NULL), 0);

    /* Let both get into their waits: the wake-ups must come from the
     * handler, not find the waiters before they wait. Not a correctness
     * need (either order passes natively), only what makes the test bite. */
    struct timespec nap = { 0, 100 * 1000 * 1000 };
    nanosleep(&nap, NULL);
    raise(SIGUSR1);          /* to the calling thread: main's handler */

    void *rp = (void *)1, *rk = (void *)1;
    EXPECT("join post waiter", pthread_join(pw, &rp), 0);
    EXPECT("join kick waiter", pthread_join(kicked, &rk), 0);
    printf("post waiter: %s\n", (intptr_t)rp & 1 ? "not woken" : "woken by the handler's sem_post");
    printf("post waiter TLS: %s\n", (intptr_t)rp & 2 ? "shared" : "its own");
    printf("kick waiter: %s\n", (intptr_t)rk & 1 ? "not interrupted"
                                                 : "interrupted by the handler's pthread_kill");
    printf("kick waiter TLS: %s\n", (intptr_t)rk & 2 ? "shared" : "its own");
    CHECK(rp == NULL);
    CHECK(rk == NULL);
    CHECK(big[0] == 'm');
    return check_end("bigtls");
}
