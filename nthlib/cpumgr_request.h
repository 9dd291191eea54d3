/*
 * cpumgr_request.h -- how many CPUs an application asks the cpumgr for
 * (and runs alone on): the rule, as a pure function for table tests.
 */
#ifndef NTH_CPUMGR_REQUEST_H
#define NTH_CPUMGR_REQUEST_H

/* The CPU count the client publishes in its slot and runs alone on.
 *   request  what nth_cpus_request() asked for, or <= 0 if never called;
 *   vps      the VPs the runtime runs (nth_rt.nvps), or <= 0 if it has
 *            not started (the client used on its own);
 *   naff     CPUs of the process affinity mask (the cap of every answer).
 * An explicit request wins, capped at naff: nth_cpus_request() may ask for
 * more CPUs than VPs (an application about to grow) or fewer. Without
 * one, the default is min(VPs, naff): a VP runs on one CPU at a time, so
 * CPUs beyond the VP count stay idle in the application that holds them
 * while equipartition counts them as given (notes f13t: an NTH_VPS=1
 * process held 2 CPUs; on 64 CPUs an NTH_VPS=4 one could be handed 32).
 * The default VP count is one per CPU of the mask (vp.c), so a malleable
 * application started without NTH_VPS still asks for every CPU it can
 * use. Before the runtime starts, the VP count is unknown: the mask.
 * Returns 0..naff. Pure; thread-safe. Mirrors the request of the eDragon
 * CPU manager (Req_i, issue 5) and pthread_setconcurrency(3)'s "0: the
 * implementation's choice". */
static inline int nth_cpumgr_request_rule(int request, int vps, int naff)
{
    int want = request > 0 ? request : vps > 0 ? vps : naff;
    if (naff < 0)
        naff = 0;
    return want < naff ? want : naff;
}

#endif
