/* team_nth.c -- the libnth backend of the team layer (issue 6).
 *
 * Regions are nth_parallel() (include/nth.h, "Parallel regions"): members
 * are nano-threads spread one per enabled VP, the caller is member 0, and
 * team_barrier() is nth_team_barrier().
 *
 * Fixed team (nth-fixed, --threads N): every region gets N nano-threads.
 * Malleable (nth-malleable, --malleable): the application requests N CPUs
 * and every region is started with n = 0, so nth_parallel() sizes the team
 * from nth_cpus_assigned() at that region's entry, as JOMP applications on
 * JNE followed the CPUs their manager gave them. The kernels derive their
 * partitions from the n each region is handed (team.h), so a team that
 * shrinks or grows between two regions computes the same result.
 */
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
    /* Start the runtime here, as the glibc build makes its pool here and
     * libgomp starts at load: lazily, at the first region, the first run's
     * timer counted the topology load and the VPs' creation (lu 1000: the
     * first run of a process ~10 ms slower than the next ones). */
    int e = nth_init(NULL);
    if (e && e != EBUSY)
        return e;
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
