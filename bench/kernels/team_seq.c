/* team_seq.c -- the sequential backend: every region is a team of one, run
 * by the caller. It gives the kernels' sequential reference times. */
#include "team.h"

#include <errno.h>

static int started;

const char *team_impl(void) { return "seq"; }

int team_start(int threads, int malleable)
{
    if (threads < 0 || threads > 1 || malleable)
        return EINVAL;
    started = 1;
    return 0;
}

int team_size(void) { return 1; }

int team_run(int n, team_fn fn, void *arg)
{
    if (!started || n < 0 || n > 1)
        return EINVAL;
    fn(0, 1, arg);
    return 0;
}

void team_barrier(void) {}

void team_stop(void) { started = 0; }
