/*
 * test_policy.c -- policy tables: equipartition, priority (eDragon rule),
 * rotation when applications outnumber CPUs; plus invariants on random
 * inputs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../cpumgr/policy.h"

#define E CM_POLICY_EQUIPARTITION
#define P CM_POLICY_PRIORITY
#define MAXA 6

struct row {
    const char *what;
    enum cm_policy pol;
    int ncpus, n;
    int req[MAXA], prio[MAXA], elig[MAXA];
    unsigned rot;
    int want[MAXA];
};

static const struct row rows[] = {
    {"issue: equal priority, 4 CPUs, requests 4 and 1", E, 4, 2, {4, 1}, {1, 1}, {4, 4}, 0, {3, 1}},
    {"issue: same under priority policy", P, 4, 2, {4, 1}, {1, 1}, {4, 4}, 0, {3, 1}},
    {"issue: priorities 2 and 1, 4 CPUs, both want 4", P, 4, 2, {4, 4}, {2, 1}, {4, 4}, 0, {3, 1}},
    {"equipartition ignores priority", E, 4, 2, {4, 4}, {2, 1}, {4, 4}, 0, {2, 2}},
    {"priority 3:1 on 8", P, 8, 2, {8, 8}, {3, 1}, {8, 8}, 0, {6, 2}},
    {"capped high priority leaves the rest to the other", P, 8, 2, {2, 8}, {10, 1}, {8, 8}, 0, {2, 6}},
    {"no starvation under a huge priority", P, 4, 2, {4, 4}, {1000, 1}, {4, 4}, 0, {3, 1}},
    {"total is sum of requests when below nCPU", P, 8, 2, {2, 3}, {1, 5}, {8, 8}, 0, {2, 3}},
    {"rounding remainder by rotation on ties", P, 10, 3, {10, 10, 10}, {1, 1, 1}, {10, 10, 10}, 0, {4, 3, 3}},
    {"rounding remainder follows the rotation", P, 10, 3, {10, 10, 10}, {1, 1, 1}, {10, 10, 10}, 1, {3, 4, 3}},
    {"remainder goes to the higher priority", P, 10, 3, {10, 10, 10}, {1, 1, 2}, {10, 10, 10}, 0, {3, 2, 5}},
    {"equipartition remainder, rot 0", E, 8, 3, {8, 8, 8}, {1, 1, 1}, {8, 8, 8}, 0, {3, 3, 2}},
    {"equipartition remainder, rot 1", E, 8, 3, {8, 8, 8}, {1, 1, 1}, {8, 8, 8}, 1, {2, 3, 3}},
    {"unused share goes to the others", E, 8, 3, {1, 2, 8}, {1, 1, 1}, {8, 8, 8}, 0, {1, 2, 5}},
    {"request capped by affinity", E, 8, 2, {8, 8}, {1, 1}, {2, 8}, 0, {2, 6}},
    {"zero request gets nothing", E, 4, 2, {0, 2}, {1, 1}, {4, 4}, 0, {0, 2}},
    {"more apps than CPUs, rot 0", E, 2, 3, {1, 1, 1}, {1, 1, 1}, {2, 2, 2}, 0, {1, 1, 0}},
    {"more apps than CPUs, rot 1", E, 2, 3, {1, 1, 1}, {1, 1, 1}, {2, 2, 2}, 1, {0, 1, 1}},
    {"more apps than CPUs, rot 2", E, 2, 3, {4, 4, 4}, {1, 1, 1}, {2, 2, 2}, 2, {1, 0, 1}},
    {"more apps than CPUs, priority policy rotates too", P, 1, 2, {1, 1}, {5, 1}, {1, 1}, 1, {0, 1}},
    {"no CPU eligible", E, 4, 2, {2, 2}, {1, 1}, {0, 4}, 0, {0, 2}},
};

static void test_tables(void **state)
{
    (void)state;
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        const struct row *t = &rows[r];
        struct cm_demand d[MAXA];
        int out[MAXA];
        for (int i = 0; i < t->n; i++)
            d[i] = (struct cm_demand){t->req[i], t->prio[i], t->elig[i]};
        cm_policy_counts(t->pol, d, t->n, t->ncpus, t->rot, out);
        for (int i = 0; i < t->n; i++) {
            if (out[i] != t->want[i])
                print_error("row '%s': app %d got %d, want %d\n", t->what, i, out[i], t->want[i]);
            assert_int_equal(out[i], t->want[i]);
        }
    }
}

/* Over many random cases: total = min(ncpus, sum of capped requests),
 * nobody above its capped request, every requester served when they fit,
 * and rotating over n quanta serves every requester at least once. */
static void test_invariants(void **state)
{
    (void)state;
    srand(12345);
    for (int iter = 0; iter < 20000; iter++) {
        enum cm_policy pol = iter & 1 ? P : E;
        int n = 1 + rand() % MAXA, ncpus = rand() % 70;
        struct cm_demand d[MAXA];
        int out[MAXA], sum = 0, requesters = 0;
        for (int i = 0; i < n; i++) {
            d[i].request = rand() % 80;
            d[i].priority = 1 + rand() % 10;
            d[i].eligible = rand() % 70;
            int c = d[i].request < d[i].eligible ? d[i].request : d[i].eligible;
            sum += c;
            requesters += c > 0;
        }
        unsigned rot = (unsigned)rand();
        int total = cm_policy_counts(pol, d, n, ncpus, rot, out);
        int want = requesters > ncpus ? ncpus : (sum < ncpus ? sum : ncpus);
        int got = 0;
        for (int i = 0; i < n; i++) {
            int c = d[i].request < d[i].eligible ? d[i].request : d[i].eligible;
            assert_true(out[i] >= 0 && out[i] <= c);
            if (requesters <= ncpus && c > 0)
                assert_true(out[i] >= 1);
            got += out[i];
        }
        assert_int_equal(got, total);
        assert_int_equal(total, want);
        if (requesters > ncpus && ncpus > 0) {
            int served[MAXA] = {0};
            for (int k = 0; k < n; k++) {
                cm_policy_counts(pol, d, n, ncpus, rot + (unsigned)k, out);
                for (int i = 0; i < n; i++) served[i] |= out[i] > 0;
            }
            for (int i = 0; i < n; i++) {
                int c = d[i].request < d[i].eligible ? d[i].request : d[i].eligible;
                if (c > 0)
                    assert_true(served[i]);
            }
        }
    }
}

static void test_parse(void **state)
{
    (void)state;
    enum cm_policy p;
    assert_int_equal(cm_policy_parse("priority", &p), 0);
    assert_int_equal(p, P);
    assert_int_equal(cm_policy_parse("equipartition", &p), 0);
    assert_int_equal(p, E);
    assert_int_not_equal(cm_policy_parse("fifo", &p), 0);
    assert_int_not_equal(cm_policy_parse(NULL, &p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables),
        cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
