/*
 * test_blocking.c -- nth_blocking_enter/leave: two nano-threads on ONE VP
 * ping-pong over pipes with blocking read/write inside enter/leave and must
 * not deadlock; errno survives the trip; the VP keeps running others while
 * one nano-thread sits in the kernel; nth_on_standin() tells a nano-thread
 * that a stand-in runs, and the stand-in keeps SIGCANCEL (32) blocked.
 * Each case runs in a forked child with its own runtime (see test_sync.c).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "nth.h"
#include "child.h"


/* fn on vps VPs in a child (tests/core/child.h); the failure names fn. */
#define run_case(fn, vps, timeout_s) \
    assert_case_ok(fn, child_config(vps), timeout_s, "deadlock")

static int ab[2], ba[2];
enum { ROUNDS = 2000 };

static ssize_t xread(int fd, void *b, size_t n)
{
    T_EQ(nth_blocking_enter(), 0);
    T_EQ(nth_vp_id(), -1);          /* really off the VP */
    ssize_t r = read(fd, b, n);
    T_EQ(nth_blocking_leave(), 0);
    return r;
}

static ssize_t xwrite(int fd, const void *b, size_t n)
{
    T_EQ(nth_blocking_enter(), 0);
    ssize_t r = write(fd, b, n);
    T_EQ(nth_blocking_leave(), 0);
    return r;
}

static void *pinger(void *p)
{
    (void)p;
    for (int i = 0; i < ROUNDS; i++) {
        char c = (char)i, d;
        T_EQ(xwrite(ab[1], &c, 1), 1);
        T_EQ(xread(ba[0], &d, 1), 1);
        T_EQ(d, (char)(i + 1));
    }
    return NULL;
}

static void *ponger(void *p)
{
    (void)p;
    for (int i = 0; i < ROUNDS; i++) {
        char c;
        T_EQ(xread(ab[0], &c, 1), 1);
        T_EQ(c, (char)i);
        c++;
        T_EQ(xwrite(ba[1], &c, 1), 1);
        /* Back on VP 0, or on the stand-in that VP 0 lent while the
         * pinger sat in read(): never on a VP of its own. */
        if (nth_vp_id() != 0 && nth_vp_id() != -1)
            T_FAIL("ponger on VP %d", nth_vp_id());
    }
    return NULL;
}

static void pipe_pingpong(void)
{
    T_EQ(nth_num_vps(), 1);
    T_EQ(pipe(ab), 0);
    T_EQ(pipe(ba), 0);
    nth_t a, b;
    /* The reader first, so it blocks in the kernel before anything is
     * written: without the hand-off the only VP would be stuck. */
    T_EQ(nth_create(&b, NULL, ponger, NULL), 0);
    nth_yield();
    T_EQ(nth_create(&a, NULL, pinger, NULL), 0);
    T_EQ(nth_join(a, NULL), 0);
    T_EQ(nth_join(b, NULL), 0);
}

static void test_pipe_pingpong_1vp(void **st)
{
    (void)st;
    run_case(pipe_pingpong, 1, 30);
}

/* Atomics, not volatile: while main is in the kernel, a stand-in kernel
 * thread runs the ticker, concurrently with main's reads. */
static int ticks;

static void *ticker(void *p)
{
    while (!__atomic_load_n((int *)p, __ATOMIC_RELAXED)) {
        __atomic_add_fetch(&ticks, 1, __ATOMIC_RELAXED);
        nth_yield();
    }
    return NULL;
}

static void errno_and_progress(void)
{
    /* errno from a failed call inside the bracket survives leave. */
    T_EQ(nth_blocking_enter(), 0);
    T_EQ(nth_blocking_enter(), EBUSY);
    char c;
    ssize_t r = read(-1, &c, 1);
    int e = errno;
    T_EQ(nth_blocking_leave(), 0);
    T_EQ(r, -1);
    T_EQ(e, EBADF);
    T_EQ(errno, EBADF);
    T_EQ(nth_blocking_leave(), 0);  /* unmatched: no-op */

    /* While main sleeps in the kernel, the only VP runs the ticker. */
    int stop = 0;
    nth_t t;
    T_EQ(nth_create(&t, NULL, ticker, &stop), 0);
    nth_yield();
    int before = __atomic_load_n(&ticks, __ATOMIC_RELAXED);
    T_EQ(nth_blocking_enter(), 0);
    usleep(50 * 1000);
    int during = __atomic_load_n(&ticks, __ATOMIC_RELAXED);
    T_EQ(nth_blocking_leave(), 0);
    if (during <= before)
        T_FAIL("ticker made no progress while main was in the kernel (%d, %d)", before, during);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    T_EQ(nth_join(t, NULL), 0);
}

static void test_errno_and_progress(void **st)
{
    (void)st;
    run_case(errno_and_progress, 1, 30);
}

/* nth_on_standin(): 0 on a VP and on a kernel thread that is no VP; 1 for
 * a nano-thread that a stand-in runs while main sits in read(). That
 * stand-in serves with SIGCANCEL (32) blocked: the pthread shim opens it
 * only inside its waits, and a stand-in that reopened it lost wake-ups. */
static int sp[2];
static int seen_standin = -1, seen_vp = -2, seen_sig32 = -1;

static void *standin_probe(void *p)
{
    (void)p;
    seen_standin = nth_on_standin();
    seen_vp = nth_vp_id();
    uint64_t m = 0;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &m, sizeof m);
    seen_sig32 = (int)(m >> (32 - 1) & 1);
    char c = 'x';
    T_EQ(write(sp[1], &c, 1), 1);   /* ends main's read */
    return NULL;
}

static void *plain_thread(void *p)
{
    *(int *)p = nth_on_standin();
    return NULL;
}

static void on_standin(void)
{
    T_EQ(nth_num_vps(), 1);
    T_EQ(nth_on_standin(), 0);
    pthread_t k;
    int plain = -1;
    T_EQ(pthread_create(&k, NULL, plain_thread, &plain), 0);
    T_EQ(pthread_join(k, NULL), 0);
    T_EQ(plain, 0);
    T_EQ(pipe(sp), 0);
    nth_t t;
    T_EQ(nth_create(&t, NULL, standin_probe, NULL), 0);
    /* The probe is ready on the only VP: enter lends it to a stand-in,
     * which runs the probe while main waits for its byte. */
    char c;
    T_EQ(nth_blocking_enter(), 0);
    ssize_t r = read(sp[0], &c, 1);
    T_EQ(nth_blocking_leave(), 0);
    T_EQ(r, 1);
    T_EQ(nth_join(t, NULL), 0);
    T_EQ(seen_standin, 1);
    T_EQ(seen_vp, -1);
    T_EQ(seen_sig32, 1);
    T_EQ(nth_on_standin(), 0);
}

static void test_on_standin(void **st)
{
    (void)st;
    run_case(on_standin, 1, 30);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipe_pingpong_1vp),
        cmocka_unit_test(test_errno_and_progress),
        cmocka_unit_test(test_on_standin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
