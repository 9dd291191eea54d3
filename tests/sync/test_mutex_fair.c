/*
 * test_mutex_fair.c -- a waiter on a mutex that another nano-thread
 * relocks at once, round after round, still gets it (issue 4: under
 * cooperative scheduling nothing preempts the relocker between its unlock
 * and its relock, so without a hand-off the woken waiter loses forever;
 * nthlib/mutex.c hands the mutex to a waiter that has lost 16 times or
 * for 1 ms).
 *
 * The relocker runs ROUNDS critical sections; in each it waits (yielding)
 * until the waiter has queued on the mutex, so every round is one lost
 * race or one win for the waiter, whatever the timing. The waiter takes
 * the mutex once per relocker round at most. The check is on counts only:
 * the waiter's acquisitions, read inside the relocker's last critical
 * section, are at least one per LOSS_BOUND + 2 rounds (the bound is 16
 * lost rounds; the 1 ms bound can only make it win sooner). Without the
 * hand-off it is 0 on one VP (exactly: nothing runs between unlock and
 * relock), and on two VPs the waiter wins only when the relocker's kernel
 * thread is preempted in the few instructions between the two.
 *
 * Cases: one VP (relocker and waiter on the same VP), two VPs (created on
 * different VPs), each for the mutex, the condvar's reacquire (a waiter
 * signalled inside the relocker's critical section must get the mutex back
 * to return) and rwlock writers (the rwlock hands over to the waiting
 * writer directly, so it has no such starvation: a check that it stays so).
 * White-box: the relocker reads the mutex's wait-queue head (nth.h's
 * private __head) to see the waiter queued. Each case runs in a forked
 * child with its own runtime (see test_sync.c).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "nth.h"
#include "child.h"

#define T_GE(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
        if (_a < _b) T_FAIL("%s == %lld, expected at least %lld", #a, _a, _b); } while (0)

enum { ROUNDS = 2000, LOSS_BOUND = 16 };

/* fn in a child (tests/core/child.h: alarm scaled for the sanitizers and
 * NTH_TEST_TIMEOUT_SCALE) on vps VPs without the cpumgr; the failure
 * names fn. */
#define run_case(fn, vps, timeout_s) \
    assert_case_ok(fn, child_config_alone(vps), timeout_s, "the waiter starved?")

enum kind { MUTEX, COND, RWLOCK };

static nth_mutex_t m = NTH_MUTEX_INITIALIZER;
static nth_cond_t c = NTH_COND_INITIALIZER;
static nth_rwlock_t rw = NTH_RWLOCK_INITIALIZER;
static long rounds, wins, wins_seen;
static int stop;
static enum kind kind;

static long get(const long *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static int stopped(void) { return __atomic_load_n(&stop, __ATOMIC_ACQUIRE); }

static void take(void)
{
    if (kind == RWLOCK)
        T_EQ(nth_rwlock_wrlock(&rw), 0);
    else
        T_EQ(nth_mutex_lock(&m), 0);
}

static void give(void)
{
    if (kind == RWLOCK)
        T_EQ(nth_rwlock_unlock(&rw), 0);
    else
        T_EQ(nth_mutex_unlock(&m), 0);
}

/* Holding the lock: let the waiter run (same VP) until it has queued. */
static void wait_queued(void)
{
    void **head = kind == RWLOCK ? &rw.__whead : &m.__head;
    while (!__atomic_load_n(head, __ATOMIC_ACQUIRE))
        nth_yield();
}

static void *relocker(void *a)
{
    for (long r = 0; r < ROUNDS; r++) {
        take();
        __atomic_store_n(&rounds, r + 1, __ATOMIC_RELEASE);
        if (kind == COND)
            nth_cond_signal(&c);     /* the waiter now needs m back */
        wait_queued();
        if (r == ROUNDS - 1) {
            /* Read holding the lock: the waiter is not inside, nor can it
             * win after the last round and be counted. */
            wins_seen = get(&wins);
            __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
            nth_cond_broadcast(&c);
        }
        give();                      /* ...and relock at once */
    }
    return a;
}

/* One acquisition per relocker round at most: after a win, wait for the
 * relocker's next critical section (the round read while holding the
 * lock), then queue again. */
static void *waiter(void *a)
{
    long seen = 0;
    while (!stopped()) {
        while (get(&rounds) == seen && !stopped())
            nth_yield();
        take();
        seen = get(&rounds);
        if (!stopped())
            __atomic_add_fetch(&wins, 1, __ATOMIC_RELEASE);
        give();
    }
    return a;
}

/* The same through the condvar: it returns only once it has m back. */
static void *cond_waiter(void *a)
{
    nth_mutex_lock(&m);
    while (!stopped()) {
        T_EQ(nth_cond_wait(&c, &m), 0);
        if (!stopped())
            __atomic_add_fetch(&wins, 1, __ATOMIC_RELEASE);
    }
    nth_mutex_unlock(&m);
    return a;
}

static nth_t spawn_on(int vp, void *(*fn)(void *))
{
    nth_attr_t at;
    nth_t t;
    T_EQ(nth_attr_init(&at), 0);
    T_EQ(nth_attr_setvp(&at, vp), 0);
    T_EQ(nth_create(&t, &at, fn, NULL), 0);
    return t;
}

static void relock_rounds(enum kind k)
{
    static const char *const names[] = { "mutex", "condvar reacquire", "rwlock writers" };
    kind = k;
    int other = nth_num_vps() > 1 ? 1 : 0;
    nth_t w = spawn_on(0, k == COND ? cond_waiter : waiter);
    if (k == COND) {
        /* The waiter first sits in the condvar wait, not holding m. */
        while (!__atomic_load_n(&c.__head, __ATOMIC_ACQUIRE))
            nth_yield();
    }
    nth_t r = spawn_on(other, relocker);
    T_EQ(nth_join(r, NULL), 0);
    T_EQ(nth_join(w, NULL), 0);
    printf("# %s, %d VP(s): %ld relocker rounds, waiter won %ld\n", names[k], nth_num_vps(),
           get(&rounds), wins_seen);
    T_EQ(get(&rounds), ROUNDS);
    T_GE(wins_seen, ROUNDS / (LOSS_BOUND + 2));
}

static void relock_one_vp(void) { relock_rounds(MUTEX); }
static void relock_two_vps(void) { relock_rounds(MUTEX); }
static void cond_reacquire_one_vp(void) { relock_rounds(COND); }
static void cond_reacquire_two_vps(void) { relock_rounds(COND); }
static void rwlock_writers_one_vp(void) { relock_rounds(RWLOCK); }
static void rwlock_writers_two_vps(void) { relock_rounds(RWLOCK); }

static void case_relock_one_vp(void **st) { (void)st; run_case(relock_one_vp, 1, 60); }
static void case_relock_two_vps(void **st) { (void)st; run_case(relock_two_vps, 2, 60); }
static void case_cond_reacquire_one_vp(void **st) { (void)st; run_case(cond_reacquire_one_vp, 1, 60); }
static void case_cond_reacquire_two_vps(void **st) { (void)st; run_case(cond_reacquire_two_vps, 2, 60); }
static void case_rwlock_writers_one_vp(void **st) { (void)st; run_case(rwlock_writers_one_vp, 1, 60); }
static void case_rwlock_writers_two_vps(void **st) { (void)st; run_case(rwlock_writers_two_vps, 2, 60); }

int main(void)
{
    if (getenv("NTH_TEST_ONLY"))
        cmocka_set_test_filter(getenv("NTH_TEST_ONLY"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(case_relock_one_vp),
        cmocka_unit_test(case_relock_two_vps),
        cmocka_unit_test(case_cond_reacquire_one_vp),
        cmocka_unit_test(case_cond_reacquire_two_vps),
        cmocka_unit_test(case_rwlock_writers_one_vp),
        cmocka_unit_test(case_rwlock_writers_two_vps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
