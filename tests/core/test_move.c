/* nth_move_to_vp: the caller ends on the VP asked for (its kernel thread:
 * the errno address changes with it), back and forth many times, also
 * while other nano-threads keep both VPs busy and steal; 0 for its own VP;
 * EINVAL for a VP that does not exist; EPERM from a kernel thread that is
 * no VP; and EAGAIN, not a hang, when the target VP computes without
 * scheduling points until the mover has run (thieves take it after the
 * grace time). */
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
    /* EAGAIN is allowed (best effort): a VP whose kernel thread the OS
     * does not run for the grace time loses the mover to a thief, common
     * on a loaded machine. Both directions must have worked. */
    fprintf(stderr, "test_move: %d of %d moves ended elsewhere (EAGAIN)\n", eagain, ROUNDS);
    CHECK(at[0] != NULL && at[1] != NULL && at[0] != at[1]);
    CHECK(eagain < ROUNDS / 2);
    CHECK_EQ(nth_move_to_vp(nth_vp_id()), 0);
    CHECK_EQ(nth_move_to_vp(2), EINVAL);
    CHECK_EQ(nth_move_to_vp(-1), EINVAL);
    return NULL;
}

static int spin_started, spin_done, spin_vp;

static void *spinner(void *a)
{
    (void)a;
    __atomic_store_n(&spin_vp, nth_vp_id(), __ATOMIC_RELAXED);
    __atomic_store_n(&spin_started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&spin_done, __ATOMIC_ACQUIRE))
        ;                                /* no scheduling point */
    return NULL;
}

static void *blocked_mover(void *a)
{
    (void)a;
    while (!__atomic_load_n(&spin_started, __ATOMIC_ACQUIRE))
        ;
    /* Both run at once, so on the two VPs (placement by attr is only
     * where they start: a thief may have taken either). */
    int target = __atomic_load_n(&spin_vp, __ATOMIC_RELAXED), here = nth_vp_id();
    CHECK(here != target);
    CHECK_EQ(nth_move_to_vp(target), EAGAIN);
    CHECK_EQ(nth_vp_id(), here);
    __atomic_store_n(&spin_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void c_busy_target(void *a)
{
    (void)a;
    child_init(2);
    nth_attr_t at0, at1;
    nth_attr_init(&at0);
    nth_attr_init(&at1);
    nth_attr_setvp(&at0, 0);
    nth_attr_setvp(&at1, 1);
    nth_t s, m;
    CHECK_EQ(nth_create(&s, &at0, spinner, NULL), 0);
    CHECK_EQ(nth_create(&m, &at1, blocked_mover, NULL), 0);
    CHECK_EQ(nth_join(m, NULL), 0);
    CHECK_EQ(nth_join(s, NULL), 0);
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
    CHECK_EQ(child_on_plain_thread(not_a_vp), EPERM);
}

static void test_idle(void **s) { (void)s; assert_child_ok(c_move, (void *)0); }
static void test_loaded(void **s) { (void)s; assert_child_ok(c_move, (void *)1); }
static void test_not_a_vp(void **s) { (void)s; assert_child_ok(c_not_a_vp, NULL); }
static void test_busy_target(void **s) { (void)s; assert_child_ok(c_busy_target, NULL); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle),
        cmocka_unit_test(test_loaded),
        cmocka_unit_test(test_not_a_vp),
        cmocka_unit_test(test_busy_target),
    };
    child_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
