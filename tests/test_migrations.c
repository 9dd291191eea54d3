/* test_migrations.c -- bench/kernels/migrations.c: the kernel programs'
 * CPU migration count (the workload driver's migrations per second). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "migrations.h"

#define HOPS 20

static int cpu_a = -1, cpu_b = -1;

/* Bind the calling thread to one CPU, then the other, HOPS times: every
 * bind to the CPU it is not on moves it, so at least HOPS - 1 migrations
 * (the first bind may name the CPU it is already on). */
static void *hopper(void *arg)
{
    (void)arg;
    for (int i = 0; i < HOPS; i++) {
        cpu_set_t s;
        CPU_ZERO(&s);
        CPU_SET(i % 2 ? cpu_b : cpu_a, &s);
        if (sched_setaffinity(0, sizeof s, &s) != 0)
            return (void *)1;
    }
    return NULL;
}

static int two_cpus(void)
{
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) != 0)
        return 0;
    for (int c = 0; c < CPU_SETSIZE && cpu_b < 0; c++)
        if (CPU_ISSET(c, &s))
            *(cpu_a < 0 ? &cpu_a : &cpu_b) = c;
    return cpu_b >= 0;
}

/* The perf source counts the migrations of a thread created after
 * migr_start(), and keeps them once that thread has exited. */
static void test_perf_counts_exited_thread(void **state)
{
    (void)state;
    unsetenv("HARNESS_MIGRATIONS");
    assert_int_equal(migr_start(), 0);
    if (strcmp(migr_source(), "perf") != 0)
        skip(); /* refused here (perf_event_paranoid, seccomp): migr_why() says */
    if (!two_cpus())
        skip();
    long before = migr_read();
    assert_true(before >= 0);
    pthread_t t;
    void *ret;
    assert_int_equal(pthread_create(&t, NULL, hopper, NULL), 0);
    assert_int_equal(pthread_join(t, &ret), 0);
    assert_null(ret);
    long after = migr_read();
    assert_true(after - before >= HOPS - 1);
}

static void test_off(void **state)
{
    (void)state;
    setenv("HARNESS_MIGRATIONS", "off", 1);
    assert_int_equal(migr_start(), 0);
    assert_string_equal(migr_source(), "none");
    assert_int_equal(migr_read(), -1);
    assert_string_not_equal(migr_why(), "");
}

static void test_bad_value(void **state)
{
    (void)state;
    setenv("HARNESS_MIGRATIONS", "sometimes", 1);
    assert_int_equal(migr_start(), EINVAL);
    setenv("HARNESS_MIGRATIONS", "perfx", 1);
    assert_int_equal(migr_start(), EINVAL);
}

/* The opt-in /proc source counts from migr_start(), not from the thread's
 * birth. */
static void test_proc_from_start(void **state)
{
    (void)state;
    setenv("HARNESS_MIGRATIONS", "proc", 1);
    assert_int_equal(migr_start(), 0);
    if (strcmp(migr_source(), "proc") != 0)
        skip(); /* no CONFIG_SCHED_DEBUG */
    long n = migr_read();
    assert_true(n >= 0);
    assert_string_equal(migr_why(), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_perf_counts_exited_thread),
        cmocka_unit_test(test_off),
        cmocka_unit_test(test_bad_value),
        cmocka_unit_test(test_proc_from_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
