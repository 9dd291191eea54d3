/*
 * futexbar.c -- threads that wait for each other with raw futex system calls
 * (issue #4: libgomp's team barrier, Rust std's Mutex/Condvar/Barrier). A
 * hand-made barrier: each waiter sleeps in syscall(SYS_futex, FUTEX_WAIT)
 * and the last to arrive wakes them all with FUTEX_WAKE, so no waiter ever
 * reaches a shim call. Under the shim each waiter holds its kernel thread
 * (a VP, or a stand-in that ran it) asleep in the kernel; the member that
 * would wake them must still get one. With 8 members and 1 or 2 VPs that
 * takes a stand-in for every sleeping kernel thread with work queued behind
 * it, not one per VP.
 *
 * Phase "join": 8 created threads, main waits in pthread_join. Phase
 * "main": main is a member (its kernel thread, VP 0's, sleeps in the
 * futex too) with 7 created threads. 100 rounds each; every member
 * counts its arrivals per round, and after each barrier checks that all
 * members of that round arrived (a barrier that let one through early
 * shows here, not only as a hang).
 */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include "check.h"

#define MEMBERS 8
#define ROUNDS 100

static atomic_int arrived_count;   /* members arrived in this generation */
static atomic_int gen;             /* futex word: the barrier's generation */
static atomic_int arrivals[ROUNDS];
static atomic_int early;           /* members that left a round too soon */

static long futex(atomic_int *w, int op, int val)
{
    return syscall(SYS_futex, (int *)w, op, val, NULL, NULL, 0);
}

static void bar_wait(void)
{
    /* Read before arriving: the generation cannot move on without us. */
    int g = atomic_load_explicit(&gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&arrived_count, 1, memory_order_acq_rel) == MEMBERS - 1) {
        atomic_store_explicit(&arrived_count, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&gen, 1, memory_order_release);
        futex(&gen, FUTEX_WAKE_PRIVATE, INT_MAX);
        return;
    }
    while (atomic_load_explicit(&gen, memory_order_acquire) == g)
        futex(&gen, FUTEX_WAIT_PRIVATE, g);   /* EAGAIN/EINTR: look again */
}

static void *member(void *arg)
{
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        atomic_fetch_add(&arrivals[r], 1);
        bar_wait();
        if (atomic_load(&arrivals[r]) != MEMBERS)
            atomic_fetch_add(&early, 1);
    }
    return NULL;
}

/* One phase: `created` threads plus main if main_joins is 0. */
static void phase(const char *name, int created, int main_member)
{
    pthread_t t[MEMBERS];
    for (int r = 0; r < ROUNDS; r++)
        atomic_store(&arrivals[r], 0);
    atomic_store(&early, 0);
    int ok = 1;
    for (int i = 0; i < created; i++)
        if (pthread_create(&t[i], NULL, member, NULL) != 0) {
            printf("FAIL %s: pthread_create %d\n", name, i);
            check_failures++;
            ok = 0;
            created = i;
            break;
        }
    if (ok && main_member)
        member(NULL);
    for (int i = 0; i < created; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    if (!ok)
        return;
    int complete = 0;
    for (int r = 0; r < ROUNDS; r++)
        complete += atomic_load(&arrivals[r]) == MEMBERS;
    printf("%s: %d members, %d of %d rounds complete, %d early leaves\n", name, MEMBERS,
           complete, ROUNDS, atomic_load(&early));
    CHECK(complete == ROUNDS);
    CHECK(atomic_load(&early) == 0);
}

int main(void)
{
    check_start("futexbar");
    phase("join", MEMBERS, 0);
    phase("main", MEMBERS - 1, 1);
    return check_end("futexbar");
}
