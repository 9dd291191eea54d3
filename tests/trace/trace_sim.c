/*
 * trace_sim -- drives the tracing hooks as the runtime will, on two kernel
 * threads standing for VP 0 and VP 1, with a fixed schedule (phases separated
 * by a spin barrier), then leaves the process the way argv[1] says:
 *
 *   trace_sim MODE OUT          MODE: return exit sigterm sigint sigint-ignored abort segv malloc-segv _exit sigkill lost lost-env many loan
 *                               or sighup sigquit sigbus sigfpe sigill sigtrap sigsys (kill(getpid(), SIG))
 *                               fpe (an integer division by zero on x86-64, raise(SIGFPE) elsewhere), sighup-ignored
 *
 * Schedule (nano-thread ids 1 main, 2 worker-a, 3 worker-b):
 *   1  VP0 runs main; main opens parallel region 1 (team 3), creates 2 and 3;
 *      ready queue VP0 = 2; cpumgr assigns 2 CPUs. VP1 starts idle.
 *   2  VP1 steals 2 (rq VP0 = 1). main blocks on mutex "m1" (SYNCH); VP0
 *      runs 3, which records user events, pushes/pops user state "compute".
 *   3  2 releases m1: main READY; 2 ends; VP1 runs main (migrated from VP0).
 *      cpumgr takes a CPU (1). 3 waits on barrier "b1"; VP0 goes idle.
 *   -- the fatal modes leave here, with region 1 and b1's SYNCH still open --
 *   4  main closes region 1; 3 is released, runs on VP0 and ends; VPs stop.
 *
 * malloc-segv: the SIGSEGV comes from inside malloc while it holds its lock.
 * This program's malloc family stands in for glibc's arena lock with a lock
 * of its own around glibc's functions (glibc takes no arena lock while a
 * process has one thread, and no public glibc function calls back into the
 * application with it held, so the crash cannot be placed inside glibc's
 * deterministically). A second malloc on the thread holding it -- from the
 * signal handler -- would deadlock in glibc; here it says so and exits 99.
 * Not in sanitizer builds (their malloc is theirs): the mode exits 77.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"   /* NTH_ASAN, NTH_TSAN */
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "trace_hooks.h"

static int phase_count, go4;
static void barrier(int phase)
{
    __atomic_fetch_add(&phase_count, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&phase_count, __ATOMIC_ACQUIRE) < 2 * phase)
        ;
}

#if !defined(NTH_ASAN) && !defined(NTH_TSAN)
#define MALLOC_LOCK 1
#include <sys/syscall.h>
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
static int malloc_lock_on, malloc_crash_armed;
static long malloc_owner;   /* kernel thread id holding the lock, 0 none */

static void malloc_lock(void)
{
    if (!__atomic_load_n(&malloc_lock_on, __ATOMIC_ACQUIRE))
        return;
    long self = syscall(SYS_gettid);
    while (1) {
        long free_ = 0;
        if (__atomic_compare_exchange_n(&malloc_owner, &free_, self, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            break;
        if (free_ == self) {
            static const char msg[] = "trace_sim: malloc called by the thread that holds malloc's lock "
                                      "(from the signal handler): a deadlock in glibc\n";
            ssize_t w = write(2, msg, sizeof msg - 1);
            (void)w;
            _exit(99);
        }
        sched_yield();
    }
    if (__atomic_exchange_n(&malloc_crash_armed, 0, __ATOMIC_ACQ_REL))
        raise(SIGSEGV);   /* "inside malloc", the lock held */
}

static void malloc_unlock(void)
{
    if (__atomic_load_n(&malloc_lock_on, __ATOMIC_ACQUIRE))
        __atomic_store_n(&malloc_owner, 0, __ATOMIC_RELEASE);
}

void *malloc(size_t n)
{
    malloc_lock();
    void *p = __libc_malloc(n);
    malloc_unlock();
    return p;
}

void *calloc(size_t n, size_t m)
{
    malloc_lock();
    void *p = __libc_calloc(n, m);
    malloc_unlock();
    return p;
}

void *realloc(void *q, size_t n)
{
    malloc_lock();
    void *p = __libc_realloc(q, n);
    malloc_unlock();
    return p;
}

void free(void *q)
{
    malloc_lock();
    __libc_free(q);
    malloc_unlock();
}
#endif

static int mutex_m1, barrier_b1;
static const char *mode;
#define USER_EVENT 100
#define USER_STATE (NTH_TRACE_STATE_USER + 4)

static void tiny(void)   /* distinct timestamps without timing assertions */
{
    struct timespec ts = { 0, 20000 };
    nanosleep(&ts, NULL);
}

static void *vp0(void *arg)
{
    (void)arg;
    nth_trace_vp_start(0);
    nth_trace_thread_create(1, 0, "main");
    nth_trace_switch(0, 1);
    tiny();
    nth_trace_region_begin(1, 1, 3, 0);
    nth_trace_thread_create(2, 1, "worker-a");
    nth_trace_thread_create(3, 1, "worker-b");
    nth_trace_rq_len(0, 2);
    nth_trace_cpus(2);
    tiny();
    barrier(1);
    tiny();
    nth_trace_object_name(&mutex_m1, "m1");
    nth_trace_state(1, NTH_TRACE_SYNCH, &mutex_m1);
    nth_trace_switch(1, 3);
    tiny();
    nth_trace_register_event(USER_EVENT, "iteration");
    nth_trace_register_event_value(USER_EVENT, 7, "seven");
    nth_trace_register_state(USER_STATE, "compute");
    nth_trace_event(USER_EVENT, 7);
    nth_trace_state_push_event(USER_STATE, USER_EVENT, 8);
    tiny();
    nth_trace_state_pop();
    tiny();
    barrier(2);
    tiny();
    nth_trace_object_name(&barrier_b1, "b1");
    nth_trace_state(3, NTH_TRACE_SYNCH, &barrier_b1);
    nth_trace_switch(3, 0);
    tiny();
    barrier(3);
    while (!__atomic_load_n(&go4, __ATOMIC_ACQUIRE))
        ;
    if (strcmp(mode, "return") && strcmp(mode, "exit"))
        return NULL;
    nth_trace_state(3, NTH_TRACE_READY, NULL);
    nth_trace_switch(0, 3);
    tiny();
    nth_trace_thread_end(3);
    nth_trace_switch(3, 0);
    nth_trace_vp_stop(0);
    return NULL;
}

static void *vp1(void *arg)
{
    (void)arg;
    nth_trace_vp_start(1);
    nth_trace_switch(0, 0);
    barrier(1);
    nth_trace_switch(0, 2);
    nth_trace_rq_len(0, 1);   /* VP0's queue, seen by the thief */
    tiny();
    barrier(2);
    tiny();
    nth_trace_state(1, NTH_TRACE_READY, NULL);
    nth_trace_rq_len(1, 1);
    nth_trace_thread_end(2);
    nth_trace_switch(2, 1);
    nth_trace_rq_len(1, 0);
    nth_trace_cpus(1);
    tiny();
    barrier(3);
    while (!__atomic_load_n(&go4, __ATOMIC_ACQUIRE))
        ;
    if (strcmp(mode, "return") && strcmp(mode, "exit"))
        return NULL;
    nth_trace_region_end(1, 1);
    tiny();
    nth_trace_switch(1, 0);
    nth_trace_vp_stop(1);
    return NULL;
}

/* loan: VP 0's kernel thread runs "reader" (2), which blocks in the kernel
 * (BLOCKED pushed); a stand-in kernel thread leases VP 0 and runs "worker"
 * (3) twice; the reader comes back (its pop takes VP 0's track back) while
 * the stand-in still runs the worker, whose late switch-out must leave VP
 * 0's track alone; then the stand-in ends its lease. Steps in order through
 * `loan_step`. */
static int loan_step;
static void loan_wait(int s)
{
    while (__atomic_load_n(&loan_step, __ATOMIC_ACQUIRE) < s)
        sched_yield();
}
static void loan_go(int s)
{
    __atomic_store_n(&loan_step, s, __ATOMIC_RELEASE);
}

static void *standin(void *arg)
{
    (void)arg;
    loan_wait(1);
    nth_trace__loan(0);
    nth_trace_switch(0, 3);
    tiny();
    nth_trace_switch(3, 0);
    tiny();
    nth_trace_switch(0, 3);
    loan_go(2);
    loan_wait(3);
    tiny();
    nth_trace_switch(3, 0);   /* late: VP 0 is its own kernel thread's again */
    nth_trace__loan(-1);
    loan_go(4);
    return NULL;
}

static int loan(const char *out)
{
    if (nth_trace_start(out, 0, 0)) return 1;
    pthread_t s;
    if (pthread_create(&s, NULL, standin, NULL)) return 1;
    nth_trace_vp_start(0);
    nth_trace_thread_create(1, 0, "main");
    nth_trace_switch(0, 1);
    nth_trace_thread_create(2, 1, "reader");
    nth_trace_thread_create(3, 1, "worker");
    tiny();
    nth_trace_switch(1, 2);
    tiny();
    nth_trace_state_push_id(2, NTH_TRACE_BLOCKED, NULL);
    loan_go(1);
    loan_wait(2);
    tiny();
    nth_trace_state_pop_id(2);   /* back from the kernel */
    loan_go(3);
    loan_wait(4);
    tiny();
    nth_trace_thread_end(2);
    nth_trace_switch(2, 3);
    tiny();
    nth_trace_thread_end(3);
    nth_trace_switch(3, 1);
    tiny();
    nth_trace_vp_stop(0);
    pthread_join(s, NULL);
    return 0;
}

/* The signal a "sig..." mode sends itself, 0 for other modes. */
static int sent_signal(const char *m)
{
    static const struct { const char *name; int sig; } sent[] = {
        { "sigterm", SIGTERM }, { "sigint", SIGINT }, { "sighup", SIGHUP }, { "sigquit", SIGQUIT },
        { "sigbus", SIGBUS }, { "sigfpe", SIGFPE }, { "sigill", SIGILL }, { "sigtrap", SIGTRAP },
        { "sigsys", SIGSYS },
    };
    for (size_t i = 0; i < sizeof sent / sizeof sent[0]; i++)
        if (!strcmp(m, sent[i].name))
            return sent[i].sig;
    return 0;
}

/* A real SIGFPE from the CPU, as from 100 / 0 in a program: synchronous,
 * and the faulting instruction runs again after the handler returns. In
 * asm, so that no compiler (or UBSan) turns it into something else. */
static void divide_by_zero(void)
{
#if defined(__x86_64__)
    int q = 100, zero = 0;
    __asm__ volatile("cltd\n\tidivl %1" : "+a"(q) : "r"(zero) : "edx", "cc");
    (void)q;
#else
    raise(SIGFPE);   /* aarch64 division by zero gives 0, no signal */
#endif
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: trace_sim return|exit|sigterm|sigint|sighup|sigquit|sigbus|sigfpe|sigill|sigtrap|sigsys|fpe|\n"
                        "       sigint-ignored|sighup-ignored|abort|segv|malloc-segv|_exit|sigkill|lost|lost-env|many|loan OUT\n");
        return 2;
    }
    mode = argv[1];
    /* A shell without job control starts background jobs with SIGINT and
     * SIGQUIT ignored (POSIX, "Asynchronous Lists"), and the trace's exit
     * handler rightly leaves an ignored signal alone: `./run-tests.sh &`
     * made the sigint case exit 2. These cases are about a program whose
     * signals have their default action, so give it that. */
    signal(SIGINT, strcmp(mode, "sigint-ignored") ? SIG_DFL : SIG_IGN);
    signal(SIGHUP, strcmp(mode, "sighup-ignored") ? SIG_DFL : SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    if (!strcmp(mode, "lost") || !strcmp(mode, "lost-env")) {
        /* lost: the smallest buffer and a writer that wakes rarely: records
         * must either reach the file or be counted as lost, never block.
         * lost-env: settings from the environment (NTH_TRACE_LIMIT). */
        int rc;
        if (!strcmp(mode, "lost")) {
            rc = nth_trace_start(argv[2], 4096, 60000);
        } else {
            setenv("NTH_TRACE", argv[2], 1);
            rc = nth_trace_start_from_env();
        }
        if (rc) return 1;
        nth_trace_vp_start(0);
        nth_trace_thread_create(1, 0, "main");
        nth_trace_switch(0, 1);
        for (int i = 0; i < 100000; i++)
            nth_trace_event(USER_EVENT, (uint64_t)i);
        return 0;
    }
    if (!strcmp(mode, "loan"))
        return loan(argv[2]);
    if (!strcmp(mode, "many")) {
        /* More nano-threads than Paraver keeps (NTH_PRV_MAX_THREADS =
         * 32768): each created, run once and ended on VP 0. */
        if (nth_trace_start(argv[2], 16u << 20, 0)) return 1;   /* all of it, whatever the load */
        nth_trace_vp_start(0);
        for (uint64_t id = 1; id <= 32770; id++) {
            nth_trace_thread_create(id, 0, NULL);
            nth_trace_switch(id - 1, id);
            nth_trace_thread_end(id);
        }
        nth_trace_switch(32770, 0);
        return 0;
    }
    if (!strcmp(mode, "malloc-segv")) {
#ifdef MALLOC_LOCK
        __atomic_store_n(&malloc_lock_on, 1, __ATOMIC_RELEASE);
#else
        return 77;
#endif
    }
    int rc = nth_trace_start(argv[2], 0, 20);
    if (rc) {
        fprintf(stderr, "trace_sim: nth_trace_start: %s\n", strerror(rc));
        return 1;
    }
    pthread_t a, b;
    pthread_create(&a, NULL, vp0, NULL);
    pthread_create(&b, NULL, vp1, NULL);
    /* main waits for phase 3 to end */
    while (__atomic_load_n(&phase_count, __ATOMIC_ACQUIRE) < 6)
        ;
    if (!strcmp(mode, "_exit") || !strcmp(mode, "sigkill")) {
        struct timespec ts = { 0, 300 * 1000000L };   /* several flush intervals */
        nanosleep(&ts, NULL);
        if (!strcmp(mode, "sigkill"))
            kill(getpid(), SIGKILL);   /* no handler runs: only the writer's flushes count */
        _exit(0);
    }
    if (sent_signal(mode)) {
        /* Process-directed, as from a shell: any kernel thread (the trace
         * writer, a VP) may take it, and kill() returns before that thread
         * has run the handler, so wait here for the end. */
        kill(getpid(), sent_signal(mode));
        for (int i = 0; i < 100; i++)   /* 10 s at most, then exit 3 */
            usleep(100000);
        _exit(3);
    }
    if (!strcmp(mode, "sigint-ignored") || !strcmp(mode, "sighup-ignored")) {
        /* Started with SIGINT ignored (a shell's background job) or SIGHUP
         * (nohup): the trace must not catch it, and the process goes on
         * tracing to its end. */
        kill(getpid(), mode[3] == 'i' ? SIGINT : SIGHUP);
        usleep(200000);
        if (!nth_trace_enabled()) {
            fprintf(stderr, "trace_sim: an ignored %s ended the trace\n", mode[3] == 'i' ? "SIGINT" : "SIGHUP");
            _exit(4);
        }
        mode = "return";
    }
    if (!strcmp(mode, "abort")) abort();
    if (!strcmp(mode, "segv")) raise(SIGSEGV);
    if (!strcmp(mode, "fpe")) divide_by_zero();
#ifdef MALLOC_LOCK
    if (!strcmp(mode, "malloc-segv")) {
        __atomic_store_n(&malloc_crash_armed, 1, __ATOMIC_RELEASE);
        void *volatile p = malloc(64);   /* volatile: the pair is not optimised away */
        free(p);
    }
#endif
    if (strcmp(mode, "return") && strcmp(mode, "exit")) {
        fprintf(stderr, "trace_sim: unknown mode %s\n", mode);
        _exit(2);
    }
    __atomic_store_n(&go4, 1, __ATOMIC_RELEASE);   /* phase 4 */
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    if (!strcmp(mode, "exit"))
        exit(0);
    return 0;
}
