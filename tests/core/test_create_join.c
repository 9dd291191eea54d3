/* Create/join of 1, 1 000 and 100 000 nano-threads; attributes; ids; names;
 * detach; main returning while nano-threads exist. */
#include "child.h"
#include "internal.h"
#include <errno.h>
#include <fenv.h>

static void *add_one(void *a)
{
    return (void *)((uintptr_t)a + 1);
}

static void create_join(int n, size_t stack)
{
    nth_t *t = calloc((size_t)n, sizeof(*t));
    CHECK(t != NULL);
    nth_attr_t attr;
    CHECK_EQ(nth_attr_init(&attr), 0);
    if (stack)
        CHECK_EQ(nth_attr_setstacksize(&attr, stack), 0);
    for (int i = 0; i < n; i++)
        CHECK_EQ(nth_create(&t[i], &attr, add_one, (void *)(uintptr_t)(i * 3)), 0);
    for (int i = 0; i < n; i++) {
        void *r = NULL;
        CHECK_EQ(nth_join(t[i], &r), 0);
        CHECK_EQ((uintptr_t)r, (uintptr_t)(i * 3 + 1));
    }
    free(t);
}

static void create_join_n(unsigned vps, int n, size_t stack)
{
    child_init(vps);
    create_join(n, stack);
}

static void c_one(void *a) { (void)a; create_join_n(1, 1, 0); }
static void c_thousand(void *a) { (void)a; create_join_n(2, 1000, 0); }
#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer's fibers cost milliseconds each: 100 000 take an hour. */
enum { MANY = 2000 };
#else
enum { MANY = 100000 };
#endif
/* Two mappings per stack when guard regions are unavailable (kernel before
 * 6.13, or an emulator such as qemu-user that ignores the advice): then
 * 100 000 stacks need vm.max_map_count above 200 000, which the README
 * documents; below it nth_create returns EAGAIN by design. */
static int map_count_too_low(void)
{
    long max = 0;
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    if (f) {
        if (fscanf(f, "%ld", &max) != 1)
            max = 0;
        fclose(f);
    }
    return max < 2L * MANY + 10000;
}

static void c_hundred_k(void *a)
{
    (void)a;
    child_init(2);
    create_join(1, NTH_STACK_MIN);        /* sets the guard mode */
    if (!nth_guard_uses_madvise() && map_count_too_low())
        CHILD_SKIP("no guard regions and vm.max_map_count < 210000");
    create_join(MANY, NTH_STACK_MIN);
}

static void test_create_join_1(void **s) { (void)s; assert_child_ok(c_one, NULL); }
static void test_create_join_1000(void **s) { (void)s; assert_child_ok(c_thousand, NULL); }
static void test_create_join_100000(void **s) { (void)s; assert_child_ok(c_hundred_k, NULL); }

/* ---- ids, names, attributes ---------------------------------------------- */

static void *report_self(void *a)
{
    nth_t *out = a;
    *out = nth_self();
    return NULL;
}

static void c_identity(void *a)
{
    (void)a;
    child_init(2);
    nth_t me = nth_self();
    CHECK(me != NULL);
    CHECK_EQ(nth_id(me), 1);
    char buf[NTH_NAME_MAX];
    CHECK_EQ(nth_getname(me, buf, sizeof buf), 0);
    CHECK(strcmp(buf, "main") == 0);
    CHECK(nth_vp_id() >= 0 && nth_vp_id() < nth_num_vps());
    CHECK_EQ(nth_num_vps(), 2);

    nth_attr_t attr;
    nth_attr_init(&attr);
    CHECK_EQ(nth_attr_setname(&attr, "a-rather-long-name-that-is-over-thirty-two-bytes"), 0);
    CHECK_EQ(nth_attr_setvp(&attr, 1), 0);
    nth_t t, seen = NULL;
    CHECK_EQ(nth_create(&t, &attr, report_self, &seen), 0);
    CHECK_EQ(nth_getname(t, buf, sizeof buf), 0);
    CHECK_EQ(strlen(buf), NTH_NAME_MAX - 1);
    CHECK_EQ(nth_getname(t, buf, 4), ERANGE);
    /* (NULL, 0) is too small, as glibc's pthread_getname_np: ERANGE. */
    CHECK_EQ(nth_getname(t, NULL, 0), ERANGE);
    CHECK_EQ(nth_getname(t, NULL, sizeof buf), EINVAL);
    CHECK_EQ(nth_setname(t, "worker"), 0);
    CHECK_EQ(nth_getname(t, buf, sizeof buf), 0);
    CHECK(strcmp(buf, "worker") == 0);
    uint64_t id = nth_id(t);
    CHECK(id > 1);
    CHECK_EQ(nth_join(t, NULL), 0);
    CHECK(nth_equal(seen, t));
    CHECK(!nth_equal(seen, me));
    /* ids are never reused, even when the descriptor is. */
    nth_t u;
    CHECK_EQ(nth_create(&u, NULL, report_self, &seen), 0);
    CHECK(nth_id(u) > id);
    CHECK_EQ(nth_join(u, NULL), 0);
    size_t sz;
    int d, vp;
    nth_attr_init(&attr);
    CHECK_EQ(nth_attr_setstacksize(&attr, 128 * 1024), 0);
    CHECK_EQ(nth_attr_getstacksize(&attr, &sz), 0);
    CHECK_EQ(sz, 128 * 1024);
    CHECK_EQ(nth_attr_setdetached(&attr, 1), 0);
    CHECK_EQ(nth_attr_getdetached(&attr, &d), 0);
    CHECK_EQ(d, 1);
    CHECK_EQ(nth_attr_getvp(&attr, &vp), 0);
    CHECK_EQ(vp, NTH_VP_ANY);
}

static void test_identity(void **s) { (void)s; assert_child_ok(c_identity, NULL); }

/* Ids come from per-VP blocks: creators on both VPs, across several block
 * boundaries, must still never see the same id twice. */
enum { ID_CREATORS = 4, ID_EACH = 2500 };
static uint64_t ids[ID_CREATORS][ID_EACH];

static void *nothing(void *a) { return a; }

static void *id_creator(void *a)
{
    uint64_t *out = a;
    for (int i = 0; i < ID_EACH; i++) {
        nth_t t;
        CHECK_EQ(nth_create(&t, NULL, nothing, NULL), 0);
        out[i] = nth_id(t);
        CHECK_EQ(nth_join(t, NULL), 0);
        if (i % 100 == 0)
            nth_yield();
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void c_ids_unique(void *a)
{
    (void)a;
    child_init(2);
    nth_t c[ID_CREATORS];
    for (int k = 0; k < ID_CREATORS; k++) {
        nth_attr_t attr;
        CHECK_EQ(nth_attr_init(&attr), 0);
        CHECK_EQ(nth_attr_setvp(&attr, k % 2), 0);
        CHECK_EQ(nth_create(&c[k], &attr, id_creator, ids[k]), 0);
    }
    for (int k = 0; k < ID_CREATORS; k++)
        CHECK_EQ(nth_join(c[k], NULL), 0);
    uint64_t *all = &ids[0][0];
    size_t n = (size_t)ID_CREATORS * ID_EACH;
    qsort(all, n, sizeof(*all), cmp_u64);
    CHECK(all[0] > 1);                  /* 0 is "unknown", 1 is main */
    for (size_t i = 1; i < n; i++)
        CHECK(all[i] != all[i - 1]);
}

static void test_ids_unique(void **s) { (void)s; assert_child_ok(c_ids_unique, NULL); }

/* ---- caller-provided stacks ----------------------------------------------- */

static char *ustack_lo, *ustack_hi;

static void *where_am_i(void *a)
{
    (void)a;
    volatile char local = 0;
    char *p = (char *)&local;
    nth_yield();                 /* and still there after a switch */
    return (void *)(uintptr_t)(p >= ustack_lo && p < ustack_hi);
}

static void c_user_stack(void *a)
{
    (void)a;
    child_init(2);
    enum { SZ = 64 * 1024 };
    char *mem = aligned_alloc(64, SZ);
    CHECK(mem != NULL);
    nth_attr_t attr;
    CHECK_EQ(nth_attr_init(&attr), 0);
    CHECK_EQ(nth_attr_setstack(NULL, mem, SZ), EINVAL);
    CHECK_EQ(nth_attr_setstack(&attr, NULL, SZ), EINVAL);
    CHECK_EQ(nth_attr_setstack(&attr, mem, NTH_STACK_MIN - 1), EINVAL);
    void *got = mem;
    size_t gsz = 1;
    CHECK_EQ(nth_attr_getstack(&attr, &got, &gsz), 0);
    CHECK(got == NULL);           /* none set yet */
    CHECK_EQ(nth_attr_setstack(&attr, mem, SZ), 0);
    CHECK_EQ(nth_attr_getstack(&attr, &got, &gsz), 0);
    CHECK(got == mem && gsz == SZ);
    ustack_lo = mem;
    ustack_hi = mem + SZ;
    for (int i = 0; i < 50; i++) {
        nth_t t;
        void *r = NULL;
        CHECK_EQ(nth_create(&t, &attr, where_am_i, NULL), 0);
        CHECK_EQ(nth_join(t, &r), 0);
        CHECK_EQ((uintptr_t)r, 1);
    }
    /* The units that held those descriptors get their own stacks back:
     * threads of the smallest class never run on the caller's memory. */
    nth_attr_t small;
    CHECK_EQ(nth_attr_init(&small), 0);
    CHECK_EQ(nth_attr_setstacksize(&small, NTH_STACK_MIN), 0);
    for (int i = 0; i < 50; i++) {
        nth_t t;
        void *r = NULL;
        CHECK_EQ(nth_create(&t, &small, where_am_i, NULL), 0);
        CHECK_EQ(nth_join(t, &r), 0);
        CHECK_EQ((uintptr_t)r, 0);
    }
    free(mem);
}

static void test_user_stack(void **s) { (void)s; assert_child_ok(c_user_stack, NULL); }

/* ---- nth_getstack: the range a nano-thread really runs on ----------------- */

static void *in_own_stack(void *a)
{
    (void)a;
    void *lo = NULL;
    size_t bytes = 0, guard = 1;
    CHECK_EQ(nth_getstack(nth_self(), &lo, &bytes, &guard), 0);
    char here;
    char *p = &here;
    /* A stack scanner (a GC, pthread_getattr_np's users) trusts that every
     * local of the thread lies inside [lo, lo+bytes). */
    int ok = p >= (char *)lo && p < (char *)lo + bytes;
    return (void *)(uintptr_t)(ok ? guard : (size_t)-1);
}

static void c_getstack(void *a)
{
    (void)a;
    child_init(2);
    void *lo;
    size_t bytes, guard;
    CHECK_EQ(nth_getstack(nth_self(), NULL, &bytes, &guard), EINVAL);
    CHECK_EQ(nth_getstack(nth_self(), &lo, NULL, &guard), EINVAL);
    CHECK_EQ(nth_getstack(nth_self(), &lo, &bytes, NULL), EINVAL);
    /* main runs on its kernel thread's own stack: not ours to report */
    CHECK_EQ(nth_getstack(nth_self(), &lo, &bytes, &guard), EINVAL);
    CHECK_EQ(nth_getstack((nth_t)&lo, &lo, &bytes, &guard), EINVAL);

    const size_t sizes[] = { NTH_STACK_MIN, 256 * 1024, 4u << 20 };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        nth_attr_t attr;
        CHECK_EQ(nth_attr_init(&attr), 0);
        CHECK_EQ(nth_attr_setstacksize(&attr, sizes[i]), 0);
        nth_t t;
        CHECK_EQ(nth_create(&t, &attr, in_own_stack, NULL), 0);
        void *r = NULL;
        CHECK_EQ(nth_join(t, &r), 0);
        CHECK_EQ((uintptr_t)r, (uintptr_t)nth_page_size());
    }
    /* a caller's stack: reported as given, no guard */
    enum { SZ = 64 * 1024 };
    char *mem = aligned_alloc(64, SZ);
    CHECK(mem != NULL);
    nth_attr_t attr;
    CHECK_EQ(nth_attr_init(&attr), 0);
    CHECK_EQ(nth_attr_setstack(&attr, mem, SZ), 0);
    nth_t t;
    CHECK_EQ(nth_create(&t, &attr, in_own_stack, NULL), 0);
    void *r = NULL;
    CHECK_EQ(nth_join(t, &r), 0);
    CHECK_EQ((uintptr_t)r, 0);
    free(mem);
}

static void test_getstack(void **s) { (void)s; assert_child_ok(c_getstack, NULL); }

/* ---- guard size (nth_attr_setguardsize) ------------------------------------ */

/* The guard asked for, rounded up to pages, lies just below the stack
 * (nth_getstack reports it, the overflow handler finds its owner there);
 * 0 means none. A caller's stack gets none whatever was asked. */
static void *guard_report(void *a)
{
    (void)a;
    void *lo;
    size_t bytes, guard;
    if (nth_getstack(nth_self(), &lo, &bytes, &guard) != 0)
        return (void *)(uintptr_t)-1;
    char *l = lo;
    if (guard && (nth_guard_owner(l - 1) != nth_self() ||
                  nth_guard_owner(l - guard) != nth_self()))
        return (void *)(uintptr_t)-2;
    if (nth_guard_owner(l) != NULL)
        return (void *)(uintptr_t)-3;
    return (void *)(uintptr_t)guard;
}

static size_t run_with_guard(size_t stack, size_t guard, int set)
{
    nth_attr_t attr;
    CHECK_EQ(nth_attr_init(&attr), 0);
    CHECK_EQ(nth_attr_setstacksize(&attr, stack), 0);
    if (set)
        CHECK_EQ(nth_attr_setguardsize(&attr, guard), 0);
    nth_t t;
    CHECK_EQ(nth_create(&t, &attr, guard_report, NULL), 0);
    void *r = NULL;
    CHECK_EQ(nth_join(t, &r), 0);
    return (size_t)(uintptr_t)r;
}

static void c_guardsize(void *a)
{
    (void)a;
    child_init(2);
    size_t pg = nth_page_size(), g = 7;
    nth_attr_t attr;
    CHECK_EQ(nth_attr_init(&attr), 0);
    CHECK_EQ(nth_attr_getguardsize(&attr, &g), 0);
    CHECK_EQ(g, pg);                                /* the default */
    CHECK_EQ(nth_attr_setguardsize(NULL, 0), EINVAL);
    CHECK_EQ(nth_attr_getguardsize(NULL, &g), EINVAL);
    CHECK_EQ(nth_attr_getguardsize(&attr, NULL), EINVAL);
    CHECK_EQ(nth_attr_setguardsize(&attr, ((size_t)1 << 30) + 1), EINVAL);
    CHECK_EQ(nth_attr_setguardsize(&attr, 1), 0);
    CHECK_EQ(nth_attr_getguardsize(&attr, &g), 0);
    CHECK_EQ(g, 1);                                 /* as set, unrounded */

    for (int round = 0; round < 2; round++) {       /* the second reuses units */
        CHECK_EQ(run_with_guard(64 * 1024, 0, 1), 0);
        CHECK_EQ(run_with_guard(64 * 1024, 1, 1), pg);
        CHECK_EQ(run_with_guard(64 * 1024, pg, 1), pg);
        CHECK_EQ(run_with_guard(64 * 1024, 64 * 1024, 1), 64 * 1024);
        CHECK_EQ(run_with_guard(64 * 1024, 0, 0), pg);  /* not set: a page */
    }
    /* a caller's stack: the guard size is ignored */
    enum { SZ = 64 * 1024 };
    char *mem = aligned_alloc(64, SZ);
    CHECK(mem != NULL);
    CHECK_EQ(nth_attr_init(&attr), 0);
    CHECK_EQ(nth_attr_setstack(&attr, mem, SZ), 0);
    CHECK_EQ(nth_attr_setguardsize(&attr, 64 * 1024), 0);
    nth_t t;
    CHECK_EQ(nth_create(&t, &attr, guard_report, NULL), 0);
    void *r = NULL;
    CHECK_EQ(nth_join(t, &r), 0);
    CHECK_EQ((uintptr_t)r, 0);
    free(mem);
}

static void test_guardsize(void **s) { (void)s; assert_child_ok(c_guardsize, NULL); }

/* ---- join of the head of the joiner's own queue (direct switch) ------------ */

/* nth_join of a nano-thread waiting at the head of the joiner's own local
 * queue (create then join) switches to it at once: the joiner stays RUNNING
 * in no queue, registered with NTH_J_DIRECT, and the exit resumes it. What
 * the joined one may do meanwhile must work as on the general path: block
 * and be woken, yield, create and join in turn, end with nth_exit from deep
 * inside, be refused detach and a second join, move to another VP. */

static struct nth_thread *direct_joiner;
static nth_t direct_self;
static int direct_flag, direct_seen;

static void *wake_later(void *a)
{
    (void)a;
    __atomic_store_n(&direct_flag, 1, __ATOMIC_SEQ_CST);
    CHECK_EQ(nth_to_rq(direct_self), 0);
    return NULL;
}

static void *second_join(void *a)
{
    CHECK_EQ(nth_join((nth_t)a, NULL), EINVAL);   /* another one joins it */
    return NULL;
}

static __attribute__((noinline)) void exit_inner(void)
{
    nth_exit((void *)(uintptr_t)42);
}

static __attribute__((noinline)) void exit_outer(void)
{
    volatile char frame[128];           /* a frame of its own below ours */
    frame[0] = 1;
    exit_inner();
    frame[1] = frame[0];
}

static void *direct_child(void *a)
{
    struct nth_thread *me = nth_self();
    uintptr_t j = __atomic_load_n(&me->jstate, __ATOMIC_ACQUIRE);
    direct_seen = j == ((uintptr_t)direct_joiner | NTH_J_DIRECT) &&
                  (__atomic_load_n(&direct_joiner->state, __ATOMIC_ACQUIRE) & NTH_ST_MASK) ==
                      NTH_ST_RUNNING;
    /* With two VPs a thief may have started us before the joiner's nth_join
     * registered; the checks below are about a joined thread, so wait for
     * the join (CI saw detach succeed here under ASan on a loaded machine). */
    while (__atomic_load_n(&me->jstate, __ATOMIC_ACQUIRE) == NTH_J_JOINABLE)
        CHECK_EQ(nth_yield(), 0);
    CHECK_EQ(nth_detach(me), EINVAL);             /* being joined */
    nth_t t;
    CHECK_EQ(nth_create(&t, NULL, second_join, me), 0);
    CHECK_EQ(nth_join(t, NULL), 0);               /* nested: also direct */
    CHECK_EQ(nth_create(&t, NULL, add_one, (void *)(uintptr_t)6), 0);
    void *r = NULL;
    CHECK_EQ(nth_join(t, &r), 0);
    CHECK_EQ((uintptr_t)r, 7);
    CHECK_EQ(nth_yield(), 0);
    /* Block; a nano-thread that runs meanwhile wakes us. */
    direct_self = me;
    CHECK_EQ(nth_create(&t, NULL, wake_later, NULL), 0);
    CHECK_EQ(nth_detach(t), 0);
    while (!__atomic_load_n(&direct_flag, __ATOMIC_SEQ_CST))
        nth_wait();
    if (a) {
        int m = nth_move_to_vp(1);             /* exit on the other VP */
        /* EAGAIN: VP 1's kernel thread woke later than the thieves' grace
         * time (a loaded machine) and VP 0 took us back. */
        CHECK(m == 0 || m == EAGAIN);
    }
    exit_outer();
    return NULL;
}

static void join_direct_case(unsigned vps)
{
    nth_config_t c;
    nth_config_default(&c);
    c.vps = vps;
    c.stall_us = 0;            /* no stand-in takes the queue's head meanwhile */
    CHECK_EQ(nth_init(&c), 0);
    for (int i = 0; i < 3; i++) {
        direct_joiner = nth_self();
        direct_flag = 0;
        direct_seen = 0;
        nth_t t;
        CHECK_EQ(nth_create(&t, NULL, direct_child, vps > 1 ? (void *)1 : NULL), 0);
        void *r = NULL;
        CHECK_EQ(nth_join(t, &r), 0);
        CHECK_EQ((uintptr_t)r, 42);
        CHECK_EQ(nth_join(t, NULL), ESRCH);       /* reaped */
        /* One VP: nothing can take the child first, so the direct path ran.
         * Two: a thief may take it after its grace time (a loaded machine). */
        if (vps == 1)
            CHECK(direct_seen);
    }
}

static void c_join_direct_1vp(void *a) { (void)a; join_direct_case(1); }
static void c_join_direct_2vp(void *a) { (void)a; join_direct_case(2); }
static void test_join_direct_1vp(void **s) { (void)s; assert_child_ok(c_join_direct_1vp, NULL); }
static void test_join_direct_2vp(void **s) { (void)s; assert_child_ok(c_join_direct_2vp, NULL); }

/* ---- the direct join's call (nano_thread.c, call_child) ------------------- */

/* A fresh nano-thread taken by the direct join runs as a function call on
 * its own stack, not through two switches. It must still be itself (its
 * handle from nth_self(), its own stack: its size and guard page), and the
 * joiner must get back its errno and FP control state whether the child
 * returns (the call's return) or calls nth_exit (a jump out of the call).
 * nth_vp_ncalled says the call ran: always where there is one (x86-64),
 * but under a sanitizer or valgrind, which keep the switches for their
 * stack annotations. */
static nth_t called_handle;
static int called_ok;

static void *called_child(void *a)
{
    struct nth_thread *me = nth_self();
    volatile char here = 0;
    called_ok = me == called_handle && (const char *)&here >= me->stack_lo &&
                (const char *)&here < me->stack_lo + me->stack_size && here == 0;
    errno = 77;
    CHECK_EQ(fesetround(FE_UPWARD), 0);
    if (a)
        exit_inner();                   /* nth_exit(42) */
    return (void *)(uintptr_t)1;
}

static void c_join_called(void *a)
{
    (void)a;
    nth_config_t c;
    nth_config_default(&c);
    c.vps = 1;
    c.stall_us = 0;            /* no stand-in takes the queue's head meanwhile */
    CHECK_EQ(nth_init(&c), 0);
    for (int i = 0; i < 4; i++) {
        uint64_t n0 = nth_vp_ncalled(0);
        CHECK_EQ(fesetround(FE_DOWNWARD), 0);
        nth_t t;
        CHECK_EQ(nth_create(&t, NULL, called_child, (void *)(uintptr_t)(i & 1)), 0);
        called_handle = t;
        called_ok = 0;
        void *r = NULL;
        errno = 5;
        int jr = nth_join(t, &r);
        int e = errno;
        int mode = fegetround();
        CHECK_EQ(jr, 0);
        CHECK_EQ(e, 5);
        CHECK_EQ(mode, FE_DOWNWARD);
        CHECK_EQ((uintptr_t)r, i & 1 ? 42 : 1);
        CHECK(called_ok);
        CHECK_EQ(nth_join(t, NULL), ESRCH);       /* reaped */
#ifdef NTH_CTX_HAVE_CALL
        if (__atomic_load_n(&nth_tool_active, __ATOMIC_RELAXED) == 0)
            CHECK_EQ(nth_vp_ncalled(0), n0 + 1);
#else
        (void)n0;                       /* no call there: always the switch */
#endif
    }
    CHECK_EQ(fesetround(FE_TONEAREST), 0);
}

static void test_join_called(void **s) { (void)s; assert_child_ok(c_join_called, NULL); }

/* ---- detach --------------------------------------------------------------- */

static int detached_done;

static void *count_done(void *a)
{
    (void)a;
    nth_yield();
    __atomic_fetch_add(&detached_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void c_detach(void *a)
{
    (void)a;
    child_init(2);
    nth_attr_t attr;
    nth_attr_init(&attr);
    nth_attr_setdetached(&attr, 1);
    enum { N = 2000 };
    for (int i = 0; i < N; i++) {
        nth_t t;
        if (i % 2) {
            CHECK_EQ(nth_create(&t, &attr, count_done, NULL), 0);
        } else {
            CHECK_EQ(nth_create(&t, NULL, count_done, NULL), 0);
            CHECK_EQ(nth_detach(t), 0);
        }
    }
    while (__atomic_load_n(&detached_done, __ATOMIC_SEQ_CST) != N)
        nth_yield();
}

static void test_detach(void **s) { (void)s; assert_child_ok(c_detach, NULL); }

/* ---- leaving main ----------------------------------------------------------- */

static void *spin_forever(void *a)
{
    (void)a;
    for (;;)
        nth_yield();
    return NULL;
}

static void c_main_returns(void *a)
{
    (void)a;
    child_init(2);
    nth_t t;
    for (int i = 0; i < 4; i++)
        CHECK_EQ(nth_create(&t, NULL, spin_forever, NULL), 0);
    nth_yield();
    exit(7);  /* as returning 7 from main does */
}

static void test_main_returns(void **s)
{
    (void)s;
    int st = run_child(c_main_returns, NULL, NULL, 30);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 7);
}

static int exit_seen;

static void *late_worker(void *a)
{
    (void)a;
    for (int i = 0; i < 100; i++)
        nth_yield();
    if (__atomic_add_fetch(&exit_seen, 1, __ATOMIC_SEQ_CST) == 3) {
        ssize_t w = write(1, "all-workers-done\n", 17);
        (void)w;
    }
    return NULL;
}

static void c_main_nth_exit(void *a)
{
    (void)a;
    child_init(2);
    nth_t t;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(nth_create(&t, NULL, late_worker, NULL), 0);
        CHECK_EQ(nth_detach(t), 0);
    }
    nth_exit(NULL);  /* the others go on; the process exits 0 after them */
}

static void test_main_nth_exit(void **s)
{
    (void)s;
    char path[] = "/tmp/nth-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        dup2(fd, 1);
        alarm(30);
        c_main_nth_exit(NULL);
        _exit(42);  /* not reached */
    }
    int st;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    char buf[64] = {0};
    assert_true(pread(fd, buf, sizeof buf - 1, 0) > 0);
    assert_non_null(strstr(buf, "all-workers-done"));
    close(fd);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_join_1),
        cmocka_unit_test(test_create_join_1000),
        cmocka_unit_test(test_create_join_100000),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_ids_unique),
        cmocka_unit_test(test_join_direct_1vp),
        cmocka_unit_test(test_join_direct_2vp),
        cmocka_unit_test(test_join_called),
        cmocka_unit_test(test_detach),
        cmocka_unit_test(test_user_stack),
        cmocka_unit_test(test_getstack),
        cmocka_unit_test(test_guardsize),
        cmocka_unit_test(test_main_returns),
        cmocka_unit_test(test_main_nth_exit),
    };
    child_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
