/*
 * test_held_alarms.c -- a compute-bound nano-thread must not hold its VP's
 * alarms (issue #4, P1). A nano-thread spins on an atomic flag, making no
 * nthlib call, on the VP where another nano-thread sleeps or waits with a
 * timeout; the flag is set by that sleeper once its wait ends. The alarm
 * sits in the spinning VP's timer queue, which only that VP's scheduling
 * points fire, while the other VP is parked without a timeout: before the
 * fix nobody fired it and the case died of its alarm(). Now the watchdog's
 * backstop fires held alarms and the woken nano-thread runs on the idle
 * VP. A second group checks work stealing: a nano-thread made ready (by a
 * yield) behind a spinner on its VP is taken by a parked VP.
 *
 * Each case runs in a child process with alarm(); linked statically to
 * read a VP's parked flag (internal.h), so that the spinner starts only
 * once the other VPs are asleep, the state the hang needs.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "internal.h"
#include "timer_queue.h"
#include "child.h"


enum how { BY_SLEEP, BY_COND, BY_SEM, BY_MUTEX, BY_YIELD };

static int stop;                   /* set by the waiter when its wait ended */
static int started;                /* spinners running */
static volatile int stage;         /* where main is, for the report */
static int spin_vp[64];            /* the VP each spinner runs on */
static nth_mutex_t held = NTH_MUTEX_INITIALIZER; /* BY_MUTEX: main holds it */

/* No nthlib call: the VP reaches no scheduling point until stop is set. */
static void *spinner(void *p)
{
    int *where = p;
    __atomic_store_n(where, nth_vp_id(), __ATOMIC_RELEASE);
    __atomic_add_fetch(&started, 1, __ATOMIC_ACQ_REL);
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
        nth_cpu_relax();
    return NULL;
}

static void abs_in(clockid_t c, long ms, struct timespec *d)
{
    clock_gettime(c, d);
    d->tv_nsec += ms * 1000000L;
    d->tv_sec += d->tv_nsec / 1000000000L;
    d->tv_nsec %= 1000000000L;
}

/* The wait that must end although its VP computes. */
static void wait_by(enum how how)
{
    struct timespec d;
    switch (how) {
    case BY_SLEEP:
        T_EQ(nth_sleep_ns(30 * 1000000ULL), 0);
        break;
    case BY_COND: {
        nth_mutex_t m = NTH_MUTEX_INITIALIZER;
        nth_cond_t c = NTH_COND_INITIALIZER;
        abs_in(CLOCK_REALTIME, 30, &d);
        T_EQ(nth_mutex_lock(&m), 0);
        T_EQ(nth_cond_timedwait(&c, &m, &d), ETIMEDOUT);
        T_EQ(nth_mutex_unlock(&m), 0);
        break;
    }
    case BY_SEM: {
        nth_sem_t s;
        T_EQ(nth_sem_init(&s, 0), 0);
        abs_in(CLOCK_REALTIME, 30, &d);
        T_EQ(nth_sem_timedwait(&s, &d), ETIMEDOUT);
        T_EQ(nth_sem_destroy(&s), 0);
        break;
    }
    case BY_MUTEX: {
        /* Left locked by a nano-thread that ended (lock_held). */
        abs_in(CLOCK_REALTIME, 30, &d);
        T_EQ(nth_mutex_timedlock(&held, &d), ETIMEDOUT);
        break;
    }
    case BY_YIELD:
        /* Queued behind the spinner on this VP: a thief must run us. */
        T_EQ(nth_yield(), 0);
        break;
    }
}

static void *lock_held(void *p)
{
    (void)p;
    T_EQ(nth_mutex_lock(&held), 0);
    return NULL;                   /* a normal mutex stays locked */
}

/* nvps VPs; nspin - 1 spinners on VPs other than ours, started first,
 * then (once the VPs left idle are parked) one on ours, created just
 * before we wait: our VP takes it from its head slot at once, an idle VP
 * woken by the creation comes too late to steal it (usually: when it
 * does, the attempt is not counted). nvps - nspin VPs stay idle. Returns
 * 1 if the spinner ran on the VP we waited on (the case under test). */
static int held_attempt(int nspin, enum how how)
{
    int nvps = nth_num_vps();
    int me = nth_vp_id();
    nth_t th[64];
    int n = 0, busy[64] = { 0 };
    __atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&started, 0, __ATOMIC_RELAXED);
    nth_attr_t a;
    nth_attr_init(&a);
    for (int v = 0; n < nspin - 1 && v < nvps; v++) {
        if (v == me)
            continue;
        nth_attr_setvp(&a, v);
        T_EQ(nth_create(&th[n], &a, spinner, &spin_vp[n]), 0);
        n++;
    }
    stage = 1;
    while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < n)
        nth_cpu_relax();
    stage = 2;
    /* A spinner may have been stolen from its VP before it ran: the idle
     * VPs are the ones none runs on. */
    for (int v = 0; v < nvps; v++)
        busy[v] = v == me;
    for (int i = 0; i < n; i++)
        busy[spin_vp[i]] = 1;
    for (int v = 0; v < nvps; v++)
        while (!busy[v] && !__atomic_load_n(&nth_rt.vps[v]->parked, __ATOMIC_ACQUIRE))
            nth_cpu_relax();
    stage = 3;
    nth_attr_setvp(&a, me);
    int mine = n;
    __atomic_store_n(&spin_vp[mine], -1, __ATOMIC_RELEASE);
    T_EQ(nth_create(&th[n++], &a, spinner, &spin_vp[mine]), 0);
    wait_by(how);
    stage = 4;
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < n; i++)
        T_EQ(nth_join(th[i], NULL), 0);
    stage = 0;
    return spin_vp[mine] == me;
}

static void held_case(int nvps, int nspin, enum how how)
{
    child_init((unsigned)nvps);
    if (how == BY_MUTEX) {
        nth_t h;
        T_EQ(nth_create(&h, NULL, lock_held, NULL), 0);
        T_EQ(nth_join(h, NULL), 0);
    }
    int hits = 0;
    for (int i = 0; i < 40 && hits < 3; i++)
        hits += held_attempt(nspin, how);
    if (!hits) {
        printf("skipped: the spinner was always stolen before the wait\n");
        _exit(77);
    }
}


/* SIGALRM: say what each VP was doing, then die of the signal. */
static void report(int sig)
{
    char buf[256];
    int k = snprintf(buf, sizeof buf, "hung at stage %d; started %d\n", stage, started);
    (void)!write(2, buf, (size_t)k);
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_vp *v = nth_rt.vps[i];
        struct nth_tq *q = v->timerq;
        k = snprintf(buf, sizeof buf,
                     "vp%d parked %d idle %d nswitch %llu slot %p rq %s alarm %s\n", i,
                     v->parked, v->current == &v->idle, (unsigned long long)v->nswitch,
                     (void *)v->next_local, nth_rq_empty(&v->rq) ? "empty" : "work",
                     q && nth_tq_next_deadline(q) != NTH_TQ_NONE ? "armed" : "none");
        (void)!write(2, buf, (size_t)k);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

struct held_params {
    int nvps, nspin;
    enum how how;
};

static void held_body(void *arg)
{
    const struct held_params *p = arg;
    signal(SIGALRM, report);
    held_case(p->nvps, p->nspin, p->how);
}

/* held_case in a child (tests/core/child.h); a timeout is reported by
 * report() in the child and named here. */
static void run_case(int nvps, int nspin, enum how how)
{
    struct held_params p = { nvps, nspin, how };
    child_verdict(run_child(held_body, &p, NULL, 30), "held_case",
                  "the wait behind the spinner never ended");
}

static void test_sleep_2vps(void **st) { (void)st; run_case(2, 1, BY_SLEEP); }
static void test_cond_timedwait_2vps(void **st) { (void)st; run_case(2, 1, BY_COND); }
static void test_sem_timedwait_2vps(void **st) { (void)st; run_case(2, 1, BY_SEM); }
static void test_mutex_timedlock_2vps(void **st) { (void)st; run_case(2, 1, BY_MUTEX); }
static void test_yield_stolen_2vps(void **st) { (void)st; run_case(2, 1, BY_YIELD); }
/* One spinner on every VP but one. */
static void test_sleep_4vps_3spin(void **st) { (void)st; run_case(4, 3, BY_SLEEP); }
static void test_cond_timedwait_4vps_3spin(void **st) { (void)st; run_case(4, 3, BY_COND); }
static void test_yield_stolen_4vps_3spin(void **st) { (void)st; run_case(4, 3, BY_YIELD); }

int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);   /* e.g. "*yield*" */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sleep_2vps),
        cmocka_unit_test(test_cond_timedwait_2vps),
        cmocka_unit_test(test_sem_timedwait_2vps),
        cmocka_unit_test(test_mutex_timedlock_2vps),
        cmocka_unit_test(test_yield_stolen_2vps),
        cmocka_unit_test(test_sleep_4vps_3spin),
        cmocka_unit_test(test_cond_timedwait_4vps_3spin),
        cmocka_unit_test(test_yield_stolen_4vps_3spin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
