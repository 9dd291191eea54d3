/*
 * trace_exit.c -- the ways out of a traced process: return from main and
 * exit() (atexit), and every signal whose default action ends the process
 * with a core or for a hang-up or quit: SIGTERM, SIGINT, SIGHUP, SIGQUIT,
 * SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT (signal(7)). A user
 * expects a crash by 100 / 0 to leave the same trace as one by a bad
 * pointer. SIGPIPE, SIGALRM, SIGUSR1/2, SIGXCPU, SIGXFSZ, SIGPROF and
 * SIGVTALRM are left alone: programs and libraries use them for their own
 * ends and test whether they are still at SIG_DFL. Each writes the
 * buffers to the binary file and the chosen format, then lets the signal do
 * what it would have done: the previous handler if the application had one,
 * otherwise the default action (re-raised). _exit() and SIGKILL run none of
 * this; the binary file then holds what the writer flushed up to its last
 * NTH_TRACE_FLUSH_MS tick, for `nth-trace convert`.
 *
 * The fatal-signal handler does only async-signal-safe work (signal-safety(7)):
 * it writes the records with write(2) (nth_trace_finish_records), then has
 * the conversion done by a fresh process, `nth-trace convert -q BIN -o OUT`,
 * started with _Fork() and execve() and waited for. The conversion needs
 * malloc, zlib and stdio, and a crash inside malloc (or with any thread
 * holding malloc's or stdio's lock) deadlocked the handler that converted
 * in place; a fresh process shares none of those locks. The tool's path, its
 * arguments and its environment are made here at trace start, when malloc is
 * still safe to call.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#include "env_msg.h"
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "trace_rt.h"
#include "libc_real.h"
#include "trace_tool.h"
#include "trace_convert.h"

static const int fatal_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS,
                                      SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT };
#define NSIG_TRACED (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction previous[NSIG_TRACED];

/* How long a crashed process waits for its conversion before it takes the
 * signal's default action anyway (the converter then carries on alone). */
#define CONVERT_WAIT_MS 60000

static char *tool_argv[7];   /* tool convert -q BIN -o OUT NULL; [0] NULL: no tool */
static char **tool_envp;

static void at_exit(void)
{
    nth_trace_finish();
}

/* A line for stderr built without stdio (signal-safe). */
struct line {
    char buf[1024];
    size_t n;
};

static void put(struct line *l, const char *s)
{
    while (*s && l->n < sizeof l->buf - 1)
        l->buf[l->n++] = *s++;
}

static void put_u(struct line *l, uint64_t v)
{
    char num[24];
    int n = 0;
    do { num[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n > 0 && l->n < sizeof l->buf - 1)
        l->buf[l->n++] = num[--n];
}

static void say(struct line *l)
{
    l->buf[l->n++] = '\n';
    ssize_t w = nth_sys_write(2, l->buf, l->n);
    (void)w;
}

static void say_kept(const struct nth_trace_finished *f, const char *why, uint64_t status)
{
    struct line l = { .n = 0 };
    put(&l, "nthlib: trace: cannot write ");
    put(&l, f->out);
    put(&l, ": ");
    put(&l, why);
    if (status != UINT64_MAX)
        put_u(&l, status);
    put(&l, " (records kept in ");
    put(&l, f->bin);
    put(&l, "; nth-trace convert ");
    put(&l, f->bin);
    put(&l, " -o ");
    put(&l, f->out);
    put(&l, " converts them)");
    say(&l);
    nth_trace_say_lost(f);   /* no "wrote" line will count them */
}

static void sys_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    /* The system call: under the pthread shim sigprocmask is the shim's. */
    syscall(SYS_rt_sigprocmask, how, set, old, (size_t)(_NSIG / 8));
}

static pid_t fork_no_handlers(void)
{
    /* Not fork(): glibc's takes malloc's locks (and runs pthread_atfork
     * handlers) in the parent, the deadlock this path exists to avoid. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    return _Fork();
#else
    return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
}

/* Convert f->bin into f->out in a fresh process and wait for it (at most
 * CONVERT_WAIT_MS). Signal-safe. */
static void convert_in_fresh_process(const struct nth_trace_finished *f)
{
    if (!tool_argv[0]) {
        say_kept(f, "nth-trace not found (NTH_TRACE_TOOL names it)", UINT64_MAX);
        return;
    }
    /* Keep SIGCHLD pending while we wait: an application's SIGCHLD handler
     * that reaps every child would take our converter's status. */
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sys_sigmask(SIG_BLOCK, &chld, &old);
    pid_t pid = fork_no_handlers();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sys_sigmask(SIG_SETMASK, &none, NULL);   /* not the handler's mask */
        int fd = open("/dev/null", O_RDWR);
        if (fd >= 0) {
            dup2(fd, 0);
            dup2(fd, 1);
        }
        execve(tool_argv[0], tool_argv, tool_envp);
        _exit(127);
    }
    if (pid < 0) {
        say_kept(f, "cannot start nth-trace: fork failed, errno ", (uint64_t)errno);
        sys_sigmask(SIG_SETMASK, &old, NULL);
        return;
    }
    int st = 0;
    pid_t w = 0;
    for (long waited = 0; waited < CONVERT_WAIT_MS * 1000L; waited += 5000) {
        /* wait4(2) raw: waitpid binds to the shim's wrapper (a wait of
         * the nano-thread) when the program runs under it. */
        w = (pid_t)syscall(SYS_wait4, pid, &st, WNOHANG, NULL);
        if (w != 0 && !(w < 0 && errno == EINTR))
            break;
        nth_sys_sleep_ns(5000000); /* the kernel's, not the shim's; async-signal-safe */
    }
    sys_sigmask(SIG_SETMASK, &old, NULL);
    if (w == 0) {
        struct line l = { .n = 0 };
        put(&l, "nthlib: trace: ");
        put(&l, f->out);
        put(&l, " still being written by process ");
        put_u(&l, (uint64_t)pid);
        say(&l);
        return;
    }
    if (w < 0 || !WIFEXITED(st) || WEXITSTATUS(st) > 1) {
        say_kept(f, "nth-trace convert failed, status ",
                 w < 0 ? UINT64_MAX : WIFEXITED(st) ? (uint64_t)WEXITSTATUS(st) : 128u + (uint64_t)WTERMSIG(st));
        return;
    }
    /* A name without a suffix became NAME.json or NAME.json.gz (the
     * converter removed the other one, a previous run's). */
    struct stat sb;
    struct line name = { .n = 0 };
    put(&name, f->out);
    if (nth_trace_name_auto(f->out)) {
        put(&name, ".json");
        name.buf[name.n] = 0;
        if (stat(name.buf, &sb) != 0)
            put(&name, ".gz");
    }
    name.buf[name.n] = 0;
    if (stat(name.buf, &sb) != 0) {
        say_kept(f, "nth-trace convert left no file, status ", (uint64_t)WEXITSTATUS(st));
        return;
    }
    struct line l = { .n = 0 };
    put(&l, "nthlib: trace: wrote ");
    put(&l, name.buf);
    put(&l, " (");
    put_u(&l, (uint64_t)sb.st_size);
    put(&l, " bytes from ");
    put_u(&l, f->record_bytes / sizeof(struct nth_trace_rec));
    put(&l, " records, ");
    put_u(&l, f->lost);
    put(&l, " events lost");
    if (WEXITSTATUS(st) == 1)
        put(&l, ", with warnings");
    put(&l, ")");
    say(&l);
}

static void on_fatal(int sig, siginfo_t *info, void *uctx)
{
    (void)info;
    (void)uctx;
    int saved = errno;
    struct nth_trace_finished f;
    if (nth_trace_finish_records(&f) == 0) {
        if (f.out)
            convert_in_fresh_process(&f);
        else
            nth_trace_say_bin(&f);
    }
    for (unsigned i = 0; i < NSIG_TRACED; i++)
        if (fatal_signals[i] == sig) {
            struct sigaction sa = previous[i];
            if (sa.sa_handler == SIG_IGN)
                return;
            if (!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL) {
                signal(sig, SIG_DFL);
            } else {
                sigaction(sig, &sa, NULL);
            }
        }
    errno = saved;
    /* Blocked while this handler runs: delivered, with the restored action,
     * as soon as it returns. A SIGSEGV from a faulting instruction faults
     * again on return anyway. */
    raise(sig);
}

/* The converter for the fatal path (trace_tool.h): a bad NTH_TRACE_TOOL
 * is said in the runtime's one line for a bad variable, and the build
 * tree's or the installed nth-trace is used in its place. NULL if none is
 * executable. */
static const char *find_tool(void)
{
    const char *bad;
    const char *tool = nth_trace_tool_find(&bad);
#ifdef HAVE_CONFIG_H
    if (bad)
        nth_env_bad("NTH_TRACE_TOOL", bad, "the path of an executable nth-trace");
#endif
    return tool;
}

/* The tool's environment: ours without LD_PRELOAD and LD_AUDIT (a
 * preloaded pthread shim or malloc counter would start a runtime in it)
 * and without NTH_* (NTH_TRACE would have it trace itself over our file),
 * but for NTH_TRACE_JSON_MAX, which the conversion itself reads. */
static char **tool_environment(void)
{
    extern char **environ;
    size_t n = 0;
    for (char **e = environ; e && *e; e++)
        n++;
    char **envp = calloc(n + 1, sizeof *envp);
    if (!envp)
        return NULL;
    size_t k = 0;
    for (char **e = environ; e && *e; e++) {
        if (!strncmp(*e, "LD_PRELOAD=", 11) || !strncmp(*e, "LD_AUDIT=", 9) ||
            (!strncmp(*e, "NTH_", 4) && strncmp(*e, "NTH_TRACE_JSON_MAX=", 19)))   /* the size rule is the run's */
            continue;
        if (!(envp[k++] = strdup(*e))) {
            for (size_t i = 0; i < k; i++)
                free(envp[i]);
            free(envp);
            return NULL;
        }
    }
    return envp;
}

static void prepare_converter(const char *bin, const char *out)
{
    const char *tool = find_tool();
    if (!out || !tool)
        return;
    char *t = strdup(tool), *b = strdup(bin), *o = strdup(out);
    char **envp = tool_environment();
    if (!t || !b || !o || !envp) {   /* the fatal path then says what it kept */
        free(t);
        free(b);
        free(o);
        if (envp) {
            for (char **e = envp; *e; e++)
                free(*e);
            free(envp);
        }
        return;
    }
    tool_envp = envp;
    tool_argv[1] = "convert";
    tool_argv[2] = "-q";
    tool_argv[3] = b;
    tool_argv[4] = "-o";
    tool_argv[5] = o;
    tool_argv[6] = NULL;
    tool_argv[0] = t;
}

int nth_trace_install_exit_paths(const char *bin, const char *out)
{
    prepare_converter(bin, out);
    atexit(at_exit);
    for (unsigned i = 0; i < NSIG_TRACED; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        for (unsigned j = 0; j < NSIG_TRACED; j++)
            sigaddset(&sa.sa_mask, fatal_signals[j]);
        /* A signal sent by others (SIGINT, SIGTERM, SIGHUP, SIGQUIT) ignored on
         * entry (a shell's background job, nohup) stays ignored: catching it
         * would end the trace of a process that goes on running. */
        int sig = fatal_signals[i];
        if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) &&
            sigaction(sig, NULL, &previous[i]) == 0 &&
            !(previous[i].sa_flags & SA_SIGINFO) && previous[i].sa_handler == SIG_IGN)
            continue;
        sigaction(sig, &sa, &previous[i]);
    }
    return 0;
}
