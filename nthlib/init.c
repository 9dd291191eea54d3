/*
 * init.c -- starting the runtime, explicitly (nth_init) or lazily on the
 * first nthlib call. The starting kernel thread becomes VP 0 and the code
 * that called becomes a nano-thread (main's, id 1) that keeps running on the
 * process stack; returning from main or calling exit() ends the process as
 * usual, whatever the other VPs are doing.
 */
#include "internal.h"
#include "cpumgr_client.h"
#include "trace_core.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nth_runtime nth_rt;
struct nth_thread nth_main_thread;

static int start(const nth_config_t *cfg)
{
    nth_rt.cfg = *cfg;
    nth_rt.spin_ns = (int64_t)cfg->spin_us * 1000;
    nth_rt.team_spin_ns = (int64_t)cfg->team_spin_us * 1000;
    nth_rt.next_id = 2;
    nth_rt.live = 1;
    nth_rq_init(&nth_rt.grq);

    struct nth_thread *m = &nth_main_thread;
    m->magic = NTH_MAGIC_LIVE;
    m->state = NTH_ST_RUNNING;
    m->on_cpu = 1;
    m->jstate = NTH_J_JOINABLE;
    m->id = 1;
    m->home_vp = NTH_VP_ANY;
    m->move_to = 0;
    m->flags = NTH_TF_MAIN;
    strcpy(m->name, "main");
#ifdef NTH_TSAN
    m->tsan_fiber = __tsan_get_current_fiber();
#endif
    nth_trace_rt_start(cfg);
    /* A grant applied before the trace started (the cpumgr API called
     * before nth_init) would otherwise be missing from it. */
    nth_cpumgr_client_trace_start();
    /* Before any nano-thread can wait inside a constructor: not found,
     * waits there switch as before (the README's limit). */
    (void)nth_ldso_locks_find();
    int r = nth_overflow_install();
    if (r)
        return r;
    /* The cpumgr client reads the process affinity mask: before VP 0 binds
     * itself, and before new VPs inherit that binding. It attaches only in
     * nth_cpumgr_rt_start(), once the VPs follow the assignment. */
    nth_cpumgr_client_init_held(cfg->cpumgr);
    /* Attached already (nth_cpus_request() before nth_init()), the daemon
     * may have narrowed this thread's binding (--enforce); the VPs and the
     * topology are taken from it just below. */
    nth_cpumgr_client_rebind_self();
    nth_cpumgr_client_test_enforce();
    /* With a daemon running, the VPs other than VP 0 wait for its first
     * answer unbound (vp.c, lazy birth): a bound birth cost a migration
     * whenever the kernel started the thread elsewhere, also for a VP that
     * never got a CPU (bench/RESULTS.md "lazy"). */
    r = nth_vps_start(cfg, nth_cpumgr_client_daemon_up());
    if (r)
        return r;
    /* Done at load time already (fork.c); a no-op then, kept for a
     * start from another library's constructor that ran before ours. */
    nth_fork_install();
    __atomic_store_n(&nth_rt.started, 1, __ATOMIC_RELEASE);
    /* After `started`: the assignment callback restricts the running VPs. */
    nth_cpumgr_rt_start(cfg);
    nth_watchdog_start(cfg);   /* without it (no thread): stalls are not rescued */
    return 0;
}

int nth_init(const nth_config_t *cfg)
{
    nth_config_t c;
    if (cfg) {
        c = *cfg;
    } else {
        nth_config_from_env(&c);   /* bad variables: told on stderr, default kept */
    }
    /* Running already: EBUSY whatever the config says (nth.h). */
    if (__atomic_load_n(&nth_rt.starting, __ATOMIC_ACQUIRE))
        return EBUSY;
    if (nth_config_check(&c)) {
        nth_config_say_bad(&c);
        return EINVAL;
    }
    int zero = 0;
    if (!__atomic_compare_exchange_n(&nth_rt.starting, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return EBUSY;
    int r = start(&c);
    if (r)
        __atomic_store_n(&nth_rt.starting, 0, __ATOMIC_RELEASE);
    return r;
}

void nth_ensure_started(void)
{
    if (__builtin_expect(nth_started(), 1))
        return;
    int zero = 0;
    if (__atomic_compare_exchange_n(&nth_rt.starting, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        /* The caller asked for something else (under the pthread shim, any
         * pthread call or sched_yield): a start that succeeds leaves errno
         * as it was, though reading /proc, /sys and the cgroup files sets
         * ENOENT on the way (POSIX errno(3p): only a failing call sets it). */
        int saved = errno;
        nth_config_t c;
        nth_config_from_env(&c);
        if (start(&c) != 0) {
            /* Lazy start has no caller to tell: say it once and stop, since
             * every API call from here on would have no runtime under it. */
            fprintf(stderr, "nthlib: cannot start the runtime (out of memory or kernel threads)\n");
            abort();
        }
        errno = saved;
        return;
    }
    while (!nth_started())
        nth_cpu_relax();
}

int nth_num_vps(void)
{
    nth_ensure_started();
    return nth_rt.nvps;
}

int nth_vp_id(void)
{
    struct nth_vp *vp = nth_vp_self();
    /* Inside nth_blocking_enter/leave the caller holds no VP: a stand-in
     * may be running the VP's other nano-threads meanwhile. */
    return vp && !__atomic_load_n(&vp->blocking, __ATOMIC_RELAXED) ? vp->id : -1;
}
