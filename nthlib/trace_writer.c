/*
 * trace_writer.c -- the per-process binary file and its background writers.
 *
 * Two kernel threads of libc (pthread_create found with libc_real.h, so
 * that a pthread shim interposing pthread_* does not turn them into
 * nano-threads), with every signal blocked so fatal-signal handlers never
 * run on them:
 *   nth-trace      the idle writer, under SCHED_BATCH (its wake-ups never
 *                  preempt a computing VP, sched(7)): drains every buffer
 *                  when the rescuer's tick finds records waiting, or at
 *                  once when a buffer is half full. It has no timer of its
 *                  own: while nothing is recorded it never wakes (it woke
 *                  every NTH_TRACE_FLUSH_MS, 10 times a second by default,
 *                  to find nothing).
 *   nth-trace-rs   the rescuer, normal policy, keeps the two promises a
 *                  late writer would break (a SCHED_BATCH thread waits
 *                  for the running thread's slice to end): every
 *                  NTH_TRACE_FLUSH_MS it looks for records waiting and,
 *                  if there are, kicks the idle writer; at the end of
 *                  that tick, if the writer has not started a pass since
 *                  the kick, it drains itself, so a record reaches the file
 *                  within two flush intervals (what _exit() and SIGKILL
 *                  keep); and a buffer three quarters full wakes it at
 *                  once, so the recording does not lose events for as
 *                  long as the CPUs stay busy. An idle process's tick
 *                  costs this one wake-up and two loads per buffer.
 * Draining is serialised by a spin flag (never pthread_mutex_*), taken per
 * buffer by the writers and for everything by nth_trace_finish().
 */
#ifdef HAVE_CONFIG_H
#include "config.h"   /* NTH_ASAN, NTH_TSAN */
#include "env_msg.h"
#endif
#include "env_names.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "trace_convert.h"
#include "trace_rt.h"
#include "trace_clock.h"
#include "libc_real.h"

static int wr_fd = -1;
static pid_t wr_pid;                     /* a forked child must not write our file */
static char *wr_bin_path, *wr_out_path;
static unsigned wr_flush_ms = 100;
static uint64_t wr_limit = 4ull << 30;   /* bytes of records in the .bin */
static uint64_t wr_bytes;                /* written so far (drainer only) */
static uint64_t wr_dropped;              /* events discarded past the limit */
static uint64_t wr_reported;             /* of which already in a LOST record */
static uint64_t wr_dropped_recs;         /* of which records (not a LOST record's count):
                                            the rest is in the buffers' lost_total */
static int wr_limit_hit;
static uint32_t wr_wake;                 /* futex word of the idle writer */
static uint32_t wr_urgent;               /* futex word of the rescuer */
static uint64_t wr_tick;                 /* the rescuer's flush ticks so far */
static uint64_t wr_idle_covered;         /* wr_tick at the start of the idle
                                            writer's last complete pass */
static int wr_stop, wr_done, wr_started, wr_finishing;
static int wr_drain_lock;
int nth_trace_writer_test_hold;

static void kick(uint32_t *word)
{
    __atomic_fetch_add(word, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void nth_trace_kick_writer(void)
{
    kick(&wr_wake);
}

void nth_trace_kick_rescuer(void)
{
    kick(&wr_urgent);
}

/* Bounded: a drainer stuck in write(2) must not hang a fatal-signal handler. */
static int drain_lock(long max_ms)
{
    for (long i = 0; __atomic_exchange_n(&wr_drain_lock, 1, __ATOMIC_ACQUIRE); i++) {
        if (max_ms >= 0 && i >= max_ms * 10)
            return 0;
        nth_sys_sleep_ns(100000); /* a kernel sleep, never the shim's nano-thread one */
    }
    return 1;
}

static void drain_unlock(void)
{
    __atomic_store_n(&wr_drain_lock, 0, __ATOMIC_RELEASE);
}

static int wr_err;                       /* errno of the first failed append, 0 if none */

/* Writes the concatenation of parts to stderr as one line (cut to 1 KiB,
 * still ending in a newline). Signal-safe: no stdio, no malloc. */
static void say_parts(const char *const *parts, size_t nparts)
{
    char line[1024];
    size_t n = 0;
    for (size_t i = 0; i < nparts; i++)
        for (const char *c = parts[i]; *c && n < sizeof line - 1; c++)
            line[n++] = *c;
    if (n == 0)
        return;
    if (line[n - 1] != '\n')
        line[n - 1] = '\n';
    ssize_t w = nth_sys_write(2, line, n);
    (void)w;
}

/* The first failed append, said once (one line naming the file and the
 * cause) and marked in the file's header, so that a converter blames the
 * missing records on it rather than on a kill. Signal-safe: write(2),
 * pwrite(2), strerrordesc_np (a table look-up, no locale, no malloc). */
static void report_write_error(int e)
{
    if (wr_err)
        return;
    wr_err = e ? e : EIO;
    const char *why = strerrordesc_np(wr_err);
    const char *parts[] = { "nthlib: trace: cannot write ", wr_bin_path ? wr_bin_path : "the trace file", ": ",
                            why ? why : "unknown error", "; events from now on are counted as lost\n" };
    say_parts(parts, sizeof parts / sizeof parts[0]);
    uint32_t flags = NTH_TRACE_FLAG_WRITE_ERROR | (uint32_t)wr_err << 16;
    ssize_t w = pwrite(wr_fd, &flags, sizeof flags, offsetof(struct nth_trace_file_header, flags));
    (void)w;
}

/* Append n records after the whole records on file (header + wr_bytes)
 * and add what reached the file to wr_bytes. On a failure (a full disk:
 * often a short write, then ENOSPC) the records that reached the file
 * whole stay, the file is cut back to the last of them, so that it never
 * ends in a torn record, and the failure is reported once. Returns the
 * number of records written (n unless it failed). */
static uint64_t write_recs(const struct nth_trace_rec *p, uint64_t n)
{
    const char *c = (const char *)p;
    size_t len = (size_t)n * sizeof *p, done = 0;
    while (done < len) {
        ssize_t w = nth_sys_write(wr_fd, c + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;   /* 0 bytes written: no room */
            uint64_t whole = done / sizeof *p;
            wr_bytes += whole * sizeof *p;
            off_t end = (off_t)(sizeof(struct nth_trace_file_header) + wr_bytes);
            if (done % sizeof *p && ftruncate(wr_fd, end) == 0)
                (void)lseek(wr_fd, end, SEEK_SET);
            report_write_error(e);
            return whole;
        }
        done += (size_t)w;
    }
    wr_bytes += len;
    return n;
}

static void write_mark(uint16_t type, uint64_t count)
{
    struct nth_trace_rec r = { .ts = nth_trace_now(), .type = type,
                               .vp = NTH_TRACE_NO_VP, .value = count };
    if (write_recs(&r, 1) == 1) {
        if (type == NTH_REC_LOST)
            wr_reported += count;
    }
}

/* Append [tail, head) of buffer b; past the size limit, count instead.
 * Under the drain lock. */
static void drain_one(struct nth_trace_buf *b)
{
    uint64_t tail = b->tail, head = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
    uint64_t n = head - tail;
    if (!n)
        return;
    /* Up to the size limit the records go to the file; past it they
     * are counted (a dropped LOST record stands for what it counted). */
    uint64_t room = wr_limit_hit || wr_bytes >= wr_limit ? 0 : (wr_limit - wr_bytes) / sizeof(struct nth_trace_rec);
    uint64_t keep = n < room ? n : room;
    if (keep) {
        uint64_t first = tail & (b->cap - 1);
        uint64_t n1 = keep < b->cap - first ? keep : b->cap - first;
        uint64_t w = write_recs(&b->ring[first], n1);
        if (w == n1 && keep > n1)
            w += write_recs(&b->ring[0], keep - n1);
        for (uint64_t i = tail + w; i != tail + keep; i++) {   /* disk full or closed: count, never block */
            const struct nth_trace_rec *r = &b->ring[i & (b->cap - 1)];
            wr_dropped += r->type == NTH_REC_LOST ? r->value : 1;
            wr_dropped_recs += r->type != NTH_REC_LOST;
        }
    }
    if (keep < n) {
        for (uint64_t i = tail + keep; i != head; i++) {
            const struct nth_trace_rec *r = &b->ring[i & (b->cap - 1)];
            wr_dropped += r->type == NTH_REC_LOST ? r->value : 1;
            wr_dropped_recs += r->type != NTH_REC_LOST;
        }
        if (!wr_limit_hit) {
            wr_limit_hit = 1;   /* the first loss is marked where it happened */
            write_mark(NTH_REC_LOST, wr_dropped);
        }
    }
    __atomic_store_n(&b->tail, head, __ATOMIC_RELEASE);
}

static void drain_all(void)
{
    for (struct nth_trace_buf *b = __atomic_load_n(&nth_trace_bufs, __ATOMIC_ACQUIRE); b; b = b->next)
        drain_one(b);
}

/* A writer's pass: the lock is taken per buffer, so that the rescuer (or
 * nth_trace_finish) waits for at most one buffer's write while the idle
 * writer, which may lose its CPU at any moment, holds it. Once finishing
 * has started the file is nth_trace_finish()'s alone (it may be closed). */
static void writer_pass(void)
{
    for (struct nth_trace_buf *b = __atomic_load_n(&nth_trace_bufs, __ATOMIC_ACQUIRE); b; b = b->next) {
        if (!drain_lock(-1))
            return;
        if (!__atomic_load_n(&wr_stop, __ATOMIC_ACQUIRE))
            drain_one(b);
        drain_unlock();
    }
}

/* Why SCHED_BATCH: at normal policy the writer's wake-up every
 * NTH_TRACE_FLUSH_MS preempted a VP computing on its CPU and made the VP's
 * team wait for it, as the stall monitor's did (~10 % of LU 1000). A
 * SCHED_BATCH wake-up never preempts; the writer runs in the CPUs' gaps or
 * when the running thread's slice ends, at normal weight; the rescuer
 * covers a late writer (flush interval, full buffers). Not SCHED_IDLE: a
 * SCHED_IDLE thread on CPUs other processes keep busy waited seconds for a
 * CPU, and the process's exit waits for every thread to run once more
 * (watchdog.c). The system call, not pthread_setschedparam: under the
 * pthread shim that one is the shim's. */
static void *idle_writer_main(void *arg)
{
    (void)arg;
    struct sched_param sp = { 0 };
    (void)sched_setscheduler(0, SCHED_BATCH, &sp);  /* if refused: as before, normal policy */
    prctl(PR_SET_NAME, "nth-trace", 0, 0, 0);       /* after: named means settled */
    /* No timeout: the rescuer's tick kicks when records wait. `seen` is
     * read before the pass, so a kick that comes during a pass is not
     * lost: the futex then returns at once for another pass. */
    uint32_t seen = __atomic_load_n(&wr_wake, __ATOMIC_ACQUIRE);
    while (!__atomic_load_n(&wr_stop, __ATOMIC_ACQUIRE)) {
        syscall(SYS_futex, &wr_wake, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
        seen = __atomic_load_n(&wr_wake, __ATOMIC_ACQUIRE);
        if (!__atomic_load_n(&nth_trace_writer_test_hold, __ATOMIC_ACQUIRE)) {
            uint64_t tick = __atomic_load_n(&wr_tick, __ATOMIC_ACQUIRE);
            writer_pass();
            __atomic_store_n(&wr_idle_covered, tick, __ATOMIC_RELEASE);
        }
    }
    __atomic_fetch_add(&wr_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* 1 if some buffer holds records not yet drained. Two loads per buffer;
 * a record being published meanwhile is seen at the next tick. */
static int records_waiting(void)
{
    for (struct nth_trace_buf *b = __atomic_load_n(&nth_trace_bufs, __ATOMIC_ACQUIRE); b; b = b->next)
        if (__atomic_load_n(&b->head, __ATOMIC_ACQUIRE) != __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE))
            return 1;
    return 0;
}

/* Tick k starts when the rescuer goes to sleep; just before, it looks for
 * records and, if some wait, kicks the idle writer. At the end of tick k,
 * if it kicked and no idle pass started during tick k, the rescuer
 * drains: any record published before tick k started is on file by the
 * end of tick k (one published during tick k is seen at the start of
 * tick k+1). A kick of its own (a buffer three quarters full,
 * trace_record.c: the idle writer has not drained half a buffer since it
 * was kicked) drains at once. */
static void *rescuer_main(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "nth-trace-rs", 0, 0, 0);
    while (!__atomic_load_n(&wr_stop, __ATOMIC_ACQUIRE)) {
        uint64_t tick = __atomic_add_fetch(&wr_tick, 1, __ATOMIC_ACQ_REL);
        int asked = records_waiting();
        if (asked)
            nth_trace_kick_writer();
        uint32_t seen = __atomic_load_n(&wr_urgent, __ATOMIC_ACQUIRE);
        struct timespec to = { wr_flush_ms / 1000, (long)(wr_flush_ms % 1000) * 1000000L };
        syscall(SYS_futex, &wr_urgent, FUTEX_WAIT_PRIVATE, seen, &to, NULL, 0);
        nth_trace_clock_refine();   /* the trace clock follows CLOCK_MONOTONIC */
        if (__atomic_load_n(&wr_urgent, __ATOMIC_ACQUIRE) != seen ||
            (asked && __atomic_load_n(&wr_idle_covered, __ATOMIC_ACQUIRE) < tick))
            writer_pass();
    }
    __atomic_fetch_add(&wr_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

int nth_trace_drain_now(void)
{
    if (!__atomic_load_n(&wr_started, __ATOMIC_ACQUIRE) || __atomic_load_n(&wr_finishing, __ATOMIC_ACQUIRE))
        return 0;
    if (!drain_lock(2000))
        return EBUSY;
    if (!__atomic_load_n(&wr_stop, __ATOMIC_ACQUIRE))
        drain_all();
    drain_unlock();
    return 0;
}

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*pthread_detach_fn)(pthread_t);

static int start_writer(void)
{
    pthread_create_fn create = pthread_create;
    pthread_detach_fn detach = pthread_detach;
#if !defined(NTH_ASAN) && !defined(NTH_TSAN)
    /* The sanitizers must see the thread, so they keep their interceptors. */
    create = nth_libc_pthread_create();
    detach = nth_libc_pthread_detach();
#endif
    /* The system call, not sigprocmask: under the pthread shim that is the
     * shim's, which starts the runtime -- whose start-up is what called us
     * (a traced shim program spun forever in nth_ensure_started). */
    sigset_t all, old;
    sigfillset(&all);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, (size_t)(_NSIG / 8));
    pthread_t tid;
    /* The rescuer first, by this thread: created by the writer it would
     * inherit SCHED_BATCH. */
    int rc = create(&tid, NULL, rescuer_main, NULL);
    if (!rc) {
        detach(tid);   /* nth_trace_finish waits for wr_done, never joins */
        rc = create(&tid, NULL, idle_writer_main, NULL);
        if (!rc)       /* else the rescuer sleeps on, never kicked: harmless */
            detach(tid);
    }
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, (size_t)(_NSIG / 8));
    return rc;
}

enum out_format { OUT_BIN, OUT_JSON, OUT_JSON_GZ, OUT_PRV };

static int has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n > m && strcmp(s + n - m, suf) == 0;
}

/* The file this process writes for the name `path` (malloc'ed, NULL if out
 * of memory). Several processes of one run (nthrun --trace FILE -- sh -c
 * 'prog1; prog2') all see the same NTH_TRACE, and each converted its
 * records into it at exit: only the last one's trace was left. nthrun
 * sets NTH_TRACE_MAIN_PID to the pid of the program it starts; that
 * process writes FILE, any other writes FILE with ".PID" inserted before
 * the format's suffix (run.json.gz -> run.4242.json.gz), and its exit line
 * names it. Without NTH_TRACE_MAIN_PID (one process, as before) FILE. */
/* NTH_TRACE_MAIN_PID when it is a pid (decimal, 1..4194304, the kernel's
 * PID_MAX_LIMIT), else NULL. Anything else (abc, -1, 0) was taken as
 * "another process is the first" and silently gave this one the .PID
 * name: it is said in the one line of every bad NTH_* value and treated
 * as unset (this process writes NTH_TRACE and claims it for its children,
 * which replaces the bad value). */
static const char *main_pid_env(void)
{
    const char *v = getenv("NTH_TRACE_MAIN_PID");
    if (!v || !*v)
        return NULL;
    size_t i = 0;
    unsigned long pid = 0;
    while (v[i] >= '0' && v[i] <= '9' && i < 8)
        pid = pid * 10 + (unsigned long)(v[i++] - '0');
    if (v[i] || v[0] == '0' || pid < 1 || pid > 4194304) {
        nth_env_bad("NTH_TRACE_MAIN_PID", v, "a process id 1..4194304: the process that writes NTH_TRACE itself "
                                             "(nthrun --trace sets it; unset: the first traced process)");
        return NULL;
    }
    return v;
}

/* path with ".PID" (this process) before its format's suffix. */
static char *pid_path(const char *path)
{
    static const char *const sufs[] = { ".json.gz", ".json", ".prv", ".bin" };
    char self[24];
    snprintf(self, sizeof self, "%ld", (long)getpid());
    size_t len = strlen(path), keep = len;
    for (size_t i = 0; i < sizeof sufs / sizeof sufs[0]; i++)
        if (has_suffix(path, sufs[i])) {
            keep = len - strlen(sufs[i]);
            break;
        }
    char *out = malloc(len + strlen(self) + 2);
    if (out)
        sprintf(out, "%.*s.%s%s", (int)keep, path, self, path + keep);
    return out;
}

/* Set by start_abs: 1 when this process writes NTH_TRACE's own name (the
 * first of its tree, or the one NTH_TRACE_MAIN_PID names). */
static int wr_first;

static char *per_process_path(const char *path)
{
    const char *main_pid = main_pid_env();
    char self[24];
    snprintf(self, sizeof self, "%ld", (long)getpid());
    wr_first = !main_pid || !strcmp(main_pid, self);
    return wr_first ? strdup(path) : pid_path(path);
}

/* NTH_TRACE_MALLOC=1 takes effect only through libnth-malloc.so's malloc
 * (glibc has no allocation hooks since 2.34, so libnth alone cannot count
 * calls): said in one line when that malloc is not the one the process
 * calls, rather than a trace silently without memory counters. The
 * interposer exports nth_malloc_interposer; its malloc must be the global
 * one (preloaded, and no sanitizer's malloc ahead of it). */
static void check_malloc_env(void)
{
    const char *v = getenv("NTH_TRACE_MALLOC");
    if (!v || !*v || !strcmp(v, "0"))
        return;
    void *marker = dlsym(RTLD_DEFAULT, "nth_malloc_interposer");
    if (strcmp(v, "1")) {
        /* The interposer's constructor reports a bad value and sets it to
         * 0 before we get here; without it the value was taken silently.
         * Said once per process tree the same way: 0 for the children. */
        nth_env_bad("NTH_TRACE_MALLOC", v, NTH_TRACE_MALLOC_ACCEPTED);
        (void)setenv("NTH_TRACE_MALLOC", "0", 1);
        return;
    }
    void *m = dlsym(RTLD_DEFAULT, "malloc");
    Dl_info dm, di;
    if (marker && m && dladdr(marker, &dm) && dladdr(m, &di) && dm.dli_fbase == di.dli_fbase)
        return;
    /* libnth-malloc.so is installed beside libnth.so: name that path. */
    char lib[PATH_MAX] = "libnth-malloc.so";
    Dl_info self;
    if (dladdr((void *)check_malloc_env, &self) && self.dli_fname) {
        const char *slash = strrchr(self.dli_fname, '/');
        if (slash && (size_t)(slash - self.dli_fname) + sizeof "/libnth-malloc.so" <= sizeof lib) {
            char cand[PATH_MAX];
            snprintf(cand, sizeof cand, "%.*s/libnth-malloc.so", (int)(slash - self.dli_fname), self.dli_fname);
            if (access(cand, R_OK) == 0)
                snprintf(lib, sizeof lib, "%s", cand);
        }
    }
    if (marker)
        fprintf(stderr, "nthlib: NTH_TRACE_MALLOC=1: another malloc comes before libnth-malloc.so's (a sanitizer's, "
                        "or it was not preloaded): this trace has no memory counters\n");
    else
        fprintf(stderr, "nthlib: NTH_TRACE_MALLOC=1 needs libnth-malloc.so preloaded (LD_PRELOAD=%s): "
                        "this trace has no memory counters\n", lib);
}

/* `path` made absolute against the current directory (malloc'ed; NULL
 * with *err set when the directory cannot be named or memory is out). The
 * binary file is opened at start-up but the output is written at exit,
 * after a program may have chdir()ed (servers to "/", solvers into work
 * directories): relative, the conversion looked for the .bin and wrote the
 * output in the new directory, lost the trace and blamed the output. As
 * cpumgr --trace does, a relative name is taken from where tracing began. */
static char *absolute_path(const char *path, int *err)
{
    if (path[0] == '/') {
        char *p = strdup(path);
        *err = p ? 0 : ENOMEM;
        return p;
    }
    char *cwd = getcwd(NULL, 0);
    if (!cwd) {
        *err = errno;
        return NULL;
    }
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s%s", cwd, cwd[strlen(cwd) - 1] == '/' ? "" : "/", path);
    *err = p ? 0 : ENOMEM;
    free(cwd);
    return p;
}

static int start_abs(const char *path, size_t buffer_bytes, unsigned flush_ms);
int nth_trace_start_told;

/* The rule for a process tree that inherits NTH_TRACE: the first process
 * that traces to it writes it; every process started below it writes the
 * name with its pid before the suffix (per_process_path), and says so in its
 * exit line. With libnth-malloc.so preloaded (the README's recipe) every
 * child -- sh, ls, a wrapper script's interpreter -- loads libnth and traces:
 * `ls` silently replaced the application's trace with its own. The first
 * process sets NTH_TRACE_MAIN_PID to itself, as nthrun --trace does for the
 * program it starts (a process that finds it set leaves it alone), and
 * NTH_TRACE to the absolute name, so a child started after a chdir()
 * writes beside it. setenv(3) is not safe against a concurrent getenv:
 * this runs when tracing starts, from a constructor (libnth-malloc.so,
 * libnth-probes.so) or the runtime's start-up, before the runtime's own
 * threads exist. */
static void claim_for_children(const char *abs)
{
    const char *v = getenv("NTH_TRACE_MAIN_PID");
    if ((v && *v && !wr_first) || !wr_out_path)
        return;   /* a valid one, another process's: it is the first */
    char self[24];
    snprintf(self, sizeof self, "%ld", (long)getpid());
    if (v && !strcmp(v, self))
        return;
    if (setenv("NTH_TRACE", abs, 1) || setenv("NTH_TRACE_MAIN_PID", self, 1))
        fprintf(stderr, "nthlib: trace: cannot set NTH_TRACE_MAIN_PID for child processes (%s): "
                        "a traced child may overwrite %s\n", strerror(errno), wr_out_path);
}

static int start(const char *user_path, size_t buffer_bytes, unsigned flush_ms)
{
    if (wr_started)
        return EBUSY;
    const char *path = user_path;
    if (!nth_trace_name_ok(path)) {
        /* The trace API can start tracing before the runtime does (then
         * the runtime's start tries the same NTH_TRACE again): one line
         * per bad value, as for every other variable. */
        static char said[256];
        const char *v = path ? path : "(null)";
        if (strncmp(said, v, sizeof said - 1)) {
            nth_env_bad("NTH_TRACE", v, NTH_TRACE_ACCEPTED);
            snprintf(said, sizeof said, "%s", v);
        }
        return EINVAL;
    }
    int aerr;
    char *abs = absolute_path(user_path, &aerr);
    if (!abs) {
        if (aerr != ENOMEM) {
            fprintf(stderr, "nthlib: trace: not tracing to %s: the current directory cannot be named (%s); "
                            "give NTH_TRACE an absolute path\n", user_path, strerror(aerr));
            nth_trace_start_told = 1;   /* the README's one line: the runtime adds none */
        }
        return aerr;
    }
    path = abs;
    int rc = start_abs(path, buffer_bytes, flush_ms);
    /* NTH_TRACE's own value (the runtime's start passes it through its
     * config, the constructors straight from the environment): the
     * children inherit it. */
    const char *env = getenv("NTH_TRACE");
    if (!rc && env && !strcmp(env, user_path))
        claim_for_children(abs);
    free(abs);
    return rc;
}

/* start() once the path is absolute. */
static int start_abs(const char *path, size_t buffer_bytes, unsigned flush_ms)
{
    if (buffer_bytes) {
        uint64_t recs = buffer_bytes / sizeof(struct nth_trace_rec), cap = 64;
        while (cap * 2 <= recs)
            cap *= 2;
        nth_trace_ring_cap = cap;
    }
    if (flush_ms)
        wr_flush_ms = flush_ms;
    size_t n = strlen(path) + 32;
    wr_out_path = per_process_path(path);
    /* The first process of its tree writes NTH_TRACE's name, unless an
     * unrelated live process traces to it already (trace_claim.c): then
     * this one takes the name a child would, NAME.PID.ext, and says so
     * now (its exit line names the file again). */
    if (wr_out_path && wr_first && nth_trace_claim_name(wr_out_path) == -1) {
        char *mine = pid_path(path);
        if (mine) {
            fprintf(stderr, "nthlib: trace: another process is tracing to %s; this one writes %s\n", path, mine);
            free(wr_out_path);
            wr_out_path = mine;
        }
    }
    wr_bin_path = malloc(n + 24);   /* room for per_process_path's .PID */
    if (!wr_out_path || !wr_bin_path) {
        free(wr_out_path);
        free(wr_bin_path);
        wr_out_path = wr_bin_path = NULL;
        return ENOMEM;
    }
    if (has_suffix(path, ".bin"))
        snprintf(wr_bin_path, n + 24, "%s", wr_out_path);
    else   /* already per process: FILE.PID.bin, whichever process */
        snprintf(wr_bin_path, n + 24, "%s.%ld.bin", path, (long)getpid());
    wr_fd = open(wr_bin_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (wr_fd < 0)
        return errno;
    int rc;
    struct nth_trace_file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, NTH_TRACE_MAGIC, sizeof h.magic);
    h.version = NTH_TRACE_VERSION;
    h.record_size = sizeof(struct nth_trace_rec);
    h.pid = (uint32_t)getpid();
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    nth_trace_clock_start();   /* before the first time taken: the header's */
    h.mono_start_ns = nth_trace_now();
    h.real_start_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    gethostname(h.host, sizeof h.host - 1);
    for (size_t done = 0; done < sizeof h;) {   /* not write_all: nothing to report on yet */
        ssize_t w = nth_sys_write(wr_fd, (const char *)&h + done, sizeof h - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            close(wr_fd);
            wr_fd = -1;
            unlink(wr_bin_path);   /* no torn header left behind */
            return e;
        }
        done += (size_t)w;
    }
    rc = start_writer();
    if (rc) {
        close(wr_fd);
        wr_fd = -1;
        return rc;
    }
    wr_started = 1;
    wr_pid = getpid();
    nth_trace_install_exit_paths(wr_bin_path, has_suffix(path, ".bin") ? NULL : wr_out_path);
    __atomic_store_n(&nth_trace_on, 1, __ATOMIC_RELEASE);
    check_malloc_env();
    return 0;
}

/* Async-signal-safe (the fatal-signal path calls it): atomics, futex,
 * nth_sys_sleep_ns, write(2), close(2), clock_gettime; no malloc, no stdio. */
int nth_trace_finish_records(struct nth_trace_finished *f)
{
    if (!wr_started || __atomic_exchange_n(&wr_finishing, 1, __ATOMIC_ACQ_REL))
        return -1;
    __atomic_store_n(&nth_trace_on, 0, __ATOMIC_RELEASE);
    if (getpid() != wr_pid)   /* fork()ed child: no writer thread, the parent's file */
        return -1;
    __atomic_store_n(&wr_stop, 1, __ATOMIC_RELEASE);
    nth_trace_kick_writer();
    nth_trace_kick_rescuer();
    /* Not needed for safety (a writer touches the file only under the
     * lock, and not once wr_stop is set); it lets them leave first. */
    for (int i = 0; i < 20 && __atomic_load_n(&wr_done, __ATOMIC_ACQUIRE) < 2; i++) {
        nth_sys_sleep_ns(1000000);
    }
    if (!drain_lock(2000))
        return EBUSY;
    drain_all();
    uint64_t lost = wr_dropped - wr_reported + __atomic_load_n(&nth_trace_alloc_lost, __ATOMIC_RELAXED);
    /* The exit line says every event lost since the start: those the LOST
     * records written meanwhile counted too (the file's sum, as the
     * converters show it), not only what this last mark counts. */
    uint64_t lost_all = wr_dropped_recs + __atomic_load_n(&nth_trace_alloc_lost, __ATOMIC_RELAXED);
    for (struct nth_trace_buf *b = nth_trace_bufs; b; b = b->next) {
        lost += b->lost;
        lost_all += b->lost_total;
    }
    if (lost)
        write_mark(NTH_REC_LOST, lost);
    write_mark(NTH_REC_END, 0);
    close(wr_fd);
    wr_fd = -1;
    drain_unlock();
    f->bin = wr_bin_path;
    f->out = has_suffix(wr_out_path, ".bin") ? NULL : wr_out_path;
    f->record_bytes = wr_bytes;
    f->lost = lost_all;
    f->write_error = wr_err;
    return 0;
}

/* v in decimal into num (24 bytes). Signal-safe. */
static void dec(char *num, uint64_t v)
{
    char rev[24];
    int k = 0;
    do { rev[k++] = (char)('0' + v % 10); v /= 10; } while (v);
    for (int i = 0; i < k; i++)
        num[i] = rev[k - 1 - i];
    num[k] = 0;
}

void nth_trace_say_bin(const struct nth_trace_finished *f)
{
    if (f->write_error) {
        nth_trace_say_lost(f);
        return;
    }
    char size[24], recs[24], lost[24];
    dec(size, sizeof(struct nth_trace_file_header) + f->record_bytes);
    dec(recs, f->record_bytes / sizeof(struct nth_trace_rec));
    dec(lost, f->lost);
    const char *parts[] = { "nthlib: trace: wrote ", f->bin, " (", size, " bytes, ", recs, " records, ", lost,
                            " events lost)\n" };
    say_parts(parts, sizeof parts / sizeof parts[0]);
}

void nth_trace_say_lost(const struct nth_trace_finished *f)
{
    if (!f->lost && !f->write_error)
        return;
    char num[24];
    dec(num, f->lost);
    const char *why = f->write_error ? strerrordesc_np(f->write_error) : NULL;
    const char *parts[] = { "nthlib: trace: ", num, " events lost (",
                            f->write_error ? (why ? why : "write error") : "buffers full or NTH_TRACE_LIMIT reached",
                            f->write_error ? " writing " : "", f->write_error ? f->bin : "", ")\n" };
    say_parts(parts, sizeof parts / sizeof parts[0]);
}

int nth_trace_finish(void)
{
    struct nth_trace_finished f;
    int rc = nth_trace_finish_records(&f);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (!f.out) {
        nth_trace_say_bin(&f);
        return 0;
    }
    const char *in[1] = { f.bin };
    const char *failed = NULL;
    unsigned warnings = 0;
    nth_tr_msg_prefix = "nthlib";
    /* wr_out_path, or for a name without a suffix PATH.json[.gz]. Static:
     * exit() may run on a nano-thread's small stack. */
    static char wrote[4096];
    rc = nth_trace_convert_to(in, 1, wr_out_path, stderr, &warnings, &failed, wrote, sizeof wrote);
    struct stat st;
    if (rc && failed && failed != wr_out_path && rc != EINVAL)
        /* EINVAL: the loader said what is wrong with the file */
        fprintf(stderr, "nthlib: trace: cannot write %s: cannot read %s: %s\n", wr_out_path, failed, strerror(rc));
    else if (rc)
        fprintf(stderr, "nthlib: trace: cannot write %s: %s (records kept in %s)\n",
                wr_out_path, strerror(rc), wr_bin_path);
    if (rc)
        nth_trace_say_lost(&f);
    else if (stat(wrote, &st) == 0)
        fprintf(stderr, "nthlib: trace: wrote %s (%lld bytes from %llu records, %llu events lost%s)\n",
                wrote, (long long)st.st_size, (unsigned long long)(f.record_bytes / sizeof(struct nth_trace_rec)),
                (unsigned long long)f.lost,
                warnings ? ", with warnings" : "");
    return rc;
}

/* Parse a byte size with an optional K, M or G suffix (powers of 1024). */
static int parse_bytes(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return EINVAL;
    switch (*end) {
    case 'K': case 'k': v <<= 10; end++; break;
    case 'M': case 'm': v <<= 20; end++; break;
    case 'G': case 'g': v <<= 30; end++; break;
    default: break;
    }
    if (*end || v < lo || v > hi)
        return EINVAL;
    *out = v;
    return 0;
}

int nth_trace_start_standalone(void)
{
    if (wr_started)
        return EBUSY;
    int rc = nth_trace_start_from_env();
    if (rc || !wr_started)
        return rc;
    nth_trace__vp(NTH_REC_VP_START, 0);
    nth_trace__name(NTH_NAME_THREAD, 1, 0, "main");
    nth_trace__rec(NTH_REC_THREAD_CREATE, 0, 1, 0);
    nth_trace__switch(0, 1);
    return 0;
}

/* The settings in the environment. A bad value keeps the default and is
 * reported (one line naming the variable and what it accepts) when asked:
 * nth_config_from_env() already reports NTH_TRACE_BUFFER for the runtime. */
static int env_settings(int report_buffer, uint64_t *bytes, uint64_t *ms)
{
    const char *buf = getenv("NTH_TRACE_BUFFER");
    const char *flush = getenv("NTH_TRACE_FLUSH_MS");
    const char *limit = getenv("NTH_TRACE_LIMIT");
    uint64_t lim = 0;
    int rc = 0;
    *bytes = *ms = 0;
    if (buf && parse_bytes(buf, 4096, 1ull << 30, bytes)) {
        if (report_buffer)
            nth_env_bad("NTH_TRACE_BUFFER", buf, "bytes 4096..1073741824, optionally with a K, M or G suffix");
        *bytes = 0;
        rc = EINVAL;
    }
    if (flush && parse_bytes(flush, 1, 60000, ms)) {
        nth_env_bad("NTH_TRACE_FLUSH_MS", flush, "milliseconds 1..60000");
        *ms = 0;
        rc = EINVAL;
    }
    if (limit) {
        if (parse_bytes(limit, 65536, UINT64_MAX >> 1, &lim)) {
            nth_env_bad("NTH_TRACE_LIMIT", limit, "bytes, at least 65536, optionally with a K, M or G suffix");
            rc = EINVAL;
        } else {
            wr_limit = lim;
        }
    }
    return rc;
}

int nth_trace_start(const char *path, size_t buffer_bytes, unsigned flush_ms)
{
    uint64_t bytes, ms;
    if (wr_started)
        return EBUSY;
    env_settings(0, &bytes, &ms);
    return start(path, buffer_bytes ? buffer_bytes : bytes, flush_ms ? flush_ms : (unsigned)ms);
}

int nth_trace_start_from_env(void)
{
    uint64_t bytes, ms;
    const char *path = getenv("NTH_TRACE");
    int rc = env_settings(1, &bytes, &ms);
    if (!path || !*path)
        return rc;
    int rc2 = start(path, bytes, (unsigned)ms);
    return rc2 ? rc2 : rc;
}
