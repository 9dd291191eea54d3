/* nth_move_to_vp: the caller ends on the VP asked for (its kernel thread:
 * the errno address changes with it), back and forth many times, also
 * while other nano-threads keep both VPs busy and steal; 0 for its own VP;
 * EINVAL for a VP that does not exist; EPERM from a kernel thread that is
 * no VP. */
#include "child.h"
#include <errno.h>
#include <pthread.h>

enum { ROUNDS = 2000, BUSY = 3 };

static int stop;

static void *busy(void *a)
{
    (void)a;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
        nth_yield();
    return NULL;
}

/* errno's address through a call the compiler cannot merge (glibc
 * declares __errno_location const). */
static int *errno_addr(void)
{
    int *(*volatile f)(void) = __errno_location;
    return f();
}

static void *mover(void *a)
{
    (void)a;
    int *at[2] = { NULL, NULL };
    int eagain = 0;
    for (int i = 0; i < ROUNDS; i++) {
        int to = i % 2;
        int r = nth_move_to_vp(to);
        if (r == EAGAIN) {               /* allowed, must be rare */
            eagain++;
            continue;
        }
        CHECK_EQ(r, 0);
        CHECK_EQ(nth_vp_id(), to);
        if (!at[to])
            at[to] = errno_addr();
        CHECK(errno_addr() == at[to]);
    }
    CHECK(at[0] != at[1]);
    CHECK(eagain < ROUNDS / 100);
    CHECK_EQ(nth_move_to_vp(nth_vp_id()), 0);
    CHECK_EQ(nth_move_to_vp(2), EINVAL);
    CHECK_EQ(nth_move_to_vp(-1), EINVAL);
    return NULL;
}

static void *not_a_vp(void *a)
{
    (void)a;
    return (void *)(intptr_t)nth_move_to_vp(0);
}

static void c_move(void *a)
{
    int loaded = (int)(intptr_t)a;
    child_init(2);
    nth_t b[BUSY], m;
    for (int i = 0; loaded && i < BUSY; i++)
        CHECK_EQ(nth_create(&b[i], NULL, busy, NULL), 0);
    CHECK_EQ(nth_create(&m, NULL, mover, NULL), 0);
    CHECK_EQ(nth_join(m, NULL), 0);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; loaded && i < BUSY; i++)
        CHECK_EQ(nth_join(b[i], NULL), 0);
}

static void c_not_a_vp(void *a)
{
    (void)a;
    child_init(1);
    pthread_t k;
    void *r = NULL;
    CHECK_EQ(pthread_create(&k, NULL, not_a_vp, NULL), 0);
    CHECK_EQ(pthread_join(k, &r), 0);
    CHECK_EQ((int)(intptr_t)r, EPERM);
}

static void test_idle(void **s) { (void)s; assert_child_ok(c_move, (void *)0); }
static void test_loaded(void **s) { (void)s; assert_child_ok(c_move, (void *)1); }
static void test_not_a_vp(void **s) { (void)s; assert_child_ok(c_not_a_vp, NULL); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle),
        cmocka_unit_test(test_loaded),
        cmocka_unit_test(test_not_a_vp),
    };
    child_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
