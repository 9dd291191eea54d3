/* The switch-in hook (nth_switch_hook_set, nth_switch_data_set), which the
 * pthread shim's per-nano-thread signal masks rest on: every resumed
 * nano-thread is reported with its own data, with one VP and with two
 * (nano-threads migrate), the idle context with NULL, nothing once the
 * hook is removed, EPERM for a kernel thread that is no VP, the idle
 * context of a VP that parked before the hook was installed, and the
 * signal mask a VP's kernel thread has from its birth: every signal
 * blocked when a hook exists (the hook sets the masks), its creator's
 * when none does. */
#include "child.h"
#include "internal.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { MAXW = 4, ROUNDS = 300 };

struct tag {
    nth_t self;
    int calls;                   /* hook calls with this tag (atomic) */
};

static struct tag tags[MAXW];
static int wrong;                /* hook calls whose data was not the resumed one's */
static int null_calls;

static void hook(void *data)
{
    struct tag *t = data;
    if (!t) {
        __atomic_fetch_add(&null_calls, 1, __ATOMIC_RELAXED);
        return;
    }
    if (t->self != nth_self())
        __atomic_fetch_add(&wrong, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&t->calls, 1, __ATOMIC_RELAXED);
}

static void *worker(void *a)
{
    struct tag *t = a;
    t->self = nth_self();
    CHECK_EQ(nth_switch_data_set(t), 0);
    for (int i = 0; i < ROUNDS; i++)
        nth_yield();
    return NULL;
}

static void run_workers(int n)
{
    nth_t w[MAXW];
    for (int i = 0; i < n; i++)
        CHECK_EQ(nth_create(&w[i], NULL, worker, &tags[i]), 0);
    for (int i = 0; i < n; i++)
        CHECK_EQ(nth_join(w[i], NULL), 0);
}

static void *not_a_vp(void *a)
{
    (void)a;
    return (void *)(intptr_t)nth_switch_data_set(NULL);
}

static void c_switch_hook(void *a)
{
    int vps = (int)(intptr_t)a;
    child_init((unsigned)vps);
    int n = vps == 1 ? 2 : MAXW;
    CHECK_EQ(nth_switch_hook_set(hook), 0);
    run_workers(n);
    CHECK_EQ(__atomic_load_n(&wrong, __ATOMIC_RELAXED), 0);
    for (int i = 0; i < n; i++) {
        /* Alone or not, each yield that switched resumed it once; with one
         * VP and two workers, every yield switches. */
        int c = __atomic_load_n(&tags[i].calls, __ATOMIC_RELAXED);
        CHECK(c <= ROUNDS);
        if (vps == 1)
            CHECK(c >= ROUNDS - 1);
    }
    /* main blocked in the joins: the idle context resumed or parked */
    CHECK(__atomic_load_n(&null_calls, __ATOMIC_RELAXED) > 0);
    /* removed: no more calls */
    CHECK_EQ(nth_switch_hook_set(NULL), 0);
    memset(tags, 0, sizeof tags);
    run_workers(n);
    for (int i = 0; i < n; i++)
        CHECK_EQ(__atomic_load_n(&tags[i].calls, __ATOMIC_RELAXED), 0);
}

/* Idle contexts that called the hook with NULL, by VP (atomic). */
static int idle_seen[2];
static void idle_hook(void *data)
{
    int id = nth_vp_id();
    if (!data && id >= 0 && id < 2)
        __atomic_store_n(&idle_seen[id], 1, __ATOMIC_RELAXED);
}

/* Two VPs, main busy on one: the other parks before any hook exists and
 * nothing wakes it afterwards; installing the hook must reach its idle
 * context anyway (the pthread shim blocks signals there), before
 * nth_switch_hook_set returns. */
static void c_parked_vp(void *a)
{
    (void)a;
    child_init(2);
    int other = 1 - nth_vp_id();
    int parked = 0;
    for (int i = 0; i < 10000 && !parked; i++) {
        parked = __atomic_load_n(&nth_rt.vps[other]->parked, __ATOMIC_SEQ_CST);
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);       /* a kernel sleep: no switch on our VP */
    }
    CHECK(parked);
    CHECK_EQ(nth_switch_hook_set(idle_hook), 0);
    /* Already, not eventually: until the woken VP has run, its kernel
     * thread keeps the mask it parked with (under the pthread shim, a
     * process-directed signal every nano-thread blocks went there). */
    CHECK(__atomic_load_n(&idle_seen[other], __ATOMIC_RELAXED));
    int seen = 0;
    for (int i = 0; i < 10000 && !seen; i++) {
        seen = __atomic_load_n(&idle_seen[other], __ATOMIC_RELAXED);
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    CHECK(seen);
    CHECK_EQ(nth_switch_hook_set(NULL), 0);
}

/* SigBlk of kernel thread tid (bit sig-1), from /proc; ~0 if unreadable. */
static uint64_t kernel_sigblk(int tid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return ~0ULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strstr(buf, "SigBlk:");
    return p ? strtoull(p + 7, NULL, 16) : ~0ULL;
}

/* VP 1's kernel thread id, once it has one (0 after about 10 s). */
static int vp1_tid(void)
{
    int tid = 0;
    for (int i = 0; i < 10000 && !tid; i++) {
        tid = __atomic_load_n(&nth_rt.vps[1]->tid, __ATOMIC_ACQUIRE);
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    return tid;
}

static void set_kmask(uint64_t m)
{
    sigset_t s;
    sigemptyset(&s);
    memcpy(&s, &m, sizeof m);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &s, NULL, (size_t)(_NSIG / 8));
}

/* A hook before the VPs exist: VP 1's kernel thread must never have the
 * creator's mask (here SIGUSR1 open), from its clone on, not only from its
 * first run (a VP runnable but not yet run took process-directed signals
 * every nano-thread blocked under the pthread shim). The hook here sets no
 * mask, so the birth mask is what stays. */
static void c_born_blocked(void *a)
{
    (void)a;
    set_kmask(0);
    CHECK_EQ(nth_switch_hook_set(idle_hook), 0);
    child_init(2);
    int tid = vp1_tid();
    CHECK(tid != 0);
    uint64_t m = kernel_sigblk(tid);
    CHECK(m & (1ULL << (SIGUSR1 - 1)));
    CHECK(m & (1ULL << (SIGRTMIN - 1)));
    CHECK_EQ(nth_switch_hook_set(NULL), 0);
}

/* No hook: VP 1's kernel thread takes its creator's mask once it runs, as
 * it always did (SIGUSR2 blocked, SIGUSR1 open). */
static void c_born_open(void *a)
{
    (void)a;
    set_kmask(1ULL << (SIGUSR2 - 1));
    child_init(2);
    int tid = vp1_tid();
    CHECK(tid != 0);
    int parked = 0;      /* vp_main has opened its mask by then */
    for (int i = 0; i < 10000 && !parked; i++) {
        parked = __atomic_load_n(&nth_rt.vps[1]->parked, __ATOMIC_SEQ_CST);
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    CHECK(parked);
    uint64_t m = kernel_sigblk(tid);
    CHECK(m & (1ULL << (SIGUSR2 - 1)));
    CHECK(!(m & (1ULL << (SIGUSR1 - 1))));
}

static void c_not_a_vp(void *a)
{
    (void)a;
    child_init(1);
    CHECK_EQ(child_on_plain_thread(not_a_vp), EPERM);
}

static void test_one_vp(void **s) { (void)s; assert_child_ok(c_switch_hook, (void *)1); }
static void test_two_vps(void **s) { (void)s; assert_child_ok(c_switch_hook, (void *)2); }
static void test_not_a_vp(void **s) { (void)s; assert_child_ok(c_not_a_vp, NULL); }
static void test_parked_vp(void **s) { (void)s; assert_child_ok(c_parked_vp, NULL); }
static void test_born_blocked(void **s) { (void)s; assert_child_ok(c_born_blocked, NULL); }
static void test_born_open(void **s) { (void)s; assert_child_ok(c_born_open, NULL); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_vp),
        cmocka_unit_test(test_two_vps),
        cmocka_unit_test(test_not_a_vp),
        cmocka_unit_test(test_parked_vp),
        cmocka_unit_test(test_born_blocked),
        cmocka_unit_test(test_born_open),
    };
    child_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
