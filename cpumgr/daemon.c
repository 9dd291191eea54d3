/*
 * daemon.c -- the cpumgr main loop: read the slots (untrusted), reclaim
 * dead ones, run the policy and the placement, publish assignments.
 */
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "accounting.h"
#include "cpulist.h"
#include "deathwatch.h"
#include "enforce.h"
#include "trace.h"
#include "daemon.h"
#include "masks.h"
#include "placement.h"
#include "others.h"
#include "segment.h"
#include "nth/cpumgr_sigbus.h"
#include "../nthlib/sched_slice.h"

#define PID_LIMIT 4194304 /* PID_MAX_LIMIT on 64-bit Linux */
#define LIVE_DEFER_NS 200000u /* a liveness check put off by a request */

/* What the daemon believes about one slot; never re-read from the segment
 * for decisions once checked. */
struct slotpriv {
    int known;              /* an application we account for */
    int valid;              /* passed the checks this period */
    int32_t pid;
    uint64_t start;
    char name[NTH_CPUMGR_NAME_LEN];
    int priority, request;
    int dormant;            /* the client says it needs no CPU now (slot's
                               dormant == 1): planned as a request of 0 */
    int home1;              /* its main VP's CPU + 1 (checked), 0 = none */
    int fresh;              /* never given a CPU yet: its VP 0 still runs the
                               start-up where it began (home1 applies) */
    hwloc_bitmap_t allowed, assigned, shared;
    hwloc_bitmap_t allowed_now; /* plan()'s scratch: allowed less cooling CPUs */
    uint64_t cpu_ns;
    int bad_logged;         /* "nonsense" already logged for this occupant */
    int force_publish;      /* new occupant: publish even an empty set */
    int primed;             /* restart: assigned/cpu_ns taken from the segment */
    uint64_t claim_since;   /* ms, when seen CLAIMING */
    hwloc_bitmap_t taken;   /* CPUs taken away, not yet checked for its threads */
    uint64_t taken_ns;      /* when the last of them was taken */
    int client_ok;          /* 0 unknown, 1 maps our segment, 2 does not */
    int enforce_logged;     /* "moved its threads" already logged */
    struct cm_moved *moved; /* threads enforce() moved, to give back their
                               masks (cm_enforce_restore) */
    uint32_t gen;           /* occupant generation written to the slot */
    double credit;          /* rotation: CPU-quanta owed (policy.h) */
    uint64_t ran;           /* CPUs c < 64 (bit c) it held since it attached,
                               and its home: where its VPs are bound (the
                               rotation's CPU-sticky turns, policy.h) */
    int32_t refused_pid;    /* occupant refused at admission (its pid does */
    uint64_t refused_start; /* not map the segment): ignored, not re-checked */
};

static volatile sig_atomic_t stop_flag;
static void on_stop(int sig) { (void)sig; stop_flag = 1; }

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Write one slot's assignment under its seqlock and stamp the grant; the
 * client learns of it at its next poll or from publish_wake(). */
/* Start of the reclaim budget of what this pass takes away (budget_ns):
 * set at the top of each pass. The daemon is one thread. */
static uint64_t budget_from_ns;

static void publish_write(struct nth_cpumgr_slot *s, hwloc_const_bitmap_t cpus,
                          hwloc_const_bitmap_t shared)
{
    uint32_t q = __atomic_load_n(&s->aseq, __ATOMIC_RELAXED);
    q |= 1u; /* a client may have scribbled: force odd = "being written" */
    /* An exchange with acquire-release order: the writes below cannot move
     * before the odd value (a fence would do; GCC's ThreadSanitizer
     * rejects fences). */
    (void)__atomic_exchange_n(&s->aseq, q, __ATOMIC_ACQ_REL);
    cm_bitmap_to_mask(cpus, s->assigned);
    cm_bitmap_to_mask(shared, s->shared);
    __atomic_store_n(&s->assigned_count, (uint32_t)hwloc_bitmap_weight(cpus), __ATOMIC_RELAXED);
    uint64_t t = now_ns();
    __atomic_store_n(&s->grant_ns, t, __ATOMIC_RELAXED);
    __atomic_store_n(&s->budget_ns, budget_from_ns && budget_from_ns <= t ? budget_from_ns : t,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&s->aseq, q + 1, __ATOMIC_RELEASE);
}

/* Wake the client's sleepers after publish_write(). Only adds and wakes:
 * whatever a client wrote to these words is harmless. loses: the slot
 * lost a CPU (or we do not know). */
static void publish_wake(struct nth_cpumgr_slot *s, int loses)
{
    /* Its VPs without a CPU sleep on vp_wake: one of them takes a CPU
     * granted now without any other thread's hop. First: the woken VP is
     * often bound to the very CPU this pass runs on and gets it only when
     * the daemon sleeps, so every wake after this one delays it. */
    __atomic_add_fetch(&s->vp_wake, 1, __ATOMIC_SEQ_CST);
    long woke = syscall(SYS_futex, &s->vp_wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    /* A client whose VPs are all busy sleeps on aseq in a watcher thread
     * (bounded reclaim, daemon liveness): wake it now, not at its tick. A
     * grant that woke a VP needs no watcher (that VP applies it), and a
     * futex wake that finds a sleeper costs this VM 5-25 us. */
    if (loses || woke <= 0)
        syscall(SYS_futex, &s->aseq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void publish(struct nth_cpumgr_slot *s, hwloc_const_bitmap_t cpus,
                    hwloc_const_bitmap_t shared)
{
    publish_write(s, cpus, shared);
    publish_wake(s, 1);
}

static void slot_name(const struct nth_cpumgr_slot *s, char *out)
{
    for (unsigned i = 0; i < NTH_CPUMGR_NAME_LEN; i++) {
        char c = __atomic_load_n(&s->name[i], __ATOMIC_RELAXED);
        /* Control bytes and non-ASCII (a terminal may act on either). */
        out[i] = (c && ((unsigned char)c < 32 || (unsigned char)c >= 127)) ? '?' : c;
    }
    out[NTH_CPUMGR_NAME_LEN - 1] = 0;
}

struct daemon {
    const struct cm_opts *o;
    hwloc_topology_t topo;
    hwloc_bitmap_t owned;
    int ncpus;
    struct nth_cpumgr_shm *shm;
    int segfd;              /* the segment, read-write: slot locks (F_GETLK) and
                               growing it back when shrunk (check_size) */
    unsigned shrinks;       /* and counted */
    unsigned guard_seen;    /* nth_cpumgr_sigbus_grown() at the last check */
    struct slotpriv p[NTH_CPUMGR_MAX_SLOTS];
    unsigned rot;           /* quanta that rotated CPUs since we started: the
                               policy's rotation index, and what the segment's
                               rotations word shows (ours, rewritten each
                               pass: the segment's copy is untrusted) */
    int turn;               /* the quantum ended (rot bumped): the next
                               rebalance may take a holder's CPU */
    int dirty;
    uint64_t pass_ns;       /* when this pass began (its futex wait returned) */
    /* Hand-off records as we armed them (the segment's copy may be
     * scribbled on): token per CPU, 0 = disarmed, and the receiver. */
    uint32_t token;                        /* last token given out */
    uint32_t tok[NTH_CPUMGR_MAX_CPUS];
    uint8_t nxt[NTH_CPUMGR_MAX_CPUS];      /* receiver slot index + 1 */
    /* The header words we own, as we last wrote them (DESIGN invariant 7:
     * the segment's copy is untrusted, any client may scribble on it). */
    struct nth_cpumgr_shm_hdr hdr;
    unsigned hdr_repairs;                  /* repairs so far (one logged) */
    /* --exit-grace: CPUs left by an application that exited, kept from
     * applications that hold CPUs already until cool_until_ns, so that the
     * instance started in its place (a batch queue, the workload driver)
     * finds them free instead of taking them back from a neighbour that
     * grew into them -- each such shrink is a reclaim, often a CPU
     * migration (bench/RESULTS.md "mig2"). Apps holding no CPU (newcomers,
     * rotated out) may take them at once. */
    hwloc_bitmap_t cooling;
    uint64_t cool_until_ns;
};

/* Bump the allocation epoch: ours, then the segment's copy. */
static void bump_epoch(struct daemon *d)
{
    d->hdr.epoch++;
    __atomic_store_n(&d->shm->epoch, d->hdr.epoch, __ATOMIC_RELEASE);
}

/* Compare the segment's header with ours; rewrite it if it differs. Once a
 * pass, before the slots: a scribbled magic, version or daemon state makes
 * every client run alone and `cpumgr status`/`stop` refuse the segment,
 * so it is put back within a period and clients re-attach (invariant 8).
 * The first repair is logged, the others only counted (a hostile client
 * must not flood the log). */
static void check_header(struct daemon *d)
{
    char what[160];
    if (cm_seg_header_repair(d->shm, &d->hdr, what, sizeof what) == 0)
        return;
    if (d->hdr_repairs++ == 0)
        fprintf(stderr, "cpumgr: segment %s: header overwritten by someone else (%s); "
                "rewrote it from the daemon's copy (further repairs counted, not logged)\n",
                d->o->name, what);
}

/* Has someone shrunk the segment file (truncate, `>`, a client's
 * ftruncate)? Grow it back to its size, once a pass before anything reads
 * it: the lost part reads as zeros, which check_header and scan_slot then
 * repair or free (invariant 7). An access between the shrink and this
 * check is caught by the SIGBUS guard (nth/cpumgr_sigbus.h), which does the
 * same. Logged once, counted after. */
static void check_size(struct daemon *d)
{
    struct stat st;
    unsigned g = nth_cpumgr_sigbus_grown();
    int by_guard = g != d->guard_seen, e = 0;
    d->guard_seen = g;
    long long was = -1;
    if (d->segfd >= 0 && fstat(d->segfd, &st) == 0 && (size_t)st.st_size < sizeof *d->shm) {
        was = (long long)st.st_size;
        e = ftruncate(d->segfd, (off_t)sizeof *d->shm) == 0 ? 0 : errno;
    } else if (!by_guard) {
        return;
    }
    if (d->shrinks++ == 0 || e) {
        char size[48] = "";
        if (was >= 0)
            snprintf(size, sizeof size, " to %lld bytes", was);
        fprintf(stderr, "cpumgr: segment %s was shrunk%s by someone else; %s (further shrinks "
                "counted, not logged)\n", d->o->name, size, e ? strerror(e) :
                "grew it back to its size: what was cut reads as zeros, repaired or freed");
    }
}

static void forget(struct daemon *d, int i, const char *reason)
{
    struct slotpriv *p = &d->p[i];
    if (p->known) {
        fprintf(stderr, "cpumgr: application %s (pid %d) %s; %.3f CPU-seconds\n",
                p->name, (int)p->pid, strcmp(reason, "detach") == 0 ? "detached" :
                strcmp(reason, "dead") == 0 ? "is gone, slot reclaimed" :
                strcmp(reason, "overwritten") == 0 ? "lost its slot (overwritten by someone else)" :
                "stopped",
                (double)p->cpu_ns / 1e9);
        int e = cm_account(d->o->accounting, p->name, p->pid, p->priority, p->request,
                           p->cpu_ns, reason);
        if (e)
            fprintf(stderr, "cpumgr: --accounting %s: %s\n", d->o->accounting, strerror(e));
    }
    if (p->known) {
        cm_trace_grant(p->pid, p->name, 0);
        cm_dw_unwatch(i);
        /* A clean exit only: a dead client's CPUs are reclaimed at once
         * (issue 5: dead-client reclaim), a stop ends everything. */
        if (d->o->exit_grace_ms && !strcmp(reason, "detach") && d->cooling) {
            hwloc_bitmap_t mine = hwloc_bitmap_alloc();
            if (mine) {
                hwloc_bitmap_andnot(mine, p->assigned, p->shared);
                if (!hwloc_bitmap_iszero(mine)) {
                    hwloc_bitmap_or(d->cooling, d->cooling, mine);
                    d->cool_until_ns = now_ns() + (uint64_t)d->o->exit_grace_ms * 1000000u;
                }
                hwloc_bitmap_free(mine);
            }
        }
    }
    p->known = p->valid = 0;
    p->primed = 0;
    p->bad_logged = 0;
    p->claim_since = 0;
    hwloc_bitmap_zero(p->assigned);
    hwloc_bitmap_zero(p->shared);
    hwloc_bitmap_zero(p->taken);
    p->client_ok = 0;
    p->enforce_logged = 0;
    /* Leaving us, it runs alone on its own mask (cpumgr(8) --enforce): the
     * threads we moved get theirs back; a dead one's are gone. */
    if (strcmp(reason, "dead") == 0)
        cm_enforce_forget(p->moved);
    else
        (void)cm_enforce_restore(d->topo, p->moved, NULL);
    p->cpu_ns = 0;
    p->credit = 0;
    p->ran = 0;
    d->dirty = 1;
}

static void nonsense(struct daemon *d, int i, const char *what, long v)
{
    struct slotpriv *p = &d->p[i];
    if (!p->bad_logged)
        fprintf(stderr, "cpumgr: slot %d: %s (%ld); ignoring this slot\n", i, what, v);
    p->bad_logged = 1;
    if (p->valid)
        d->dirty = 1;
    p->valid = 0;
}

/* Read and check slot i. Values are copied once (atomically, word by word)
 * and only the copies are used. */
static void scan_slot(struct daemon *d, int i, uint64_t tms, int liveness)
{
    struct nth_cpumgr_slot *s = &d->shm->slots[i];
    struct slotpriv *p = &d->p[i];
    uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
    if (st == NTH_CPUMGR_SLOT_FREE) {
        if (p->known)
            forget(d, i, "detach");
        p->bad_logged = 0;
        p->claim_since = 0;
        p->refused_pid = 0;
        return;
    }
    int32_t pid = __atomic_load_n(&s->pid, __ATOMIC_RELAXED);
    uint64_t start = __atomic_load_n(&s->start_time, __ATOMIC_RELAXED);
    int pid_ok = pid > 0 && pid <= PID_LIMIT;
    if (st == NTH_CPUMGR_SLOT_CLAIMING) {
        /* A client that died between its CAS and ACTIVE must not hold the
         * slot: after a second, a dead or absent owner frees it. */
        if (!p->claim_since)
            p->claim_since = tms;
        if (tms - p->claim_since > 1000 &&
            (!pid_ok || nth_cpumgr_proc_start_time(pid) != start)) {
            uint32_t exp = NTH_CPUMGR_SLOT_CLAIMING;
            __atomic_compare_exchange_n(&s->state, &exp, NTH_CPUMGR_SLOT_FREE, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
            p->claim_since = 0;
        }
        if (p->known)
            forget(d, i, "detach");
        return;
    }
    p->claim_since = 0;
    if (st != NTH_CPUMGR_SLOT_ACTIVE || !pid_ok) {
        /* Nonsense: ignored while a live process may own the slot; freed
         * once none can (no such pid, or it died), else one slot would be
         * lost for the daemon's life per scribble. Looked at once a
         * period. */
        if (st != NTH_CPUMGR_SLOT_ACTIVE)
            nonsense(d, i, "bad state", (long)st);
        else
            nonsense(d, i, "bad pid", (long)pid);
        if ((liveness || !pid_ok) && (!pid_ok || nth_cpumgr_proc_start_time(pid) != start)) {
            uint32_t exp = st;
            if (__atomic_compare_exchange_n(&s->state, &exp, NTH_CPUMGR_SLOT_FREE, 0,
                                            __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
                fprintf(stderr, "cpumgr: slot %d: no live owner; bad slot freed\n", i);
                if (p->known)
                    forget(d, i, "dead");
                p->bad_logged = 0;
                p->refused_pid = 0;
            }
        }
        return;
    }
    /* An occupant refused at admission stays refused (one log line, one
     * read of its maps); only its death, seen once a period, frees the
     * slot. */
    int refused = p->refused_pid && p->refused_pid == pid && p->refused_start == start;
    if (refused && !liveness)
        return;
    /* A new occupant is always checked; known ones once per period, so a
     * futex wake (a request change) is answered without reading /proc. */
    int check = liveness || !p->known || p->pid != pid || p->start != start;
    if (check && nth_cpumgr_proc_start_time(pid) != start) {
        p->refused_pid = 0;
        /* Dead (or the pid was reused by another process): reclaim. Or
         * the slot's pid/start time are no longer those we admitted, and
         * the process we admitted still lives: someone else overwrote
         * them (issue 5, f11t trial: "is gone" was logged for a live
         * process), and "is gone" would be a lie. The slot is freed
         * either way (its words name no live process); the live owner
         * sees its slot is no longer its own and claims another. */
        int overwritten = p->known && (p->pid != pid || p->start != start) &&
                          nth_cpumgr_proc_start_time(p->pid) == p->start;
        if (!p->known)
            fprintf(stderr, "cpumgr: slot %d: owner pid %d is gone, slot reclaimed\n", i, (int)pid);
        else if (overwritten)
            fprintf(stderr, "cpumgr: slot %d: its pid/start time (%d/%llu) were overwritten and "
                    "no longer match a live process, while its owner %s (pid %d/%llu) lives; "
                    "slot reclaimed\n", i, (int)pid, (unsigned long long)start, p->name,
                    (int)p->pid, (unsigned long long)p->start);
        forget(d, i, overwritten ? "overwritten" : "dead");
        publish(s, p->assigned, p->shared);
        uint32_t exp = NTH_CPUMGR_SLOT_ACTIVE;
        __atomic_compare_exchange_n(&s->state, &exp, NTH_CPUMGR_SLOT_FREE, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
        return;
    }
    if (refused)
        return;
    if (p->known && (p->pid != pid || p->start != start)) {
        /* A new occupant without us seeing FREE: close the old account. */
        forget(d, i, "detach");
    }
    int32_t prio = __atomic_load_n(&s->priority, __ATOMIC_RELAXED);
    int32_t req = __atomic_load_n(&s->request, __ATOMIC_RELAXED);
    int prio_bad = prio < NTH_CPUMGR_PRIO_MIN || prio > NTH_CPUMGR_PRIO_MAX;
    int req_bad = req < 0 || req > (int32_t)NTH_CPUMGR_MAX_CPUS;
    if ((prio_bad || req_bad) && p->known && p->valid) {
        /* A live, admitted client: someone else scribbled on its slot
         * (issue 5, fresh11 trial F2). Ignoring the slot would leave the
         * client without a publication (its VPs parked for good); keep
         * its last sane values instead, said once. */
        if (!p->bad_logged)
            fprintf(stderr, "cpumgr: slot %d: %s out of range (%ld); keeping its last sane "
                    "value\n", i, prio_bad ? "priority" : "request",
                    prio_bad ? (long)prio : (long)req);
        p->bad_logged = 1;
        if (prio_bad)
            prio = p->priority;
        if (req_bad)
            req = p->request;
    } else if (prio_bad) {
        nonsense(d, i, "priority out of range", (long)prio);
        return;
    } else if (req_bad) {
        nonsense(d, i, "request out of range", (long)req);
        return;
    }
    hwloc_bitmap_t aff = hwloc_bitmap_alloc();
    if (!aff)
        return;
    cm_mask_to_bitmap(s->affinity, aff);
    hwloc_bitmap_and(aff, aff, d->owned);
    int maps = 1;
    if (!p->known && (maps = cm_maps_segment(pid, d->o->name)) < 0 &&
        cm_seg_slot_locker(d->segfd, (unsigned)i) == pid)
        maps = 2; /* maps unreadable (another user's, --group); its slot lock vouches */
    if (!p->known && maps <= 0) {
        /* Admission: pid and start time name a live process, but one that
         * never mapped the segment is no client (a forged slot): it would
         * hold CPUs nobody runs on. A process whose maps we may not read
         * must hold the slot lock instead: without it anyone in --group
         * could name another user's process. Refused once, not re-read
         * each pass. */
        char nm[NTH_CPUMGR_NAME_LEN];
        slot_name(s, nm);
        if (maps == 0)
            fprintf(stderr, "cpumgr: slot %d: pid %d (\"%s\") does not map %s: not a client; "
                    "slot refused\n", i, (int)pid, nm, d->o->name);
        else
            fprintf(stderr, "cpumgr: slot %d: pid %d (\"%s\"): its maps are not readable and "
                    "it holds no lock on its slot of %s: not a client; slot refused\n",
                    i, (int)pid, nm, d->o->name);
        p->refused_pid = pid;
        p->refused_start = start;
        hwloc_bitmap_free(aff);
        return;
    }
    if (!p->known) {
        p->known = 1;
        p->client_ok = maps == 1 ? 1 : 0;
        p->pid = pid;
        p->start = start;
        slot_name(s, p->name);
        if (!p->primed) {
            p->cpu_ns = 0;
            hwloc_bitmap_zero(p->assigned);
            hwloc_bitmap_zero(p->shared);
        }
        p->primed = 0;
        p->force_publish = 1; /* the client waits for our first answer */
        /* Client-written hint: kept only if it names a CPU we manage
         * (placement also wants it in the app's affinity mask). */
        uint32_t h1 = __atomic_load_n(&s->home_cpu1, __ATOMIC_RELAXED);
        p->home1 = h1 >= 1 && h1 <= NTH_CPUMGR_MAX_CPUS &&
                   hwloc_bitmap_isset(d->owned, h1 - 1u) ? (int)h1 : 0;
        p->fresh = hwloc_bitmap_iszero(p->assigned);
        p->credit = 0;
        p->ran = p->home1 >= 1 && p->home1 <= 64 ? 1ull << (p->home1 - 1) : 0;
        cm_dw_watch(i, pid, start); /* its death wakes us (deathwatch.h) */
        /* A new generation: a hand-off armed for the slot's previous
         * occupant must not be taken by this one. */
        p->gen = __atomic_load_n(&s->gen, __ATOMIC_RELAXED) + 1u;
        if (p->gen == 0)
            p->gen = 1;
        __atomic_store_n(&s->gen, p->gen, __ATOMIC_RELEASE);
        fprintf(stderr, "cpumgr: application %s (pid %d) attached to slot %d\n",
                p->name, (int)pid, i);
        d->dirty = 1;
    }
    /* Untrusted like the rest: only 1 means dormant, and a slip costs the
     * writer its own CPUs only (a dormant app gets none, takes none). */
    int dorm = __atomic_load_n(&s->dormant, __ATOMIC_RELAXED) == 1u;
    if (!p->valid || p->priority != prio || p->request != req || p->dormant != dorm ||
        !hwloc_bitmap_isequal(aff, p->allowed))
        d->dirty = 1;
    if (p->bad_logged && !prio_bad && !req_bad) {
        fprintf(stderr, "cpumgr: slot %d: values are sane again\n", i);
        p->bad_logged = 0;
    }
    /* aseq is the daemon's: odd between passes means someone else wrote
     * it, and the client cannot read its assignment; republish. */
    if (__atomic_load_n(&s->aseq, __ATOMIC_RELAXED) & 1u) {
        p->force_publish = 1;
        d->dirty = 1;
    }
    p->valid = 1;
    p->priority = prio;
    p->request = req;
    p->dormant = dorm;
    hwloc_bitmap_copy(p->allowed, aff);
    hwloc_bitmap_free(aff);
}

/* Policy and placement for the known, valid slots, as rebalance() does;
 * slot `zero` (an index, or -1) counted as asking for no CPU: who would get
 * its CPUs if it gave them up. Fills idx, pl (out, shared allocated) and
 * prev; the caller frees them with plan_free(). Returns the number of
 * slots, or -1 (ENOMEM or a placement failure; nothing to free). */
static int plan(struct daemon *d, int zero, int *idx, struct cm_place *pl, hwloc_bitmap_t *prev)
{
    struct cm_demand dem[NTH_CPUMGR_MAX_SLOTS];
    int counts[NTH_CPUMGR_MAX_SLOTS], n = 0;
    for (int i = 0; i < (int)NTH_CPUMGR_MAX_SLOTS; i++) {
        struct slotpriv *p = &d->p[i];
        if (!p->known || !p->valid)
            continue;
        idx[n] = i;
        dem[n].request = i == zero ? 0 : p->request;
        dem[n].dormant = p->dormant;
        dem[n].priority = p->priority;
        dem[n].eligible = hwloc_bitmap_weight(p->allowed);
        dem[n].credit = p->credit;
        /* The CPU it holds, for the rotation's CPU-sticky turns. */
        hwloc_bitmap_andnot(p->allowed_now, p->assigned, p->shared);
        dem[n].held = hwloc_bitmap_weight(p->allowed_now);
        dem[n].cpu1 = dem[n].held == 1 ? hwloc_bitmap_first(p->allowed_now) + 1 : 0;
        dem[n].ran = p->ran;
        /* Inside a quantum a holder keeps its CPU: only the quantum's end
         * is a turn (a newcomer waits for it, and one that got a CPU just
         * before it is owed the most then). */
        dem[n].keep = !d->turn && dem[n].held > 0;
        n++;
    }
    cm_policy_counts(d->o->policy, dem, n, d->ncpus, d->rot, counts);
    /* CPUs nobody keeps: where an entrant may land on a CPU it ran on. */
    hwloc_bitmap_t spare = hwloc_bitmap_dup(d->owned);
    for (int k = 0; spare && k < n; k++)
        if (counts[k] > 0)
            hwloc_bitmap_andnot(spare, spare, d->p[idx[k]].assigned);
    int ok = 1;
    int cool = d->cooling && !hwloc_bitmap_iszero(d->cooling);
    for (int k = 0; k < n; k++) {
        struct slotpriv *p = &d->p[idx[k]];
        prev[k] = hwloc_bitmap_dup(p->assigned);
        if (prev[k])
            hwloc_bitmap_andnot(prev[k], prev[k], p->shared);
        pl[k].allowed = p->allowed;
        /* Exit grace: an app that holds CPUs does not grow into cooling
         * ones (its allowed set without them). */
        if (cool && !hwloc_bitmap_iszero(p->assigned)) {
            hwloc_bitmap_andnot(p->allowed_now, p->allowed, d->cooling);
            pl[k].allowed = p->allowed_now;
        }
        pl[k].prev = prev[k];
        pl[k].count = counts[k];
        pl[k].request = dem[k].dormant ? 0
                        : dem[k].request < dem[k].eligible ? dem[k].request : dem[k].eligible;
        pl[k].priority = p->priority;
        /* Only until its first CPUs: an app rotated out and back has
         * every VP parked on its own CPU, any free one serves it without
         * a move, and moving a neighbour to free its home cost a reclaim
         * at every quantum (lu+sor+lu: 17.7 migrations/s against 6.7,
         * bench/RESULTS.md "mig2"). */
        pl[k].home1 = p->fresh ? p->home1 : 0;
        /* An entrant (no CPU now) back on a CPU where its VP is bound, if
         * nobody keeps one: no kernel thread runs on a new CPU. Never one
         * that a stayer keeps -- moving that stayer to make room cost a
         * reclaim at every quantum (the comment above). */
        if (!p->fresh && counts[k] > 0 && spare && hwloc_bitmap_iszero(p->assigned))
            for (int c = hwloc_bitmap_first(spare); c >= 0 && c < 64 && !pl[k].home1;
                 c = hwloc_bitmap_next(spare, c))
                if ((p->ran >> c) & 1u && hwloc_bitmap_isset(pl[k].allowed, (unsigned)c))
                    pl[k].home1 = c + 1;
        pl[k].out = hwloc_bitmap_alloc();
        pl[k].shared = hwloc_bitmap_alloc();
        if (!prev[k] || !pl[k].out || !pl[k].shared)
            ok = 0;
    }
    if (!spare)
        ok = 0;
    hwloc_bitmap_free(spare);
    if (ok && cm_place_all(d->topo, d->owned, pl, n) == 0 &&
        (!d->o->share || cm_share(d->topo, pl, n) == 0))
        return n;
    for (int k = 0; k < n; k++) {
        hwloc_bitmap_free(prev[k]);
        hwloc_bitmap_free(pl[k].out);
        hwloc_bitmap_free(pl[k].shared);
    }
    return -1;
}

static void plan_free(struct cm_place *pl, hwloc_bitmap_t *prev, int n)
{
    for (int k = 0; k < n; k++) {
        hwloc_bitmap_free(prev[k]);
        hwloc_bitmap_free(pl[k].out);
        hwloc_bitmap_free(pl[k].shared);
    }
}

/* Before a publication: withdraw the hand-offs not made yet (token 0), so
 * none is made against an assignment about to change. One already made
 * (handed equals the token we armed: the segment's handed is
 * client-written, our token and receiver are our own) stays good for its
 * receiver, which may not have looked yet -- the releaser left the CPU
 * counting on it -- until the receiver's next publication, which it must
 * therefore get: taken_by[cpu] = receiver index + 1. The token store and
 * the handed load are sequentially consistent, as are the releaser's
 * loads and store: a hand-off made after our store sees token 0 first,
 * one made before is seen here. taken_by NULL: withdraw all (stop). */
static void disarm(struct daemon *d, uint8_t *taken_by)
{
    for (unsigned c = 0; c < NTH_CPUMGR_MAX_CPUS; c++) {
        if (taken_by)
            taken_by[c] = 0;
        if (!d->tok[c])
            continue;
        struct nth_cpumgr_cpu *r = &d->shm->cpu[c];
        if (taken_by && __atomic_load_n(&r->handed, __ATOMIC_SEQ_CST) == d->tok[c]) {
            taken_by[c] = d->nxt[c];
            continue; /* kept armed until arm() rewrites it */
        }
        __atomic_store_n(&r->token, 0, __ATOMIC_SEQ_CST);
        if (taken_by && __atomic_load_n(&r->handed, __ATOMIC_SEQ_CST) == d->tok[c]) {
            taken_by[c] = d->nxt[c]; /* made while we withdrew it */
            __atomic_store_n(&r->token, d->tok[c], __ATOMIC_SEQ_CST);
            continue;
        }
        d->tok[c] = 0;
        d->nxt[c] = 0;
    }
}

/* Was a hand-off taken since the last publication? Then rebalance now:
 * the releaser wakes us anyway, but one that did not (or a forged
 * hand-off) is repaired within a period. */
static int handoff_taken(struct daemon *d)
{
    for (unsigned c = 0; c < NTH_CPUMGR_MAX_CPUS; c++)
        if (d->tok[c] &&
            __atomic_load_n(&d->shm->cpu[c].handed, __ATOMIC_RELAXED) == d->tok[c])
            return 1;
    return 0;
}

/* After a publication: for each CPU one application owns alone, the
 * application that would get it if that one gave up all its CPUs (the
 * same policy and placement with its request at 0), armed under a fresh
 * token. One plan per application holding CPUs, after the wake-ups: off
 * the path of the grants. A CPU with no such receiver stays disarmed. */
static void arm(struct daemon *d)
{
    int idx[NTH_CPUMGR_MAX_SLOTS];
    struct cm_place pl[NTH_CPUMGR_MAX_SLOTS];
    hwloc_bitmap_t prev[NTH_CPUMGR_MAX_SLOTS];
    /* The records kept for hand-offs already made end here: their
     * receivers were just published to. */
    for (unsigned c = 0; c < NTH_CPUMGR_MAX_CPUS; c++)
        if (d->tok[c]) {
            __atomic_store_n(&d->shm->cpu[c].token, 0, __ATOMIC_SEQ_CST);
            d->tok[c] = 0;
            d->nxt[c] = 0;
        }
    hwloc_bitmap_t mine = hwloc_bitmap_alloc();
    if (!mine)
        return;
    for (int j = 0; j < (int)NTH_CPUMGR_MAX_SLOTS; j++) {
        struct slotpriv *pj = &d->p[j];
        if (!pj->known || !pj->valid)
            continue;
        hwloc_bitmap_andnot(mine, pj->assigned, pj->shared);
        if (hwloc_bitmap_iszero(mine))
            continue;
        int n = plan(d, j, idx, pl, prev);
        if (n < 0)
            continue;
        for (int c = hwloc_bitmap_first(mine); c >= 0; c = hwloc_bitmap_next(mine, c)) {
            if ((unsigned)c >= NTH_CPUMGR_MAX_CPUS)
                continue;
            int to = -1;
            for (int k = 0; k < n && to < 0; k++)
                if (idx[k] != j && hwloc_bitmap_isset(pl[k].out, (unsigned)c) &&
                    !hwloc_bitmap_isset(pl[k].shared, (unsigned)c))
                    to = idx[k];
            if (to < 0)
                continue;
            struct nth_cpumgr_cpu *r = &d->shm->cpu[c];
            uint32_t t = ++d->token;
            if (!t)
                t = ++d->token;
            __atomic_store_n(&r->owner, (uint32_t)j + 1u, __ATOMIC_RELAXED);
            __atomic_store_n(&r->next_slot, (uint32_t)to + 1u, __ATOMIC_RELAXED);
            __atomic_store_n(&r->next_gen, d->p[to].gen, __ATOMIC_RELAXED);
            __atomic_store_n(&r->next_aseq,
                             __atomic_load_n(&d->shm->slots[to].aseq, __ATOMIC_RELAXED),
                             __ATOMIC_RELAXED);
            __atomic_store_n(&r->token, t, __ATOMIC_SEQ_CST);
            d->tok[c] = t;
            d->nxt[c] = (uint8_t)(to + 1);
        }
        plan_free(pl, prev, n);
    }
    hwloc_bitmap_free(mine);
}

static void rebalance(struct daemon *d)
{
    int idx[NTH_CPUMGR_MAX_SLOTS];
    struct cm_place pl[NTH_CPUMGR_MAX_SLOTS];
    hwloc_bitmap_t prev[NTH_CPUMGR_MAX_SLOTS];
    static uint8_t taken_by[NTH_CPUMGR_MAX_CPUS];
    disarm(d, taken_by);
    for (int i = 0; i < (int)NTH_CPUMGR_MAX_SLOTS; i++) {
        struct slotpriv *p = &d->p[i];
        /* Ignored slot: it loses its CPUs, nobody else does. */
        if (p->known && !p->valid && !hwloc_bitmap_iszero(p->assigned)) {
            hwloc_bitmap_zero(p->assigned);
            hwloc_bitmap_zero(p->shared);
            publish(&d->shm->slots[i], p->assigned, p->shared);
        }
    }
    int n = plan(d, -1, idx, pl, prev);
    if (n >= 0) {
        int changed = 0, nwake = 0, wake[NTH_CPUMGR_MAX_SLOTS], wake_loses[NTH_CPUMGR_MAX_SLOTS];
        /* A receiver of a hand-off counts the CPU as its own until its next
         * publication: it gets one even if nothing else changed for it. */
        for (unsigned c = 0; c < NTH_CPUMGR_MAX_CPUS; c++)
            if (taken_by[c])
                d->p[taken_by[c] - 1].force_publish = 1;
        /* Two passes: first the slots that lose a CPU, then the others, so
         * a CPU is never published as both the old and the new owner's.
         * Every assignment is written before anyone is woken: a futex wake
         * that finds a sleeper costs this VM 5-25 us, and the grants must
         * not wait behind the losers' wake-ups. */
        for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < n; k++) {
            struct slotpriv *p = &d->p[idx[k]];
            struct nth_cpumgr_slot *s = &d->shm->slots[idx[k]];
            int loses = !hwloc_bitmap_isincluded(p->assigned, pl[k].out);
            if (loses != (pass == 0))
                continue;
            int same = !p->force_publish && hwloc_bitmap_isequal(pl[k].out, p->assigned) &&
                       hwloc_bitmap_isequal(pl[k].shared, p->shared) &&
                       !(__atomic_load_n(&s->aseq, __ATOMIC_RELAXED) & 1u);
            if (!same) {
                /* CPUs it loses: its threads must leave them (enforce()). */
                hwloc_bitmap_andnot(prev[k], p->assigned, pl[k].out);
                if (!hwloc_bitmap_iszero(prev[k])) {
                    hwloc_bitmap_or(p->taken, p->taken, prev[k]);
                    p->taken_ns = now_ns();
                }
                hwloc_bitmap_andnot(p->taken, p->taken, pl[k].out);
                hwloc_bitmap_copy(p->assigned, pl[k].out);
                hwloc_bitmap_copy(p->shared, pl[k].shared);
                if (!hwloc_bitmap_iszero(p->assigned))
                    p->fresh = 0;
                for (int c = hwloc_bitmap_first(p->assigned); c >= 0 && c < 64;
                     c = hwloc_bitmap_next(p->assigned, c))
                    p->ran |= 1ull << c;
                publish_write(s, p->assigned, p->shared);
                wake[nwake] = idx[k];
                wake_loses[nwake++] = loses;
                p->force_publish = 0;
                changed = 1;
            }
        }
        if (changed) {
            bump_epoch(d);
            __atomic_store_n(&d->shm->pass_ns, d->pass_ns, __ATOMIC_RELAXED);
        }
        for (int k = 0; k < nwake; k++)
            cm_trace_grant(d->p[wake[k]].pid, d->p[wake[k]].name,
                           (unsigned)hwloc_bitmap_weight(d->p[wake[k]].assigned));
        /* Losers first (they must leave the CPUs), the grants last. */
        for (int k = 0; k < nwake; k++)
            publish_wake(&d->shm->slots[wake[k]], wake_loses[k]);
        d->dirty = 0;
        d->turn = 0;
        plan_free(pl, prev, n);
        arm(d);
    }
}

/* A quantum ended: under the priority policy in rotation, each
 * application's credit gains its entitlement and loses the CPUs (not
 * shared) it held meanwhile, so the next quanta go to those owed most. */
static void charge_quantum(struct daemon *d)
{
    struct cm_demand dem[NTH_CPUMGR_MAX_SLOTS];
    int held[NTH_CPUMGR_MAX_SLOTS], idx[NTH_CPUMGR_MAX_SLOTS], n = 0;
    double credit[NTH_CPUMGR_MAX_SLOTS];
    for (int i = 0; i < (int)NTH_CPUMGR_MAX_SLOTS; i++) {
        struct slotpriv *p = &d->p[i];
        if (!p->known || !p->valid)
            continue;
        idx[n] = i;
        dem[n] = (struct cm_demand){.request = p->request, .priority = p->priority,
                                    .eligible = hwloc_bitmap_weight(p->allowed),
                                    .credit = p->credit, .dormant = p->dormant};
        held[n] = hwloc_bitmap_weight(p->assigned) - hwloc_bitmap_weight(p->shared);
        credit[n] = p->credit;
        n++;
    }
    cm_policy_charge(d->o->policy, dem, n, d->ncpus, held, credit);
    for (int k = 0; k < n; k++)
        d->p[idx[k]].credit = credit[k];
}

/* Anyone hungry (wants more than it has)? Then the quantum rotates. */
static int someone_hungry(struct daemon *d)
{
    for (int i = 0; i < (int)NTH_CPUMGR_MAX_SLOTS; i++) {
        struct slotpriv *p = &d->p[i];
        if (!p->known || !p->valid)
            continue;
        if (p->dormant)
            continue; /* needs no CPU now: no reason to rotate (issue 5) */
        int want = hwloc_bitmap_weight(p->allowed);
        if (p->request < want)
            want = p->request;
        if (hwloc_bitmap_weight(p->assigned) < want)
            return 1;
    }
    return 0;
}

/* Daemon-side bounded reclaim: enforce_us after a CPU was taken from an
 * application, any of its threads still runnable there is bound to the
 * application's current CPUs. A client keeping the contract has moved or
 * parked them by then and is not touched. Returns ns until the next
 * deadline, or UINT64_MAX. */
static uint64_t enforce(struct daemon *d, uint64_t tns)
{
    uint64_t next = UINT64_MAX, budget = (uint64_t)d->o->enforce_us * 1000u;
    /* The CPUs whose taking moved a thread are the application's again:
     * the move has done its part, the thread gets its own mask back. */
    for (int i = 0; i < (int)NTH_CPUMGR_MAX_SLOTS; i++)
        if (d->p[i].known && d->p[i].valid && d->p[i].moved->n)
            (void)cm_enforce_restore(d->topo, d->p[i].moved, d->p[i].assigned);
    if (!budget)
        return next;
    for (int i = 0; i < (int)NTH_CPUMGR_MAX_SLOTS; i++) {
        struct slotpriv *p = &d->p[i];
        if (!p->known || !p->valid || hwloc_bitmap_iszero(p->taken))
            continue;
        if (tns < p->taken_ns + budget) {
            if (p->taken_ns + budget - tns < next)
                next = p->taken_ns + budget - tns;
            continue;
        }
        if (!p->client_ok)
            p->client_ok = cm_enforce_is_client(p->pid, d->o->name) ? 1 : 2;
        int cpu = -1;
        if (p->client_ok == 1 && !hwloc_bitmap_iszero(p->assigned) &&
            cm_enforce_move(d->topo, p->pid, p->taken, p->assigned, &cpu, p->moved) > 0 &&
            !p->enforce_logged) {
            char to[256];
            hwloc_bitmap_list_snprintf(to, sizeof to, p->assigned);
            fprintf(stderr, "cpumgr: application %s (pid %d) still ran on CPU %d %u us after "
                    "it was taken; its threads were moved to CPUs %s (logged once)\n",
                    p->name, (int)p->pid, cpu, d->o->enforce_us, to);
            p->enforce_logged = 1;
        }
        hwloc_bitmap_zero(p->taken);
    }
    return next;
}

static int setup_cpus(struct daemon *d)
{
    if (hwloc_topology_init(&d->topo) != 0 || hwloc_topology_load(d->topo) != 0) {
        fprintf(stderr, "cpumgr: cannot load the hwloc topology\n");
        return -1;
    }
    d->owned = hwloc_bitmap_alloc();
    hwloc_bitmap_t want = hwloc_bitmap_alloc();
    if (!d->owned || !want)
        return -1;
    /* Our own affinity mask is what taskset/cgroups/Slurm gave us. */
    if (hwloc_get_cpubind(d->topo, d->owned, HWLOC_CPUBIND_PROCESS) != 0)
        hwloc_bitmap_copy(d->owned, hwloc_topology_get_allowed_cpuset(d->topo));
    hwloc_bitmap_and(d->owned, d->owned, hwloc_topology_get_allowed_cpuset(d->topo));
    if (d->o->cpus) {
        if (cm_cpulist_parse(d->o->cpus, want) != 0) {
            fprintf(stderr, "cpumgr: --cpus: bad value '%s' (accepted: " CM_CPULIST_SYNTAX ")\n",
                    d->o->cpus);
            hwloc_bitmap_free(want);
            return -1;
        }
        hwloc_bitmap_and(d->owned, d->owned, want);
    }
    hwloc_bitmap_free(want);
    /* The segment's masks hold OS indices below NTH_CPUMGR_MAX_CPUS. */
    for (int c = hwloc_bitmap_first(d->owned); c >= 0; c = hwloc_bitmap_next(d->owned, c))
        if ((unsigned)c >= NTH_CPUMGR_MAX_CPUS)
            hwloc_bitmap_clr(d->owned, (unsigned)c);
    d->ncpus = hwloc_bitmap_weight(d->owned);
    if (d->ncpus <= 0) {
        char avail[256] = "?";
        hwloc_bitmap_t mine = hwloc_bitmap_alloc();
        if (mine && cm_cpulist_allowed(mine) == 0)
            hwloc_bitmap_list_snprintf(avail, sizeof avail, mine);
        hwloc_bitmap_free(mine);
        fprintf(stderr, "cpumgr: no CPU to manage (affinity mask and --cpus do not intersect; "
                "this process may use CPUs %s)\n", avail);
        return -1;
    }
    return 0;
}

static int setup_segment(struct daemon *d)
{
    char msg[200];
    struct nth_cpumgr_shm *s = NULL;
    int rc = cm_seg_open(d->o->name, &s, msg, sizeof msg);
    int rebuilt = 0;
    if (rc == 0) {
        if (cm_seg_daemon_alive(s) && s->daemon_state != NTH_CPUMGR_DAEMON_STOPPED) {
            fprintf(stderr, "cpumgr: another cpumgr (pid %d) runs on %s\n",
                    (int)s->daemon_pid, d->o->name);
            cm_seg_unmap(s);
            return -1;
        }
        rebuilt = 1;
    } else if (rc == ENOENT) {
        rc = cm_seg_create(d->o->name, d->o->gid, &s);
        if (rc == EPERM && d->o->gid != (gid_t)-1) {
            /* fchown refused (main checked membership; a capability or
             * security module may still say no): name the option. */
            fprintf(stderr, "cpumgr: --group: cannot give %s to GID %u: %s\n", d->o->name,
                    (unsigned)d->o->gid, strerror(rc));
            return -1;
        }
        if (rc) {
            fprintf(stderr, "cpumgr: cannot create %s: %s\n", d->o->name, strerror(rc));
            return -1;
        }
        s->magic = NTH_CPUMGR_MAGIC;
        s->layout_version = NTH_CPUMGR_LAYOUT_VERSION;
        s->size = sizeof *s;
        s->max_slots = NTH_CPUMGR_MAX_SLOTS;
    } else {
        fprintf(stderr, "cpumgr: refusing segment %s: %s; remove it (rm /dev/shm%s) "
                "once no program uses it\n", d->o->name, msg, d->o->name);
        return -1;
    }
    d->shm = s;
    /* Read-write: the SIGBUS guard and check_size grow it back if someone
     * shrinks it. -1: no slot lock proof and no guard (as before). */
    d->segfd = shm_open(d->o->name, O_RDWR | O_CLOEXEC, 0);
    if (d->segfd >= 0 && (rc = nth_cpumgr_sigbus_guard(s, sizeof *s, d->segfd)) != 0)
        fprintf(stderr, "cpumgr: cannot guard %s against truncation: %s\n", d->o->name,
                strerror(rc));
    /* Our copy of the header: what we write now and restore if scribbled. */
    struct nth_cpumgr_shm_hdr *h = &d->hdr;
    memset(h, 0, sizeof *h);
    h->magic = NTH_CPUMGR_MAGIC;
    h->layout_version = NTH_CPUMGR_LAYOUT_VERSION;
    h->size = sizeof *s;
    h->max_slots = NTH_CPUMGR_MAX_SLOTS;
    h->ncpus = (uint32_t)d->ncpus;
    cm_bitmap_to_mask(d->owned, h->cpus);
    h->period_ms = d->o->period_ms;
    h->exit_grace_ms = d->o->exit_grace_ms;
    h->daemon_pid = getpid();
    h->daemon_start_time = nth_cpumgr_proc_start_time(getpid());
    /* A restart on a dead daemon's segment keeps its RUNNING until we are
     * ready, as before: clients keep their slots meanwhile. */
    uint32_t was = __atomic_load_n(&s->daemon_state, __ATOMIC_RELAXED);
    h->daemon_state = was == NTH_CPUMGR_DAEMON_RUNNING ? was : NTH_CPUMGR_DAEMON_STARTING;
    h->epoch = __atomic_load_n(&s->epoch, __ATOMIC_RELAXED);
    __atomic_store_n(&s->heartbeat_ms, now_ms(), __ATOMIC_RELEASE);
    cm_seg_header_write(s, h);
    if (rebuilt) {
        /* Restart: the slots are the state. Take each live application's
         * last assignment as its previous one so placement stays stable. */
        int n = 0;
        for (int i = 0; i < (int)NTH_CPUMGR_MAX_SLOTS; i++) {
            if (__atomic_load_n(&s->slots[i].state, __ATOMIC_ACQUIRE) != NTH_CPUMGR_SLOT_ACTIVE)
                continue;
            cm_mask_to_bitmap(s->slots[i].assigned, d->p[i].assigned);
            hwloc_bitmap_and(d->p[i].assigned, d->p[i].assigned, d->owned);
            d->p[i].cpu_ns = __atomic_load_n(&s->slots[i].cpu_ns, __ATOMIC_RELAXED);
            d->p[i].primed = 1;
            n++;
        }
        fprintf(stderr, "cpumgr: rebuilt state from %s: %d application slot(s) in use\n",
                d->o->name, n);
    }
    /* A previous daemon's hand-offs are not ours to honour. */
    for (unsigned c = 0; c < NTH_CPUMGR_MAX_CPUS; c++)
        __atomic_store_n(&s->cpu[c].token, 0, __ATOMIC_SEQ_CST);
    bump_epoch(d);
    h->daemon_state = NTH_CPUMGR_DAEMON_RUNNING;
    __atomic_store_n(&s->daemon_state, NTH_CPUMGR_DAEMON_RUNNING, __ATOMIC_RELEASE);
    return 0;
}

/* Tell the clients to run alone and remove the segment: the clean stop's
 * end, and a start that fails once the segment is set up. */
static void teardown_segment(struct daemon *d)
{
    check_header(d); /* clients must read STOPPED under a good magic */
    d->hdr.daemon_state = NTH_CPUMGR_DAEMON_STOPPED;
    __atomic_store_n(&d->shm->daemon_state, NTH_CPUMGR_DAEMON_STOPPED, __ATOMIC_RELEASE);
    bump_epoch(d);
    shm_unlink(d->o->name);
    nth_cpumgr_sigbus_clear();
    cm_seg_unmap(d->shm);
    d->shm = NULL;
    if (d->segfd >= 0)
        close(d->segfd);
    d->segfd = -1;
}

int cm_daemon_run(const struct cm_opts *o)
{
    static struct daemon d; /* large; one per process */
    memset(&d, 0, sizeof d);
    d.segfd = -1;
    d.o = o;
    d.cooling = hwloc_bitmap_alloc();
    if (!d.cooling) {
        fprintf(stderr, "cpumgr: out of memory\n");
        return 1;
    }
    for (int i = 0; i < (int)NTH_CPUMGR_MAX_SLOTS; i++) {
        d.p[i].allowed = hwloc_bitmap_alloc();
        d.p[i].assigned = hwloc_bitmap_alloc();
        d.p[i].shared = hwloc_bitmap_alloc();
        d.p[i].taken = hwloc_bitmap_alloc();
        d.p[i].allowed_now = hwloc_bitmap_alloc();
        d.p[i].moved = calloc(1, sizeof *d.p[i].moved);
        if (!d.p[i].allowed || !d.p[i].assigned || !d.p[i].shared || !d.p[i].taken ||
            !d.p[i].allowed_now || !d.p[i].moved) {
            fprintf(stderr, "cpumgr: out of memory\n");
            return 1;
        }
    }
    /* The files are checked first: before the segment exists, so that a
     * daemon that does not start leaves no segment behind (a stale one
     * makes `cpumgr status` say "NOT running" until `cpumgr stop`) and no
     * file it created; and before the hwloc topology is loaded, which
     * took seconds under load for a typo in a path (issue 5 trial M1). */
    int acct_created = 0, trace_created = 0, e;
    if (o->accounting && (e = cm_account_check(o->accounting, &acct_created)) != 0) {
        fprintf(stderr, "cpumgr: --accounting %s: cannot open for append: %s\n", o->accounting, strerror(e));
        return 1;
    }
    if (o->trace && (e = cm_trace_open(o->trace, &trace_created)) != 0) {
        fprintf(stderr, "cpumgr: --trace %s: cannot open for writing: %s\n", o->trace, strerror(e));
        goto fail;
    }
    if (setup_cpus(&d) != 0 || setup_segment(&d) != 0)
        goto fail;
    if (o->trace && (e = cm_trace_begin()) != 0) {
        fprintf(stderr, "cpumgr: --trace %s: %s\n", o->trace, strerror(e));
        teardown_segment(&d);
        goto fail;
    }
    /* A request wakes us on a CPU that clients' VPs keep busy; with the
     * default EEVDF slice the answer would wait for theirs to end (up to
     * 1.4 ms on 2 CPUs). A pass is tens of us, so a short slice costs
     * nothing (sched_slice.h). */
    (void)nth_sched_short_slice(NTH_SHORT_SLICE_NS);
    /* Every signal whose default action would end us stops us cleanly
     * (accounting lines, clients told, segment unlinked), not only TERM and
     * INT: a foreground daemon gets SIGHUP when its terminal or ssh session
     * closes, and QUIT, USR1, USR2, ALRM sent by mistake left a stale
     * segment and lost the live applications' accounting (fresh13 trial). */
    static const int stop_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM };
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        sigaction(stop_signals[i], &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Deaths wake us at once where pidfds exist; the check each period
     * stays (pid plus start time) for the rest and as the fallback. */
    if ((e = cm_dw_start(&d.shm->wake)) != 0)
        fprintf(stderr, "cpumgr: pidfd_open: %s; a dead application is seen at the next "
                "period\n", strerror(e));
    char list[256];
    hwloc_bitmap_list_snprintf(list, sizeof list, d.owned);
    fprintf(stderr, "cpumgr: ready on %s: %d CPU%s (%s), policy %s%s, period %u ms, quantum %u ms\n",
            o->name, d.ncpus, d.ncpus == 1 ? "" : "s", list, cm_policy_name(o->policy), o->share ? " +share" : "",
            o->period_ms, o->quantum_ms);
    /* Before the ready byte: a background start shows it on the terminal. */
    cm_others_report(o->name, d.owned);
    if (o->ready_fd >= 0) {
        /* Detached: from here on the log is not the launching terminal's
         * (cpumgr(8): a background daemon's log goes to /dev/null; the
         * start-up errors above were still shown there). Before the
         * byte that lets `cpumgr` return, so nothing reaches the
         * terminal after it. */
        int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (nul >= 0) {
            dup2(nul, 2);
            close(nul);
        }
        (void)!write(o->ready_fd, "R", 1);
        close(o->ready_fd);
    }
    d.dirty = 1;
    uint64_t last_ns = now_ns(), last_rot = now_ms(), last_live = 0;
    int live_deferred = 0;
    uint32_t seen = __atomic_load_n(&d.shm->wake, __ATOMIC_ACQUIRE);
    uint64_t wait_ns = (uint64_t)o->period_ms * 1000000u;
    while (!stop_flag) {
        struct timespec to = { (time_t)(wait_ns / 1000000000u), (long)(wait_ns % 1000000000u) };
        /* Shared futex (no FUTEX_PRIVATE_FLAG): wakers are other processes. */
        syscall(SYS_futex, &d.shm->wake, FUTEX_WAIT, seen, &to, NULL, 0);
        uint32_t was = seen;
        seen = __atomic_load_n(&d.shm->wake, __ATOMIC_ACQUIRE);
        int woken = seen != was; /* a client's request, not our timeout */
        check_size(&d); /* first: everything below reads the segment */
        uint64_t tns = now_ns(), tms = tns / 1000000u;
        d.pass_ns = tns;
        /* The earliest request this pass answers dates the reclaim budget
         * of what it takes away (the new owner has waited since then);
         * client-written, so taken only within BUDGET_BACK_NS before now. */
        uint64_t asked = __atomic_exchange_n(&d.shm->wake_ns, 0, __ATOMIC_ACQ_REL);
        budget_from_ns = asked && asked <= tns && tns - asked <= NTH_CPUMGR_BUDGET_BACK_NS ? asked : tns;
        uint64_t dt = tns - last_ns;
        last_ns = tns;
        for (int i = 0; i < (int)NTH_CPUMGR_MAX_SLOTS; i++) {
            struct slotpriv *p = &d.p[i];
            if (p->known && p->valid) {
                p->cpu_ns += (uint64_t)hwloc_bitmap_weight(p->assigned) * dt;
                __atomic_store_n(&d.shm->slots[i].cpu_ns, p->cpu_ns, __ATOMIC_RELAXED);
            }
        }
        check_header(&d);
        __atomic_store_n(&d.shm->heartbeat_ms, tms, __ATOMIC_RELEASE);
        __atomic_store_n(&d.shm->rotations, (uint64_t)d.rot, __ATOMIC_RELAXED);
        /* The liveness check reads /proc (tens of us): a pass that answers
         * a request puts it off once, to a pass LIVE_DEFER_NS later, so
         * that the grant is not behind it; a dead client is still seen
         * within a period and LIVE_DEFER_NS. */
        int live_due = tms - last_live >= o->period_ms;
        /* A pidfd saw an application exit: look now, not at the period's
         * end, and ahead of any request (the dead one's CPUs are what
         * the others wait for). */
        int died = cm_dw_deaths();
        int liveness = died || (live_due && (!woken || live_deferred));
        if (liveness) {
            last_live = tms;
            live_deferred = 0;
        }
        for (int i = 0; i < (int)NTH_CPUMGR_MAX_SLOTS; i++)
            scan_slot(&d, i, tms, liveness);
        if (tms - last_rot >= o->quantum_ms) {
            last_rot = tms;
            charge_quantum(&d);
            if (someone_hungry(&d)) {
                d.rot++;
                d.turn = 1;
                d.dirty = 1;
            }
        }
        if (!hwloc_bitmap_iszero(d.cooling)) {
            /* Grace over, or every cooling CPU taken by a newcomer. */
            int held = 1;
            for (int c = hwloc_bitmap_first(d.cooling); c >= 0 && held;
                 c = hwloc_bitmap_next(d.cooling, c)) {
                held = 0;
                for (int i = 0; i < (int)NTH_CPUMGR_MAX_SLOTS && !held; i++)
                    held = d.p[i].known && hwloc_bitmap_isset(d.p[i].assigned, (unsigned)c);
            }
            if (tns >= d.cool_until_ns || held) {
                hwloc_bitmap_zero(d.cooling);
                d.dirty = 1;
            }
        }
        if (d.dirty || handoff_taken(&d))
            rebalance(&d);
        /* Sleep until the next period or enforcement deadline. */
        wait_ns = (uint64_t)o->period_ms * 1000000u;
        if (live_due && !liveness) {
            live_deferred = 1;
            wait_ns = LIVE_DEFER_NS;
        }
        uint64_t en = enforce(&d, now_ns());
        if (en < wait_ns)
            wait_ns = en;
        if (!hwloc_bitmap_iszero(d.cooling)) {
            uint64_t t = now_ns();
            uint64_t left = d.cool_until_ns > t ? d.cool_until_ns - t : 1000u;
            if (left < wait_ns)
                wait_ns = left;
        }
    }
    cm_dw_stop();
    /* Clean stop: close the books, tell clients to go alone, unlink. */
    for (int i = 0; i < (int)NTH_CPUMGR_MAX_SLOTS; i++)
        if (d.p[i].known)
            forget(&d, i, "stop");
    disarm(&d, NULL);
    teardown_segment(&d);
    cm_trace_close();
    if (d.shrinks > 1)
        fprintf(stderr, "cpumgr: segment was shrunk %u times\n", d.shrinks);
    if (d.hdr_repairs > 1)
        fprintf(stderr, "cpumgr: segment header was rewritten %u times\n", d.hdr_repairs);
    fprintf(stderr, "cpumgr: stopped, %s removed\n", o->name);
    hwloc_topology_destroy(d.topo);
    hwloc_bitmap_free(d.owned);
    for (int i = 0; i < (int)NTH_CPUMGR_MAX_SLOTS; i++) {
        hwloc_bitmap_free(d.p[i].allowed);
        hwloc_bitmap_free(d.p[i].assigned);
        hwloc_bitmap_free(d.p[i].shared);
        hwloc_bitmap_free(d.p[i].taken);
        hwloc_bitmap_free(d.p[i].allowed_now);
        cm_enforce_forget(d.p[i].moved);
        free(d.p[i].moved);
    }
    hwloc_bitmap_free(d.cooling);
    return 0;
fail:
    cm_trace_close();
    if (trace_created)
        unlink(o->trace);
    if (acct_created)
        unlink(o->accounting);
    return 1;
}
