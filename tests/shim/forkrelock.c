/*
 * forkrelock.c -- the canonical pthread_atfork(lock, unlock, unlock)
 * pattern (pthread_atfork(3p) RATIONALE) while other threads take and
 * release the same lock in a loop, each relocking at once after a short
 * sleep inside its critical section. A new user's trial (issue 4) found
 * the shim's mutex never let the prepare handler in: the woken waiter
 * (main, in fork's prepare handler) always found the mutex retaken by a
 * contender that unlocked and relocked before it ran, so fork() never
 * returned. glibc's mutex is no fairer on paper, but there the kernel
 * preempts the relocker; under cooperative nano-threads the waiter must be
 * handed the mutex once it has lost often enough (nthlib/mutex.c).
 * Mutex only: with a write lock in place of the mutex, glibc's own run
 * hangs the same way (no reference to compare with); the shim's rwlock
 * hands over to the waiting writer directly (tests/sync/test_mutex_fair.c).
 *
 * Each child takes and releases the lock once more and exits 0; the parent
 * counts children that did not. A hang ends in the alarm (SIGALRM), which
 * run-compare.sh reports as a difference from the native run.
 */
#include <pthread.h>
#include <sys/wait.h>
#include "check.h"

enum { CONTENDERS = 3, FORKS = 20 };

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int stop;

static void take(void) { pthread_mutex_lock(&m); }
static void give(void) { pthread_mutex_unlock(&m); }

static void *contender(void *a)
{
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        take();
        usleep(50);
        give();
    }
    return a;
}

int main(void)
{
    check_start("forkrelock");
    alarm(30);                 /* a correct run takes well under a second */
    CHECK(pthread_atfork(take, give, give) == 0);
    pthread_t t[CONTENDERS];
    int bad = 0;
    for (int i = 0; i < CONTENDERS; i++)
        CHECK(pthread_create(&t[i], NULL, contender, NULL) == 0);
    for (int k = 0; k < FORKS; k++) {
        pid_t p = fork();
        if (p == 0) {
            take();
            give();
            _exit(0);
        }
        int st;
        if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st))
            bad++;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < CONTENDERS; i++)
        pthread_join(t[i], NULL);
    printf("%d forks, %d bad children\n", FORKS, bad);
    CHECK(bad == 0);
    return check_end("forkrelock");
}
