/*
 * fork.c -- the child of fork(): a fresh one-VP runtime running the forking
 * nano-thread.
 *
 * POSIX fork(2p): "the child process shall be created with a single
 * thread ... a replica of the calling thread". In a runtime's terms the
 * child has one kernel thread, the one that called fork(), running one
 * nano-thread, the one that called fork(); every other nano-thread, VP,
 * stand-in and helper thread of the parent is gone, and whatever lock one
 * of their kernel threads held stays held. nth_fork_child, a pthread_atfork
 * child handler installed when the library is loaded (libc's
 * pthread_atfork: the shim leaves it to libc, so it runs the same under
 * the shim), builds
 * a one-VP runtime around the survivor:
 *
 * - a new VP 0, run by the forking kernel thread, whose idle context gets
 *   a fresh stack; the forking nano-thread is its running one, whichever
 *   VP (or watchdog stand-in) it ran on in the parent;
 * - empty ready queues, timer queues and idle/park counts; the parent's
 *   nano-threads, VPs and queues are left as they are in memory (never
 *   freed: a dead kernel thread may have been in the middle of using them,
 *   and nothing refers to them any more), which costs the child the
 *   parent's stacks in its copy of the address space and nothing else;
 * - every runtime lock a dead kernel thread may have held is reinitialised
 *   (each part's *_fork_child in internal.h), never taken;
 * - the VP runs unbound, on the process's CPU mask (restore_mask_in_child
 *   in vp.c, registered before us, puts it back), so a child that execs
 *   keeps the whole mask;
 * - the watchdog starts again (monitor and backstop threads);
 * - the cpumgr client runs alone, as with no daemon (DESIGN invariant 8):
 *   the parent's slot stays the parent's; the child never writes it;
 * - tracing is off in the child: its records would go to the parent's
 *   file (trace_writer.c already refuses to write it from a child).
 *
 * A fork() made by a kernel thread that runs no nano-thread while the
 * runtime runs (a foreign thread: under the pthread shim a C11 thrd_create
 * or timer_create(SIGEV_THREAD) thread, which glibc starts without the
 * shim; beside libnth, a plain pthread) gets the same child: the forking
 * kernel thread becomes VP 0 and what it runs becomes a nano-thread on a
 * descriptor of its own (adopt_foreign), as the thread that starts the
 * runtime becomes VP 0 and main's nano-thread. Before, that child kept the
 * parent's runtime state with no VP alive: its first join hung.
 */
#include "internal.h"
#include "cpumgr_client.h"
#include "libc_real.h"
#include "trace_hooks.h"
#include "wait_queue.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A new VP 0 for the calling kernel thread, now running t; old is the VP
 * (or stand-in shell) t ran on, NULL for a foreign kernel thread. NULL
 * when out of memory. */
static struct nth_vp *new_vp0(struct nth_vp *old, struct nth_thread *t)
{
    struct nth_vp *vp = aligned_alloc(NTH_CACHELINE, sizeof *vp);
    if (!vp)
        return NULL;
    memset(vp, 0, sizeof *vp);
    vp->id = 0;
    nth_rq_init(&vp->rq);
    /* Nominal (nth_vps_set_allowed matches VPs to CPUs by it); bound only
     * if a rebind is asked for. */
    vp->cpu = old && old->id >= 0 ? old->cpu : sched_getcpu();
    vp->idle.flags = NTH_TF_IDLE;
    if (nth_vp_idle_on_own_stack(vp) != 0) {
        free(vp);
        return NULL;
    }
    vp->current = t;
    if (old) {
        vp->errno_loc = old->errno_loc;
        /* The TCB the idle context runs with (its kernel thread's own, or
         * VP 0's allocated one) and the one loaded now, t's. */
        vp->tp_own = old->tp_own;
        vp->tp_loaded = old->tp_loaded;
        vp->hook_seen = old->hook_seen;
        vp->altstack = old->id >= 0 ? old->altstack : NULL;
    } else {
        /* nth_vp_self_set and nth_tp_fork_adopt fill in the TCBs; the
         * switch hook, if any, runs at the idle context's first switch. */
        vp->errno_loc = &errno;
        vp->tp_own = vp->tp_loaded = nth_tp_current();
        stack_t ss;
        if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_DISABLE))
            (void)nth_overflow_vp_altstack(vp);   /* else the program's own */
    }
    vp->tid = (int)syscall(SYS_gettid);
    return vp;
}

/* libc's stack of the calling kernel thread (its pthread_getattr_np,
 * never the shim's): 0 and *lo, *size, or -1. */
static int own_stack(char **lo, size_t *size)
{
    pthread_t (*self)(void) = (pthread_t (*)(void))nth_libc_sym("pthread_self");
    int (*getattr)(pthread_t, pthread_attr_t *) =
        (int (*)(pthread_t, pthread_attr_t *))nth_libc_sym("pthread_getattr_np");
    int (*getstack)(const pthread_attr_t *, void **, size_t *) =
        (int (*)(const pthread_attr_t *, void **, size_t *))nth_libc_sym("pthread_attr_getstack");
    int (*destroy)(pthread_attr_t *) = (int (*)(pthread_attr_t *))nth_libc_sym("pthread_attr_destroy");
    pthread_attr_t a;
    void *addr;
    if (!self || !getattr || !getstack || !destroy || getattr(self(), &a) != 0)
        return -1;
    int r = getstack(&a, &addr, size);
    destroy(&a);
    *lo = addr;
    return r == 0 ? 0 : -1;
}

/* The nano-thread a foreign kernel thread becomes in the child: running,
 * joinable (by nobody: its parent-side joiner, if any, is not a
 * nano-thread of the child), on its kernel thread's stack like one made
 * with nth_attr_setstack (the unit's own stack stays unused until the
 * unit is reused). NULL when out of memory. After nth_stack_fork_child. */
static struct nth_thread *adopt_foreign(void)
{
    struct nth_thread *t = nth_unit_alloc(NULL, NTH_STACK_MIN, nth_page_size());
    if (!t)
        return NULL;
    t->state = NTH_ST_RUNNING;
    t->on_cpu = 1;
    t->jstate = NTH_J_JOINABLE;
    t->fn = NULL;
    t->arg = NULL;
    t->result = NULL;
    t->flags = 0;
    char *lo;
    size_t size;
    if (own_stack(&lo, &size) == 0) {
        t->stack_lo = lo;
        t->stack_size = size;
        t->flags = NTH_TF_USTACK;
    }
    t->specific = NULL;
    t->trace_obj = 0;
    t->trace_kind = 0;
    for (unsigned i = 0; i < sizeof t->user / sizeof t->user[0]; i++)
        t->user[i] = NULL;
    t->name[0] = '\0';
#ifdef NTH_TSAN
    t->tsan_fiber = __tsan_get_current_fiber();
#endif
    return t;
}

static void nth_fork_child(void)
{
    struct nth_vp *old = nth_vp_self();
    struct nth_thread *t = old ? old->current : NULL;
    if (old ? !t || (t->flags & NTH_TF_IDLE) : !nth_started())
        return;   /* no runtime yet (the child's first call starts one) */
    __atomic_store_n(&nth_trace_on, 0, __ATOMIC_RELEASE);
    /* First: the program's own child handlers (after ours) may unlock a
     * mutex the parent's threads queued on (pthread_atfork's lock/unlock
     * pattern); those waiters must already be stale. */
    nth_wait_gen_fork_child();
    nth_stack_fork_child();
    nth_sched_fork_child();
    nth_exit_hooks_fork_child();
    nth_keys_fork_child();
    if (!old)
        t = adopt_foreign();
    struct nth_vp *vp = t ? new_vp0(old, t) : NULL;
    struct nth_vp **vps = malloc(sizeof *vps);
    if (!vp || !vps) {
        static const char msg[] = "nthlib: no memory to restart the runtime in a fork()ed child\n";
        (void)!write(2, msg, sizeof msg - 1);
        _exit(127);
    }
    vps[0] = vp;

    /* The survivor: running on the new VP, joined by nobody (a joiner
     * waiting in the parent, also one whose call it runs in, did not
     * survive; the general exit path then never returns into its frame). */
    t->vp = vp;
    t->on_cpu = 1;
    t->move_to = 0;
    t->move_until = 0;
    t->home_vp = NTH_VP_ANY;
    t->flags &= ~(unsigned)NTH_TF_CALLED;
    uintptr_t j = __atomic_load_n(&t->jstate, __ATOMIC_RELAXED);
    if (j != NTH_J_DETACHED)
        __atomic_store_n(&t->jstate, NTH_J_JOINABLE, __ATOMIC_RELAXED);

    nth_rt.vps = vps;
    nth_rt.nvps = 1;
    nth_rq_init(&nth_rt.grq);
    nth_rt.nspinning = 0;
    nth_rt.nparked = 0;
    nth_rt.vps_lock = (nth_futex_lock_t)NTH_FUTEX_LOCK_INIT;
    /* The live count is live + the VPs' created - exited: t alone. If t
     * is not main, main is gone, so t's exit (the last thread's) ends the
     * child with status 0, as pthread_exit from a last thread does. */
    nth_rt.live = 1;
    nth_rt.exiting = 0;
    nth_rt.main_exited = !(t->flags & NTH_TF_MAIN);
    nth_vp_self_set(vp);
    if (old) {
        /* nth_vp_self_set took the loaded TCB for the VP's own; keep the
         * idle context's (new_vp0). */
        vp->tp_own = old->tp_own;
        vp->errno_loc = old->errno_loc;
    } else {
        nth_tp_fork_adopt(vp, t);
        t->id = nth_new_id(vp);
        __atomic_store_n(&t->magic, NTH_MAGIC_LIVE, __ATOMIC_RELEASE);
    }

    nth_next_local_plain_init(1);
    nth_timers_fork_child(vp);
    nth_cpumgr_client_fork_child();
    nth_cpumgr_rt_fork_child();
    nth_watchdog_fork_child();
}

void nth_fork_install(void)
{
    static int installed;
    if (!__atomic_exchange_n(&installed, 1, __ATOMIC_RELAXED))
        (void)pthread_atfork(NULL, NULL, nth_fork_child);
}

/* Also at load time: child handlers run in registration order, and a
 * program's own (under the shim, any pthread_atfork made before the first
 * call that starts the runtime) may use threads and locks, so ours must
 * come first. Until the runtime runs it returns at once. */
__attribute__((constructor)) static void fork_install_early(void)
{
    nth_fork_install();
}
