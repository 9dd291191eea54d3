/* team_openmp.c -- the OpenMP backend (gcc's libgomp): a region is
 * `#pragma omp parallel num_threads(n)`, the team barrier an orphaned
 * `#pragma omp barrier`, which binds to the innermost enclosing region
 * (OpenMP 4.5, section 2.17). libgomp keeps its threads between regions and
 * spins for a while (GOMP_SPINCOUNT) before sleeping, as a user would get. */
#include "team.h"

#include <errno.h>
#include <omp.h>

static int team_threads;

const char *team_impl(void) { return "openmp"; }

int team_start(int threads, int malleable)
{
    if (team_threads || threads < 0 || threads > 4096 || malleable)
        return EINVAL;
    team_threads = threads ? threads : team_cpus_available();
    /* A fixed team, as the issue asks of this build: no dynamic adjustment. */
    omp_set_dynamic(0);
    return 0;
}

int team_size(void) { return team_threads; }

int team_run(int n, team_fn fn, void *arg)
{
    /* Never more than team_start() was given: the same contract as the
     * pthreads pool, so that the kernels cannot tell the builds apart. */
    if (team_threads == 0 || n < 0 || n > team_threads)
        return EINVAL;
    if (n == 0)
        n = team_threads;
#pragma omp parallel num_threads(n)
    fn(omp_get_thread_num(), omp_get_num_threads(), arg);
    return 0;
}

void team_barrier(void)
{
#pragma omp barrier
}

void team_stop(void) { team_threads = 0; }
