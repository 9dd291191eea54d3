/*
 * nth/cpumgr_sigbus.h -- survive a shrunk cpumgr segment (issue 5, fresh11
 * trial F1; DESIGN invariant 7).
 *
 * The segment is a shared file that any process allowed to attach may
 * truncate (truncate(1), a shell `>` redirect, ftruncate(2)). A load or
 * store through a MAP_SHARED mapping past the new end of file raises
 * SIGBUS (mmap(2), "SIGBUS"), which killed the daemon and every attached
 * application. The guard below is a SIGBUS handler (sigaction(2) with
 * SA_SIGINFO) that, for a fault inside the guarded mapping, grows the file
 * back to the mapping's length with ftruncate(2) -- async-signal-safe per
 * POSIX signal-safety(7) -- and returns: the faulting access is retried
 * and reads zeros, which the readers' validation already treats as a
 * corrupt header or a free slot (reported, never trusted). A fault
 * anywhere else goes to the handler installed before ours, or kills the
 * process as the default action would.
 *
 * One guarded mapping per process (the daemon's, or the client's current
 * one); header-only because cpumgr depends on the shared headers only.
 *
 * Limits, said where users read them (README, cpumgr(8)):
 *  - an application that installs its own SIGBUS handler after nthlib has
 *    attached replaces this guard unless it chains to the previous handler
 *    (the usual sigaction(2) practice); a shrunk segment then reaches its
 *    handler with si_addr inside the segment mapping;
 *  - the fd is checked (fstat, same inode) before the ftruncate, so a
 *    descriptor number reused for another file is never grown.
 */
#ifndef NTH_CPUMGR_SIGBUS_H
#define NTH_CPUMGR_SIGBUS_H

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static struct {
    char *base;             /* atomic: guarded mapping, or NULL */
    size_t len;             /* atomic: its length in bytes */
    int fd;                 /* atomic: read-write descriptor of its file, or -1 */
    ino_t ino;              /* atomic: that file's inode */
    unsigned grown;         /* atomic: times the handler grew the file back */
    int installed;
    struct sigaction prev;  /* the SIGBUS disposition we replaced */
} nth_cpumgr_sigbus_g = { .fd = -1 };

static void nth_cpumgr_sigbus_handler(int sig, siginfo_t *si, void *uc)
{
    char *a = si ? (char *)si->si_addr : NULL;
    char *b = __atomic_load_n(&nth_cpumgr_sigbus_g.base, __ATOMIC_ACQUIRE);
    size_t n = __atomic_load_n(&nth_cpumgr_sigbus_g.len, __ATOMIC_RELAXED);
    int fd = __atomic_load_n(&nth_cpumgr_sigbus_g.fd, __ATOMIC_RELAXED);
    ino_t ino = __atomic_load_n(&nth_cpumgr_sigbus_g.ino, __ATOMIC_RELAXED);
    struct stat st;
    if (b && a >= b && a < b + n && fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == ino &&
        ((size_t)st.st_size >= n || ftruncate(fd, (off_t)n) == 0)) {
        __atomic_add_fetch(&nth_cpumgr_sigbus_g.grown, 1u, __ATOMIC_RELAXED);
        return; /* the access is retried and now reads zeros */
    }
    const struct sigaction *p = &nth_cpumgr_sigbus_g.prev;
    if ((p->sa_flags & SA_SIGINFO) && p->sa_sigaction) {
        p->sa_sigaction(sig, si, uc);
        return;
    }
    if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
        p->sa_handler(sig);
        return;
    }
    /* Default action: restore it; the retried access kills us with SIGBUS
     * as it would have without the guard (a core, the same exit status). */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGBUS, &dfl, NULL);
}

/* Guard [base, base+len), the MAP_SHARED mapping of the file open
 * read-write as fd (kept open by the caller until nth_cpumgr_sigbus_clear):
 * installs the handler on the first call (SA_SIGINFO | SA_ONSTACK |
 * SA_NODEFER, the previous disposition kept for chaining). Returns 0, or
 * the errno of fstat/sigaction (the mapping is then unguarded, as before).
 * Not thread-safe against itself: callers hold their own lock. */
static inline int nth_cpumgr_sigbus_guard(void *base, size_t len, int fd)
{
    struct stat st;
    if (fd < 0)
        return EBADF;
    if (fstat(fd, &st) != 0)
        return errno;
    __atomic_store_n(&nth_cpumgr_sigbus_g.base, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&nth_cpumgr_sigbus_g.fd, fd, __ATOMIC_RELAXED);
    __atomic_store_n(&nth_cpumgr_sigbus_g.ino, st.st_ino, __ATOMIC_RELAXED);
    __atomic_store_n(&nth_cpumgr_sigbus_g.len, len, __ATOMIC_RELAXED);
    __atomic_store_n(&nth_cpumgr_sigbus_g.base, (char *)base, __ATOMIC_RELEASE);
    if (nth_cpumgr_sigbus_g.installed)
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = nth_cpumgr_sigbus_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &nth_cpumgr_sigbus_g.prev) != 0)
        return errno;
    nth_cpumgr_sigbus_g.installed = 1;
    return 0;
}

/* Stop guarding (before the fd is closed or the mapping retired); the
 * handler stays installed and only chains from then on. */
static inline void nth_cpumgr_sigbus_clear(void)
{
    __atomic_store_n(&nth_cpumgr_sigbus_g.base, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&nth_cpumgr_sigbus_g.fd, -1, __ATOMIC_RELEASE);
}

/* How many times the handler grew the guarded file back (for a log line
 * said outside the handler). Async-signal-safe, any thread. */
static inline unsigned nth_cpumgr_sigbus_grown(void)
{
    return __atomic_load_n(&nth_cpumgr_sigbus_g.grown, __ATOMIC_RELAXED);
}

#endif
