/*
 * cpumgr_probe.h -- timestamps along the path of a CPU given to this
 * application (bench/cpumgr --breakdown). Off by default: one relaxed load
 * of `on` on paths that are already slow (a VP leaving a disabled park, a
 * rebind, a new assignment), nothing on the scheduling fast path.
 */
#ifndef NTH_CPUMGR_PROBE_H
#define NTH_CPUMGR_PROBE_H

#include <stdint.h>
#include <time.h>

struct nth_cpumgr_probe {
    int on;              /* set by a bench; nobody else writes the stamps */
    uint64_t notice_ns;  /* a new assignment was read from the slot */
    int notice_vp;       /* by VP id, or -1: the watcher */
    uint64_t enable_ns;  /* nth_vps_set_allowed() enabled a disabled VP */
    uint64_t unpark_ns;  /* a VP that parked disabled left its futex wait */
    uint64_t bound_ns;   /* that VP's kernel thread was rebound */
    uint64_t move_ns;    /* bounded reclaim: the watcher starts a move */
    uint64_t moved_ns;   /* and its sched_setaffinity returned */
    uint64_t handoff_ns; /* a CPU handed off by its releaser was taken */
    /* Finer stamps of the grant's path on the receiving VP (realloc
     * breakdown): its futex wait in park_wait() returned, on which CPU;
     * the stall monitor's wake-up after the unpark was done; whether the
     * rebind made a system call (sched_setaffinity) or was skipped. */
    uint64_t vp_woke_ns;
    int vp_woke_cpu;
    uint64_t wd_ns;
    int bind_syscall;
    /* Bounded reclaim: the watcher's last pass that left a disabled VP
     * where it was, and why (NTH_PROBE_SKIP_*): a reclaim with no move
     * stamp of its own says here what the watcher saw instead. */
    int skip_why;
    int skip_vp;         /* the VP it left */
    int skip_vp_cpu;     /* that VP's CPU (vp->cpu) */
    int64_t skip_due_in; /* ns to the move's due time (NOT_DUE) */
    uint64_t skip_ns;
    /* The watcher's last sleep: the deadline it asked for, when it woke,
     * and the CPU it made its last move from. */
    int64_t wait_until_ns;
    uint64_t woke_ns;
    int move_cpu;
};

enum {
    NTH_PROBE_SKIP_NO_CLOCK = 1, /* disabled, but no reclaim clock started */
    NTH_PROBE_SKIP_MOVED,        /* already moved (s->moved) */
    NTH_PROBE_SKIP_PARKED,       /* parked: it left by itself */
    NTH_PROBE_SKIP_NOT_DUE,      /* its deadline is ahead */
    NTH_PROBE_SKIP_NOWHERE,      /* no CPU assigned to move it to */
};

__attribute__((visibility("hidden"))) extern struct nth_cpumgr_probe nth_cpumgr_probe;

/* CLOCK_MONOTONIC ns into *w when the probe is on. Any thread. */
static inline void nth_cpumgr_stamp(uint64_t *w)
{
    if (__builtin_expect(__atomic_load_n(&nth_cpumgr_probe.on, __ATOMIC_RELAXED), 0)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        __atomic_store_n(w, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
                         __ATOMIC_RELAXED);
    }
}

/* Why the watcher left a disabled VP on its CPU (bench --breakdown). */
static inline void nth_cpumgr_probe_skip(int why, int64_t due_in, int vp, int cpu)
{
    if (__builtin_expect(__atomic_load_n(&nth_cpumgr_probe.on, __ATOMIC_RELAXED), 0)) {
        __atomic_store_n(&nth_cpumgr_probe.skip_vp, vp, __ATOMIC_RELAXED);
        __atomic_store_n(&nth_cpumgr_probe.skip_vp_cpu, cpu, __ATOMIC_RELAXED);
        __atomic_store_n(&nth_cpumgr_probe.skip_why, why, __ATOMIC_RELAXED);
        __atomic_store_n(&nth_cpumgr_probe.skip_due_in, due_in, __ATOMIC_RELAXED);
        nth_cpumgr_stamp(&nth_cpumgr_probe.skip_ns);
    }
}

#endif
