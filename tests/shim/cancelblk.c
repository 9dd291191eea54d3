/*
 * cancelblk.c -- many threads blocked at once, each in a different
 * cancellation point that waits in the kernel or sleeps (read, poll,
 * sleep, pthread_cond_wait, sem_wait, select, accept, pause, nanosleep,
 * usleep): pthread_cancel must end every one of them (its cleanup handler
 * runs, join returns PTHREAD_CANCELED), and pthread_kill with a handler
 * installed without SA_RESTART must end each blocking call with EINTR
 * (sleep: the seconds left). After pthread_cancel(3p), pthreads(7)
 * "Cancellation points", signal(7) "Interruption of system calls".
 *
 * Under the shim a call that blocks lends its VP to a stand-in kernel
 * thread, which runs the next of these threads; that one's call then
 * sits in the kernel on the stand-in. Those calls went straight to libc,
 * where neither request reached them: the second and later threads were
 * never cancelled and join hung (alone, each case passed).
 *
 * A signal sent before its target reaches the call would only run the
 * handler (then the call blocks), so the signalling loop sends again until
 * the call has returned: no timing decides the outcome.
 */
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <sys/select.h>
#include <sys/socket.h>
#include "check.h"

#define NCASES 10
#define ROUNDS 3

static const char *const names[NCASES] = { "read",   "poll",   "sleep", "condwait",  "sem_wait",
                                           "select", "accept", "pause", "nanosleep", "usleep" };

static int pfd[2];
static int lsock;
static sem_t sem;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int started;
static int cleaned[NCASES];
static int done[NCASES];
static int result[NCASES];       /* the errno, or 0 when the call returned without error */

static void cleanup(void *arg)
{
    int k = (int)(intptr_t)arg;
    if (k == 3)
        pthread_mutex_unlock(&m);   /* the cancelled wait relocked it */
    cleaned[k] = 1;
}

/* The blocking call of case k: -1 with errno set when it was interrupted
 * (sleep: -1/EINTR when seconds were left). */
static int blocking_call(int k)
{
    char b;
    switch (k) {
    case 0:
        return (int)read(pfd[0], &b, 1);
    case 1: {
        struct pollfd p = { pfd[0], POLLIN, 0 };
        return poll(&p, 1, -1);
    }
    case 2:
        if (sleep(100) == 0)
            return 0;
        errno = EINTR;
        return -1;
    case 3:
        pthread_mutex_lock(&m);
        for (;;)
            pthread_cond_wait(&c, &m);
    case 4:
        return sem_wait(&sem);
    case 5: {
        fd_set f;
        FD_ZERO(&f);
        FD_SET(pfd[0], &f);
        return select(pfd[0] + 1, &f, NULL, NULL, NULL);
    }
    case 6:
        return accept(lsock, NULL, NULL);
    case 7:
        return pause();
    case 8: {
        struct timespec t = { 100, 0 };
        return nanosleep(&t, NULL);
    }
    default:
        return usleep(50000000);
    }
}

static void *body(void *arg)
{
    int k = (int)(intptr_t)arg;
    int r;
    pthread_cleanup_push(cleanup, arg);
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    r = blocking_call(k);
    result[k] = r < 0 ? errno : 0;
    pthread_cleanup_pop(0);
    __atomic_store_n(&done[k], 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void set_up(void)
{
    CHECK(pipe(pfd) == 0);
    CHECK(sem_init(&sem, 0, 0) == 0);
    lsock = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(lsock >= 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(lsock, (struct sockaddr *)&sa, sizeof sa) == 0);
    CHECK(listen(lsock, 1) == 0);
    started = 0;
    memset(cleaned, 0, sizeof cleaned);
    memset(done, 0, sizeof done);
    memset(result, 0, sizeof result);
}

static void tear_down(void)
{
    close(pfd[0]);
    close(pfd[1]);
    close(lsock);
    sem_destroy(&sem);
}

/* Start the threads of the cases in `mask`, let them reach their calls. */
static void start(pthread_t *t, unsigned mask)
{
    int n = 0;
    for (int k = 0; k < NCASES; k++)
        if (mask >> k & 1) {
            CHECK(pthread_create(&t[k], NULL, body, (void *)(intptr_t)k) == 0);
            n++;
        }
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < n)
        usleep(1000);
    usleep(50000);               /* most are in their calls: not needed for the outcome */
}

static void cancel_round(int round)
{
    pthread_t t[NCASES];
    set_up();
    start(t, (1u << NCASES) - 1);
    for (int k = 0; k < NCASES; k++)
        CHECK(pthread_cancel(t[k]) == 0);
    for (int k = 0; k < NCASES; k++) {
        void *r = NULL;
        CHECK(pthread_join(t[k], &r) == 0);
        printf("cancel round %d: %s: %s, cleanup %d\n", round, names[k],
               r == PTHREAD_CANCELED ? "cancelled" : "NOT cancelled", cleaned[k]);
        CHECK(r == PTHREAD_CANCELED && cleaned[k]);
    }
    tear_down();
}

static volatile sig_atomic_t handled;
static void on_usr1(int sig)
{
    (void)sig;
    handled = 1;
}

/* Every case but the condvar wait (which a handler need not end). */
#define KILL_MASK (((1u << NCASES) - 1) & ~(1u << 3))

static void kill_round(int round)
{
    pthread_t t[NCASES];
    set_up();
    start(t, KILL_MASK);
    for (int left = 1; left;) {
        left = 0;
        for (int k = 0; k < NCASES; k++)
            if ((KILL_MASK >> k & 1) && !__atomic_load_n(&done[k], __ATOMIC_SEQ_CST)) {
                (void)pthread_kill(t[k], SIGUSR1);   /* it may just have ended */
                left = 1;
            }
        if (left)
            usleep(10000);
    }
    for (int k = 0; k < NCASES; k++)
        if (KILL_MASK >> k & 1) {
            CHECK(pthread_join(t[k], NULL) == 0);
            printf("kill round %d: %s: %s\n", round, names[k], errname(result[k]));
            CHECK(result[k] == EINTR);
        }
    CHECK(handled);
    tear_down();
}

int main(void)
{
    check_start("cancelblk");
    alarm(40);                   /* a thread left blocked hangs its join */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;     /* no SA_RESTART: the calls end with EINTR */
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    for (int round = 1; round <= ROUNDS; round++)
        cancel_round(round);
    for (int round = 1; round <= ROUNDS; round++)
        kill_round(round);
    return check_end("cancelblk");
}
