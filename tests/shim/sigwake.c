/*
 * sigwake.c -- pthread_kill to a thread blocked in pthread_cond_wait or
 * sem_wait runs its handler without any other wake-up, every time, also
 * when the signal comes while the thread is between its last check and its
 * queueing (the race this stresses: the signal arrives at random moments
 * just after the previous handler ran, while the thread re-enters its
 * wait). Nothing else ever signals the condvar or posts the semaphore
 * until the end, so a lost signal leaves the handler unrun: each round
 * waits for it with a generous bound (a lost one is a failure, not a
 * measured time). After pthread_kill(3p), pthread_cond_wait(3p) ("upon
 * return from the signal handler the thread resumes waiting ... or it
 * shall return zero due to spurious wakeup"), sem_wait(3p) (EINTR).
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include "check.h"

#define ROUNDS 5000
#define LOST_AFTER_NS (10 * 1000000000LL)

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static sem_t s;
static int stop;
static unsigned handled;

static void on_usr1(int sig)
{
    (void)sig;
    __atomic_add_fetch(&handled, 1, __ATOMIC_RELEASE);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *cond_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    while (!stop)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *sem_waiter(void *arg)
{
    (void)arg;
    for (;;) {
        if (sem_wait(&s) == 0)
            return NULL;       /* the final post */
        if (errno != EINTR)
            return (void *)1;
    }
}

/* rounds signals to t, each after a short random delay; 0 when every
 * handler ran, 1 at the first lost one. */
static int storm(pthread_t t, int rounds)
{
    unsigned seed = 12345;
    for (int i = 0; i < rounds; i++) {
        unsigned before = __atomic_load_n(&handled, __ATOMIC_ACQUIRE);
        /* 0..~2 us of spinning: lands before, in and after the re-entry */
        seed = seed * 1103515245u + 12345u;
        for (volatile unsigned k = (seed >> 16) % 400; k > 0; k--)
            ;
        pthread_kill(t, SIGUSR1);
        long long t0 = now_ns();
        while (__atomic_load_n(&handled, __ATOMIC_ACQUIRE) == before) {
            if (now_ns() - t0 > LOST_AFTER_NS)
                return 1;
            sched_yield();   /* one VP: the waiter must get to run */
        }
    }
    return 0;
}

int main(void)
{
    check_start("sigwake");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);

    pthread_t t;
    CHECK(pthread_create(&t, NULL, cond_waiter, NULL) == 0);
    int lost = storm(t, ROUNDS);
    printf("pthread_cond_wait: %s\n", lost ? "a signal was lost" : "every handler ran");
    CHECK(lost == 0);
    pthread_mutex_lock(&m);
    stop = 1;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
    CHECK(pthread_join(t, NULL) == 0);

    CHECK(sem_init(&s, 0, 0) == 0);
    CHECK(pthread_create(&t, NULL, sem_waiter, NULL) == 0);
    /* Fewer: under the shim a semaphore wait sees a signal at the end of
     * its slice (SHIM_SLICE_NS, 10 ms), not at once. */
    lost = storm(t, ROUNDS / 20);
    printf("sem_wait: %s\n", lost ? "a signal was lost" : "every handler ran");
    CHECK(lost == 0);
    sem_post(&s);
    void *ret;
    CHECK(pthread_join(t, &ret) == 0);
    CHECK(ret == NULL);
    return check_end("sigwake");
}
