/*
 * child.h -- run a test case in a forked child with a fresh runtime.
 *
 * The runtime is process-global (VPs, the initial thread as VP 0), so cases
 * that need their own configuration run in a child; the cmocka parent never
 * starts the runtime. Inside the child, CHECK() (or T_EQ() and friends, the
 * sync tests' spelling) reports the failing condition on stderr and exits
 * 99; the parent gives its verdict on the exit status (child_verdict),
 * naming the case. One runner for the core and the sync tests: the alarm
 * scaled for the sanitizers and NTH_TEST_TIMEOUT_SCALE, cmocka's signal
 * handlers reset, a skip told apart (CHILD_SKIP_STATUS).
 */
#ifndef NTH_TEST_CHILD_H
#define NTH_TEST_CHILD_H

#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "nth.h"

/* Report "file:line: message" on stderr and end the child with status 99. */
#define T_FAIL(fmt, ...)                                                     \
    do {                                                                     \
        fprintf(stderr, "%s:%d: " fmt "\n", __FILE__, __LINE__, __VA_ARGS__); \
        fflush(stderr);                                                      \
        _exit(99);                                                           \
    } while (0)

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond))                                                         \
            T_FAIL("CHECK failed: %s", #cond);                               \
    } while (0)

#define CHECK_EQ(a, b)                                                       \
    do {                                                                     \
        long long a_ = (long long)(a), b_ = (long long)(b);                  \
        if (a_ != b_)                                                        \
            T_FAIL("CHECK failed: %s == %s (%lld != %lld)", #a, #b, a_, b_); \
    } while (0)

/* The same checks in the sync tests' words: the value, then what was
 * expected. */
#define T_EQ(a, b)                                                           \
    do {                                                                     \
        long long a_ = (long long)(a), b_ = (long long)(b);                  \
        if (a_ != b_)                                                        \
            T_FAIL("%s == %lld, expected %lld", #a, a_, b_);                 \
    } while (0)
#define T_TRUE(c)                                                            \
    do {                                                                     \
        if (!(c))                                                            \
            T_FAIL("%s is false", #c);                                       \
    } while (0)

#if defined(__SANITIZE_ADDRESS__)
/* A child that ends with exit() from a nano-thread leaves the cmocka runner's
 * frames on main's inactive stack, which LeakSanitizer does not scan (it
 * knows no fiber stacks but the running ones): cmocka's state then looks
 * leaked. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libcmocka.so\n";
}
#endif

/* The child cannot test what it was asked to here (the environment lacks
 * something, e.g. an emulator that ignores RLIMIT_AS): say why, and the
 * parent's assert_child_ok() reports the case as skipped. */
#define CHILD_SKIP_STATUS 77
#define CHILD_SKIP(why)                                                      \
    do {                                                                     \
        fprintf(stderr, "skipped: %s\n", (why));                             \
        fflush(stderr);                                                      \
        _exit(CHILD_SKIP_STATUS);                                            \
    } while (0)

static void *child_probe_on_a_vp(void *r)
{
    nth_t (*other_self)(void) = (nth_t (*)(void))dlsym(RTLD_DEFAULT, "nth_self");
    *(int *)r = nth_self() != NULL || (other_self && other_self() != NULL);
    return NULL;
}

/* Whether pthread_create makes a nano-thread here, of this program's
 * runtime or of another one in the process (the libnth.so that a preloaded
 * pthread shim brings beside a test's statically linked copy), rather than a
 * kernel thread that is no VP: a case that needs such a kernel thread
 * cannot run then. Made and joined, so it also runs where the shim's
 * runtime shares the caller's kernel thread. */
static inline int child_pthread_makes_nano_threads(void)
{
    pthread_t k;
    int r = 0;
    CHECK_EQ(pthread_create(&k, NULL, child_probe_on_a_vp, &r), 0);
    CHECK_EQ(pthread_join(k, NULL), 0);
    return r;
}

/* The configuration most cases start from: the defaults (NTH_* variables
 * not read) with vps VPs (0 = default). */
static inline nth_config_t child_config(unsigned vps)
{
    nth_config_t c;
    nth_config_default(&c);
    c.vps = vps;
    return c;
}

/* child_config without the cpumgr client: the case keeps the CPUs of its
 * mask even while another test's cpumgr daemon runs. */
static inline nth_config_t child_config_alone(unsigned vps)
{
    nth_config_t c = child_config(vps);
    c.cpumgr = "off";
    return c;
}

/* Start the runtime in the child with vps VPs (0 = default). */
static inline void child_init(unsigned vps)
{
    nth_config_t c = child_config(vps);
    CHECK_EQ(nth_init(&c), 0);
}

/* Fork, run fn(arg) in the child with stderr sent to err_path (NULL: kept),
 * and return the wait status. The child dies after timeout_s seconds. */
static inline int run_child(void (*fn)(void *), void *arg, const char *err_path, unsigned timeout_s)
{
    fflush(stdout);
    fflush(stderr);
    if (getenv("NTH_TEST_NOFORK")) {     /* debugging one case under gdb */
        fn(arg);
        return 0;
    }
    pid_t p = fork();
    if (p == 0) {
        if (err_path && !freopen(err_path, "w", stderr))
            _exit(98);
        /* cmocka's handlers longjmp into the parent's runner: not here. */
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        signal(SIGILL, SIG_DFL);
        signal(SIGFPE, SIG_DFL);
        signal(SIGABRT, SIG_DFL);
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
        timeout_s *= 8;     /* sanitizers (TSan's fibers above all) are slow */
#endif
        const char *k = getenv("NTH_TEST_TIMEOUT_SCALE");  /* emulators */
        if (k && atoi(k) > 0)
            timeout_s *= (unsigned)atoi(k);
        alarm(timeout_s);
        fn(arg);
        fflush(stdout);
        fflush(stderr);
        _exit(0);
    }
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p)
        return -1;
    return st;
}

/* The cmocka verdict on a child's wait status st (from run_child): pass on
 * exit 0, skip on CHILD_SKIP_STATUS, otherwise fail naming the case. Its
 * alarm (SIGALRM) is told apart from other signals; on_alarm (NULL: none)
 * adds what a timeout means for this case (e.g. "an alarm never fired"). */
static inline void child_verdict(int st, const char *name, const char *on_alarm)
{
    if (st == -1)
        fail_msg("child %s: fork or waitpid failed", name);
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
        fail_msg("child timed out (its alarm, SIGALRM): %s hangs%s%s", name,
                 on_alarm ? ": " : "", on_alarm ? on_alarm : "");
    if (WIFSIGNALED(st))
        fail_msg("child %s killed by signal %d (%s)", name, WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) == CHILD_SKIP_STATUS)
        skip();
    if (WEXITSTATUS(st) != 0)
        fail_msg("child %s exited with status %d (99: a check failed, above)", name,
                 WEXITSTATUS(st));
}

/* Fail the current cmocka test unless fn(arg) in a child ends well within
 * timeout_s seconds (scaled as run_child's); the failure names fn. */
#define assert_child_ok_within(fn, arg, timeout_s, on_alarm)                 \
    child_verdict(run_child((fn), (arg), NULL, (timeout_s)), #fn, (on_alarm))
#define assert_child_ok(fn, arg) assert_child_ok_within(fn, arg, 30, NULL)

/* A case body that takes no argument, run by run_child_case on a runtime
 * started with *config (NULL: the body starts its own, or none). */
struct child_case {
    void (*fn)(void);
    const nth_config_t *config;
};

static inline void child_case_body(void *arg)
{
    const struct child_case *c = arg;
    if (c->config)
        CHECK_EQ(nth_init(c->config), 0);
    c->fn();
}

/* run_child for fn(void) on a fresh runtime made from *config (NULL: none
 * started here); returns the wait status for child_verdict. */
static inline int run_child_case(void (*fn)(void), const nth_config_t *config,
                                 unsigned timeout_s)
{
    struct child_case c = { fn, config };
    return run_child(child_case_body, &c, NULL, timeout_s);
}

/* Fail the current cmocka test unless fn(void), run in a child on a fresh
 * runtime started with config (an nth_config_t value), ends well within
 * timeout_s seconds (scaled as run_child's); the failure names fn. */
#define assert_case_ok(fn, config, timeout_s, on_alarm)                      \
    do {                                                                     \
        nth_config_t cfg_ = (config);                                        \
        child_verdict(run_child_case((fn), &cfg_, (timeout_s)), #fn, (on_alarm)); \
    } while (0)

/* What fn returned on a new kernel thread made by libc's pthread_create
 * (no VP: the program runs without the pthread shim), as an int: for the
 * calls that must refuse such a caller (EPERM). */
static inline int child_on_plain_thread(void *(*fn)(void *))
{
    pthread_t k;
    void *r = NULL;
    CHECK_EQ(pthread_create(&k, NULL, fn, NULL), 0);
    CHECK_EQ(pthread_join(k, &r), 0);
    return (int)(intptr_t)r;
}

/* NTH_TEST_FILTER=pattern runs only the matching cases (with
 * NTH_TEST_NOFORK=1, in the test process itself, for gdb). */
static inline void child_filter(void)
{
    const char *f = getenv("NTH_TEST_FILTER");
    if (f)
        cmocka_set_test_filter(f);
}

#endif
