/*
 * test_watchdog.c -- the stall watchdog (NTH_STALL_US): on ONE VP a
 * nano-thread sits in a raw read() on a pipe, without nth_blocking_enter,
 * and only the other nano-threads of that VP will ever write to the pipe.
 * With the watchdog they run on a stand-in kernel thread and the reader
 * resumes; with NTH_STALL_US=0 the same program hangs (the alarm kills it),
 * which proves the test can fail. Every nano-thread body runs exactly once.
 * A nano-thread that computes without scheduling points is not "stalled":
 * it uses its CPU, and gets no stand-in.
 * New work wakes a dozing monitor only when no VP spins idle to take it;
 * work queued on a VP that keeps switching lets it doze.
 * Each case runs in a forked child with its own runtime (see test_sync.c).
 * Linked statically: it reads the internal nth_watchdog_stalls() and
 * drives nth_sched_wake_idle() directly.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "nth.h"
#include "child.h"
#include "internal.h"

unsigned long nth_watchdog_stalls(void);
unsigned long nth_watchdog_ran(void);
unsigned long nth_watchdog_backstop_passes(void);
unsigned nth_watchdog_standins(void);
unsigned long nth_watchdog_capped(void);

/* NTH_STANDINS_MAX of the next run_case (0: the default). */
static unsigned case_standins_max;


/* Runs fn in a child (tests/core/child.h) on `vps` VPs with the given
 * watchdog threshold; returns the child's wait status. */
static int run_case(void (*fn)(void), unsigned vps, unsigned stall_us, unsigned timeout_s)
{
    nth_config_t c = child_config(vps);
    c.stall_us = stall_us;
    c.standins_max = case_standins_max;
    return run_child_case(fn, &c, timeout_s);
}

#define ON_ALARM "in a stall case, the stall was not rescued"
/* run_case, and the case must end well; the failure names fn. */
#define case_ok(fn, ...) child_verdict(run_case(fn, __VA_ARGS__), #fn, ON_ALARM)

enum { WORKERS = 16, YIELDS = 200, ROUNDS = 5 };

static int pipefd[2];
static int runs[WORKERS];          /* times each worker's body started */
static int finished;               /* workers done (atomic) */
static int reader_done;

static void *reader(void *p)
{
    (void)p;
    char c;
    /* Raw: no nth_blocking_enter, so the only VP sits in the kernel. */
    ssize_t n = read(pipefd[0], &c, 1);
    T_EQ(n, 1);
    T_EQ(c, 'x');
    /* Everyone who could write has written: all workers ran. */
    T_EQ(__atomic_load_n(&finished, __ATOMIC_ACQUIRE), WORKERS);
    if (nth_num_vps() == 1)
        T_EQ(nth_vp_id(), 0);      /* resumed on its own VP */
    for (int i = 0; i < 10; i++)
        nth_yield();
    __atomic_add_fetch(&reader_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *worker(void *p)
{
    int i = (int)(intptr_t)p;
    T_EQ(__atomic_add_fetch(&runs[i], 1, __ATOMIC_ACQ_REL), 1);
    for (int k = 0; k < YIELDS; k++)
        nth_yield();
    if (__atomic_add_fetch(&finished, 1, __ATOMIC_ACQ_REL) == WORKERS)
        T_EQ(write(pipefd[1], "x", 1), 1);
    return NULL;
}

static void stuck_read_round(void)
{
    for (int i = 0; i < WORKERS; i++)
        runs[i] = 0;
    finished = 0;
    reader_done = 0;
    T_EQ(pipe(pipefd), 0);
    nth_t r, w[WORKERS];
    T_EQ(nth_create(&r, NULL, reader, NULL), 0);
    /* Let the reader block in the kernel before anything could write. */
    nth_yield();
    for (int i = 0; i < WORKERS; i++)
        T_EQ(nth_create(&w[i], NULL, worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < WORKERS; i++)
        T_EQ(nth_join(w[i], NULL), 0);
    T_EQ(nth_join(r, NULL), 0);
    T_EQ(reader_done, 1);
    for (int i = 0; i < WORKERS; i++)
        T_EQ(runs[i], 1);
    close(pipefd[0]);
    close(pipefd[1]);
}

static void stuck_read(void)
{
    T_EQ(nth_num_vps(), 1);
    for (int round = 0; round < ROUNDS; round++)
        stuck_read_round();
    T_TRUE(nth_watchdog_stalls() >= 1);
    T_TRUE(nth_watchdog_ran() >= 1);
}

/* The monitor dozes once its checks find no work queued for a while; a
 * yield and a create on an empty local queue queue work without waking it
 * (watchdog.c). After 30 ms of computing without scheduling points it
 * dozes, and the stall that follows must still be rescued (when the doze
 * times out): without that bound this case never finishes. */
static void spin_ms(int ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

static void stuck_read_after_quiet(void)
{
    T_EQ(nth_num_vps(), 1);
    for (int round = 0; round < ROUNDS; round++) {
        spin_ms(30);
        stuck_read_round();
    }
    T_TRUE(nth_watchdog_stalls() >= 1);
}

static void stuck_read_2(void)
{
    T_EQ(nth_num_vps(), 2);
    for (int round = 0; round < ROUNDS; round++)
        stuck_read_round();
}

static void test_stuck_read_rescued(void **st)
{
    (void)st;
    case_ok(stuck_read, 1, 1000, 30);
}

static void test_stuck_read_after_quiet_rescued(void **st)
{
    (void)st;
    case_ok(stuck_read_after_quiet, 1, 1000, 30);
}

/* The same program without the watchdog never finishes: the test can fail. */
static void test_stuck_read_hangs_without_watchdog(void **st)
{
    (void)st;
    int s = run_case(stuck_read, 1, 0, 2);
    assert_true(WIFSIGNALED(s));
    assert_int_equal(WTERMSIG(s), SIGALRM);
}

/* Two VPs: the other VP steals anyway; the watchdog must not break that. */
static void test_stuck_read_2vps(void **st)
{
    (void)st;
    case_ok(stuck_read_2, 2, 1000, 30);
}

/* The monitor runs under SCHED_BATCH and can wait for a busy CPU; the
 * backstop (a normal-policy thread, every 10 ms) must then rescue the stall.
 * NTH_TEST_MONITOR_STARVED=1 makes the monitor never check: without the
 * backstop this case times out. */
static void stuck_read_backstop(void)
{
    stuck_read();
    T_TRUE(nth_watchdog_backstop_passes() >= 1);
}

static void test_stuck_read_rescued_by_backstop(void **st)
{
    (void)st;
    setenv("NTH_TEST_MONITOR_STARVED", "1", 1);
    int s = run_case(stuck_read_backstop, 1, 1000, 30);
    unsetenv("NTH_TEST_MONITOR_STARVED");
    child_verdict(s, "stuck_read_backstop", ON_ALARM);
}

/* Scheduling policy (field 41 of /proc/self/task/TID/stat) of the runtime
 * thread named `name`; -1 if none. The threads are listed from
 * /proc/self/task: TIDs counted up from the pid missed a thread whose TID
 * had wrapped below it (pid_max 32768 on a small, busy machine), and the
 * 65536 failed opens of each call then ran this case past its alarm under
 * strace (watchdog_no_task_proc.sh, at load 24). */
static int policy_of(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        int tid = atoi(e->d_name);
        if (tid <= 0)
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = 0;
        char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
        if (!lp || !rp || (size_t)(rp - lp - 1) != strlen(name) || strncmp(lp + 1, name, strlen(name)))
            continue;
        char *p = rp + 2;            /* field 3 */
        for (int field = 3; field < 41 && p; field++) {
            p = strchr(p, ' ');
            if (p)
                p++;
        }
        closedir(d);
        return p ? atoi(p) : -1;
    }
    closedir(d);
    return -1;
}

/* The monitor must not preempt computing VPs (it cost LU 1000 10% at normal
 * policy): SCHED_BATCH (3), not SCHED_IDLE, which can delay the process's
 * exit for seconds. The backstop keeps the normal policy (0). */
static void monitor_policies(void)
{
    int mon = -1, back = -1;
    for (int i = 0; i < 200 && (mon < 0 || back < 0); i++) {
        nth_sleep_ns(1000000);
        mon = policy_of("nth-watchdog");
        back = policy_of("nth-backstop");
    }
    T_EQ(mon, 3);
    T_EQ(back, 0);
}

static void test_monitor_is_sched_batch(void **st)
{
    (void)st;
    case_ok(monitor_policies, 2, 1000, 30);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int waiter_ran;

static void *waiter(void *p)
{
    (void)p;
    __atomic_store_n(&waiter_ran, 1, __ATOMIC_RELEASE);
    return NULL;
}

static nth_t waiter_h;

static void *spinner(void *p)
{
    (void)p;
    /* Ready on this VP's queue from now on. */
    T_EQ(nth_create(&waiter_h, NULL, waiter, NULL), 0);
    /* Computes for 30 stall periods with no scheduling point, and sees that
     * nobody ran the ready waiter meanwhile: the VP was busy, not stalled. */
    int64_t end = now_ns() + 30 * 1000000LL;
    while (now_ns() < end)
        ;
    T_EQ(__atomic_load_n(&waiter_ran, __ATOMIC_ACQUIRE), 0);
    return NULL;
}

static void busy_not_stalled(void)
{
    nth_t s;
    T_EQ(nth_create(&s, NULL, spinner, NULL), 0);
    T_EQ(nth_join(s, NULL), 0);
    T_EQ(nth_join(waiter_h, NULL), 0);
    T_EQ(waiter_ran, 1);
    T_EQ(nth_watchdog_stalls(), 0);
}

static void test_busy_nano_thread_is_not_stalled(void **st)
{
    (void)st;
    case_ok(busy_not_stalled, 1, 1000, 30);
}

/* An enqueue that finds a VP spinning in its idle loop leaves a dozing
 * monitor asleep (the spinner takes whatever a stalled VP leaves queued):
 * waking it there woke it at every parallel region, so it never dozed
 * during LU (sched.c, wake_monitor_unless_spinning). With nobody spinning
 * the enqueue still wakes it. One VP and no monitor thread (NTH_STALL_US=0),
 * so the word and the spinner count are this case's alone: the count
 * stands for the idle loop of another VP. */
static void wake_idle_spares_dozing_monitor(void)
{
    struct nth_vp *vp = nth_vp_self();
    T_TRUE(vp != NULL);
    T_EQ(__atomic_load_n(&nth_rt.nspinning, __ATOMIC_SEQ_CST), 0);
    int (*wake[2])(struct nth_vp *) = { nth_sched_wake_idle, nth_sched_wake_idle_rmw };
    for (int i = 0; i < 2; i++) {
        __atomic_store_n(&nth_watchdog_sleeping, 1, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&nth_rt.nspinning, 1, __ATOMIC_SEQ_CST);
        wake[i](vp);
        T_EQ(__atomic_load_n(&nth_watchdog_sleeping, __ATOMIC_SEQ_CST), 1);
        __atomic_sub_fetch(&nth_rt.nspinning, 1, __ATOMIC_SEQ_CST);
        wake[i](vp);
        T_EQ(__atomic_load_n(&nth_watchdog_sleeping, __ATOMIC_SEQ_CST), 0);
    }
}

static void test_wake_idle_spares_dozing_monitor(void **st)
{
    (void)st;
    case_ok(wake_idle_spares_dozing_monitor, 1, 0, 30);
}

/* A VP given its CPU back (it parked disabled, nth_vps_set_allowed) while
 * another VP runs leaves a dozing monitor asleep: that wake was a system
 * call and a helper thread woken onto the granted CPU on every cpumgr
 * grant (idle.c, park). Two VPs, no monitor thread (NTH_STALL_US=0), so
 * the word is this case's alone. Fails without the change: the unpark
 * clears the word. */
static int gu_running, gu_stop;

static void *gu_spinner(void *p)
{
    (void)p;
    __atomic_store_n(&gu_running, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&gu_stop, __ATOMIC_SEQ_CST))
        ;
    return NULL;
}

/* One disable/enable cycle of VP 1 with the monitor marked dozing: 1 when
 * the mark survived the grant (nobody woke the monitor). Other wake-ups
 * (any enqueue that finds no VP spinning) may clear the mark too, rarely,
 * in a loaded or sanitized run: the case retries, while a grant that
 * wakes the monitor clears it every time. */
static int grant_cycle_spares_monitor(struct nth_vp *v1, hwloc_bitmap_t only0, hwloc_bitmap_t both)
{
    /* VP 1 is disabled while it runs, so that its next park is the
     * disabled one (an idle park from before would be left by the enable
     * as an ordinary unpark, which wakes the monitor). */
    __atomic_store_n(&gu_running, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&gu_stop, 0, __ATOMIC_SEQ_CST);
    nth_attr_t a;
    T_EQ(nth_attr_init(&a), 0);
    T_EQ(nth_attr_setvp(&a, 1), 0);
    nth_t sp;
    T_EQ(nth_create(&sp, &a, gu_spinner, NULL), 0);
    while (!__atomic_load_n(&gu_running, __ATOMIC_SEQ_CST))
        sched_yield();
    T_EQ(nth_vps_set_allowed(only0), 0);
    __atomic_store_n(&gu_stop, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&v1->parked, __ATOMIC_SEQ_CST))
        sched_yield();
    __atomic_store_n(&nth_watchdog_sleeping, 1, __ATOMIC_SEQ_CST);
    T_EQ(nth_vps_set_allowed(both), 0);
    /* enable() asks for a rebind, which the VP takes after its unpark. */
    while (__atomic_load_n(&v1->rebind, __ATOMIC_SEQ_CST) ||
           __atomic_load_n(&v1->disabled, __ATOMIC_SEQ_CST))
        sched_yield();
    int spared = __atomic_load_n(&nth_watchdog_sleeping, __ATOMIC_SEQ_CST) == 1;
    __atomic_store_n(&nth_watchdog_sleeping, 0, __ATOMIC_SEQ_CST);
    T_EQ(nth_join(sp, NULL), 0);
    return spared;
}

static void grant_unpark_spares_dozing_monitor(void)
{
    T_EQ(nth_num_vps(), 2);
    struct nth_vp *v0 = nth_rt.vps[0], *v1 = nth_rt.vps[1];
    if (v0->cpu < 0 || v1->cpu < 0 || v0->cpu == v1->cpu)
        return; /* one CPU: no VP to disable */
    T_TRUE(nth_vp_self() == v0);
    hwloc_bitmap_t only0 = hwloc_bitmap_alloc(), both = hwloc_bitmap_alloc();
    hwloc_bitmap_only(only0, (unsigned)v0->cpu);
    hwloc_bitmap_copy(both, only0);
    hwloc_bitmap_set(both, (unsigned)v1->cpu);
    int spared = 0;
    for (int i = 0; i < 5 && !spared; i++)
        spared = grant_cycle_spares_monitor(v1, only0, both);
    T_TRUE(spared);
    hwloc_bitmap_free(only0);
    hwloc_bitmap_free(both);
}

static void test_grant_unpark_spares_dozing_monitor(void **st)
{
    (void)st;
    case_ok(grant_unpark_spares_dozing_monitor, 2, 0, 30);
}

/* Work queued on a VP that keeps switching is not work waiting behind a
 * stalled VP, and must let the monitor doze: nano-threads yield to one
 * another on one VP, so its ready queue is never empty when the monitor
 * looks, but the VP switches between any two looks. The monitor used to
 * count any queued work as "not quiet" and never dozed here (nor through
 * LU 1000, whose every region queues a member on the other VP for the
 * microseconds that VP takes to pick it up: a check, and a preemption of
 * a computing VP on the monitor's CPU, at every tick).
 * The monitor is stepped (NTH_TEST_MONITOR_STEPPED): each check comes when
 * this case asks, after a switch, with two yielders queued. Left to its
 * own period on a loaded machine, the monitor (on VP 0's CPU) often
 * looked twice while the OS kept the VP off its CPU -- rightly not quiet,
 * that being what a stall looks like -- and the case, bounded at 5 s,
 * failed (once in a suite at load 30-40 in the earlier form, once here
 * under the shim at load ~25). Fails without the change at every step. */
enum { DOZE_MAX_STEPS = 200 };     /* the monitor dozes after 20 quiet checks */
static int doze_stop;

static void *doze_yielder(void *p)
{
    (void)p;
    while (!__atomic_load_n(&doze_stop, __ATOMIC_ACQUIRE))
        nth_yield();
    return NULL;
}

static void switching_vp_lets_monitor_doze(void)
{
    T_EQ(nth_num_vps(), 1);
    nth_t y[2];
    for (int i = 0; i < 2; i++)
        T_EQ(nth_create(&y[i], NULL, doze_yielder, NULL), 0);
    unsigned long dozes = 0;
    int steps = 0;
    while (steps < DOZE_MAX_STEPS && dozes == 0) {
        T_EQ(nth_yield(), 0);         /* the VP switches, and again back to us */
        dozes = nth_watchdog_test_step();
        steps++;
    }
    printf("switching VP: the monitor dozed after %d checks (dozes %lu)\n", steps, dozes);
    __atomic_store_n(&doze_stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        T_EQ(nth_join(y[i], NULL), 0);
    T_TRUE(dozes > 0);
}

static void test_switching_vp_lets_monitor_doze(void **st)
{
    (void)st;
    setenv("NTH_TEST_MONITOR_STEPPED", "1", 1);
    case_ok(switching_vp_lets_monitor_doze, 1, 1000, 30);
    unsetenv("NTH_TEST_MONITOR_STEPPED");
}

/* Nano-threads that wait for each other with raw futex system calls
 * (libgomp's barrier, Rust std's Condvar): a waiter holds the kernel
 * thread it runs on asleep, a VP's or a stand-in's, so on one VP the 6
 * members need 5 stand-ins at once: a stand-in whose nano-thread sleeps
 * in the kernel gets a successor for the VP's queue. Before that, the
 * first stand-in's sleeping member was the last thing that ran and this
 * hung (the shim's futexbar, omp and rbar programs, issue #4). */
enum { FX_MEMBERS = 6, FX_ROUNDS = 20 };
static int fx_gen, fx_count;
static int fx_capped_case;         /* members give way once the cap refused one */
static int fx_early;

static void fx_wait(void)
{
    int g = __atomic_load_n(&fx_gen, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&fx_count, 1, __ATOMIC_ACQ_REL) == FX_MEMBERS) {
        __atomic_store_n(&fx_count, 0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&fx_gen, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &fx_gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
        return;
    }
    struct timespec tmo = { 0, 50 * 1000000L };
    while (__atomic_load_n(&fx_gen, __ATOMIC_ACQUIRE) == g) {
        /* Raw: no nth_blocking_enter, the kernel thread sleeps here. */
        long r = syscall(SYS_futex, &fx_gen, FUTEX_WAIT_PRIVATE, g, fx_capped_case ? &tmo : NULL, NULL, 0);
        /* Capped: once the cap refused a stand-in, a member that times
         * out gives its kernel thread to the others (a scheduling point),
         * else the members beyond the cap would never run. Never before:
         * the refusal must happen for the case to end. */
        if (r == -1 && errno == ETIMEDOUT && nth_watchdog_capped() > 0)
            nth_yield();
    }
}

static int fx_arrived[FX_ROUNDS];

static void *fx_member(void *p)
{
    (void)p;
    for (int r = 0; r < FX_ROUNDS; r++) {
        __atomic_add_fetch(&fx_arrived[r], 1, __ATOMIC_ACQ_REL);
        fx_wait();
        if (__atomic_load_n(&fx_arrived[r], __ATOMIC_ACQUIRE) != FX_MEMBERS)
            __atomic_add_fetch(&fx_early, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void fx_run(void)
{
    T_EQ(nth_num_vps(), 1);
    nth_t m[FX_MEMBERS];
    for (int i = 0; i < FX_MEMBERS; i++)
        T_EQ(nth_create(&m[i], NULL, fx_member, NULL), 0);
    for (int i = 0; i < FX_MEMBERS; i++)
        T_EQ(nth_join(m[i], NULL), 0);
    for (int r = 0; r < FX_ROUNDS; r++)
        T_EQ(fx_arrived[r], FX_MEMBERS);
    T_EQ(fx_early, 0);
}

static void futex_waiters(void)
{
    fx_run();
    /* Every member but one asleep in round 0, each on its own kernel
     * thread: 5 stand-ins, none refused. */
    T_TRUE(nth_watchdog_standins() >= FX_MEMBERS - 1);
    T_EQ(nth_watchdog_capped(), 0);
}

static void test_futex_waiters_each_get_a_standin(void **st)
{
    (void)st;
    case_standins_max = 0;
    case_ok(futex_waiters, 1, 1000, 30);
}

/* The same members with NTH_STANDINS_MAX=2: never more than 2 stand-ins,
 * and the cap is what stopped the third (counted, said once on stderr). */
static void futex_waiters_capped(void)
{
    fx_capped_case = 1;
    fx_run();
    T_TRUE(nth_watchdog_standins() <= 2);
    T_TRUE(nth_watchdog_capped() >= 1);
}

static void test_futex_waiters_capped(void **st)
{
    (void)st;
    case_standins_max = 2;
    int s = run_case(futex_waiters_capped, 1, 1000, 30);
    case_standins_max = 0;
    child_verdict(s, "futex_waiters_capped", ON_ALARM);
}

/* NTH_STANDINS_MAX from the environment: range-checked, a bad value named
 * in one line and the default kept. */
static void test_standins_max_env(void **st)
{
    (void)st;
    nth_config_t c;
    setenv("NTH_STANDINS_MAX", "16", 1);
    assert_int_equal(nth_config_from_env(&c), 0);
    assert_int_equal(c.standins_max, 16);
    const char *bad[] = { "0", "-1", "65537", "x", "3k" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("NTH_STANDINS_MAX", bad[i], 1);
        assert_int_equal(nth_config_from_env(&c), EINVAL);
        assert_int_equal(c.standins_max, 0);
    }
    unsetenv("NTH_STANDINS_MAX");
    nth_config_default(&c);
    c.standins_max = 65537;
    assert_int_equal(nth_config_check(&c), EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stuck_read_rescued),
        cmocka_unit_test(test_stuck_read_hangs_without_watchdog),
        cmocka_unit_test(test_stuck_read_after_quiet_rescued),
        cmocka_unit_test(test_stuck_read_2vps),
        cmocka_unit_test(test_busy_nano_thread_is_not_stalled),
        cmocka_unit_test(test_stuck_read_rescued_by_backstop),
        cmocka_unit_test(test_monitor_is_sched_batch),
        cmocka_unit_test(test_wake_idle_spares_dozing_monitor),
        cmocka_unit_test(test_grant_unpark_spares_dozing_monitor),
        cmocka_unit_test(test_switching_vp_lets_monitor_doze),
        cmocka_unit_test(test_futex_waiters_each_get_a_standin),
        cmocka_unit_test(test_futex_waiters_capped),
        cmocka_unit_test(test_standins_max_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
