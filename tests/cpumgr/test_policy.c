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
            d[i] = (struct cm_demand){.request = t->req[i], .priority = t->prio[i], .eligible = t->elig[i]};
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
            d[i] = (struct cm_demand){.request = t->req[i], .priority = t->prio[i], .eligible = t->ncpus};
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

/* Equipartition's rotation, CPU-sticky (policy.h): one call each, apps
 * with credit, the CPU they hold (cpu1) and the CPUs they ran on. The
 * plain rotation order at the row's rot gives another answer in every row
 * but the last, which keeps that order (checked against int23's policy.c:
 * the first row fails). */
struct strow {
    const char *what;
    int ncpus, n;
    double credit[MAXA];
    int cpu1[MAXA];   /* CPU + 1 held, 0 none */
    int ran[MAXA];    /* bit mask of CPUs */
    int keep[MAXA];
    unsigned rot;
    int want[MAXA];
};

static const struct strow strows[] = {
    /* lu+sor+lu, the turn after a newcomer: A left CPU 0 a quantum ago,
     * C took it; B holds CPU 1 longer. A comes back to CPU 0, B stays on
     * its own, C (one quantum held) waits: nobody runs on a new CPU. The
     * shift gives A B's CPU 1. */
    {"entrant trades for the stayer on the CPU it left", 2, 3, {1. / 3, -2. / 3, -1. / 3},
     {0, 2, 1}, {1, 2, 1}, {0, 0, 0}, 1, {1, 1, 0}},
    /* Owed clearly more (a whole quantum): no trade, the turn is fair
     * first; C runs on CPU 1 for the first time. */
    {"no trade with a holder owed a quantum more", 2, 3, {-1. / 3, -4. / 3, 1. / 3},
     {1, 2, 0}, {1, 2, 1}, {0, 0, 0}, 0, {1, 0, 1}},
    /* A holder stays unless a waiter is owed more than CM_ROT_TIE more:
     * A (waiter, -2/3) does not displace B (holder, -2/3). */
    {"a holder keeps its CPU against an equally owed waiter", 2, 3, {-2. / 3, -2. / 3, -1. / 3},
     {0, 2, 1}, {1, 2, 1}, {0, 0, 0}, 0, {0, 1, 1}},
    /* Inside a quantum (keep): holders keep their CPUs whatever a
     * newcomer or waiter is owed; it waits for the turn. */
    {"inside a quantum holders keep their CPUs", 2, 3, {1, -1, -1}, {0, 1, 2}, {1, 1, 2},
     {0, 1, 1}, 0, {0, 1, 1}},
    /* Credit all 0, nobody holding: the plain rotation order. */
    {"no credit, no holder: rotation order", 2, 3, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, 2,
     {1, 0, 1}},
};

static void test_sticky_tables(void **state)
{
    (void)state;
    for (size_t r = 0; r < sizeof strows / sizeof strows[0]; r++) {
        const struct strow *t = &strows[r];
        struct cm_demand d[MAXA];
        int out[MAXA];
        for (int i = 0; i < t->n; i++)
            d[i] = (struct cm_demand){.request = 2, .priority = 1, .eligible = t->ncpus,
                                      .credit = t->credit[i], .held = t->cpu1[i] > 0,
                                      .cpu1 = t->cpu1[i], .ran = (uint64_t)t->ran[i],
                                      .keep = t->keep[i]};
        assert_int_equal(cm_policy_counts(E, d, t->n, t->ncpus, t->rot, out), t->ncpus);
        for (int i = 0; i < t->n; i++) {
            if (out[i] != t->want[i])
                print_error("row '%s': app %d got %d, want %d\n", t->what, i, out[i], t->want[i]);
            assert_int_equal(out[i], t->want[i]);
        }
    }
}

/* The daemon's loop over many quanta with the CPUs' identity: counts, then
 * a placement as the daemon's (a stayer keeps its CPU, an entrant takes a
 * free CPU it ran on if there is one, else the first free), then charge.
 * Each application runs a new process every second entry (the restarted
 * instances of the workload's mixes); a process's ran set is the CPUs it
 * held, so an entry on a CPU outside it is a VP's first run there: a CPU
 * migration. Shares stay equal within 2 quanta, and in the three-on-two
 * mix there are at most quanta / 5 such first runs: 20 in 120 quanta
 * (int23's plain shift of the rotation order: 60, every second entry of
 * every process -- checked, this row fails against it). */
struct simrow {
    const char *what;
    int ncpus, n, quanta, max_new;
};

static const struct simrow simrows[] = {
    {"lu+sor+lu: three on two", 2, 3, 120, 24},
    {"four on two", 2, 4, 120, 120},
    {"five on three", 3, 5, 150, 150},
    {"seven on three", 3, 7, 210, 210},
};

static void test_sticky_rounds(void **state)
{
    (void)state;
    for (size_t r = 0; r < sizeof simrows / sizeof simrows[0]; r++) {
        const struct simrow *t = &simrows[r];
        struct cm_demand d[MAXA + 2];
        double credit[MAXA + 2] = {0};
        int cpu[MAXA + 2], nent[MAXA + 2] = {0}, got[MAXA + 2] = {0}, out[MAXA + 2];
        uint64_t ran[MAXA + 2] = {0};
        int firsts = 0, entries = 0;
        for (int i = 0; i < t->n; i++)
            cpu[i] = -1;
        for (int q = 0; q < t->quanta; q++) {
            for (int i = 0; i < t->n; i++)
                d[i] = (struct cm_demand){.request = 1, .priority = 1, .eligible = t->ncpus,
                                          .credit = credit[i], .held = cpu[i] >= 0,
                                          .cpu1 = cpu[i] + 1, .ran = ran[i]};
            assert_int_equal(cm_policy_counts(E, d, t->n, t->ncpus, (unsigned)q, out), t->ncpus);
            int taken[8] = {0};
            for (int i = 0; i < t->n; i++) {
                if (!out[i])
                    cpu[i] = -1;
                else if (cpu[i] >= 0)
                    taken[cpu[i]] = 1;
            }
            for (int i = 0; i < t->n; i++) {
                if (!out[i] || cpu[i] >= 0)
                    continue;
                int c = -1;
                for (int k = 0; c < 0 && k < t->ncpus; k++)
                    if (!taken[k] && (ran[i] >> k) & 1u)
                        c = k;
                for (int k = 0; c < 0 && k < t->ncpus; k++)
                    if (!taken[k])
                        c = k;
                assert_true(c >= 0);
                taken[c] = 1;
                if (nent[i]++ % 2 == 0) {
                    ran[i] = 0; /* a new process: born there */
                } else {
                    entries++;
                    firsts += !((ran[i] >> c) & 1u);
                }
                ran[i] |= 1ull << c;
                cpu[i] = c;
            }
            for (int i = 0; i < t->n; i++)
                got[i] += out[i];
            cm_policy_charge(E, d, t->n, t->ncpus, out, credit);
        }
        double share = (double)t->quanta * t->ncpus / t->n;
        for (int i = 0; i < t->n; i++) {
            if (got[i] < share - 2 || got[i] > share + 2)
                print_error("row '%s': app %d got %d CPU-quanta, want %.1f +- 2\n", t->what, i,
                            got[i], share);
            assert_true(got[i] >= share - 2 && got[i] <= share + 2);
        }
        print_message("%s: %d of %d second entries on a CPU new to the process\n", t->what,
                      firsts, entries);
        if (firsts > t->max_new)
            print_error("row '%s': %d first runs, at most %d\n", t->what, firsts, t->max_new);
        assert_true(firsts <= t->max_new);
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
        struct cm_demand d[MAXA] = {{0}};
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
            d[i] = (struct cm_demand){.request = t->req[i], .priority = 1, .eligible = t->ncpus, .dormant = t->dorm[i]};
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
        cmocka_unit_test(test_sticky_tables),
        cmocka_unit_test(test_sticky_rounds),
        cmocka_unit_test(test_dormant),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
