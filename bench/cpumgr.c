/*
 * cpumgr.c -- CPU manager latencies, measured end to end with real
 * processes: a cpumgr daemon, application B (nthlib, its VPs following the
 * daemon), and application A (this process, a raw slot in the segment, so
 * its requests cost nothing on the measured path).
 *
 *  realloc_latency_p50/p99: A's request drops from 1 CPU to 0; time from
 *    that request (slot write + futex wake of the daemon) until one of B's
 *    nano-threads runs on the CPU A gave up. Over --changes changes. A
 *    makes the request bound to that CPU, as a libnth VP running there
 *    would (--release-anywhere: unbound, as before).
 *  reclaim_latency: B runs a nano-thread that never reaches a scheduling
 *    point on CPU X; A asks for X (its affinity mask is X alone); time from
 *    that request until the spinning thread is running elsewhere (it reads
 *    sched_getcpu() in its loop). Bounded by NTH_RECLAIM_US plus the daemon
 *    and watcher reaction. Median over --reclaims runs; p99 and max in params.
 *
 *  realloc_over_100us: how many of those changes took over 100 us (the
 *    issue's p99 target), a count where the p99 is one sample.
 *  wake_chain_floor_p50/p99: the same run's floor for a reallocation, the
 *    raw cost on this machine of its chain of cross-process wake-ups
 *    without any runtime or daemon work: A futex-wakes a sleeping process D
 *    (unbound, like the daemon), which futex-wakes a sleeping thread of a
 *    process F bound to the CPU A holds (like B's parked VP); time until F
 *    runs there. One sample before each change, in the same conditions (B's
 *    pollers running on the other CPUs), so realloc / floor is the runtime's
 *    and the daemon's share: on a 2-vCPU VM waking a vCPU costs tens of us.
 *
 * usage: cpumgr-bench [--json] [--changes N] [--reclaims N] [--cpumgr PATH]
 * Timestamps are CLOCK_MONOTONIC, shared by the processes of one machine.
 * CPUMGR_BENCH_DEBUG=1 prints each change on stderr, with B's threads
 * (state, CPU, affinity) when one times out.
 * CPUMGR_BENCH_STAMPS=US prints the CLOCK_MONOTONIC start of every reclaim
 * and of each reallocation over US microseconds (to find them in a trace).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nth.h"
#include "nth/cpumgr_shm.h"
#include "cpumgr_probe.h" /* libnth-internal: this bench links the archive */

struct shared {
    int mode;          /* 1 realloc pollers, 2 spinner, 3 quit */
    int target;        /* CPU to watch, -1 none */
    uint64_t t1;       /* ns: first nano-thread of B seen on target */
    int b_assigned;    /* B's nth_cpus_assigned() */
    int b_ready;
    int spin_cpu;      /* where the spinner runs now */
    uint64_t left;     /* ns: spinner seen off target */
    int breakdown;     /* --breakdown: B's probe on, stamps copied below */
    uint64_t notice, enable, unpark, bound; /* B's probe at t1 */
    uint64_t handoff;  /* B's probe at t1: a hand-off taken */
    uint64_t vp_woke, wd; /* B's probe at t1: park_wait's futex returned, */
    int vp_woke_cpu;      /* on which CPU; the stall monitor woken */
    int bind_syscall;     /* rebinds that made a system call, so far */
    int notice_vp;
    /* wake-chain floor: A -> D -> F (futex words shared across fork) */
    uint64_t r_notice, r_move, r_moved; /* B's probe when the spinner left */
    int64_t r_wait_until;               /* the watcher's last sleep */
    uint64_t r_woke;
    int r_move_cpu;
    int r_skip_why;                     /* and the watcher's last skip */
    int r_skip_vp, r_skip_vp_cpu, r_spin_vp;
    int64_t r_skip_due_in;
    uint64_t r_skip;
    int r_notice_vp;   /* who noticed the loss: a VP, or -1 (the watcher) */
    uint32_t d_word, f_word;
    int f_cpu;         /* CPU F binds to */
    int f_ready;       /* CPU F is bound to, about to sleep; -1 none */
    uint64_t f_t1;     /* ns: F woke on f_cpu */
    uint64_t d_t1;     /* ns: D woke (the floor's first hop) */
    int d_cpu, f_woke_cpu; /* where D woke; where F woke */
    int spin_tid;      /* the spinner's kernel thread (its VP's) */
};

static struct shared *sh;
/* CPUMGR_BENCH_STAMPS=US: print on stderr the CLOCK_MONOTONIC start (s.us,
 * the "mono" clock of ftrace) of every reclaim and of each reallocation
 * slower than US microseconds, to find the sample in a kernel trace. */
static int stamps;
static uint64_t stamp_realloc_ns;
static int release_anywhere; /* --release-anywhere: A unbound when it releases */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_us(unsigned u)
{
    struct timespec ts = {(time_t)(u / 1000000), (long)(u % 1000000) * 1000L};
    nanosleep(&ts, NULL);
}

/* ---- application B (nthlib) ---- */

static void *poller(void *arg)
{
    (void)arg;
    while (__atomic_load_n(&sh->mode, __ATOMIC_ACQUIRE) == 1) {
        int t = __atomic_load_n(&sh->target, __ATOMIC_ACQUIRE);
        if (t >= 0 && sched_getcpu() == t && !__atomic_load_n(&sh->t1, __ATOMIC_ACQUIRE)) {
            uint64_t zero = 0, v = now_ns();
            if (__atomic_compare_exchange_n(&sh->t1, &zero, v, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_RELAXED) && sh->breakdown) {
                sh->notice = __atomic_load_n(&nth_cpumgr_probe.notice_ns, __ATOMIC_RELAXED);
                sh->notice_vp = nth_cpumgr_probe.notice_vp;
                sh->enable = __atomic_load_n(&nth_cpumgr_probe.enable_ns, __ATOMIC_RELAXED);
                sh->unpark = __atomic_load_n(&nth_cpumgr_probe.unpark_ns, __ATOMIC_RELAXED);
                sh->bound = __atomic_load_n(&nth_cpumgr_probe.bound_ns, __ATOMIC_RELAXED);
                sh->handoff = __atomic_load_n(&nth_cpumgr_probe.handoff_ns, __ATOMIC_RELAXED);
                sh->vp_woke = __atomic_load_n(&nth_cpumgr_probe.vp_woke_ns, __ATOMIC_RELAXED);
                sh->vp_woke_cpu = __atomic_load_n(&nth_cpumgr_probe.vp_woke_cpu, __ATOMIC_RELAXED);
                sh->wd = __atomic_load_n(&nth_cpumgr_probe.wd_ns, __ATOMIC_RELAXED);
                sh->bind_syscall = __atomic_load_n(&nth_cpumgr_probe.bind_syscall, __ATOMIC_RELAXED);
            }
        }
        __atomic_store_n(&sh->b_assigned, nth_cpus_assigned(), __ATOMIC_RELEASE);
        nth_yield();
    }
    return NULL;
}

/* Never an nthlib call. */
static void *spinner(void *arg)
{
    (void)arg;
    __atomic_store_n(&sh->spin_tid, (int)syscall(SYS_gettid), __ATOMIC_RELAXED);
    while (__atomic_load_n(&sh->mode, __ATOMIC_ACQUIRE) == 2) {
        int c = sched_getcpu();
        __atomic_store_n(&sh->spin_cpu, c, __ATOMIC_RELAXED);
        int t = __atomic_load_n(&sh->target, __ATOMIC_ACQUIRE);
        if (t >= 0 && c != t && !__atomic_load_n(&sh->left, __ATOMIC_RELAXED)) {
            uint64_t v = now_ns();
            if (sh->breakdown) {
                sh->r_notice = __atomic_load_n(&nth_cpumgr_probe.notice_ns, __ATOMIC_RELAXED);
                sh->r_notice_vp = nth_cpumgr_probe.notice_vp;
                sh->r_move = __atomic_load_n(&nth_cpumgr_probe.move_ns, __ATOMIC_RELAXED);
                sh->r_moved = __atomic_load_n(&nth_cpumgr_probe.moved_ns, __ATOMIC_RELAXED);
                sh->r_skip_why = __atomic_load_n(&nth_cpumgr_probe.skip_why, __ATOMIC_RELAXED);
                sh->r_skip_vp = __atomic_load_n(&nth_cpumgr_probe.skip_vp, __ATOMIC_RELAXED);
                sh->r_skip_vp_cpu = __atomic_load_n(&nth_cpumgr_probe.skip_vp_cpu, __ATOMIC_RELAXED);
                sh->r_spin_vp = nth_vp_id();
                sh->r_wait_until = __atomic_load_n(&nth_cpumgr_probe.wait_until_ns, __ATOMIC_RELAXED);
                sh->r_woke = __atomic_load_n(&nth_cpumgr_probe.woke_ns, __ATOMIC_RELAXED);
                sh->r_move_cpu = __atomic_load_n(&nth_cpumgr_probe.move_cpu, __ATOMIC_RELAXED);
                sh->r_skip_due_in = __atomic_load_n(&nth_cpumgr_probe.skip_due_in, __ATOMIC_RELAXED);
                sh->r_skip = __atomic_load_n(&nth_cpumgr_probe.skip_ns, __ATOMIC_RELAXED);
            }
            __atomic_store_n(&sh->left, v, __ATOMIC_RELEASE);
        }
    }
    return NULL;
}

static int app_b(void)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (sh->breakdown)
        __atomic_store_n(&nth_cpumgr_probe.on, 1, __ATOMIC_RELAXED);
    if (nth_init(NULL) != 0 || nth_cpus_request(nth_num_vps()) != 0)
        return 1;
    int n = nth_num_vps();
    nth_t t[64];
    __atomic_store_n(&sh->b_ready, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&sh->mode, __ATOMIC_ACQUIRE) == 0)
        sleep_us(1000);
    for (int i = 0; i < n && i < 64; i++)
        nth_create(&t[i], NULL, poller, NULL);
    poller(NULL); /* main too: a yield that finds nothing local keeps its VP */
    for (int i = 0; i < n && i < 64; i++)
        nth_join(t[i], NULL);
    nth_attr_t a;
    nth_attr_init(&a);
    nth_attr_setvp(&a, n - 1);
    nth_t s;
    nth_create(&s, &a, spinner, NULL);
    while (__atomic_load_n(&sh->mode, __ATOMIC_ACQUIRE) == 2) {
        __atomic_store_n(&sh->b_assigned, nth_cpus_assigned(), __ATOMIC_RELEASE);
        sleep_us(200); /* main sleeps: it must not take the spinner's place */
        nth_yield();
    }
    nth_join(s, NULL);
    return 0;
}

/* ---- the wake-chain floor: D and F ---- */

static void futex_wait_shared(uint32_t *w, uint32_t v)
{
    syscall(SYS_futex, w, FUTEX_WAIT, v, NULL, NULL, 0);
}

static void futex_bump_wake(uint32_t *w)
{
    __atomic_add_fetch(w, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* D: what the daemon does on the path, minus its work: wake, wake F, sleep. */
static int floor_d(void)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (;;) {
        uint32_t v = __atomic_load_n(&sh->d_word, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&sh->mode, __ATOMIC_ACQUIRE) == 3)
            return 0;
        futex_wait_shared(&sh->d_word, v);
        if (__atomic_load_n(&sh->d_word, __ATOMIC_SEQ_CST) != v) {
            __atomic_store_n(&sh->d_t1, now_ns(), __ATOMIC_RELAXED);
            __atomic_store_n(&sh->d_cpu, sched_getcpu(), __ATOMIC_RELAXED);
            futex_bump_wake(&sh->f_word);
        }
    }
}

/* F: a thread bound to the freed CPU, asleep, as B's parked VP is. */
static int floor_f(void)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int bound = -1;
    for (;;) {
        int c = __atomic_load_n(&sh->f_cpu, __ATOMIC_ACQUIRE);
        if (c != bound && c >= 0 && c < CPU_SETSIZE) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            if (sched_setaffinity(0, sizeof one, &one) == 0)
                bound = c;
        }
        uint32_t v = __atomic_load_n(&sh->f_word, __ATOMIC_SEQ_CST);
        __atomic_store_n(&sh->f_ready, bound, __ATOMIC_RELEASE);
        if (__atomic_load_n(&sh->mode, __ATOMIC_ACQUIRE) == 3)
            return 0;
        futex_wait_shared(&sh->f_word, v);
        uint64_t t = now_ns();
        __atomic_store_n(&sh->f_woke_cpu, sched_getcpu(), __ATOMIC_RELAXED);
        if (bound >= 0 && sched_getcpu() == bound)
            __atomic_store_n(&sh->f_t1, t, __ATOMIC_RELEASE);
    }
}

/* ---- application A: a raw slot ---- */

static struct nth_cpumgr_shm *shm;
static struct nth_cpumgr_slot *slot;

static void wake_daemon(void)
{
    /* Dated as libnth dates its wakes (nth/cpumgr_shm.h, wake_ns). */
    uint64_t zero = 0;
    (void)__atomic_compare_exchange_n(&shm->wake_ns, &zero, now_ns(), 0, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED);
    __atomic_add_fetch(&shm->wake, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &shm->wake, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* A release to 0 CPUs hands them to their armed next owners (the one-hop
 * hand-off of nth/cpumgr_shm.h, as libnth does at detach); the daemon is
 * woken only for what was not handed off (it confirms the rest at its
 * next period), so that it does not take the freed CPU before the
 * receiver. */
static void a_request(int n)
{
    __atomic_store_n(&slot->request, n, __ATOMIC_RELAXED);
    __atomic_add_fetch(&slot->req_seq, 1, __ATOMIC_RELEASE);
    if (n == 0) {
        uint64_t m[NTH_CPUMGR_MASK_WORDS];
        for (unsigned w = 0; w < NTH_CPUMGR_MASK_WORDS; w++)
            m[w] = __atomic_load_n(&slot->assigned[w], __ATOMIC_ACQUIRE);
        unsigned nh = nth_cpumgr_handoff(shm, (unsigned)(slot - shm->slots), m);
        if (getenv("CPUMGR_BENCH_HANDOFF_DEBUG")) {
            int c = m[0] ? __builtin_ctzll(m[0]) : 0;
            fprintf(stderr, "A handed %u: cpu %d token %u owner %u next %u me %d\n", nh, c,
                    shm->cpu[c].token, shm->cpu[c].owner, shm->cpu[c].next_slot,
                    (int)(slot - shm->slots) + 1);
        }
        unsigned have = 0;
        for (unsigned w = 0; w < NTH_CPUMGR_MASK_WORDS; w++)
            have += (unsigned)__builtin_popcountll(m[w]);
        if (nh == have && nh > 0)
            return;
    }
    wake_daemon();
}

static void a_affinity(int only) /* only < 0: every CPU below 64 */
{
    for (unsigned w = 0; w < NTH_CPUMGR_MASK_WORDS; w++)
        __atomic_store_n(&slot->affinity[w], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->affinity[0], only < 0 ? ~UINT64_C(0) : UINT64_C(1) << only,
                     __ATOMIC_RELAXED);
}

/* A's assigned CPU (the lowest) and count, read under the seqlock. */
static int a_assigned(int *cpu)
{
    for (;;) {
        uint32_t q = __atomic_load_n(&slot->aseq, __ATOMIC_ACQUIRE);
        if (q & 1u)
            continue;
        /* Acquire loads keep the re-read of aseq after them (no fence:
         * GCC's ThreadSanitizer rejects fences). */
        int n = (int)__atomic_load_n(&slot->assigned_count, __ATOMIC_ACQUIRE);
        uint64_t m = __atomic_load_n(&slot->assigned[0], __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&slot->aseq, __ATOMIC_RELAXED) != q)
            continue;
        *cpu = m ? __builtin_ctzll(m) : -1;
        return n;
    }
}

static int claim(void)
{
    for (unsigned i = 0; i < NTH_CPUMGR_MAX_SLOTS; i++) {
        struct nth_cpumgr_slot *s = &shm->slots[i];
        uint32_t exp = NTH_CPUMGR_SLOT_FREE;
        if (!__atomic_compare_exchange_n(&s->state, &exp, NTH_CPUMGR_SLOT_CLAIMING, 0,
                                         __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            continue;
        slot = s;
        s->pid = getpid();
        s->start_time = nth_cpumgr_proc_start_time(getpid());
        memset(s->name, 0, sizeof s->name);
        strcpy(s->name, "bench-A");
        s->priority = 1;
        s->request = 1;
        a_affinity(-1);
        __atomic_store_n(&s->state, NTH_CPUMGR_SLOT_ACTIVE, __ATOMIC_RELEASE);
        wake_daemon();
        return 0;
    }
    return -1;
}

/* Wait for cond (polled every 50 µs) at most ms milliseconds. */
#define WAIT_FOR(cond, ms)                                                       \
    ({                                                                           \
        uint64_t _t0 = now_ns();                                                 \
        int _ok;                                                                 \
        while (!(_ok = (cond)) && now_ns() - _t0 < (uint64_t)(ms) * 1000000u)    \
            sleep_us(50);                                                        \
        _ok;                                                                     \
    })

/* The tail's threshold: the 100 us target. */
#define TAIL_NS 100000u
static int floor_tail_by[2], nfloor_tail; /* floor samples over TAIL_NS, by larger hop */
static uint64_t floor_d_ns; /* the last floor sample's A -> D woke, 0 if unknown */

/* One floor sample with F bound to cpu: ns from A's wake of D to F
 * running on cpu, 0 if it did not happen within a second. */
static uint64_t floor_sample(int cpu)
{
    if (__atomic_load_n(&sh->f_ready, __ATOMIC_ACQUIRE) != cpu) {
        __atomic_store_n(&sh->f_cpu, cpu, __ATOMIC_RELEASE);
        __atomic_store_n(&sh->f_ready, -1, __ATOMIC_RELEASE);
        futex_bump_wake(&sh->f_word); /* F rebinds */
        if (!WAIT_FOR(__atomic_load_n(&sh->f_ready, __ATOMIC_ACQUIRE) == cpu, 1000))
            return 0;
    }
    sleep_us(300); /* F and D are asleep */
    __atomic_store_n(&sh->f_t1, 0, __ATOMIC_RELEASE);
    uint64_t t0 = now_ns();
    futex_bump_wake(&sh->d_word);
    if (!WAIT_FOR(__atomic_load_n(&sh->f_t1, __ATOMIC_ACQUIRE) != 0, 1000))
        return 0;
    uint64_t f = __atomic_load_n(&sh->f_t1, __ATOMIC_ACQUIRE) - t0;
    uint64_t d = __atomic_load_n(&sh->d_t1, __ATOMIC_RELAXED);
    floor_d_ns = d >= t0 && d - t0 <= f ? d - t0 : 0;
    if (f > TAIL_NS && floor_d_ns) {
        nfloor_tail++;
        floor_tail_by[floor_d_ns * 2 > f ? 0 : 1]++;
    }
    return f;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(uint64_t *v, int n, double p)
{
    if (n <= 0)
        return -1;
    int i = (int)(p * (n - 1) + 0.5);
    return (double)v[i] / 1000.0; /* µs */
}

/* --breakdown: where a reallocation's time goes, from stamps taken by the
 * daemon (segment) and by B's runtime probe, all CLOCK_MONOTONIC. */
#define NSEG 7
static const char *const seg_name[NSEG] = {
    "request -> daemon pass", "pass -> B's grant",  "grant -> B notices",
    "notice -> VP enabled",   "enabled -> unparked", "unparked -> rebound",
    "rebound -> runs on CPU",
};

static int nhanded; /* changes where B ran before the daemon's pass */

/* Add one change's segments; 0 if a stamp is missing (that step did not
 * happen for this change, e.g. the VP had not parked yet). */
static int breakdown_add(uint64_t t0, pid_t bpid, uint64_t **seg, int n, int *slow_by,
                         int *nslow, int *by_watcher)
{
    uint64_t grant = 0;
    for (unsigned i = 0; i < NTH_CPUMGR_MAX_SLOTS; i++)
        if (__atomic_load_n(&shm->slots[i].pid, __ATOMIC_RELAXED) == bpid)
            grant = __atomic_load_n(&shm->slots[i].grant_ns, __ATOMIC_RELAXED);
    uint64_t st[NSEG + 1] = {t0, __atomic_load_n(&shm->pass_ns, __ATOMIC_RELAXED), grant,
                             sh->notice, sh->enable, sh->unpark, sh->bound,
                             __atomic_load_n(&sh->t1, __ATOMIC_ACQUIRE)};
    /* Handed off (B ran before any daemon pass after the request, or the
     * pass came later): the first two segments are 0 and the third is
     * request -> B notices. */
    if (getenv("CPUMGR_BENCH_HANDOFF_DEBUG"))
        fprintf(stderr, "t1 %.1f handoff %.1f pass %.1f notice %.1f (vp %d) enable %.1f unpark %.1f\n",
                (st[NSEG] - t0) / 1e3, ((int64_t)sh->handoff - (int64_t)t0) / 1e3,
                ((int64_t)st[1] - (int64_t)t0) / 1e3, ((int64_t)sh->notice - (int64_t)t0) / 1e3,
                sh->notice_vp, ((int64_t)sh->enable - (int64_t)t0) / 1e3,
                ((int64_t)sh->unpark - (int64_t)t0) / 1e3);
    int handed = sh->handoff >= t0;
    /* Ran before any daemon pass after the request: hand-off or not, the
     * daemon's segments are not on this change's path. */
    if (st[1] < t0 || st[1] > st[NSEG])
        handed = 1;
    if (handed)
        st[1] = st[2] = t0;
    for (int k = 0; k < NSEG; k++)
        if (st[k + 1] < st[k])
            return 0;
    int worst = 0;
    for (int k = 0; k < NSEG; k++) {
        seg[k][n] = st[k + 1] - st[k];
        if (seg[k][n] > seg[worst][n])
            worst = k;
    }
    if (st[NSEG] - t0 > 1000000u) {
        slow_by[worst]++;
        (*nslow)++;
    }
    if (sh->notice_vp < 0)
        (*by_watcher)++;
    nhanded += handed;
    return 1;
}

static int cmp_u64(const void *a, const void *b);
static double pct(uint64_t *v, int n, double p);

/* --breakdown, the hops of a handed-off change (the daemon is not on its
 * path): each from B's probe or A's own clock, CLOCK_MONOTONIC. */
#define NHOP 8
static const char *const hop_name[NHOP] = {
    "request -> A's wake done",   /* A: publish, hand-off, futex wake */
    "A's wake -> VP woke",        /* B's parked VP leaves its futex wait */
    "VP woke -> notices",         /* it reads the slot and the hand-off */
    "notice -> VP enabled",       /* the assignment callback */
    "enabled -> unparked",        /* rest of the callback */
    "unparked -> monitor woken",  /* nth_watchdog_unparked() */
    "monitor -> rebound",         /* idle loop, nth_vp_bind() */
    "rebound -> runs on CPU",     /* picks a nano-thread, it runs */
};
static uint64_t *hop_ns[NHOP];
static int nhop, hop_woke_on_x, hop_binds, hop_wd_slow;

/* The tail (changes over TAIL_NS, the 100 us): which hop carries
 * each one's excess, i.e. the hop that exceeds its own median across the
 * run by the most (taken at the end, over the changes kept by hops_add),
 * and the same for the floor samples over TAIL_NS (A -> D woke, or
 * D -> F runs). Indices into hop_ns of the slow changes, recorded in
 * arrival order before hop_ns is sorted. */
static uint64_t (*tail_hops)[NHOP];
static int ntail, ntail_unordered, ntail_preempted;

/* One handed-off change's hops; 0 if a stamp is missing or out of order
 * (e.g. the VP found the hand-off before it slept: no futex wake-up). */
static int hops_add(uint64_t t0, uint64_t a_done, int x, int binds_before)
{
    uint64_t st[NHOP + 1] = {t0, a_done, sh->vp_woke, sh->notice, sh->enable, sh->unpark,
                             sh->wd, sh->bound, __atomic_load_n(&sh->t1, __ATOMIC_ACQUIRE)};
    for (int k = 0; k < NHOP; k++)
        if (st[k + 1] < st[k])
            return 0;
    for (int k = 0; k < NHOP; k++)
        hop_ns[k][nhop] = st[k + 1] - st[k];
    if (st[NHOP] - t0 > TAIL_NS && tail_hops)
        for (int k = 0; k < NHOP; k++)
            tail_hops[ntail][k] = st[k + 1] - st[k];
    ntail += st[NHOP] - t0 > TAIL_NS && tail_hops;
    hop_woke_on_x += sh->vp_woke_cpu == x;
    hop_binds += sh->bind_syscall != binds_before;
    hop_wd_slow += st[6] - st[5] > 2000u;
    nhop++;
    return 1;
}

/* Which hop carries the tail: for each slow change, the hop furthest
 * above its median over the run (hop_ns sorted by hops_print). */
static void tail_print(void)
{
    int by[NHOP] = {0};
    uint64_t med[NHOP];
    for (int k = 0; k < NHOP; k++)
        med[k] = nhop ? hop_ns[k][(nhop - 1) / 2] : 0;
    for (int i = 0; i < ntail; i++) {
        int worst = 0;
        int64_t wx = INT64_MIN;
        for (int k = 0; k < NHOP; k++) {
            int64_t ex = (int64_t)tail_hops[i][k] - (int64_t)med[k];
            if (ex > wx) {
                wx = ex;
                worst = k;
            }
        }
        by[worst]++;
    }
    printf("realloc tail (> %u us, stamps in order): %d changes; %d more out of order, of "
           "which %d with B's VP awake before A's wake returned (it preempted A)\n",
           TAIL_NS / 1000u, ntail, ntail_unordered, ntail_preempted);
    printf("%-26s %9s %9s %9s\n", "hop", "p50 us", "tail p50", "excess in");
    for (int k = 0; k < NHOP; k++) {
        uint64_t v[ntail > 0 ? ntail : 1];
        for (int i = 0; i < ntail; i++)
            v[i] = tail_hops[i][k];
        qsort(v, (size_t)ntail, sizeof v[0], cmp_u64);
        printf("%-26s %9.1f %9.1f %9d\n", hop_name[k], med[k] / 1e3, pct(v, ntail, 0.5), by[k]);
    }
    printf("floor tail (> %u us): %d samples; A -> D woke the larger part in %d, "
           "D -> F runs in %d\n", TAIL_NS / 1000u, nfloor_tail, floor_tail_by[0], floor_tail_by[1]);
}

static void hops_print(int changes)
{
    printf("realloc hops (handed off, every stamp in order): %d of %d changes; B's VP woke on "
           "the freed CPU in %d, rebind made a system call in %d, monitor wake > 2 us in %d\n",
           nhop, changes, hop_woke_on_x, hop_binds, hop_wd_slow);
    printf("%-26s %9s %9s %9s\n", "hop", "p50 us", "p99 us", "max us");
    for (int k = 0; k < NHOP; k++) {
        qsort(hop_ns[k], (size_t)nhop, sizeof(uint64_t), cmp_u64);
        printf("%-26s %9.1f %9.1f %9.1f\n", hop_name[k], pct(hop_ns[k], nhop, 0.5),
               pct(hop_ns[k], nhop, 0.99), nhop ? hop_ns[k][nhop - 1] / 1000.0 : -1.0);
    }
}

/* --breakdown for bounded reclaim: B's stamps when the spinner left. */
#define NRSEG 7
static const char *const rseg_name[NRSEG] = {
    "request -> B's loss", "loss -> B notices", "notice -> move starts",
    "move -> moved", "moved -> runs elsewhere", "loss -> runs elsewhere",
    "request -> moved (free)",
};

static uint64_t slot_grant(pid_t pid)
{
    for (unsigned i = 0; i < NTH_CPUMGR_MAX_SLOTS; i++)
        if (__atomic_load_n(&shm->slots[i].pid, __ATOMIC_RELAXED) == pid)
            return __atomic_load_n(&shm->slots[i].grant_ns, __ATOMIC_RELAXED);
    return 0;
}

static int rbreakdown_add(uint64_t t0, pid_t bpid, uint64_t **seg, int n)
{
    /* The last stamp: the spinner seen elsewhere. The CPU is free for its
     * new owner earlier, at "moved" (sched_setaffinity has returned: the
     * thread is off that CPU's run queue); the spinner may then wait for a
     * turn on a CPU of its own application's, which is no one else's cost. */
    enum { NST = 6 };
    uint64_t st[NST] = {t0, slot_grant(bpid), sh->r_notice, sh->r_move, sh->r_moved,
                        __atomic_load_n(&sh->left, __ATOMIC_ACQUIRE)};
    for (int k = 0; k + 1 < NST; k++)
        if (st[k + 1] < st[k])
            return 0;
    for (int k = 0; k + 1 < NST; k++)
        seg[k][n] = st[k + 1] - st[k];
    seg[5][n] = st[5] - st[1];
    seg[6][n] = st[4] - st[0];
    return 1;
}

static void breakdown_print(uint64_t **seg, int n, int changes, const int *slow_by, int nslow,
                            int by_watcher)
{
    printf("realloc breakdown: %d of %d changes with every stamp; noticed by the watcher "
           "in %d, by a VP in %d\n", n, changes, by_watcher, n - by_watcher);
    printf("handed off (B took a hand-off, or ran before the daemon's pass; their first two "
           "segments count 0, the third is request -> B notices): %d of %d\n", nhanded, n);
    printf("%-26s %9s %9s %9s  %s\n", "segment", "p50 us", "p99 us", "max us",
           "largest in changes > 1 ms");
    for (int k = 0; k < NSEG; k++) {
        qsort(seg[k], (size_t)n, sizeof(uint64_t), cmp_u64);
        printf("%-26s %9.1f %9.1f %9.1f  %d of %d\n", seg_name[k], pct(seg[k], n, 0.5),
               pct(seg[k], n, 0.99), n ? seg[k][n - 1] / 1000.0 : -1.0, slow_by[k], nslow);
    }
}

int main(int argc, char **argv)
{
    int json = 0, changes = 1000, reclaims = 50, breakdown = 0;
    char daemon_path[PATH_MAX] = "";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--changes") && i + 1 < argc)
            changes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reclaims") && i + 1 < argc)
            reclaims = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--breakdown"))
            breakdown = 1;
        else if (!strcmp(argv[i], "--release-anywhere"))
            release_anywhere = 1;
        else if (!strcmp(argv[i], "--cpumgr") && i + 1 < argc)
            snprintf(daemon_path, sizeof daemon_path, "%s", argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--json] [--changes N] [--reclaims N] [--cpumgr PATH] [--breakdown] [--release-anywhere]\n",
                    argv[0]);
            return 2;
        }
    }
    const char *st_env = getenv("CPUMGR_BENCH_STAMPS");
    if (st_env && *st_env) {
        stamps = 1;
        stamp_realloc_ns = strtoull(st_env, NULL, 10) * 1000u;
    }
    if (changes < 1 || reclaims < 1) {
        fprintf(stderr, "cpumgr-bench: --changes and --reclaims take a positive count\n");
        return 2;
    }
    if (!daemon_path[0]) {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            return 1;
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash)
            *slash = 0;
        snprintf(daemon_path, sizeof daemon_path, "%.*s/../cpumgr/cpumgr", PATH_MAX - 32, self);
    }
    cpu_set_t cs;
    sched_getaffinity(0, sizeof cs, &cs);
    int ncpu = CPU_COUNT(&cs);
    if (ncpu < 2) {
        fprintf(stderr, "cpumgr-bench: needs 2 CPUs or more in the affinity mask\n");
        return 77;
    }
    char seg[64];
    snprintf(seg, sizeof seg, "/nth-bench-%d", (int)getpid());
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 1;
    sh->target = -1;
    sh->breakdown = breakdown;

    pid_t dpid = fork();
    if (dpid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 2);
        execl(daemon_path, daemon_path, "--foreground", "--name", seg, "--period", "10",
              (char *)NULL);
        _exit(127);
    }
    int rc = 1;
    pid_t bpid = -1, fpid = -1, ddpid = -1;
    uint64_t *rl = calloc((size_t)changes, sizeof *rl), *cl = calloc((size_t)reclaims, sizeof *cl);
    uint64_t *fl = calloc((size_t)changes, sizeof *fl);
    tail_hops = calloc((size_t)changes, sizeof *tail_hops);
    int nfl = 0;
    uint64_t *seg_ns[NSEG];
    int nseg = 0, slow_by[NSEG] = {0}, nslow = 0, by_watcher = 0;
    for (int k = 0; k < NSEG; k++)
        seg_ns[k] = calloc((size_t)changes, sizeof(uint64_t));
    for (int k = 0; k < NHOP; k++)
        hop_ns[k] = calloc((size_t)changes, sizeof(uint64_t));
    uint64_t *rseg_ns[NRSEG];
    int nrseg = 0;
    for (int k = 0; k < NRSEG; k++)
        rseg_ns[k] = calloc((size_t)reclaims, sizeof(uint64_t));
    int nrl = 0, ncl = 0, miss_r = 0, miss_c = 0;
    int fd = -1;
    for (int i = 0; i < 400 && fd < 0; i++) {
        fd = shm_open(seg, O_RDWR, 0);
        if (fd < 0)
            sleep_us(5000);
    }
    if (fd < 0 || !rl || !cl || !fl) {
        fprintf(stderr, "cpumgr-bench: daemon %s did not start\n", daemon_path);
        goto out;
    }
    shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (shm == MAP_FAILED || !WAIT_FOR(__atomic_load_n(&shm->daemon_state, __ATOMIC_ACQUIRE) ==
                                           NTH_CPUMGR_DAEMON_RUNNING, 3000)) {
        fprintf(stderr, "cpumgr-bench: daemon not running\n");
        goto out;
    }
    setenv("NTH_CPUMGR", seg, 1);
    bpid = fork();
    if (bpid == 0)
        _exit(app_b());
    sh->f_cpu = sh->f_ready = -1;
    fpid = fork();
    if (fpid == 0)
        _exit(floor_f());
    ddpid = fork();
    if (ddpid == 0)
        _exit(floor_d());
    if (claim() != 0 || !WAIT_FOR(__atomic_load_n(&sh->b_ready, __ATOMIC_ACQUIRE), 5000))
        goto out;

    /* Reallocation: A 1 -> 0 CPUs, B's VP starts on A's old CPU. */
    __atomic_store_n(&sh->mode, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < changes; i++) {
        int x = -1;
        if (!WAIT_FOR(a_assigned(&x) == 1 &&
                      __atomic_load_n(&sh->b_assigned, __ATOMIC_ACQUIRE) == ncpu - 1, 2000)) {
            miss_r++;
            a_request(1);
            continue;
        }
        uint64_t f = floor_sample(x);
        if (f)
            fl[nfl++] = f;
        sleep_us(1000); /* B's VP on x parks at its next scheduling point */
        __atomic_store_n(&sh->t1, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&sh->target, x, __ATOMIC_RELEASE);
        /* A releases from the CPU it gives up, as a VP of a libnth
         * application does (it runs there): x is busy, not halted, when the
         * release is made, and free once A sleeps. */
        cpu_set_t all, one;
        sched_getaffinity(0, sizeof all, &all);
        CPU_ZERO(&one);
        CPU_SET(x, &one);
        if (!release_anywhere)
            sched_setaffinity(0, sizeof one, &one);
        int binds_before = sh->bind_syscall;
        uint64_t t0 = now_ns();
        a_request(0);
        uint64_t a_done = now_ns();
        if (WAIT_FOR(__atomic_load_n(&sh->t1, __ATOMIC_ACQUIRE) != 0, 1000)) {
            rl[nrl++] = __atomic_load_n(&sh->t1, __ATOMIC_ACQUIRE) - t0;
            if (stamps && rl[nrl - 1] > stamp_realloc_ns)
                fprintf(stderr, "slow realloc %d: t0 %llu.%06llu lat %.1f us cpu %d\n", i,
                        (unsigned long long)(t0 / 1000000000u),
                        (unsigned long long)(t0 % 1000000000u / 1000u), rl[nrl - 1] / 1e3, x);
            if (breakdown && breakdown_add(t0, bpid, seg_ns, nseg, slow_by, &nslow, &by_watcher))
                nseg++;
            if (breakdown && sh->handoff >= t0 && !hops_add(t0, a_done, x, binds_before) &&
                rl[nrl - 1] > TAIL_NS) {
                ntail_unordered++;
                ntail_preempted += sh->vp_woke >= t0 && sh->vp_woke < a_done;
            }
            if (stamps && breakdown && rl[nrl - 1] > stamp_realloc_ns) {
                /* Each stamp from the request, in us (< 0: not this change's). */
                const uint64_t st[] = {a_done, sh->vp_woke, sh->notice, sh->enable, sh->unpark,
                                       sh->wd, sh->bound, sh->t1};
                fprintf(stderr, "  hops of %d from the request, us: A done %.1f, VP woke %.1f "
                        "(CPU %d), notice %.1f, enabled %.1f, unparked %.1f, monitor %.1f, "
                        "rebound %.1f, runs %.1f; this round's floor %.1f (D woke %.1f on "
                        "CPU %d)\n", i,
                        ((double)st[0] - (double)t0) / 1e3, ((double)st[1] - (double)t0) / 1e3,
                        sh->vp_woke_cpu, ((double)st[2] - (double)t0) / 1e3,
                        ((double)st[3] - (double)t0) / 1e3, ((double)st[4] - (double)t0) / 1e3,
                        ((double)st[5] - (double)t0) / 1e3, ((double)st[6] - (double)t0) / 1e3,
                        ((double)st[7] - (double)t0) / 1e3, f / 1e3, floor_d_ns / 1e3,
                        sh->d_cpu);
            }
        } else
            miss_r++;
        if (!release_anywhere)
            sched_setaffinity(0, sizeof all, &all);
        if (getenv("CPUMGR_BENCH_DEBUG") && !sh->t1) {
            int y = -1, na = a_assigned(&y);
            fprintf(stderr, "realloc %d: x=%d t1=%s lat=%.1f us A=%d b=%d\n", i, x,
                    sh->t1 ? "set" : "unset", sh->t1 ? (double)(sh->t1 - t0) / 1e3 : -1.0, na,
                    sh->b_assigned);
            if (!sh->t1) {
                char cmd[200];
                snprintf(cmd, sizeof cmd, "for t in /proc/%d/task/*; do echo $t $(cut -d' ' -f3,39 $t/stat) $(taskset -p ${t##*/} | cut -d: -f2); done >&2", (int)bpid);
                (void)!system(cmd);
            }
        }
        __atomic_store_n(&sh->target, -1, __ATOMIC_RELEASE);
        WAIT_FOR(__atomic_load_n(&sh->b_assigned, __ATOMIC_ACQUIRE) == ncpu, 1000);
        a_request(1);
    }

    /* Bounded reclaim: A asks for the spinner's CPU. */
    a_request(0);
    __atomic_store_n(&sh->spin_cpu, -1, __ATOMIC_RELAXED);
    __atomic_store_n(&sh->mode, 2, __ATOMIC_RELEASE);
    WAIT_FOR(__atomic_load_n(&sh->spin_cpu, __ATOMIC_ACQUIRE) >= 0, 5000); /* spinner started */
    for (int i = 0; i < reclaims; i++) {
        int x = -1;
        WAIT_FOR(a_assigned(&x) == 0 && __atomic_load_n(&sh->b_assigned, __ATOMIC_ACQUIRE) == ncpu,
                 2000);
        sleep_us(3000); /* the spinner is back on its own CPU */
        x = __atomic_load_n(&sh->spin_cpu, __ATOMIC_ACQUIRE);
        if (x < 0 || x >= 64) {
            fprintf(stderr, "cpumgr-bench: the spinner did not run (CPU %d)\n", x);
            miss_c++;
            continue;
        }
        a_affinity(x);
        __atomic_store_n(&sh->left, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&sh->target, x, __ATOMIC_RELEASE);
        uint64_t t0 = now_ns();
        a_request(1);
        if (WAIT_FOR(__atomic_load_n(&sh->left, __ATOMIC_ACQUIRE) != 0, 1000)) {
            cl[ncl++] = __atomic_load_n(&sh->left, __ATOMIC_ACQUIRE) - t0;
            if (stamps)
                fprintf(stderr, "reclaim %d: t0 %llu.%06llu lat %.1f us cpu %d spinner tid %d\n",
                        i, (unsigned long long)(t0 / 1000000000u),
                        (unsigned long long)(t0 % 1000000000u / 1000u), cl[ncl - 1] / 1e3, x,
                        __atomic_load_n(&sh->spin_tid, __ATOMIC_RELAXED));
            if (breakdown && rbreakdown_add(t0, bpid, rseg_ns, nrseg)) {
                if (getenv("CPUMGR_BENCH_DEBUG"))
                    fprintf(stderr, "reclaim %d: us %.1f %.1f %.1f %.1f %.1f total %.1f free at %.1f noticed by %d;"
                            " watcher's last sleep: until %.1f woke %.1f us from the request, moved from CPU %d,"
                            " spinner's CPU %d\n", i,
                            rseg_ns[0][nrseg] / 1e3, rseg_ns[1][nrseg] / 1e3,
                            rseg_ns[2][nrseg] / 1e3, rseg_ns[3][nrseg] / 1e3,
                            rseg_ns[4][nrseg] / 1e3, cl[ncl - 1] / 1e3,
                            rseg_ns[6][nrseg] / 1e3, sh->r_notice_vp,
                            ((double)sh->r_wait_until - (double)t0) / 1e3,
                            ((double)sh->r_woke - (double)t0) / 1e3, sh->r_move_cpu, x);
                nrseg++;
            } else if (breakdown && getenv("CPUMGR_BENCH_DEBUG"))
                /* Each stamp from the request, in us: one before it (< 0)
                 * is a previous reclaim's, i.e. this step did not happen
                 * this time (no move by B's watcher: the CPU was freed by
                 * something else, e.g. the daemon's enforcement pass). */
                fprintf(stderr, "reclaim %d: stamps out of order, total %.1f us; from the "
                        "request: B's loss %.1f, notice %.1f (by %d), move %.1f, moved %.1f us; "
                        "watcher's last skip %.1f us: why %d (1 no clock, 2 moved, 3 parked, "
                        "4 not due, 5 nowhere) due in %.1f us, VP %d (its CPU %d); the spinner on VP %d, "
                        "CPU %d\n",
                        i, cl[ncl - 1] / 1e3, ((double)slot_grant(bpid) - (double)t0) / 1e3,
                        ((double)sh->r_notice - (double)t0) / 1e3, sh->r_notice_vp,
                        ((double)sh->r_move - (double)t0) / 1e3,
                        ((double)sh->r_moved - (double)t0) / 1e3,
                        ((double)sh->r_skip - (double)t0) / 1e3, sh->r_skip_why,
                        sh->r_skip_due_in / 1e3, sh->r_skip_vp, sh->r_skip_vp_cpu, sh->r_spin_vp, x);
        } else
            miss_c++;
        if (getenv("CPUMGR_BENCH_DEBUG") && !sh->left) {
            int y = -1, na = a_assigned(&y);
            fprintf(stderr, "reclaim %d: x=%d left=%s A=%d on %d b=%d spin=%d\n", i, x,
                    sh->left ? "set" : "unset", na, y, sh->b_assigned, sh->spin_cpu);
            if (!sh->left) {
                char cmd[200];
                snprintf(cmd, sizeof cmd, "for t in /proc/%d/task/*; do echo $t $(cut -d' ' -f3,39 $t/stat) $(taskset -p ${t##*/} | cut -d: -f2); done >&2", (int)bpid);
                (void)!system(cmd);
            }
        }
        __atomic_store_n(&sh->target, -1, __ATOMIC_RELEASE);
        a_request(0);
    }
    __atomic_store_n(&sh->mode, 3, __ATOMIC_RELEASE);
    qsort(rl, (size_t)nrl, sizeof *rl, cmp_u64);
    qsort(fl, (size_t)nfl, sizeof *fl, cmp_u64);
    qsort(cl, (size_t)ncl, sizeof *cl, cmp_u64);
    const char *rus = getenv("NTH_RECLAIM_US");
    int reclaim_us = rus && *rus ? atoi(rus) : 1000;
    double r50 = pct(rl, nrl, 0.5), r99 = pct(rl, nrl, 0.99);
    int over100 = 0; /* the target is p99 < 100 us: how many miss it */
    for (int k = 0; k < nrl; k++)
        over100 += rl[k] > 100000u;
    double f50 = pct(fl, nfl, 0.5), f99 = pct(fl, nfl, 0.99);
    double c50 = pct(cl, ncl, 0.5), c99 = pct(cl, ncl, 0.99), cmax = ncl ? cl[ncl - 1] / 1000.0 : -1;
    if (json) {
        printf("{\"bench\":\"realloc_latency_p50\",\"impl\":\"nth\",\"value\":%.1f,\"unit\":\"us\","
               "\"params\":{\"changes\":%d,\"measured\":%d,\"cpus\":%d,\"period_ms\":10}}\n",
               r50, changes, nrl, ncpu);
        printf("{\"bench\":\"realloc_latency_p99\",\"impl\":\"nth\",\"value\":%.1f,\"unit\":\"us\","
               "\"params\":{\"changes\":%d,\"measured\":%d,\"cpus\":%d,\"period_ms\":10,"
               "\"over_100us\":%d}}\n",
               r99, changes, nrl, ncpu, over100);
        printf("{\"bench\":\"wake_chain_floor_p50\",\"impl\":\"raw\",\"value\":%.1f,\"unit\":\"us\","
               "\"params\":{\"samples\":%d,\"realloc_over_floor\":%.2f}}\n", f50, nfl,
               f50 > 0 ? r50 / f50 : -1.0);
        printf("{\"bench\":\"wake_chain_floor_p99\",\"impl\":\"raw\",\"value\":%.1f,\"unit\":\"us\","
               "\"params\":{\"samples\":%d,\"realloc_over_floor\":%.2f}}\n", f99, nfl,
               f99 > 0 ? r99 / f99 : -1.0);
        printf("{\"bench\":\"reclaim_latency\",\"impl\":\"nth\",\"value\":%.1f,\"unit\":\"us\","
               "\"params\":{\"stat\":\"p50\",\"p99\":%.1f,\"max\":%.1f,\"runs\":%d,\"measured\":%d,"
               "\"reclaim_us\":%d}}\n", c50, c99, cmax, reclaims, ncl, reclaim_us);
    } else {
        printf("cpumgr latencies (%d CPUs, daemon period 10 ms, NTH_RECLAIM_US=%d)\n", ncpu,
               reclaim_us);
        printf("%-22s %10s %6s %8s\n", "metric", "value", "unit", "samples");
        printf("%-22s %10.1f %6s %5d/%d\n", "realloc_latency_p50", r50, "us", nrl, changes);
        printf("%-22s %10.1f %6s %5d/%d\n", "realloc_latency_p99", r99, "us", nrl, changes);
        printf("%-22s %10d %6s %5d/%d\n", "realloc_over_100us", over100, "", nrl, changes);
        printf("%-22s %10.1f %6s %5d/%d\n", "wake_chain_floor_p50", f50, "us", nfl, changes);
        printf("%-22s %10.1f %6s %5d/%d\n", "wake_chain_floor_p99", f99, "us", nfl, changes);
        printf("%-22s %10.2f %6s\n", "realloc/floor p50", f50 > 0 ? r50 / f50 : -1.0, "x");
        printf("%-22s %10.2f %6s\n", "realloc/floor p99", f99 > 0 ? r99 / f99 : -1.0, "x");
        printf("%-22s %10.1f %6s %5d/%d\n", "reclaim_latency p50", c50, "us", ncl, reclaims);
        printf("%-22s %10.1f %6s %5d/%d\n", "reclaim_latency p99", c99, "us", ncl, reclaims);
        printf("%-22s %10.1f %6s %5d/%d\n", "reclaim_latency max", cmax, "us", ncl, reclaims);
    }
    if (breakdown) {
        breakdown_print(seg_ns, nseg, nrl, slow_by, nslow, by_watcher);
        hops_print(nrl);
        tail_print();
        printf("reclaim breakdown: %d of %d runs with every stamp\n", nrseg, ncl);
        printf("%-26s %9s %9s %9s\n", "segment", "p50 us", "p99 us", "max us");
        for (int k = 0; k < NRSEG; k++) {
            qsort(rseg_ns[k], (size_t)nrseg, sizeof(uint64_t), cmp_u64);
            printf("%-26s %9.1f %9.1f %9.1f\n", rseg_name[k], pct(rseg_ns[k], nrseg, 0.5),
                   pct(rseg_ns[k], nrseg, 0.99), nrseg ? rseg_ns[k][nrseg - 1] / 1000.0 : -1.0);
        }
    }
    fflush(stdout);
    if (miss_r || miss_c)
        fprintf(stderr, "cpumgr-bench: %d reallocations and %d reclaims timed out (not counted)\n",
                miss_r, miss_c);
    rc = 0;
out:
    if (sh)
        __atomic_store_n(&sh->mode, 3, __ATOMIC_RELEASE);
    if (bpid > 0) {
        if (WAIT_FOR(waitpid(bpid, NULL, WNOHANG) == bpid, 2000) == 0) {
            kill(bpid, SIGKILL);
            waitpid(bpid, NULL, 0);
        }
    }
    if (sh) { /* D and F see mode 3 at their next wake */
        futex_bump_wake(&sh->d_word);
        futex_bump_wake(&sh->f_word);
    }
    for (int k = 0; k < 2; k++) {
        pid_t p = k ? ddpid : fpid;
        if (p > 0 && WAIT_FOR(waitpid(p, NULL, WNOHANG) == p, 1000) == 0) {
            kill(p, SIGKILL);
            waitpid(p, NULL, 0);
        }
    }
    if (slot)
        __atomic_store_n(&slot->state, NTH_CPUMGR_SLOT_FREE, __ATOMIC_RELEASE);
    if (dpid > 0) {
        kill(dpid, SIGTERM);
        if (WAIT_FOR(waitpid(dpid, NULL, WNOHANG) == dpid, 2000) == 0) {
            kill(dpid, SIGKILL);
            waitpid(dpid, NULL, 0);
        }
    }
    shm_unlink(seg);
    free(rl);
    free(cl);
    free(fl);
    free(tail_hops);
    for (int k = 0; k < NSEG; k++)
        free(seg_ns[k]);
    for (int k = 0; k < NHOP; k++)
        free(hop_ns[k]);
    for (int k = 0; k < NRSEG; k++)
        free(rseg_ns[k]);
    return rc;
}
