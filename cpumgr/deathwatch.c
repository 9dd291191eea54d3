/*
 * deathwatch.c -- one thread, one pidfd per attached application, woken by
 * the kernel when one of them exits (deathwatch.h). The daemon thread only
 * posts what to watch (under a mutex) and reads a flag; the pidfds are
 * opened, polled and closed by the watcher alone, so no descriptor is
 * closed while another thread polls it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nth/cpumgr_shm.h"
#include "deathwatch.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture */
#endif

#define NSLOTS ((int)NTH_CPUMGR_MAX_SLOTS)

struct who {
    pid_t pid;      /* 0: nothing to watch */
    uint64_t start;
};

static struct {
    int running;               /* daemon thread only */
    pthread_t th;
    int efd;                   /* eventfd: "want changed" or "stop" */
    uint32_t *wake;            /* the daemon's futex word */
    pthread_mutex_t mu;
    struct who want[NTH_CPUMGR_MAX_SLOTS]; /* under mu */
    int stop;                  /* atomic */
    int deaths;                /* atomic */
} W = { .efd = -1, .mu = PTHREAD_MUTEX_INITIALIZER };

/* The watcher's own table. */
static struct {
    struct who who;
    int fd;        /* pidfd, or -1 (none, or pidfd_open failed: periodic check only) */
    int fired;     /* it died: not polled again (a pidfd stays readable) */
} H[NTH_CPUMGR_MAX_SLOTS];

static int pidfd_open(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0u);
}

static void tell_daemon(void)
{
    __atomic_store_n(&W.deaths, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(W.wake, 1, __ATOMIC_RELEASE);
    /* Shared futex: the word is in the segment, as the clients' wakes. */
    syscall(SYS_futex, W.wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Bring H in line with W.want. Returns nonzero if a new occupant is
 * already dead (gone before its pidfd could be opened, or its pid reused:
 * the start time differs). */
static int reconcile(void)
{
    struct who want[NTH_CPUMGR_MAX_SLOTS];
    pthread_mutex_lock(&W.mu);
    memcpy(want, W.want, sizeof want);
    pthread_mutex_unlock(&W.mu);
    int died = 0;
    for (int i = 0; i < NSLOTS; i++) {
        if (want[i].pid == H[i].who.pid && want[i].start == H[i].who.start)
            continue;
        if (H[i].fd >= 0)
            close(H[i].fd);
        H[i].who = want[i];
        H[i].fd = -1;
        H[i].fired = 0;
        if (want[i].pid <= 0)
            continue;
        int fd = pidfd_open(want[i].pid);
        if (fd < 0) {
            if (errno == ESRCH)
                died = H[i].fired = 1;
            continue; /* EMFILE and the like: the periodic check covers it */
        }
        /* The pidfd was opened after the start time was read: if the start
         * time still matches, it names that very process. */
        if (nth_cpumgr_proc_start_time(want[i].pid) != want[i].start) {
            close(fd);
            died = H[i].fired = 1;
            continue;
        }
        H[i].fd = fd;
    }
    return died;
}

static void *watcher(void *arg)
{
    (void)arg;
    struct pollfd pf[NTH_CPUMGR_MAX_SLOTS + 1];
    int slot[NTH_CPUMGR_MAX_SLOTS + 1];
    for (;;) {
        int n = 0;
        pf[n].fd = W.efd;
        pf[n].events = POLLIN;
        slot[n++] = -1;
        for (int i = 0; i < NSLOTS; i++)
            if (H[i].fd >= 0 && !H[i].fired) {
                pf[n].fd = H[i].fd;
                pf[n].events = POLLIN;
                slot[n++] = i;
            }
        if (poll(pf, (nfds_t)n, -1) < 0)
            continue; /* EINTR (signals are blocked here, but be safe) */
        if (__atomic_load_n(&W.stop, __ATOMIC_ACQUIRE))
            break;
        /* Deaths first: reconcile() may close and reuse these numbers. */
        int died = 0;
        for (int k = 1; k < n; k++)
            if (pf[k].revents) {
                H[slot[k]].fired = 1;
                died = 1;
            }
        if (pf[0].revents) {
            uint64_t v;
            (void)!read(W.efd, &v, sizeof v);
            died |= reconcile();
        }
        if (died)
            tell_daemon();
    }
    for (int i = 0; i < NSLOTS; i++)
        if (H[i].fd >= 0) {
            close(H[i].fd);
            H[i].fd = -1;
        }
    return NULL;
}

static void poke(void)
{
    uint64_t one = 1;
    (void)!write(W.efd, &one, sizeof one);
}

int cm_dw_start(uint32_t *wake_word)
{
    if (W.running)
        return 0;
    int probe = pidfd_open(getpid());
    if (probe < 0)
        return errno;
    close(probe);
    W.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (W.efd < 0)
        return errno;
    W.wake = wake_word;
    __atomic_store_n(&W.stop, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&W.deaths, 0, __ATOMIC_RELAXED);
    memset(W.want, 0, sizeof W.want);
    for (int i = 0; i < NSLOTS; i++) {
        memset(&H[i].who, 0, sizeof H[i].who);
        H[i].fd = -1;
        H[i].fired = 0;
    }
    /* SIGTERM and SIGINT must reach the daemon thread, whose futex wait
     * they cut short (a clean stop is not delayed to the next period). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(&W.th, NULL, watcher, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        close(W.efd);
        W.efd = -1;
        return e;
    }
    W.running = 1;
    return 0;
}

static void set_want(int slot, pid_t pid, uint64_t start)
{
    if (!W.running || slot < 0 || slot >= NSLOTS)
        return;
    pthread_mutex_lock(&W.mu);
    int same = W.want[slot].pid == pid && W.want[slot].start == start;
    W.want[slot].pid = pid;
    W.want[slot].start = start;
    pthread_mutex_unlock(&W.mu);
    if (!same)
        poke();
}

void cm_dw_watch(int slot, pid_t pid, uint64_t start)
{
    set_want(slot, pid, start);
}

void cm_dw_unwatch(int slot)
{
    set_want(slot, 0, 0);
}

int cm_dw_deaths(void)
{
    if (!W.running)
        return 0;
    return __atomic_exchange_n(&W.deaths, 0, __ATOMIC_ACQ_REL);
}

void cm_dw_stop(void)
{
    if (!W.running)
        return;
    __atomic_store_n(&W.stop, 1, __ATOMIC_RELEASE);
    poke();
    pthread_join(W.th, NULL);
    close(W.efd);
    W.efd = -1;
    W.running = 0;
}
