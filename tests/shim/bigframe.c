/*
 * bigframe.c -- thread stack sizes as glibc gives them.
 *
 * Without arguments (run-compare.sh runs it natively and under the shim):
 *  - a default pthread_attr_t (pthread_attr_init), pthread_getattr_default_np
 *    and a thread created with a NULL attr agree on the stack size: POSIX
 *    has pthread_create(NULL attr) use the default attributes, and
 *    pthread_attr_getstacksize(3p) reports the size a thread created with
 *    that attr gets (pthread_getattr_np(3) reports the real stack);
 *  - the same after pthread_setattr_default_np(3) sets 512 KiB;
 *  - a thread created with a NULL attr runs a function with a 3 MiB local
 *    array, as under glibc, whose default thread stack is RLIMIT_STACK
 *    (8 MiB on Debian; tried only when the default is at least 4 MiB, so
 *    that a smaller `ulimit -s` makes no native failure).
 * Under the shim, before its default followed glibc's, a NULL attr gave
 * 1 MiB while a default attr reported and gave 8 MiB, and the 3 MiB frame
 * died of SIGSEGV.
 *
 * With the argument "jump" (tests/shim/stackjump.sh): a thread named
 * "jumper", created with a 1 MiB stack, runs the 3 MiB frame; the process
 * dies of SIGSEGV (under the shim, after the runtime's line naming it).
 */
#include <pthread.h>
#include <stdint.h>
#include "check.h"

#define BIG (3u << 20)

static volatile size_t pick = 12345;

static void *big_frame(void *arg)
{
    (void)arg;
    char buf[BIG];
    memset(buf, 1, sizeof buf);
    __asm__ __volatile__("" : : "r"(buf) : "memory");
    return (void *)(uintptr_t)(buf[pick % BIG] == 1);
}

static pthread_mutex_t named = PTHREAD_MUTEX_INITIALIZER;

/* Waits until the creator has named it, then runs the 3 MiB frame. */
static void *jumper(void *arg)
{
    pthread_mutex_lock(&named);
    pthread_mutex_unlock(&named);
    return big_frame(arg);
}

static void *report(void *arg)
{
    pthread_attr_t a;
    void *lo;
    size_t sz = 0;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstack(&a, &lo, &sz);
        pthread_attr_destroy(&a);
    }
    *(size_t *)arg = sz;
    return NULL;
}

/* The stack size a thread created with attr (NULL: none) really has. */
static size_t real_size(const pthread_attr_t *attr)
{
    pthread_t t;
    size_t sz = 0;
    if (pthread_create(&t, attr, report, &sz) != 0)
        return 0;
    pthread_join(t, NULL);
    return sz;
}

/* label: whether a fresh attr's size, the default attr's, and the real
 * stacks of threads with a NULL and with a fresh attr are one size. */
static size_t check_agree(const char *label)
{
    pthread_attr_t a, d;
    size_t fresh = 0, dflt = 0;
    CHECK(pthread_attr_init(&a) == 0);
    CHECK(pthread_attr_getstacksize(&a, &fresh) == 0);
    CHECK(pthread_getattr_default_np(&d) == 0);
    CHECK(pthread_attr_getstacksize(&d, &dflt) == 0);
    pthread_attr_destroy(&d);
    size_t null_real = real_size(NULL), attr_real = real_size(&a);
    pthread_attr_destroy(&a);
    int agree = fresh == dflt && null_real == fresh && attr_real == fresh;
    printf("%s: attr_init, getattr_default_np, NULL attr, fresh attr %s\n", label,
           agree ? "agree" : "differ");
    if (!agree) {
        printf("FAIL %s: attr_init %zu, default_np %zu, NULL attr thread %zu, fresh attr thread %zu\n",
               label, fresh, dflt, null_real, attr_real);
        check_failures++;
    }
    return fresh;
}

static int jump(void)
{
    pthread_attr_t a;
    pthread_t t;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 1u << 20);
    /* Named before it runs the frame: it waits for its name on a mutex
     * the creator holds. */
    pthread_mutex_lock(&named);
    if (pthread_create(&t, &a, jumper, NULL) != 0)
        return 1;
    pthread_setname_np(t, "jumper");
    fflush(stdout);
    pthread_mutex_unlock(&named);
    pthread_join(t, NULL);
    printf("not reached: the 3 MiB frame ran on a 1 MiB stack\n");
    return 3;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "jump"))
        return jump();
    check_start("bigframe");
    size_t dflt = check_agree("default");

    pthread_t t;
    void *ok = NULL;
    if (dflt >= (4u << 20)) {
        EXPECT("3 MiB frame, NULL attr", pthread_create(&t, NULL, big_frame, NULL), 0);
        CHECK(pthread_join(t, &ok) == 0);
        printf("3 MiB frame: %s\n", ok ? "ran" : "wrong contents");
        CHECK(ok);
    } else {
        printf("3 MiB frame: not tried, the default stack is below 4 MiB\n");
    }

    pthread_attr_t a;
    CHECK(pthread_attr_init(&a) == 0);
    CHECK(pthread_attr_setstacksize(&a, 512 * 1024) == 0);
    CHECK(pthread_setattr_default_np(&a) == 0);
    pthread_attr_destroy(&a);
    size_t after = check_agree("after setattr_default_np(512 KiB)");
    printf("default after setattr_default_np: %s\n", after == 512 * 1024 ? "512 KiB" : "other");
    CHECK(after == 512 * 1024);
    return check_end("bigframe");
}
