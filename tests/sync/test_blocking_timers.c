/*
 * test_blocking_timers.c -- alarms fire while VPs sit in the kernel inside
 * nth_blocking_enter/leave.
 *
 * A reader nano-thread blocks in read() on a pipe between enter and leave;
 * the nano-thread that will write the pipe first makes a timed wait that
 * must time out (a sleep, a condvar, a semaphore, a mutex, an rwlock). Its
 * alarm is on the timer queue of a VP whose kernel thread is in read() (it
 * armed it there before the reader ran), or on the shared queue (it armed
 * it on a stand-in of the watchdog, the reader having gone into the kernel
 * first). Before alarms moved off a VP entering a system call nobody fired
 * them: the wait never ended, the pipe was never written (a pthread program
 * under the shim: usleep, then write, hung 2 runs of 3 on 2 VPs).
 * With 1 VP, 2 VPs, and 1 VP without the stall watchdog (NTH_STALL_US=0).
 * Each case runs in a forked child with its own runtime and alarm(10): a
 * hang is a failure, never a harness timeout.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "nth.h"
#include "child.h"


enum { WAIT_MS = 30 };

/* fn in a child (tests/core/child.h) on vps VPs with the stall watchdog's
 * threshold stall_us (0: off); the failure names fn. */
static nth_config_t with_stall(unsigned vps, unsigned stall_us)
{
    nth_config_t c = child_config(vps);
    c.stall_us = stall_us;
    return c;
}
#define run_case(fn, vps, stall_us) \
    assert_case_ok(fn, with_stall(vps, stall_us), 10, "an alarm never fired")

static int pfd[2];
static int in_kernel;              /* the reader is about to enter */
static int target = -1;            /* the VP the reader must block on, -1 any */

static void *reader(void *arg)
{
    (void)arg;
    char c;
    /* A thief may have taken it; on the target VP it runs only once the
     * waiter, running there, has blocked. */
    while (target >= 0 && nth_vp_id() != target)
        T_EQ(nth_move_to_vp(target), 0);
    __atomic_store_n(&in_kernel, 1, __ATOMIC_SEQ_CST);
    T_EQ(nth_blocking_enter(), 0);
    ssize_t r = read(pfd[0], &c, 1);
    T_EQ(nth_blocking_leave(), 0);
    T_EQ(r, 1);
    return NULL;
}

static struct timespec deadline(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    ts.tv_nsec += WAIT_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum kind { K_SLEEP, K_SLEEP_UNTIL, K_COND, K_SEM, K_MUTEX, K_RWLOCK };

static nth_mutex_t mx = NTH_MUTEX_INITIALIZER, held = NTH_MUTEX_INITIALIZER;
static nth_cond_t cv = NTH_COND_INITIALIZER;
static nth_rwlock_t rw;
static nth_sem_t sem;

/* One timed wait that must run to its deadline. */
static void timed_wait(enum kind k)
{
    struct timespec ts = deadline(CLOCK_REALTIME);
    switch (k) {
    case K_SLEEP:
        T_EQ(nth_sleep_ns(WAIT_MS * 1000000ull), 0);
        break;
    case K_SLEEP_UNTIL: {
        struct timespec m = deadline(CLOCK_MONOTONIC);
        T_EQ(nth_sleep_until(CLOCK_MONOTONIC, &m), 0);
        break;
    }
    case K_COND:
        T_EQ(nth_mutex_lock(&mx), 0);
        T_EQ(nth_cond_timedwait(&cv, &mx, &ts), ETIMEDOUT);
        T_EQ(nth_mutex_unlock(&mx), 0);
        break;
    case K_SEM:
        T_EQ(nth_sem_timedwait(&sem, &ts), ETIMEDOUT);
        break;
    case K_MUTEX:
        T_EQ(nth_mutex_timedlock(&held, &ts), ETIMEDOUT);
        break;
    case K_RWLOCK:
        T_EQ(nth_rwlock_timedwrlock(&rw, &ts), ETIMEDOUT);
        break;
    }
}

static void *holder(void *arg)
{
    (void)arg;
    T_EQ(nth_mutex_lock(&held), 0);
    T_EQ(nth_rwlock_rdlock(&rw), 0);
    return NULL;               /* keeps both: nobody else takes them */
}

static void setup(void)
{
    T_EQ(pipe(pfd), 0);
    T_EQ(nth_sem_init(&sem, 0), 0);
    T_EQ(nth_rwlock_init(&rw, NULL), 0);
    nth_t h;
    T_EQ(nth_create(&h, NULL, holder, NULL), 0);
    T_EQ(nth_join(h, NULL), 0);
}

/* The waiter arms its alarm on its VP's queue, then the reader takes
 * that VP into the kernel: the reader is queued on the waiter's VP and
 * runs there only once the waiter has blocked. */
static void alarm_then_read(enum kind k)
{
    setup();
    target = nth_vp_id();
    nth_t r;
    T_EQ(nth_create(&r, NULL, reader, NULL), 0);
    uint64_t t0 = mono_ns();
    timed_wait(k);
    if (mono_ns() - t0 < WAIT_MS * 1000000ull - 1000000ull)
        T_FAIL("the wait ended after %llu ns, before its deadline",
               (unsigned long long)(mono_ns() - t0));
    T_EQ(write(pfd[1], "x", 1), 1);
    T_EQ(nth_join(r, NULL), 0);
}

/* The reader goes into the kernel first; the waiter then runs on a
 * stand-in (one VP) or another VP and arms there. */
static void read_then_alarm(enum kind k)
{
    setup();
    nth_t r;
    T_EQ(nth_create(&r, NULL, reader, NULL), 0);
    while (!__atomic_load_n(&in_kernel, __ATOMIC_SEQ_CST))
        T_EQ(nth_yield(), 0);
    /* Let it get into read(): a wait armed just before is the case above. */
    struct timespec pause = { 0, 2000000 };
    nanosleep(&pause, NULL);
    timed_wait(k);
    T_EQ(write(pfd[1], "x", 1), 1);
    T_EQ(nth_join(r, NULL), 0);
}

#define CASES(k)                                                            \
    static void ar_##k(void) { alarm_then_read(k); }                       \
    static void ra_##k(void) { read_then_alarm(k); }                       \
    static void t_ar_##k##_1(void **s) { (void)s; run_case(ar_##k, 1, 1000); } \
    static void t_ar_##k##_2(void **s) { (void)s; run_case(ar_##k, 2, 1000); } \
    static void t_ar_##k##_1off(void **s) { (void)s; run_case(ar_##k, 1, 0); } \
    static void t_ra_##k##_1(void **s) { (void)s; run_case(ra_##k, 1, 1000); } \
    static void t_ra_##k##_2(void **s) { (void)s; run_case(ra_##k, 2, 1000); } \
    static void t_ra_##k##_1off(void **s) { (void)s; run_case(ra_##k, 1, 0); }
CASES(K_SLEEP)
CASES(K_SLEEP_UNTIL)
CASES(K_COND)
CASES(K_SEM)
CASES(K_MUTEX)
CASES(K_RWLOCK)

#define TESTS(k)                                                            \
    cmocka_unit_test(t_ar_##k##_1), cmocka_unit_test(t_ar_##k##_2),        \
    cmocka_unit_test(t_ar_##k##_1off), cmocka_unit_test(t_ra_##k##_1),     \
    cmocka_unit_test(t_ra_##k##_2), cmocka_unit_test(t_ra_##k##_1off)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTS(K_SLEEP), TESTS(K_SLEEP_UNTIL), TESTS(K_COND),
        TESTS(K_SEM), TESTS(K_MUTEX), TESTS(K_RWLOCK),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
