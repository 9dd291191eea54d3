/*
 * policy.h -- how many CPUs each application gets: pure functions of the
 * requests, priorities and CPU count, so they are tested from tables.
 */
#ifndef CPUMGR_POLICY_H
#define CPUMGR_POLICY_H

enum cm_policy {
    CM_POLICY_EQUIPARTITION, /* dynamic space sharing */
    CM_POLICY_PRIORITY,      /* priority-proportional, eDragon rule */
};

/* One application as the policy sees it (already range-checked). */
struct cm_demand {
    int request;   /* CPUs wanted, >= 0 */
    int priority;  /* >= 1 */
    int eligible;  /* CPUs of the daemon inside the app's affinity mask */
};

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
 *  - With more requesting applications than CPUs, one CPU each goes to
 *    ncpus of them, starting at the rot-th requesting application: the
 *    daemon bumps rot every quantum so the CPUs rotate and none starves.
 * rot only breaks ties. Returns the total assigned. */
int cm_policy_counts(enum cm_policy p, const struct cm_demand *apps, int n,
                     int ncpus, unsigned rot, int *out);

#endif
