/* Guard page: a nano-thread that overflows its stack kills the process with
 * SIGSEGV after one line on stderr naming it. */
#include "child.h"
#include <signal.h>

static int deep(int n)
{
    volatile char pad[1024];
    pad[0] = (char)n;
    pad[sizeof pad - 1] = (char)n;
    return n > 1000000 ? pad[0] : deep(n + 1) + pad[sizeof pad - 1];
}

static void *overflow(void *a)
{
    (void)a;
    return (void *)(uintptr_t)deep(0);
}

static void c_overflow(void *a)
{
    (void)a;
    child_init(2);
    nth_attr_t attr;
    nth_attr_init(&attr);
    nth_attr_setstacksize(&attr, NTH_STACK_MIN);
    nth_attr_setname(&attr, "deep-diver");
    nth_t t;
    CHECK_EQ(nth_create(&t, &attr, overflow, NULL), 0);
    CHECK_EQ(nth_id(t), 2);
    nth_join(t, NULL);
    fprintf(stderr, "not reached\n");
}

static void test_guard_page(void **s)
{
    (void)s;
    char path[] = "/tmp/nth-overflow-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int st = run_child(c_overflow, NULL, path, 30);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGSEGV);
    char buf[4096] = {0};
    assert_true(pread(fd, buf, sizeof buf - 1, 0) > 0);
    assert_non_null(strstr(buf, "nthlib: stack overflow in nano-thread 2 (deep-diver)\n"));
    assert_null(strstr(buf, "not reached"));
    close(fd);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guard_page),
    };
    child_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
