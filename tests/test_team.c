/* test_team.c -- the kernels' team layer: static partition, and a backend
 * (regions, team barrier, smaller teams, errors). Built once per backend:
 * TEAM_IMPL names the one linked in. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <string.h>
#include <cmocka.h>

#include "team.h"

static void test_block_tiles_range(void **state)
{
    (void)state;
    for (long lo = -3; lo <= 2; lo++)
        for (long len = 0; len <= 23; len++)
            for (int n = 1; n <= 9; n++) {
                long next = lo, minsz = len, maxsz = 0;
                for (int id = 0; id < n; id++) {
                    long b, e;
                    team_block(lo, lo + len, id, n, &b, &e);
                    assert_int_equal(b, next);
                    assert_true(e >= b);
                    if (e - b < minsz) minsz = e - b;
                    if (e - b > maxsz) maxsz = e - b;
                    next = e;
                }
                assert_int_equal(next, lo + len);
                assert_true(maxsz - minsz <= 1); /* balanced */
            }
}

struct probe {
    atomic_int calls[8];
    atomic_int arrived;
    atomic_int seen_all; /* workers that saw every arrival after the barrier */
    atomic_int bad_n;
    int expect_n;
};

static void body(int id, int n, void *arg)
{
    struct probe *p = arg;
    if (n != p->expect_n)
        atomic_fetch_add(&p->bad_n, 1);
    atomic_fetch_add(&p->calls[id], 1);
    atomic_fetch_add(&p->arrived, 1);
    team_barrier();
    if (atomic_load(&p->arrived) == n)
        atomic_fetch_add(&p->seen_all, 1);
}

static void run_region(int n_arg, int expect_n)
{
    struct probe p;
    memset(&p, 0, sizeof p);
    p.expect_n = expect_n;
    assert_int_equal(team_run(n_arg, body, &p), 0);
    for (int i = 0; i < 8; i++)
        assert_int_equal(atomic_load(&p.calls[i]), i < expect_n ? 1 : 0);
    assert_int_equal(atomic_load(&p.seen_all), expect_n);
    assert_int_equal(atomic_load(&p.bad_n), 0);
}

static void test_backend_regions(void **state)
{
    (void)state;
    assert_string_equal(team_impl(), TEAM_IMPL);
    assert_int_equal(team_run(0, body, NULL), EINVAL); /* not started */
    assert_int_equal(team_start(4, 1), EINVAL);        /* cannot be malleable */
    assert_int_equal(team_start(-1, 0), EINVAL);
    assert_int_equal(team_start(4, 0), 0);
    assert_int_equal(team_start(4, 0), EINVAL);        /* already started */
    assert_int_equal(team_size(), 4);
    for (int r = 0; r < 50; r++)
        run_region(0, 4);
    run_region(2, 2);  /* a smaller team: the barrier must count 2, not 4 */
    run_region(1, 1);
    run_region(4, 4);
    assert_int_equal(team_run(5, body, NULL), EINVAL);
    team_stop();
    assert_int_equal(team_start(0, 0), 0);             /* one per CPU */
    assert_int_equal(team_size(), team_cpus_available());
    if (team_size() <= 8)
        run_region(0, team_size());
    team_stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_tiles_range),
        cmocka_unit_test(test_backend_regions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
