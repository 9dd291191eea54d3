/*
 * threads.c -- thread life cycle: create/join/detach/exit (also from main),
 * attributes, self/equal, once, names, yield, concurrency, getattr_np,
 * affinity, tryjoin/timedjoin. Semantics: pthread_create(3p),
 * pthread_join(3p), pthread_exit(3p), pthread_once(3p), pthread_attr_*(3p),
 * and glibc's _np manual pages.
 */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <limits.h>
#include <stdint.h>
#include <sys/wait.h>
#include "check.h"

static void *ret_arg_plus_one(void *arg) { return (void *)((intptr_t)arg + 1); }
static void *ret_self(void *arg) { (void)arg; pthread_t *p = malloc(sizeof *p); *p = pthread_self(); return p; }
static void *exit_with(void *arg) { pthread_exit((void *)((intptr_t)arg * 2)); }

/* A gate: threads wait until main opens it. */
static pthread_mutex_t gate_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_c = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_waiting;
static void *wait_gate(void *arg)
{
    pthread_mutex_lock(&gate_m);
    gate_waiting++;
    pthread_cond_broadcast(&gate_c);
    while (!gate_open)
        pthread_cond_wait(&gate_c, &gate_m);
    pthread_mutex_unlock(&gate_m);
    return arg;
}
static void gate_wait_for(int n)
{
    pthread_mutex_lock(&gate_m);
    while (gate_waiting < n)
        pthread_cond_wait(&gate_c, &gate_m);
    pthread_mutex_unlock(&gate_m);
}
static void gate_set(int open)
{
    pthread_mutex_lock(&gate_m);
    gate_open = open;
    if (!open) gate_waiting = 0;
    pthread_cond_broadcast(&gate_c);
    pthread_mutex_unlock(&gate_m);
}

static char *user_stack_lo, *user_stack_hi;
static void *on_user_stack(void *arg)
{
    char here;
    (void)arg;
    return (void *)(intptr_t)(&here >= user_stack_lo && &here < user_stack_hi);
}

/* pthread_getattr_np's stack for the calling thread, as stack scanners use
 * it (GCs, guard checks): [addr, addr + size) is mapped and holds the
 * caller's locals; arg 1: it is exactly the pthread_attr_setstack stack;
 * arg 0: a default stack with a guard of at least a page below it. Returns
 * 1 if all holds. */
static void *own_stack_ok(void *arg)
{
    pthread_attr_t a;
    void *addr = NULL;
    size_t size = 0, guard = 0;
    char here;
    if (pthread_getattr_np(pthread_self(), &a) != 0) return (void *)-1;
    pthread_attr_getstack(&a, &addr, &size);
    pthread_attr_getguardsize(&a, &guard);
    pthread_attr_destroy(&a);
    char *lo = addr, *hi = lo + size;
    int ok = lo && size && hi > lo && &here >= lo && &here < hi;
    if (ok) {                    /* both ends are mapped */
        volatile char first = *(volatile char *)lo, last = *(volatile char *)(hi - 1);
        (void)first;
        (void)last;
    }
    if (arg)
        ok = ok && lo == user_stack_lo && hi == user_stack_hi;
    else
        ok = ok && guard >= (size_t)sysconf(_SC_PAGESIZE);
    return (void *)(intptr_t)ok;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_runs;
static void once_init(void) { once_runs++; }
static void *call_once(void *arg) { pthread_once(&once, once_init); return arg; }

static void *check_own_attr(void *arg)
{
    pthread_attr_t a;
    int ds = -1;
    size_t ss = 0;
    if (pthread_getattr_np(pthread_self(), &a) != 0) return (void *)-1;
    pthread_attr_getdetachstate(&a, &ds);
    pthread_attr_getstacksize(&a, &ss);
    pthread_attr_destroy(&a);
    /* arg: the expected detach state; the stack must hold at least 1 MiB */
    return (void *)(intptr_t)(ds == (int)(intptr_t)arg && ss >= (1u << 20));
}

static pthread_mutex_t det_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t det_c = PTHREAD_COND_INITIALIZER;
static int det_done;
static void *detached_body(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&det_m);
    det_done++;
    pthread_cond_signal(&det_c);
    pthread_mutex_unlock(&det_m);
    return NULL;
}

/* Child mode: main exits with pthread_exit while a worker still runs; the
 * process must live on until the worker ends, then exit with status 0. */
static void *outlive_main(void *arg)
{
    (void)arg;
    struct timespec ts = { 0, 50 * 1000000L };
    nanosleep(&ts, NULL);
    printf("worker ran after main's pthread_exit\n");
    fflush(stdout);
    return NULL;
}
static int exit_from_main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, outlive_main, NULL) != 0) return 3;
    pthread_exit(NULL);
}

static void test_exit_from_main(const char *self)
{
    int fd[2];
    CHECK(pipe(fd) == 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execl(self, self, "exit-from-main", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char buf[256];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf - 1 && (r = read(fd[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = 0;
    close(fd[0]);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(strcmp(buf, "worker ran after main's pthread_exit\n") == 0);
    printf("exit from main: process lived on, status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* The error cases of pthread_attr_setstack(3p), pthread_attr_setschedparam(3p),
 * pthread_setattr_default_np(3), pthread_detach(3p), pthread_clockjoin_np(3),
 * pthread_setname_np(3), pthread_cancel(3p) and pthread_setaffinity_np(3)
 * not covered above (issue 4's audit). Left out, as glibc does not detect
 * them: pthread_timedjoin_np with tv_nsec >= 1e9 (glibc waits on), a join
 * of a thread already joined (undefined). */
static sem_t audit_go;
static void *audit_wait(void *arg) { (void)arg; while (sem_wait(&audit_go) != 0) ; return NULL; }

static void test_error_audit(void)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    static char small[4096];
    EXPECT("attr_setstack(size < PTHREAD_STACK_MIN)", pthread_attr_setstack(&a, small, 1024), EINVAL);
    struct sched_param sp = { 5 };
    EXPECT("attr_setschedparam(SCHED_OTHER, 5)", pthread_attr_setschedparam(&a, &sp), EINVAL);

    pthread_attr_t saved, d;
    CHECK(pthread_getattr_default_np(&saved) == 0);
    pthread_attr_init(&d);
    pthread_attr_setstacksize(&d, PTHREAD_STACK_MIN);
    EXPECT("setattr_default_np(stack PTHREAD_STACK_MIN)", pthread_setattr_default_np(&d), 0);
    pthread_attr_destroy(&d);
    size_t ss = 0;
    CHECK(pthread_getattr_default_np(&d) == 0);
    pthread_attr_getstacksize(&d, &ss);
    printf("default stack size now PTHREAD_STACK_MIN: %d\n", ss == (size_t)PTHREAD_STACK_MIN);
    pthread_attr_destroy(&d);
    pthread_attr_init(&d);
    static char stk[256 * 1024] __attribute__((aligned(64)));
    pthread_attr_setstack(&d, stk, sizeof stk);
    EXPECT("setattr_default_np(with a stack address)", pthread_setattr_default_np(&d), EINVAL);
    pthread_attr_destroy(&d);
    CHECK(pthread_setattr_default_np(&saved) == 0);
    pthread_attr_destroy(&saved);

    CHECK(sem_init(&audit_go, 0, 0) == 0);
    pthread_t t;
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    CHECK(pthread_create(&t, &a, audit_wait, NULL) == 0);
    EXPECT("detach(detached, running)", pthread_detach(t), EINVAL);
    pthread_attr_destroy(&a);
    CHECK(pthread_create(&t, NULL, audit_wait, NULL) == 0);
    struct timespec dl = deadline_ms(CLOCK_MONOTONIC, 20);
    EXPECT("clockjoin_np(running, clock 12345)", pthread_clockjoin_np(t, NULL, 12345, &dl), EINVAL);
    EXPECT("clockjoin_np(running, CLOCK_PROCESS_CPUTIME_ID)",
           pthread_clockjoin_np(t, NULL, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);
    EXPECT("setname_np(other, 16 chars)", pthread_setname_np(t, "0123456789abcdef"), ERANGE);
    char nm[4];
    EXPECT("getname_np(other, buf 4)", pthread_getname_np(t, nm, sizeof nm), ERANGE);
    CHECK(sem_post(&audit_go) == 0);        /* the detached one */
    CHECK(sem_post(&audit_go) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    /* Ended, not joined: its ID stays valid (pthread_kill(3), glibc 2.34
     * on): pthread_kill(t, 0) and pthread_cancel succeed. The 50 ms only
     * make "ended" likely; a running thread gives the same answers. */
    CHECK(pthread_create(&t, NULL, ret_arg_plus_one, NULL) == 0);
    struct timespec ms50 = { 0, 50000000L };
    nanosleep(&ms50, NULL);
    EXPECT("kill(ended, not joined, 0)", pthread_kill(t, 0), 0);
    EXPECT("cancel(ended, not joined)", pthread_cancel(t), 0);
    void *r;
    CHECK(pthread_join(t, &r) == 0);
    sem_destroy(&audit_go);

    cpu_set_t none;
    CPU_ZERO(&none);
    EXPECT("setaffinity_np(empty set)", pthread_setaffinity_np(pthread_self(), sizeof none, &none), EINVAL);
    EXPECT_ERRNO("sched_setaffinity(0, empty set)", sched_setaffinity(0, sizeof none, &none), EINVAL);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "exit-from-main") == 0)
        return exit_from_main();
    check_start("threads");

    /* --- attributes ------------------------------------------------------ */
    pthread_attr_t a;
    int v;
    size_t sz;
    EXPECT("attr_init", pthread_attr_init(&a), 0);
    pthread_attr_getdetachstate(&a, &v);
    printf("default detachstate joinable: %d\n", v == PTHREAD_CREATE_JOINABLE);
    EXPECT("setdetachstate(42)", pthread_attr_setdetachstate(&a, 42), EINVAL);
    EXPECT("setstacksize(PTHREAD_STACK_MIN-1)", pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN - 1), EINVAL);
    EXPECT("setstacksize(1MiB)", pthread_attr_setstacksize(&a, 1 << 20), 0);
    pthread_attr_getstacksize(&a, &sz);
    printf("getstacksize: %zu\n", sz);
    EXPECT("setguardsize(8192)", pthread_attr_setguardsize(&a, 8192), 0);
    pthread_attr_getguardsize(&a, &sz);
    printf("getguardsize: %zu\n", sz);
    EXPECT("setschedpolicy(SCHED_OTHER)", pthread_attr_setschedpolicy(&a, SCHED_OTHER), 0);
    pthread_attr_getschedpolicy(&a, &v);
    printf("getschedpolicy other: %d\n", v == SCHED_OTHER);
    EXPECT("setschedpolicy(12345)", pthread_attr_setschedpolicy(&a, 12345), EINVAL);
    EXPECT("setinheritsched(EXPLICIT)", pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED), 0);
    pthread_attr_getinheritsched(&a, &v);
    printf("getinheritsched explicit: %d\n", v == PTHREAD_EXPLICIT_SCHED);
    EXPECT("setinheritsched(42)", pthread_attr_setinheritsched(&a, 42), EINVAL);
    struct sched_param sp = { .sched_priority = 0 };
    EXPECT("setschedparam(0)", pthread_attr_setschedparam(&a, &sp), 0);
    sp.sched_priority = 7;
    pthread_attr_getschedparam(&a, &sp);
    printf("getschedparam: %d\n", sp.sched_priority);
    EXPECT("setscope(SYSTEM)", pthread_attr_setscope(&a, PTHREAD_SCOPE_SYSTEM), 0);
    EXPECT("setscope(PROCESS)", pthread_attr_setscope(&a, PTHREAD_SCOPE_PROCESS), ENOTSUP);
    pthread_attr_getscope(&a, &v);
    printf("getscope system: %d\n", v == PTHREAD_SCOPE_SYSTEM);

    /* a thread created with these attributes sees them in getattr_np */
    pthread_attr_setinheritsched(&a, PTHREAD_INHERIT_SCHED);
    pthread_t t;
    void *res;
    EXPECT("create with 1MiB stack", pthread_create(&t, &a, check_own_attr, (void *)(intptr_t)PTHREAD_CREATE_JOINABLE), 0);
    pthread_join(t, &res);
    printf("getattr_np in thread matches: %d\n", (int)(intptr_t)res);
    CHECK(res == (void *)1);
    /* and its stack is the one the thread runs on */
    EXPECT("create for getattr_np stack", pthread_create(&t, &a, own_stack_ok, (void *)0), 0);
    pthread_join(t, &res);
    printf("getattr_np stack holds the thread's locals: %d\n", (int)(intptr_t)res);
    CHECK(res == (void *)1);
    EXPECT("create for getattr_np default stack", pthread_create(&t, NULL, own_stack_ok, (void *)0), 0);
    pthread_join(t, &res);
    printf("getattr_np default stack holds the thread's locals: %d\n", (int)(intptr_t)res);
    CHECK(res == (void *)1);
    EXPECT("attr_destroy", pthread_attr_destroy(&a), 0);

    /* user-supplied stack */
    size_t ustack = 256 * 1024;
    void *mem = NULL;
    CHECK(posix_memalign(&mem, 4096, ustack) == 0);
    user_stack_lo = mem;
    user_stack_hi = (char *)mem + ustack;
    pthread_attr_init(&a);
    EXPECT("setstack", pthread_attr_setstack(&a, mem, ustack), 0);
    void *got_addr = NULL;
    pthread_attr_getstack(&a, &got_addr, &sz);
    printf("getstack returns it: %d\n", got_addr == mem && sz == ustack);
    EXPECT("create on user stack", pthread_create(&t, &a, on_user_stack, NULL), 0);
    pthread_join(t, &res);
    printf("ran on the user stack: %d\n", (int)(intptr_t)res);
    CHECK(res == (void *)1);
    EXPECT("create on user stack for getattr_np", pthread_create(&t, &a, own_stack_ok, (void *)1), 0);
    pthread_join(t, &res);
    printf("getattr_np gives the user stack: %d\n", (int)(intptr_t)res);
    CHECK(res == (void *)1);
    pthread_attr_destroy(&a);
    free(mem);

    /* --- create / join / exit -------------------------------------------- */
    enum { N = 8 };
    pthread_t ts[N];
    long sum = 0;
    for (intptr_t i = 0; i < N; i++)
        CHECK(pthread_create(&ts[i], NULL, ret_arg_plus_one, (void *)i) == 0);
    for (int i = 0; i < N; i++) {
        CHECK(pthread_join(ts[i], &res) == 0);
        sum += (intptr_t)res;
    }
    printf("8 threads returned sum %ld\n", sum);
    CHECK(sum == 36);

    CHECK(pthread_create(&t, NULL, exit_with, (void *)21) == 0);
    CHECK(pthread_join(t, &res) == 0);
    printf("pthread_exit value: %ld\n", (long)(intptr_t)res);
    CHECK(res == (void *)42);

    /* many threads at once, all blocked, then released */
    enum { MANY = 200 };
    static pthread_t many[MANY];
    int created = 0;
    for (intptr_t i = 0; i < MANY; i++)
        if (pthread_create(&many[i], NULL, wait_gate, (void *)i) == 0) created++;
    gate_wait_for(created);
    gate_set(1);
    int ok = 1;
    for (int i = 0; i < created; i++) {
        CHECK(pthread_join(many[i], &res) == 0);
        ok &= res == (void *)(intptr_t)i;
    }
    printf("%d blocked threads released and joined: %d\n", created, ok);
    CHECK(created == MANY && ok);
    gate_set(0);

    /* sequential create/join, enough to recycle descriptors and stacks */
    int seq_ok = 1;
    for (intptr_t i = 0; i < 2000; i++) {
        if (pthread_create(&t, NULL, ret_arg_plus_one, (void *)i) != 0 || pthread_join(t, &res) != 0 || res != (void *)(i + 1))
            seq_ok = 0;
    }
    printf("2000 sequential create/join: %d\n", seq_ok);
    CHECK(seq_ok);

    /* --- self / equal ---------------------------------------------------- */
    CHECK(pthread_create(&t, NULL, ret_self, NULL) == 0);
    CHECK(pthread_join(t, &res) == 0);
    printf("equal(thread's self, handle): %d\n", pthread_equal(*(pthread_t *)res, t) != 0);
    printf("equal(main, handle): %d\n", pthread_equal(pthread_self(), t) != 0);
    printf("equal(main, main): %d\n", pthread_equal(pthread_self(), pthread_self()) != 0);
    CHECK(pthread_equal(*(pthread_t *)res, t));
    free(res);

    /* --- join errors, tryjoin, timedjoin -------------------------------- */
    EXPECT("join(self)", pthread_join(pthread_self(), NULL), EDEADLK);
    CHECK(pthread_create(&t, NULL, wait_gate, (void *)5) == 0);
    gate_wait_for(1);
    EXPECT("tryjoin_np(running)", pthread_tryjoin_np(t, NULL), EBUSY);
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 20);
    EXPECT("timedjoin_np(running, +20ms)", pthread_timedjoin_np(t, NULL, &dl), ETIMEDOUT);
    gate_set(1);
    dl = deadline_ms(CLOCK_REALTIME, 30000);
    EXPECT("timedjoin_np(ending, +30s)", pthread_timedjoin_np(t, &res, &dl), 0);
    CHECK(res == (void *)5);
    gate_set(0);

    /* --- detach ----------------------------------------------------------- */
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_getdetachstate(&a, &v);
    printf("attr detached: %d\n", v == PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 1 << 20);
    pthread_mutex_lock(&det_m);
    CHECK(pthread_create(&t, &a, detached_body, NULL) == 0);
    EXPECT("join(detached)", pthread_join(t, NULL), EINVAL);
    pthread_mutex_unlock(&det_m);
    CHECK(pthread_create(&t, &a, check_own_attr, (void *)(intptr_t)PTHREAD_CREATE_DETACHED) == 0);
    pthread_attr_destroy(&a);
    CHECK(pthread_create(&t, NULL, detached_body, NULL) == 0);
    EXPECT("detach(joinable)", pthread_detach(t), 0);
    pthread_mutex_lock(&det_m);
    while (det_done < 2)
        pthread_cond_wait(&det_c, &det_m);
    pthread_mutex_unlock(&det_m);
    printf("detached threads ran: %d\n", det_done);

    /* --- once -------------------------------------------------------------- */
    for (intptr_t i = 0; i < 4; i++)
        CHECK(pthread_create(&ts[i], NULL, call_once, (void *)i) == 0);
    pthread_once(&once, once_init);
    for (int i = 0; i < 4; i++)
        pthread_join(ts[i], NULL);
    printf("once routine runs: %d\n", once_runs);
    CHECK(once_runs == 1);

    /* --- names ------------------------------------------------------------- */
    char name[64];
    EXPECT("setname_np(self, \"shim-main\")", pthread_setname_np(pthread_self(), "shim-main"), 0);
    EXPECT("getname_np(self)", pthread_getname_np(pthread_self(), name, sizeof name), 0);
    printf("name: %s\n", name);
    CHECK(strcmp(name, "shim-main") == 0);
    EXPECT("setname_np(16 chars)", pthread_setname_np(pthread_self(), "0123456789abcdef"), ERANGE);
    EXPECT("getname_np(buf 4)", pthread_getname_np(pthread_self(), name, 4), ERANGE);
    CHECK(pthread_create(&t, NULL, wait_gate, NULL) == 0);
    gate_wait_for(1);
    EXPECT("setname_np(other)", pthread_setname_np(t, "worker-7"), 0);
    EXPECT("getname_np(other)", pthread_getname_np(t, name, sizeof name), 0);
    printf("other's name: %s\n", name);
    gate_set(1);
    pthread_join(t, NULL);
    gate_set(0);

    /* --- yield, concurrency, cpu clock ------------------------------------ */
    EXPECT_ERRNO("sched_yield", sched_yield(), 0);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    EXPECT("pthread_yield", pthread_yield(), 0);
#pragma GCC diagnostic pop
    printf("getconcurrency initially: %d\n", pthread_getconcurrency());
    EXPECT("setconcurrency(-1)", pthread_setconcurrency(-1), EINVAL);
    EXPECT("setconcurrency(2)", pthread_setconcurrency(2), 0);
    printf("getconcurrency: %d\n", pthread_getconcurrency());
    EXPECT("setconcurrency(0)", pthread_setconcurrency(0), 0);
    printf("getconcurrency: %d\n", pthread_getconcurrency());
    clockid_t cid;
    int r = pthread_getcpuclockid(pthread_self(), &cid);
    if (r == 0) {
        struct timespec now;
        CHECK(clock_gettime(cid, &now) == 0);
    } else {
        /* the shim may say no; it must say so with an error code */
        fprintf(stderr, "note: pthread_getcpuclockid: %s\n", errname(r));
        CHECK(r == ENOENT || r == ENOTSUP || r == ESRCH || r == EINVAL);
    }
    printf("getcpuclockid: handled\n");

    /* --- affinity ---------------------------------------------------------- */
    cpu_set_t mine, got;
    CHECK(sched_getaffinity(0, sizeof mine, &mine) == 0);
    EXPECT("setaffinity_np(process mask)", pthread_setaffinity_np(pthread_self(), sizeof mine, &mine), 0);
    EXPECT("getaffinity_np", pthread_getaffinity_np(pthread_self(), sizeof got, &got), 0);
    cpu_set_t both;
    CPU_AND(&both, &got, &mine);
    printf("affinity non-empty and within process mask: %d\n", CPU_COUNT(&got) > 0 && CPU_EQUAL(&both, &got));
    CHECK(CPU_COUNT(&got) > 0 && CPU_EQUAL(&both, &got));
    cpu_set_t none;
    CPU_ZERO(&none);
    CPU_SET(CPU_SETSIZE - 1, &none);
    EXPECT("setaffinity_np(cpu not in process)", pthread_setaffinity_np(pthread_self(), sizeof none, &none), EINVAL);
    pthread_attr_init(&a);
    int first = 0;
    while (!CPU_ISSET(first, &mine)) first++;
    CPU_ZERO(&got);
    CPU_SET(first, &got);
    EXPECT("attr_setaffinity_np(one cpu)", pthread_attr_setaffinity_np(&a, sizeof got, &got), 0);
    EXPECT("create pinned", pthread_create(&t, &a, ret_arg_plus_one, (void *)1), 0);
    pthread_join(t, &res);
    CHECK(res == (void *)2);
    pthread_attr_destroy(&a);
    CHECK(pthread_setaffinity_np(pthread_self(), sizeof mine, &mine) == 0);

    /* --- pthread_exit from main ------------------------------------------- */
    test_exit_from_main(argv[0]);

    test_error_audit();
    return check_end("threads");
}
