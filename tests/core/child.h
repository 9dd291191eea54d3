/*
 * child.h -- run a test case in a forked child with a fresh runtime.
 *
 * The runtime is process-global (VPs, the initial thread as VP 0), so cases
 * that need their own configuration run in a child; the cmocka parent never
 * starts the runtime. Inside the child, CHECK() reports the failing
 * condition on stderr and exits 99; the parent asserts on the exit status.
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

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            fflush(stderr);                                                  \
            _exit(99);                                                       \
        }                                                                    \
    } while (0)

#define CHECK_EQ(a, b)                                                       \
    do {                                                                     \
        long long a_ = (long long)(a), b_ = (long long)(b);                  \
        if (a_ != b_) {                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld != %lld)\n",\
                    __FILE__, __LINE__, #a, #b, a_, b_);                     \
            fflush(stderr);                                                  \
            _exit(99);                                                       \
        }                                                                    \
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

/* Start the runtime in the child with vps VPs (0 = default). */
static inline void child_init(unsigned vps)
{
    nth_config_t c;
    nth_config_default(&c);
    c.vps = vps;
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

#define assert_child_ok(fn, arg)                                             \
    do {                                                                     \
        int st_ = run_child((fn), (arg), NULL, 30);                          \
        if (WIFSIGNALED(st_) && WTERMSIG(st_) == SIGALRM)                    \
            fail_msg("child timed out (its alarm, SIGALRM): %s hangs", #fn); \
        if (WIFSIGNALED(st_))                                                \
            fail_msg("child %s killed by signal %d (%s)", #fn, WTERMSIG(st_), \
                     strsignal(WTERMSIG(st_)));                              \
        assert_true(WIFEXITED(st_));                                         \
        if (WEXITSTATUS(st_) == CHILD_SKIP_STATUS)                           \
            skip();                                                          \
        assert_int_equal(WEXITSTATUS(st_), 0);                               \
    } while (0)

/* NTH_TEST_FILTER=pattern runs only the matching cases (with
 * NTH_TEST_NOFORK=1, in the test process itself, for gdb). */
static inline void child_filter(void)
{
    const char *f = getenv("NTH_TEST_FILTER");
    if (f)
        cmocka_set_test_filter(f);
}

#endif
