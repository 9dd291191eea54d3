/*
 * policy.c -- equipartition and priority-proportional CPU counts.
 * Equipartition after McCann, Vaswani and Zahorjan, "A dynamic processor
 * allocation policy for multiprogrammed shared-memory multiprocessors"
 * (ACM TOCS 1993); the priority rule is the eDragon CPU manager's.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "policy.h"

int cm_policy_parse(const char *s, enum cm_policy *out)
{
    if (s && strcmp(s, "equipartition") == 0) { *out = CM_POLICY_EQUIPARTITION; return 0; }
    if (s && strcmp(s, "priority") == 0) { *out = CM_POLICY_PRIORITY; return 0; }
    return EINVAL;
}

const char *cm_policy_name(enum cm_policy p)
{
    return p == CM_POLICY_PRIORITY ? "priority" : "equipartition";
}

/* Position of app i in rotation order: ties go to the smallest. */
static unsigned rot_key(int i, int n, unsigned rot)
{
    return (unsigned)(((long)i - (long)(rot % (unsigned)n) + n) % n);
}

static int capped_request(const struct cm_demand *a)
{
    if (a->dormant)
        return 0; /* needs no CPU now: its share goes to the others */
    int r = a->request < 0 ? 0 : a->request;
    int e = a->eligible < 0 ? 0 : a->eligible;
    return r < e ? r : e;
}

static int equipartition(const int *req, int n, int ncpus, unsigned rot, int *out)
{
    int left = ncpus, unsat = 0;
    for (int i = 0; i < n; i++) { out[i] = 0; if (req[i] > 0) unsat++; }
    /* Water-filling: raise everybody by the fair share of what is left;
     * apps that need less stop early and leave the rest to the others. */
    while (left > 0 && unsat > 0) {
        int share = left / unsat;
        if (share == 0)
            break;
        for (int i = 0; i < n; i++) {
            int want = req[i] - out[i];
            if (want <= 0)
                continue;
            int give = want < share ? want : share;
            out[i] += give;
            left -= give;
            if (out[i] == req[i])
                unsat--;
        }
    }
    /* Remainder smaller than the number of unsatisfied apps: one each in
     * rotation order, so who gets the extra CPU changes every quantum. */
    for (unsigned k = 0; left > 0 && k < (unsigned)n; k++)
        for (int i = 0; i < n; i++)
            if (rot_key(i, n, rot) == k && out[i] < req[i]) { out[i]++; left--; break; }
    return ncpus - left;
}

/* Better candidate to receive one more CPU: higher priority, then larger
 * rounding loss, then earlier in rotation order. */
static int better_gain(int i, int j, const struct cm_demand *a, const double *q,
                       const int *out, int n, unsigned rot)
{
    if (j < 0) return 1;
    if (a[i].priority != a[j].priority) return a[i].priority > a[j].priority;
    double li = q[i] - out[i], lj = q[j] - out[j];
    if (li != lj) return li > lj;
    return rot_key(i, n, rot) < rot_key(j, n, rot);
}

/* Better candidate to give one CPU back: lower priority, then larger
 * rounding gain, then later in rotation order. */
static int better_loss(int i, int j, const struct cm_demand *a, const double *q,
                       const int *out, int n, unsigned rot)
{
    if (j < 0) return 1;
    if (a[i].priority != a[j].priority) return a[i].priority < a[j].priority;
    double gi = out[i] - q[i], gj = out[j] - q[j];
    if (gi != gj) return gi > gj;
    return rot_key(i, n, rot) > rot_key(j, n, rot);
}

static int priority_rule(const struct cm_demand *a, const int *req, int n, int ncpus,
                         unsigned rot, int *out)
{
    double q[n > 0 ? n : 1];
    double sum = 0;
    int target = 0;
    for (int i = 0; i < n; i++) {
        sum += (double)a[i].priority * req[i];
        target += req[i];
    }
    if (target > ncpus) target = ncpus;
    int total = 0;
    for (int i = 0; i < n; i++) {
        q[i] = sum > 0 ? (double)a[i].priority * req[i] * ncpus / sum : 0;
        long r = lround(q[i]);
        out[i] = r > req[i] ? req[i] : (int)r;
        if (req[i] > 0 && out[i] == 0)
            out[i] = 1; /* no starvation: every requester fits (n <= ncpus) */
        total += out[i];
    }
    while (total < target) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (out[i] < req[i] && better_gain(i, best, a, q, out, n, rot)) best = i;
        if (best < 0) break;
        out[best]++; total++;
    }
    while (total > target) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (out[i] > 1 && better_loss(i, best, a, q, out, n, rot)) best = i;
        if (best < 0) break;
        out[best]--; total--;
    }
    return total;
}

int cm_policy_window(int requesting, int ncpus)
{
    if (requesting <= 0 || ncpus <= 0)
        return 1;
    return 8 * ((requesting + ncpus - 1) / ncpus);
}

int cm_policy_entitle(enum cm_policy p, const struct cm_demand *apps, int n, int ncpus,
                      double *e)
{
    int req[n > 0 ? n : 1], requesting = 0;
    for (int i = 0; i < n; i++) {
        req[i] = capped_request(&apps[i]);
        e[i] = 0;
        requesting += req[i] > 0;
    }
    if (ncpus <= 0 || requesting <= ncpus)
        return requesting;
    if (p != CM_POLICY_PRIORITY) {
        /* Equipartition: equal shares of the time, one CPU at a time. */
        for (int i = 0; i < n; i++)
            e[i] = req[i] > 0 ? (double)ncpus / requesting : 0;
        return requesting;
    }
    /* The floor first: every requester is owed 1/window of a CPU, so it
     * gets a quantum within about a window however low its priority. */
    double floor = 1.0 / cm_policy_window(requesting, ncpus);
    double left = ncpus;
    int open[n];
    for (int i = 0; i < n; i++) {
        open[i] = req[i] > 0;
        if (open[i]) { e[i] = floor; left -= floor; }
    }
    /* Then the rest in proportion to P_i * R_i; an app that would pass its
     * request is capped there and the others share again what it leaves
     * (at most n rounds: each round caps one more app or ends). */
    for (int round = 0; round < n && left > 1e-12; round++) {
        double w = 0;
        for (int i = 0; i < n; i++)
            if (open[i]) w += (double)apps[i].priority * req[i];
        if (w <= 0)
            break;
        int capped = 0;
        for (int i = 0; i < n; i++)
            if (open[i] && e[i] + left * apps[i].priority * req[i] / w >= req[i]) {
                left -= req[i] - e[i];
                e[i] = req[i];
                open[i] = 0;
                capped = 1;
            }
        if (capped)
            continue;
        for (int i = 0; i < n; i++)
            if (open[i]) e[i] += left * apps[i].priority * req[i] / w;
        left = 0;
    }
    return requesting;
}

void cm_policy_charge(enum cm_policy p, const struct cm_demand *apps, int n, int ncpus,
                      const int *out, double *credit)
{
    double e[n > 0 ? n : 1];
    int requesting = cm_policy_entitle(p, apps, n, ncpus, e);
    int rotating = ncpus > 0 && requesting > ncpus;
    double lim = cm_policy_window(requesting, ncpus);
    for (int i = 0; i < n; i++) {
        if (!rotating || capped_request(&apps[i]) == 0) {
            credit[i] = 0;
            continue;
        }
        double c = credit[i] + e[i] - out[i];
        credit[i] = c > lim ? lim : c < -lim ? -lim : c;
    }
}

/* Priority policy in rotation: CPU by CPU to the requester owed the most
 * after this quantum's entitlement, ties in rotation order. */
static int priority_rotation(enum cm_policy p, const struct cm_demand *a, const int *req,
                             int n, int ncpus, unsigned rot, int *out)
{
    double e[n];
    cm_policy_entitle(p, a, n, ncpus, e);
    int given = 0;
    for (; given < ncpus; given++) {
        int best = -1;
        double bo = 0;
        for (int i = 0; i < n; i++) {
            if (out[i] >= req[i])
                continue;
            double owed = a[i].credit + e[i] - out[i];
            if (best < 0 || owed > bo ||
                (owed == bo && rot_key(i, n, rot) < rot_key(best, n, rot))) {
                best = i;
                bo = owed;
            }
        }
        if (best < 0)
            break;
        out[best]++;
    }
    return given;
}

/* May app i take a turn before app j (equipartition rotation)? More
 * owed first, a holder counted CM_ROT_TIE more; then rotation order. */
static int turn_before(const struct cm_demand *a, int i, int j, int n, unsigned rot)
{
    if (j < 0)
        return 1;
    double si = a[i].credit + (a[i].held > 0 ? CM_ROT_TIE : 0);
    double sj = a[j].credit + (a[j].held > 0 ? CM_ROT_TIE : 0);
    if (si != sj)
        return si > sj;
    return rot_key(i, n, rot) < rot_key(j, n, rot);
}

static int ran_on(const struct cm_demand *a, int cpu1)
{
    return cpu1 >= 1 && cpu1 <= 64 && (a->ran >> (cpu1 - 1)) & 1u;
}

/* Equipartition in rotation: one CPU each to ncpus requesters (policy.h).
 * Why credit rather than a plain shift of the rotation order: with three
 * applications on two CPUs the shift hands every entrant the CPU of the
 * one that leaves, never the one it left a quantum before, so each of
 * its processes runs a VP on a second CPU -- a migration at the VP's first
 * run there -- and a newcomer that got a CPU just before the quantum's
 * end lost it in its serial start-up. Credit with a holder's margin lets
 * the turn go to whoever is owed, trading among near-equals for a CPU
 * the entrant has run on. */
static int equi_rotation(const struct cm_demand *a, const int *req, int n, int ncpus,
                         unsigned rot, int *out)
{
    int given = 0;
    for (unsigned k = 0; given < ncpus && k < (unsigned)n; k++)
        for (int i = 0; i < n; i++)
            if (rot_key(i, n, rot) == k && req[i] > 0 && a[i].keep && a[i].held > 0) {
                out[i] = 1;
                given++;
                break;
            }
    while (given < ncpus) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (!out[i] && req[i] > 0 && turn_before(a, i, best, n, rot))
                best = i;
        if (best < 0)
            break;
        out[best] = 1;
        given++;
    }
    /* CPU-sticky trades, each entrant once in rotation order. */
    for (unsigned k = 0; k < (unsigned)n; k++) {
        int x = -1;
        for (int i = 0; i < n && x < 0; i++)
            if (rot_key(i, n, rot) == k)
                x = i;
        if (x < 0 || !out[x] || a[x].held > 0 || !a[x].ran)
            continue;
        int lands = 0, y = -1, l = -1;
        for (int i = 0; i < n; i++) {
            if (req[i] <= 0 || a[i].held != 1 || !a[i].cpu1)
                continue;
            if (!out[i] && ran_on(&a[x], a[i].cpu1))
                lands = 1; /* a leaver's CPU it knows: placement gives it that one */
            else if (out[i] && !a[i].keep && ran_on(&a[x], a[i].cpu1) &&
                     (y < 0 || turn_before(a, y, i, n, rot)))
                y = i; /* the stayer nearest to leaving */
            else if (!out[i] && (l < 0 || turn_before(a, i, l, n, rot)))
                l = i; /* the leaver nearest to staying */
        }
        if (lands || y < 0 || l < 0 || a[y].credit - a[l].credit > CM_ROT_TIE)
            continue;
        out[y] = 0;
        out[l] = 1;
    }
    return given;
}

int cm_policy_counts(enum cm_policy p, const struct cm_demand *apps, int n,
                     int ncpus, unsigned rot, int *out)
{
    if (n <= 0)
        return 0;
    int req[n], requesting = 0;
    for (int i = 0; i < n; i++) {
        req[i] = capped_request(&apps[i]);
        out[i] = 0;
        if (req[i] > 0) requesting++;
    }
    if (ncpus <= 0 || requesting == 0)
        return 0;
    if (requesting > ncpus && p == CM_POLICY_PRIORITY)
        return priority_rotation(p, apps, req, n, ncpus, rot, out);
    if (requesting > ncpus)
        return equi_rotation(apps, req, n, ncpus, rot, out);
    if (p == CM_POLICY_PRIORITY)
        return priority_rule(apps, req, n, ncpus, rot, out);
    return equipartition(req, n, ncpus, rot, out);
}
