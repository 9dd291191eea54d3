/*
 * test_parallel.c -- parallel regions (include/nth.h, "Parallel regions"):
 * team size and ids, the caller as member 0, the team barrier over many
 * rounds, every loop schedule covering [lo, hi) exactly once, GUIDED's
 * block sizes (remaining / (2 x team), not below the chunk), n = 0
 * following nth_cpus_assigned(), the nested-region rule, and the errors.
 *
 * Each case runs in a forked child with its own runtime (tests/core/child.h),
 * with the CPU manager off so that a daemon another developer runs on this
 * machine cannot change the assignment under the test.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include <pthread.h>
#include <time.h>

#include "child.h"

static void start(unsigned vps)
{
    nth_config_t c;
    nth_config_default(&c);
    c.vps = vps;
    c.cpumgr = "off";
    CHECK_EQ(nth_init(&c), 0);
}

/* ---- team size, ids, member 0 ------------------------------------------- */

#define MAXN 64

struct ids {
    int seen[MAXN];
    int bad_n, bad_api;
    nth_t who0;
    int n;
};

static void record_ids(int id, int n, void *p)
{
    struct ids *s = p;
    if (n != s->n)
        __atomic_add_fetch(&s->bad_n, 1, __ATOMIC_RELAXED);
    if (nth_team_id() != id || nth_team_size() != n)
        __atomic_add_fetch(&s->bad_api, 1, __ATOMIC_RELAXED);
    if (id >= 0 && id < MAXN)
        __atomic_add_fetch(&s->seen[id], 1, __ATOMIC_RELAXED);
    if (id == 0)
        s->who0 = nth_self();
}

static void case_ids(void *arg)
{
    (void)arg;
    start(0);
    static const int sizes[] = { 1, 2, 3, 5, 17, 40 }; /* 17, 40: beyond the inline slots */
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        struct ids s;
        memset(&s, 0, sizeof(s));
        s.n = sizes[k];
        CHECK_EQ(nth_parallel(s.n, record_ids, &s), 0);
        CHECK_EQ(s.bad_n, 0);
        CHECK_EQ(s.bad_api, 0);
        for (int i = 0; i < MAXN; i++)
            CHECK_EQ(s.seen[i], i < s.n ? 1 : 0);
        CHECK(nth_equal(s.who0, nth_self()));
    }
    /* Outside any region: id 0 of a team of one; the barrier returns. */
    CHECK_EQ(nth_team_id(), 0);
    CHECK_EQ(nth_team_size(), 1);
    CHECK_EQ(nth_team_barrier(), 0);
}

static void test_ids(void **state) { (void)state; assert_child_ok(case_ids, NULL); }

/* ---- barrier ------------------------------------------------------------- */

#define ROUNDS 3000

struct bar {
    int arrived[ROUNDS];
    int errors;
};

/* Nobody may leave round r before all n have arrived in it, and nobody
 * may arrive in round r+1 before everyone has left round r's check. */
static void barrier_body(int id, int n, void *p)
{
    struct bar *b = p;
    for (int r = 0; r < ROUNDS; r++) {
        __atomic_add_fetch(&b->arrived[r], 1, __ATOMIC_RELAXED);
        nth_team_barrier();
        if (__atomic_load_n(&b->arrived[r], __ATOMIC_RELAXED) != n)
            __atomic_add_fetch(&b->errors, 1, __ATOMIC_RELAXED);
        if (r + 1 < ROUNDS && __atomic_load_n(&b->arrived[r + 1], __ATOMIC_RELAXED) != 0)
            __atomic_add_fetch(&b->errors, 1, __ATOMIC_RELAXED);
        nth_team_barrier();
        /* Uneven work so that the spin and the blocking paths both run. */
        if ((r + id) % 7 == 0)
            nth_yield();
    }
}

static void case_barrier(void *arg)
{
    start(0);
    static struct bar b;
    int n = *(int *)arg;
    memset(&b, 0, sizeof(b));
    CHECK_EQ(nth_parallel(n, barrier_body, &b), 0);
    CHECK_EQ(b.errors, 0);
    for (int r = 0; r < ROUNDS; r++)
        CHECK_EQ(b.arrived[r], n);
}

static void test_barrier_vps(void **state)
{
    (void)state;
    int n = 2;
    assert_child_ok(case_barrier, &n);
}

static void test_barrier_oversubscribed(void **state)
{
    (void)state;
    int n = 5; /* more members than VPs: waiters must leave their VP */
    assert_child_ok(case_barrier, &n);
}

/* Spinning alone cannot end a barrier whose members share one VP. */
static void case_barrier_one_vp(void *arg)
{
    (void)arg;
    start(1);
    static struct bar b;
    memset(&b, 0, sizeof(b));
    CHECK_EQ(nth_parallel(3, barrier_body, &b), 0);
    CHECK_EQ(b.errors, 0);
}

static void test_barrier_one_vp(void **state) { (void)state; assert_child_ok(case_barrier_one_vp, NULL); }

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void record_nothing(int id, int n, void *p)
{
    (void)id;
    (void)n;
    (void)p;
}

/* ---- members kept between regions --------------------------------------- */

/* Member 1 of a region of 2 on 2 VPs is the nano-thread that ran member 1
 * of the region before (a worker waiting on its VP), not a new one each
 * region: a region then costs a wake-up, not a creation and an exit. */
#define KEPT_REGIONS 64

struct kept {
    uint64_t id1[KEPT_REGIONS];
    int vp1[KEPT_REGIONS];    /* the VP member 1 ran on */
    int r, started;
};

static void kept_member(int id, int n, void *p)
{
    (void)n;
    struct kept *k = p;
    if (id == 0) {
        /* Busy until member 1 runs (bounded: a loaded machine may not run
         * VP 1 for a while), so it runs on the other VP, as in LU. */
        int64_t until = mono_ns() + 20000000;
        while (!__atomic_load_n(&k->started, __ATOMIC_ACQUIRE) && mono_ns() < until)
            ;
        return;
    }
    k->id1[k->r] = nth_id(nth_self());
    k->vp1[k->r] = nth_vp_id();
    __atomic_store_n(&k->started, 1, __ATOMIC_RELEASE);
}

static void case_members_kept(void *arg)
{
    (void)arg;
    start(2);
    static struct kept k;
    memset(&k, 0, sizeof(k));
    for (k.r = 0; k.r < KEPT_REGIONS; k.r++) {
        k.started = 0;
        CHECK_EQ(nth_parallel(2, kept_member, &k), 0);
        CHECK(k.id1[k.r] != 0);
    }
    int distinct = 0, away = 0;
    for (int i = 0; i < KEPT_REGIONS; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= k.id1[j] == k.id1[i];
        distinct += !seen;
        away += k.vp1[i] != 1;
    }
    fprintf(stderr, "members_kept: %d nano-threads ran member 1 of %d regions, %d of them off VP 1\n",
            distinct, KEPT_REGIONS, away);
    /* One when every member 1 ran on VP 1; a member stolen by VP 0 (VP 1's
     * kernel thread off its CPU for member 0's 20 ms) waits there and the
     * next region on VP 1 makes another: at most one more per region run
     * off VP 1 -- never one per region. The allowance is counted, not
     * fixed: under ASan at load 25, 20 of 64 regions ran a new one and
     * the fixed bound (16) failed (test_parallel, this helper's suite).
     * Measured beside 4 CPU hogs: distinct was exactly 1 + away in 5 of 5
     * runs (away 0-10); one new member per region (64) fails whenever
     * the check runs (away <= 32).
     * When most regions ran off VP 1 the count says nothing: skipped. */
    if (away > KEPT_REGIONS / 2)
        CHILD_SKIP("members_kept: member 1 ran off VP 1 in most regions (a loaded machine)");
    CHECK(distinct <= KEPT_REGIONS / 4 + away);
}

static void test_members_kept(void **state) { (void)state; assert_child_ok(case_members_kept, NULL); }

/* The rule behind "members are kept between regions, one waiting per VP"
 * (README, nth.h): at most one member nano-thread waits per VP; members
 * beyond that (a team larger than the VPs, a member stolen off its VP, a
 * VP that lost its CPU) end when their region's part is done, so a trace
 * shows more team-member nano-threads than VPs over a run, never more
 * than the VPs kept alive between regions. Counted with a key: a member
 * nano-thread counts itself the first time it runs a member (its value is
 * still NULL), and its destructor counts its end. */
#define POOL_REGIONS 40
#define POOL_N 6 /* 3 members per VP on 2 VPs */

static nth_key_t pool_key;
static long pool_born, pool_ended;

static void pool_end(void *v)
{
    (void)v;
    __atomic_add_fetch(&pool_ended, 1, __ATOMIC_RELEASE);
}

static void pool_member(int id, int n, void *p)
{
    (void)n;
    (void)p;
    if (id == 0 || nth_getspecific(pool_key))
        return;
    __atomic_add_fetch(&pool_born, 1, __ATOMIC_RELEASE);
    nth_setspecific(pool_key, &pool_born);
}

static void case_members_one_per_vp(void *arg)
{
    (void)arg;
    start(2);
    CHECK_EQ(nth_key_create(&pool_key, pool_end), 0);
    for (int r = 0; r < POOL_REGIONS; r++)
        CHECK_EQ(nth_parallel(POOL_N, pool_member, NULL), 0);
    /* Members that found their VP's place taken have departed but may not
     * have finished exiting: let them (bounded; the count is the check). */
    for (int i = 0; i < 10000; i++) {
        long waiting = __atomic_load_n(&pool_born, __ATOMIC_ACQUIRE) -
                       __atomic_load_n(&pool_ended, __ATOMIC_ACQUIRE);
        if (waiting <= nth_num_vps())
            break;
        nth_sleep_ns(1000000);
    }
    long born = __atomic_load_n(&pool_born, __ATOMIC_ACQUIRE);
    long waiting = born - __atomic_load_n(&pool_ended, __ATOMIC_ACQUIRE);
    fprintf(stderr, "members_one_per_vp: %ld member nano-threads for %d regions of %d on %d VPs, "
            "%ld still waiting\n", born, POOL_REGIONS, POOL_N, nth_num_vps(), waiting);
    CHECK(waiting >= 0);
    CHECK(waiting <= nth_num_vps());
    /* Kept ones are reused: at least POOL_N - 1 - VPs new ones per
     * region, but not all POOL_N - 1. */
    CHECK(born >= (long)(POOL_N - 1 - nth_num_vps()) * POOL_REGIONS);
    CHECK(born < (long)(POOL_N - 1) * POOL_REGIONS);
}

static void test_members_one_per_vp(void **state) { (void)state; assert_child_ok(case_members_one_per_vp, NULL); }

/* Kept members do not keep the process alive: main's nth_exit after
 * regions ends it (status 0) once the other nano-threads have ended, as
 * pthread_exit from main does. */
static void case_exit_after_regions(void *arg)
{
    (void)arg;
    start(2);
    static struct kept k;
    memset(&k, 0, sizeof(k));
    for (k.r = 0; k.r < 8; k.r++) {
        k.started = 0;
        CHECK_EQ(nth_parallel(2, kept_member, &k), 0);
    }
    CHECK_EQ(nth_parallel(5, record_nothing, NULL), 0);   /* more members than VPs */
    nth_exit(NULL);
}

static void test_exit_after_regions(void **state) { (void)state; assert_child_ok(case_exit_after_regions, NULL); }

/* ---- the caller keeps its VP --------------------------------------------- */

/* A caller that blocks at the join is woken back to its own VP (its VP's
 * queue, nth__to_rq_home): the VP of the member that departs last goes
 * idle right then and must not steal it, or the members swap VPs (and
 * caches) at the next region. With no idle spinning the caller's VP has
 * parked by then, so a thief would win every race for it without the
 * grace of NTH_HOME_GRACE_NS. */
#define HOME_REGIONS 200


static void late_member(int id, int n, void *p)
{
    (void)n;
    int *running = p;
    if (id == 0) {
        /* Member 1 runs on the other VP before the caller can block
         * (else the caller's idle VP would steal it and run both). */
        while (!__atomic_load_n(running, __ATOMIC_ACQUIRE))
            ;
        return;
    }
    __atomic_store_n(running, 1, __ATOMIC_RELEASE);
    /* Long enough for the caller to block at the join and its VP to park. */
    int64_t until = mono_ns() + 200000;
    while (mono_ns() < until)
        ;
}

static void case_caller_home(void *arg)
{
    (void)arg;
    nth_config_t c;
    nth_config_default(&c);
    c.vps = 2;
    c.cpumgr = "off";
    c.spin_us = 0;
    c.team_spin_us = 0;
    CHECK_EQ(nth_init(&c), 0);
    int moved = 0;
    for (int r = 0; r < HOME_REGIONS; r++) {
        int running = 0, before = nth_vp_id();
        CHECK_EQ(nth_parallel(2, late_member, &running), 0);
        if (nth_vp_id() != before)
            moved++;
    }
    fprintf(stderr, "caller_home: the caller changed VP in %d of %d regions\n", moved, HOME_REGIONS);
    /* A VP whose kernel thread the OS does not run for the grace time
     * still loses the caller (a loaded machine): 5-18% of the regions
     * here at load 10-15, against 95% (191 of 200) without the grace. */
    CHECK(moved <= HOME_REGIONS / 2);
}

static void test_caller_home(void **state) { (void)state; assert_child_ok(case_caller_home, NULL); }

/* ---- loops --------------------------------------------------------------- */

#define SPAN 2000

struct cover {
    long lo, hi;
    int hits[SPAN];
    int outside;
};

static void count_body(long b, long e, void *p)
{
    struct cover *c = p;
    if (b >= e || b < c->lo || e > c->hi) {
        __atomic_add_fetch(&c->outside, 1, __ATOMIC_RELAXED);
        return;
    }
    for (long i = b; i < e; i++)
        __atomic_add_fetch(&c->hits[i - c->lo], 1, __ATOMIC_RELAXED);
}

static void check_cover(struct cover *c)
{
    CHECK_EQ(c->outside, 0);
    for (long i = 0; i < c->hi - c->lo; i++)
        if (c->hits[i] != 1) {
            fprintf(stderr, "iteration %ld of [%ld,%ld) ran %d times\n", c->lo + i, c->lo, c->hi, c->hits[i]);
            CHECK(0);
        }
}

static const long ranges[][2] = { { 0, 1 }, { -5, 12 }, { 3, 1000 }, { -999, 998 }, { 7, 8 } };
static const long chunks[] = { 0, 1, 3, 7, 64, 5000 };
static const int scheds[] = { NTH_SCHED_STATIC, NTH_SCHED_DYNAMIC, NTH_SCHED_GUIDED };

static void case_for_outside(void *arg)
{
    (void)arg;
    start(0);
    static struct cover c;
    for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++)
        for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++)
            for (size_t s = 0; s < 3; s++) {
                memset(&c, 0, sizeof(c));
                c.lo = ranges[r][0];
                c.hi = ranges[r][1];
                CHECK_EQ(nth_parallel_for(c.lo, c.hi, scheds[s], chunks[k], count_body, &c), 0);
                check_cover(&c);
            }
}

static void test_for_outside(void **state) { (void)state; assert_child_ok(case_for_outside, NULL); }

/* Inside a region: work-sharing among the team, two loops in a row so the
 * shared counter must be reset between them. */
static struct cover ca, cb;
static int loop_sched;
static long loop_chunk;

static void two_loops(int id, int n, void *p)
{
    (void)id; (void)n; (void)p;
    int e1 = nth_parallel_for(ca.lo, ca.hi, loop_sched, loop_chunk, count_body, &ca);
    int e2 = nth_parallel_for(cb.lo, cb.hi, loop_sched, loop_chunk, count_body, &cb);
    if (e1 || e2)
        __atomic_add_fetch(&ca.outside, 1, __ATOMIC_RELAXED);
}

static void case_for_inside(void *arg)
{
    int n = *(int *)arg;
    start(0);
    for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++)
        for (size_t s = 0; s < 3; s++) {
            memset(&ca, 0, sizeof(ca));
            memset(&cb, 0, sizeof(cb));
            ca.lo = -3; ca.hi = 1234;
            cb.lo = 11; cb.hi = 12 + 2 * (long)k + 1;
            loop_sched = scheds[s];
            loop_chunk = chunks[k];
            CHECK_EQ(nth_parallel(n, two_loops, NULL), 0);
            check_cover(&ca);
            check_cover(&cb);
        }
}

static void test_for_inside(void **state)
{
    (void)state;
    int n = 3;
    assert_child_ok(case_for_inside, &n);
    n = 1;
    assert_child_ok(case_for_inside, &n);
}

/* Ranges and chunks near the limits of long (a new user's trial: with a
 * chunk near LONG_MAX, STATIC's next block start wrapped and the loop ran
 * the same iterations for ever; DYNAMIC's shared counter wrapped and ran
 * some twice). The blocks are recorded and must tile [lo, hi) exactly. */
#define MAXBLK 4096

static struct {
    long lo, hi;
    long b[MAXBLK], e[MAXBLK];
    int n;
} blk;

static void block_body(long b, long e, void *p)
{
    (void)p;
    int i = __atomic_fetch_add(&blk.n, 1, __ATOMIC_RELAXED);
    if (i >= MAXBLK) {
        fprintf(stderr, "more than %d blocks for [%ld,%ld): iterations run again\n", MAXBLK, blk.lo, blk.hi);
        _exit(3);
    }
    blk.b[i] = b;
    blk.e[i] = e;
}

static int cmp_block(const void *x, const void *y)
{
    long a = *(const long *)x, b = *(const long *)y;
    return (a > b) - (a < b);
}

/* Sort the recorded blocks by start and check they tile [lo, hi). */
static void check_tiling(int sched, long chunk, int team)
{
    static long pairs[MAXBLK][2];
    int n = blk.n;
    CHECK(n >= 1);
    for (int i = 0; i < n; i++) {
        pairs[i][0] = blk.b[i];
        pairs[i][1] = blk.e[i];
    }
    qsort(pairs, (size_t)n, sizeof(pairs[0]), cmp_block);
    long at = blk.lo;
    for (int i = 0; i < n; i++) {
        if (pairs[i][0] != at || pairs[i][1] <= pairs[i][0] || pairs[i][1] > blk.hi) {
            fprintf(stderr, "[%ld,%ld) schedule %d chunk %ld team %d: block %d is [%ld,%ld), expected a start at %ld\n",
                    blk.lo, blk.hi, sched, chunk, team, i, pairs[i][0], pairs[i][1], at);
            CHECK(0);
        }
        at = pairs[i][1];
    }
    CHECK_EQ(at, blk.hi);
}

static int limit_sched;
static long limit_chunk;

static void limit_loop(int id, int n, void *p)
{
    (void)id; (void)n; (void)p;
    if (nth_parallel_for(blk.lo, blk.hi, limit_sched, limit_chunk, block_body, NULL) != 0)
        _exit(4);
}

static void case_for_limits(void *arg)
{
    (void)arg;
    start(2);
    static const long r[][2] = { { 1, LONG_MAX }, { -10, LONG_MAX }, { LONG_MIN, LONG_MAX },
                                 { LONG_MIN, 0 }, { LONG_MAX - 5, LONG_MAX } };
    static const long ch[] = { LONG_MAX, LONG_MAX - 2, LONG_MAX / 2 + 1, LONG_MAX / 3, 4 };
    static const int team[] = { 2, 3, 7 };
    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
        for (size_t k = 0; k < sizeof(ch) / sizeof(ch[0]); k++)
            for (size_t s = 0; s < 3; s++)
                for (size_t t = 0; t < sizeof(team) / sizeof(team[0]); t++) {
                    /* A chunk of 4 over a range wider than 4096 blocks is not a
                     * limit case; only the short range takes it. */
                    if (ch[k] == 4 && r[i][0] != LONG_MAX - 5)
                        continue;
                    memset(&blk, 0, sizeof(blk));
                    blk.lo = r[i][0];
                    blk.hi = r[i][1];
                    limit_sched = scheds[s];
                    limit_chunk = ch[k];
                    CHECK_EQ(nth_parallel(team[t], limit_loop, NULL), 0);
                    check_tiling(scheds[s], ch[k], team[t]);
                }
    /* STATIC without a chunk and GUIDED with the smallest one over the
     * widest range: one block per member, and halving blocks. */
    for (size_t s = 0; s < 3; s += 2) {
        memset(&blk, 0, sizeof(blk));
        blk.lo = LONG_MIN;
        blk.hi = LONG_MAX;
        CHECK_EQ(nth_parallel_for(blk.lo, blk.hi, scheds[s], 0, block_body, NULL), 0);
        check_tiling(scheds[s], 0, 0);
    }
}

static void test_for_limits(void **state) { (void)state; assert_child_ok(case_for_limits, NULL); }

/* GUIDED's block sizes, not only its tiling: a GUIDED that handed out fixed
 * chunks like DYNAMIC would tile [lo, hi) too. Blocks are claimed in order
 * of their start (one shared counter), so sorted by start each block must
 * be what the rule in include/nth.h gives for the iterations left when it
 * was taken: remaining / (2 x team), never below the chunk (a chunk of 0
 * counts as 1), never past hi. Deterministic whatever the interleaving. */
static void check_guided(long chunk, int team)
{
    static long pairs[MAXBLK][2];
    int n = blk.n;
    for (int i = 0; i < n; i++) {
        pairs[i][0] = blk.b[i];
        pairs[i][1] = blk.e[i];
    }
    qsort(pairs, (size_t)n, sizeof(pairs[0]), cmp_block);
    long c = chunk > 0 ? chunk : 1, at = blk.lo, shrank = 0;
    for (int i = 0; i < n; i++) {
        long left = blk.hi - at, want = left / (2L * team);
        if (want < c)
            want = c;
        if (want > left)
            want = left;
        if (pairs[i][0] != at || pairs[i][1] - pairs[i][0] != want) {
            fprintf(stderr, "GUIDED [%ld,%ld) chunk %ld team %d: block %d is [%ld,%ld), expected [%ld,%ld)\n",
                    blk.lo, blk.hi, chunk, team, i, pairs[i][0], pairs[i][1], at, at + want);
            CHECK(0);
        }
        if (i > 0 && pairs[i][1] - pairs[i][0] < pairs[i - 1][1] - pairs[i - 1][0])
            shrank++;
        at = pairs[i][1];
    }
    CHECK_EQ(at, blk.hi);
    /* The first block is remaining / (2 x team) of a range far wider than
     * the chunk, and the sizes went down more than once on the way. */
    CHECK_EQ(pairs[0][1] - pairs[0][0], (blk.hi - blk.lo) / (2L * team));
    CHECK(shrank >= 5);
}

static void case_guided_sizes(void *arg)
{
    (void)arg;
    start(2);
    static const long r[][2] = { { 0, 100000 }, { -5000, 95001 }, { LONG_MIN, LONG_MIN + 77777 } };
    static const long ch[] = { 0, 1, 10, 97 };
    static const int team[] = { 2, 3, 5 };
    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
        for (size_t k = 0; k < sizeof(ch) / sizeof(ch[0]); k++)
            for (size_t t = 0; t < sizeof(team) / sizeof(team[0]); t++) {
                memset(&blk, 0, sizeof(blk));
                blk.lo = r[i][0];
                blk.hi = r[i][1];
                limit_sched = NTH_SCHED_GUIDED;
                limit_chunk = ch[k];
                CHECK_EQ(nth_parallel(team[t], limit_loop, NULL), 0);
                check_guided(ch[k], team[t]);
            }
}

static void test_guided_sizes(void **state) { (void)state; assert_child_ok(case_guided_sizes, NULL); }

/* ---- n = 0 follows the assignment ---------------------------------------- */

static void size_body(int id, int n, void *p)
{
    if (id == 0)
        *(int *)p = n;
}

static void case_assigned(void *arg)
{
    unsigned vps = *(unsigned *)arg;
    start(vps);
    int cpus = nth_cpus_assigned();
    CHECK(cpus >= 1);
    int n = -1;
    CHECK_EQ(nth_parallel(0, size_body, &n), 0);
    CHECK_EQ(n, nth_cpus_assigned());
    /* Region by region: ask for one CPU, then for all of them again. */
    CHECK_EQ(nth_cpus_request(1), 0);
    CHECK_EQ(nth_parallel(0, size_body, &n), 0);
    CHECK_EQ(n, 1);
    CHECK_EQ(nth_cpus_request(cpus), 0);
    CHECK_EQ(nth_parallel(0, size_body, &n), 0);
    CHECK_EQ(n, cpus);
    /* With one CPU assigned the region still runs every member once. */
    CHECK_EQ(nth_cpus_request(1), 0);
    static struct cover c;
    memset(&c, 0, sizeof(c));
    c.lo = 0; c.hi = 777;
    CHECK_EQ(nth_parallel_for(c.lo, c.hi, NTH_SCHED_DYNAMIC, 5, count_body, &c), 0);
    check_cover(&c);
    CHECK_EQ(nth_cpus_request(cpus), 0);
    memset(&c, 0, sizeof(c));
    c.lo = 0; c.hi = 777;
    CHECK_EQ(nth_parallel_for(c.lo, c.hi, NTH_SCHED_GUIDED, 2, count_body, &c), 0);
    check_cover(&c);
}

static void test_assigned(void **state)
{
    (void)state;
    unsigned vps = 0;
    assert_child_ok(case_assigned, &vps);
    vps = 1; /* NTH_VPS=1: the team follows the CPUs, members share the VP */
    assert_child_ok(case_assigned, &vps);
    vps = 3;
    assert_child_ok(case_assigned, &vps);
}

/* ---- nesting ------------------------------------------------------------- */

struct nest {
    int bad;
    int inner_runs;
};

static void inner(int id, int n, void *p)
{
    struct nest *s = p;
    if (id != 0 || n != 1 || nth_team_id() != 0 || nth_team_size() != 1)
        __atomic_add_fetch(&s->bad, 1, __ATOMIC_RELAXED);
    nth_team_barrier(); /* a team of one: returns at once */
    __atomic_add_fetch(&s->inner_runs, 1, __ATOMIC_RELAXED);
}

static void outer(int id, int n, void *p)
{
    struct nest *s = p;
    if (nth_parallel(4, inner, s) != 0 || nth_parallel(0, inner, s) != 0)
        __atomic_add_fetch(&s->bad, 1, __ATOMIC_RELAXED);
    if (nth_team_id() != id || nth_team_size() != n)
        __atomic_add_fetch(&s->bad, 1, __ATOMIC_RELAXED);
    nth_team_barrier(); /* the outer team's barrier still works */
}

static void case_nested(void *arg)
{
    (void)arg;
    start(0);
    struct nest s = { 0, 0 };
    CHECK_EQ(nth_parallel(3, outer, &s), 0);
    CHECK_EQ(s.bad, 0);
    CHECK_EQ(s.inner_runs, 6);
    CHECK_EQ(nth_team_size(), 1);
}

static void test_nested(void **state) { (void)state; assert_child_ok(case_nested, NULL); }

/* ---- errors -------------------------------------------------------------- */

static int calls;
static void never(long b, long e, void *p) { (void)b; (void)e; (void)p; calls++; }
static void noop(int id, int n, void *p) { (void)id; (void)n; (void)p; }

static void *from_kernel_thread(void *p)
{
    *(int *)p = nth_parallel(2, noop, NULL);
    return NULL;
}

static void case_errors(void *arg)
{
    (void)arg;
    start(0);
    CHECK_EQ(nth_parallel(2, NULL, NULL), EINVAL);
    CHECK_EQ(nth_parallel(-1, noop, NULL), EINVAL);
    CHECK_EQ(nth_parallel(NTH_TEAM_MAX + 1, noop, NULL), EINVAL);
    CHECK_EQ(nth_parallel_for(0, 10, 3, 0, never, NULL), EINVAL);
    CHECK_EQ(nth_parallel_for(0, 10, -1, 0, never, NULL), EINVAL);
    CHECK_EQ(nth_parallel_for(0, 10, NTH_SCHED_STATIC, 0, NULL, NULL), EINVAL);
    CHECK_EQ(nth_parallel_for(10, 9, NTH_SCHED_DYNAMIC, 1, never, NULL), EINVAL);
    CHECK_EQ(nth_parallel_for(0, 10, NTH_SCHED_GUIDED, -2, never, NULL), EINVAL);
    CHECK_EQ(nth_parallel_for(5, 5, NTH_SCHED_STATIC, 0, never, NULL), 0);
    CHECK_EQ(calls, 0);
    /* A kernel thread that is no VP cannot be member 0. */
    pthread_t kt;
    int r = -1;
    CHECK_EQ(pthread_create(&kt, NULL, from_kernel_thread, &r), 0);
    CHECK_EQ(pthread_join(kt, NULL), 0);
    CHECK_EQ(r, EPERM);
    /* The runtime is intact afterwards. */
    CHECK_EQ(nth_parallel(NTH_TEAM_MAX, noop, NULL), 0);
}

static void test_errors(void **state) { (void)state; assert_child_ok(case_errors, NULL); }

/* ---- a region started on a stand-in --------------------------------------- */

/* The caller of nth_parallel may run on a stand-in kernel thread: its VP
 * went into a system call between nth_blocking_enter and _leave with work
 * queued, and the stand-in runs that work. Its VP record there is the
 * stand-in's (id -1), and the members used to be placed counting from VP
 * -1: a team of 3 on 2 VPs read nth_rt.vps[-1] and crashed (sor-nth
 * --threads 3 in the ThreadSanitizer build, about 1 run in 200 under
 * load, when the watchdog had lent the master's VP). Here: VP 1 is kept
 * busy (no steal), a reader takes VP 0 into read() with the caller queued
 * there, so the caller resumes on the stand-in, then runs a region of 3. */
static int sb_pipe[2], sb_stop, sb_spinning;

static void *sb_spinner(void *p)
{
    __atomic_store_n(&sb_spinning, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&sb_stop, __ATOMIC_ACQUIRE))
        ;
    return p;
}

static void *sb_reader(void *p)
{
    char c;
    CHECK_EQ(nth_blocking_enter(), 0);
    CHECK_EQ(read(sb_pipe[0], &c, 1), 1);
    CHECK_EQ(nth_blocking_leave(), 0);
    return p;
}

static void sb_member(int id, int n, void *p)
{
    int *seen = p;
    if (n == 3 && id >= 0 && id < 3)
        __atomic_add_fetch(&seen[id], 1, __ATOMIC_RELAXED);
}

static void case_region_on_standin(void *arg)
{
    (void)arg;
    start(2);
    CHECK_EQ(nth_num_vps(), 2);
    CHECK_EQ(pipe(sb_pipe), 0);
    nth_attr_t a;
    nth_t spin, rd;
    nth_attr_init(&a);
    CHECK_EQ(nth_attr_setvp(&a, 1), 0);
    CHECK_EQ(nth_create(&spin, &a, sb_spinner, NULL), 0);
    while (!__atomic_load_n(&sb_spinning, __ATOMIC_ACQUIRE))
        CHECK_EQ(nth_yield(), 0);
    /* Bounded in yields, not time: each one lets the reader run here. */
    int on = 0;
    if (nth_vp_id() == 0) {
        nth_attr_init(&a);
        CHECK_EQ(nth_attr_setvp(&a, 0), 0);
        CHECK_EQ(nth_create(&rd, &a, sb_reader, NULL), 0);
        for (int i = 0; i < 100000 && !(on = nth_on_standin()); i++)
            CHECK_EQ(nth_yield(), 0);
    } else {
        rd = NULL;               /* VP 1 took us before the spinner: no case */
    }
    __atomic_store_n(&sb_stop, 1, __ATOMIC_RELEASE);
    if (on) {
        int seen[3] = { 0, 0, 0 };
        CHECK_EQ(nth_parallel(3, sb_member, seen), 0);
        for (int i = 0; i < 3; i++)
            CHECK_EQ(seen[i], 1);
    }
    if (rd) {
        CHECK_EQ(write(sb_pipe[1], "x", 1), 1);
        CHECK_EQ(nth_join(rd, NULL), 0);
    }
    CHECK_EQ(nth_join(spin, NULL), 0);
    CHECK(on);                   /* the case ran where it must */
}

static void test_region_on_standin(void **state)
{
    (void)state;
    assert_child_ok(case_region_on_standin, NULL);
}

int main(void)
{
    setenv("NTH_CPUMGR", "off", 1);
    child_filter();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_barrier_vps),
        cmocka_unit_test(test_barrier_oversubscribed),
        cmocka_unit_test(test_barrier_one_vp),
        cmocka_unit_test(test_members_kept),
        cmocka_unit_test(test_members_one_per_vp),
        cmocka_unit_test(test_exit_after_regions),
        cmocka_unit_test(test_caller_home),
        cmocka_unit_test(test_for_outside),
        cmocka_unit_test(test_for_inside),
        cmocka_unit_test(test_for_limits),
        cmocka_unit_test(test_guided_sizes),
        cmocka_unit_test(test_assigned),
        cmocka_unit_test(test_nested),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_region_on_standin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
