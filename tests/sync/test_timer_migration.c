/*
 * test_timer_migration.c -- alarms of a VP whose CPU is taken away
 * (nth_vps_set_allowed, internal) move to a running VP: a nano-thread whose
 * timed wait was armed on VP 1 still times out after VP 1 is disabled.
 * Without the move it would never wake (a disabled VP parks with no
 * timeout) and the case would die of its alarm(). Linked statically to
 * reach the internal hook, as the core's tests are.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "internal.h"
#include "child.h"


static int armed_on = -2;
static int result = -1;

static void *timed_waiter(void *p)
{
    (void)p;
    nth_mutex_t m = NTH_MUTEX_INITIALIZER;
    nth_cond_t c = NTH_COND_INITIALIZER;
    for (int i = 0; i < 1000 && nth_vp_id() != 1; i++)
        nth_yield();   /* stolen to VP 0 before it ran: hope to get back */
    struct timespec d;
    clock_gettime(CLOCK_REALTIME, &d);
    d.tv_nsec += 200 * 1000 * 1000;
    if (d.tv_nsec >= 1000000000L) {
        d.tv_sec++;
        d.tv_nsec -= 1000000000L;
    }
    nth_mutex_lock(&m);
    __atomic_store_n(&armed_on, nth_vp_id(), __ATOMIC_RELEASE);
    result = nth_cond_timedwait(&c, &m, &d);
    nth_mutex_unlock(&m);
    return NULL;
}

static void migration_case(void)
{
    struct nth_vp *vp0 = nth_rt.vps[0], *vp1 = nth_rt.vps[1];
    if (vp0->cpu < 0 || vp1->cpu < 0 || vp0->cpu == vp1->cpu) {
        printf("skipped: needs two VPs bound to two CPUs\n");
        _exit(77);
    }
    nth_attr_t a;
    nth_attr_init(&a);
    nth_attr_setvp(&a, 1);
    nth_t t;
    T_EQ(nth_create(&t, &a, timed_waiter, NULL), 0);
    while (__atomic_load_n(&armed_on, __ATOMIC_ACQUIRE) == -2)
        nth_yield();
    if (armed_on != 1) {
        printf("skipped: the waiter never ran on VP 1\n");
        _exit(77);
    }
    /* Give it time to block, then take VP 1's CPU away. */
    nth_sleep_ns(20 * 1000 * 1000);
    hwloc_bitmap_t only0 = hwloc_bitmap_alloc();
    hwloc_bitmap_only(only0, (unsigned)vp0->cpu);
    T_EQ(nth_vps_set_allowed(only0), 0);
    hwloc_bitmap_free(only0);
    T_EQ(nth_join(t, NULL), 0);
    T_EQ(result, ETIMEDOUT);
}

static void test_alarms_move_off_disabled_vp(void **st)
{
    (void)st;
    assert_case_ok(migration_case, child_config(2), 20, "the timed wait never woke");
}

/* The hang seen under the shim: VP 0 parked with no timeout (it had no
 * alarm of its own), then the nano-thread on VP 1 loses its CPU, arms a
 * timed wait in VP 1's queue and blocks; VP 1 parks disabled. Nobody was
 * left to fire the alarm unless the parking VP 1 wakes VP 0. */
static int parked_case_result = -1;
static int waiter_vp = -2;

static void wait_vp0_parked(void)
{
    for (long i = 0; !__atomic_load_n(&nth_rt.vps[0]->parked, __ATOMIC_ACQUIRE); i++)
        nth_cpu_relax();   /* no scheduling point: stay on VP 1 */
}

static void *disable_then_wait(void *p)
{
    (void)p;
    __atomic_store_n(&waiter_vp, nth_vp_id(), __ATOMIC_RELEASE);
    if (nth_vp_id() != 1)
        return NULL;
    wait_vp0_parked();     /* main joins us: VP 0 idles, then parks */
    hwloc_bitmap_t only0 = hwloc_bitmap_alloc();
    hwloc_bitmap_only(only0, (unsigned)nth_rt.vps[0]->cpu);
    T_EQ(nth_vps_set_allowed(only0), 0);   /* may wake VP 0 once */
    hwloc_bitmap_free(only0);
    /* Let VP 0 find nothing (no alarm yet) and park again. */
    struct timespec ms = { 0, 30 * 1000 * 1000 };
    nanosleep(&ms, NULL);
    wait_vp0_parked();
    nth_mutex_t m = NTH_MUTEX_INITIALIZER;
    nth_cond_t c = NTH_COND_INITIALIZER;
    struct timespec d;
    clock_gettime(CLOCK_MONOTONIC, &d);
    d.tv_nsec += 50 * 1000 * 1000;
    if (d.tv_nsec >= 1000000000L) {
        d.tv_sec++;
        d.tv_nsec -= 1000000000L;
    }
    nth_mutex_lock(&m);
    parked_case_result = nth_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &d);
    nth_mutex_unlock(&m);
    return NULL;
}

static void parked_case(void)
{
    struct nth_vp *vp0 = nth_rt.vps[0], *vp1 = nth_rt.vps[1];
    if (vp0->cpu < 0 || vp1->cpu < 0 || vp0->cpu == vp1->cpu) {
        printf("skipped: needs two VPs bound to two CPUs\n");
        _exit(77);
    }
    /* The timer hooks are installed at the first timed wait: do one now,
     * so that the parks below already consult them. */
    nth_sleep_ns(1000);
    nth_attr_t a;
    nth_attr_init(&a);
    nth_attr_setvp(&a, 1);
    nth_t t;
    T_EQ(nth_create(&t, &a, disable_then_wait, NULL), 0);
    /* Keep VP 0 busy with us (no stealing) until VP 1 runs the waiter. */
    while (__atomic_load_n(&waiter_vp, __ATOMIC_ACQUIRE) == -2)
        nth_yield();
    T_EQ(nth_join(t, NULL), 0);
    if (waiter_vp != 1) {
        printf("skipped: the waiter did not start on VP 1\n");
        _exit(77);
    }
    T_EQ(parked_case_result, ETIMEDOUT);
}

static void test_alarm_of_disabled_vp_wakes_parked_vp(void **st)
{
    (void)st;
    assert_case_ok(parked_case, child_config(2), 10,
                   "both VPs parked: the alarm was never fired");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alarms_move_off_disabled_vp),
        cmocka_unit_test(test_alarm_of_disabled_vp_wakes_parked_vp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
