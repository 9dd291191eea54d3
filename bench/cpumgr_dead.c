/*
 * cpumgr_dead.c -- dead-client reclaim latency (issue 5: "a dead client's
 * slot is reclaimed within one period"): a cpumgr daemon, a survivor S and
 * a victim V, both asking for every CPU (raw slots in the segment, claimed
 * by forked children of this process, so they map it as a client does and
 * cost nothing while they wait). Each round starts a victim, waits until
 * the daemon has split the CPUs between S and V, kills V with SIGKILL and
 * measures the time until S's slot is assigned every CPU; V is reaped only
 * after that (the daemon sees a zombie, as when the parent is slow).
 *
 * usage: cpumgr-dead --cpumgr PATH [--kills N] [--period MS]
 * Prints one line: "kills N period MS p50 X max Y ms samples a,b,...".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nth/cpumgr_shm.h"

static struct nth_cpumgr_shm *shm;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nap_us(long us)
{
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}

static void die(const char *what)
{
    fprintf(stderr, "cpumgr-dead: %s\n", what);
    exit(1);
}

/* A forked child: claim a slot asking for every CPU, then wait to die. */
static pid_t client(unsigned req)
{
    pid_t pid = fork();
    if (pid < 0)
        die("fork failed");
    if (pid)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (unsigned i = 0; i < NTH_CPUMGR_MAX_SLOTS; i++) {
        struct nth_cpumgr_slot *r = &shm->slots[i];
        uint32_t exp = NTH_CPUMGR_SLOT_FREE;
        if (!__atomic_compare_exchange_n(&r->state, &exp, NTH_CPUMGR_SLOT_CLAIMING, 0,
                                         __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            continue;
        r->pid = getpid();
        r->start_time = nth_cpumgr_proc_start_time(getpid());
        memset(r->affinity, 0xff, sizeof r->affinity);
        r->request = (int32_t)req;
        r->priority = 1;
        snprintf(r->name, sizeof r->name, "dead-bench");
        __atomic_store_n(&r->state, NTH_CPUMGR_SLOT_ACTIVE, __ATOMIC_RELEASE);
        __atomic_add_fetch(&shm->wake, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &shm->wake, FUTEX_WAKE, 1, NULL, NULL, 0);
        for (;;)
            pause();
    }
    _exit(3);
}

/* Assigned CPUs of pid's slot; -1 if it has none. */
static int count_of(pid_t pid)
{
    for (unsigned i = 0; i < NTH_CPUMGR_MAX_SLOTS; i++) {
        struct nth_cpumgr_slot *r = &shm->slots[i];
        if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == NTH_CPUMGR_SLOT_ACTIVE &&
            __atomic_load_n(&r->pid, __ATOMIC_RELAXED) == pid)
            return (int)__atomic_load_n(&r->assigned_count, __ATOMIC_ACQUIRE);
    }
    return -1;
}

static void wait_for(pid_t pid, int lo, int hi, const char *what)
{
    uint64_t t0 = now_ns();
    for (;;) {
        int c = count_of(pid);
        if (c >= lo && c <= hi)
            return;
        if (now_ns() - t0 > 20000000000ull)
            die(what);
        nap_us(200);
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *cm = NULL, *period = "10";
    int kills = 20;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cpumgr") == 0 && i + 1 < argc) cm = argv[++i];
        else if (strcmp(argv[i], "--kills") == 0 && i + 1 < argc) kills = atoi(argv[++i]);
        else if (strcmp(argv[i], "--period") == 0 && i + 1 < argc) period = argv[++i];
        else { fprintf(stderr, "usage: cpumgr-dead --cpumgr PATH [--kills N] [--period MS]\n"); return 2; }
    }
    if (!cm || kills < 1 || kills > 10000)
        die("--cpumgr PATH is required; --kills 1..10000");
    char seg[64];
    snprintf(seg, sizeof seg, "/nth-dead-bench-%d", (int)getpid());
    pid_t d = fork();
    if (d < 0)
        die("fork failed");
    if (d == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 2);
        execl(cm, cm, "--foreground", "--name", seg, "--period", period, (char *)NULL);
        _exit(127);
    }
    uint64_t t0 = now_ns();
    for (;;) {
        int fd = shm_open(seg, O_RDWR, 0);
        if (fd >= 0) {
            void *p = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
            if (p != MAP_FAILED) {
                shm = p;
                if (__atomic_load_n(&shm->daemon_state, __ATOMIC_ACQUIRE) ==
                    NTH_CPUMGR_DAEMON_RUNNING)
                    break;
                munmap(p, sizeof *shm);
                shm = NULL;
            }
        }
        if (now_ns() - t0 > 20000000000ull || waitpid(d, NULL, WNOHANG) == d)
            die("daemon not ready");
        nap_us(2000);
    }
    int n = (int)shm->ncpus;
    if (n < 2)
        die("needs 2 CPUs or more");
    pid_t s = client((unsigned)n);
    wait_for(s, n, n, "survivor never got every CPU");
    double *ms = calloc((size_t)kills, sizeof *ms);
    for (int k = 0; k < kills; k++) {
        pid_t v = client((unsigned)n);
        wait_for(v, 1, n, "victim never got a CPU");
        wait_for(s, 1, n - 1, "survivor never gave a CPU up");
        /* Let a period or so pass: a kill lands anywhere in the period. */
        nap_us(3000 + (long)(k * 7919 % 10000));
        kill(v, SIGKILL);
        uint64_t a = now_ns();
        while (count_of(s) != n) {
            if (now_ns() - a > 20000000000ull)
                die("dead client's CPUs not reassigned within 20 s");
            nap_us(50);
        }
        ms[k] = (double)(now_ns() - a) / 1e6;
        waitpid(v, NULL, 0);
    }
    kill(s, SIGKILL);
    waitpid(s, NULL, 0);
    kill(d, SIGTERM);
    waitpid(d, NULL, 0);
    shm_unlink(seg);
    double *sorted = malloc((size_t)kills * sizeof *sorted);
    memcpy(sorted, ms, (size_t)kills * sizeof *ms);
    qsort(sorted, (size_t)kills, sizeof *sorted, cmp);
    printf("kills %d period %s p50 %.2f max %.2f ms samples", kills, period,
           sorted[kills / 2], sorted[kills - 1]);
    for (int k = 0; k < kills; k++)
        printf("%c%.2f", k ? ',' : ' ', ms[k]);
    printf("\n");
    free(sorted);
    free(ms);
    return 0;
}
