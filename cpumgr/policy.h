/*
 * policy.h -- how many CPUs each application gets: pure functions of the
 * requests, priorities and CPU count, so they are tested from tables.
 */
#ifndef CPUMGR_POLICY_H
#define CPUMGR_POLICY_H

#include <stdint.h>

enum cm_policy {
    CM_POLICY_EQUIPARTITION, /* dynamic space sharing */
    CM_POLICY_PRIORITY,      /* priority-proportional, eDragon rule */
};

/* One application as the policy sees it (already range-checked). */
struct cm_demand {
    int request;   /* CPUs wanted, >= 0 */
    int priority;  /* >= 1 */
    int eligible;  /* CPUs of the daemon inside the app's affinity mask */
    double credit; /* in rotation (either policy): CPU-quanta the app is owed
                      from earlier quanta (cm_policy_charge); 0 otherwise */
    int dormant;   /* nonzero: every VP parked, nothing to run (the slot's
                      dormant word, issue 5): counted as requesting 0 --
                      no CPU, not a requester for the rotation, no credit --
                      while request keeps what it wants afterwards */
    /* Equipartition's rotation only (CPU-sticky turns, cm_policy_counts);
     * all 0 gives the plain rotation order. Positional initialisers that
     * stop before them leave them 0. */
    int held;      /* CPUs it holds now (not shared), >= 0 */
    int cpu1;      /* OS index + 1 of the CPU it holds when held == 1, else 0 */
    uint64_t ran;  /* CPUs c < 64 (bit c) where its VPs already run: those it
                      held since it attached, and its main VP's */
    int keep;      /* a holder that keeps its CPU whatever its credit: the
                      daemon's rebalances inside a quantum (only a turn,
                      the quantum's end, takes a CPU from a holder) */
};

/* How much more owed (in CPU-quanta) a waiter must be than a holder to
 * take its turn first, and the credit band within which a CPU-sticky
 * trade is made. Half a quantum: credits move by 1 - ncpus/requesters a
 * quantum, so a holder stays at most about one quantum longer than plain
 * rotation would keep it, and shares stay equal over the window. */
#define CM_ROT_TIE 0.5

/* Parse "equipartition" or "priority". 0 or EINVAL. */
int cm_policy_parse(const char *s, enum cm_policy *out);
const char *cm_policy_name(enum cm_policy p);

/* Count CPUs for n applications sharing ncpus CPUs; out[i] gets app i's
 * count. Each request is first capped at the app's eligible CPUs. The total
 * is min(ncpus, sum of capped requests) and no out[i] exceeds its capped
 * request.
 *  - When at most ncpus applications request CPUs, each of them gets at
 *    least one (no starvation), then:
 *    equipartition: min(request, fair share), what some do not use goes to
 *      the others, the indivisible remainder one CPU each in rotation order;
 *    priority: round(P_i*R_i*ncpus / sum P_j*R_j) capped at R_i, the
 *      rounding remainder given to (or taken from) the highest (lowest)
 *      priority first, then the largest rounding loss, then rotation order.
 *  - With more requesting applications than CPUs (rotation):
 *    equipartition: one CPU each goes to ncpus of them. Holders with keep
 *      set keep theirs first. The rest go to those owed the most CPU time
 *      (credit: equal entitlements, ncpus / requesters each quantum,
 *      cm_policy_charge), a holder counted CM_ROT_TIE quanta more owed
 *      than it is (it stays unless a waiter is owed clearly more), ties
 *      in rotation order (starting at the rot-th requester: with all
 *      credits 0 and nobody holding, CPU k goes to the (rot+k)-th
 *      requester, and the daemon bumps rot every quantum). Then
 *      CPU-sticky turns: an entrant (held 0) whose ran set holds no
 *      leaver's CPU, but a stayer's, trades that stayer for a leaver
 *      whose credit is within CM_ROT_TIE below the stayer's: the
 *      entrant gets a CPU where its VP is bound already, the leaver
 *      keeps its own, and no kernel thread runs on a new CPU (each
 *      first run of a VP on another CPU is a CPU migration: 10 of 16 in
 *      the lu+sor+lu mix, bench/RESULTS.md "eff" and "mix3");
 *    priority: the CPUs go one at a time to the requesters owed the most,
 *      credit + entitlement - CPUs given so far (cm_policy_entitle), never
 *      above the capped request: over the quanta each application's
 *      CPU-quanta follow its entitlement (cm_policy_charge keeps the
 *      credit), and ties go in rotation order.
 * rot only breaks ties. Returns the total assigned. */
int cm_policy_counts(enum cm_policy p, const struct cm_demand *apps, int n,
                     int ncpus, unsigned rot, int *out);

/* The rotation window, in quanta, for `requesting` applications that want
 * CPUs on ncpus CPUs: 8 * ceil(requesting / ncpus). Under the priority
 * policy each requester is entitled to at least 1/window of a CPU. */
int cm_policy_window(int requesting, int ncpus);

/* Priority policy in rotation: e[i] = the CPUs app i is entitled to per
 * quantum, a fraction. Each requester gets the floor 1/window (no
 * starvation, however low its priority); the rest of the ncpus CPUs is
 * shared in proportion to P_i * R_i (the eDragon weights, R_i the capped
 * request) without exceeding R_i, what a capped app leaves going to the
 * others. Sums to ncpus. Equipartition in rotation: ncpus / requesters
 * each (equal shares). Not in rotation (requesters <= ncpus): e[i] = 0.
 * Returns the number of requesters. */
int cm_policy_entitle(enum cm_policy p, const struct cm_demand *apps, int n, int ncpus,
                      double *e);

/* After a quantum in which app i held out[i] CPUs: credit[i] += e[i] -
 * out[i] in rotation (either policy), clamped to +-window so a departed
 * or changed application cannot bank quanta; otherwise (no rotation)
 * every credit is reset to 0, and so is a non-requester's. */
void cm_policy_charge(enum cm_policy p, const struct cm_demand *apps, int n, int ncpus,
                      const int *out, double *credit);

#endif
