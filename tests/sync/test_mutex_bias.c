/*
 * test_mutex_bias.c -- biased normal mutexes (nthlib/mutex_bias.h) on the
 * real runtime: revocation while the owner kernel thread hammers the
 * plain-store fast path, condition-variable ping-pong across the
 * revocation, the owner nano-thread moving to another VP while the mutex
 * is biased to its old kernel thread, and a blocking stand-in kernel
 * thread locking a mutex biased to the kernel thread sitting in read().
 *
 * The invariant each time: a counter changed only under the mutex ends at
 * the expected total (a broken revocation lets two kernel threads into the
 * critical section and loses increments). White-box checks read the bias
 * word (__count of a normal mutex) to make sure the cases really exercise
 * a claimed bias and its revocation; they are skipped when biasing is
 * unavailable (no membarrier, e.g. under Valgrind; NTH_MUTEX_BIAS=0).
 * Checked to fail (2026-12-02, loaded 2-CPU VM) on deliberately broken
 * variants: revoker without the membarrier, revoke_stress lost increments
 * in 4 of 5 runs; without membarrier and slot wait, 3 of 3; a fast path
 * that takes any claimed bias as its own (an owner that is not the kernel
 * thread), revoke_stress 2 of 2 and migrate 1 of 2. Not caught in 3 runs:
 * a fast path without its slot store (the window is two instructions).
 * The condvar's wait-queue lock (cond_bias_onevp, cond_bias_mix): both
 * fail when the condvar takes its lock with plain nth_olock (checked
 * 2026-12-02); an alarm taking the lock unbiased while another kernel
 * thread owns the bias was not caught in 3 runs of cond_bias_mix.
 * Each case runs in a forked child with its own runtime (see test_sync.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "nth.h"
#include "child.h"


/* Bias word values (mutex_bias.h). */
#define BIAS_REVOKED 0xffffffffu
#define BIAS_REVOKING 0xfffffffeu

/* fn in a child (tests/core/child.h) on vps VPs without the cpumgr; the
 * failure names fn. */
#define run_case(fn, vps, timeout_s) \
    assert_case_ok(fn, child_config_alone(vps), timeout_s, "deadlock")

static uint32_t bias_of(nth_mutex_t *m)
{
    return __atomic_load_n(&m->__count, __ATOMIC_ACQUIRE);
}

static int claimed(uint32_t b)
{
    return b != 0 && b != BIAS_REVOKED && b != BIAS_REVOKING;
}

/* Biasing is on in this process unless NTH_MUTEX_BIAS=0 or membarrier is
 * missing: learn it from a mutex locked once. */
static int bias_on(void)
{
    nth_mutex_t m = NTH_MUTEX_INITIALIZER;
    T_EQ(nth_mutex_lock(&m), 0);
    int on = claimed(bias_of(&m));
    T_EQ(nth_mutex_unlock(&m), 0);
    return on;
}

static nth_t spawn_on(int vp, void *(*fn)(void *), void *arg)
{
    nth_attr_t a;
    nth_t t;
    T_EQ(nth_attr_init(&a), 0);
    T_EQ(nth_attr_setvp(&a, vp), 0);
    T_EQ(nth_create(&t, &a, fn, arg), 0);
    return t;
}

static void join(nth_t t)
{
    T_EQ(nth_join(t, NULL), 0);
}

/* ---- revocation while the owner hammers the fast path ------------------ */

enum { REVOKE_ROUNDS = 400, REVOKE_N = 20000 };

struct hammer {
    nth_mutex_t m;
    long counter;
    int ready;                   /* the revoker runs on VP 1 */
    int started;                 /* the owner has locked once (claimed) */
    int apart;                   /* owner on VP 0, revoker on VP 1 at the start */
    uint32_t bias_seen;          /* bias word after the owner's first lock */
};

static void hammer_loop(struct hammer *h, int n)
{
    for (int i = 0; i < n; i++) {
        T_EQ(nth_mutex_lock(&h->m), 0);
        /* Read-modify-write in two steps: a second kernel thread inside
         * the critical section loses increments. */
        long v = __atomic_load_n(&h->counter, __ATOMIC_RELAXED);
        __atomic_store_n(&h->counter, v + 1, __ATOMIC_RELAXED);
        T_EQ(nth_mutex_unlock(&h->m), 0);
    }
}

static void *owner_fn(void *p)
{
    struct hammer *h = p;
    while (nth_move_to_vp(0) == EAGAIN)
        ;
    /* Wait for the revoker to be on VP 1 (it may still be queued here). */
    for (int i = 0; i < 100000 && !__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE); i++)
        nth_yield();
    /* No scheduling point from here to the loop: we stay on VP 0's kernel
     * thread until contention makes us block. */
    h->apart = nth_vp_id() == 0 && __atomic_load_n(&h->ready, __ATOMIC_ACQUIRE);
    T_EQ(nth_mutex_lock(&h->m), 0);
    h->counter++;
    h->bias_seen = bias_of(&h->m);
    T_EQ(nth_mutex_unlock(&h->m), 0);
    __atomic_store_n(&h->started, 1, __ATOMIC_RELEASE);
    hammer_loop(h, REVOKE_N - 1);
    return NULL;
}

static void *revoker_fn(void *p)
{
    struct hammer *h = p;
    while (nth_move_to_vp(1) == EAGAIN)
        ;
    __atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
    /* Spin, no scheduling point (we stay on VP 1), so that the revocation
     * comes while the owner, on VP 0, is inside its loop. */
    while (!__atomic_load_n(&h->started, __ATOMIC_ACQUIRE))
        ;
    hammer_loop(h, REVOKE_N);
    return NULL;
}

static void revoke_stress(void)
{
    int on = bias_on();
    int claimed_rounds = 0, apart = 0;
    for (int r = 0; r < REVOKE_ROUNDS; r++) {
        struct hammer h;
        memset(&h, 0, sizeof h);
        T_EQ(nth_mutex_init(&h.m, NULL), 0);
        nth_t a = spawn_on(0, owner_fn, &h);
        nth_t b = spawn_on(1, revoker_fn, &h);
        join(a);
        join(b);
        T_EQ(h.counter, 2 * REVOKE_N);
        claimed_rounds += claimed(h.bias_seen);
        apart += h.apart;
        if (on && h.apart)
            T_EQ(bias_of(&h.m), BIAS_REVOKED);   /* the revoker really revoked */
        T_EQ(nth_mutex_destroy(&h.m), 0);
    }
    if (on)
        T_TRUE(claimed_rounds > 0 && apart > 0);
    printf("# revoke_stress: bias %s, %d of %d rounds started biased, %d on two VPs\n",
           on ? "on" : "off", claimed_rounds, REVOKE_ROUNDS, apart);
}

static void test_revoke_stress(void **st) { (void)st; run_case(revoke_stress, 2, 120); }

/* ---- condvar ping-pong across the revocation --------------------------- */

enum { PP_ROUNDS = 100, PP_N = 200 };

struct pingpong {
    nth_mutex_t m;
    nth_cond_t c;
    long turn;                   /* even: ping's turn, odd: pong's */
    uint32_t bias_seen;
};

static void pp_play(struct pingpong *p, long parity)
{
    for (int i = 0; i < PP_N; i++) {
        T_EQ(nth_mutex_lock(&p->m), 0);
        while ((p->turn & 1) != parity)
            T_EQ(nth_cond_wait(&p->c, &p->m), 0);
        p->turn++;
        T_EQ(nth_cond_signal(&p->c), 0);
        T_EQ(nth_mutex_unlock(&p->m), 0);
    }
}

static void *ping_fn(void *arg)
{
    struct pingpong *p = arg;
    /* Claim the bias on this kernel thread, hold it into the first waits. */
    for (int i = 0; i < 100; i++) {
        T_EQ(nth_mutex_lock(&p->m), 0);
        T_EQ(nth_mutex_unlock(&p->m), 0);
    }
    p->bias_seen = bias_of(&p->m);
    pp_play(p, 0);
    return NULL;
}

static void *pong_fn(void *arg)
{
    pp_play(arg, 1);
    return NULL;
}

static void cond_pingpong(void)
{
    int on = bias_on();
    for (int r = 0; r < PP_ROUNDS; r++) {
        struct pingpong p;
        memset(&p, 0, sizeof p);
        T_EQ(nth_mutex_init(&p.m, NULL), 0);
        T_EQ(nth_cond_init(&p.c, NULL), 0);
        nth_t a = spawn_on(0, ping_fn, &p);
        nth_t b = spawn_on(1, pong_fn, &p);
        join(a);
        join(b);
        T_EQ(p.turn, 2 * PP_N);
        /* Claimed, or already being revoked (pong, on the other VP, may be
         * in the middle of it when ping reads: REVOKING is transient), or
         * revoked: never left unclaimed while biasing is on. */
        if (on && !(claimed(p.bias_seen) || p.bias_seen == BIAS_REVOKING ||
                    p.bias_seen == BIAS_REVOKED))
            fprintf(stderr, "cond_pingpong round %d: bias word %#x\n", r, (unsigned)p.bias_seen);
        if (on)
            T_TRUE(claimed(p.bias_seen) || p.bias_seen == BIAS_REVOKING ||
                   p.bias_seen == BIAS_REVOKED);
        T_EQ(nth_cond_destroy(&p.c), 0);
        T_EQ(nth_mutex_destroy(&p.m), 0);
    }
}

static void test_cond_pingpong(void **st) { (void)st; run_case(cond_pingpong, 2, 120); }

/* ---- the condvar's wait-queue lock is biased too ----------------------- */

enum { CB_N = 2000, CB_WAITERS = 4, CB_ROUNDS = 300 };

static uint32_t cond_bias_of(nth_cond_t *c)
{
    return __atomic_load_n(&c->__bias, __ATOMIC_ACQUIRE);
}

static struct pingpong cb_pp;

static void *cb_ping(void *arg) { pp_play(&cb_pp, (long)(intptr_t)arg); return NULL; }

/* One VP: the ping-pong and a timed wait that times out (its alarm takes
 * the lock too) leave the lock biased to the VP's kernel thread. Fails
 * when the condvar takes its lock with nth_olock (word left 0). */
static void cond_bias_onevp(void)
{
    int on = bias_on();
    memset(&cb_pp, 0, sizeof cb_pp);
    T_EQ(nth_mutex_init(&cb_pp.m, NULL), 0);
    T_EQ(nth_cond_init(&cb_pp.c, NULL), 0);
    nth_t a = spawn_on(0, cb_ping, (void *)0);
    nth_t b = spawn_on(0, cb_ping, (void *)1);
    join(a);
    join(b);
    T_EQ(cb_pp.turn, 2 * PP_N);
    if (on)
        T_TRUE(claimed(cond_bias_of(&cb_pp.c)));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 200000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    T_EQ(nth_mutex_lock(&cb_pp.m), 0);
    T_EQ(nth_cond_timedwait(&cb_pp.c, &cb_pp.m, &ts), ETIMEDOUT);
    T_EQ(nth_mutex_unlock(&cb_pp.m), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    /* An alarm more than 2 ms late may be fired by the backstop thread
     * (README: computing threads do not hold alarms), which takes the lock
     * from another kernel thread and so revokes the bias, as it should: on
     * a loaded machine the VP's own wake-up can be that late. Only an alarm
     * fired in time says the VP's own path kept the bias. */
    int in_time = waited_ms < 2.0;
    if (on && in_time)
        T_TRUE(claimed(cond_bias_of(&cb_pp.c)));    /* the alarm kept it */
    if (!in_time)
        printf("# cond_bias_onevp: the 0.2 ms wait took %.2f ms: bias after it not checked\n", waited_ms);
    T_EQ(nth_cond_destroy(&cb_pp.c), 0);
    printf("# cond_bias_onevp: bias %s, word %#x\n", on ? "on" : "off",
           (unsigned)cond_bias_of(&cb_pp.c));
}

static void test_cond_bias_onevp(void **st) { (void)st; run_case(cond_bias_onevp, 1, 120); }

/* Two VPs and a plain kernel thread take one condvar's lock: waits with
 * and without deadlines (alarms fired on either VP), signals from the
 * nano-threads and broadcasts from the pthread. Each round starts with
 * the lock biased to VP 0's kernel thread. Invariant: every waiter ends
 * (no lost wake-up, no corrupted queue: destroy finds it empty), the
 * counter under the mutex is exact. */
struct cb_mix {
    nth_mutex_t m;
    nth_cond_t c;
    long counter;
    int done;                    /* waiters finished */
    int stop;                    /* the pthread stops broadcasting */
};

static void *cb_waiter(void *arg)
{
    struct cb_mix *x = arg;
    for (int i = 0; i < CB_N / 10; i++) {
        T_EQ(nth_mutex_lock(&x->m), 0);
        x->counter++;
        if (i & 1) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_nsec += 20000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            int e = nth_cond_clockwait(&x->c, &x->m, CLOCK_MONOTONIC, &ts);
            T_TRUE(e == 0 || e == ETIMEDOUT);
        } else {
            T_EQ(nth_cond_signal(&x->c), 0);
            T_EQ(nth_cond_wait(&x->c, &x->m), 0);
        }
        T_EQ(nth_mutex_unlock(&x->m), 0);
    }
    T_EQ(nth_mutex_lock(&x->m), 0);
    x->done++;
    T_EQ(nth_mutex_unlock(&x->m), 0);
    return NULL;
}

static void *cb_broadcaster(void *arg)
{
    struct cb_mix *x = arg;
    while (!__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE)) {
        T_EQ(nth_cond_broadcast(&x->c), 0);
        usleep(50);
    }
    return NULL;
}

static void cond_bias_mix(void)
{
    int on = bias_on(), biased = 0;
    for (int r = 0; r < CB_ROUNDS / 10; r++) {
        struct cb_mix x;
        memset(&x, 0, sizeof x);
        T_EQ(nth_mutex_init(&x.m, NULL), 0);
        T_EQ(nth_cond_init(&x.c, NULL), 0);
        while (nth_move_to_vp(0) == EAGAIN)
            ;
        /* destroy takes the lock (claiming the bias for VP 0's kernel
         * thread) and leaves c usable. */
        T_EQ(nth_cond_destroy(&x.c), 0);
        biased += claimed(cond_bias_of(&x.c));
        pthread_t pt;
        T_EQ(pthread_create(&pt, NULL, cb_broadcaster, &x), 0);
        nth_t t[CB_WAITERS];
        for (int i = 0; i < CB_WAITERS; i++)
            t[i] = spawn_on(i % 2, cb_waiter, &x);
        for (int i = 0; i < CB_WAITERS; i++)
            join(t[i]);
        __atomic_store_n(&x.stop, 1, __ATOMIC_RELEASE);
        T_EQ(pthread_join(pt, NULL), 0);
        T_EQ(x.done, CB_WAITERS);
        T_EQ(x.counter, CB_WAITERS * (CB_N / 10));
        T_EQ(nth_cond_destroy(&x.c), 0);
        T_EQ(nth_mutex_destroy(&x.m), 0);
    }
    if (on)
        T_TRUE(biased > 0);
    printf("# cond_bias_mix: bias %s, %d of %d rounds started biased\n", on ? "on" : "off",
           biased, CB_ROUNDS / 10);
}

static void test_cond_bias_mix(void **st) { (void)st; run_case(cond_bias_mix, 2, 240); }

/* ---- the owner nano-thread moves to another VP while biased ------------ */

enum { MIG_ROUNDS = 50, MIG_N = 2000 };

struct mig {
    nth_mutex_t m;
    long counter;
    int waiter_ready;
    int moved;                   /* claimed on VP 0, unlocked on VP 1 */
    int claim_vp;
    uint32_t bias_before, bias_after;
};

static void *mig_waiter(void *arg)
{
    struct mig *g = arg;
    __atomic_store_n(&g->waiter_ready, 1, __ATOMIC_RELEASE);
    /* Locked by the mover, with the bias of this kernel thread (VP 0's):
     * we must give the bias up and queue. */
    T_EQ(nth_mutex_lock(&g->m), 0);
    g->counter++;
    T_EQ(nth_mutex_unlock(&g->m), 0);
    for (int i = 0; i < MIG_N; i++) {
        T_EQ(nth_mutex_lock(&g->m), 0);
        g->counter++;
        T_EQ(nth_mutex_unlock(&g->m), 0);
        if (i % 64 == 0)
            nth_yield();
    }
    return NULL;
}

static void *mig_mover(void *arg)
{
    struct mig *g = arg;
    while (nth_move_to_vp(0) == EAGAIN)
        ;
    g->claim_vp = nth_vp_id();              /* no scheduling point until the lock */
    for (int i = 0; i < 10; i++) {           /* claim on VP 0's kernel thread */
        T_EQ(nth_mutex_lock(&g->m), 0);
        T_EQ(nth_mutex_unlock(&g->m), 0);
    }
    T_EQ(nth_mutex_lock(&g->m), 0);
    g->bias_before = bias_of(&g->m);
    nth_t w = spawn_on(0, mig_waiter, g);
    int e = EAGAIN;
    for (int i = 0; i < 100 && e == EAGAIN; i++)
        e = nth_move_to_vp(1);
    T_TRUE(e == 0 || e == EAGAIN);
    /* Let the waiter reach its lock on VP 0 (best effort: either order
     * must work). */
    for (int i = 0; i < 1000 && !__atomic_load_n(&g->waiter_ready, __ATOMIC_ACQUIRE); i++)
        nth_yield();
    g->counter++;
    g->moved = g->claim_vp == 0 && nth_vp_id() == 1;   /* no scheduling point until the unlock */
    T_EQ(nth_mutex_unlock(&g->m), 0);        /* from VP 1: revokes */
    g->bias_after = bias_of(&g->m);
    for (int i = 0; i < MIG_N; i++) {
        T_EQ(nth_mutex_lock(&g->m), 0);
        g->counter++;
        T_EQ(nth_mutex_unlock(&g->m), 0);
        if (i % 64 == 0)
            nth_yield();
    }
    join(w);
    return NULL;
}

static void migrate(void)
{
    int on = bias_on();
    int moved = 0;
    for (int r = 0; r < MIG_ROUNDS; r++) {
        struct mig g;
        memset(&g, 0, sizeof g);
        T_EQ(nth_mutex_init(&g.m, NULL), 0);
        join(spawn_on(0, mig_mover, &g));
        T_EQ(g.counter, 2 * MIG_N + 2);
        if (on)
            T_TRUE(claimed(g.bias_before));
        if (on && g.moved)
            T_EQ(g.bias_after, BIAS_REVOKED);
        moved += g.moved;
        T_EQ(nth_mutex_destroy(&g.m), 0);
    }
    printf("# migrate: %d of %d moves to VP 1 succeeded\n", moved, MIG_ROUNDS);
    T_TRUE(moved > 0);
}

static void test_migrate(void **st) { (void)st; run_case(migrate, 2, 120); }

/* ---- a blocking stand-in locks a mutex biased to the kernel thread in read() */

enum { SI_ROUNDS = 300 };

struct standin {
    nth_mutex_t m;
    int pipe_fd[2];
    long counter;
    int holding;                 /* the reader holds m, about to read */
    uint32_t bias_before;
};

static void *si_reader(void *arg)
{
    struct standin *s = arg;
    for (int i = 0; i < 5; i++) {
        T_EQ(nth_mutex_lock(&s->m), 0);
        s->counter++;
        T_EQ(nth_mutex_unlock(&s->m), 0);
    }
    /* Hold the mutex (plain store, biased to this kernel thread) across a
     * blocking read: the VP's other nano-thread runs on a stand-in kernel
     * thread meanwhile and wants the mutex. */
    T_EQ(nth_mutex_lock(&s->m), 0);
    s->bias_before = bias_of(&s->m);
    __atomic_store_n(&s->holding, 1, __ATOMIC_RELEASE);
    char c;
    T_EQ(nth_blocking_enter(), 0);
    ssize_t r = read(s->pipe_fd[0], &c, 1);
    T_EQ(nth_blocking_leave(), 0);
    T_EQ(r, 1);
    s->counter++;
    T_EQ(nth_mutex_unlock(&s->m), 0);
    /* The bias is gone for good: lock on, both of us. */
    for (int i = 0; i < 200; i++) {
        T_EQ(nth_mutex_lock(&s->m), 0);
        s->counter++;
        T_EQ(nth_mutex_unlock(&s->m), 0);
        if (i % 16 == 0)
            nth_yield();
    }
    return NULL;
}

static void *si_writer(void *arg)
{
    struct standin *s = arg;
    /* Runs while the reader sits in read(): on the stand-in. First an
     * unbiased trylock, then wake the reader and queue behind it. */
    T_EQ(nth_mutex_trylock(&s->m), EBUSY);
    char c = 'x';
    T_EQ(write(s->pipe_fd[1], &c, 1), 1);
    T_EQ(nth_mutex_lock(&s->m), 0);
    s->counter++;
    T_EQ(nth_mutex_unlock(&s->m), 0);
    for (int i = 0; i < 200; i++) {
        T_EQ(nth_mutex_lock(&s->m), 0);
        s->counter++;
        T_EQ(nth_mutex_unlock(&s->m), 0);
        if (i % 16 == 0)
            nth_yield();
    }
    return NULL;
}

static void standin(void)
{
    int on = bias_on();
    for (int r = 0; r < SI_ROUNDS; r++) {
        struct standin s;
        memset(&s, 0, sizeof s);
        T_EQ(pipe(s.pipe_fd), 0);
        T_EQ(nth_mutex_init(&s.m, NULL), 0);
        nth_t a = spawn_on(0, si_reader, &s);
        /* The writer must run while the reader is in read(): start it once
         * the reader holds the mutex. */
        while (!__atomic_load_n(&s.holding, __ATOMIC_ACQUIRE))
            nth_yield();
        nth_t b = spawn_on(0, si_writer, &s);
        join(a);
        join(b);
        T_EQ(s.counter, 5 + 1 + 200 + 1 + 200);
        if (on) {
            T_TRUE(claimed(s.bias_before));
            T_EQ(bias_of(&s.m), BIAS_REVOKED);
        }
        T_EQ(nth_mutex_destroy(&s.m), 0);
        close(s.pipe_fd[0]);
        close(s.pipe_fd[1]);
    }
}

static void test_standin(void **st) { (void)st; run_case(standin, 1, 120); }

int main(void)
{
    if (getenv("NTH_TEST_ONLY"))
        cmocka_set_test_filter(getenv("NTH_TEST_ONLY"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_revoke_stress),
        cmocka_unit_test(test_cond_pingpong),
        cmocka_unit_test(test_cond_bias_onevp),
        cmocka_unit_test(test_cond_bias_mix),
        cmocka_unit_test(test_migrate),
        cmocka_unit_test(test_standin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
