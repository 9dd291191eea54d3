/*
 * nthrun_trace.c -- nthrun --trace: the program runs as nthrun's child, so
 * that what it leaves behind can be converted once it is gone.
 *
 * A traced process writes its records to FILE.PID.bin and converts them
 * into FILE on its exit path (exit(), return from main, the fatal signals
 * libnth catches), ending the .bin with an end record. One that leaves
 * through _exit() or is killed by SIGKILL never gets there: dash, running
 * `sh -c 'prog1; prog2'`, leaves through _exit(), and nthrun --trace FILE
 * left no FILE at all, only the shell's .bin (issue 7, T1). nthrun knows
 * the pid and FILE, and it outlives the program: it converts the .bin with
 * nth-trace (the same tool, found the same way, as the runtime's
 * fatal-signal path) and keeps it, as the other processes' .bin files stay
 * for `nth-trace merge`. The missing end record is expected
 * here, so it is said once in nthrun's own line, not as the converter's
 * warning.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "nthrun_trace.h"
#include "trace_format.h"
#include "trace_tool.h"

/* The signals a user or a job runner sends to stop or poke a program
 * (timeout(1) sends SIGTERM to the process it started, which is nthrun). */
static const int fwd_sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM };

static volatile pid_t child_pid;   /* 0 once reaped: nothing to forward to */

/* Forward what another process sent with kill(2) (si_code <= 0: SI_USER,
 * SI_QUEUE, SI_TKILL). The terminal's ^C and ^\ (si_code SI_KERNEL) went
 * to the whole foreground process group, the program included: sending
 * them again would make it see each twice. */
static void forward(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    pid_t p = child_pid;
    if (p > 0 && info && info->si_code <= 0) {
        int e = errno;
        kill(p, sig);
        errno = e;
    }
}

static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n > m && strcmp(s + n - m, suf) == 0;
}

/* 1 if `bin` is the binary trace of process `pid` that needs converting:
 * a header of this format and pid, no write error flagged (the process
 * then ran its exit path and said what it could not write), and a last
 * record that is not the end record. */
static int needs_convert(const char *bin, pid_t pid)
{
    int fd = open(bin, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct nth_trace_file_header h;
    struct nth_trace_rec last;
    struct stat st;
    int need = 0;
    if (fstat(fd, &st) == 0 && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
        !memcmp(h.magic, NTH_TRACE_MAGIC, sizeof h.magic) && h.pid == (uint32_t)pid &&
        !(h.flags & NTH_TRACE_FLAG_WRITE_ERROR)) {
        off_t body = st.st_size - (off_t)sizeof h;
        need = body < (off_t)sizeof last || body % (off_t)sizeof last ||
               pread(fd, &last, sizeof last, st.st_size - (off_t)sizeof last) != (ssize_t)sizeof last ||
               last.type != NTH_REC_END;
    }
    close(fd);
    return need;
}

/* The converter (trace_tool.h, as the runtime's fatal-signal path finds
 * it); NULL if none is executable. An NTH_TRACE_TOOL that names no
 * executable means none here: nthrun does not run another tool than the
 * one the user named, and its line says how to convert by hand. */
static const char *find_tool(void)
{
    const char *bad;
    const char *tool = nth_trace_tool_find(&bad);
    return bad ? NULL : tool;
}

/* How the program ended, for the line: "left through _exit()" or "was
 * killed by SIGKILL". */
static void how_ended(int status, char *buf, size_t n)
{
    if (WIFSIGNALED(status)) {
        const char *abbr = sigabbrev_np(WTERMSIG(status));
        snprintf(buf, n, "was killed by SIG%s", abbr ? abbr : "?");
    } else {
        snprintf(buf, n, "left through _exit()");
    }
}

/* Convert the program's FILE.PID.bin into FILE when it did not. */
static void convert_left_over(const char *prog, pid_t pid, int status, const char *trace)
{
    if (ends_with(trace, ".bin"))   /* the records are FILE itself */
        return;
    char bin[4096];
    if ((size_t)snprintf(bin, sizeof bin, "%s.%ld.bin", trace, (long)pid) >= sizeof bin || !needs_convert(bin, pid))
        return;
    char how[64];
    how_ended(status, how, sizeof how);
    const char *tool = find_tool();
    if (!tool) {
        fprintf(stderr, "nthrun: trace: %s (pid %ld) %s without writing %s; nth-trace not found "
                "(NTH_TRACE_TOOL names it): run `nth-trace convert %s -o %s`\n",
                prog, (long)pid, how, trace, bin, trace);
        return;
    }
    pid_t t = fork();
    if (t == 0) {
        /* Not the program's environment: a preloaded shim would start a
         * runtime, and a trace of its own, in the converter. */
        unsetenv("LD_PRELOAD");
        unsetenv("LD_AUDIT");
        unsetenv("NTH_TRACE");
        execl(tool, "nth-trace", "convert", "-q", "--no-end-ok", bin, "-o", trace, (char *)NULL);
        fprintf(stderr, "nthrun: trace: cannot run %s: %s\n", tool, strerror(errno));
        _exit(3);
    }
    int st = -1;
    if (t > 0)
        while (waitpid(t, &st, 0) < 0 && errno == EINTR)
            ;
    int rc = t > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    /* A name without a suffix became FILE.json, or FILE.json.gz for a big
     * run (nth-trace convert's rule, env_names.h). */
    char wrote[4096 + 8];
    const char *base = strrchr(trace, '/');
    base = base ? base + 1 : trace;
    struct stat os;
    snprintf(wrote, sizeof wrote, "%s%s", trace, strchr(base, '.') ? "" : ".json");
    if (!strchr(base, '.') && stat(wrote, &os) != 0)
        snprintf(wrote, sizeof wrote, "%s.json.gz", trace);
    long long bytes = stat(wrote, &os) == 0 ? (long long)os.st_size : 0;
    if (rc == 0) {
        /* The .bin stays, as every other process's of the run does, so
         * that `nth-trace merge FILE.*.bin` still has this process. */
        fprintf(stderr, "nthrun: trace: %s (pid %ld) %s without writing %s (no end record; records up to "
                "its last flush): wrote %s from %s (%lld bytes; that file kept for merge)\n",
                prog, (long)pid, how, trace, wrote, bin, bytes);
    } else if (rc == 1) {   /* done; the warnings above say what was skipped */
        fprintf(stderr, "nthrun: trace: %s (pid %ld) %s without writing %s (no end record): wrote %s "
                "from %s (%lld bytes, with the warnings above; that file kept)\n",
                prog, (long)pid, how, trace, wrote, bin, bytes);
    } else {
        fprintf(stderr, "nthrun: trace: %s (pid %ld) %s without writing %s (no end record), and converting "
                "%s failed (nth-trace status %d, said above): the records stay there\n",
                prog, (long)pid, how, trace, bin, rc);
    }
}

/* 1 if the program (pid) started its trace: its binary file (FILE itself
 * for a .bin name, else FILE.PID.bin, which the runtime keeps) has a
 * header of this format with its pid. A FILE.bin left by an earlier run
 * has another pid. */
static int started_trace(const char *trace, pid_t pid)
{
    char bin[4096];
    int n = ends_with(trace, ".bin") ? snprintf(bin, sizeof bin, "%s", trace)
                                     : snprintf(bin, sizeof bin, "%s.%ld.bin", trace, (long)pid);
    if (n < 0 || (size_t)n >= sizeof bin)
        return 1;   /* cannot tell: say nothing rather than something false */
    int fd = open(bin, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct nth_trace_file_header h;
    int ok = pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
             !memcmp(h.magic, NTH_TRACE_MAGIC, sizeof h.magic) && h.pid == (uint32_t)pid;
    close(fd);
    return ok;
}

/* A program that never starts the nano-thread runtime (no pthread call
 * through the shim: /bin/true, a single-threaded tool, a program that
 * calls nothing threaded for a small input) records nothing, and nthrun
 * --trace FILE used to end without a word and without FILE (issue 5).
 * No empty trace is written: a file with no nano-thread, VP or event in
 * it would only look like a failed recording; the line says why there is
 * none. Processes it started that did trace name their own files. */
static void say_untraced(const char *prog, pid_t pid, const char *trace)
{
    if (started_trace(trace, pid))
        return;
    fprintf(stderr, "nthrun: trace: %s (pid %ld) never started the nano-thread runtime "
            "(it made no pthread call): no trace written to %s\n", prog, (long)pid, trace);
}

/* Die by `sig` as the program did, so that a shell sees the same status;
 * no core file of nthrun's own for SIGSEGV, SIGABRT, ... */
static void die_by(int sig)
{
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(SIG_UNBLOCK, &s, NULL);
    raise(sig);
}

int nthrun_traced(char **argv, const char *trace)
{
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof fwd_sigs / sizeof fwd_sigs[0]; i++)
        sigaddset(&block, fwd_sigs[i]);
    /* Blocked across fork: one sent before the handlers are in place is
     * delivered, and forwarded, once they are. */
    sigprocmask(SIG_BLOCK, &block, &old);
    /* Closed by a successful exec, written by a failed one: only a program
     * that ran can be said to have traced nothing. */
    int xp[2];
    if (pipe2(xp, O_CLOEXEC) != 0)
        xp[0] = xp[1] = -1;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        if (xp[0] >= 0) {
            close(xp[0]);
            close(xp[1]);
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        fprintf(stderr, "nthrun: cannot start '%s': fork: %s\n", argv[0], strerror(e));
        return 126;
    }
    if (pid == 0) {
        /* The program keeps this pid: it writes the trace file itself,
         * every other process of the run FILE.PID.EXT (trace_writer.c). */
        char p[24];
        snprintf(p, sizeof p, "%ld", (long)getpid());
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (setenv("NTH_TRACE_MAIN_PID", p, 1)) {
            perror("nthrun: setenv");
            _exit(127);
        }
        execvp(argv[0], argv);
        int e = errno;
        if (xp[1] >= 0 && write(xp[1], "x", 1) != 1) { /* the parent then says nothing */ }
        fprintf(stderr, "nthrun: cannot run '%s': %s\n", argv[0], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    int ran = 0;
    if (xp[0] >= 0) {
        close(xp[1]);
        char c;
        ssize_t r;
        while ((r = read(xp[0], &c, 1)) < 0 && errno == EINTR)
            ;
        ran = r == 0;
        close(xp[0]);
    }
    for (size_t i = 0; i < sizeof fwd_sigs / sizeof fwd_sigs[0]; i++) {
        struct sigaction cur, sa;
        /* One ignored when nthrun started (nohup, a background job)
         * stays ignored: the program inherited that. */
        if (sigaction(fwd_sigs[i], NULL, &cur) == 0 && cur.sa_handler == SIG_IGN)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = forward;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(fwd_sigs[i], &sa, NULL);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "nthrun: waiting for '%s': %s\n", argv[0], strerror(errno));
            return 126;
        }
    }
    child_pid = 0;
    char *prog = strdup(argv[0]);
    convert_left_over(prog ? basename(prog) : argv[0], pid, status, trace);
    if (ran)
        say_untraced(prog ? basename(prog) : argv[0], pid, trace);
    free(prog);
    if (WIFSIGNALED(status)) {
        die_by(WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 126;
}
