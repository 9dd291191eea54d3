/* The runtime's helper kernel threads (stall monitor, stand-ins, cpumgr
 * watcher) are born with every signal blocked (nth_helper_thread_create),
 * whatever their creator's mask: a helper that started with its creator's
 * open signals could take a process-directed signal the program blocks
 * everywhere else, until it blocked them itself (the pthread shim's
 * posix-signals died of SIGRTMIN that way now and then). Cases: the
 * function itself, from a creator with every signal open; the monitor,
 * started by nth_init from such a thread; a stand-in made by
 * nth_blocking_enter on a nano-thread that leaves every signal open. */
#include "child.h"
#include "internal.h"
#include "libc_real.h"
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>

static void open_all(void)
{
    sigset_t none;
    sigemptyset(&none);
    CHECK_EQ(syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, (size_t)(_NSIG / 8)), 0);
}

static void nap_ms(long ms)
{
    struct timespec ts = { 0, ms * 1000000L };
    syscall(SYS_nanosleep, &ts, NULL);
}

static sigset_t seen;
static int recorded;
static void *record_mask(void *a)
{
    (void)a;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &seen, (size_t)(_NSIG / 8));
    __atomic_store_n(&recorded, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void c_direct(void *a)
{
    (void)a;
    open_all();
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    CHECK_EQ(nth_helper_thread_create(&th, &at, record_mask, NULL), 0);
    pthread_attr_destroy(&at);
    /* Detached, not joined: under the pthread shim (nthlib-suite.sh)
     * pthread_join is the shim's, which knows no libc thread (and a thread
     * never joined is a leak to ThreadSanitizer). */
    for (int i = 0; i < 10000 && !__atomic_load_n(&recorded, __ATOMIC_ACQUIRE); i++)
        nap_ms(1);
    CHECK(__atomic_load_n(&recorded, __ATOMIC_ACQUIRE));
    CHECK(sigismember(&seen, SIGUSR1) == 1);
    CHECK(sigismember(&seen, SIGRTMIN) == 1);
    CHECK(sigismember(&seen, SIGINT) == 1);
    CHECK_EQ(__atomic_load_n(&nth_helper_born_open, __ATOMIC_RELAXED), 0);
    /* the creator's own mask is back */
    sigset_t cur;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &cur, (size_t)(_NSIG / 8));
    CHECK(sigismember(&cur, SIGUSR1) == 0);
}

/* 1 once a thread of the process has that name. */
static int has_thread(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d))) {
        char p[300], buf[32] = "";
        snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(p, "r");
        if (f) {
            found = fgets(buf, sizeof buf, f) && strncmp(buf, name, strlen(name)) == 0;
            fclose(f);
        }
    }
    closedir(d);
    return found;
}

static void c_monitor(void *a)
{
    (void)a;
    open_all();
    nth_config_t c;
    nth_config_default(&c);
    c.vps = 1;
    c.stall_us = 1000;
    c.cpumgr = "off";
    CHECK_EQ(nth_init(&c), 0);
    /* It names itself after the check at its first instruction. */
    for (int i = 0; i < 10000 && !has_thread("nth-watchdog"); i++)
        nap_ms(1);
    CHECK(has_thread("nth-watchdog"));
    CHECK_EQ(__atomic_load_n(&nth_helper_born_open, __ATOMIC_RELAXED), 0);
}

static int ran;
static void *mark(void *a)
{
    (void)a;
    __atomic_store_n(&ran, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void c_standin(void *a)
{
    (void)a;
    open_all();
    nth_config_t c;
    nth_config_default(&c);
    c.vps = 1;
    c.stall_us = 0;              /* no monitor: no stand-in made beforehand */
    c.cpumgr = "off";
    CHECK_EQ(nth_init(&c), 0);
    nth_t t;
    CHECK_EQ(nth_create(&t, NULL, mark, NULL), 0);
    /* t is ready on our only VP: entering lends the VP to a new stand-in,
     * made here, by a nano-thread with every signal open. */
    CHECK_EQ(nth_blocking_enter(), 0);
    for (int i = 0; i < 10000 && !__atomic_load_n(&ran, __ATOMIC_SEQ_CST); i++)
        nap_ms(1);
    CHECK_EQ(nth_blocking_leave(), 0);
    CHECK_EQ(nth_join(t, NULL), 0);
    CHECK(__atomic_load_n(&ran, __ATOMIC_SEQ_CST));
    CHECK_EQ(__atomic_load_n(&nth_helper_born_open, __ATOMIC_RELAXED), 0);
}

static void test_direct(void **s) { (void)s; assert_child_ok(c_direct, NULL); }
static void test_monitor(void **s) { (void)s; assert_child_ok(c_monitor, NULL); }
static void test_standin(void **s) { (void)s; assert_child_ok(c_standin, NULL); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct),
        cmocka_unit_test(test_monitor),
        cmocka_unit_test(test_standin),
    };
    child_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
