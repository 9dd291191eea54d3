/*
 * test_ldso_pin.c -- a nano-thread whose kernel thread holds ld.so's load
 * lock (a constructor run by dlopen(3p), a destructor run by dlclose(3p))
 * stays on that kernel thread through nth_join, nth_sleep_ns and
 * nth_yield, nth_move_to_vp refuses to move it (EAGAIN), and the
 * nano-threads of its VP run meanwhile on another kernel thread (a
 * stand-in), never on the lock's owner; after each call ld.so's lock is
 * free again (dlsym, a second dlopen and dlclose return). Before
 * nthlib/ldso_lock.c the join resumed the constructor on the VP its child
 * ended on (the exit hands the VP to a blocked joiner), and ld.so's unlock
 * from there left the lock held: the next dlsym waited for ever. Also
 * with the runtime started lazily inside the first constructor; and with
 * a nano-thread on the other VP calling dlsym meanwhile (it waits in the
 * kernel for the lock, and the constructor's sleeps must end without
 * that VP firing their alarms).
 */
#include "child.h"
#include <errno.h>
#include <limits.h>
#include <sys/syscall.h>

static int body_calls;
static int witness_tid;

static int ktid(void)
{
    return (int)syscall(SYS_gettid);
}

static int other_vp;

/* Ends on the other VP after the joiner has blocked, most of the time:
 * the exit's hand-over of that VP to the blocked joiner is the path that
 * moved the joiner there. */
static void *napper(void *arg)
{
    nth_sleep_ns(2000000);
    (void)nth_move_to_vp(other_vp);
    return arg;
}

static void *witness(void *arg)
{
    (void)arg;
    __atomic_store_n(&witness_tid, ktid(), __ATOMIC_RELEASE);
    return NULL;
}

/* Called by the library's constructor and destructor (ldso_pin_lib.c). */
void ldso_pin_body(void);
void ldso_pin_body(void)
{
    CHECK_EQ(nth_num_vps(), 2);          /* starts a lazy runtime here */
    int me = ktid(), vp = nth_vp_id();
    int other = vp == 0 ? 1 : 0;
    CHECK(vp >= 0);
    other_vp = other;
    /* Ready on our own VP while we wait: a stand-in runs it. */
    nth_attr_t wa;
    nth_attr_init(&wa);
    nth_attr_setvp(&wa, vp);
    nth_t w;
    __atomic_store_n(&witness_tid, 0, __ATOMIC_RELAXED);
    CHECK_EQ(nth_create(&w, &wa, witness, NULL), 0);
    for (long i = 0; i < 5; i++) {
        nth_attr_t a;
        nth_attr_init(&a);
        nth_attr_setvp(&a, other);
        nth_t t;
        void *r = NULL;
        CHECK_EQ(nth_create(&t, &a, napper, (void *)i), 0);
        CHECK_EQ(nth_join(t, &r), 0);
        CHECK_EQ((long)r, i);
        CHECK_EQ(ktid(), me);
        CHECK_EQ(nth_sleep_ns(100000), 0);
        CHECK_EQ(ktid(), me);
        CHECK_EQ(nth_yield(), 0);
        CHECK_EQ(ktid(), me);
    }
    CHECK_EQ(nth_join(w, NULL), 0);
    CHECK(__atomic_load_n(&witness_tid, __ATOMIC_ACQUIRE) != 0);
    CHECK(__atomic_load_n(&witness_tid, __ATOMIC_ACQUIRE) != me);
    CHECK_EQ(nth_move_to_vp(other), EAGAIN);
    CHECK_EQ(ktid(), me);
    body_calls++;
}

/* On the other VP while the library loads: its dlsym waits in the kernel
 * for ld.so's lock whenever a constructor or destructor holds it, so
 * that VP fires no alarm meanwhile (a pinned sleep must still end). */
static int stop_probing;
static void *prober(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&stop_probing, __ATOMIC_ACQUIRE)) {
        CHECK(dlsym(RTLD_DEFAULT, "nth_self") != NULL);
        nth_yield();
    }
    return NULL;
}

/* arg non-NULL: the runtime starts lazily, in the first constructor,
 * with ld.so's load lock held (nthlib/ldso_lock.c must find the locks
 * then too); else before the first dlopen. */
static void open_close(void *arg)
{
    if (arg)
        setenv("NTH_VPS", "2", 1);
    else
        child_init(2);
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 64);
    CHECK(n > 0);
    path[n] = '\0';
    strcpy(strrchr(path, '/') + 1, ".libs/libldso_pin.so");
    nth_t p = NULL;
    if (!arg) {
        nth_attr_t a;
        nth_attr_init(&a);
        nth_attr_setvp(&a, 1);
        CHECK_EQ(nth_create(&p, &a, prober, NULL), 0);
    }
    for (int round = 0; round < 3; round++) {
        void *h = dlopen(path, RTLD_NOW);
        if (!h)
            fprintf(stderr, "dlopen: %s\n", dlerror());
        CHECK(h != NULL);
        CHECK_EQ(body_calls, 2 * round + 1);
        CHECK(dlsym(h, "ldso_pin_marker") != NULL);   /* the lock is free */
        CHECK_EQ(dlclose(h), 0);
        CHECK_EQ(body_calls, 2 * round + 2);
        CHECK(dlsym(RTLD_DEFAULT, "nth_self") != NULL);
    }
    __atomic_store_n(&stop_probing, 1, __ATOMIC_RELEASE);
    if (p)
        CHECK_EQ(nth_join(p, NULL), 0);
}

static void test_ctor_dtor_stay_on_lock_owner(void **state)
{
    (void)state;
    assert_child_ok(open_close, NULL);
}

static void test_runtime_started_in_ctor(void **state)
{
    (void)state;
    assert_child_ok(open_close, "lazy");
}

int main(void)
{
    child_filter();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctor_dtor_stay_on_lock_owner),
        cmocka_unit_test(test_runtime_started_in_ctor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
