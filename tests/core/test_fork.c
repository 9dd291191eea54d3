/*
 * test_fork.c -- fork() from a nano-thread: the child gets a working
 * one-VP runtime running the forking nano-thread (issue 4; nthlib/fork.c).
 *
 * Each case starts a runtime in a child (child.h) with other nano-threads
 * running, blocked on a condvar and sleeping, then forks from one of them;
 * the grandchild creates and joins 50 nano-threads, uses a mutex, a
 * condvar, a barrier, a rwlock, a semaphore, a timed wait that times out,
 * a sleep and a blocking read of a pipe while another nano-thread writes
 * it, then exits with a status the forker checks. Two cases fork from a
 * plain pthread beside the runtime (a kernel thread that runs no
 * nano-thread): the child's runtime adopts it as its nano-thread on VP 0.
 */
#include <pthread.h>
#include "child.h"
#include <errno.h>
#include <time.h>

/* TSan kills a child that starts threads after a threaded fork; gcc 12's
 * ASan takes no allocator lock around fork(), so the child's first malloc
 * can wait forever on a lock a parent's thread held (seen: every thread of
 * the child in SizeClassAllocator64::GetFromAllocator). */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SKIP_UNDER_SANITIZER 1
#else
#define SKIP_UNDER_SANITIZER 0
#endif

/* ---- what the grandchild does ---------------------------------------- */

static nth_mutex_t gm;
static nth_cond_t gc;
static nth_barrier_t gb;
static nth_rwlock_t grw;
static nth_sem_t gs;
static long gcount;
static int gready;

static void *add_one(void *arg)
{
    nth_yield();
    nth_mutex_lock(&gm);
    gcount++;
    nth_mutex_unlock(&gm);
    nth_rwlock_rdlock(&grw);
    nth_rwlock_unlock(&grw);
    return (void *)((intptr_t)arg + 1);
}

static void *signal_later(void *arg)
{
    (void)arg;
    nth_sleep_ns(5 * 1000000);
    nth_mutex_lock(&gm);
    gready = 1;
    nth_cond_signal(&gc);
    nth_mutex_unlock(&gm);
    nth_sem_post(&gs);
    return NULL;
}

static void *at_barrier(void *arg)
{
    (void)arg;
    nth_barrier_wait(&gb);
    return NULL;
}

static void *write_later(void *arg)
{
    int fd = (int)(intptr_t)arg;
    nth_sleep_ns(10 * 1000000);
    return (void *)(intptr_t)write(fd, "x", 1);
}

/* The grandchild's work; _exit(0) when all of it worked (CHECK exits 99). */
static void child_work(void)
{
    CHECK_EQ(nth_num_vps(), 1);
    CHECK_EQ(nth_vp_id(), 0);
    CHECK_EQ(nth_mutex_init(&gm, NULL), 0);
    CHECK_EQ(nth_cond_init(&gc, NULL), 0);
    CHECK_EQ(nth_barrier_init(&gb, 2), 0);
    CHECK_EQ(nth_rwlock_init(&grw, NULL), 0);
    CHECK_EQ(nth_sem_init(&gs, 0), 0);

    nth_t t[50];
    for (intptr_t i = 0; i < 50; i++)
        CHECK_EQ(nth_create(&t[i], NULL, add_one, (void *)i), 0);
    for (intptr_t i = 0; i < 50; i++) {
        void *r = NULL;
        CHECK_EQ(nth_join(t[i], &r), 0);
        CHECK(r == (void *)(i + 1));
    }
    CHECK_EQ(gcount, 50);

    /* A condvar wait woken by a nano-thread that slept first. */
    nth_t s;
    CHECK_EQ(nth_create(&s, NULL, signal_later, NULL), 0);
    nth_mutex_lock(&gm);
    while (!gready)
        CHECK_EQ(nth_cond_wait(&gc, &gm), 0);
    /* A timed wait nobody ends. */
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_nsec += 20 * 1000000;
    if (dl.tv_nsec >= 1000000000) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000;
    }
    CHECK_EQ(nth_cond_timedwait(&gc, &gm, &dl), ETIMEDOUT);
    nth_mutex_unlock(&gm);
    CHECK_EQ(nth_sem_wait(&gs), 0);
    CHECK_EQ(nth_join(s, NULL), 0);

    nth_t b;
    CHECK_EQ(nth_create(&b, NULL, at_barrier, NULL), 0);
    int br = nth_barrier_wait(&gb);
    CHECK(br == 0 || br == NTH_BARRIER_SERIAL_THREAD);
    CHECK_EQ(nth_join(b, NULL), 0);

    /* A blocking read with another nano-thread to run meanwhile. */
    int p[2];
    CHECK_EQ(pipe(p), 0);
    nth_t w;
    CHECK_EQ(nth_create(&w, NULL, write_later, (void *)(intptr_t)p[1]), 0);
    char c = 0;
    CHECK_EQ(nth_blocking_enter(), 0);
    ssize_t n = read(p[0], &c, 1);
    nth_blocking_leave();
    CHECK_EQ(n, 1);
    CHECK_EQ(c, 'x');
    void *wr = NULL;
    CHECK_EQ(nth_join(w, &wr), 0);
    CHECK(wr == (void *)1);

    CHECK_EQ(nth_sleep_ns(1000000), 0);
}

/* ---- the parent runtime's nano-threads -------------------------------- */

static nth_mutex_t pm;
static nth_cond_t pc;
static volatile int pdone;

static void *spinner(void *arg)
{
    (void)arg;
    while (!pdone)
        nth_yield();
    return NULL;
}

static void *cond_waiter(void *arg)
{
    (void)arg;
    nth_mutex_lock(&pm);
    while (!pdone)
        nth_cond_wait(&pc, &pm);
    nth_mutex_unlock(&pm);
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    while (!pdone)
        nth_sleep_ns(2 * 1000000);
    return NULL;
}

/* How the forking nano-thread ends the grandchild. */
enum { END_EXIT = 0, END_NTH_EXIT = 1 };

struct fork_case {
    int vp;          /* VP the forker moves to first, -1: stay */
    int end;
    int from_main;   /* fork from main rather than a created nano-thread */
    int traced;      /* the parent runtime records a trace */
    int foreign;     /* fork from a plain pthread, not a nano-thread */
};

static void *forker(void *arg)
{
    struct fork_case *fc = arg;
    if (fc->vp >= 0 && fc->vp < nth_num_vps())
        nth_move_to_vp(fc->vp);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        child_work();
        if (fc->end == END_NTH_EXIT && !fc->from_main)
            nth_exit(NULL);   /* the last thread: the process exits 0 */
        exit(0);
    }
    CHECK(pid > 0);
    int st = 0;
    int on_vp = nth_vp_id() >= 0;   /* not on a plain pthread */
    if (on_vp)
        CHECK_EQ(nth_blocking_enter(), 0);
    pid_t w = waitpid(pid, &st, 0);
    if (on_vp)
        nth_blocking_leave();
    CHECK_EQ(w, pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "grandchild: status %#x\n", st);
        _exit(98);
    }
    return NULL;
}

static char trace_path[64];

static void run_case(void *arg)
{
    struct fork_case *fc = arg;
    if (fc->traced) {
        nth_config_t c;
        nth_config_default(&c);
        c.vps = 2;
        c.trace = trace_path;
        CHECK_EQ(nth_init(&c), 0);
    } else {
        child_init(2);
    }
    nth_mutex_init(&pm, NULL);
    nth_cond_init(&pc, NULL);
    nth_t others[6];
    void *(*fns[3])(void *) = { spinner, cond_waiter, sleeper };
    for (int i = 0; i < 6; i++)
        CHECK_EQ(nth_create(&others[i], NULL, fns[i % 3], NULL), 0);
    nth_yield();
    if (fc->from_main) {
        forker(fc);
    } else if (fc->foreign) {
        pthread_t p;
        CHECK_EQ(pthread_create(&p, NULL, forker, fc), 0);
        CHECK_EQ(pthread_join(p, NULL), 0);
    } else {
        nth_t f;
        CHECK_EQ(nth_create(&f, NULL, forker, fc), 0);
        CHECK_EQ(nth_join(f, NULL), 0);
    }
    pdone = 1;
    nth_mutex_lock(&pm);
    nth_cond_broadcast(&pc);
    nth_mutex_unlock(&pm);
    for (int i = 0; i < 6; i++)
        CHECK_EQ(nth_join(others[i], NULL), 0);
    if (fc->traced)
        exit(0);   /* the trace is written at exit() (run_child would _exit) */
}

static void check_case(struct fork_case *fc)
{
    if (SKIP_UNDER_SANITIZER)
        skip();   /* see SKIP_UNDER_SANITIZER */
    int st = run_child(run_case, fc, NULL, 60);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void fork_from_nano_thread(void **s)
{
    (void)s;
    struct fork_case fc = { -1, END_EXIT, 0, 0, 0 };
    check_case(&fc);
}

static void fork_from_vp1(void **s)
{
    (void)s;
    struct fork_case fc = { 1, END_EXIT, 0, 0, 0 };
    check_case(&fc);
}

static void fork_child_ends_by_nth_exit(void **s)
{
    (void)s;
    struct fork_case fc = { 1, END_NTH_EXIT, 0, 0, 0 };
    check_case(&fc);
}

/* From a plain pthread: before, the child kept the parent's runtime with
 * no VP alive, and its first nth_join hung. Under the pthread shim
 * (nthlib-suite.sh) pthread_create makes a nano-thread: the case is then
 * one more fork from a nano-thread. */
static void fork_from_foreign_thread(void **s)
{
    (void)s;
    struct fork_case fc = { -1, END_EXIT, 0, 0, 1 };
    check_case(&fc);
}

/* The adopted nano-thread ends by nth_exit, the child's last: status 0. */
static void fork_from_foreign_ends_by_nth_exit(void **s)
{
    (void)s;
    struct fork_case fc = { -1, END_NTH_EXIT, 0, 0, 1 };
    check_case(&fc);
}

static void fork_from_main(void **s)
{
    (void)s;
    struct fork_case fc = { -1, END_EXIT, 1, 0, 0 };
    check_case(&fc);
}

/* Traced: the child records nothing (the file is the parent's) and runs
 * as untraced; the parent's trace is still written, by the parent alone. */
static void fork_while_traced(void **s)
{
    (void)s;
    if (SKIP_UNDER_SANITIZER)
        skip();
    snprintf(trace_path, sizeof trace_path, "/tmp/nth-test-fork-%d.bin", (int)getpid());
    unlink(trace_path);
    struct fork_case fc = { 1, END_EXIT, 0, 1, 0 };
    int st = run_child(run_case, &fc, "/dev/null", 60);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    FILE *f = fopen(trace_path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fclose(f);
    unlink(trace_path);
    assert_true(len > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fork_from_nano_thread),
        cmocka_unit_test(fork_from_vp1),
        cmocka_unit_test(fork_child_ends_by_nth_exit),
        cmocka_unit_test(fork_from_main),
        cmocka_unit_test(fork_from_foreign_thread),
        cmocka_unit_test(fork_from_foreign_ends_by_nth_exit),
        cmocka_unit_test(fork_while_traced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
