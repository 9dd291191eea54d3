/* team_nth.c -- the libnth backend (issue 6, second phase): not built yet.
 *
 * It plugs in once libnth has parallel regions; the calls below are the ones
 * issue 6 specifies (nth_parallel, nth_cpus_request/nth_cpus_assigned from
 * the cpumgr part). The name of the in-region team barrier is a placeholder
 * until the core part fixes it. To build: add the bench/lu-nth and
 * bench/sor-nth programs at the end of bench/bench.mk (see the comment
 * there); bench/workload then runs nth-fixed and nth-malleable by itself.
 *
 * Fixed team (nth-fixed): every region gets `threads` nano-threads.
 * Malleable (nth-malleable): the application requests `threads` CPUs and
 * every region is started with n = 0, so nth_parallel() sizes the team from
 * nth_cpus_assigned() at that region's entry, as JOMP applications on JNE
 * followed the CPUs their manager gave them. */
#include "team.h"

#include <errno.h>
#include <nth.h>

static int team_threads, team_malleable, started;

const char *team_impl(void) { return team_malleable ? "nth-malleable" : "nth-fixed"; }

int team_start(int threads, int malleable)
{
    if (threads < 0 || threads > 1024)
        return EINVAL;
    team_malleable = malleable;
    team_threads = threads ? threads : team_cpus_available();
    if (malleable) {
        int err = nth_cpus_request(team_threads);
        if (err)
            return err;
    }
    started = 1;
    return 0;
}

int team_size(void)
{
    if (!team_malleable)
        return team_threads;
    int n = nth_cpus_assigned();
    return n > 0 ? n : 1;
}

int team_run(int n, team_fn fn, void *arg)
{
    if (!started || n < 0)
        return EINVAL;
    if (n == 0 && !team_malleable)
        n = team_threads;
    return nth_parallel(n, fn, arg);
}

void team_barrier(void) { nth_team_barrier(); }

void team_stop(void) { started = 0; }
