/*
 * test_client.c -- libnth's cpumgr client alone (no daemon): the public
 * API's standalone semantics, argument checks, NTH_CPUMGR parsing and the
 * assignment callback the runtime will use.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "nth.h"
#include "nth/cpumgr_shm.h"
#include "cpumgr_client.h"
#include "cpumgr_wait.h"
#include "cpumgr_reclaim.h"
#include "cpumgr_request.h"
#include "libc_real.h"
#include <pthread.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

static int affinity_cpus(void)
{
    hwloc_topology_t t;
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    assert_int_equal(hwloc_topology_init(&t), 0);
    assert_int_equal(hwloc_topology_load(t), 0);
    assert_int_equal(hwloc_get_cpubind(t, b, HWLOC_CPUBIND_PROCESS), 0);
    hwloc_bitmap_and(b, b, hwloc_topology_get_allowed_cpuset(t));
    int n = hwloc_bitmap_weight(b);
    hwloc_bitmap_free(b);
    hwloc_topology_destroy(t);
    return n;
}

static int cb_calls, cb_last;
static void cb(hwloc_const_bitmap_t cpus, void *arg)
{
    assert_ptr_equal(arg, &cb_calls);
    cb_calls++;
    cb_last = hwloc_bitmap_weight(cpus);
}

static void test_standalone_off(void **state)
{
    (void)state;
    int aff = affinity_cpus();
    assert_int_equal(nth_cpumgr_client_init("off"), 0);
    assert_int_equal(nth_cpumgr_attached(), 0);
    /* Request defaults to all of the affinity mask. */
    assert_int_equal(nth_cpus_assigned(), aff);
    cb_calls = 0;
    nth_cpumgr_set_assign_callback(cb, &cb_calls);
    assert_int_equal(cb_calls, 1);
    assert_int_equal(cb_last, aff);
    assert_int_equal(nth_cpus_request(1), 0);
    assert_int_equal(nth_cpus_assigned(), 1);
    assert_int_equal(cb_last, 1);
    hwloc_bitmap_t m = NULL;
    assert_int_equal(nth_cpus_assigned_mask(&m), 0);
    assert_int_equal(hwloc_bitmap_weight(m), 1);
    hwloc_bitmap_free(m);
    /* More than the mask holds: capped, not an error. */
    assert_int_equal(nth_cpus_request(1000), 0);
    assert_int_equal(nth_cpus_assigned(), aff);
    assert_int_equal(cb_last, aff);
    nth_cpumgr_client_fini();
}

/* The request rule (cpumgr_request.h): an explicit request wins, capped
 * at the mask; else min(VPs, mask); VPs unknown: the mask. */
static void test_request_rule(void **state)
{
    (void)state;
    static const struct { int request, vps, naff, want; } t[] = {
        { -1, 0, 16, 16 },  /* no runtime yet: the whole mask */
        { -1, 1, 2, 1 },    /* NTH_VPS=1 on 2 CPUs (notes f13t) */
        { -1, 4, 64, 4 },   /* NTH_VPS=4 on 64: not 32 under equipartition */
        { -1, 16, 16, 16 }, /* default VPs (one per CPU): every CPU */
        { -1, 8, 4, 4 },    /* more VPs than CPUs: capped at the mask */
        { 0, 3, 8, 3 },     /* 0 is "not asked" */
        { 6, 2, 8, 6 },     /* explicit: more than the VPs */
        { 1, 8, 8, 1 },     /* explicit: fewer */
        { 100, 2, 8, 8 },   /* explicit: capped at the mask */
        { -1, 2, 0, 0 },    /* empty mask */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int got = nth_cpumgr_request_rule(t[i].request, t[i].vps, t[i].naff);
        if (got != t[i].want)
            fail_msg("request %d, VPs %d, mask %d: %d, want %d", t[i].request, t[i].vps,
                     t[i].naff, got, t[i].want);
    }
}

/* The client with the runtime's VP count: alone, the default request is
 * min(VPs, mask), taken on the VPs' CPUs first; an explicit request still
 * wins (more than the VPs too); VPs unknown again: the whole mask. */
static void test_set_vps_standalone(void **state)
{
    (void)state;
    int aff = affinity_cpus();
    assert_int_equal(nth_cpumgr_client_init("off"), 0);
    assert_int_equal(nth_cpus_assigned(), aff);
    hwloc_bitmap_t all = NULL, pref = hwloc_bitmap_alloc();
    assert_int_equal(nth_cpus_assigned_mask(&all), 0);
    int last = hwloc_bitmap_last(all);
    hwloc_bitmap_only(pref, (unsigned)last);
    cb_calls = 0;
    nth_cpumgr_set_assign_callback(cb, &cb_calls);
    nth_cpumgr_client_set_vps(1, pref);
    assert_int_equal(nth_cpus_assigned(), 1);
    assert_int_equal(cb_last, 1);
    hwloc_bitmap_t m = NULL;
    assert_int_equal(nth_cpus_assigned_mask(&m), 0);
    assert_true(hwloc_bitmap_isequal(m, pref)); /* the VP's CPU, not the first */
    hwloc_bitmap_free(m);
    if (aff >= 2) {
        assert_int_equal(nth_cpus_request(2), 0);
        assert_int_equal(nth_cpus_assigned(), 2);
    }
    assert_int_equal(nth_cpus_request(1000), 0);
    assert_int_equal(nth_cpus_assigned(), aff);
    nth_cpumgr_client_fini();
    assert_int_equal(nth_cpumgr_client_init("off"), 0);
    nth_cpumgr_client_set_vps(0, NULL);
    assert_int_equal(nth_cpus_assigned(), aff);
    nth_cpumgr_client_fini();
    hwloc_bitmap_free(all);
    hwloc_bitmap_free(pref);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    assert_int_equal(nth_cpumgr_client_init("off"), 0);
    assert_int_equal(nth_cpus_request(0), EINVAL);
    assert_int_equal(nth_cpus_request(-3), EINVAL);
    assert_int_equal(nth_cpus_request(100000), EINVAL);
    assert_int_equal(nth_set_priority(0), EINVAL);
    assert_int_equal(nth_set_priority(1001), EINVAL);
    assert_int_equal(nth_set_priority(1000), 0);
    assert_int_equal(nth_cpus_assigned_mask(NULL), EINVAL);
    nth_cpumgr_client_fini();
}

/* No daemon on the segment: the same as off, and poll/tick are harmless. */
static void test_no_daemon(void **state)
{
    (void)state;
    char name[64];
    snprintf(name, sizeof name, "/nth-test-absent-%d", (int)getpid());
    assert_int_equal(nth_cpumgr_client_init(name), 0);
    assert_int_equal(nth_cpumgr_attached(), 0);
    assert_int_equal(nth_cpumgr_poll(), 0);
    assert_int_equal(nth_cpumgr_tick(), 0);
    assert_int_equal(nth_cpus_request(1), 0);
    assert_int_equal(nth_cpus_assigned(), 1);
    nth_cpumgr_client_fini();
}

/* NTH_CPUMGR with a bad value: one line, EINVAL, and the client runs alone. */
static void test_bad_env(void **state)
{
    (void)state;
    setenv("NTH_CPUMGR", "a/b", 1);
    assert_int_equal(nth_cpumgr_client_init(NULL), EINVAL);
    assert_int_equal(nth_cpumgr_attached(), 0);
    assert_int_equal(nth_cpus_assigned(), affinity_cpus());
    nth_cpumgr_client_fini();
    /* Without the leading '/': refused as cpumgr --name refuses it (it
     * was taken silently as "/foo"). */
    setenv("NTH_CPUMGR", "foo", 1);
    assert_int_equal(nth_cpumgr_client_init(NULL), EINVAL);
    assert_int_equal(nth_cpumgr_attached(), 0);
    nth_cpumgr_client_fini();
    unsetenv("NTH_CPUMGR");
    /* Lazy start from the public API with the default name works too. */
    setenv("NTH_CPUMGR", "off", 1);
    assert_int_equal(nth_cpus_assigned(), affinity_cpus());
    nth_cpumgr_client_fini();
    unsetenv("NTH_CPUMGR");
}

/* NTH_RECLAIM_US: default, accepted range, and one line naming the
 * variable for a bad value (the default is kept). */
static int reclaim_env(const char *v, unsigned *out, char *msg, size_t len)
{
    char path[] = "/tmp/nth-reclaim-msg-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    setenv("NTH_RECLAIM_US", v, 1);
    nth_config_t c;
    int rc = nth_config_from_env(&c);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    unsetenv("NTH_RECLAIM_US");
    ssize_t n = pread(fd, msg, len - 1, 0);
    msg[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(path);
    *out = c.reclaim_us;
    return rc;
}

static void test_reclaim_env(void **state)
{
    (void)state;
    nth_config_t c;
    nth_config_default(&c);
    assert_int_equal(c.reclaim_us, 1000);
    char msg[512];
    unsigned v;
    assert_int_equal(reclaim_env("250", &v, msg, sizeof msg), 0);
    assert_int_equal(v, 250);
    assert_string_equal(msg, "");
    assert_int_equal(reclaim_env("0", &v, msg, sizeof msg), 0);
    assert_int_equal(v, 0);
    assert_int_equal(reclaim_env("10000000", &v, msg, sizeof msg), 0);
    assert_int_equal(v, 10000000);
    const char *bad[] = {"abc", "-1", "10000001", "1ms", "+5"};
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(reclaim_env(bad[i], &v, msg, sizeof msg), EINVAL);
        assert_int_equal(v, 1000);
        assert_non_null(strstr(msg, "NTH_RECLAIM_US"));
        assert_non_null(strstr(msg, "0..10000000"));
        assert_non_null(strchr(msg, '\n'));
        assert_ptr_equal(strchr(msg, '\n'), msg + strlen(msg) - 1); /* one line */
    }
    nth_config_default(&c);
    c.reclaim_us = 10000001;
    assert_int_equal(nth_init(&c), EINVAL);
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The watcher's lost wake-up: it read the kick word, found nothing to do,
 * and before it slept a thread kicked it (bumped the kick word and woke
 * it, while nobody slept yet). The sleep must notice that the kick word
 * moved since it was read, though the shared word did not: it returns at
 * once, not at the deadline (the old one-word sleep timed out here). */
static void test_wait_kick_before_sleep(void **state)
{
    (void)state;
    for (int fallback = 0; fallback < 2; fallback++) {
        nth_cpumgr_wait_force_fallback(fallback);
        uint32_t shared = 7;
        int kick = 0;
        int seen_kick = __atomic_load_n(&kick, __ATOMIC_ACQUIRE);
        __atomic_add_fetch(&kick, 1, __ATOMIC_RELEASE); /* the kick, in the window */
        syscall(SYS_futex, &kick, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        assert_int_equal(nth_cpumgr_wait2(&shared, 7, &kick, seen_kick, mono_ns() + 3000000000LL),
                         0);
        /* The same for the shared word moved (a grant published). */
        shared = 8;
        assert_int_equal(nth_cpumgr_wait2(&shared, 7, &kick, 1, mono_ns() + 3000000000LL), 0);
    }
    nth_cpumgr_wait_force_fallback(0);
}

static uint32_t w_shared;
static int w_kick, w_rc = -1, w_done;

/* A kernel thread of libc's (nth_helper_thread_create): under the pthread
 * shim a pthread is a nano-thread, and its futex sleep would hold the only
 * VP. Detached, and awaited through w_done: the shim knows no libc thread
 * to join. */
static void *sleeper(void *arg)
{
    int shared = arg != NULL;
    w_rc = nth_cpumgr_wait2(shared ? &w_shared : NULL, 0, &w_kick, 0, mono_ns() + 20000000000LL);
    __atomic_store_n(&w_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* A sleeping watcher is woken by a kick (private word), and by the daemon's
 * wake of the shared word; with nothing, it times out at the deadline. */
static void test_wait_wakes(void **state)
{
    (void)state;
    struct timespec nap = { 0, 20000000 };
    for (int k = 0; k < 3; k++) {
        pthread_t th;
        w_shared = 0;
        w_kick = 0;
        w_rc = -1;
        w_done = 0;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        assert_int_equal(nth_helper_thread_create(&th, &a, sleeper, k == 2 ? NULL : (void *)1), 0);
        pthread_attr_destroy(&a);
        nanosleep(&nap, NULL); /* likely asleep; if not, the values tell it */
        if (k == 1) {
            __atomic_add_fetch(&w_shared, 1, __ATOMIC_RELEASE);
            syscall(SYS_futex, &w_shared, FUTEX_WAKE, 1, NULL, NULL, 0);
        } else {
            __atomic_add_fetch(&w_kick, 1, __ATOMIC_RELEASE);
            syscall(SYS_futex, &w_kick, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        }
        while (!__atomic_load_n(&w_done, __ATOMIC_ACQUIRE))
            nanosleep(&nap, NULL); /* bounded by the sleeper's 20 s deadline */
        assert_int_equal(w_rc, 0);
    }
    uint32_t shared = 0;
    int kick = 0;
    assert_int_equal(nth_cpumgr_wait2(&shared, 0, &kick, 0, mono_ns() + 20000000), ETIMEDOUT);
    assert_int_equal(nth_cpumgr_wait2(NULL, 0, &kick, 0, mono_ns() + 20000000), ETIMEDOUT);
}

/* ---- the hand-off's wake-ups (nth_cpumgr_handoff, nth/cpumgr_shm.h) ---- */

struct hw_sleeper {
    uint32_t *word;
    int64_t timeout_ns;
    int tid, rc, done; /* rc: 0 woken, else errno (ETIMEDOUT) */
};

static void *hw_sleep(void *arg)
{
    struct hw_sleeper *h = arg;
    __atomic_store_n(&h->tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
    struct timespec ts = { (time_t)(h->timeout_ns / 1000000000), (long)(h->timeout_ns % 1000000000) };
    /* Shared (not private), as the receiver's VPs and watcher sleep. */
    long r = syscall(SYS_futex, h->word, FUTEX_WAIT, __atomic_load_n(h->word, __ATOMIC_ACQUIRE),
                     &ts, NULL, 0);
    h->rc = r == 0 ? 0 : errno;
    __atomic_store_n(&h->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Start h and return once its kernel thread sleeps (state S in /proc):
 * the hand-off bumps no word the aseq sleeper compares, so a wake made
 * before it slept would be lost, and the test would wait for nothing. */
static void hw_start(struct hw_sleeper *h)
{
    pthread_t th;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    assert_int_equal(nth_helper_thread_create(&th, &a, hw_sleep, h), 0);
    pthread_attr_destroy(&a);
    struct timespec nap = { 0, 1000000 };
    for (int i = 0; i < 20000; i++) {
        int tid = __atomic_load_n(&h->tid, __ATOMIC_ACQUIRE);
        char path[64], buf[256] = "";
        snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
        FILE *f = tid ? fopen(path, "r") : NULL;
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = 0;
            char *p = strrchr(buf, ')');
            if (p && p[1] == ' ' && p[2] == 'S')
                return;
        }
        nanosleep(&nap, NULL);
    }
    fail_msg("the sleeper never slept");
}

static void hw_wait(struct hw_sleeper *h)
{
    struct timespec nap = { 0, 1000000 };
    while (!__atomic_load_n(&h->done, __ATOMIC_ACQUIRE))
        nanosleep(&nap, NULL); /* bounded by the sleeper's own timeout */
}

/* A CPU handed to a slot none of whose VPs sleeps on vp_wake (its spare
 * VPs are lazy: they sleep on words of their own) wakes the receiver's
 * watcher on aseq, as the daemon's publish does; with a VP asleep on
 * vp_wake, that VP alone is woken (each wake is a system call on the
 * releaser's path). Without the aseq wake the receiver took the CPU only
 * at its watcher's next tick (bench/RESULTS.md "realloc2"). */
static void test_handoff_wakes_watcher(void **state)
{
    (void)state;
    struct nth_cpumgr_shm *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE,
                                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(s != MAP_FAILED);
    for (int round = 0; round < 2; round++) {
        /* CPU 1, owned by slot 0, armed for slot 1 (what the daemon does). */
        struct nth_cpumgr_cpu *r = &s->cpu[1];
        __atomic_store_n(&r->token, 5u + (uint32_t)round, __ATOMIC_RELEASE);
        __atomic_store_n(&r->owner, 1u, __ATOMIC_RELEASE);
        __atomic_store_n(&r->next_slot, 2u, __ATOMIC_RELEASE);
        uint64_t mask[NTH_CPUMGR_MASK_WORDS] = { UINT64_C(1) << 1 };
        struct hw_sleeper vp = { &s->slots[1].vp_wake, 20000000000LL, 0, -1, 0 };
        /* With a VP there, the watcher must sleep on: a short timeout. */
        struct hw_sleeper watcher = { &s->slots[1].aseq,
                                      round ? 200000000LL : 20000000000LL, 0, -1, 0 };
        if (round)
            hw_start(&vp);
        hw_start(&watcher);
        uint32_t v0 = __atomic_load_n(&s->slots[1].vp_wake, __ATOMIC_RELAXED);
        assert_int_equal(nth_cpumgr_handoff(s, 0, mask), 1);
        assert_int_equal(__atomic_load_n(&r->handed, __ATOMIC_ACQUIRE), 5u + (uint32_t)round);
        assert_int_equal(__atomic_load_n(&s->slots[1].vp_wake, __ATOMIC_RELAXED), v0 + 1);
        hw_wait(&watcher);
        if (round) {
            hw_wait(&vp);
            assert_int_equal(vp.rc, 0);
            assert_int_equal(watcher.rc, ETIMEDOUT);
        } else {
            assert_int_equal(watcher.rc, 0); /* was ETIMEDOUT after 20 s */
        }
    }
    munmap(s, sizeof *s);
}

/* A hand-made segment of a running daemon (ourselves: pid, start time,
 * a fresh heartbeat) in which slot 3 already names this process. */
static char adopt_seg[64];

static int adopt_teardown(void **state)
{
    (void)state;
    nth_cpumgr_client_fini();
    shm_unlink(adopt_seg);
    return 0;
}

static int slots_naming_us(const struct nth_cpumgr_shm *s)
{
    int n = 0;
    for (unsigned i = 0; i < NTH_CPUMGR_MAX_SLOTS; i++)
        n += __atomic_load_n(&s->slots[i].state, __ATOMIC_ACQUIRE) == NTH_CPUMGR_SLOT_ACTIVE &&
             __atomic_load_n(&s->slots[i].pid, __ATOMIC_RELAXED) == getpid();
    return n;
}

/* A client attaching where a slot already names it (pid and start time:
 * one that survived while the client lost track of it) takes that slot
 * back rather than claiming a second one; the daemon would count the
 * process twice (seen: one rt_app pid in two slots, test_runtime). */
static void test_claim_adopts_own_slot(void **state)
{
    (void)state;
    snprintf(adopt_seg, sizeof adopt_seg, "/nth-test-adopt-%d", (int)getpid());
    shm_unlink(adopt_seg);
    int fd = shm_open(adopt_seg, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, sizeof(struct nth_cpumgr_shm)), 0);
    struct nth_cpumgr_shm *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    assert_true(s != MAP_FAILED);
    uint64_t start = nth_cpumgr_proc_start_time(getpid());
    assert_true(start != 0);
    s->magic = NTH_CPUMGR_MAGIC;
    s->layout_version = NTH_CPUMGR_LAYOUT_VERSION;
    s->size = sizeof *s;
    s->max_slots = NTH_CPUMGR_MAX_SLOTS;
    s->ncpus = 1;
    s->cpus[0] = 1;
    s->daemon_pid = getpid();
    s->daemon_start_time = start;
    s->period_ms = 10000; /* the heartbeat below stays fresh for 30 s */
    s->heartbeat_ms = (uint64_t)(mono_ns() / 1000000u);
    struct nth_cpumgr_slot *own = &s->slots[3];
    own->pid = getpid();
    own->start_time = start;
    own->priority = 1;
    own->request = 1;
    __atomic_store_n(&own->state, NTH_CPUMGR_SLOT_ACTIVE, __ATOMIC_RELEASE);
    __atomic_store_n(&s->daemon_state, NTH_CPUMGR_DAEMON_RUNNING, __ATOMIC_RELEASE);
    assert_int_equal(nth_cpumgr_client_init(adopt_seg), 0);
    assert_int_equal(nth_cpumgr_attached(), 1);
    assert_int_equal(slots_naming_us(s), 1);
    assert_int_equal(__atomic_load_n(&s->slots[0].state, __ATOMIC_ACQUIRE), NTH_CPUMGR_SLOT_FREE);
    /* The request goes to the slot taken back; detaching frees it. */
    assert_int_equal(nth_cpus_request(1), 0);
    assert_int_equal(__atomic_load_n(&own->request, __ATOMIC_RELAXED), 1);
    nth_cpumgr_client_fini();
    assert_int_equal(__atomic_load_n(&own->state, __ATOMIC_ACQUIRE), NTH_CPUMGR_SLOT_FREE);
    assert_int_equal(slots_naming_us(s), 0);
    munmap(s, sizeof *s);
}

/* A hand-made segment of a "daemon" that is this process (fresh
 * heartbeat, owns the CPUs of our mask), for the first-answer tests. */
static struct nth_cpumgr_shm *fake_daemon_segment(const char *name)
{
    shm_unlink(name);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, sizeof(struct nth_cpumgr_shm)), 0);
    struct nth_cpumgr_shm *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    assert_true(s != MAP_FAILED);
    uint64_t start = nth_cpumgr_proc_start_time(getpid());
    assert_true(start != 0);
    s->magic = NTH_CPUMGR_MAGIC;
    s->layout_version = NTH_CPUMGR_LAYOUT_VERSION;
    s->size = sizeof *s;
    s->max_slots = NTH_CPUMGR_MAX_SLOTS;
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    for (unsigned c = 0; c < NTH_CPUMGR_MAX_CPUS && c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) {
            nth_cpumgr_mask_set(s->cpus, c);
            s->ncpus++;
        }
    s->daemon_pid = getpid();
    s->daemon_start_time = start;
    s->period_ms = 10000; /* the heartbeat below stays fresh for 30 s */
    s->heartbeat_ms = (uint64_t)(mono_ns() / 1000000u);
    __atomic_store_n(&s->daemon_state, NTH_CPUMGR_DAEMON_RUNNING, __ATOMIC_RELEASE);
    return s;
}

/* The fake daemon's one answer: once a slot names us, give it all the
 * CPUs of our mask but the last one (0 CPUs on a 1-CPU mask: rotated
 * out), so that the answer differs from the standalone count. The delay
 * makes the question come before the answer (the base commit returned
 * the standalone count then); the client's bound is far above it. */
struct answerer {
    struct nth_cpumgr_shm *s;
    int64_t delay_ns;
    int answer;           /* CPUs given */
};

static void *answer_once(void *arg)
{
    struct answerer *a = arg;
    struct nth_cpumgr_slot *sl = NULL;
    while (!sl) {
        for (unsigned i = 0; i < NTH_CPUMGR_MAX_SLOTS && !sl; i++)
            if (__atomic_load_n(&a->s->slots[i].state, __ATOMIC_ACQUIRE) == NTH_CPUMGR_SLOT_ACTIVE &&
                __atomic_load_n(&a->s->slots[i].pid, __ATOMIC_RELAXED) == getpid())
                sl = &a->s->slots[i];
        if (!sl)
            nth_sys_sleep_ns(1000000);
    }
    nth_sys_sleep_ns(a->delay_ns);
    uint64_t m[NTH_CPUMGR_MASK_WORDS] = {0};
    int left = a->answer;
    for (unsigned c = 0; c < NTH_CPUMGR_MAX_CPUS && left > 0; c++)
        if (nth_cpumgr_mask_test(a->s->cpus, c)) {
            nth_cpumgr_mask_set(m, c);
            left--;
        }
    uint32_t q = __atomic_load_n(&sl->aseq, __ATOMIC_RELAXED);
    __atomic_store_n(&sl->aseq, q + 1, __ATOMIC_RELEASE);   /* odd: writing */
    for (unsigned w = 0; w < NTH_CPUMGR_MASK_WORDS; w++)
        __atomic_store_n(&sl->assigned[w], m[w], __ATOMIC_RELEASE);
    __atomic_store_n(&sl->assigned_count, (uint32_t)a->answer, __ATOMIC_RELAXED);
    __atomic_store_n(&sl->aseq, q + 2, __ATOMIC_RELEASE);
    syscall(SYS_futex, &sl->aseq, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
    return NULL;
}

static char first_seg[64];
static struct nth_cpumgr_shm *first_shm;

static int first_teardown(void **state)
{
    (void)state;
    nth_cpumgr_client_fini();
    shm_unlink(first_seg);
    if (first_shm)
        munmap(first_shm, sizeof *first_shm);
    first_shm = NULL;
    return 0;
}

/* Issue 5: the first nth_cpus_assigned() of an application under a
 * running daemon, asked before the daemon's first answer, returned the
 * standalone count (2 on this 2-CPU VM) and then changed (to 1). It now
 * waits (bounded) for that answer: the first value is the daemon's, and
 * so is the mask's. */
static void test_first_count_is_the_daemons(void **state)
{
    (void)state;
    int aff = affinity_cpus();
    snprintf(first_seg, sizeof first_seg, "/nth-test-first-%d", (int)getpid());
    first_shm = fake_daemon_segment(first_seg);
    struct answerer a = { first_shm, 50000000, aff - 1 };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, answer_once, &a), 0);
    assert_int_equal(nth_cpumgr_client_init(first_seg), 0);
    assert_int_equal(nth_cpumgr_attached(), 1);
    int first = nth_cpus_assigned();
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(first, aff - 1);
    assert_int_equal(nth_cpus_assigned(), aff - 1);
    hwloc_bitmap_t m = NULL;
    assert_int_equal(nth_cpus_assigned_mask(&m), 0);
    assert_int_equal(hwloc_bitmap_weight(m), aff - 1);
    hwloc_bitmap_free(m);
}

/* The same for nth_cpus_assigned_mask() as the first question. */
static void test_first_mask_is_the_daemons(void **state)
{
    (void)state;
    int aff = affinity_cpus();
    snprintf(first_seg, sizeof first_seg, "/nth-test-firstm-%d", (int)getpid());
    first_shm = fake_daemon_segment(first_seg);
    struct answerer a = { first_shm, 50000000, aff - 1 };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, answer_once, &a), 0);
    assert_int_equal(nth_cpumgr_client_init(first_seg), 0);
    hwloc_bitmap_t m = NULL;
    assert_int_equal(nth_cpus_assigned_mask(&m), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(hwloc_bitmap_weight(m), aff - 1);
    hwloc_bitmap_free(m);
}

/* A daemon that is alive but never answers: the wait is bounded and the
 * caller gets the standalone count (min(request, mask): the whole mask). */
static void test_first_answer_wait_bounded(void **state)
{
    (void)state;
    int aff = affinity_cpus();
    snprintf(first_seg, sizeof first_seg, "/nth-test-firstb-%d", (int)getpid());
    first_shm = fake_daemon_segment(first_seg);
    assert_int_equal(nth_cpumgr_client_init(first_seg), 0);
    assert_int_equal(nth_cpumgr_attached(), 1);
    assert_int_equal(nth_cpus_assigned(), aff);
    assert_int_equal(nth_cpus_assigned(), aff);
}

/* Bounded reclaim's budget start (cpumgr_reclaim.h), 1 ms budget: the
 * request date while the budget has not run out at the notice; a later
 * notice keeps the daemon's publication date (it restarted at the notice,
 * so a thread noticed 1.5 ms late stayed up to 2.5 ms); a publication
 * date that cannot be this change's falls back to the notice. */
static void test_budget_start_late_notice(void **state)
{
    (void)state;
    const int64_t ms = 1000000, now = 10000 * ms, budget = ms;
    static const struct { int64_t req_ago, pub_ago, want_ago; } t[] = {
        {  300000,  200000,  300000 }, /* in time: the request */
        { 1500000, 1200000, 1200000 }, /* late: the publication, not the notice */
        { 5000000, 4900000, 4900000 }, /* later still: due at once */
        { 1500000,      -1,       0 }, /* no publication date */
        { 1500000, -500000,       0 }, /* one in the future */
        { 1500000, 2000000000,    0 }, /* one 2 s old: stale (re-attach) */
        {      -1,  400000,  400000 }, /* no request date: the publication */
        {       0,       0,       0 }, /* noticed at once */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int64_t req = t[i].req_ago < 0 ? 0 : now - t[i].req_ago;
        int64_t pub = t[i].pub_ago == -1 ? 0 : now - t[i].pub_ago;
        int64_t got = nth_cpumgr_budget_start(now, req, pub, budget);
        if (got != now - t[i].want_ago)
            fail_msg("row %zu: budget starts %lld ns before the notice, want %lld", i,
                     (long long)(now - got), (long long)t[i].want_ago);
    }
}

/* Which VP's kernel thread bounded reclaim moves (cpumgr_reclaim.h):
 * besides a disabled VP still running, an enabled VP given another CPU
 * whose thread is still bound to one taken away (its rebind pending until
 * a scheduling point it may never reach) -- that one was left for the
 * daemon's enforcement pass, 2 ms later. */
static void test_overstays(void **state)
{
    (void)state;
    static const struct { int dis, parked, cpu, bound1, ours, self, want; } t[] = {
        { 1, 0, 1, 2, 0, 0, NTH_OVERSTAY_DISABLED }, /* disabled, running */
        { 1, 1, 1, 2, 0, 0, NTH_OVERSTAY_NONE },     /* disabled, parked */
        { 0, 0, 0, 2, 0, 0, NTH_OVERSTAY_REBIND },   /* on CPU 1 (taken), to go to 0 */
        { 0, 0, 0, 2, 0, 1, NTH_OVERSTAY_NONE },     /* the caller's VP: rebinds itself */
        { 0, 1, 0, 2, 0, 0, NTH_OVERSTAY_NONE },     /* parked: binds when it wakes */
        { 0, 0, 0, 2, 1, 0, NTH_OVERSTAY_NONE },     /* CPU 1 still ours */
        { 0, 0, 0, 0, 0, 0, NTH_OVERSTAY_NONE },     /* binding unknown */
        { 0, 0, 1, 2, 0, 0, NTH_OVERSTAY_NONE },     /* bound where it belongs */
        { 0, 0, -1, 2, 0, 0, NTH_OVERSTAY_NONE },    /* no CPU recorded */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int got = nth_cpumgr_overstays(t[i].dis, t[i].parked, t[i].cpu, t[i].bound1, t[i].ours,
                                       t[i].self);
        if (got != t[i].want)
            fail_msg("row %zu: %d, want %d", i, got, t[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_standalone_off),
        cmocka_unit_test(test_request_rule),
        cmocka_unit_test(test_set_vps_standalone),
        cmocka_unit_test(test_budget_start_late_notice),
        cmocka_unit_test(test_overstays),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_no_daemon),
        cmocka_unit_test(test_bad_env),
        cmocka_unit_test(test_reclaim_env),
        cmocka_unit_test(test_wait_kick_before_sleep),
        cmocka_unit_test(test_wait_wakes),
        cmocka_unit_test(test_handoff_wakes_watcher),
        cmocka_unit_test_teardown(test_claim_adopts_own_slot, adopt_teardown),
        cmocka_unit_test_teardown(test_first_count_is_the_daemons, first_teardown),
        cmocka_unit_test_teardown(test_first_mask_is_the_daemons, first_teardown),
        cmocka_unit_test_teardown(test_first_answer_wait_bounded, first_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
