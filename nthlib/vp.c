/*
 * vp.c -- virtual processors: one kernel thread per allowed CPU, bound to
 * it with hwloc.
 *
 * The topology is restricted to the process's CPU binding (taskset, cgroup
 * cpuset, Slurm), so no VP is ever placed on a CPU the process may not use;
 * the count is then capped by the cgroup v2 CPU quota (cpu.max) and may be
 * overridden by NTH_VPS. VP kernel threads come from libc's real
 * pthread_create (libc_real.h): the pthread shim interposes pthread_create,
 * and a VP must not become a nano-thread of itself.
 */
#include "internal.h"
#include "cpumgr_client.h"
#include "cpumgr_probe.h"
#include "trace_core.h"
#include "libc_real.h"
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The CPU mask the process had before VP 0 (its initial kernel thread)
 * was bound to one CPU. A child made by fork() is a copy of the forking VP's
 * kernel thread and would keep that VP's single CPU through exec: a
 * `make -j` or `sh -c 'xz -T4'` started from a program on nthlib (or under
 * the pthread shim) would run on one CPU. The child handler puts the
 * process's mask back, with sched_setaffinity, which is async-signal-safe
 * (the mask is converted from hwloc's bitmap at start, not in the child). */
static cpu_set_t *initial_mask;
static size_t initial_mask_size;

static void restore_mask_in_child(void)
{
    if (initial_mask)
        (void)sched_setaffinity(0, initial_mask_size, initial_mask);
}

static void save_initial_mask(void)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set)
        return;
    int last = hwloc_bitmap_last(hwloc_topology_get_complete_cpuset(nth_rt.topo));
    int ncpus = last >= 0 ? last + 1 : CPU_SETSIZE;
    if (hwloc_get_cpubind(nth_rt.topo, set, HWLOC_CPUBIND_THREAD) == 0 && !hwloc_bitmap_iszero(set)) {
        size_t sz = CPU_ALLOC_SIZE(ncpus);
        cpu_set_t *m = CPU_ALLOC(ncpus);
        if (m) {
            CPU_ZERO_S(sz, m);
            int i;
            hwloc_bitmap_foreach_begin(i, set)
                if (i < ncpus)
                    CPU_SET_S((size_t)i, sz, m);
            hwloc_bitmap_foreach_end();
            initial_mask = m;
            initial_mask_size = sz;
            (void)pthread_atfork(NULL, NULL, restore_mask_in_child);
        }
    }
    hwloc_bitmap_free(set);
}


/* Gives vp an idle context on a stack of its own (a 64 KiB unit), for a
 * VP whose kernel thread's stack belongs to a nano-thread (VP 0 at start,
 * VP 0 of a fork child). 0, or ENOMEM. */
int nth_vp_idle_on_own_stack(struct nth_vp *vp)
{
    struct nth_thread *u = nth_unit_alloc(NULL, 64 * 1024, nth_page_size());
    if (!u)
        return ENOMEM;
    vp->idle.stack_lo = u->stack_lo;
    vp->idle.stack_size = u->stack_size;
    vp->idle.asan_bottom = u->stack_lo;
    vp->idle.asan_size = u->stack_size;
#ifdef NTH_TSAN
    vp->idle.tsan_fiber = __tsan_create_fiber(0);
#endif
    nth_ctx_make(&vp->idle.ctx, u->stack_lo, u->stack_size, nth_idle_entry, vp);
    return 0;
}

void nth_vp_bind(struct nth_vp *vp)
{
    /* vp->cpu is rewritten by the cpumgr watcher (enable) while the VP
     * runs: one atomic read, used for both the test and the binding. */
    int cpu = __atomic_load_n(&vp->cpu, __ATOMIC_RELAXED);
    if (!nth_rt.cfg.bind || cpu < 0)
        return;
    /* Bound there by us and running there: nobody changed the mask since
     * (bounded reclaim clears bound_cpu1 before it asks for a rebind; the
     * daemon's enforcement moves a thread off a CPU, so it would not run
     * there now). */
    if (__atomic_load_n(&vp->bound_cpu1, __ATOMIC_ACQUIRE) == cpu + 1 && sched_getcpu() == cpu)
        return;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set)
        return;
    hwloc_bitmap_only(set, (unsigned)cpu);
    /* Best effort: a failed binding leaves the VP running unbound, which is
     * slower but correct (e.g. in a sandbox that forbids sched_setaffinity). */
    int rc = hwloc_set_cpubind(nth_rt.topo, set, HWLOC_CPUBIND_THREAD);
    if (__builtin_expect(__atomic_load_n(&nth_cpumgr_probe.on, __ATOMIC_RELAXED), 0))
        __atomic_add_fetch(&nth_cpumgr_probe.bind_syscall, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&vp->bound_cpu1, rc == 0 ? cpu + 1 : 0, __ATOMIC_RELEASE);
    hwloc_bitmap_free(set);
}

/* A VP's kernel thread is born with every signal blocked (start_vp_thread)
 * and opens only here. Under load a new kernel thread may wait tens of
 * milliseconds for its first run; born with its creator's mask, it took
 * process-directed signals meanwhile, also once the pthread shim had
 * installed its switch hook and blocked them in every nano-thread: a
 * SIGRTMIN that every thread blocked for a sigwait killed posix-signals
 * about 1 run in 5 at load 20 (the VP was runnable, never run since its
 * creation, SigBlk 0). With a switch hook the hook sets the mask (the idle
 * context's before it parks, each nano-thread's when it runs); without
 * one the VP takes its creator's mask, as before. The hook is loaded
 * after the mask is opened and a fence: nth_switch_hook_set stores the
 * hook, then wakes the VPs; one that opened before the store calls it
 * here, or sees it in its idle loop after that wake-up. */
static void vp_signal_mask(struct nth_vp *vp)
{
    nth_switch_hook_fn h = __atomic_load_n(&nth_switch_hook, __ATOMIC_SEQ_CST);
    if (!h) {
        sigset_t m;
        sigemptyset(&m);
        memcpy(&m, &vp->birth_sigmask, sizeof vp->birth_sigmask);
        syscall(SYS_rt_sigprocmask, SIG_SETMASK, &m, NULL, (size_t)(_NSIG / 8));
        nth_full_fence();
        h = __atomic_load_n(&nth_switch_hook, __ATOMIC_SEQ_CST);
    }
    if (h) {
        h(NULL);
        __atomic_store_n(&vp->hook_seen, h, __ATOMIC_RELEASE);
    }
}

static void *vp_main(void *arg)
{
    struct nth_vp *vp = arg;
    nth_vp_self_set(vp);
    __atomic_store_n(&vp->tid, (int)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
    /* Named for top -H, perf and /proc/PID/task/TID/comm. */
    char name[16];
    snprintf(name, sizeof name, "nth-vp%d", vp->id);
    prctl(PR_SET_NAME, name, 0, 0, 0);
    nth_trace_rt_vp(vp);
    /* Born lazy (no CPU yet): not bound, it parks in the idle loop at once;
     * enable() binds it to the CPU it is given. tid is stored (seq_cst)
     * before lazy is read: enable() clears lazy before it reads tid, so one
     * of the two binds it (both may; the second is a no-op). */
    if (!__atomic_load_n(&vp->lazy, __ATOMIC_SEQ_CST))
        nth_vp_bind(vp);
    nth_overflow_vp_altstack(vp);
    vp->idle.flags = NTH_TF_IDLE;
    vp->idle.on_cpu = 1;
    /* The stall monitor may already be reading it (as nth_sched_switch). */
    __atomic_store_n(&vp->current, &vp->idle, __ATOMIC_RELAXED);
#ifdef NTH_TSAN
    vp->idle.tsan_fiber = __tsan_get_current_fiber();
#endif
    vp_signal_mask(vp);
    nth_idle_loop(vp);
}

/* The kernel thread is created already bound to its VP's CPU, so it never
 * runs, even once, on another CPU and is not migrated by its own binding.
 * A refused attribute (a sandbox) falls back to an unbound start; vp_main
 * then binds as before. */
static int start_vp_thread_inner(struct nth_vp *vp);

/* glibc gives a new thread its creator's mask as it is at the call: block
 * every signal around it (SIGCANCEL too, as nth_helper_thread_create
 * does; not SIGSETXID, NTH_BLOCK_ALL_BUT_SETXID), and leave the creator's
 * for vp_main. */
static int start_vp_thread(struct nth_vp *vp)
{
    sigset_t all, old;
    uint64_t every = NTH_BLOCK_ALL_BUT_SETXID;
    sigemptyset(&all);
    memcpy(&all, &every, sizeof every);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, (size_t)(_NSIG / 8));
    memcpy(&vp->birth_sigmask, &old, sizeof vp->birth_sigmask);
    int r = start_vp_thread_inner(vp);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, (size_t)(_NSIG / 8));
    return r;
}

static int start_vp_thread_inner(struct nth_vp *vp)
{
    /* Created already bound, so the kernel never starts it elsewhere (one
     * migration less per VP). The attribute calls are libc's too: under the
     * shim, pthread_attr_* would be the shim's, and its attribute layout is
     * not what libc's pthread_create reads. */
    typedef int (*attr_fn)(pthread_attr_t *);
    typedef int (*aff_fn)(pthread_attr_t *, size_t, const cpu_set_t *);
    /* Looked up once, at the runtime's start: a VP added later (a CPU
     * manager's grant) must not call dlsym, whose lock a dlopen in
     * progress on another kernel thread may hold. */
    static attr_fn init_fn, destroy_fn;
    static aff_fn aff;
    static int looked_up;
    if (!__atomic_load_n(&looked_up, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&init_fn, (attr_fn)nth_libc_sym("pthread_attr_init"), __ATOMIC_RELAXED);
        __atomic_store_n(&destroy_fn, (attr_fn)nth_libc_sym("pthread_attr_destroy"), __ATOMIC_RELAXED);
        __atomic_store_n(&aff, (aff_fn)nth_libc_sym("pthread_attr_setaffinity_np"), __ATOMIC_RELAXED);
        (void)nth_libc_pthread_create();
        __atomic_store_n(&looked_up, 1, __ATOMIC_RELEASE);
    }
    attr_fn a_init = __atomic_load_n(&init_fn, __ATOMIC_RELAXED);
    attr_fn a_destroy = __atomic_load_n(&destroy_fn, __ATOMIC_RELAXED);
    aff_fn a_aff = __atomic_load_n(&aff, __ATOMIC_RELAXED);
    /* A lazy VP is not bound at birth: it may never get a CPU (an
     * overloaded mix), and the affinity attribute is applied by glibc after
     * the kernel placed the thread on a CPU of its creator's mask, one
     * migration whenever that was another (bench/RESULTS.md "mig2"). */
    if (nth_rt.cfg.bind && !vp->lazy && vp->cpu >= 0 && vp->cpu < CPU_SETSIZE && a_init && a_destroy &&
        a_aff) {
        pthread_attr_t attr;
        if (a_init(&attr) == 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET((unsigned)vp->cpu, &set);
            int r = a_aff(&attr, sizeof set, &set);
            if (r == 0)
                r = nth_libc_pthread_create()(&vp->kthread, &attr, vp_main, vp);
            a_destroy(&attr);
            if (r == 0)
                return 0;
        }
    }
    return nth_libc_pthread_create()(&vp->kthread, NULL, vp_main, vp);
}

/* The topology of the CPUs we may use: the calling thread's binding, or,
 * when the application attached to a cpumgr before nth_init(), the process
 * mask the client read then (nth_cpumgr_client_early_mask: the daemon may
 * narrow our binding to its grant of the moment, --enforce, and then
 * grants from the whole mask again). */
static int load_topology(void)
{
    hwloc_topology_t t;
    hwloc_bitmap_t early = hwloc_bitmap_alloc();
    int have = early && nth_cpumgr_client_early_mask(early);
    unsigned long flags = HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM;
    if (!have)
        flags |= HWLOC_TOPOLOGY_FLAG_RESTRICT_TO_CPUBINDING;
    if (nth_topology_load(&t, flags) != 0) {
        hwloc_bitmap_free(early);
        return EAGAIN;
    }
    /* As the flag does (hwloc restricts to the binding it reads); kept
     * unrestricted if refused (a mask outside the topology). */
    if (have)
        (void)hwloc_topology_restrict(t, early, 0);
    hwloc_bitmap_free(early);
    nth_rt.topo = t;
    return 0;
}

/* "More VPs than CPUs", once per process, unless nthrun said it already
 * for the program it runs: it leaves NTH_VPS_TOLD=VPS/CPUS in the
 * environment, and every process under it (a shell script, make, a pyenv
 * shim: each threaded process starts its own runtime) with the same
 * figures stays quiet. A new-user trial got the line 14 times from one
 * `nthrun --vps 2 -- python3 ...` on 1 CPU. */
static void oversubscribed_notice(int vps, int npus)
{
    char told[32];
    snprintf(told, sizeof told, "%d/%d", vps, npus);
    const char *was = getenv("NTH_VPS_TOLD");
    if (was && !strcmp(was, told))
        return;
    /* Named for where the count came from: NTH_VPS, or the program's own
     * nth_init() config (fresh15: NTH_VPS was blamed when it was unset). */
    const char *env = getenv("NTH_VPS");
    char *end;
    long ev = env && *env ? strtol(env, &end, 10) : -1;
    int from_env = env && *env && !*end && ev == vps;
    fprintf(stderr, "nthlib: %s=%d is more than the %d CPU%s this process may use; "
            "VPs will share CPUs\n", from_env ? "NTH_VPS" : "nth_config_t.vps", vps, npus,
            npus == 1 ? "" : "s");
}

int nth_vps_start(const nth_config_t *cfg, int lazy)
{
    int r = load_topology();
    if (r)
        return r;
    int npus = hwloc_get_nbobjs_by_type(nth_rt.topo, HWLOC_OBJ_PU);
    if (npus < 1)
        npus = 1;
    nth_rt.npus = npus;
    int n = npus;
    int cap = nth_cgroup_cpu_cap("/proc/self/cgroup", "/sys/fs/cgroup");
    if (cap > 0 && cap < n)
        n = cap;
    if (cfg->vps) {
        n = (int)cfg->vps;
        if (n > npus)
            oversubscribed_notice(n, npus);
    }
    struct nth_vp **vps = calloc((size_t)n, sizeof(*vps));
    hwloc_obj_t *pus = calloc((size_t)n, sizeof(*pus));
    if (!vps || !pus)
        goto nomem;
    for (int i = 0; i < n; i++) {
        vps[i] = aligned_alloc(NTH_CACHELINE, sizeof(struct nth_vp));
        if (!vps[i])
            goto nomem;
        memset(vps[i], 0, sizeof(struct nth_vp));
        struct nth_vp *vp = vps[i];
        vp->id = i;
        nth_rq_init(&vp->rq);
        pus[i] = hwloc_get_obj_by_type(nth_rt.topo, HWLOC_OBJ_PU, (unsigned)(i % npus));
        vp->cpu = pus[i] ? (int)pus[i]->os_index : -1;
        vp->idle.flags = NTH_TF_IDLE;
    }
    /* VP 0 is the calling kernel thread: give it the CPU it is running on,
     * so binding it does not migrate it (a migration per process start is
     * what a short-lived malleable process pays most often). */
    int here = sched_getcpu();
    for (int j = 0; here >= 0 && j < npus; j++) {
        hwloc_obj_t pu = hwloc_get_obj_by_type(nth_rt.topo, HWLOC_OBJ_PU, (unsigned)j);
        if (!pu || (int)pu->os_index != here)
            continue;
        int k = 0;
        while (k < n && pus[k] != pu)
            k++;
        if (k < n)
            pus[k] = pus[0];
        pus[0] = pu;
        for (int i = 0; i < n; i++)
            vps[i]->cpu = pus[i] ? (int)pus[i]->os_index : -1;
        break;
    }
    if (nth_steal_order(vps, n, nth_rt.topo, pus) != 0)
        goto nomem;
    free(pus);
    pus = NULL;
    nth_rt.vps = vps;
    nth_rt.nvps = n;

    /* VP 0 is the calling kernel thread; its idle context needs a stack of
     * its own because the caller's stack now belongs to a nano-thread. */
    struct nth_vp *vp0 = vps[0];
    if (nth_vp_idle_on_own_stack(vp0) != 0)
        goto nomem;
    vp0->current = &nth_main_thread;
    nth_main_thread.vp = vp0;
    nth_vp_self_set(vp0);
    if (__atomic_load_n(&nth_tp_on, __ATOMIC_ACQUIRE))
        nth_tp_vp0(vp0);
    __atomic_store_n(&vp0->tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
    if (!initial_mask)
        save_initial_mask();
    /* The other VPs' kernel threads first, while this one is not yet bound
     * to its single CPU: a new thread inherits its creator's mask, and the
     * kernel places it (fork balancing) on the idlest CPU of that mask; from
     * a creator bound to one CPU it would start there and then migrate to
     * its own (perf record -e sched:sched_migrate_task: one migration per
     * VP per process start). */
    for (int i = 1; i < n; i++) {
        /* Under a daemon, born without a CPU: the daemon's first answer
         * (nth_cpumgr_rt_start holds the standalone assignment back until
         * then) decides whether it runs at all. The kernel places the new
         * thread on the idlest CPU of our mask (fork balancing, no
         * migration), and it parks there at once, without spinning. */
        if (lazy) {
            vps[i]->lazy = 1;
            vps[i]->disabled = 1;
            vps[i]->rebind = 1;
        }
        if (start_vp_thread(vps[i]) != 0) {
            /* Carry on with the VPs we have; the others never run. */
            fprintf(stderr, "nthlib: could not start VP %d of %d; running with %d\n", i, n, i);
            nth_rt.nvps = i;
            break;
        }
    }
    nth_next_local_plain_init(nth_rt.nvps);
    nth_vp_bind(vp0);
    nth_overflow_vp_altstack(vp0);
    return 0;
nomem:
    if (vps)
        for (int i = 0; i < n; i++)
            free(vps[i]);
    free(vps);
    free(pus);
    hwloc_topology_destroy(nth_rt.topo);
    return EAGAIN;
}

uint64_t nth_vp_nstarted(int vp)
{
    if (vp < 0 || vp >= nth_rt.nvps)
        return 0;
    return __atomic_load_n(&nth_rt.vps[vp]->nstarted, __ATOMIC_RELAXED);
}

uint64_t nth_vp_ncalled(int vp)
{
    if (vp < 0 || vp >= nth_rt.nvps)
        return 0;
    return __atomic_load_n(&nth_rt.vps[vp]->ncalled, __ATOMIC_RELAXED);
}

/* First CPU of a lazy VP (vps_lock held): bind its kernel thread from
 * here, while it sleeps, so that the wake-up below places it on that CPU
 * (at most the one migration of a thread woken elsewhere than it last
 * ran), rather than waking it wherever the kernel likes and having it
 * move itself (the migration stopper). tid 0: not started yet; vp_main
 * then sees lazy cleared and binds itself. Raw system call: under the
 * pthread shim, sched_setaffinity is the shim's. */
static void bind_lazy(struct nth_vp *vp, int cpu)
{
    __atomic_store_n(&vp->lazy, 0, __ATOMIC_SEQ_CST);
    int tid = __atomic_load_n(&vp->tid, __ATOMIC_SEQ_CST);
    if (!nth_rt.cfg.bind || tid <= 0 || cpu < 0 || cpu >= CPU_SETSIZE || vp == nth_vp_self())
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((unsigned)cpu, &set);
    if (syscall(SYS_sched_setaffinity, tid, sizeof set, &set) == 0)
        __atomic_store_n(&vp->bound_cpu1, cpu + 1, __ATOMIC_RELEASE);
}

static void enable(struct nth_vp *vp, int cpu)
{
    /* Read unlocked by the VP itself (nth_vp_bind) and its stand-ins. */
    __atomic_store_n(&vp->cpu, cpu, __ATOMIC_RELAXED);
    if (__atomic_load_n(&vp->lazy, __ATOMIC_ACQUIRE))
        bind_lazy(vp, cpu);
    /* Rebind even to the same CPU: while it had none, its kernel thread may
     * have been moved (bounded reclaim, or the cpumgr daemon enforcing it). */
    __atomic_store_n(&vp->rebind, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&vp->disabled, 0, __ATOMIC_SEQ_CST);
    nth_cpumgr_stamp(&nth_cpumgr_probe.enable_ns);
    /* Enabled by its own kernel thread (a parked VP woken by the daemon
     * reads the grant itself): it is awake, and each futex wake is a system
     * call, 5-20 us on a virtual machine, on the path of the CPU's use. */
    if (vp == nth_vp_self())
        return;
    int zero = 0;
    if (__atomic_compare_exchange_n(&vp->park_word, &zero, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        nth_futex_wake(&vp->park_word, 1);
    const struct nth_park_ops *ops = __atomic_load_n(&nth_park_ops, __ATOMIC_ACQUIRE);
    if (ops)
        ops->wake(vp); /* it may sleep on the slot's word instead */
}

const struct nth_park_ops *nth_park_ops;

/* Bind vp's kernel thread to cpu alone: itself when vp is the caller's VP,
 * else from outside by tid (a raw system call: under the pthread shim,
 * sched_setaffinity is the shim's). 1 if bound. */
static int bind_to(struct nth_vp *vp, int cpu)
{
    if (vp == nth_vp_self()) {
        nth_vp_bind(vp);
        return __atomic_load_n(&vp->bound_cpu1, __ATOMIC_ACQUIRE) == cpu + 1;
    }
    int tid = __atomic_load_n(&vp->tid, __ATOMIC_SEQ_CST);
    if (tid <= 0 || cpu < 0 || cpu >= CPU_SETSIZE)
        return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((unsigned)cpu, &set);
    if (syscall(SYS_sched_setaffinity, tid, sizeof set, &set) != 0)
        return 0;
    __atomic_store_n(&vp->bound_cpu1, cpu + 1, __ATOMIC_RELEASE);
    return 1;
}

int nth_vp0_follow_grant(hwloc_const_bitmap_t cpus)
{
    if (!cpus || !nth_rt.cfg.bind || nth_rt.nvps < 1)
        return 0;
    nth_futex_lock(&nth_rt.vps_lock);
    struct nth_vp *v0 = nth_rt.vps[0];
    int c0 = v0->cpu, to = -1, moved = 0;
    struct nth_vp *lazy = NULL;
    /* Only a VP 0 that runs (main's start-up: not parked, maybe disabled
     * by an earlier answer that gave no CPU) and has no CPU of cpus: a
     * parked one costs nothing where it sleeps. */
    if (c0 < 0 || hwloc_bitmap_isset(cpus, (unsigned)c0) ||
        __atomic_load_n(&v0->parked, __ATOMIC_ACQUIRE))
        goto out;
    /* A granted CPU that no VP has run on: its VP, if any, is lazy (never
     * enabled, no nano-thread, its kernel thread asleep unbound), so its
     * CPU is only a name and VP 0 may take it. */
    for (int c = hwloc_bitmap_first(cpus); c >= 0 && to < 0; c = hwloc_bitmap_next(cpus, c)) {
        struct nth_vp *owner = NULL;
        for (int j = 1; j < nth_rt.nvps && !owner; j++)
            if (nth_rt.vps[j]->cpu == c)
                owner = nth_rt.vps[j];
        if (owner && !(__atomic_load_n(&owner->lazy, __ATOMIC_ACQUIRE) &&
                       __atomic_load_n(&owner->disabled, __ATOMIC_ACQUIRE)))
            continue;
        to = c;
        lazy = owner;
    }
    if (to < 0)
        goto out;
    /* The lazy VP takes VP 0's old CPU as its name: still disabled, it is
     * not enabled by the set that follows (that CPU is not in it). */
    if (lazy)
        __atomic_store_n(&lazy->cpu, c0, __ATOMIC_RELAXED);
    __atomic_store_n(&v0->cpu, to, __ATOMIC_RELAXED);
    /* Not bound (tid unknown, refused): its next scheduling point binds
     * it, or bounded reclaim moves it (a stale binding, cpumgr_rt.c). */
    if (!bind_to(v0, to))
        __atomic_store_n(&v0->rebind, 1, __ATOMIC_RELEASE);
    moved = 1;
out:
    nth_futex_unlock(&nth_rt.vps_lock);
    return moved;
}

void nth_unbind_self(void)
{
    if (initial_mask)
        (void)sched_setaffinity(0, initial_mask_size, initial_mask);
}

int nth_vps_set_allowed(hwloc_const_bitmap_t cpus)
{
    if (!cpus)
        return EINVAL;
    nth_ensure_started();
    int nallowed = 0, npus = nth_rt.npus;
    for (int i = 0; i < npus; i++) {
        hwloc_obj_t pu = hwloc_get_obj_by_type(nth_rt.topo, HWLOC_OBJ_PU, (unsigned)i);
        if (pu && hwloc_bitmap_isset(cpus, pu->os_index))
            nallowed++;
    }
    if (nallowed == 0)
        return EINVAL;
    nth_futex_lock(&nth_rt.vps_lock);
    int n = nth_rt.nvps;
    /* Shrink: a VP whose CPU is gone parks at its next scheduling point. */
    for (int i = 0; i < n; i++) {
        struct nth_vp *vp = nth_rt.vps[i];
        int ok = vp->cpu >= 0 && hwloc_bitmap_isset(cpus, (unsigned)vp->cpu);
        if (!ok)
            __atomic_store_n(&vp->disabled, 1, __ATOMIC_SEQ_CST);
        else if (__atomic_load_n(&vp->disabled, __ATOMIC_RELAXED))
            enable(vp, vp->cpu);
    }
    /* Grow: give each allowed CPU without a VP one of the disabled VPs. */
    for (int i = 0; i < npus; i++) {
        hwloc_obj_t pu = hwloc_get_obj_by_type(nth_rt.topo, HWLOC_OBJ_PU, (unsigned)i);
        if (!pu || !hwloc_bitmap_isset(cpus, pu->os_index))
            continue;
        int has = 0;
        struct nth_vp *spare = NULL;
        for (int j = 0; j < n; j++) {
            struct nth_vp *vp = nth_rt.vps[j];
            int dis = __atomic_load_n(&vp->disabled, __ATOMIC_RELAXED);
            if (!dis && vp->cpu == (int)pu->os_index)
                has = 1;
            if (dis && !spare)
                spare = vp;
        }
        if (!has && spare)
            enable(spare, (int)pu->os_index);
    }
    /* Work on the disabled VPs' queues must find a running VP. */
    nth_wake_one(NULL);
    nth_futex_unlock(&nth_rt.vps_lock);
    return 0;
}
