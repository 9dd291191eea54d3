/* Every error path of the core API: EAGAIN (address space exhausted, nothing
 * leaked), EINVAL (attributes, joining a detached or already-joined
 * nano-thread, nth_init), EDEADLK (joining self), ESRCH (stale and garbage
 * handles), EBUSY (second nth_init). */
#include "child.h"
#include "internal.h"
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>

static void *noop(void *a) { return a; }

static void *wait_flag(void *a)
{
    int *flag = a;
    while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE))
        nth_wait();
    return NULL;
}

static void *joiner(void *a)
{
    return (void *)(intptr_t)nth_join((nth_t)a, NULL);
}

/* nth_join(NULL) on a VP that has created nothing (its last-created
 * shortcut is NULL): ESRCH, not a NULL dereference. */
static void *join_null(void *a)
{
    (void)a;
    while (nth_move_to_vp(1) != 0)
        ;
    return (void *)(intptr_t)nth_join(NULL, NULL);
}

static void c_attr_einval(void *a)
{
    (void)a;
    child_init(2);
    nth_attr_t attr;
    nth_t t;
    CHECK_EQ(nth_attr_init(NULL), EINVAL);
    CHECK_EQ(nth_attr_init(&attr), 0);
    CHECK_EQ(nth_attr_setstacksize(&attr, NTH_STACK_MIN - 1), EINVAL);
    CHECK_EQ(nth_attr_setstacksize(&attr, ((size_t)1 << 30) + 1), EINVAL);
    CHECK_EQ(nth_attr_setstacksize(NULL, NTH_STACK_MIN), EINVAL);
    CHECK_EQ(nth_attr_setdetached(&attr, 2), EINVAL);
    CHECK_EQ(nth_attr_setvp(&attr, -5), EINVAL);
    CHECK_EQ(nth_attr_setname(&attr, NULL), EINVAL);
    CHECK_EQ(nth_attr_getstacksize(&attr, NULL), EINVAL);
    CHECK_EQ(nth_create(NULL, NULL, noop, NULL), EINVAL);
    CHECK_EQ(nth_create(&t, NULL, NULL, NULL), EINVAL);
    /* Fields set behind the setters' back are checked at creation. */
    nth_attr_init(&attr);
    attr.stack_size = 100;
    CHECK_EQ(nth_create(&t, &attr, noop, NULL), EINVAL);
    nth_attr_init(&attr);
    attr.detached = 7;
    CHECK_EQ(nth_create(&t, &attr, noop, NULL), EINVAL);
    nth_attr_init(&attr);
    CHECK_EQ(nth_attr_setvp(&attr, 2), 0);        /* only 2 VPs: 0 and 1 */
    CHECK_EQ(nth_create(&t, &attr, noop, NULL), EINVAL);
    nth_attr_init(&attr);
    memset(attr.name, 'x', sizeof attr.name);     /* no terminating NUL */
    CHECK_EQ(nth_create(&t, &attr, noop, NULL), EINVAL);
    nth_attr_init(&attr);
    CHECK_EQ(nth_create(&t, &attr, noop, NULL), 0);
    CHECK_EQ(nth_join(t, NULL), 0);
}

static void test_attr_einval(void **s) { (void)s; assert_child_ok(c_attr_einval, NULL); }

static void c_join_errors(void *a)
{
    (void)a;
    child_init(2);
    nth_t t;
    /* One flag per waiter: the detached one may not have seen its flag
     * yet when the second is made (TSan caught a reset racing with it). */
    static int flag, flag2;
    void *r;
    /* First, while VP 1 has created nothing. */
    CHECK_EQ(nth_create(&t, NULL, join_null, NULL), 0);
    CHECK_EQ(nth_join(t, &r), 0);
    CHECK_EQ((intptr_t)r, ESRCH);
    /* EDEADLK: joining oneself. */
    CHECK_EQ(nth_join(nth_self(), NULL), EDEADLK);
    /* EINVAL: joining a detached nano-thread (still alive, blocked). */
    nth_attr_t attr;
    nth_attr_init(&attr);
    nth_attr_setdetached(&attr, 1);
    CHECK_EQ(nth_create(&t, &attr, wait_flag, &flag), 0);
    nth_yield();
    CHECK_EQ(nth_join(t, NULL), EINVAL);
    CHECK_EQ(nth_detach(t), EINVAL);            /* already detached */
    __atomic_store_n(&flag, 1, __ATOMIC_RELEASE);
    CHECK_EQ(nth_to_rq(t), 0);
    /* ESRCH: a joined (stale) handle, and garbage. */
    CHECK_EQ(nth_create(&t, NULL, noop, (void *)5), 0);
    CHECK_EQ(nth_join(t, &r), 0);
    CHECK_EQ((uintptr_t)r, 5);
    CHECK_EQ(nth_join(t, NULL), ESRCH);
    CHECK_EQ(nth_detach(t), ESRCH);
    CHECK_EQ(nth_to_rq(t), ESRCH);
    CHECK_EQ(nth_id(t), 0);
    int local;
    nth_t garbage[] = { NULL, (nth_t)(uintptr_t)1, (nth_t)(uintptr_t)0x1234,
                        (nth_t)&local, (nth_t)&flag, (nth_t)(uintptr_t)~(uintptr_t)0 };
    char buf[NTH_NAME_MAX];
    for (size_t i = 0; i < sizeof garbage / sizeof *garbage; i++) {
        CHECK_EQ(nth_join(garbage[i], NULL), ESRCH);
        CHECK_EQ(nth_detach(garbage[i]), ESRCH);
        CHECK_EQ(nth_to_rq(garbage[i]), ESRCH);
        CHECK_EQ(nth_id(garbage[i]), 0);
        CHECK_EQ(nth_getname(garbage[i], buf, sizeof buf), ESRCH);
        CHECK_EQ(nth_setname(garbage[i], "x"), ESRCH);
    }
    /* A pointer into a live unit but not at its descriptor. */
    CHECK_EQ(nth_create(&t, NULL, wait_flag, &flag2), 0);
    CHECK_EQ(nth_join((nth_t)((char *)t - 64), NULL), ESRCH);
    CHECK_EQ(nth_join((nth_t)((char *)t + 8), NULL), ESRCH);
    /* EINVAL: a second joiner while one waits. */
    nth_t j1;
    CHECK_EQ(nth_create(&j1, NULL, joiner, t), 0);
    while (__atomic_load_n(&((struct nth_thread *)t)->jstate, __ATOMIC_ACQUIRE) <= NTH_J_REAPED)
        nth_yield();                          /* until j1 is registered */
    CHECK_EQ(nth_join(t, NULL), EINVAL);
    __atomic_store_n(&flag2, 1, __ATOMIC_RELEASE);
    CHECK_EQ(nth_to_rq(t), 0);
    CHECK_EQ(nth_join(j1, &r), 0);
    CHECK_EQ((uintptr_t)r, 0);                /* j1's nth_join returned 0 */
}

static void test_join_errors(void **s) { (void)s; assert_child_ok(c_join_errors, NULL); }

static void c_init_errors(void *a)
{
    (void)a;
    nth_config_t c;
    nth_config_default(&c);
    c.vps = 5000;
    CHECK_EQ(nth_init(&c), EINVAL);
    nth_config_default(&c);
    c.stack_size = 1024;
    CHECK_EQ(nth_init(&c), EINVAL);
    nth_config_default(&c);
    c.vps = 1;
    CHECK_EQ(nth_init(&c), 0);
    CHECK_EQ(nth_init(&c), EBUSY);
    CHECK_EQ(nth_num_vps(), 1);
}

static void test_init_errors(void **s) { (void)s; assert_child_ok(c_init_errors, NULL); }

static size_t vm_bytes(void)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    CHECK(f != NULL);
    CHECK_EQ(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    return pages * (size_t)sysconf(_SC_PAGESIZE);
}

enum { MAXT = 100000 };

static void c_eagain(void *a)
{
    (void)a;
    child_init(1);
    static nth_t t[MAXT];
    /* Room for ~64 MiB more address space: stacks run out first. */
    struct rlimit rl = { vm_bytes() + (64u << 20), vm_bytes() + (64u << 20) };
    CHECK_EQ(setrlimit(RLIMIT_AS, &rl), 0);
    /* qemu-user keeps RLIMIT_AS for itself (it would limit the emulator, not
     * the guest): there the limit is never hit and nth_create never fails. */
    void *over = mmap(NULL, 128u << 20, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (over != MAP_FAILED) {
        munmap(over, 128u << 20);
        CHILD_SKIP("RLIMIT_AS is not enforced here");
    }
    int n = 0, r = 0;
    while (n < MAXT && (r = nth_create(&t[n], NULL, noop, (void *)(uintptr_t)n)) == 0)
        n++;
    CHECK_EQ(r, EAGAIN);
    CHECK(n > 0);
    for (int i = 0; i < n; i++) {
        void *v;
        CHECK_EQ(nth_join(t[i], &v), 0);
        CHECK_EQ((uintptr_t)v, (uintptr_t)i);
    }
    /* Nothing leaked: the same number fits again, from the freed units. */
    for (int i = 0; i < n; i++)
        CHECK_EQ(nth_create(&t[i], NULL, noop, NULL), 0);
    for (int i = 0; i < n; i++)
        CHECK_EQ(nth_join(t[i], NULL), 0);
}

static void test_eagain(void **s)
{
    (void)s;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    skip();   /* sanitizers reserve terabytes of address space */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    skip();
#endif
#endif
    assert_child_ok(c_eagain, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attr_einval),
        cmocka_unit_test(test_join_errors),
        cmocka_unit_test(test_init_errors),
        cmocka_unit_test(test_eagain),
    };
    child_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
