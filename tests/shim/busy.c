/*
 * busy.c -- timed waits end while another thread computes without calls
 * (issue #4, P1: a user's program that spin-waits on a flag hung under the
 * shim). A thread spins on an atomic flag, calling nothing; the main thread
 * sleeps (usleep, nanosleep), waits on a condition variable with a timeout,
 * then sets the flag. Natively the kernel preempts; under the shim the
 * spinner's VP reaches no scheduling point, and the sleeper's alarm, armed
 * in that VP's timer queue, must still fire with the sleeper running on the
 * other VP. Run with 2 VPs (run-compare.sh); with one VP the spinner keeps
 * its only VP (cooperative scheduling: the README's limits), so that run is
 * left out. A spinner gives up after 20 s, so that a hang shows as a
 * difference rather than as the watchdog's kill.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "check.h"

static atomic_int stops[8];        /* one per spinner: a detached one may
                                      still be on its way out next round */
static atomic_int gave_up;

static void *spin(void *arg)
{
    atomic_int *stop = arg;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned long i = 0; !atomic_load_explicit(stop, memory_order_acquire); i++) {
        if ((i & 0xfffff) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);   /* vDSO: no shim call */
            if (elapsed_ns(t0, t) > 20LL * 1000000000LL) {
                atomic_store(&gave_up, 1);
                break;
            }
        }
    }
    return NULL;
}

/* One round: a spinner, then the main thread's wait, then the flag. */
static void round_with(int k, const char *what, int detached)
{
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    if (detached)
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    CHECK(pthread_create(&t, &a, spin, &stops[k]) == 0);
    pthread_attr_destroy(&a);
    if (!strcmp(what, "usleep")) {
        EXPECT_ERRNO("usleep 100 ms", usleep(100000), 0);
    } else if (!strcmp(what, "nanosleep")) {
        struct timespec d = { 0, 50 * 1000000L };
        EXPECT_ERRNO("nanosleep 50 ms", nanosleep(&d, NULL), 0);
    } else {
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        pthread_cond_t c = PTHREAD_COND_INITIALIZER;
        struct timespec d = deadline_ms(CLOCK_REALTIME, 50);
        pthread_mutex_lock(&m);
        EXPECT("cond_timedwait 50 ms", pthread_cond_timedwait(&c, &m, &d), ETIMEDOUT);
        pthread_mutex_unlock(&m);
    }
    atomic_store_explicit(&stops[k], 1, memory_order_release);
    if (!detached)
        CHECK(pthread_join(t, NULL) == 0);
    printf("%s with a %s spinner: ended\n", what, detached ? "detached" : "joinable");
}

int main(void)
{
    check_start("busy");
    round_with(0, "usleep", 0);
    round_with(1, "nanosleep", 0);
    round_with(2, "cond_timedwait", 0);
    round_with(3, "usleep", 1);
    /* A detached spinner still running when main returns (busy_exit.c in
     * the trial): the process ends with main's status. */
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    CHECK(pthread_create(&t, &a, spin, &stops[4]) == 0);
    pthread_attr_destroy(&a);
    EXPECT_ERRNO("usleep 100 ms, spinner left running", usleep(100000), 0);
    CHECK(!atomic_load(&gave_up));
    return check_end("busy");
}
