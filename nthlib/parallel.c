/*
 * parallel.c -- parallel regions: teams of nano-threads, the team barrier
 * and the loop schedules (include/nth.h, "Parallel regions").
 *
 * After OpenMP's parallel/for constructs as JOMP ran them on the Nano-threads
 * Environment: the team size is chosen at every region entry, so a
 * malleable application follows its CPU assignment region by region.
 *
 * Members are kept between regions, one per VP (see "workers" below), and
 * each is handed its next member with nth__to_rq_home(), which queues it
 * on the VP it last ran on, not next to the waker as nth_to_rq() does
 * (Go's runnext: every region would start on the caller's VP and rely on
 * stealing to spread). The barrier's and the join's wake-ups send a member
 * home for the same reason. A member for a VP with no worker waiting is
 * created there (nth_create() with attr.vp).
 *
 * Lifetime: the team record lives in the caller's frame. A member touches it
 * for the last time in depart(), whose decrement is its final access; the
 * caller returns only once every member has departed.
 */
#include "internal.h"
#include "trace_core.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The member record of the running nano-thread is kept in one of the spare
 * descriptor slots reserved for later parts. */
#define MEMBER_SLOT 0

/* Members whose slots fit in the caller's frame; larger teams malloc. */
#define INLINE_MEMBERS 16

/* In team.left, beside the count of members yet to depart: the caller
 * sleeps and wants an nth_to_rq() from the last to depart. */
#define LEFT_WAITING (1L << 40)
#define LEFT_COUNT (LEFT_WAITING - 1)

struct team;
struct worker;

struct member {
    struct team *team;
    int id;
};

/* One per member, on its own cache line: the barrier's sleep flag is
 * written by its owner and taken (exchanged) by the releaser. */
struct slot {
    nth_t t;
    int sleep;                  /* 1: blocked (or about to) in the barrier */
    struct member m;
    struct nth_vp *door_vp;     /* handed through this VP's door, NULL not */
    struct worker *door_w;      /* the worker that door had */
} __attribute__((aligned(NTH_CACHELINE)));

struct team {
    int n;
    nth_team_fn fn;
    void *arg;
    nth_t master;
    int go;                     /* start gate: 0 wait, 1 run, -1 abort */
    int started;                /* members > 0 that have begun to run */
    long left;                  /* members > 0 not departed | LEFT_WAITING */
    char pad0[NTH_CACHELINE];
    int arrived;                /* barrier arrivals this round */
    int gen;                    /* barrier generation */
    unsigned long next;         /* work-sharing counter, reset per barrier */
    char pad1[NTH_CACHELINE];
    struct slot *slots;
    uint64_t trace_region;      /* region number in the trace, 0 = untraced */
};

static struct member *current_member(void)
{
    struct nth_vp *vp = nth_vp_self();
    if (!vp)
        return NULL;
    return vp->current->user[MEMBER_SLOT];
}

static void set_member(struct member *m)
{
    struct nth_vp *vp = nth_vp_self();
    if (vp)
        vp->current->user[MEMBER_SLOT] = m;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spin until done(w) holds, for at most NTH_TEAM_SPIN_US and only while this VP
 * has nothing else to run (a spinning member must not hold its VP from a
 * member queued behind it: teams larger than the VPs still progress).
 * Returns 1 if it came true. */
static inline int spin_until(int (*done)(const void *, long), const void *w, long arg)
{
    int64_t deadline = 0;
    for (unsigned k = 0;; k++) {
        if (done(w, arg))
            return 1;
        nth_cpu_relax();
        if ((k & 63) == 63) {
            struct nth_vp *vp = nth_vp_self();
            if (nth_rt.nvps == 1 || !nth_rq_empty(&vp->rq) || !nth_rq_empty(&nth_rt.grq) ||
                __atomic_load_n(&vp->disabled, __ATOMIC_RELAXED))
                return 0;
            int64_t now = now_ns();
            if (!deadline)
                deadline = now + nth_rt.team_spin_ns;
            else if (now > deadline)
                return 0;
        }
    }
}

static inline int int_changed(const void *w, long old)
{
    return __atomic_load_n((const int *)w, __ATOMIC_ACQUIRE) != (int)old;
}

static inline int none_left(const void *w, long unused)
{
    (void)unused;
    return (__atomic_load_n((const long *)w, __ATOMIC_ACQUIRE) & LEFT_COUNT) == 0;
}

/* Spin until *w != old; 1 if it changed. */
static int spin_while_eq_int(const int *w, int old)
{
    return spin_until(int_changed, w, old);
}

/* Spin until no member is left to depart; 1 if so. */
static int spin_while_left(const long *w)
{
    return spin_until(none_left, w, 0);
}

/* A nano-thread woken by nth__to_rq_home() is marked for thieves to leave
 * in its VP's queue for a moment (NTH_HOME_GRACE_NS); running again, it
 * clears the mark, which would otherwise keep it next time it is queued
 * on that VP for another reason while the VP is parked. */
static void home_arrived(void)
{
    __atomic_store_n(&nth_vp_self()->current->move_to, 0, __ATOMIC_RELAXED);
}

/* ---- barrier ------------------------------------------------------------- */

static void take_back(struct team *tm);

/* Centralised counter barrier with a generation number (sense reversal,
 * Mellor-Crummey & Scott 1991): the last to arrive resets the round and
 * bumps gen; the others spin, then sleep. Sleep flags and gen are a Dekker
 * pair (each side stores, fences, then loads the other's word), so a
 * sleeper is either seen by the releaser or sees the new generation. */
static void barrier_wait(struct team *tm, int id)
{
    int g = __atomic_load_n(&tm->gen, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&tm->arrived, 1, __ATOMIC_ACQ_REL) == tm->n) {
        __atomic_store_n(&tm->arrived, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&tm->next, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&tm->gen, g + 1, __ATOMIC_SEQ_CST);
        for (int i = 0; i < tm->n; i++) {
            struct slot *s = &tm->slots[i];
            if (i != id && __atomic_load_n(&s->sleep, __ATOMIC_SEQ_CST) &&
                __atomic_exchange_n(&s->sleep, 0, __ATOMIC_ACQ_REL))
                nth__to_rq_home(__atomic_load_n(&s->t, __ATOMIC_RELAXED));
        }
        return;
    }
    if (__atomic_load_n(&tm->started, __ATOMIC_ACQUIRE) == tm->n - 1 && spin_while_eq_int(&tm->gen, g))
        return;
    /* A member still behind a door would wait for its VP; a sleeper's VP
     * may run it instead (take_back). */
    take_back(tm);
    struct slot *s = &tm->slots[id];
    nth_trace_rt_wait_obj_self((uintptr_t)tm, NTH_OBJ_TEAM_BARRIER);
    for (;;) {
        __atomic_store_n(&s->sleep, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&tm->gen, __ATOMIC_SEQ_CST) != g) {
            /* Released meanwhile. If the releaser took our flag, its
             * nth_to_rq() is on its way: consume it here. */
            if (!__atomic_exchange_n(&s->sleep, 0, __ATOMIC_ACQ_REL)) {
                nth_wait();
                home_arrived();
            }
            break;
        }
        nth_wait();
        home_arrived();
        if (__atomic_load_n(&tm->gen, __ATOMIC_ACQUIRE) != g) {
            __atomic_store_n(&s->sleep, 0, __ATOMIC_RELAXED);
            break;
        }
        /* An early wake-up (a previous round's releaser still scanning, or
         * a left-over permit): sleep again. */
    }
    nth_trace_rt_wait_obj_self(0, 0);
}

int nth_team_barrier(void)
{
    struct member *m = current_member();
    if (m && m->team->n > 1)
        barrier_wait(m->team, m->id);
    return 0;
}

int nth_team_id(void)
{
    struct member *m = current_member();
    return m ? m->id : 0;
}

int nth_team_size(void)
{
    struct member *m = current_member();
    return m ? m->team->n : 1;
}

/* ---- members ------------------------------------------------------------- */

/* A member's last access to the team: after the decrement the caller may
 * return and the record may vanish, so the caller's handle is read first. */
static void depart(struct team *tm)
{
    nth_t master = tm->master;
    long old = __atomic_fetch_sub(&tm->left, 1, __ATOMIC_ACQ_REL);
    if (old == (1 | LEFT_WAITING))
        nth__to_rq_home(master);
}

/* ---- workers: members kept between regions ------------------------------- */

/* A worker is a member nano-thread that, its member done, stays blocked on
 * its VP (nth_vp.team_worker) for the next region instead of exiting, as
 * libgomp keeps its team threads. Alone that buys little: a worker woken
 * from the caller's VP (nth__to_rq_last_vp) costs the caller about what a
 * creation did (bench/RESULTS.md, "lu4"), since both pull the member's
 * descriptor and the target VP's queue from the other CPU. It is what
 * makes the door possible: a member that needs no creation can be started
 * by its own VP.
 *
 * The door: a VP that spins idle with a worker waiting flags it
 * (NTH_DOOR_SPIN in team_worker), and a region's caller then hands the
 * member over with a single CAS on that word; the spinning VP sees it,
 * gives its worker the member and queues it on itself, on its own CPU.
 * The caller's part of a member's start falls from a creation or a remote
 * wake-up (1000-1400 cycles measured on this project's VM, the descriptor's,
 * stack's and queue's lines pulled from the other CPU) to that CAS, and
 * the region's start (call to the member's first instruction) from
 * ~1 us to ~0.6 us (bench/regions.sh, region_start). A member handed
 * over that its VP has not taken when the caller would sleep at the join
 * is taken back (take_back) and queued like any wake-up, so a VP whose
 * kernel thread is off its CPU delays it no more than before.
 *
 * At most one waits per VP; a member for a VP without one (the first
 * region, teams larger than the VPs, two regions at once from two callers)
 * is created as a worker that, when its member is done, takes the VP's
 * place if it is free and otherwise exits. A worker on a VP that lost its
 * CPU (disabled) stays blocked, using no CPU, and is not handed members
 * (run_team picks enabled VPs only); it is taken again once the VP is.
 *
 * The record lives in the worker's frame: a worker exits only when it
 * failed to take the VP's place, so a record found in team_worker stays
 * valid until its taker has stored the member; the taker reads t first.
 *
 * Workers are not counted as live nano-threads (nth_rt.live): their
 * members always run inside a region whose caller is live and waits for
 * them, so a program whose main called nth_exit ends when its last other
 * nano-thread does, not never. A waiting worker's nth_key values stay
 * with it into its next member, as an OpenMP thread's threadprivate data
 * does. */
struct worker {
    struct member *m;           /* member to run next, NULL while waiting (atomic) */
    nth_t t;
};

/* w takes the place of the worker waiting on vp, if it is free and vp
 * may run; 1 if it did. */
static int keep_worker(struct nth_vp *vp, struct worker *w)
{
    uintptr_t none = 0;
    return vp->id >= 0 && !__atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE) &&
           __atomic_compare_exchange_n(&vp->team_worker, &none, (uintptr_t)w, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_RELAXED);
}

/* Hand member m to worker w, which is ours (taken from a VP): exactly one
 * wake-up per take, after the store (worker_main's wait). From the
 * worker's own VP (its door) with the home grace, which keeps thieves off
 * it until that VP picks it a moment later; from another VP without:
 * there the worker's VP may be off its CPU for long (a loaded machine),
 * and an idle VP that left it for the grace could park meanwhile, with
 * nobody to wake it when the grace ends. */
static void give(struct worker *w, struct member *m, int from_door)
{
    nth_t t = w->t;     /* before the store: then the worker may go on */
    struct slot *s = (struct slot *)((char *)m - offsetof(struct slot, m));
    __atomic_store_n(&s->t, t, __ATOMIC_RELAXED);   /* read by barrier releasers */
    __atomic_store_n(&w->m, m, __ATOMIC_RELEASE);
    if (from_door)
        nth__to_rq_home(t);
    else
        nth__to_rq_last_vp(t);
}

/* One member's part of its region: the start gate, fn, the departure. The
 * worker takes its VP's place before it departs, so that the caller's
 * next region, which cannot begin before that departure, finds it there
 * (taking it after, the next region came first in 85 % of back-to-back
 * empty regions and 15 % of LU 1000's, and created a member anyway).
 * Returns keep_worker()'s answer. */
static int run_member(struct member *m, struct worker *w)
{
    struct team *tm = m->team;
    set_member(m);
    __atomic_add_fetch(&tm->started, 1, __ATOMIC_RELEASE);
    int go;
    while ((go = __atomic_load_n(&tm->go, __ATOMIC_ACQUIRE)) == 0)
        if (!spin_while_eq_int(&tm->go, 0))
            nth_yield();
    if (go > 0) {
        nth_trace_rt_region_begin(tm->trace_region, tm->n, m->id);
        tm->fn(m->id, tm->n, tm->arg);
        nth_trace_rt_region_end(tm->trace_region);
    }
    set_member(NULL);
    struct nth_vp *vp = nth_vp_self();
    vp->team_linger = 1;
    int kept = keep_worker(vp, w);
    depart(tm);
    return kept;
}

static void *worker_main(void *p)
{
    struct worker w = { p, nth_self() };
    __atomic_fetch_sub(&nth_rt.live, 1, __ATOMIC_SEQ_CST);
    for (;;) {
        if (!run_member(__atomic_exchange_n(&w.m, NULL, __ATOMIC_ACQUIRE), &w))
            break;
        /* Exactly one wake-up (give()) follows each take, after the
         * member is stored: wait once at least, so that a wake-up that
         * comes before the nth_wait (its permit) is consumed here and not
         * by a later wait of the member's fn. Traced as SYNCH team idle. */
        nth_trace_rt_wait_obj_self((uintptr_t)&w, NTH_OBJ_TEAM_IDLE);
        do
            nth_wait();
        while (!__atomic_load_n(&w.m, __ATOMIC_ACQUIRE));
        nth_trace_rt_wait_obj_self(0, 0);
        home_arrived();
    }
    __atomic_fetch_add(&nth_rt.live, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Member s->m on VP v: through v's door if v spins idle with a worker
 * waiting (one CAS here: v wakes the worker on its own CPU, and the
 * caller goes on to its own share at once); else the worker waiting
 * there, woken from here; else a new one. Returns 0 or nth_create()'s
 * error. */
static int start_member(struct nth_vp *v, nth_attr_t *attr, struct slot *s)
{
    uintptr_t x = __atomic_load_n(&v->team_worker, __ATOMIC_ACQUIRE);
    while (x && !(x & NTH_DOOR_MEMBER)) {
        if (x & NTH_DOOR_SPIN) {
            s->door_vp = v;
            s->door_w = (struct worker *)(x & ~NTH_DOOR_SPIN);
            if (__atomic_compare_exchange_n(&v->team_worker, &x, (uintptr_t)&s->m | NTH_DOOR_MEMBER, 0,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return 0;
            s->door_vp = NULL;
        } else if (__atomic_compare_exchange_n(&v->team_worker, &x, 0, 0, __ATOMIC_ACQ_REL,
                                               __ATOMIC_ACQUIRE)) {
            give((struct worker *)x, &s->m, 0);
            return 0;
        }
    }
    attr->vp = v->id;
    return nth_create(&s->t, attr, worker_main, &s->m);
}

/* ---- the door (internal.h) ----------------------------------------------- */

void nth__team_door_open(struct nth_vp *vp)
{
    uintptr_t x = __atomic_load_n(&vp->team_worker, __ATOMIC_RELAXED);
    if (x && !(x & (NTH_DOOR_SPIN | NTH_DOOR_MEMBER)) &&
        __atomic_compare_exchange_n(&vp->team_worker, &x, x | NTH_DOOR_SPIN, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED))
        vp->team_door_worker = (void *)x;
}

int nth__team_door_take(struct nth_vp *vp)
{
    uintptr_t x = __atomic_load_n(&vp->team_worker, __ATOMIC_ACQUIRE);
    if (!(x & NTH_DOOR_MEMBER))
        return 0;
    /* A CAS: the caller may take its member back (take_back). */
    if (!__atomic_compare_exchange_n(&vp->team_worker, &x, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return 0;
    give(vp->team_door_worker, (struct member *)(x & ~(NTH_DOOR_SPIN | NTH_DOOR_MEMBER)), 1);
    vp->team_door_worker = NULL;
    return 1;
}

int nth__team_door_close(struct nth_vp *vp)
{
    uintptr_t x = __atomic_load_n(&vp->team_worker, __ATOMIC_ACQUIRE);
    if ((x & NTH_DOOR_SPIN) &&
        __atomic_compare_exchange_n(&vp->team_worker, &x, x & ~NTH_DOOR_SPIN, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return 0;
    return nth__team_door_take(vp);   /* a member came meanwhile */
}

/* Before the caller sleeps at the join (or any member at a barrier; the
 * slots' door fields were written before the start gate opened): a member
 * handed through a door that its VP has not taken yet (that VP's kernel
 * thread is off its CPU: a loaded machine) is taken back and queued on
 * that VP without the home grace, where an idle VP may steal it at once,
 * as it could steal a created member, instead of waiting for that VP. */
static void take_back(struct team *tm)
{
    for (int i = 1; i < tm->n; i++) {
        struct slot *s = &tm->slots[i];
        if (!s->door_vp)
            continue;
        uintptr_t x = (uintptr_t)&s->m | NTH_DOOR_MEMBER;
        if (__atomic_load_n(&s->door_vp->team_worker, __ATOMIC_RELAXED) == x &&
            __atomic_compare_exchange_n(&s->door_vp->team_worker, &x, 0, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            give(s->door_w, &s->m, 0);
    }
}

/* The caller (member 0) waits for the others to depart. Spinning pays only
 * while every member is running on some VP: a member still queued means its
 * VP is busy or its kernel thread is off the CPU (a loaded machine), and
 * then blocking at once lets this VP's idle loop steal and run it, so the
 * region never waits for a CPU the application does not get. */
static void join_members(struct team *tm)
{
    if (__atomic_load_n(&tm->started, __ATOMIC_ACQUIRE) == tm->n - 1 && spin_while_left(&tm->left))
        return;
    take_back(tm);
    long v = __atomic_load_n(&tm->left, __ATOMIC_ACQUIRE);
    while ((v & LEFT_COUNT) != 0) {
        if (__atomic_compare_exchange_n(&tm->left, &v, v | LEFT_WAITING, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            nth_trace_rt_wait_obj_self((uintptr_t)tm, NTH_OBJ_TEAM_JOIN);
            do
                nth_wait();
            while (__atomic_load_n(&tm->left, __ATOMIC_ACQUIRE) & LEFT_COUNT);
            home_arrived();
            nth_trace_rt_wait_obj_self(0, 0);
            return;
        }
    }
}

/* ---- the team size of a malleable region --------------------------------- */

/* nth_cpus_assigned() polls the cpumgr client, whose callback makes the VPs
 * follow the assigned set (nthlib/cpumgr_rt.c: VPs on CPUs taken away are
 * disabled and park, VPs get the new CPUs), so a team of that size lands on
 * the assigned CPUs. With no CPU at all (the daemon rotates CPUs among more
 * applications than it has) every VP is disabled: the caller's yield hands it
 * to the global queue and its VP parks, and it resumes here when a CPU comes
 * back, as a JNE application stopped while its CPUs were taken. */
#define ZERO_CPU_SLEEP_NS 1000000

static int malleable_size(void)
{
    int n;
    while ((n = nth_cpus_assigned()) < 1) {
        struct nth_vp *vp = nth_vp_self();
        if (__atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE))
            nth_yield();
        else
            nth_sleep_ns(ZERO_CPU_SLEEP_NS); /* VPs not updated yet: do not spin */
    }
    return n;
}

/* ---- regions ------------------------------------------------------------- */

static int run_team(int n, nth_team_fn fn, void *arg, struct member *outer)
{
    struct slot inline_slots[INLINE_MEMBERS];
    struct team tm;
    memset(&tm, 0, sizeof(tm));
    tm.n = n;
    tm.fn = fn;
    tm.arg = arg;
    tm.master = nth_self();
    tm.slots = n <= INLINE_MEMBERS ? inline_slots : aligned_alloc(NTH_CACHELINE, sizeof(struct slot) * (size_t)n);
    if (!tm.slots)
        return EAGAIN;
    for (int i = 0; i < n; i++) {
        tm.slots[i].t = NULL;
        tm.slots[i].sleep = 0;
        tm.slots[i].m.team = &tm;
        tm.slots[i].m.id = i;
        tm.slots[i].door_vp = NULL;
    }
    tm.slots[0].t = tm.master;
    /* The caller's region slice spans creating and joining the members. */
    tm.trace_region = nth_trace_rt_region_id();
    nth_trace_rt_region_begin(tm.trace_region, n, 0);

    int err = 0, created = 0;
    if (n > 1) {
        /* Member i on the i-th enabled VP counting from the caller's. A
         * caller on a stand-in (its VP in a system call, watchdog.c) has
         * the stand-in's VP record, id -1: count from VP 0 then, enabled
         * VPs only. (Counted from -1, en[0] was -1 and a team of 3 on 2
         * VPs read nth_rt.vps[-1]: sor-nth --threads 3 died in the
         * ThreadSanitizer build about 1 run in 200 under load.) */
        struct nth_vp *self_vp = nth_vp_self();
        int nvps = nth_rt.nvps, nen = 0;
        int base = self_vp && self_vp->id >= 0 ? self_vp->id : -1;
        int en_small[64];
        int *en = nvps <= 64 ? en_small : malloc(sizeof(int) * (size_t)nvps);
        if (!en) {
            err = EAGAIN;
        } else {
            for (int j = 0; j < nvps; j++) {
                int v = ((base < 0 ? 0 : base) + j) % nvps;
                if ((j == 0 && base >= 0) ||
                    !__atomic_load_n(&nth_rt.vps[v]->disabled, __ATOMIC_RELAXED))
                    en[nen++] = v;
            }
            if (nen == 0)
                en[nen++] = 0;  /* every VP disabled: VP 0's queue, as a create there */
            __atomic_store_n(&tm.left, n - 1, __ATOMIC_RELAXED);
            nth_attr_t attr;
            nth_attr_init(&attr);
            nth_attr_setdetached(&attr, 1);
            nth_attr_setname(&attr, "team-member");
            for (int i = 1; i < n; i++) {
                err = start_member(nth_rt.vps[en[i % nen]], &attr, &tm.slots[i]);
                if (err)
                    break;
                created++;
            }
            if (en != en_small)
                free(en);
        }
        if (err) {
            /* Members not created never depart; the created ones leave at
             * the gate without running fn. */
            __atomic_sub_fetch(&tm.left, (long)(n - 1 - created), __ATOMIC_RELEASE);
            __atomic_store_n(&tm.go, -1, __ATOMIC_RELEASE);
            join_members(&tm);
            nth_trace_rt_region_end(tm.trace_region);
            if (tm.slots != inline_slots)
                free(tm.slots);
            return err;
        }
        __atomic_store_n(&tm.go, 1, __ATOMIC_RELEASE);
    }
    set_member(&tm.slots[0].m);
    fn(0, n, arg);
    set_member(outer);
    if (n > 1)
        join_members(&tm);
    nth_trace_rt_region_end(tm.trace_region);
    if (tm.slots != inline_slots)
        free(tm.slots);
    return 0;
}

int nth_parallel(int n, nth_team_fn fn, void *arg)
{
    if (!fn || n < 0 || n > NTH_TEAM_MAX)
        return EINVAL;
    if (!nth_self())
        return EPERM;
    struct member *outer = current_member();
    if (outer) /* nested: serialised, a team of one */
        return run_team(1, fn, arg, outer);
    if (n == 0) {
        n = malleable_size();
        if (n > NTH_TEAM_MAX)
            n = NTH_TEAM_MAX;
    }
    /* A caller whose VP lost its CPU moves to one that has a CPU: the yield
     * of a disabled VP hands it to the global queue. */
    struct nth_vp *vp = nth_vp_self();
    if (__atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE))
        nth_yield();
    return run_team(n, fn, arg, NULL);
}

/* ---- work sharing -------------------------------------------------------- */

struct for_args {
    long lo, hi, chunk;
    int schedule;
    nth_for_fn body;
    void *arg;
};

/* Iteration lo + off, computed in unsigned arithmetic: off may exceed
 * LONG_MAX when the range is wider than LONG_MAX, and lo + (long)off would
 * overflow where the mathematical result fits. */
static long at(long lo, unsigned long off) { return (long)((unsigned long)lo + off); }

/* End of the block of up to c iterations at offset b < len, without
 * computing b + c past len (it may not fit in an unsigned long). */
static unsigned long block_end(unsigned long b, unsigned long c, unsigned long len)
{
    return c >= len - b ? len : b + c;
}

/* Run this member's share of the loop. Offsets from lo are unsigned so
 * that ranges wider than LONG_MAX do not overflow; every step towards the
 * next block is checked against what is left, so chunks near LONG_MAX
 * cannot wrap an offset back into the range and run iterations twice. */
static void share(struct team *tm, int id, const struct for_args *a)
{
    unsigned long len = (unsigned long)a->hi - (unsigned long)a->lo;
    unsigned long n = (unsigned long)tm->n;
    unsigned long c = a->chunk > 0 ? (unsigned long)a->chunk : 0;
    unsigned long u = (unsigned long)id;
    switch (a->schedule) {
    case NTH_SCHED_STATIC:
        if (c == 0) {
            unsigned long q = len / n, r = len % n;
            unsigned long b = u * q + (u < r ? u : r);
            unsigned long e = b + q + (u < r ? 1 : 0);
            if (e > b)
                a->body(at(a->lo, b), at(a->lo, e), a->arg);
        } else {
            /* Blocks id, id + n, id + 2n, ...: block k starts at k * c
             * when k * c < len, i.e. k <= (len - 1) / c. */
            unsigned long last = (len - 1) / c;
            for (unsigned long k = u; k <= last; k += n) {
                unsigned long b = k * c;
                a->body(at(a->lo, b), at(a->lo, block_end(b, c, len)), a->arg);
                if (n > last - k)
                    break;
            }
        }
        break;
    case NTH_SCHED_DYNAMIC:
        if (c == 0)
            c = 1;
        if (c > len)
            c = len;
        /* The counter passes len by at most (n + 1) chunks: one block taken
         * last, then one failing add per member. When that cannot wrap, one
         * fetch-add per block; otherwise a compare-and-swap that never
         * moves the counter past len. */
        if (c <= (~0UL - len) / (n + 1)) {
            for (;;) {
                unsigned long b = __atomic_fetch_add(&tm->next, c, __ATOMIC_RELAXED);
                if (b >= len)
                    break;
                a->body(at(a->lo, b), at(a->lo, block_end(b, c, len)), a->arg);
            }
        } else {
            unsigned long b = __atomic_load_n(&tm->next, __ATOMIC_RELAXED), e;
            for (;;) {
                do {
                    if (b >= len)
                        return;
                    e = block_end(b, c, len);
                } while (!__atomic_compare_exchange_n(&tm->next, &b, e, 1, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED));
                a->body(at(a->lo, b), at(a->lo, e), a->arg);
                b = __atomic_load_n(&tm->next, __ATOMIC_RELAXED);
            }
        }
        break;
    default: /* NTH_SCHED_GUIDED */
        if (c == 0)
            c = 1;
        for (;;) {
            unsigned long b = __atomic_load_n(&tm->next, __ATOMIC_RELAXED), sz;
            do {
                if (b >= len)
                    return;
                sz = (len - b) / (2 * n);
                if (sz < c)
                    sz = c;
                if (sz > len - b)
                    sz = len - b;
            } while (!__atomic_compare_exchange_n(&tm->next, &b, b + sz, 1, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED));
            a->body(at(a->lo, b), at(a->lo, b + sz), a->arg);
        }
    }
}

static void for_region(int id, int n, void *p)
{
    (void)n;
    struct member *m = current_member();
    share(m->team, id, p);
}

int nth_parallel_for(long lo, long hi, int schedule, long chunk, nth_for_fn body, void *arg)
{
    if (!body || hi < lo || chunk < 0 ||
        (schedule != NTH_SCHED_STATIC && schedule != NTH_SCHED_DYNAMIC && schedule != NTH_SCHED_GUIDED))
        return EINVAL;
    if (hi == lo)
        return 0;
    struct for_args a = { lo, hi, chunk, schedule, body, arg };
    struct member *m = current_member();
    if (!m)
        return nth_parallel(0, for_region, &a);
    if (m->team->n == 1) {
        body(lo, hi, arg);
        return 0;
    }
    share(m->team, m->id, &a);
    barrier_wait(m->team, m->id);
    return 0;
}
