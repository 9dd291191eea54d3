/*
 * rt_app.c -- a malleable nthlib application for the runtime integration
 * tests: the real runtime (VPs, the cpumgr watcher), driven by commands on
 * stdin, printing one line per change of what it sees:
 *   "A=<attached> N=<assigned> CPUS=<list> EN=<enabled VPs> PK=<disabled VPs
 *    parked> OUT=<enabled VPs bound outside the assignment> RC=<reclaims>
 *    V=<VPs> NB=<disabled VPs whose kernel thread is bound to one CPU>
 *    UB=<disabled VPs whose kernel thread may run on more> SB=<enabled VPs
 *    bound to one CPU>"
 * and, after each move bounded reclaim made, "MOVE n=<its number, 1 for
 * the first> vp=<VP moved> path=<disabled|stale> since=<ns> due=<ns>"
 * (nth_cpumgr_rt_last_move(): the reclaim clock's start and when the move
 * was planned, CLOCK_MONOTONIC ns). Moves closer than the reporter's
 * 0.5 ms turn show the last only; n says how many came before.
 * Commands: "request N", "work" (start counted work items), "stop" (end
 * them; prints "DONE items=I lost=L dup=D"), "spin" (a nano-thread that
 * never reaches a scheduling point; prints "SPIN tid=T cpu=C vp=V"), "unspin",
 * "fspin C" (a plain kernel thread, no VP, bound by itself to CPU C,
 * spinning; prints "FSPIN tid=T"), "exit", "exitzero" (main, never reaching a scheduling point, waits until
 * the daemon has given the application no CPU and VP 0 is disabled under
 * it, prints "EXITING", then calls exit(); a handler registered before
 * nth_init(), so run after the runtime's own, then sleeps on a nano-thread
 * sleep and prints "SLEPT"). Linked statically to read the runtime's VP table; a plain kernel
 * thread prints the state lines, so they appear while every VP is parked.
 *
 * Right after nth_init() it prints one "INIT ..." line (init_line()); with
 * RT_HOME=C in the environment, nth_init() is called on CPU C (start_on()).
 *
 * usage: rt_app SEGMENT REQUEST [pre|late]
 * With "pre", the application attaches through the public API before
 * nth_init() (see pre_runtime()). REQUEST "default": nth_cpus_request()
 * is never called (the default request, min(VPs, mask): set NTH_VPS).
 * With "late", an exit handler registered
 * before nth_init() (so it runs after the runtime's own, the cpumgr
 * client's detach among them) installs a switch hook, which wakes every
 * VP the daemon disabled (see late_exit()).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "cpumgr_client.h"

#define MAX_ITEMS (1 << 20)
#define BATCH 16

static unsigned char counts[MAX_ITEMS]; /* runs of each work item */
static long next_item;
static int work_stop, spin_stop;
static int spin_tid, spin_cpu, spin_vp;

static void *item(void *arg)
{
    long id = (long)arg;
    volatile double x = 1;
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 2000; i++)
            x = x * 1.0000001 + 1e-9;
        nth_yield();
    }
    __atomic_add_fetch(&counts[id], 1, __ATOMIC_RELAXED);
    return NULL;
}

static void *generator(void *arg)
{
    (void)arg;
    nth_t t[BATCH];
    while (!__atomic_load_n(&work_stop, __ATOMIC_ACQUIRE) && next_item + BATCH <= MAX_ITEMS) {
        int n = 0;
        for (; n < BATCH; n++)
            if (nth_create(&t[n], NULL, item, (void *)next_item++) != 0) {
                next_item--;
                break;
            }
        for (int i = 0; i < n; i++)
            nth_join(t[i], NULL);
    }
    return NULL;
}

/* Never an nthlib call: only bounded reclaim can move it. */
static void *spinner(void *arg)
{
    (void)arg;
    __atomic_store_n(&spin_cpu, sched_getcpu(), __ATOMIC_RELEASE);
    __atomic_store_n(&spin_vp, nth_vp_id(), __ATOMIC_RELEASE);
    __atomic_store_n(&spin_tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
    volatile unsigned long x = 0;
    while (!__atomic_load_n(&spin_stop, __ATOMIC_ACQUIRE))
        x++;
    return NULL;
}

/* "fspin C": a plain kernel thread of the program, no VP (as a library's
 * worker would be), that binds itself to CPU C and spins there. */
static int fspin_cpu, fspin_stop, fspin_tid;
static void *foreign_spinner(void *arg)
{
    (void)arg;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(fspin_cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        return NULL;
    __atomic_store_n(&fspin_tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
    volatile unsigned long x = 0;
    while (!__atomic_load_n(&fspin_stop, __ATOMIC_ACQUIRE))
        x++;
    return NULL;
}

static void status(char *line, size_t len)
{
    hwloc_bitmap_t m = NULL;
    char list[256] = "";
    if (nth_cpus_assigned_mask(&m) == 0)
        hwloc_bitmap_list_snprintf(list, sizeof list, m);
    int en = 0, pk = 0, out = 0, nb = 0, ub = 0, sb = 0;
    for (int i = 0; i < nth_rt.nvps; i++) {
        struct nth_vp *vp = nth_rt.vps[i];
        /* Its kernel thread's mask, as the kernel has it: one CPU (bound)
         * or more (never bound), -1 if not started yet. */
        int vtid = __atomic_load_n(&vp->tid, __ATOMIC_ACQUIRE), ncs = -1;
        cpu_set_t vcs;
        if (vtid > 0 && sched_getaffinity(vtid, sizeof vcs, &vcs) == 0)
            ncs = CPU_COUNT(&vcs);
        if (__atomic_load_n(&vp->disabled, __ATOMIC_ACQUIRE)) {
            pk += __atomic_load_n(&vp->parked, __ATOMIC_ACQUIRE);
            nb += ncs == 1;
            ub += ncs > 1;
            continue;
        }
        sb += ncs == 1;
        en++;
        int tid = nth_cpumgr_rt_vp_tid(i);
        cpu_set_t cs;
        if (m && tid > 0 && sched_getaffinity(tid, sizeof cs, &cs) == 0)
            for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &cs) && !hwloc_bitmap_isset(m, (unsigned)c)) {
                    out++;
                    break;
                }
    }
    hwloc_bitmap_free(m);
    snprintf(line, len, "A=%d N=%d CPUS=%s EN=%d PK=%d OUT=%d RC=%lu V=%d NB=%d UB=%d SB=%d",
             nth_cpumgr_attached(), nth_cpus_assigned(), list, en, pk, out, nth_cpumgr_rt_reclaims(),
             nth_rt.nvps, nb, ub, sb);
}

/* A kernel thread, not a VP: it reports even while every VP is parked. */
static void *reporter(void *arg)
{
    (void)arg;
    char last[512] = "", line[512];
    unsigned long last_n = 0;
    for (;;) {
        status(line, sizeof line);
        if (strcmp(line, last) != 0) {
            printf("%s\n", line);
            fflush(stdout);
            strcpy(last, line);
        }
        struct nth_cpumgr_move m;
        if (nth_cpumgr_rt_last_move(&m) && m.n != last_n) {
            printf("MOVE n=%lu vp=%d path=%s since=%lld due=%lld\n", m.n, m.vp,
                   m.path == NTH_CPUMGR_MOVE_STALE ? "stale" : "disabled", (long long)m.since_ns,
                   (long long)m.due_ns);
            fflush(stdout);
            last_n = m.n;
        }
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static int wait_assigned(int n)
{
    for (int i = 0; i < 8000; i++) {
        if (nth_cpumgr_attached() && nth_cpus_assigned() == n)
            return 0;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* Before the runtime: attached with 2 CPUs (prints "PRE attached"), then,
 * once the test's second application has taken one, this kernel thread
 * keeps running on the CPU taken away, as a main thread still inside
 * nth_init() would, until the daemon (--enforce) binds it to our other CPU
 * (prints "PRE moved=1", or moved=0 after 5 s). Then nth_init() runs on
 * that narrowed binding. */
static int pre_runtime(int req)
{
    if (nth_cpus_request(req) != 0 || wait_assigned(2) != 0)
        return -1;
    printf("PRE attached\n");
    fflush(stdout);
    hwloc_bitmap_t m = NULL;
    if (wait_assigned(1) != 0 || nth_cpus_assigned_mask(&m) != 0)
        return -1;
    cpu_set_t all, one, now;
    if (sched_getaffinity(0, sizeof all, &all) != 0)
        return -1;
    int taken = -1;
    for (int c = 0; c < CPU_SETSIZE && taken < 0; c++)
        if (CPU_ISSET(c, &all) && !hwloc_bitmap_isset(m, (unsigned)c))
            taken = c;
    hwloc_bitmap_free(m);
    if (taken < 0)
        return -1;
    CPU_ZERO(&one);
    CPU_SET(taken, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        return -1;
    int moved = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (volatile int i = 0; i < 100000; i++)
            ;
        moved = sched_getaffinity(0, sizeof now, &now) == 0 && !CPU_EQUAL(&now, &one);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (!moved && t.tv_sec - t0.tv_sec < 5);
    printf("PRE moved=%d\n", moved);
    fflush(stdout);
    return 0;
}

/* Registered before nth_init(): it runs after the cpumgr client's exit
 * handler has left the daemon, as a traced process's flush does (its
 * nanosleep was a nano-thread sleep under the pthread shim). Its sleep needs
 * an enabled VP; the runtime must give it one once alone. */
static int exit_sleep;
static void sleep_at_exit(void)
{
    if (!exit_sleep)
        return;
    int r = nth_sleep_ns(1000000);
    printf("SLEPT rc=%d\n", r);
    fflush(stdout);
}

/* Main stays on VP 0 without a scheduling point until the daemon has taken
 * every CPU from us (VP 0 disabled under it), then exits. */
static void exit_with_no_cpu(void)
{
    while (nth_cpus_assigned() != 0 || !__atomic_load_n(&nth_rt.vps[0]->disabled, __ATOMIC_ACQUIRE))
        for (volatile int i = 0; i < 10000; i++)
            ;
    exit_sleep = 1;
    printf("EXITING\n");
    fflush(stdout);
    exit(0);
}

static void on_switch(void *data) { (void)data; }

/* The slot segment's mapping, read from /proc/self/maps at "exit" (late
 * mode): late_exit() fences it if it is gone by then. */
static uintptr_t seg_lo, seg_hi;

static void find_segment(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return;
    char line[512], want[128];
    snprintf(want, sizeof want, "/dev/shm%s", name);
    unsigned long lo, hi;
    while (fgets(line, sizeof line, f)) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        size_t n = strlen(line), wn = strlen(want);
        if (n >= wn && !strcmp(line + n - wn, want) && sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
            seg_lo = lo;
            seg_hi = hi;
        }
    }
    fclose(f);
}

/* Run after the runtime's exit handlers: the cpumgr client has detached
 * by now. nth_switch_hook_set() wakes each disabled VP through the park
 * operations, as the pthread shim's first sleep does from a late exit
 * handler (issue 4/5: that write went through a word of the unmapped
 * segment, SIGSEGV). Prints "LATE hook=<rc> unhook=<rc> fenced=<0|1>
 * vps=<e|d per VP: enabled, disabled> lazy=<1|0 per VP: never given a CPU>",
 * the VPs as the runtime left them once alone at exit. */
static void late_exit(void)
{
    /* Unmapped by the client's detach: an inaccessible mapping in its
     * place, before anything else can be mapped there, makes a write
     * through a stale word fault every time (else it may land in whatever
     * took the address: seen passing 1 run in 3). Kept mapped: the fence
     * is refused (EEXIST). */
    int fenced = 0;
    if (seg_hi > seg_lo) {
        void *p = mmap((void *)seg_lo, seg_hi - seg_lo, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p == (void *)seg_lo)
            fenced = 1;
        else if (p != MAP_FAILED)
            munmap(p, seg_hi - seg_lo); /* no MAP_FIXED_NOREPLACE: elsewhere */
    }
    char dis[64] = "", lazy[64] = "";
    for (int i = 0; i < nth_rt.nvps && i < 60; i++) {
        dis[i] = __atomic_load_n(&nth_rt.vps[i]->disabled, __ATOMIC_ACQUIRE) ? 'd' : 'e';
        lazy[i] = __atomic_load_n(&nth_rt.vps[i]->lazy, __ATOMIC_ACQUIRE) ? '1' : '0';
    }
    int r = nth_switch_hook_set(on_switch);
    int r2 = nth_switch_hook_set(NULL);
    printf("LATE hook=%d unhook=%d fenced=%d vps=%s lazy=%s\n", r, r2, fenced, dis, lazy);
    fflush(stdout);
}

/* RT_HOME=C: start the runtime on CPU C (its VP 0's CPU, the slot's home)
 * with the whole mask: bound to C until running there, then unbound, so
 * that nth_init() finds the thread on C. Returns the CPU nth_init() is
 * called on (sched_getcpu()). */
static int start_on(const char *c)
{
    cpu_set_t all, one;
    if (c && *c && sched_getaffinity(0, sizeof all, &all) == 0) {
        CPU_ZERO(&one);
        CPU_SET(atoi(c), &one);
        if (sched_setaffinity(0, sizeof one, &one) == 0) {
            while (sched_getcpu() != atoi(c))
                sched_yield();
            (void)sched_setaffinity(0, sizeof all, &all);
        }
    }
    return sched_getcpu();
}

/* Right after nth_init() and the request, before main's first scheduling
 * point: "INIT A=<attached> N=<assigned> CPUS=<list> BOUND=<the main
 * thread's one CPU, -1 if it may run on more> HOME=<CPU nth_init() was
 * called on> RC=<reclaims>" -- what a program's serial start-up runs on. */
static void init_line(int home)
{
    hwloc_bitmap_t m = NULL;
    char list[256] = "";
    if (nth_cpus_assigned_mask(&m) == 0)
        hwloc_bitmap_list_snprintf(list, sizeof list, m);
    hwloc_bitmap_free(m);
    cpu_set_t cs;
    int bound = -1;
    if (sched_getaffinity(0, sizeof cs, &cs) == 0 && CPU_COUNT(&cs) == 1)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &cs))
                bound = c;
    printf("INIT A=%d N=%d CPUS=%s BOUND=%d HOME=%d RC=%lu\n", nth_cpumgr_attached(),
           nth_cpus_assigned(), list, bound, home, nth_cpumgr_rt_reclaims());
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: rt_app SEGMENT REQUEST\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
    setenv("NTH_CPUMGR", argv[1], 1);
    if (argc > 3 && !strcmp(argv[3], "late"))
        atexit(late_exit);
    if (argc > 3 && !strcmp(argv[3], "pre") && pre_runtime(atoi(argv[2])) != 0)
        return 3;
    atexit(sleep_at_exit);
    int home = start_on(getenv("RT_HOME"));
    if (nth_init(NULL) != 0 || (strcmp(argv[2], "default") && nth_cpus_request(atoi(argv[2])) != 0))
        return 3;
    init_line(home);
    nth_t gen = NULL, spin = NULL;
    char cmd[128];
    pthread_t rep;
    if (pthread_create(&rep, NULL, reporter, NULL) != 0)
        return 3;
    size_t cl = 0;
    int spin_told = 0;
    for (;;) {
        struct pollfd p = {0, POLLIN, 0};
        if (poll(&p, 1, 1) > 0) {
            char c;
            ssize_t r = read(0, &c, 1);
            if (r <= 0)
                break; /* the test closed our stdin: leave */
            if (c != '\n' && cl < sizeof cmd - 1) {
                cmd[cl++] = c;
                continue;
            }
            cmd[cl] = 0;
            cl = 0;
            int v;
            if (sscanf(cmd, "request %d", &v) == 1) {
                printf("rc=%d\n", nth_cpus_request(v));
            } else if (!strcmp(cmd, "work") && !gen) {
                nth_create(&gen, NULL, generator, NULL);
            } else if (!strcmp(cmd, "stop") && gen) {
                __atomic_store_n(&work_stop, 1, __ATOMIC_RELEASE);
                nth_join(gen, NULL);
                gen = NULL;
                long lost = 0, dup = 0;
                for (long i = 0; i < next_item; i++) {
                    lost += counts[i] == 0;
                    dup += counts[i] > 1;
                }
                printf("DONE items=%ld lost=%ld dup=%ld\n", next_item, lost, dup);
            } else if (!strcmp(cmd, "spin") && !spin) {
                nth_attr_t a;
                nth_attr_init(&a);
                nth_attr_setvp(&a, nth_num_vps() - 1);
                nth_create(&spin, &a, spinner, NULL);
            } else if (sscanf(cmd, "fspin %d", &v) == 1) {
                pthread_t ft;
                fspin_cpu = v;
                if (pthread_create(&ft, NULL, foreign_spinner, NULL) == 0)
                    pthread_detach(ft);
                for (int i = 0; i < 20000 && !__atomic_load_n(&fspin_tid, __ATOMIC_ACQUIRE); i++)
                    usleep(500);
                printf("FSPIN tid=%d\n", __atomic_load_n(&fspin_tid, __ATOMIC_ACQUIRE));
            } else if (!strcmp(cmd, "unspin") && spin) {
                __atomic_store_n(&spin_stop, 1, __ATOMIC_RELEASE);
                nth_join(spin, NULL);
                spin = NULL;
                printf("UNSPUN\n");
            } else if (!strcmp(cmd, "exitzero")) {
                exit_with_no_cpu();
            } else if (!strcmp(cmd, "exit")) {
                find_segment(argv[1]);
                break;
            }
            fflush(stdout);
        }
        nth_yield();
        if (spin && !spin_told && __atomic_load_n(&spin_tid, __ATOMIC_ACQUIRE)) {
            printf("SPIN tid=%d cpu=%d vp=%d\n", spin_tid, __atomic_load_n(&spin_cpu, __ATOMIC_ACQUIRE),
                   __atomic_load_n(&spin_vp, __ATOMIC_ACQUIRE));
            spin_told = 1;
        }
        fflush(stdout);
    }
    if (spin)
        __atomic_store_n(&spin_stop, 1, __ATOMIC_RELEASE);
    if (gen)
        __atomic_store_n(&work_stop, 1, __ATOMIC_RELEASE);
    exit(0);
}
