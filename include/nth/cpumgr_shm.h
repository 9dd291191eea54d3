/*
 * nth/cpumgr_shm.h -- the one shared-memory layout between the cpumgr daemon
 * and the libnth client. Both sides include this file and nothing else of
 * each other, so it depends on the C library only.
 *
 * The segment is a POSIX shared-memory object (shm_open(3)) named by
 * NTH_CPUMGR (client) or --name (daemon), default "/nth-cpumgr-<uid>".
 * The daemon creates it (mode 0600, or 0660 with --group) and writes the
 * header; clients claim one slot each with a compare-and-swap on its state.
 *
 * Who writes what (everything else is read-only for that side):
 *   header          daemon only (rotations: a counter, diagnostics)
 *   slot: state FREE->CLAIMING->ACTIVE, pid, start_time, name, priority,
 *         request, affinity, req_seq, home_cpu1, dormant
 *                                    client (the owner)
 *   slot: assigned_count, assigned, aseq, cpu_ns, grant_ns, budget_ns
 *                       daemon only
 *   header: wake, wake_ns  any client (wake_ns untrusted: range-checked)
 *   slot: gen           daemon only (bumped per new occupant)
 *   slot: vp_wake       all: a futex counter, only ever bumped and waited
 *                       on, never read for a decision by the daemon; a
 *                       releasing client bumps the receiver's (hand-off)
 *   slot: state ACTIVE->FREE          client at detach, or daemon at death
 *   cpu[]: token, owner, next_slot, next_gen       daemon only
 *   cpu[]: handed       the CPU's owner, when it releases the CPU
 * The daemon treats every client-written word as untrusted input and range
 * checks it; clients trust the daemon (same user or group), but still
 * range-check indices read from the segment before using them.
 *
 * One-hop hand-off (layout 3). A CPU released by its owner goes to the
 * application the daemon computed in advance: at each publication the
 * daemon arms, per CPU, the slot that would get it if its owner gave it up
 * (next_slot, next_gen) under a fresh token. The releaser writes the token
 * into handed and wakes the receiver's parked VPs itself (vp_wake); the
 * daemon, woken only for CPUs not handed off, confirms at its next period.
 * The receiver counts the CPU as its own while
 * handed == token != 0, so the daemon is not on the path of the
 * reallocation. A hand-off is good only while the receiver's aseq is the
 * one recorded when it was armed (next_aseq): the daemon disarms the
 * records not handed off (token 0) before it publishes anything, always
 * publishes again to a receiver of a hand-off (which ends it: the CPU is
 * in the new assignment, or not), and re-arms after, so it stays the
 * authority and repairs a wrong or forged hand-off.
 *
 * Change LAYOUT_VERSION whenever a byte of this layout changes meaning: both
 * sides refuse a segment of another version with a clear message.
 */
#ifndef NTH_CPUMGR_SHM_H
#define NTH_CPUMGR_SHM_H

#include <fcntl.h>
#include <linux/futex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define NTH_CPUMGR_MAGIC          UINT64_C(0x52474d5550434e4e) /* "NNCPUMGR" */
#define NTH_CPUMGR_LAYOUT_VERSION 6u
#define NTH_CPUMGR_MAX_CPUS       1024u  /* OS CPU indices 0..1023 */
/* How far before a pass a client's wake_ns may date the reclaim budget of
 * what that pass takes away (ns). The daemon's own wake-up on a busy
 * machine is part of the time a new owner waits, so the budget runs from
 * the request; the bound keeps a wrong or hostile wake_ns from cutting
 * another application's budget by more than this. */
#define NTH_CPUMGR_BUDGET_BACK_NS 1000000u
#define NTH_CPUMGR_MASK_WORDS     (NTH_CPUMGR_MAX_CPUS / 64u)
#define NTH_CPUMGR_MAX_SLOTS      64u    /* attached applications at once (at
                                            most 64: a 64-bit set of slots) */
#define NTH_CPUMGR_NAME_LEN       32u    /* bytes, NUL included */
#define NTH_CPUMGR_PRIO_MIN       1
#define NTH_CPUMGR_PRIO_MAX       1000
#define NTH_CPUMGR_PRIO_DEFAULT   1

/* Slot states. Any other value is nonsense and the slot is ignored. */
enum nth_cpumgr_slot_state {
    NTH_CPUMGR_SLOT_FREE = 0,     /* claimable by CAS FREE -> CLAIMING */
    NTH_CPUMGR_SLOT_CLAIMING = 1, /* owner is filling pid/request; not used yet */
    NTH_CPUMGR_SLOT_ACTIVE = 2,   /* considered by the policy */
};

/* Daemon states in the header. */
enum nth_cpumgr_daemon_state {
    NTH_CPUMGR_DAEMON_STARTING = 0,
    NTH_CPUMGR_DAEMON_RUNNING = 1,
    NTH_CPUMGR_DAEMON_STOPPED = 2, /* clean stop: segment unlinked, go alone */
};

/* One application. 64-byte aligned so two slots never share a cache line. */
struct nth_cpumgr_slot {
    /* --- client-written --- */
    uint32_t state;                      /* enum nth_cpumgr_slot_state, atomic */
    int32_t pid;                         /* owner's process id */
    uint64_t start_time;                 /* /proc/PID/stat field 22 (clock ticks
                                            since boot): pid + start time name
                                            a process, the pid alone does not */
    char name[NTH_CPUMGR_NAME_LEN];      /* program name, NUL-terminated */
    int32_t priority;                    /* PRIO_MIN..PRIO_MAX, atomic */
    int32_t request;                     /* CPUs wanted, 0..MAX_CPUS, atomic */
    uint32_t req_seq;                    /* bumped after each change, atomic */
    uint32_t vp_wake;                    /* futex word (shared) on which the
                                            owner's VPs without a CPU sleep:
                                            the daemon adds 1 and wakes them
                                            after publishing a grant, so the
                                            CPU is taken up without another
                                            thread's hop; the owner bumps it
                                            too. Garbage here costs the
                                            daemon nothing */
    uint64_t affinity[NTH_CPUMGR_MASK_WORDS]; /* owner's affinity mask, bit i =
                                                 OS CPU i; never given others */
    /* --- daemon-written --- */
    uint32_t aseq;                       /* seqlock over assigned*: odd while
                                            the daemon writes; aseq/2 is the
                                            slot's allocation epoch, atomic */
    uint32_t assigned_count;             /* CPUs in assigned[] */
    uint64_t assigned[NTH_CPUMGR_MASK_WORDS]; /* bit i = OS CPU i is ours */
    uint64_t shared[NTH_CPUMGR_MASK_WORDS];   /* subset of assigned[] that is
                                                 shared with one other app */
    uint64_t cpu_ns;                     /* CPU-nanoseconds allocated so far */
    uint64_t grant_ns;                   /* CLOCK_MONOTONIC ns of the last
                                            publication (diagnostics) */
    uint32_t gen;                        /* occupant generation, never 0 once
                                            the daemon knows the occupant:
                                            names it in cpu[].next_gen */
    uint64_t budget_ns;                  /* CLOCK_MONOTONIC ns from which a
                                            CPU this publication takes away
                                            counts its reclaim budget: the
                                            request that caused it (wake_ns,
                                            at most NTH_CPUMGR_BUDGET_BACK_NS
                                            before the pass), else the pass;
                                            layout 4 */
    /* --- client-written (layout 5) --- */
    uint32_t home_cpu1;                  /* OS index + 1 of the CPU the
                                            owner's main VP is bound to, 0 =
                                            unknown: a first assignment
                                            there moves no running thread.
                                            A hint, range-checked; atomic */
    /* --- client-written (layout 6) --- */
    uint32_t dormant;                    /* 1 = every VP of the owner is
                                            parked with nothing to run: it
                                            needs no CPU now, and request
                                            keeps what it wants once work
                                            appears (it writes 0 then and
                                            wakes the daemon). The daemon
                                            counts it as asking for 0:
                                            no CPU, no turn in the
                                            rotation, nothing billed. Any
                                            value but 1 counts as 0;
                                            atomic */
} __attribute__((aligned(64)));

/* One CPU's hand-off record (see the header comment). A reader takes token
 * first and last (acquire) and uses the fields only when both are equal and
 * nonzero; the daemon stores token 0, the fields, then the new token. */
struct nth_cpumgr_cpu {
    uint32_t token;                      /* arming token, 0 = not armed */
    uint32_t owner;                      /* slot index + 1 owning this CPU
                                            alone, 0 = none or shared */
    uint32_t next_slot;                  /* slot index + 1 that gets it when
                                            the owner releases it, 0 = none */
    uint32_t next_gen;                   /* that slot's gen */
    uint32_t handed;                     /* owner-written: == token once
                                            handed off */
    uint32_t next_aseq;                  /* the receiver's aseq when armed:
                                            the hand-off is good until the
                                            daemon publishes for it again */
    uint32_t pad[2];
};

/* The segment: this header followed by nothing else. */
struct nth_cpumgr_shm {
    uint64_t magic;                      /* NTH_CPUMGR_MAGIC */
    uint32_t layout_version;             /* NTH_CPUMGR_LAYOUT_VERSION */
    uint32_t size;                       /* sizeof(struct nth_cpumgr_shm) */
    uint32_t max_slots;                  /* NTH_CPUMGR_MAX_SLOTS */
    uint32_t ncpus;                      /* CPUs the daemon owns */
    uint64_t cpus[NTH_CPUMGR_MASK_WORDS];/* which: bit i = OS CPU i */
    uint64_t epoch;                      /* allocation epoch, +1 per change */
    int32_t daemon_pid;
    uint32_t daemon_state;               /* enum nth_cpumgr_daemon_state */
    uint64_t daemon_start_time;          /* /proc/PID/stat field 22 */
    uint64_t heartbeat_ms;               /* CLOCK_MONOTONIC ms at each period */
    uint32_t period_ms;                  /* daemon's --period */
    uint32_t wake;                       /* futex word: clients add 1 and
                                            FUTEX_WAKE (shared, not private) */
    uint64_t pass_ns;                    /* CLOCK_MONOTONIC ns at which the
                                            last pass that published began
                                            (diagnostics: wake-to-grant) */
    uint64_t wake_ns;                    /* client-written: CLOCK_MONOTONIC ns
                                            of the earliest wake not yet
                                            answered (a client sets it from
                                            0 before it bumps wake; the
                                            daemon takes it back to 0 at
                                            each pass); layout 4 */
    uint64_t exit_grace_ms;              /* daemon's --exit-grace: a client
                                            that exits hands no CPU off
                                            (the daemon keeps its CPUs for a
                                            newcomer that long); layout 5 */
    uint64_t rotations;                  /* quanta at whose end the daemon
                                            rotated CPUs (someone wanted
                                            more than it held), since it
                                            started: diagnostics; layout 6 */
    uint64_t reserved[4];
    struct nth_cpumgr_slot slots[NTH_CPUMGR_MAX_SLOTS];
    struct nth_cpumgr_cpu cpu[NTH_CPUMGR_MAX_CPUS]; /* indexed by OS CPU */
};

static inline int nth_cpumgr_mask_test(const uint64_t *m, unsigned cpu)
{
    return cpu < NTH_CPUMGR_MAX_CPUS && ((m[cpu / 64u] >> (cpu % 64u)) & 1u);
}

static inline void nth_cpumgr_mask_set(uint64_t *m, unsigned cpu)
{
    if (cpu < NTH_CPUMGR_MAX_CPUS)
        m[cpu / 64u] |= UINT64_C(1) << (cpu % 64u);
}

/* Is CPU c handed off to slot `slot` (index) of generation gen, whose
 * assignment the caller read at aseq? Reads the record under its token
 * (see struct nth_cpumgr_cpu). */
static inline int nth_cpumgr_handed_to(const struct nth_cpumgr_shm *s, unsigned c,
                                       unsigned slot, uint32_t gen, uint32_t aseq)
{
    if (c >= NTH_CPUMGR_MAX_CPUS || slot >= NTH_CPUMGR_MAX_SLOTS || !gen)
        return 0;
    const struct nth_cpumgr_cpu *r = &s->cpu[c];
    /* Sequentially consistent against the daemon's disarm (token 0, then
     * it reads handed): a hand-off seen here is seen by the daemon. */
    uint32_t t = __atomic_load_n(&r->token, __ATOMIC_SEQ_CST);
    if (!t)
        return 0;
    int ok = __atomic_load_n(&r->next_slot, __ATOMIC_SEQ_CST) == slot + 1u &&
             __atomic_load_n(&r->next_gen, __ATOMIC_SEQ_CST) == gen &&
             __atomic_load_n(&r->next_aseq, __ATOMIC_SEQ_CST) == aseq &&
             __atomic_load_n(&r->handed, __ATOMIC_SEQ_CST) == t;
    return ok && __atomic_load_n(&r->token, __ATOMIC_SEQ_CST) == t;
}

/* Release every CPU in mask (slot `slot`'s, which the caller no longer runs
 * on) to its armed next owner, and wake each receiver's parked VPs: the
 * one-hop hand-off. The caller has already published its smaller request.
 * It wakes the daemon afterwards only if some CPU was not handed off: the
 * daemon confirms the rest at its next period (woken now, it tends to run
 * its pass on the CPU just released, before the receiver). Indices read
 * from the segment are range-checked; a CPU not owned by slot alone or not
 * armed is left to the daemon. Returns the number of CPUs handed off.
 * Thread-safe (atomics and futex wakes only); async-signal-safe. */
static inline unsigned nth_cpumgr_handoff(struct nth_cpumgr_shm *s, unsigned slot,
                                          const uint64_t *mask)
{
    uint64_t woken = 0; /* receivers already woken, bit = slot index (< 64) */
    unsigned n = 0;
    if (slot >= NTH_CPUMGR_MAX_SLOTS)
        return 0;
    for (unsigned c = 0; c < NTH_CPUMGR_MAX_CPUS; c++) {
        if (!nth_cpumgr_mask_test(mask, c))
            continue;
        struct nth_cpumgr_cpu *r = &s->cpu[c];
        uint32_t t = __atomic_load_n(&r->token, __ATOMIC_ACQUIRE);
        if (!t || __atomic_load_n(&r->owner, __ATOMIC_ACQUIRE) != slot + 1u)
            continue;
        uint32_t nx = __atomic_load_n(&r->next_slot, __ATOMIC_ACQUIRE);
        if (nx < 1 || nx > NTH_CPUMGR_MAX_SLOTS || nx == slot + 1u ||
            __atomic_load_n(&r->token, __ATOMIC_ACQUIRE) != t)
            continue;
        __atomic_store_n(&r->handed, t, __ATOMIC_SEQ_CST);
        n++;
        unsigned k = nx - 1u;
        uint64_t bit = UINT64_C(1) << (k % 64u);
        if (woken & bit)
            continue;
        woken |= bit;
        /* Any of its parked VPs re-reads its CPUs (the plain wake matches
         * every bitset); the receiver's own binding puts the right one on
         * this CPU, which we leave now. Shared futex: another process. */
        __atomic_add_fetch(&s->slots[k].vp_wake, 1, __ATOMIC_SEQ_CST);
        long woke = syscall(SYS_futex, &s->slots[k].vp_wake, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
        /* No VP asleep there (its spare VPs are lazy, never given a CPU:
         * they sleep on words of their own): wake its watcher, on aseq,
         * as the daemon's publish_wake does; it reads the hand-off. Else
         * the receiver saw it at its watcher's tick, up to 10 ms later
         * (bench/RESULTS.md "realloc2": the first change of each run). A
         * wake, not a write: aseq is the daemon's seqlock. */
        if (woke <= 0)
            syscall(SYS_futex, &s->slots[k].aseq, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
    }
    return n;
}

/* Start time of process pid: field 22 of /proc/PID/stat, in clock ticks
 * since boot; 0 if there is no such process or it is a zombie. Together with the pid it names
 * one process for good, as pids are reused. Async-signal-safe. */
static inline uint64_t nth_cpumgr_proc_start_time(int32_t pid)
{
    char path[40], buf[1024];
    if (pid <= 0)
        return 0;
    /* Hand-made "/proc/%d/stat": no stdio, usable anywhere. */
    char num[12];
    int k = 0;
    for (int32_t v = pid; v > 0 && k < 11; v /= 10)
        num[k++] = (char)('0' + v % 10);
    memcpy(path, "/proc/", 6);
    int n = 6;
    while (k > 0)
        path[n++] = num[--k];
    memcpy(path + n, "/stat", 6);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    /* The system call itself: in a program under the pthread shim a plain
     * read() from libnth would enter the shim's wrapper. */
    ssize_t len = (ssize_t)syscall(SYS_read, fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0)
        return 0;
    buf[len] = 0;
    /* The command name (field 2) may hold spaces and ')': skip past the last. */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    /* A zombie has ended: it owns no CPU even before its parent reaps it. */
    if (p[0] == ' ' && (p[1] == 'Z' || p[1] == 'X'))
        return 0;
    for (int field = 2; field < 22 && *p; p++)
        if (*p == ' ')
            field++;
    return strtoull(p, NULL, 10);
}

/* The bytes of slot i in the segment file, for the slot lock: a client
 * holds a POSIX read lock (fcntl F_SETLK, F_RDLCK) on them from before it
 * sets its slot ACTIVE until it leaves it. The kernel records the locking
 * pid, so a daemon that may not read the client's /proc/PID/maps (another
 * user's process, cpumgr --group) still learns from F_GETLK that this pid
 * has the segment open: a forged slot naming some other process has no
 * such lock. Not part of the layout: older clients simply hold none. */
static inline void nth_cpumgr_slot_lock_range(unsigned i, off_t *start, off_t *len)
{
    *start = (off_t)(offsetof(struct nth_cpumgr_shm, slots) + i * sizeof(struct nth_cpumgr_slot));
    *len = (off_t)sizeof(struct nth_cpumgr_slot);
}

/* Default segment name for user uid into buf (>= 32 bytes). */
static inline void nth_cpumgr_default_name(char *buf, unsigned long uid)
{
    char num[24];
    int k = 0;
    do { num[k++] = (char)('0' + uid % 10); uid /= 10; } while (uid && k < 23);
    memcpy(buf, "/nth-cpumgr-", 12);
    int n = 12;
    while (k > 0)
        buf[n++] = num[--k];
    buf[n] = 0;
}

#endif /* NTH_CPUMGR_SHM_H */
