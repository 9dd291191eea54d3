/*
 * watchdog.c -- the stall watchdog (Go's sysmon, retaking a P from a thread
 * stuck in a system call): a VP whose running nano-thread sits in the kernel
 * without nth_blocking_enter/leave (a raw read(), a page fault on NFS, ...)
 * reaches no scheduling point, so its ready nano-threads would wait for it,
 * forever with NTH_VPS=1. A monitor kernel thread notices the VP and lends it
 * a stand-in kernel thread that runs those ready nano-threads.
 *
 * Detection (the monitor only reads, so the switch path is untouched): every
 * NTH_STALL_US/2 it reads each VP's switch counter; a VP is stalled when the
 * counter has not moved for NTH_STALL_US while the VP is running a
 * nano-thread (not idle, not parked, not disabled), its local ready queue
 * (or, the global queue) is non-empty, and its kernel thread is asleep in
 * the kernel (state S or D in /proc/TID/stat). The last test keeps
 * the watchdog off a nano-thread that computes without scheduling points:
 * that thread uses its CPU, and a stand-in would only halve it.
 *
 * Stand-in: a kernel thread, bound to the stalled VP's CPU (which its own
 * kernel thread, asleep, does not use), acting as a VP-less runner like the
 * blocking-call spare in blocking.c: a shell VP (id -1, disabled, so every
 * enqueue from it goes to the global queue) whose idle context is the
 * stand-in's own stack. It takes ready nano-threads from the stalled VP's
 * local queue (serialised by the queue's lock, exactly as a thief does) and
 * from the global queue, runs each until it reaches a scheduling point, and
 * stops when both are empty or when the stalled VP's switch counter moves
 * (its nano-thread came back). The stalled VP itself is never touched: its
 * nano-thread, when the system call returns, goes on on its own kernel thread
 * and VP with no coordination needed. A nano-thread the stand-in ran and that
 * is switched out is picked up by any VP through the usual on_cpu hand-off.
 * Stand-ins park in a cache for the next stall (kept, never ended).
 *
 * One per sleeping kernel thread: a stand-in whose own nano-thread falls
 * asleep in the kernel the same way (a raw futex wait of libgomp's team
 * barrier or Rust std's Condvar) gets a successor for the VP's queue
 * (lessee_check, suspect_lessee), as Go hands its P on from every thread
 * in a system call; so N threads waiting for each other in raw futexes
 * run on any number of VPs, on up to N - VPs stand-ins, at most
 * NTH_STANDINS_MAX (default 1024) of them made in all.
 *
 * Cost when nothing stalls: the monitor runs under SCHED_BATCH, so its
 * wake-ups (every NTH_STALL_US/2 while work waits) never preempt a VP;
 * after DOZE_AFTER checks that found no work waiting behind a VP that had
 * not switched since the check before, it dozes until an enqueue wakes it
 * (one load on the enqueue path while it is awake; DOZE_NS at most), and
 * a wake-up costs one check unless work waits; when every VP is parked it
 * sleeps until one unparks
 * (park() wakes it: one load on the unpark path when it is awake). The
 * backstop, at normal policy, wakes every BACKSTOP_NS while some VP runs.
 * Off (no thread at all) with NTH_STALL_US=0.
 *
 * Alarms: nth_blocking_enter moves the VP's alarms to the shared queue,
 * which the other VPs fire; when every enabled VP is in a system call the
 * backstop fires it (plan_wake), and the nano-threads it wakes get a
 * stand-in like any other work. Without the watchdog (NTH_STALL_US=0) the
 * backstop is started for that by the first such alarm. Each pass also
 * fires the alarms a VP holds, more than 2 ms late in its own queue because
 * it reaches no scheduling point (a nano-thread computing without calls, or
 * one in the kernel without nth_blocking_enter; sync_glue.c, held_timers):
 * the woken nano-threads go to the global queue, for an idle VP.
 *
 * Computing VPs: a nano-thread that computes without scheduling points is
 * not stalled and gets no stand-in, but work queued behind it (a yielder, a
 * nano-thread created there) woke no idle VP when it was queued. The
 * backstop wakes a parked VP for it, which steals it (queued_unseen); and
 * for work left on a parked VP's queue (queued while another VP spun idle
 * and then went on to compute).
 */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"
#include "libc_real.h"
#include "olock.h"
#include "sched_slice.h"
#include "trace_core.h"

#define IDLE_NS (20 * 1000000LL)   /* monitor period while every VP is parked */
/* The monitor dozes after this many checks in a row found no VP with work
 * queued: nothing can be stalled then, and a monitor waking every
 * NTH_STALL_US/2 on a computing VP's CPU cost LU 1000 10-25% of its time
 * (lu-nth --threads 1: 0.13-0.15 s against 0.12 s with NTH_STALL_US=0, quiet
 * machine; --threads 2: 0.078-0.092 s against 0.070 s). Enqueues that wake
 * idle VPs wake it too (nth_sched_wake_idle), unless a VP spins idle: that
 * VP takes what a stalled one leaves queued. A yield, and a nano-thread
 * created on an empty local queue, queue work without that check (their
 * VP is running at that moment, so it is not stalled); if that VP then
 * stalls in the kernel, the monitor sees it when the doze times out. */
#define DOZE_AFTER 20
#define DOZE_NS (10 * 1000000LL)
#define MIN_PERIOD_NS 50000LL      /* never wake more often than every 50 µs */

struct standin {
    struct nth_vp shell;           /* its "VP": id -1, disabled; idle = own stack */
    int word;                      /* futex: 1 = a stalled VP is assigned */
    struct nth_vp *target;
    uint64_t since;                /* target's switch counter when assigned */
    int cpu;                       /* OS index bound to, -1 none */
    struct standin *next;          /* cache link */
};

/* What one checker (the monitor, or the backstop) last saw of a VP. */
struct vp_obs {
    uint64_t nswitch;              /* last counter seen */
    int64_t since;                 /* when it last moved (ns) */
};

struct vp_watch {
    struct vp_obs mon;             /* the monitor's view */
    struct vp_obs back;            /* the backstop's view */
    struct standin *busy;          /* stand-in serving it, NULL none (atomic) */
    uint64_t suspect;              /* monitor: stalled at switch count - 1 (atomic) */
    struct standin *lessee;        /* backstop: the stand-in lessee_obs is of */
    struct vp_obs lessee_obs;      /* backstop: its shell's switches */
    struct standin *mon_lessee;    /* monitor: the stand-in mon_lessee_obs is of */
    struct vp_obs mon_lessee_obs;  /* monitor: its shell's switches */
    uint64_t mon_lessee_said;      /* monitor: shell count + 1 it suspected at */
    struct standin *lessee_sus;    /* monitor: this lessee looks stuck (atomic) */
    uint64_t lessee_sus_n;         /* its shell's switch count + 1 then (atomic) */
};

static struct {
    int64_t stall_ns;
    struct vp_watch *vps;
    uint32_t cache_lock;
    struct standin *cache;
    unsigned long nstalls;         /* stand-ins started (atomic) */
    unsigned long nrun;            /* nano-threads run by stand-ins (atomic) */
    unsigned long backstop_passes; /* checks the backstop made (atomic) */
    int kick;                      /* futex: the monitor suspects a stall */
    int starve_test;               /* NTH_TEST_MONITOR_STARVED: monitor never checks */
    /* NTH_TEST_MONITOR_STEPPED: the monitor makes one check per step a
     * test asks for (nth_watchdog_test_step), so that what the VP did
     * between two checks is the test's choice, not the OS scheduler's. */
    int step_test;
    int step_token;                /* futex: steps asked for (atomic) */
    unsigned long steps_done;      /* checks made in stepped mode (atomic) */
    unsigned long dozes;           /* times the monitor decided to doze (atomic) */
    int backstop_state;            /* 0 not started, 1 starting, 2 running, 3 failed (atomic) */
    nth_orphan_timers_fn orphan;   /* fires alarms nobody else fires (atomic) */
    uint64_t wake_at;              /* backstop's planned wake-up, mono ns (atomic) */
    unsigned standins;             /* stand-in kernel threads made (atomic) */
    unsigned standins_max;         /* cap on standins (NTH_STANDINS_MAX) */
    unsigned long capped;          /* lends refused by the cap (atomic) */
} W;

/* Default NTH_STANDINS_MAX. A stand-in is made for every kernel thread
 * asleep in the kernel with work queued behind it, and one whose own
 * nano-thread then sleeps there gets a successor (lessee_check,
 * nth_standin_handoff): a program whose N threads wait with raw futexes
 * (libgomp's barrier, Rust std) holds up to N - VPs of them at once, as
 * Go holds an M per goroutine in a system call. The cap only stops a
 * runaway (Go's is 10000 threads); a stand-in no lease needs sleeps in
 * the cache and is reused. */
#define STANDINS_DEFAULT 1024u

int nth_watchdog_sleeping;
int nth_next_local_plain;

void nth_next_local_plain_init(int nvps)
{
    int ok = 0;
    if (nvps == 1) {
        long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
        ok = q >= 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
             syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    }
    __atomic_store_n(&nth_next_local_plain, ok, __ATOMIC_RELAXED);
}

/* Between the monitor's store of nth_watchdog_sleeping and its look at
 * the queues: a full barrier on every running thread, so a VP whose
 * plain next_local store (make_ready) we miss reads the word after it
 * and wakes us. Only while that plain store is in use. */
static void doze_fence(void)
{
    if (__atomic_load_n(&nth_next_local_plain, __ATOMIC_RELAXED) &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
        /* Registered at start, so this cannot fail; if the kernel ever
         * said otherwise a missed wake-up would delay stall rescues. */
        fprintf(stderr, "nthlib: membarrier failed after registration\n");
        abort();
    }
}

/* The monitor and the stand-ins come from libc's pthread_create
 * (libc_real.h), as VPs do: they must be plain kernel threads. Under
 * LD_PRELOAD=libnth-pthread.so a plain pthread_create call binds to the
 * shim's (and dlsym(RTLD_NEXT) from libnth finds nothing, libc preceding
 * libnth in the lookup order): the monitor would become a nano-thread, and
 * a runtime started from the shim's first shim_self() hung in it, the
 * shim's pthread_create waiting for the thread key being made further up
 * the same stack (xz -T4, zstd -T4). */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* 1 if kernel thread tid is asleep in the kernel (S or D), 0 if it runs or
 * is unknown: only a thread that does not use its CPU may get a stand-in.
 * /proc/TID/stat, not /proc/self/task/TID/stat: the state field is the
 * thread's own in both (proc(5)), but a file opened under
 * /proc/PID/task/TID/ makes the process dear to reap -- its parent then
 * spends up to 100 ms of CPU in wait4 (proc_flush_pid; bench/RESULTS.md
 * "mal3", "mig"). */
static int tid_sleeping(int tid)
{
    if (tid <= 0)
        return 0;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = nth_sys_read(fd, buf, sizeof buf - 1);   /* never a preloaded read() */
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    /* "pid (comm) S ...": comm may hold spaces and parentheses. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return 0;
    return p[2] == 'S' || p[2] == 'D';
}

static void bind_cpu(struct standin *s, int cpu)
{
    if (cpu == s->cpu || !nth_rt.topo)
        return;
    s->cpu = cpu;
    if (cpu < 0 || !nth_rt.cfg.bind)
        return;
    hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(nth_rt.topo, (unsigned)cpu);
    if (pu)
        (void)hwloc_set_cpubind(nth_rt.topo, pu->cpuset, HWLOC_CPUBIND_THREAD);
}

static int still_stalled(const struct standin *s)
{
    return __atomic_load_n(&s->target->nswitch, __ATOMIC_RELAXED) == s->since &&
           !__atomic_load_n(&s->target->disabled, __ATOMIC_RELAXED);
}

static int vp_has_work(struct nth_vp *vp)
{
    return __atomic_load_n(&vp->next_local, __ATOMIC_SEQ_CST) != NULL ||
           !nth_rq_empty(&vp->rq) || !nth_rq_empty(&nth_rt.grq);
}

/* The signal mask of the thread that started the runtime (the process's at
 * start-up). Helpers are born with every signal blocked
 * (nth_helper_thread_create); the monitor keeps every signal blocked
 * (nth_helper_block_signals), and so does a stand-in while it serves no
 * VP: the kernel gives a process-directed signal to any thread that does
 * not block it, and a stand-in asleep in its cache with the inherited
 * mask took signals the program meant for a sigwait elsewhere (their
 * default action ended the process; seen once
 * the pthread shim's blocking calls lent VPs on every blocking call).
 * While it serves, the nano-threads' masks are put in place by the switch
 * hook when one is set (the pthread shim); without one, the inherited
 * mask is, as on a VP. Raw system calls: under the pthread shim
 * pthread_sigmask is the shim's. */
static sigset_t inherited_mask;

/* Set the stand-in's mask to m, with glibc's SIGCANCEL (32) blocked
 * whatever m says. The pthread shim uses it as its wake-up signal: blocked
 * on every kernel thread that has waited in the kernel, open only inside
 * ppoll/pselect/epoll_pwait's mask, so that a wake-up sent after the wait
 * published itself and before the call began stays pending and ends the
 * call at once. The shim blocks it once per kernel thread; a stand-in that
 * opened it again between leases (helpers keep 32 and 33 open) took such
 * a wake-up in its handler before the call, which then slept on. Without
 * the shim nothing sends 32 to a stand-in. glibc's sigaddset refuses 32:
 * its bit is set directly (the kernel's set is one 64-bit word here). */
static void standin_setmask(const sigset_t *m)
{
    sigset_t k = *m;
    uint64_t b;
    memcpy(&b, &k, sizeof b);
    b |= 1ULL << (32 - 1);
    memcpy(&k, &b, sizeof b);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &k, NULL, (size_t)(_NSIG / 8));
}

/* Every signal blocked but glibc's SIGSETXID (33: setuid() in a threaded
 * process waits for every thread), as nth_helper_block_signals, and 32. */
static void standin_block_all(void)
{
    sigset_t all;
    sigfillset(&all);
    sigdelset(&all, 33);
    standin_setmask(&all);
}

static void standin_mask(int serving)
{
    if (__atomic_load_n(&nth_switch_hook, __ATOMIC_ACQUIRE))
        return;
    if (serving)
        standin_setmask(&inherited_mask);
    else
        standin_block_all();
}

static void standin_put(struct standin *s);

static void *standin_main(void *arg)
{
    struct standin *s = arg;
    struct nth_vp *sh = &s->shell;
    prctl(PR_SET_NAME, "nth-standin", 0, 0, 0);
    standin_block_all();
    nth_vp_self_set(sh);
    /* For nth_ldso_held: a nano-thread it runs may call dlopen. */
    __atomic_store_n(&sh->tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
    sh->idle.flags = NTH_TF_IDLE;
    sh->idle.on_cpu = 1;
    /* Atomic: the backstop reads it (lessee_check). */
    __atomic_store_n(&sh->current, &sh->idle, __ATOMIC_RELEASE);
#ifdef NTH_TSAN
    sh->idle.tsan_fiber = __tsan_get_current_fiber();
#endif
    for (;;) {
        while (__atomic_load_n(&s->word, __ATOMIC_ACQUIRE) == 0)
            nth_futex_wait(&s->word, 0, -1);
        __atomic_store_n(&s->word, 0, __ATOMIC_RELAXED);
        struct nth_vp *vp = s->target;
        struct vp_watch *w = &W.vps[vp->id];
        bind_cpu(s, __atomic_load_n(&vp->cpu, __ATOMIC_RELAXED));
        int traced = 0;            /* lease begun on the trace */
        standin_mask(1);
    serve:
        /* Until the VP is back, or we handed the lease on because the
         * nano-thread we ran blocked in the kernel (nth_standin_handoff):
         * then its successor serves the VP and we only finish that one. */
        while (still_stalled(s) && __atomic_load_n(&w->busy, __ATOMIC_SEQ_CST) == s) {
            struct nth_thread *t = nth_next_local_take(&vp->next_local);
            if (!t)
                t = nth_rq_pop(&vp->rq);
            if (!t)
                t = nth_rq_pop(&nth_rt.grq);
            if (!t)
                break;
            if (!traced) {
                nth_trace_rt_loan(vp);
                traced = 1;
            }
            nth_thread_try_run(t);
            __atomic_add_fetch(&W.nrun, 1, __ATOMIC_RELAXED);
            /* Back here when t reaches a scheduling point: the shell is
             * disabled, so it always switches to its idle context, us. */
            nth_sched_switch(sh, t, NTH_PS_NONE);
        }
        /* Give the VP back. Dekker with nth_standin_lend() from an
         * enqueuer: it publishes its node, then reads busy; we clear busy,
         * then look at the queues again. One of us sees the other, so a
         * nano-thread made ready for a VP still in the kernel is served. */
        struct standin *mine = s;
        if (__atomic_compare_exchange_n(&w->busy, &mine, NULL, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED) &&
            (nth_full_fence(), 1) &&
            still_stalled(s) && __atomic_load_n(&vp->blocking, __ATOMIC_SEQ_CST) && vp_has_work(vp)) {
            struct standin *none = NULL;
            if (__atomic_compare_exchange_n(&w->busy, &none, s, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
                goto serve;
        }
        if (traced)
            nth_trace_rt_loan_end();
        standin_mask(0);
        standin_put(s);
    }
    return NULL;
}

static void standin_put(struct standin *s)
{
    nth_olock(&W.cache_lock);
    s->next = W.cache;
    W.cache = s;
    nth_ounlock(&W.cache_lock);
}

/* Counts a stand-in against NTH_STANDINS_MAX; 0 if the cap is reached
 * (said once on stderr: the work then waits for a stand-in to come back
 * to the cache, or for the sleeping kernel thread). */
static int standin_count(void)
{
    unsigned n = __atomic_add_fetch(&W.standins, 1, __ATOMIC_RELAXED);
    if (n <= W.standins_max)
        return 1;
    __atomic_sub_fetch(&W.standins, 1, __ATOMIC_RELAXED);
    if (__atomic_fetch_add(&W.capped, 1, __ATOMIC_RELAXED) == 0)
        fprintf(stderr, "nthlib: %u stand-in kernel threads (NTH_STANDINS_MAX) all busy: "
                "ready threads now wait for one of them (raise NTH_STANDINS_MAX if the program's "
                "threads wait in raw futexes, as OpenMP's and Rust's do)\n", W.standins_max);
    return 0;
}

/* A new stand-in, asleep on its word; NULL if out of memory or threads,
 * or if NTH_STANDINS_MAX of them exist. */
static struct standin *standin_new(void)
{
    if (!standin_count())
        return NULL;
    size_t sz = (sizeof(struct standin) + NTH_CACHELINE - 1) & ~(size_t)(NTH_CACHELINE - 1);
    struct standin *s = aligned_alloc(NTH_CACHELINE, sz);
    if (!s) {
        __atomic_sub_fetch(&W.standins, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->shell.id = -1;
    s->shell.cpu = -1;
    s->shell.disabled = 1;
    s->cpu = -1;
    nth_rq_init(&s->shell.rq);
    pthread_attr_t a;
    pthread_t kt;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int e = nth_helper_thread_create(&kt, &a, standin_main, s);
    pthread_attr_destroy(&a);
    if (e) {
        free(s);
        __atomic_sub_fetch(&W.standins, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    return s;
}

static struct standin *standin_get(void)
{
    nth_olock(&W.cache_lock);
    struct standin *s = W.cache;
    if (s)
        W.cache = s->next;
    nth_ounlock(&W.cache_lock);
    return s ? s : standin_new();
}

/* Claimed but not yet served: keeps a second lender from starting
 * another stand-in while the first creates its kernel thread. */
#define CLAIMED ((struct standin *)1)

int nth_standin_lend(struct nth_vp *vp)
{
    if (!W.vps || vp->id < 0)
        return EAGAIN;
    struct vp_watch *w = &W.vps[vp->id];
    struct standin *none = NULL;
    if (__atomic_load_n(&w->busy, __ATOMIC_SEQ_CST) ||
        !__atomic_compare_exchange_n(&w->busy, &none, CLAIMED, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        return 0;                /* served already */
    struct standin *s = standin_get();
    if (!s) {
        __atomic_store_n(&w->busy, NULL, __ATOMIC_SEQ_CST);
        return EAGAIN;           /* out of memory or threads */
    }
    s->target = vp;
    s->since = __atomic_load_n(&vp->nswitch, __ATOMIC_ACQUIRE);
    __atomic_store_n(&w->busy, s, __ATOMIC_RELEASE);
    __atomic_add_fetch(&W.nstalls, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&s->word, 1, __ATOMIC_RELEASE);
    nth_futex_wake(&s->word, 1);
    return 0;
}

int nth_standin_serving(const struct nth_vp *vp)
{
    if (!W.vps || vp->id < 0)
        return 0;
    return __atomic_load_n(&W.vps[vp->id].busy, __ATOMIC_SEQ_CST) != NULL;
}

int nth_standin_handoff(struct nth_vp *shell)
{
    struct standin *s = (struct standin *)shell; /* the shell comes first */
    struct nth_vp *vp = s->target;
    if (!W.vps || !vp || vp->id < 0)
        return 0;
    struct vp_watch *w = &W.vps[vp->id];
    struct standin *mine = s;
    if (!__atomic_compare_exchange_n(&w->busy, &mine, NULL, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        return 0;                /* not (or no longer) the VP's lessee */
    /* Dekker with an enqueuer's nth_standin_lend(), as at a lease's end. */
    nth_full_fence();
    if (still_stalled(s) && vp_has_work(vp))
        return nth_standin_lend(vp);
    return 0;
}

/* Update o from vp's switch counter; 1 if it has not moved for stall_ns. */
static int observe(struct nth_vp *vp, struct vp_obs *o, int64_t t)
{
    uint64_t n = __atomic_load_n(&vp->nswitch, __ATOMIC_RELAXED);
    if (n != o->nswitch) {
        o->nswitch = n;
        o->since = t;
        return 0;
    }
    return t - o->since >= W.stall_ns;
}

/* vp runs a nano-thread that sits in the kernel with work queued behind
 * it. Reads only: the monitor calls it too. */
static int looks_stalled(struct nth_vp *vp)
{
    if (__atomic_load_n(&vp->parked, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&vp->current, __ATOMIC_ACQUIRE) == &vp->idle)
        return 0;
    if (!vp_has_work(vp))
        return 0;
    /* Inside nth_blocking_enter/leave it is in the kernel by contract. */
    return __atomic_load_n(&vp->blocking, __ATOMIC_ACQUIRE) ||
           tid_sleeping(__atomic_load_n(&vp->tid, __ATOMIC_ACQUIRE));
}

/* vp has not switched for stall_ns and is not in the kernel: either its
 * nano-thread computes without scheduling points, which nobody preempts
 * (DESIGN invariant 1), or it is parked. Work queued on it then (a
 * yielder, a nano-thread created or made ready behind the computing one;
 * or queued on the parked VP while another VP spun idle -- the enqueue
 * then wakes nobody, the spinner being expected to take it, and that
 * spinner went on to compute something else) waits for a thief, but
 * thieves that parked before it was queued sleep on. Wake one (vp itself
 * first if parked), which takes it (steal.c takes a busy victim's head
 * slot too once the victim has not switched for its grace). Not while a
 * VP spins: that one steals on its own. */
static void queued_unseen(struct nth_vp *vp)
{
    if (__atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE) || !vp_has_work(vp))
        return;
    if (!__atomic_load_n(&vp->parked, __ATOMIC_ACQUIRE) &&
        __atomic_load_n(&vp->current, __ATOMIC_ACQUIRE) == &vp->idle)
        return;                    /* in its idle loop: it looks itself */
    if (__atomic_load_n(&nth_rt.nspinning, __ATOMIC_SEQ_CST) == 0 &&
        __atomic_load_n(&nth_rt.nparked, __ATOMIC_SEQ_CST) > 0)
        nth_wake_one(vp);
}

/* The stand-in s serving vp is stuck in the kernel itself: the
 * nano-thread it runs made a call that sleeps there and that nobody
 * wraps, with work queued for vp behind it. Seen with dlsym waiting for
 * ld.so's load lock, held by vp's own nano-thread, which waits on vp's
 * kernel thread (nth_ldso_held) for a nano-thread queued here: nobody
 * else would ever run that one. Hand the lease to another stand-in, as s
 * does itself at a blocking call it knows of (nth_standin_handoff); s
 * finishes the nano-thread it runs, then sees the lease gone. Every
 * kernel thread asleep with work behind it so gets a stand-in, as Go
 * hands its P on from every system call: a successor that sleeps too
 * gets one in turn, up to NTH_STANDINS_MAX. The backstop's own view: s's
 * shell has not switched for stall_ns (the monitor's, suspect_lessee, is
 * quicker). */
static int lessee_stuck(struct nth_vp *vp, struct standin *s);
static void lessee_replace(struct nth_vp *vp, struct vp_watch *w, struct standin *s);

static void lessee_check(struct nth_vp *vp, struct vp_watch *w, struct standin *s, int64_t t)
{
    struct nth_vp *sh = &s->shell;
    if (w->lessee != s) {
        w->lessee = s;
        w->lessee_obs.nswitch = __atomic_load_n(&sh->nswitch, __ATOMIC_RELAXED);
        w->lessee_obs.since = t;
        return;
    }
    if (!observe(sh, &w->lessee_obs, t))
        return;
    lessee_replace(vp, w, s);
}

/* The monitor's side of lessee_check, every period rather than every
 * BACKSTOP_NS: a chain of stand-ins each of whose nano-threads falls
 * asleep in a raw futex wait (libgomp's barrier, Rust std: a team of 8 on
 * one VP needs 7 in a row) took the backstop two of its periods per
 * link, 125 ms for the team's first barrier (bench/RESULTS.md, "futex").
 * Reads only, as suspect_vp; marks s (once per switch count of its shell)
 * and returns 1 to wake the backstop, which replaces it. */
static int suspect_lessee(struct nth_vp *vp, struct vp_watch *w, struct standin *s, int64_t t)
{
    struct nth_vp *sh = &s->shell;
    if (w->mon_lessee != s) {
        w->mon_lessee = s;
        w->mon_lessee_said = 0;
        w->mon_lessee_obs.nswitch = __atomic_load_n(&sh->nswitch, __ATOMIC_RELAXED);
        w->mon_lessee_obs.since = t;
        return 0;
    }
    if (!observe(sh, &w->mon_lessee_obs, t) || w->mon_lessee_said == w->mon_lessee_obs.nswitch + 1 ||
        !lessee_stuck(vp, s))
        return 0;
    w->mon_lessee_said = w->mon_lessee_obs.nswitch + 1;
    __atomic_store_n(&w->lessee_sus_n, w->mon_lessee_said, __ATOMIC_RELAXED);
    __atomic_store_n(&w->lessee_sus, s, __ATOMIC_RELEASE);
    return 1;
}

/* s, vp's lessee, runs a nano-thread asleep in the kernel with work
 * queued for vp behind it. Reads only. */
static int lessee_stuck(struct nth_vp *vp, struct standin *s)
{
    struct nth_vp *sh = &s->shell;
    return vp_has_work(vp) && __atomic_load_n(&sh->current, __ATOMIC_ACQUIRE) != &sh->idle &&
           tid_sleeping(__atomic_load_n(&sh->tid, __ATOMIC_ACQUIRE));
}

/* Backstop: hand vp's lease from s, stuck, to another stand-in. */
static void lessee_replace(struct nth_vp *vp, struct vp_watch *w, struct standin *s)
{
    if (!lessee_stuck(vp, s))
        return;
    struct standin *mine = s;
    if (!__atomic_compare_exchange_n(&w->busy, &mine, NULL, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        return;                    /* s gave it back meanwhile */
    w->lessee = NULL;
    nth_full_fence();              /* Dekker with an enqueuer, as at a lease's end */
    (void)nth_standin_lend(vp);    /* on failure: an enqueue or the next period */
}

/* The backstop's check of one VP: lend it a stand-in if it has not switched
 * since the monitor suspected it (suspect), or for stall_ns in the
 * backstop's own view (o), and still looks stalled; or a new one if the
 * stand-in serving it is stuck (lessee_check). */
static void check_vp(struct nth_vp *vp, struct vp_watch *w, struct vp_obs *o, int64_t t)
{
    uint64_t sus = __atomic_exchange_n(&w->suspect, 0, __ATOMIC_ACQ_REL);
    struct standin *ls = __atomic_exchange_n(&w->lessee_sus, NULL, __ATOMIC_ACQ_REL);
    int long_enough = observe(vp, o, t);
    if (sus && sus - 1 == __atomic_load_n(&vp->nswitch, __ATOMIC_RELAXED))
        long_enough = 1;
    struct standin *busy = __atomic_load_n(&w->busy, __ATOMIC_ACQUIRE);
    if (busy) {
        if (busy == CLAIMED)
            return;
        /* The monitor saw this lessee stuck, and its shell has not
         * switched since: no need to watch it for stall_ns again. */
        if (ls == busy && __atomic_load_n(&w->lessee_sus_n, __ATOMIC_RELAXED) ==
                              __atomic_load_n(&busy->shell.nswitch, __ATOMIC_RELAXED) + 1)
            lessee_replace(vp, w, busy);
        else
            lessee_check(vp, w, busy, t);
        return;
    }
    if (!long_enough)
        return;
    if (looks_stalled(vp)) {
        (void)nth_standin_lend(vp);  /* on failure: try next period */
        return;
    }
    queued_unseen(vp);
}

/* Some VP has a nano-thread queued (its own queues, or the global queue)
 * and has not switched since the monitor's previous check (observe()
 * stamped mon.since with this check's t if it had): the only state in
 * which a stall can leave work waiting. Work queued on a VP that switches
 * is on its way: a parallel region queues its member on the other VP for
 * the few microseconds that VP takes to pick it up, and counting any
 * queued work as "not quiet" kept the monitor from dozing through LU 1000
 * (a check, and a preemption of a computing VP on its CPU, at every
 * tick: 7 per 10 ms of regions, 3 now; bench/RESULTS.md, lu3). */
static int work_waiting(int nvps, int64_t t)
{
    for (int i = 0; i < nvps; i++)
        if (W.vps[i].mon.since != t && vp_has_work(nth_rt.vps[i]))
            return 1;
    return 0;
}

/* The monitor must not take CPU time from the VPs it watches. Woken every
 * NTH_STALL_US/2 on a computing VP's CPU, a normal-policy thread preempted
 * that VP each time (LU 1000, 2 VPs: 0.077 s against 0.070 s with
 * NTH_STALL_US=0 and 0.068 s for OpenMP, quiet machine). A SCHED_BATCH
 * thread's wake-up never preempts (sched(7); the kernel's wake-up
 * preemption check returns at once for a non-SCHED_NORMAL wakee): the
 * monitor runs when its CPU has a gap or the running thread's slice ends,
 * with a normal weight. Not SCHED_IDLE: a SCHED_IDLE thread on a CPU that
 * other processes keep busy can wait seconds for the CPU, and a process
 * cannot finish exiting before each of its threads has run once more (its
 * wall time in the 3-application workload went from 0.4 s to 2-5 s); and a
 * thread cannot leave SCHED_IDLE unprivileged.
 * It stays on the CPU it inherited (VP 0's): moving between CPUs it
 * migrated ~15 times a second, which the workload counts against us.
 *
 * Because it may wait for its CPU at any instruction, it takes no lock and
 * claims nothing: it only reads, and when a VP looks stalled it marks it
 * and wakes the backstop, which lends the stand-in at normal policy. */
static void monitor_set_policy(void)
{
    /* The system call, not pthread_setschedparam: under the pthread shim
     * that one is the shim's, and this is a plain kernel thread. Pid 0 is
     * the calling thread on Linux. */
    struct sched_param sp = { 0 };
    (void)sched_setscheduler(0, SCHED_BATCH, &sp);
}

/* Monitor: mark vp if it has not switched for stall_ns and looks stalled. */
static int suspect_vp(struct nth_vp *vp, struct vp_watch *w, int64_t t)
{
    int stalled = observe(vp, &w->mon, t);
    struct standin *busy = __atomic_load_n(&w->busy, __ATOMIC_ACQUIRE);
    if (busy && busy != CLAIMED && stalled)
        return suspect_lessee(vp, w, busy, t);
    if (!stalled || busy || !looks_stalled(vp))
        return 0;
    __atomic_store_n(&w->suspect, w->mon.nswitch + 1, __ATOMIC_RELEASE);
    return 1;
}

/* The backstop: a normal-policy thread that lends stand-ins. The monitor
 * wakes it for a VP it suspects; on its own it checks every BACKSTOP_NS
 * with its own view, for when the monitor waits long for its CPU under
 * SCHED_BATCH (a stall is then rescued within two of its periods). Its
 * periodic wake-ups cost a computing VP 100 short preemptions a second,
 * against the monitor's 2000 at normal policy; it asks for a short time
 * slice (sched_slice.h) so that a kick preempts the VP it shares a CPU
 * with at once. While every VP is parked it sleeps until one unparks. */
#define BACKSTOP_NS (10 * 1000000LL)

/* The raw system call (libc_real.h): a plain nanosleep() binds to a
 * preloaded pthread shim's, which this thread must never enter. */
static void sleep_ns(int64_t ns)
{
    nth_sys_sleep_ns(ns);
}

/* Plan the backstop's next wake-up at most period ns (-1: none) from now,
 * firing the alarms nobody else fires on the way (nth_watchdog_timers_set);
 * returns the timeout to sleep, ns (-1: until kicked). Dekker with
 * nth_watchdog_timers_kick: we publish wake_at, then look at the alarms;
 * an arming thread publishes its alarm, then reads wake_at. */
static int64_t plan_wake(int64_t period)
{
    int64_t t = now_ns();
    __atomic_store_n(&W.wake_at, period < 0 ? UINT64_MAX : (uint64_t)(t + period), __ATOMIC_SEQ_CST);
    nth_full_fence();
    nth_orphan_timers_fn fn = __atomic_load_n(&W.orphan, __ATOMIC_ACQUIRE);
    uint64_t due = fn ? fn() : UINT64_MAX;
    if (due == UINT64_MAX)
        return period;
    t = now_ns();
    int64_t left = due <= (uint64_t)t ? 0 : (int64_t)(due - (uint64_t)t);
    if (period >= 0 && left >= period)
        return period;
    __atomic_store_n(&W.wake_at, due, __ATOMIC_SEQ_CST);
    return left;
}

static void *backstop(void *arg)
{
    (void)arg;
    nth_helper_block_signals(NULL);
    prctl(PR_SET_NAME, "nth-backstop", 0, 0, 0);
    (void)nth_sched_short_slice(NTH_SHORT_SLICE_NS);
    if (!W.stall_ns) {
        /* No watchdog (NTH_STALL_US=0): started by the first alarm nobody
         * else fires, it only fires those. */
        for (;;) {
            int64_t tmo = plan_wake(-1);
            if (!__atomic_exchange_n(&W.kick, 0, __ATOMIC_ACQ_REL) && tmo != 0) {
                nth_futex_wait(&W.kick, 0, tmo);
                __atomic_store_n(&W.kick, 0, __ATOMIC_RELAXED);
            }
        }
    }
    for (;;) {
        int nvps = __atomic_load_n(&nth_rt.nvps, __ATOMIC_ACQUIRE);
        /* Every VP parked: none is in a system call, so the parked ones
         * fire every alarm (their park timeouts). */
        if (__atomic_load_n(&nth_rt.nparked, __ATOMIC_SEQ_CST) >= nvps) {
            __atomic_store_n(&W.wake_at, UINT64_MAX, __ATOMIC_SEQ_CST);
            /* The monitor sets the word before it sleeps for the same
             * reason; an unpark clears it and wakes both. */
            if (__atomic_load_n(&nth_watchdog_sleeping, __ATOMIC_SEQ_CST))
                nth_futex_wait(&nth_watchdog_sleeping, 1, IDLE_NS);
            else if (!__atomic_exchange_n(&W.kick, 0, __ATOMIC_ACQ_REL))
                nth_futex_wait(&W.kick, 0, IDLE_NS);
            continue;
        }
        int64_t tmo = plan_wake(BACKSTOP_NS);
        if (!__atomic_exchange_n(&W.kick, 0, __ATOMIC_ACQ_REL) && tmo != 0) {
            nth_futex_wait(&W.kick, 0, tmo);
            __atomic_store_n(&W.kick, 0, __ATOMIC_RELAXED);
        }
        int64_t t = now_ns();
        for (int i = 0; i < nvps; i++)
            check_vp(nth_rt.vps[i], &W.vps[i], &W.vps[i].back, t);
        __atomic_add_fetch(&W.backstop_passes, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void *monitor(void *arg)
{
    (void)arg;
    nth_helper_block_signals(NULL);
    prctl(PR_SET_NAME, "nth-watchdog", 0, 0, 0);
    /* Default timer slack (50 µs) would blur a sub-millisecond period. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    monitor_set_policy();
    while (W.starve_test)
        sleep_ns(1000000000LL);    /* the backstop must do the work */
    int64_t period = W.stall_ns / 2;
    if (period < MIN_PERIOD_NS)
        period = MIN_PERIOD_NS;
    /* Checks in a row without work waiting. A new runtime has none
     * waiting yet: one check, then doze unless work waits (the first
     * DOZE_AFTER checks fell on the first kernel run of a process). */
    int quiet = DOZE_AFTER - 1;
    int steps_seen = 0;
    for (;;) {
        if (W.step_test) {
            while (__atomic_load_n(&W.step_token, __ATOMIC_ACQUIRE) == steps_seen)
                nth_futex_wait(&W.step_token, steps_seen, IDLE_NS);
            steps_seen++;
        }
        int64_t t = now_ns();
        int nvps = __atomic_load_n(&nth_rt.nvps, __ATOMIC_ACQUIRE);
        int kick = 0;
        for (int i = 0; i < nvps; i++)
            kick |= suspect_vp(nth_rt.vps[i], &W.vps[i], t);
        if (kick) {
            __atomic_store_n(&W.kick, 1, __ATOMIC_RELEASE);
            nth_futex_wake(&W.kick, 1);
        }
        quiet = work_waiting(nvps, t) ? 0 : quiet + 1;
        if (quiet >= DOZE_AFTER)
            __atomic_add_fetch(&W.dozes, 1, __ATOMIC_RELAXED);
        if (W.step_test)
            __atomic_add_fetch(&W.steps_done, 1, __ATOMIC_RELEASE);
        if (quiet >= DOZE_AFTER) {
            __atomic_store_n(&nth_watchdog_sleeping, 1, __ATOMIC_SEQ_CST);
            doze_fence();
            /* Work queued since the check and not yet taken from a VP
             * that switched meanwhile is on its way, as above; if that VP
             * stalls right after, the doze's timeout bounds the delay, as
             * for a stall that begins while we doze. */
            if (!work_waiting(nvps, t))
                nth_futex_wait(&nth_watchdog_sleeping, 1, DOZE_NS);
            __atomic_store_n(&nth_watchdog_sleeping, 0, __ATOMIC_SEQ_CST);
            /* Unwatched meanwhile: a stall counts from now, not from
             * before the doze. */
            t = now_ns();
            for (int i = 0; i < nvps; i++) {
                W.vps[i].mon.nswitch = __atomic_load_n(&nth_rt.vps[i]->nswitch, __ATOMIC_RELAXED);
                W.vps[i].mon.since = t;
            }
            /* Woken (an enqueue or an unpark cleared the word) or timed
             * out: one check a period from now, which dozes again unless
             * it finds work waiting behind a VP that has not switched
             * since now. Such work keeps the monitor watching every
             * period, so a stall is still suspected stall_ns after its
             * last switch; a VP merely unparked, or work taken meanwhile,
             * costs one check instead of DOZE_AFTER (each a preemption
             * of a computing VP when the monitor shares its CPU). */
            quiet = DOZE_AFTER - 1;
            sleep_ns(period);
            continue;
        }
        if (__atomic_load_n(&nth_rt.nparked, __ATOMIC_SEQ_CST) >= nvps) {
            /* Nobody runs, so nothing can stall: sleep until a VP unparks
             * (IDLE_NS at most, in case a wake-up is missed). */
            __atomic_store_n(&nth_watchdog_sleeping, 1, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&nth_rt.nparked, __ATOMIC_SEQ_CST) >= nvps)
                nth_futex_wait(&nth_watchdog_sleeping, 1, IDLE_NS);
            __atomic_store_n(&nth_watchdog_sleeping, 0, __ATOMIC_SEQ_CST);
            continue;
        }
        sleep_ns(period);
    }
    return NULL;
}

/* Start the backstop once; 0 if it runs (or is being started). */
static int backstop_start(void)
{
    int st = __atomic_load_n(&W.backstop_state, __ATOMIC_ACQUIRE);
    if (st == 2 || st == 1)
        return 0;
    if (st == 3 || !__atomic_compare_exchange_n(&W.backstop_state, &st, 1, 0, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE))
        return st == 3 ? EAGAIN : 0;
    pthread_attr_t a;
    pthread_t th;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int e = nth_helper_thread_create(&th, &a, backstop, NULL);
    pthread_attr_destroy(&a);
    __atomic_store_n(&W.backstop_state, e ? 3 : 2, __ATOMIC_RELEASE);
    return e;
}

void nth_watchdog_timers_set(nth_orphan_timers_fn fn)
{
    __atomic_store_n(&W.orphan, fn, __ATOMIC_RELEASE);
}

void nth_watchdog_timers_kick(uint64_t deadline)
{
    if (!W.vps)
        return;                    /* the runtime is not started */
    if (__atomic_load_n(&W.backstop_state, __ATOMIC_ACQUIRE) != 2 && backstop_start()) {
        static int warned;
        if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
            fprintf(stderr, "nthlib: cannot start the watchdog's backstop thread: an alarm "
                    "armed while every VP is in a system call fires when one comes back\n");
        return;
    }
    if (deadline < __atomic_load_n(&W.wake_at, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&W.kick, 1, __ATOMIC_RELEASE);
        nth_futex_wake(&W.kick, 1);
    }
}

int nth_watchdog_start(const nth_config_t *cfg)
{
    /* Stand-ins serve nth_blocking_enter too: their records exist even
     * without the monitor. */
    W.vps = calloc((size_t)nth_rt.nvps, sizeof *W.vps);
    if (!W.vps)
        return ENOMEM;
    /* The mask a stand-in serves with when no switch hook sets one: the
     * starting thread's (the helpers are born with every signal blocked). */
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &inherited_mask, (size_t)(_NSIG / 8));
    W.standins_max = cfg->standins_max ? cfg->standins_max : STANDINS_DEFAULT;
    if (!cfg->stall_us)
        return 0;
    W.stall_ns = (int64_t)cfg->stall_us * 1000;
    int64_t t0 = now_ns();
    for (int i = 0; i < nth_rt.nvps; i++)
        W.vps[i].mon.since = W.vps[i].back.since = t0;
    pthread_attr_t a;
    pthread_t th;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    const char *st = getenv("NTH_TEST_MONITOR_STARVED");
    W.starve_test = st && *st == '1';
    const char *sp = getenv("NTH_TEST_MONITOR_STEPPED");
    W.step_test = sp && *sp == '1';
    int e = nth_helper_thread_create(&th, &a, monitor, NULL);
    if (e) {
        pthread_attr_destroy(&a);
        fprintf(stderr, "nthlib: cannot start the stall watchdog thread (NTH_STALL_US); "
                "running without it\n");
        return EAGAIN;
    }
    pthread_attr_destroy(&a);
    e = backstop_start();
    if (e)
        fprintf(stderr, "nthlib: cannot start the stall watchdog's backstop thread; a stall is "
                "rescued only when the monitor gets CPU time\n");
    return 0;
}

unsigned long nth_watchdog_stalls(void)
{
    return __atomic_load_n(&W.nstalls, __ATOMIC_RELAXED);
}

unsigned long nth_watchdog_test_step(void)
{
    unsigned long done = __atomic_load_n(&W.steps_done, __ATOMIC_ACQUIRE);
    __atomic_add_fetch(&W.step_token, 1, __ATOMIC_RELEASE);
    nth_futex_wake(&W.step_token, 1);
    /* A kernel-level yield: the calling nano-thread must not switch (what
     * the VP did between two checks is the caller's to say). */
    while (__atomic_load_n(&W.steps_done, __ATOMIC_ACQUIRE) == done)
        nth_sys_yield();
    return __atomic_load_n(&W.dozes, __ATOMIC_RELAXED);
}

unsigned long nth_watchdog_backstop_passes(void)
{
    return __atomic_load_n(&W.backstop_passes, __ATOMIC_RELAXED);
}

unsigned long nth_watchdog_ran(void)
{
    return __atomic_load_n(&W.nrun, __ATOMIC_RELAXED);
}

unsigned nth_watchdog_standins(void)
{
    return __atomic_load_n(&W.standins, __ATOMIC_RELAXED);
}

unsigned long nth_watchdog_capped(void)
{
    return __atomic_load_n(&W.capped, __ATOMIC_RELAXED);
}

void nth_watchdog_fork_child(void)
{
    /* The monitor, the backstop and every stand-in (idle in the cache or
     * serving a VP) died with the fork; their records are left behind
     * (a stand-in's shell may be what the forking nano-thread ran on). */
    W.vps = NULL;
    W.cache_lock = 0;
    W.cache = NULL;
    W.standins = 0;               /* their kernel threads died too */
    W.kick = 0;
    W.wake_at = 0;
    __atomic_store_n(&W.backstop_state, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&nth_watchdog_sleeping, 0, __ATOMIC_RELEASE);
    nth_config_t c = nth_rt.cfg;
#ifdef NTH_TSAN
    /* ThreadSanitizer kills a child that starts a thread after a
     * multi-threaded fork (its die_after_fork): records only. */
    c.stall_us = 0;
#endif
    (void)nth_watchdog_start(&c);
}
