/*
 * status.c -- read-only views of the segment, and the stop request.
 * Values shown come from the daemon-written fields; client-written ones
 * (name, request, priority) are printed sanitised.
 */
#include <errno.h>
#include <hwloc.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nth/cpumgr_sigbus.h"
#include "segment.h"
#include "status.h"

/* Test hook (tests/cpumgr/cli.sh): CPUMGR_TEST_STATUS_PAUSE=FILE makes the
 * first table, once the segment is mapped, create FILE and wait (10 s at
 * most) until it is removed, so that a test can shrink the segment right
 * then: a handshake, not a timing. */
static void test_pause(void)
{
    static int done;
    const char *f = getenv("CPUMGR_TEST_STATUS_PAUSE");
    if (done || !f || !*f)
        return;
    done = 1;
    FILE *o = fopen(f, "w");
    if (!o)
        return;
    fclose(o);
    for (int i = 0; i < 10000 && access(f, F_OK) == 0; i++) {
        struct timespec ts = { 0, 1000000L };
        nanosleep(&ts, NULL);
    }
}

static void mask_list(const uint64_t *m, char *out, size_t len)
{
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    if (!b) { snprintf(out, len, "?"); return; }
    for (unsigned c = 0; c < NTH_CPUMGR_MAX_CPUS; c++)
        if (nth_cpumgr_mask_test(m, c))
            hwloc_bitmap_set(b, c);
    if (hwloc_bitmap_iszero(b))
        snprintf(out, len, "-");
    else
        hwloc_bitmap_list_snprintf(out, len, b);
    hwloc_bitmap_free(b);
}

static int print_once(const char *name)
{
    char msg[200];
    struct nth_cpumgr_shm *s;
    int fd = -1;
    int rc = cm_seg_open_fd(name, &s, &fd, msg, sizeof msg);
    if (rc) {
        fprintf(stderr, "cpumgr: %s: %s\n", name, rc == ENOENT ? "no daemon (no segment)" : msg);
        return 1;
    }
    /* The segment may shrink under us (truncate(1), `>`, a client's
     * ftruncate): a read past its new end is SIGBUS, which killed status
     * --watch. The guard grows it back and the read sees zeros; we say so
     * below. Without the guard (sigaction failed) we read as before. */
    unsigned grown0 = nth_cpumgr_sigbus_grown();
    (void)nth_cpumgr_sigbus_guard(s, sizeof *s, fd);
    test_pause();
    int alive = cm_seg_daemon_alive(s) &&
                __atomic_load_n(&s->daemon_state, __ATOMIC_ACQUIRE) == NTH_CPUMGR_DAEMON_RUNNING;
    char cpus[256];
    mask_list(s->cpus, cpus, sizeof cpus);
    printf("cpumgr %s: daemon pid %d %s, %u CPU%s (%s), allocation epoch %llu, rotations %llu\n",
           name, (int)s->daemon_pid, alive ? "running" : "NOT running", s->ncpus,
           s->ncpus == 1 ? "" : "s", cpus,
           (unsigned long long)__atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE),
           (unsigned long long)__atomic_load_n(&s->rotations, __ATOMIC_RELAXED));
    printf("%-4s %-20s %8s %5s %5s %5s %-16s %12s\n", "SLOT", "NAME", "PID", "PRIO", "REQ",
           "ASSIG", "CPUS", "CPU-SECONDS");
    for (unsigned i = 0; i < NTH_CPUMGR_MAX_SLOTS; i++) {
        const struct nth_cpumgr_slot *sl = &s->slots[i];
        uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
        if (st == NTH_CPUMGR_SLOT_FREE)
            continue;
        char nm[NTH_CPUMGR_NAME_LEN];
        for (unsigned k = 0; k < sizeof nm; k++) {
            char c = sl->name[k];
            /* Control bytes and non-ASCII: a terminal may act on either. */
            nm[k] = (c && ((unsigned char)c < 32 || (unsigned char)c >= 127)) ? '?' : c;
        }
        nm[sizeof nm - 1] = 0;
        char list[256];
        uint64_t assigned[NTH_CPUMGR_MASK_WORDS];
        for (unsigned w = 0; w < NTH_CPUMGR_MASK_WORDS; w++)
            assigned[w] = __atomic_load_n(&sl->assigned[w], __ATOMIC_RELAXED);
        mask_list(assigned, list, sizeof list);
        /* --share: the CPUs this slot shares with one other application,
         * marked in both slots (cpumgr(8)). */
        uint64_t shared[NTH_CPUMGR_MASK_WORDS], any = 0;
        for (unsigned w = 0; w < NTH_CPUMGR_MASK_WORDS; w++)
            any |= shared[w] = __atomic_load_n(&sl->shared[w], __ATOMIC_RELAXED);
        if (any) {
            char sh[200];
            mask_list(shared, sh, sizeof sh);
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, " shared:%s", sh);
        }
        /* Its REQ stays what it wants once it has work again. */
        if (__atomic_load_n(&sl->dormant, __ATOMIC_RELAXED) == 1u) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s(dormant)", l ? " " : "");
        }
        if (st != NTH_CPUMGR_SLOT_ACTIVE)
            snprintf(list, sizeof list, "%s", st == NTH_CPUMGR_SLOT_CLAIMING ? "(attaching)" : "(bad slot)");
        printf("%-4u %-20s %8d %5d %5d %5u %-16s %12.3f\n", i, nm, (int)sl->pid,
               (int)sl->priority, (int)sl->request, sl->assigned_count, list,
               (double)__atomic_load_n(&sl->cpu_ns, __ATOMIC_RELAXED) / 1e9);
    }
    nth_cpumgr_sigbus_clear();
    close(fd);
    cm_seg_unmap(s);
    if (nth_cpumgr_sigbus_grown() != grown0) {
        /* stdout first: the table is before the line that says it is torn. */
        fflush(stdout);
        fprintf(stderr, "cpumgr: %s: the segment shrank while this table was read (truncated by "
                "something other than the daemon); it was grown back to %zu bytes, and the "
                "table may show zeros; the daemon repairs its header\n", name, sizeof *s);
        return 4;
    }
    return alive ? 0 : 3;
}

int cm_status(const char *name, unsigned watch_ms)
{
    if (!watch_ms)
        return print_once(name);
    /* Clear the screen only on a terminal: piped to a file or `tee`, the
     * escape codes would be junk in the log; there a blank line separates
     * the tables. */
    int tty = isatty(STDOUT_FILENO);
    for (int first = 1;; first = 0) {
        if (tty)
            printf("\033[H\033[2J");
        else if (!first)
            printf("\n");
        int rc = print_once(name);
        fflush(stdout);
        if (rc == 1)
            return rc;
        struct timespec ts = { (time_t)(watch_ms / 1000), (long)(watch_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
}

/* How long `cpumgr stop` waits for the daemon to say STOPPED and unlink
 * its segment, then for its process to end (it writes its trace and
 * accounting files between the two). */
#define STOP_STOPPED_MS 5000
#define STOP_EXIT_MS 10000
/* Once it has exited, how long for its parent to reap it, so that the pid
 * is gone too: init, for a daemon that detached itself, which here took
 * up to 1.7 s (its reaping is not immediate). */
#define STOP_REAP_MS 5000

static void nap_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* The parent of process pid (field 4 of /proc/PID/stat), or -1. */
static int32_t proc_ppid(int32_t pid)
{
    char path[40], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');   /* the command name may hold ')' */
    int ppid;
    char state;
    return p && sscanf(p + 1, " %c %d", &state, &ppid) == 2 ? (int32_t)ppid : -1;
}

/* Whether the exited pid's parent is one of our ancestors: a program that
 * started the daemon in the foreground and runs `cpumgr stop` (system(3),
 * a script's child) reaps it only after we return, so waiting for that
 * would only delay it. */
static int reaped_after_us(int32_t pid)
{
    int32_t parent = proc_ppid(pid);
    if (parent <= 1)
        return 0;
    int32_t a = (int32_t)getppid();
    for (int depth = 0; a > 1 && depth < 64; depth++, a = proc_ppid(a))
        if (a == parent)
            return 1;
    return 0;
}

/* Wait until process pid (started at start time st) has exited: its pidfd
 * (pfd, -1 if none) readable, else /proc no longer showing it alive; then
 * until the pid itself is gone (STOP_REAP_MS at most), unless our own
 * caller is the one to reap it. Returns 0 once exited, ETIMEDOUT after
 * timeout_ms. */
static int wait_exit(int32_t pid, uint64_t st, int pfd, long timeout_ms)
{
    int exited = 0;
    if (pfd >= 0) {
        struct pollfd p = { .fd = pfd, .events = POLLIN };
        for (;;) {
            int r = poll(&p, 1, (int)timeout_ms);
            if (r >= 0 || errno != EINTR) {
                exited = r > 0;
                break;
            }
        }
    } else {
        /* No pidfd (before Linux 5.3): 0 means gone or a zombie. */
        for (long waited = 0; waited < timeout_ms && !exited; waited += 10) {
            exited = nth_cpumgr_proc_start_time(pid) != st;
            if (!exited)
                nap_ms(10);
        }
    }
    if (!exited)
        return ETIMEDOUT;
    if (kill(pid, 0) == 0 && reaped_after_us(pid))
        return 0;
    for (long waited = 0; waited < STOP_REAP_MS && kill(pid, 0) == 0; waited += 5)
        nap_ms(5);
    return 0;
}

int cm_stop(const char *name)
{
    char msg[200];
    struct nth_cpumgr_shm *s;
    int rc = cm_seg_open(name, &s, msg, sizeof msg);
    if (rc) {
        fprintf(stderr, "cpumgr stop: %s: %s\n", name, rc == ENOENT ? "no daemon (no segment)" : msg);
        return 1;
    }
    int32_t pid = s->daemon_pid;
    uint64_t st = s->daemon_start_time;
    /* The pidfd before the liveness check: if the check then says our
     * daemon, the pidfd is that process's, not a later one's with its pid. */
    int pfd = pid > 0 ? (int)syscall(SYS_pidfd_open, (long)pid, 0L) : -1;
    if (!cm_seg_daemon_alive(s)) {
        cm_seg_unmap(s);
        shm_unlink(name);
        if (pfd >= 0)
            close(pfd);
        fprintf(stderr, "cpumgr stop: %s: no daemon running; stale segment removed\n", name);
        return 0;
    }
    if (kill(pid, SIGTERM) != 0) {
        fprintf(stderr, "cpumgr stop: cannot signal pid %d: %s\n", (int)pid, strerror(errno));
        cm_seg_unmap(s);
        if (pfd >= 0)
            close(pfd);
        return 1;
    }
    for (int i = 0; i < STOP_STOPPED_MS / 10; i++) {
        if (!cm_seg_daemon_alive(s) ||
            __atomic_load_n(&s->daemon_state, __ATOMIC_ACQUIRE) == NTH_CPUMGR_DAEMON_STOPPED) {
            cm_seg_unmap(s);
            /* The daemon unlinks right after saying STOPPED: wait for it. */
            for (int k = 0; k < 200; k++) {
                struct nth_cpumgr_shm *again = NULL;
                if (cm_seg_open(name, &again, msg, sizeof msg) == ENOENT)
                    break;
                cm_seg_unmap(again);
                nap_ms(10);
            }
            /* "stopped" once the process is gone, not only the service:
             * a script or service manager may look at the pid next. */
            int w = wait_exit(pid, st, pfd, STOP_EXIT_MS);
            if (pfd >= 0)
                close(pfd);
            if (w) {
                fprintf(stderr, "cpumgr stop: daemon %d stopped (segment %s removed) but its process "
                        "has not exited within %d s\n", (int)pid, name, STOP_EXIT_MS / 1000);
                return 1;
            }
            printf("cpumgr stop: daemon %d stopped\n", (int)pid);
            return 0;
        }
        nap_ms(10);
    }
    cm_seg_unmap(s);
    if (pfd >= 0)
        close(pfd);
    fprintf(stderr, "cpumgr stop: daemon %d did not stop within %d s\n", (int)pid, STOP_STOPPED_MS / 1000);
    return 1;
}
