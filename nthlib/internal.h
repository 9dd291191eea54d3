/*
 * internal.h -- declarations shared by the parts of nthlib (not installed).
 *
 * Stability: other parts (sync, timers, cpumgr client, tracing, shim) build on
 * these declarations. Add to them; do not rename or remove.
 */
#ifndef NTH_INTERNAL_H
#define NTH_INTERNAL_H

#ifndef _LGPL_SOURCE
#define _LGPL_SOURCE
#endif
#include "config.h"
#include <hwloc.h>
#include <pthread.h>
#include <stdint.h>
#include <urcu/compiler.h>
#include <urcu/lfstack.h>
#include <urcu/wfcqueue.h>

#include "nth.h"
#include "context.h"
#include "futex_lock.h"

#define NTH_HIDDEN __attribute__((visibility("hidden")))

/* ThreadSanitizer annotations (what it cannot see: liburcu, our switches). */
#include "tsan_annot.h"
#define NTH_CACHELINE 64

/* ---- nano-thread descriptor ------------------------------------------ */

/* Scheduling state word (nth_thread.state): one of RUNNING/BLOCKED/READY/
 * EXITED plus the PERMIT bit. Every change is a CAS so nth_wait/nth_to_rq
 * racing on two VPs agree on exactly one enqueue (permit semantics after
 * LockSupport.park/unpark). */
/* A nano-thread that yields stays RUNNING in its queue: for nth_to_rq that
 * is the same as READY (set the permit, do not enqueue), and it saves two
 * atomic operations per yield. */
enum {
    NTH_ST_RUNNING = 0,   /* on a VP (or being switched away from) */
    NTH_ST_BLOCKED = 1,   /* in nth_wait, in no ready queue */
    NTH_ST_READY = 2,     /* in exactly one ready queue (no longer set: nth_to_rq
                             makes a BLOCKED one RUNNING, as a queued yielder) */
    NTH_ST_EXITED = 3,    /* finished; waits to be joined or freed */
    NTH_ST_MASK = 3,
    NTH_ST_PERMIT = 4,    /* an nth_to_rq came before the nth_wait */
    /* With BLOCKED: it waits on its kernel thread (a futex on state), not
     * switched out, because that kernel thread holds one of ld.so's locks
     * (nth_ldso_held): the waker's nth_to_rq wakes the futex instead of
     * queueing it. Never in a ready queue. */
    NTH_ST_KWAIT = 8,
};

/* nth_thread.jstate: join/detach coordination; otherwise the joiner's
 * descriptor pointer (aligned, so low bits are free). */
#define NTH_J_JOINABLE ((uintptr_t)0)
#define NTH_J_DETACHED ((uintptr_t)1)
#define NTH_J_EXITED ((uintptr_t)2)
#define NTH_J_REAPED ((uintptr_t)3)   /* joined or freed: handle is stale */
#define NTH_J_FOREIGN ((uintptr_t)4)  /* joined by a kernel thread that is no VP */
/* Or'ed into a joiner's pointer: the joiner switched to the nano-thread
 * itself (nth_join's direct path) and waits RUNNING in no ready queue, so
 * the exit resumes it like a dequeued yielder, without a CAS on its state. */
#define NTH_J_DIRECT ((uintptr_t)1)

#define NTH_MAGIC_LIVE 0x6e74686c6976653aULL  /* "nthlive:" */
#define NTH_MAGIC_FREE 0x6e746866726565ULL

struct nth_vp;
struct nth_stack_class;

struct nth_thread {
    nth_ctx_t ctx;                  /* first: the switch saves sp here */
    uint64_t magic;
    int state;                      /* NTH_ST_* | NTH_ST_PERMIT (atomic) */
    int on_cpu;                     /* 1 until its context is fully saved */
    struct cds_wfcq_node rq_node;   /* link in one ready queue */
    uintptr_t jstate;               /* NTH_J_* or joiner (atomic) */
    void *(*fn)(void *);
    void *arg;
    void *result;
    uint64_t id;                    /* never reused; main = 1 */
    struct nth_vp *vp;              /* VP it last ran on */
    int home_vp;                    /* NTH_VP_ANY or the VP it was created for */
    int move_to;                    /* 1 + the VP nth_move_to_vp or a home wake-up
                                       (nth__to_rq_home) sends it to, 0 none:
                                       thieves leave it in that VP's queue (atomic) */
    int64_t move_until;             /* CLOCK_MONOTONIC ns until which thieves leave
                                       it there while that VP runs (atomic) */
    unsigned flags;                 /* NTH_TF_* */
    char *stack_lo;                 /* lowest usable byte (above the guard) */
    size_t stack_size;              /* usable bytes below the descriptor */
    struct nth_stack_class *cls;    /* size class of its stack unit */
    struct nth_thread *next_free;   /* link in a per-VP cache */
    struct cds_lfs_node pool_node;  /* link in the global pool */
    char name[NTH_NAME_MAX];
    /* Reserved for other parts. */
    void *specific;                 /* thread-specific data (sync/keys) */
    /* The real deadline of the sliced wait it is in (nth_wait_slices):
     * copied into the alarms it arms, 0 none. Owner only. */
    uint64_t wait_real;
    uint64_t trace_obj;             /* tracing: what it is about to wait on */
    unsigned trace_kind;            /* (trace_core.h), else 0 */
    uint64_t trace_last;            /* tracing: stamp of its last record, its track's floor (trace_clock.h) */
    void *user[4];                  /* spare slots for later parts */
    /* Tooling. */
    void *asan_fake;
    const void *asan_bottom;
    size_t asan_size;
    void *tsan_fiber;
    unsigned vg_stack_id;
    /* The thread pointer it runs with (tls_switch.c), NULL for its VP's
     * own; kept when the descriptor is reused (the pthread shim recycles
     * the TCB with it). */
    void *tp;
};

enum {
    NTH_TF_MAIN = 1,   /* main's nano-thread, on the process stack */
    NTH_TF_IDLE = 2,   /* a VP's idle context, never a user handle */
    NTH_TF_USTACK = 4, /* runs on a caller's stack (nth_attr_setstack) */
    NTH_TF_FRESH = 8,  /* never ran: its context is made by its first switch */
    NTH_TF_CALLED = 16, /* run by its direct joiner as a call (nano_thread.c) */
};

/* ---- ready queues ------------------------------------------------------ */

/* A ready queue: liburcu wait-free enqueue (any thread), dequeue serialised
 * by our own spin lock (owner and stealers), never a pthread mutex. */
struct nth_rq {
    struct __cds_wfcq_head head;
    nth_spinlock_t lock;
    /* The queue's length for the trace, as two counts kept only while
     * tracing (trace_core.h, nth_trace_rt_rq_len): each on the line its
     * writers own anyway, so counting moves no line between VPs and the
     * dequeuers' count needs no atomic add. npop: nano-threads dequeued,
     * written by whoever holds `lock`. */
    long npop;
    char pad[NTH_CACHELINE];
    struct cds_wfcq_tail tail;
    /* npush: nano-threads enqueued, an atomic add by the enqueuer right
     * after its exchange on `tail` (same line, already its own). */
    long npush;
} __attribute__((aligned(NTH_CACHELINE)));

NTH_HIDDEN void nth_rq_init(struct nth_rq *q);
NTH_HIDDEN void nth_rq_push(struct nth_rq *q, struct nth_thread *t);
NTH_HIDDEN struct nth_thread *nth_rq_pop(struct nth_rq *q);
NTH_HIDDEN struct nth_thread *nth_rq_trypop(struct nth_rq *q);
static inline int nth_rq_empty(struct nth_rq *q)
{
    NTH_TSAN_OPAQUE_BEGIN();   /* liburcu's volatile loads (tsan_annot.h) */
    int e = cds_wfcq_empty(&q->head, &q->tail);
    NTH_TSAN_OPAQUE_END();
    return e;
}

/* nth_to_rq(), but the nano-thread goes back to the VP it last ran on
 * rather than next to the waker (team members, parallel.c). Same returns. */
NTH_HIDDEN int nth__to_rq_home(nth_t th);
/* nth_to_rq() onto the VP th last ran on, if that VP may run, with no
 * grace: a thief may take it at once (parallel.c, a team worker handed a
 * member by a caller on another VP, whose VP may be off its CPU). */
NTH_HIDDEN int nth__to_rq_last_vp(nth_t th);

/* Takes the nano-thread in vp->next_local, or NULL; any kernel thread may
 * call it (the owner, a thief, a stand-in): the exchange decides who wins. */
static inline struct nth_thread *nth_next_local_take(struct nth_thread **slot)
{
    if (!__atomic_load_n(slot, __ATOMIC_RELAXED))
        return NULL;
    return __atomic_exchange_n(slot, NULL, __ATOMIC_ACQ_REL);
}

/* ---- virtual processors ----------------------------------------------- */

#define NTH_CACHE_SLOTS 4

struct nth_unit_cache {
    struct nth_stack_class *cls;
    size_t stack_size;                /* cls's, for the inline fast path */
    struct nth_thread *head;
    int n;
    int keep;                         /* cls's: units kept with their stack
                                         pages; past it nth_unit_free
                                         releases them (stack.c) */
};

struct nth_vp {
    struct nth_rq rq;                 /* local ready queue */
    int id;
    int cpu;                          /* OS index of its PU, -1 unbound */
    struct nth_thread *current;       /* running nano-thread (or &idle) */
    struct nth_thread *prev;          /* for the post-switch hook */
    int prev_action;                  /* NTH_PS_* */
    struct nth_vp *prev_target;       /* NTH_PS_MOVE: where prev goes */
    /* Head of the local ready queue: the last yielder when nothing else was
     * ready, so a yield between two nano-threads takes no queue lock. The
     * owner stores into it plainly, but takes from it with an exchange, as
     * thieves and the watchdog's stand-in do (nth_next_local_take): a
     * nano-thread parked here must stay reachable when the VP's running
     * nano-thread sits in a system call or computes for long (Go's
     * runnext, taken with a CAS for the same reason). */
    struct nth_thread *next_local;
    /* Moved into this line, with current and next_local, because a thief
     * looking at a running victim's next_local (steal.c) reads all four:
     * one cache line the owner writes at each switch, not three. */
    uint64_t nswitch;                 /* context switches (stats; watchdog, thieves) */
    /* 1 while its running nano-thread is between nth_blocking_enter and
     * nth_blocking_leave, in a system call on this VP's kernel thread: a
     * nano-thread made ready for this VP then gets a stand-in kernel
     * thread (nth_standin_lend). Written by the owner, read by anyone. */
    int blocking;
    /* Per-VP counters instead of global atomics on every create/exit:
     * ids come in blocks of NTH_ID_BLOCK from nth_rt.next_id, and the live
     * count is nth_rt.live + sum(ncreated) - sum(nexited), summed only after
     * main has exited (nth_exit_if_last). Written by the owner only, read by
     * anyone (relaxed atomics: plain moves). */
    uint64_t id_next, id_end;
    uint64_t ncreated, nexited;
    /* errno of the kernel thread that runs this VP (set by nth_vp_self_set;
     * with per-nano-thread thread pointers, of the loaded TCB): the switch
     * saves and restores errno through it without calls. */
    int *errno_loc;
    /* Thread pointers (tls_switch.c): its kernel thread's own, the one its
     * idle context runs with, and the one loaded now (owner only). */
    void *tp_own, *tp_loaded;
    struct nth_thread idle;           /* the idle/scheduler context */
    /* Work stealing, this VP as a thief (steal.c): the victim order of
     * the VPs on its PU, shared with them, and where its own walk starts
     * in each distance segment of it (steal_grp->nlev entries). */
    const struct nth_steal_group *steal_grp;
    int *steal_start;
    int nsteal;                       /* other VPs: 0 with one VP */
    int park_word;                    /* futex: 0 parked/ing, 1 woken */
    int parked;                       /* 1 while in the kernel (atomic) */
    int disabled;                     /* CPU taken away (nth_vps_set_allowed) */
    /* Set when a parallel-region member ended here: the next region is
     * likely to come soon, so the idle loop spins NTH_TEAM_SPIN_US rather
     * than NTH_SPIN_US before parking (owner only). */
    int team_linger;
    /* A team member kept between regions, blocked on this VP until a
     * region hands it a member record (parallel.c, "workers"): NULL none,
     * else the worker's record, or'ed with NTH_DOOR_SPIN while this VP
     * spins idle and will wake it itself; or a member record or'ed with
     * NTH_DOOR_MEMBER, handed over for this VP to give its worker. CAS
     * (atomic). */
    uintptr_t team_worker;
    void *team_door_worker;           /* the worker flagged by the door (owner only) */
    int rebind;                       /* rebind to cpu at a scheduling point, once enabled */
    /* 1 + the CPU nth_vp_bind() last bound its kernel thread to, 0 when
     * unknown: another thread moved it (bounded reclaim) or it never was.
     * Lets a rebind to the same CPU skip sched_setaffinity, 5-15 us on a
     * virtual machine, on the path of a CPU given back. Atomic. */
    int bound_cpu1;
    /* 1 from a lazy birth (nth_vps_start under a running cpumgr daemon)
     * until the VP is first given a CPU: its kernel thread was started
     * unbound and disabled, and has run no nano-thread. Cleared by
     * enable(). Atomic. */
    int lazy;
    pthread_t kthread;
    void *altstack;                   /* SIGSEGV alternate stack */
    void *timerq;                     /* reserved: the per-VP timer queue */
    void *trace;                      /* tracing: last ready-queue length + 1 */
    uint64_t trace_t0;                /* tracing: when the switch path began */
    /* Tracing: the region numbers this VP may hand out, [next, end), a
     * block taken from a global counter (trace_runtime.c); owner only. */
    uint64_t trace_region_next, trace_region_end;
    void *cpumgr;                     /* reserved: cpumgr client state */
    uint64_t nstarted;                /* nano-threads first run here (stats) */
    uint64_t ncalled;                 /* of which run as a direct joiner's call (stats) */
    struct nth_unit_cache cache[NTH_CACHE_SLOTS];
    struct nth_thread *deferred;      /* picked while still on another VP's
                                         CPU: the idle context runs it */
    int tid;                          /* its kernel thread's id (atomic; watchdog,
                                         nth_ldso_held; a stand-in's shell too) */
    /* Signals 1..64 its creator blocked (bit sig-1): the mask its kernel
     * thread takes while no switch hook exists (vp.c, vp_main). */
    uint64_t birth_sigmask;
    /* The switch hook its idle context last called (atomic): what
     * nth_switch_hook_set waits for. */
    nth_switch_hook_fn hook_seen;
    unsigned npick;                   /* picks, for the global-queue turn (own VP only) */
    /* The descriptor this VP created last (owner only): a handle equal to
     * it lies in a slab (slabs are never unmapped), so nth_join checks only
     * its magic, not the slab registry (create then join). */
    struct nth_thread *last_created;
    /* Work stealing, this VP as a thief (owner only; steal.c): when it
     * may look at its victims' next_local slots again. */
    int64_t peek_next;
    /* What thieves saw in this VP's next_local (steal.c): written by
     * thieves only, in a cache line of its own so that the owner's
     * switches do not miss on it. One record per victim, not one per
     * (thief, victim) pair: that was nvps^2 records, 400 MB at 4096 VPs. */
    struct nth_peek {
        struct nth_thread *t;         /* occupant seen, NULL none (atomic) */
        uint64_t nswitch;             /* the victim's switch count then (atomic) */
        int64_t since;                /* when first seen so, CLOCK_MONOTONIC ns (atomic) */
    } seen __attribute__((aligned(NTH_CACHELINE)));
} __attribute__((aligned(NTH_CACHELINE)));

/* The victim order of the VPs on one PU (steal.c): every VP, nearest to
 * that PU first, split into segments of equal topological distance, each
 * sorted by VP index. A thief walks each segment from the first VP above
 * its own index, wrapping, and skips itself. */
struct nth_steal_group {
    int *order;                       /* nvps VP indices */
    int nlev;                         /* segments */
    int lev[];                        /* nlev + 1 bounds into order */
};

/* How long thieves leave a nano-thread moving to a running VP
 * (nth_move_to_vp) in that VP's queue (a parked one, being woken for it,
 * keeps it): long enough for an idle VP to pick it up, short enough that a
 * VP in a computation without scheduling points (perhaps spinning until
 * the mover does something) cannot hold it. */
#define NTH_MOVE_GRACE_NS 10000000

/* The same for a team member or a region's caller woken back to the VP it
 * last ran on (nth__to_rq_home, parallel.c). At a region's join the last
 * member's VP goes idle right after the wake-up and would steal the caller
 * before the caller's own VP (spinning, or being unparked: a futex wake-up
 * of an idle vCPU takes tens of µs here) takes it; the members then swap
 * VPs, and the caches holding their columns, at the next region (LU 1000:
 * the caller changed CPU up to 8 times per factorisation, bench/RESULTS.md
 * "lu2"). Short: a home VP whose kernel thread the OS does not run loses
 * it to a thief after this, as before. */
#define NTH_HOME_GRACE_NS 100000

/* How long thieves leave a running victim's next_local alone (steal.c
 * says why), and how often at most a thief looks at those slots: each
 * look pulls the line the victim writes at every switch. */
#define NTH_NEXT_LOCAL_GRACE_NS 10000
#define NTH_NEXT_LOCAL_PEEK_NS 5000

/* Post-switch actions, run on the new stack by whoever runs next. */
/* NONE and EXITED come first: the post-switch hook's common case (only
 * clear on_cpu) is one compare, action <= NTH_PS_EXITED. */
enum {
    NTH_PS_NONE = 0,
    NTH_PS_EXITED = 1, /* prev exited joinable: only clear on_cpu */
    NTH_PS_YIELD,      /* enqueue prev on this VP's local queue */
    NTH_PS_GLOBAL,     /* enqueue prev on the global queue (VP disabled) */
    NTH_PS_MOVE,       /* enqueue prev on prev_target's local queue (nth_move_to_vp) */
    NTH_PS_FREE,       /* release prev's stack (detached exit) */
};

/* ---- the runtime ------------------------------------------------------- */

struct nth_runtime {
    int started;                      /* 1 when running (acquire) */
    int starting;
    nth_config_t cfg;
    int nvps;
    struct nth_vp **vps;
    struct nth_rq grq;                /* global ready queue */
    hwloc_topology_t topo;            /* restricted to the allowed CPUs */
    int npus;
    int nspinning;                    /* VPs in the idle spin (atomic) */
    int nparked;                      /* VPs parked in the kernel (atomic) */
    uint64_t next_id;                 /* atomic; handed to VPs in blocks */
    long live;                        /* main + nano-threads created by
                                         kernel threads that are no VP (atomic);
                                         see nth_vp.ncreated */
    int exiting;                      /* exit(0) claimed by nth_exit_if_last */
    int main_exited;                  /* main called nth_exit */
    int64_t spin_ns;
    int64_t team_spin_ns;             /* parallel.c's waits (NTH_TEAM_SPIN_US) */
    nth_futex_lock_t vps_lock;        /* serialises nth_vps_set_allowed */
    pthread_attr_t vp_attr;
};

NTH_HIDDEN extern struct nth_runtime nth_rt;
NTH_HIDDEN extern struct nth_thread nth_main_thread;

/* The VP of the calling kernel thread, NULL if it is none. Deliberately not
 * inline: a nano-thread can resume on another kernel thread, and the compiler
 * would otherwise reuse a thread-pointer-based address computed before a
 * switch. Call it again after anything that may switch. */
NTH_HIDDEN extern __thread struct nth_vp *nth_tls_vp __attribute__((tls_model("initial-exec")));
#if defined(__x86_64__)
/* x86-64: one volatile TLS load instead of a call. The asm is volatile, so
 * the compiler never reuses a value read before a switch. */
static inline struct nth_vp *nth_vp_self(void)
{
    struct nth_vp *vp;
    __asm__ __volatile__("movq nth_tls_vp@gottpoff(%%rip), %0\n\t"
                         "movq %%fs:(%0), %0" : "=r"(vp) : : "memory");
    return vp;
}
#else
NTH_HIDDEN struct nth_vp *nth_vp_self(void);
#endif
NTH_HIDDEN void nth_vp_self_set(struct nth_vp *vp);

/* ld.so's locks (ldso_lock.c): the owner field of dl_load_lock, NULL
 * until found (or never: then nth_ldso_held is always 0); the locks that
 * follow it (dl_load_write_lock, dl_load_tls_lock) are nth_ldso_nlocks - 1
 * more, one pthread_mutex_t apart. nth_ldso_locks_find() looks for them
 * once, at start-up: 0, or ENOENT when not found (a static program, a
 * libc of another layout). */
NTH_HIDDEN extern const int *nth_ldso_owner;
NTH_HIDDEN extern int nth_ldso_nlocks;
NTH_HIDDEN int nth_ldso_locks_find(void);
/* 1 when the kernel thread running vp (a VP, or a stand-in's shell) holds
 * one of ld.so's locks: the running nano-thread is inside a constructor
 * or destructor that dlopen/dlclose runs, or another loader callback, and
 * must not leave this kernel thread (the lock's owner) before it returns.
 * Three relaxed loads; an owner equal to our tid was stored by this
 * kernel thread itself, so the answer is exact for us. */
static inline int nth_ldso_held(const struct nth_vp *vp)
{
    const int *o = __atomic_load_n(&nth_ldso_owner, __ATOMIC_RELAXED);
    if (__builtin_expect(!o, 0))
        return 0;
    int tid = __atomic_load_n(&vp->tid, __ATOMIC_RELAXED);
    const int stride = (int)(sizeof(pthread_mutex_t) / sizeof(int));
    for (int i = 0; i < nth_ldso_nlocks; i++)
        if (__atomic_load_n(&o[i * stride], __ATOMIC_RELAXED) == tid)
            return 1;
    return 0;
}

/* Per-nano-thread thread pointers (tls_switch.c; nth_tls_enable in nth.h).
 * nth_tp_on is set once (release), at start-up. */
NTH_HIDDEN extern int nth_tp_on;
NTH_HIDDEN void nth_tp_load(struct nth_vp *vp, void *tp);
NTH_HIDDEN void *nth_tp_current(void);
/* VP 0 at start-up: main keeps the kernel thread's TCB, the idle context
 * gets its own. */
NTH_HIDDEN void nth_tp_vp0(struct nth_vp *vp0);
/* In a fork() child whose forking kernel thread ran no nano-thread: t,
 * adopted as its nano-thread on vp (VP 0), keeps the kernel thread's TCB,
 * the idle context gets its own (fork.c). */
NTH_HIDDEN void nth_tp_fork_adopt(struct nth_vp *vp, struct nth_thread *t);
/* At a switch to next, with the per-nano-thread thread pointers on. */
static inline void nth_tp_switch(struct nth_vp *vp, struct nth_thread *next)
{
    void *want = next->tp ? next->tp : vp->tp_own;
    if (want != vp->tp_loaded)
        nth_tp_load(vp, want);
}

#define NTH_ID_BLOCK 1024
/* A fresh nano-thread id for a creator on vp (NULL: not a VP); ids are
 * never reused. Inline while vp's block lasts, else nth__new_id. */
NTH_HIDDEN uint64_t nth__new_id(struct nth_vp *vp);
static inline uint64_t nth_new_id(struct nth_vp *vp)
{
    if (__builtin_expect(vp && vp->id_next != vp->id_end, 1))
        return vp->id_next++;
    return nth__new_id(vp);
}
/* After main has exited: if no nano-thread is alive any more, exit(0) (once).
 * Called by exiting nano-threads and, as a backstop for the race between the
 * last two exits, by VPs about to park. */
NTH_HIDDEN void nth_exit_if_last(void);

/* Start the runtime if it is not running (cheap when it is). */
NTH_HIDDEN void nth_ensure_started(void);
static inline int nth_started(void)
{
    return __atomic_load_n(&nth_rt.started, __ATOMIC_ACQUIRE);
}

/* ---- scheduler (sched.c) ---------------------------------------------- */

/* Make t (READY) runnable on vp's local queue, or the global queue when vp
 * is NULL or disabled; unpark a VP if none is spinning. */
NTH_HIDDEN void nth_sched_enqueue(struct nth_vp *vp, struct nth_thread *t);
/* After publishing a ready nano-thread (a queue node or vp->next_local):
 * unpark a VP if none spins and some is parked, preferring vp. The Dekker
 * half of the enqueuer: the idle loop publishes nparked, then re-checks the
 * queues; we published the node, then read nparked. Returns 1 if it woke
 * one. Any kernel thread. */
NTH_HIDDEN int nth_sched_wake_idle(struct nth_vp *vp);
/* The same when the caller published with a seq_cst read-modify-write (an
 * exchange on vp->next_local): no fence, seq_cst loads. The idle loop's
 * half (fetch_add nparked, seq_cst fence, load the slot) then sees the
 * node, or we see nparked (C11: the RMW precedes the fence in the single
 * total order, so the load after the fence reads it; x86: the locked RMW
 * is itself a full barrier, saving one locked instruction per wake-up). */
NTH_HIDDEN int nth_sched_wake_idle_rmw(struct nth_vp *vp);
/* Switch from the running nano-thread to the next ready one (or the idle
 * context); action is done by the post-switch hook. */
NTH_HIDDEN void nth_sched_block(struct nth_vp *vp, int action);
NTH_HIDDEN struct nth_thread *nth_sched_pick(struct nth_vp *vp);
/* 1 on every NTH_GRQ_EVERY-th pick of vp: look at the global queue before
 * the local one, so a nano-thread there runs after a bounded number of
 * scheduling points even when the local queue never empties. */
#define NTH_GRQ_EVERY 61
static inline int nth_sched_grq_turn(struct nth_vp *vp)
{
    return ++vp->npick % NTH_GRQ_EVERY == 0 && !nth_rq_empty(&nth_rt.grq);
}
NTH_HIDDEN void nth_sched_switch(struct nth_vp *vp, struct nth_thread *next, int action);
/* The same for an exited nano-thread (action NTH_PS_EXITED or NTH_PS_FREE),
 * which is never resumed: its registers are not saved. It never returns,
 * but is not declared noreturn: GCC would take the paths to it for cold
 * and stop inlining there (the exit path of every nano-thread). */
NTH_HIDDEN void nth_sched_switch_exit(struct nth_vp *vp, struct nth_thread *next, int action);
NTH_HIDDEN void nth_post_switch(struct nth_vp *vp);
/* The team door (parallel.c): an idle VP that spins, with a team worker
 * waiting on it, lets a region's caller hand that worker its member with
 * one CAS and wakes the worker itself, on its own CPU. The idle loop opens
 * it before spinning, polls it while spinning and closes it before it
 * runs anything else or parks. poll and close return 1 when they queued
 * the worker on vp. Owner VP only. */
#define NTH_DOOR_SPIN ((uintptr_t)1)
#define NTH_DOOR_MEMBER ((uintptr_t)2)
NTH_HIDDEN void nth__team_door_open(struct nth_vp *vp);
NTH_HIDDEN int nth__team_door_take(struct nth_vp *vp);
NTH_HIDDEN int nth__team_door_close(struct nth_vp *vp);
static inline int nth__team_door_poll(struct nth_vp *vp)
{
    if (__builtin_expect(!(__atomic_load_n(&vp->team_worker, __ATOMIC_RELAXED) & NTH_DOOR_MEMBER), 1))
        return 0;
    return nth__team_door_take(vp);
}
NTH_HIDDEN void nth_thread_entry(void *desc);
/* nth_exit(ret) for t, the nano-thread running on the caller's VP, whose
 * function returned ret (nano_thread.c; skips nth_exit's checks). */
NTH_HIDDEN void nth__exit_return(struct nth_thread *t, void *ret);  /* never returns */
/* First code of a fresh context: tool annotations, then the post-switch hook. */
NTH_HIDDEN void nth_ctx_first_run(struct nth_vp *vp);
NTH_HIDDEN struct nth_thread *nth_steal(struct nth_vp *vp);
NTH_HIDDEN int nth_steal_order(struct nth_vp **vps, int n, hwloc_topology_t topo, hwloc_obj_t *pus);
/* vp's victims in the order nth_steal visits them, into out[vp->nsteal] (tests). */
NTH_HIDDEN int nth_steal_victims(const struct nth_vp *vp, int *out);
NTH_HIDDEN void nth_idle_loop(struct nth_vp *vp) __attribute__((noreturn));
NTH_HIDDEN void nth_idle_entry(void *vp);
NTH_HIDDEN void nth_wake_one(struct nth_vp *prefer);
NTH_HIDDEN void nth_vp_drain_local(struct nth_vp *vp);
NTH_HIDDEN int nth_thread_try_run(struct nth_thread *t);
NTH_HIDDEN void nth_thread_set_ready(struct nth_thread *t);

/* Sanitizer/valgrind annotations of a nano-thread's stack (sched.c): made
 * for a new one, released for a freed one. Out of line only in a sanitizer
 * build or under valgrind (nth_tool_active), else one load and branch. */
NTH_HIDDEN extern int nth_tool_active;
NTH_HIDDEN void nth_tool__created(struct nth_thread *t);
NTH_HIDDEN void nth_tool__freed(struct nth_thread *t);
static inline void nth_tool_thread_created(struct nth_thread *t)
{
    if (__builtin_expect(__atomic_load_n(&nth_tool_active, __ATOMIC_RELAXED) != 0, 0))
        nth_tool__created(t);
}
static inline void nth_tool_thread_freed(struct nth_thread *t)
{
    if (__builtin_expect(__atomic_load_n(&nth_tool_active, __ATOMIC_RELAXED) != 0, 0))
        nth_tool__freed(t);
}

/* ---- stacks and descriptors (stack.c) --------------------------------- */

NTH_HIDDEN size_t nth_page_size(void);
/* A unit with a stack of stack_size bytes and guard bytes of guard below it
 * (both rounded up to pages; guard 0: none), or NULL when out of memory or
 * of size classes. */
NTH_HIDDEN struct nth_thread *nth_unit_alloc(struct nth_vp *vp, size_t stack_size, size_t guard);
NTH_HIDDEN void nth_unit_free(struct nth_vp *vp, struct nth_thread *t);
#define NTH_CACHE_MAX 64            /* units per VP cache slot */
/* nth_unit_alloc and nth_unit_free for a VP, with their common case inline
 * (create+join: the VP's first cache slot, the default stack size), which
 * spares the calls on the create/join path. Owner VP only, as the cache. */
static inline struct nth_thread *nth_unit_get(struct nth_vp *vp, size_t stack_size)
{
    struct nth_unit_cache *uc = &vp->cache[0];
    struct nth_thread *t = uc->head;
    if (__builtin_expect(t && uc->stack_size == stack_size, 1)) {
        uc->head = t->next_free;
        uc->n--;
        return t;
    }
    return nth_unit_alloc(vp, stack_size, nth_page_size());
}
static inline void nth_unit_put(struct nth_vp *vp, struct nth_thread *t)
{
    struct nth_unit_cache *uc = &vp->cache[0];
    if (__builtin_expect(uc->cls == t->cls && uc->n < uc->keep &&
                         !(t->flags & NTH_TF_USTACK), 1)) {
        __atomic_store_n(&t->magic, NTH_MAGIC_FREE, __ATOMIC_RELEASE);
        t->next_free = uc->head;
        uc->head = t;
        uc->n++;
        return;
    }
    nth_unit_free(vp, t);
}
/* t if it is a live nano-thread descriptor, NULL otherwise; never
 * dereferences memory outside the registered slabs. */
NTH_HIDDEN struct nth_thread *nth_desc_check(const void *t);
/* The descriptor whose guard page holds addr, or NULL (signal-safe). */
NTH_HIDDEN struct nth_thread *nth_guard_owner(const void *addr);
NTH_HIDDEN int nth_guard_uses_madvise(void);

/* ---- configuration (config.c), cgroup (cgroup.c) ---------------------- */

NTH_HIDDEN int nth_config_check(const nth_config_t *cfg);
NTH_HIDDEN void nth_config_say_bad(const nth_config_t *cfg);
/* Parse a byte size: digits with an optional k/K/m/M/g/G suffix. 0 or EINVAL. */
NTH_HIDDEN int nth_parse_size(const char *s, size_t *out);
/* What NTH_CPUMGR accepts: "off", or a POSIX shared-memory name as
 * `cpumgr --name` takes it ('/' then 1..199 bytes, no other '/'; POSIX
 * leaves names without the leading '/' implementation-defined;
 * env_names.h). 0 or EINVAL. Pure; any thread. */
NTH_HIDDEN int nth_cpumgr_name_check(const char *v);
/* Report a bad NTH_CPUMGR value v in the one-line wording for the cpumgr
 * API's lazy start (nth_cpus_request() before the runtime starts), once
 * per process; nth_config_from_env() then stays silent about it (the
 * runtime's start read the variable again: the line came twice). Any
 * thread. */
NTH_HIDDEN void nth_cpumgr_env_bad(const char *v);
/* NTH_CPUMGR_ACCEPTED, the accepted values for the message: env_names.h. */
#include "env_names.h"
/* CPU cap from cgroup v2 cpu.max along the cgroup path of proc_cgroup (the
 * contents of /proc/self/cgroup as a file path) under the mount point root:
 * the tightest ceil(quota/period) of the path's cgroups, 0 when none caps. */
NTH_HIDDEN int nth_cgroup_cpu_cap(const char *proc_cgroup, const char *root);
/* Parse one cpu.max line ("max 100000", "50000 100000"). Returns the cap in
 * CPUs (rounded up), 0 for "max", -1 if malformed. */
NTH_HIDDEN int nth_cgroup_parse_cpu_max(const char *line);
/* Initialise and load *topo (flags: hwloc_topology_set_flags, 0 for none)
 * with Linux's sysfs discovery only: no x86 CPUID backend, no I/O or XML
 * plugin loaded (topology.c says why). Returns 0, or -1 with *topo left
 * unset. Call it before the runtime's VPs run (it may touch environ). */
NTH_HIDDEN int nth_topology_load(hwloc_topology_t *topo, unsigned long flags);

/* ---- VPs (vp.c), overflow (overflow.c) -------------------------------- */

/* Start the VPs. lazy != 0 (a cpumgr daemon runs: init.c asks the client
 * before): VPs other than VP 0 are born unbound and disabled, and park at
 * once, without spinning, until the first assignment that gives them a CPU
 * (bench/RESULTS.md "lazy"). 0, or EAGAIN. */
NTH_HIDDEN int nth_vps_start(const nth_config_t *cfg, int lazy);
NTH_HIDDEN void nth_vp_bind(struct nth_vp *vp);
NTH_HIDDEN int nth_vp_idle_on_own_stack(struct nth_vp *vp);

/* At a scheduling point: bind the VP's kernel thread to vp->cpu if a
 * rebind was asked for (enable(), bounded reclaim) and the VP has a CPU.
 * A disabled VP leaves the request pending: it is about to park, and a
 * thread that bounded reclaim moved off the taken CPU would otherwise bind
 * itself back onto that CPU -- the other application's -- only to park
 * there: two migrations per reclaim and its drain run on a CPU that is no
 * longer ours. enable() renews the request when the VP gets a CPU again,
 * and the cpumgr watcher rebinds a moved VP it finds enabled (note_vps).
 * Owner only. */
static inline void nth_vp_rebind_if_due(struct nth_vp *vp)
{
    /* Acquire on disabled: enable() stores cpu and rebind before it clears
     * disabled, so an enabled VP binds to its new CPU. */
    if (__builtin_expect(__atomic_load_n(&vp->rebind, __ATOMIC_RELAXED), 0) &&
        !__atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE) &&
        __atomic_exchange_n(&vp->rebind, 0, __ATOMIC_ACQUIRE))
        nth_vp_bind(vp);
}
NTH_HIDDEN int nth_overflow_install(void);
NTH_HIDDEN int nth_overflow_vp_altstack(struct nth_vp *vp);

/* ---- hooks for the other parts ----------------------------------------- */

/* (1) Scheduling-point hooks: called on the running VP at every scheduling
 * point (yield, wait, exit) and at each turn of the idle loop, where = one of
 * NTH_SP_*. Keep them short and non-blocking; they may enqueue (nth_to_rq).
 * Registration: up to NTH_HOOKS_MAX; 0, ENOSPC, or EINVAL (NULL). Thread-safe. */
#define NTH_HOOKS_MAX 8
enum { NTH_SP_YIELD = 1, NTH_SP_WAIT, NTH_SP_EXIT, NTH_SP_IDLE };
typedef void (*nth_sched_hook_fn)(struct nth_vp *vp, int where);
NTH_HIDDEN int nth_sched_hook_add(nth_sched_hook_fn fn);
NTH_HIDDEN int nth_sched_hook_remove(nth_sched_hook_fn fn);
NTH_HIDDEN extern int nth_nsched_hooks;
NTH_HIDDEN void nth_run_sched_hooks(struct nth_vp *vp, int where);
static inline void nth_sched_point(struct nth_vp *vp, int where)
{
    if (__builtin_expect(__atomic_load_n(&nth_nsched_hooks, __ATOMIC_RELAXED) != 0, 0))
        nth_run_sched_hooks(vp, where);
}

/* (2) Restrict the VPs to cpus (OS indexes): a VP whose CPU is not in the
 * set parks at its next scheduling point after moving its ready nano-threads
 * to the global queue; parked VPs are rebound to newly allowed CPUs without
 * a VP and unparked. No nano-thread is lost or run twice (DESIGN invariant 2).
 * Returns 0, or EINVAL if cpus has no CPU of the topology. Thread-safe. */
NTH_HIDDEN int nth_vps_set_allowed(hwloc_const_bitmap_t cpus);

/* (2b) The cpumgr daemon's first answer (cpumgr_rt.c) did not grant VP 0's
 * CPU while VP 0 runs main's serial start-up (not parked; disabled only
 * if an earlier answer gave no CPU at all):
 * VP 0 takes a granted CPU that no VP has run on instead -- the name of a
 * lazy VP (vp.c), which takes VP 0's old CPU as its own, still disabled --
 * and its kernel thread is bound there at once (by itself if the caller is
 * VP 0's thread, else from outside). Without it VP 0 ran main's start-up on
 * a CPU that another application holds, bounded reclaim then moved it to
 * the grant, and it moved back whenever its own CPU was given back (two
 * migrations per newcomer, bench/RESULTS.md "mix3"; this one: "mix2").
 * Call before nth_vps_set_allowed(cpus), which then enables VP 0 there if
 * it was disabled. Returns 1 if VP 0 was given a CPU of cpus, else 0
 * (nothing changed). Thread-safe (vps_lock). */
NTH_HIDDEN int nth_vp0_follow_grant(hwloc_const_bitmap_t cpus);

/* (3) Idle-park timeout: the timer queue tells the idle loop how long it may
 * sleep: fn returns ns until vp's earliest deadline, or -1 for none. The idle
 * loop parks no longer than that and then runs its scheduling-point hooks. */
typedef int64_t (*nth_idle_timeout_fn)(struct nth_vp *vp);
NTH_HIDDEN void nth_idle_timeout_set(nth_idle_timeout_fn fn);
NTH_HIDDEN extern nth_idle_timeout_fn nth_idle_timeout;

/* (3b) Park of a VP without a CPU (disabled), provided by the cpumgr
 * client while it is attached: such a VP sleeps on a futex word of the
 * application's slot, which the daemon wakes right after a grant, so a CPU
 * handed to us is taken up by the VP itself, not through the watcher thread
 * and a second wake-up. wait(vp) sleeps at most until the word moves (or
 * returns at once: nothing is lost, the idle loop re-checks); wake(vp) is
 * called by whoever cleared vp's `disabled`. NULL: the VP's own park_word. */
struct nth_park_ops {
    void (*wait)(struct nth_vp *vp);
    void (*wake)(struct nth_vp *vp);
};
NTH_HIDDEN extern const struct nth_park_ops *nth_park_ops;

/* (3c) Dormancy (cpumgr_rt.c, issue 5): while every VP is idle (parked,
 * or in a blocking call with no stand-in running for it) with nothing to
 * run, the cpumgr watcher tells the daemon that the application needs no
 * CPU now (nth_dormant = 1); work appearing ends it, and so does a
 * blocking call's return (nth_blocking_leave). nth_unparks counts VPs
 * leaving park (idle.c), so the watcher sees activity between two of its
 * looks. nth_dormant_check() is the enqueue path's hook: one load when
 * not dormant. nth_timers_earliest(), nth_timers_earliest_real() (slices
 * of longer waits counted at the wait's end, nth_wait_slices): sync_glue.c.
 * While dormant the backstop leaves the shared timer queue alone (its
 * slices would end dormancy every slice): nth_dormancy_ended() kicks it
 * when it ends. */
NTH_HIDDEN extern int nth_dormant;
NTH_HIDDEN extern unsigned long nth_unparks;
NTH_HIDDEN void nth_dormant_end(void);
NTH_HIDDEN void nth_dormant_all_parked(void);
NTH_HIDDEN uint64_t nth_timers_earliest(void);
NTH_HIDDEN uint64_t nth_timers_earliest_real(void);
NTH_HIDDEN void nth_dormancy_ended(void);
static inline void nth_dormant_check(void)
{
    if (__builtin_expect(__atomic_load_n(&nth_dormant, __ATOMIC_SEQ_CST), 0))
        nth_dormant_end();
}

/* Give the calling kernel thread the process's CPU mask from before VP 0
 * was bound (helper threads created from a VP inherit its single CPU). */
NTH_HIDDEN void nth_unbind_self(void);

/* Exit hooks: run by a nano-thread at exit (in nth_exit or after its function
 * returns) before its joiner is woken; key destructors register here.
 * Up to NTH_HOOKS_MAX; 0, ENOSPC, EINVAL. Thread-safe. */
typedef void (*nth_exit_hook_fn)(struct nth_thread *t);
NTH_HIDDEN int nth_exit_hook_add(nth_exit_hook_fn fn);

/* (4) VP hand-off for blocking system calls (DESIGN invariant 4), designed
 * but not implemented yet: the kernel thread of vp, about to block, would
 * publish vp in a hand-off slot and unpark a spare kernel thread that adopts
 * it (sets its TLS VP, runs vp's idle loop on its own stack); on return, the
 * caller enqueues its nano-thread on the global queue and becomes the spare.
 * Returns ENOSYS for now. */
NTH_HIDDEN int nth_vp_handoff(struct nth_vp *vp);

/* (5) Stall watchdog (watchdog.c): a VP whose nano-thread sleeps in the
 * kernel without nth_blocking_enter, for cfg->stall_us with ready
 * nano-threads waiting, gets a stand-in kernel thread that runs them.
 * Starts the monitor thread unless stall_us is 0. 0, ENOMEM, EAGAIN. */
NTH_HIDDEN int nth_watchdog_start(const nth_config_t *cfg);
/* Futex word: 1 while the monitor sleeps because every VP is parked, or
 * dozes because no VP had work queued for a while (watchdog.c); a VP that
 * unparks, and every enqueue that wakes idle VPs while none spins idle
 * (nth_sched_wake_idle), wakes it (Dekker: the
 * monitor publishes the word, then reads nparked or the queues; park()
 * drops nparked and an enqueuer publishes its node, then reads the word). */
NTH_HIDDEN extern int nth_watchdog_sleeping;
static inline void nth_watchdog_unparked(void)
{
    if (__builtin_expect(__atomic_load_n(&nth_watchdog_sleeping, __ATOMIC_SEQ_CST) != 0, 0) &&
        __atomic_exchange_n(&nth_watchdog_sleeping, 0, __ATOMIC_SEQ_CST))
        nth_futex_wake(&nth_watchdog_sleeping, 2);   /* the monitor and the backstop */
}
/* 1 when the process has one VP and membarrier(MEMBARRIER_CMD_PRIVATE_
 * EXPEDITED) is registered (set once by nth_vps_start, before any
 * nano-thread runs): a wake-up on that VP then publishes the woken
 * nano-thread in next_local with a plain store, and only a compiler
 * barrier before reading nth_watchdog_sleeping (make_ready). With one VP
 * no thief or idle VP needs that store ordered before its loads; the
 * dozing monitor, the one reader left, supplies the barrier of this
 * asymmetric Dekker itself (nth_watchdog_doze_fence), as liburcu's
 * urcu-memb and mutex_bias.h do. 0: the exchange and the idle-VP check. */
NTH_HIDDEN extern int nth_next_local_plain;
/* Sets nth_next_local_plain for nvps VPs (registering membarrier when
 * nvps is 1). Called once, before any nano-thread is made ready. */
NTH_HIDDEN void nth_next_local_plain_init(int nvps);
/* Lend vp's CPU and ready queues to a stand-in kernel thread now (its
 * nano-thread is in the kernel inside nth_blocking_enter/leave): the
 * stand-in runs vp's local and the global ready nano-threads until vp's
 * switch counter moves (nth_blocking_leave bumps it) or nothing is left.
 * 0 (also when one already serves vp), EAGAIN (no memory, no thread, or vp
 * is no real VP). Any kernel thread. */
NTH_HIDDEN int nth_standin_lend(struct nth_vp *vp);
/* 1 while a stand-in holds vp's lease (runs, or is about to run, its
 * ready nano-threads while vp's kernel thread is in a system call). */
NTH_HIDDEN int nth_standin_serving(const struct nth_vp *vp);
/* The nano-thread a stand-in runs (shell: the stand-in's VP, id -1) is
 * about to block in the kernel: the stand-in gives up its lease on the
 * stalled VP and lends the VP to a fresh stand-in if work is waiting, as
 * Go's entersyscall hands its P on. Otherwise the stand-in would carry the
 * lease into the kernel, and with each VP's kernel thread and its one
 * stand-in blocked no kernel thread would be left for the ready
 * nano-threads (M threads blocked in read() on 2 VPs deadlocked for M >= 3).
 * 0, or EAGAIN when no stand-in could be had (the backstop tries again).
 * Called on the stand-in's own kernel thread. */
NTH_HIDDEN int nth_standin_handoff(struct nth_vp *shell);
/* Stand-ins started so far, and nano-threads they ran (tests, bench). */
NTH_HIDDEN unsigned long nth_watchdog_stalls(void);
NTH_HIDDEN unsigned long nth_watchdog_ran(void);
/* Stand-in kernel threads made so far (cached ones included; at most
 * NTH_STANDINS_MAX), and how many lends that cap refused. Any thread. */
NTH_HIDDEN unsigned nth_watchdog_standins(void);
NTH_HIDDEN unsigned long nth_watchdog_capped(void);
/* Check passes the stall backstop has made (tests). */
NTH_HIDDEN unsigned long nth_watchdog_backstop_passes(void);
/* Tests only, with NTH_TEST_MONITOR_STEPPED=1 in the environment at start:
 * let the monitor make one check, wait (sched_yield, no nano-thread
 * switch) until it has, and return how many times it has decided to doze
 * so far. Without the variable the monitor never waits and this hangs:
 * never call it then. Any thread; one caller at a time. */
NTH_HIDDEN unsigned long nth_watchdog_test_step(void);
/* (5b) Alarms nobody else fires. A VP whose kernel thread is in a system
 * call (nth_blocking_enter) reaches no scheduling point, so it fires no
 * alarm; with every enabled VP in the kernel (one VP, or all of them) the
 * backstop fires the shared alarms itself. fn, registered by the timer
 * queues on first use (sync_glue.c), fires what is due when no enabled VP
 * outside the kernel can, and returns the next deadline it must wake for
 * (CLOCK_MONOTONIC ns, UINT64_MAX: none). Starts the backstop if it is not
 * running (NTH_STALL_US=0: then it serves only these alarms). */
typedef uint64_t (*nth_orphan_timers_fn)(void);
NTH_HIDDEN void nth_watchdog_timers_set(nth_orphan_timers_fn fn);
/* An alarm nobody else fires is due at deadline (CLOCK_MONOTONIC ns):
 * wakes the backstop if it planned to sleep past it. Any thread; a futex
 * wake only then. */
NTH_HIDDEN void nth_watchdog_timers_kick(uint64_t deadline);
/* Called by nth_blocking_enter once vp has published `blocking`, when vp
 * has a timer queue (vp->timerq, one load otherwise): moves vp's alarms to
 * where others fire them. Set by the timer queues before any VP gets a
 * queue. */
typedef void (*nth_blocking_timers_fn)(struct nth_vp *vp);
NTH_HIDDEN extern nth_blocking_timers_fn nth_blocking_timers;

/* (6) Switch-in hook (nth_switch_hook_set in nth.h): called after a resumed
 * nano-thread's post-switch work, with t->user[NTH_SWITCH_SLOT]. */
#define NTH_SWITCH_SLOT 1
NTH_HIDDEN extern nth_switch_hook_fn nth_switch_hook;

/* (7) fork() (fork.c). In a child of fork() only the forking kernel
 * thread lives on, and any lock another kernel thread held at the fork
 * stays held for ever: nth_fork_child, a pthread_atfork child handler
 * installed at start-up, makes the runtime a one-VP runtime running the
 * forking nano-thread on VP 0. Each part resets its own process-wide
 * state through these, never waiting on a lock (they reinitialise them);
 * only nth_fork_child calls them, on the child's only kernel thread. */
NTH_HIDDEN void nth_fork_install(void);
NTH_HIDDEN void nth_stack_fork_child(void);      /* stack.c: class and slab locks */
NTH_HIDDEN void nth_sched_fork_child(void);      /* sched.c: hook registration lock */
NTH_HIDDEN void nth_exit_hooks_fork_child(void); /* nano_thread.c */
NTH_HIDDEN void nth_keys_fork_child(void);       /* key.c */
/* sync_glue.c: drop every alarm (their waiters died with their kernel
 * threads) and give vp0 an empty timer queue if the timer hooks are in. */
NTH_HIDDEN void nth_timers_fork_child(struct nth_vp *vp0);
/* watchdog.c: forget the monitor, backstop and stand-ins, then start the
 * watchdog again for the new VP set (not under ThreadSanitizer, which
 * kills a child that starts threads after a multi-threaded fork). */
NTH_HIDDEN void nth_watchdog_fork_child(void);
/* cpumgr_client.c / cpumgr_rt.c: the child runs alone (DESIGN invariant 8)
 * and never writes the parent's slot. */
NTH_HIDDEN void nth_cpumgr_client_fork_child(void);
NTH_HIDDEN void nth_cpumgr_rt_fork_child(void);

/* The VP's stats for tests. */
NTH_HIDDEN uint64_t nth_vp_nstarted(int vp);
NTH_HIDDEN uint64_t nth_vp_ncalled(int vp);

#endif
