/*
 * daemon.h -- the cpumgr daemon: owns CPUs, shares them among the
 * applications attached to its segment.
 */
#ifndef CPUMGR_DAEMON_H
#define CPUMGR_DAEMON_H

#include <sys/types.h>

#include "policy.h"

struct cm_opts {
    const char *name;        /* segment name, "/..." */
    enum cm_policy policy;
    unsigned period_ms;      /* rebalance period, ms (10) */
    unsigned quantum_ms;     /* rotation quantum, ms (100) */
    unsigned enforce_us;     /* --enforce: move a client's threads still
                                running on a CPU taken from it this long
                                after, µs (2000); 0 never */
    unsigned exit_grace_ms;  /* --exit-grace: CPUs of an application that
                                exits go only to applications holding none
                                for this long, ms (0: at once, by hand-off) */
    int share;               /* --share */
    gid_t gid;               /* --group, or (gid_t)-1 */
    const char *cpus;        /* --cpus list, or NULL */
    const char *accounting;  /* --accounting FILE, or NULL */
    const char *trace;       /* --trace FILE (grants, nthlib binary trace), or NULL */
    int foreground;
    int ready_fd;            /* written one byte once ready, or -1 */
};

/* Run the daemon until SIGTERM/SIGINT or `cpumgr stop`. Returns the exit
 * status (0 clean stop, 1 setup failure: reason already on stderr). */
int cm_daemon_run(const struct cm_opts *o);

#endif
