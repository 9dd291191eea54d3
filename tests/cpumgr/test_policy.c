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
    {"priority rotation: the first quantum to the larger entitlement", P, 1, 2, {1, 1}, {5, 1}, {1, 1}, 1, {1, 0}},
    {"priority rotation, equal entitlements: ties in rotation order", P, 2, 3, {1, 1, 1}, {1, 1, 1}, {2, 2, 2}, 1, {0, 1, 1}},
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
            d[i] = (struct cm_demand){t->req[i], t->prio[i], t->elig[i], 0, 0};
        cm_policy_counts(t->pol, d, t->n, t->ncpus, t->rot, out);
        for (int i = 0; i < t->n; i++) {
            if (out[i] != t->want[i])
                print_error("row '%s': app %d got %d, want %d\n", t->what, i, out[i], t->want[i]);
            assert_int_equal(out[i], t->want[i]);
        }
    }
}

/* Priority policy in rotation, several quanta: the daemon's loop (counts,
 * then charge what was held) run `rounds` times from zero credit. Each
 * application's CPU-quanta are its entitlement times the rounds (the
 * floor 1/window plus its P*R-proportional part of the rest, capped at
 * its request), and no requester waits more than a window between two
 * quanta (in these tables; at most two windows in general). */
struct rotrow {
    const char *what;
    int ncpus, n, rounds;
    int req[MAXA], prio[MAXA];
    int want[MAXA]; /* CPU-quanta over the rounds */
};

static const struct rotrow rotrows[] = {
    /* window 16: floor 1/16; the rest 14/16 by 1000:1. */
    {"new-user trial: priority 1000 and 1 on one CPU", 1, 2, 160, {1, 1}, {1000, 1}, {150, 10}},
    /* 0.0625 + 0.875*2/3 = 0.646 and 0.354 */
    {"priorities 2 and 1 on one CPU", 1, 2, 96, {1, 1}, {2, 1}, {62, 34}},
    {"equal priorities share equally", 2, 3, 150, {1, 1, 1}, {1, 1, 1}, {100, 100, 100}},
    /* app 0 capped at its request of 1: the others split the rest */
    {"a capped high priority leaves the rest to the others", 2, 3, 160, {1, 1, 1},
     {1000, 1, 1}, {160, 80, 80}},
    /* 0.0625 + 1.8125*2000/2004 = 1.871 of 2 CPUs; 0.0643 each */
    {"a high priority may hold several CPUs in rotation", 2, 3, 160, {2, 2, 2},
     {1000, 1, 1}, {300, 10, 10}},
    /* window 24: floor 1/24; weights 1..5 share 2 - 5/24 */
    {"five priorities on two CPUs", 2, 5, 240, {1, 1, 1, 1, 1}, {1, 2, 3, 4, 5},
     {39, 67, 96, 125, 153}},
};

static void test_rotation_rounds(void **state)
{
    (void)state;
    for (size_t r = 0; r < sizeof rotrows / sizeof rotrows[0]; r++) {
        const struct rotrow *t = &rotrows[r];
        struct cm_demand d[MAXA];
        double credit[MAXA] = {0};
        int got[MAXA] = {0}, last[MAXA], out[MAXA];
        int requesting = 0;
        for (int i = 0; i < t->n; i++) {
            d[i] = (struct cm_demand){t->req[i], t->prio[i], t->ncpus, 0, 0};
            last[i] = -1;
            requesting += t->req[i] > 0;
        }
        int window = cm_policy_window(requesting, t->ncpus);
        for (int k = 0; k < t->rounds; k++) {
            for (int i = 0; i < t->n; i++)
                d[i].credit = credit[i];
            assert_int_equal(cm_policy_counts(P, d, t->n, t->ncpus, (unsigned)k, out), t->ncpus);
            for (int i = 0; i < t->n; i++) {
                assert_true(out[i] >= 0 && out[i] <= t->req[i]);
                got[i] += out[i];
                if (out[i] > 0) {
                    if (k - last[i] > window)
                        print_error("row '%s': app %d waited %d quanta (window %d)\n",
                                    t->what, i, k - last[i], window);
                    assert_true(k - last[i] <= window);
                    last[i] = k;
                }
            }
            cm_policy_charge(P, d, t->n, t->ncpus, out, credit);
        }
        for (int i = 0; i < t->n; i++) {
            if (got[i] != t->want[i])
                print_error("row '%s': app %d got %d CPU-quanta, want %d\n", t->what, i,
                            got[i], t->want[i]);
            assert_int_equal(got[i], t->want[i]);
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
            d[i].credit = 0;
            d[i].dormant = rand() % 4 == 0; /* asks for nothing now */
            int c = d[i].dormant ? 0 : d[i].request < d[i].eligible ? d[i].request : d[i].eligible;
            sum += c;
            requesters += c > 0;
        }
        unsigned rot = (unsigned)rand();
        int total = cm_policy_counts(pol, d, n, ncpus, rot, out);
        int want = requesters > ncpus ? ncpus : (sum < ncpus ? sum : ncpus);
        int got = 0;
        for (int i = 0; i < n; i++) {
            int c = d[i].dormant ? 0 : d[i].request < d[i].eligible ? d[i].request : d[i].eligible;
            assert_true(out[i] >= 0 && out[i] <= c);
            if (requesters <= ncpus && c > 0)
                assert_true(out[i] >= 1);
            got += out[i];
        }
        assert_int_equal(got, total);
        assert_int_equal(total, want);
        if (requesters > ncpus && ncpus > 0) {
            /* Equipartition serves everybody within n quanta; the
             * priority rotation (credit carried) at least once in every
             * two windows (the tables above: in every window; a random
             * mix of huge and tiny weights lags its floor by a little). */
            int served[MAXA] = {0}, last[MAXA];
            double credit[MAXA] = {0};
            int window = cm_policy_window(requesters, ncpus);
            int rounds = pol == P ? 4 * window : n;
            for (int i = 0; i < n; i++) last[i] = -1;
            for (int k = 0; k < rounds; k++) {
                for (int i = 0; i < n; i++) d[i].credit = credit[i];
                cm_policy_counts(pol, d, n, ncpus, rot + (unsigned)k, out);
                for (int i = 0; i < n; i++) {
                    served[i] |= out[i] > 0;
                    if (pol == P && out[i] > 0) {
                        if (k - last[i] > 2 * window)
                            print_error("ncpus %d, app %d of %d waited %d quanta (window %d)\n",
                                        ncpus, i, n, k - last[i], window);
                        assert_true(k - last[i] <= 2 * window);
                        last[i] = k;
                    }
                }
                cm_policy_charge(pol, d, n, ncpus, out, credit);
            }
            for (int i = 0; i < n; i++) {
                int c = d[i].dormant ? 0 : d[i].request < d[i].eligible ? d[i].request : d[i].eligible;
                if (c > 0)
                    assert_true(served[i]);
                else
                    assert_false(served[i]); /* dormant or asking for none */
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

/* Dormant applications (issue 5): their requests stand but they count as
 * asking for nothing -- no CPU, no turn in the rotation, their share to
 * the others, no credit under the priority policy. The same tables with
 * dormant = 0 rotate. */
struct dormrow {
    const char *what;
    enum cm_policy pol;
    int ncpus, n;
    int req[MAXA], dorm[MAXA];
    unsigned rot;
    int want[MAXA];
};

static const struct dormrow dormrows[] = {
    {"busy beside 5 dormant sleepers: both CPUs, whatever rot", E, 2, 6,
     {2, 2, 2, 2, 2, 2}, {0, 1, 1, 1, 1, 1}, 3, {2, 0, 0, 0, 0, 0}},
    {"same under the priority policy", P, 2, 6,
     {2, 2, 2, 2, 2, 2}, {0, 1, 1, 1, 1, 1}, 5, {2, 0, 0, 0, 0, 0}},
    {"one sleeper awake: the fair share, no rotation", E, 2, 6,
     {2, 2, 2, 2, 2, 2}, {0, 1, 1, 0, 1, 1}, 1, {1, 0, 0, 1, 0, 0}},
    {"all dormant: nobody gets a CPU", E, 2, 3, {2, 2, 2}, {1, 1, 1}, 0, {0, 0, 0}},
    {"dormant app first in rotation order is skipped", E, 1, 3, {1, 1, 1}, {1, 0, 1}, 0,
     {0, 1, 0}},
};

static void test_dormant(void **state)
{
    (void)state;
    for (size_t r = 0; r < sizeof dormrows / sizeof dormrows[0]; r++) {
        const struct dormrow *t = &dormrows[r];
        struct cm_demand d[MAXA];
        int out[MAXA];
        for (int i = 0; i < t->n; i++)
            d[i] = (struct cm_demand){t->req[i], 1, t->ncpus, 0, t->dorm[i]};
        cm_policy_counts(t->pol, d, t->n, t->ncpus, t->rot, out);
        for (int i = 0; i < t->n; i++) {
            if (out[i] != t->want[i])
                print_error("row '%s': app %d got %d, want %d\n", t->what, i, out[i], t->want[i]);
            assert_int_equal(out[i], t->want[i]);
        }
        /* Rotation is for requesters only: no window grows for them, and
         * a dormant app banks no credit. */
        double e[MAXA], credit[MAXA];
        int requesting = cm_policy_entitle(P, d, t->n, t->ncpus, e);
        int awake = 0;
        for (int i = 0; i < t->n; i++) {
            awake += !t->dorm[i];
            credit[i] = 0;
        }
        assert_int_equal(requesting, awake);
        cm_policy_charge(P, d, t->n, t->ncpus, out, credit);
        for (int i = 0; i < t->n; i++)
            if (t->dorm[i])
                assert_true(credit[i] == 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables),
        cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_rotation_rounds),
        cmocka_unit_test(test_dormant),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
