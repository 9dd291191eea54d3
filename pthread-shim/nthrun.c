/*
 * nthrun -- run an unmodified, dynamically linked pthread program on
 * nano-threads, the way numactl(8) or taskset(1) run one on chosen CPUs:
 *
 *   nthrun [--vps N] [--trace FILE] [--cpumgr NAME|off] -- prog args...
 *
 * It sets NTH_VPS, NTH_TRACE and NTH_CPUMGR (see the README's table),
 * checks --trace and --cpumgr as the runtime would (env_names.h), sets
 * NTH_TRACE_MAIN_PID to the program's pid when tracing (it writes FILE, the
 * other processes of the run FILE.PID.EXT),
 * says once if NTH_VPS is more than the CPUs the program may use (and sets
 * NTH_VPS_TOLD so that the processes under it do not say it again),
 * prepends libnth-pthread.so to LD_PRELOAD and execs prog, so the exit
 * status (or the death by a signal) is the program's own.
 *
 * Traced (--trace, or NTH_TRACE set), it runs prog as its child instead and
 * waits for it: a program that leaves through _exit() (dash running
 * `sh -c 'prog1; prog2'` does) or is killed never runs its exit path and
 * leaves only FILE.PID.bin, without the end record. nthrun then converts
 * that file into FILE with nth-trace (trace_wait.h), says so in one line and
 * keeps the .bin (for nth-trace merge); then it exits with the program's status, or dies by the
 * signal that killed it. Signals sent to nthrun itself with kill(2) go on to
 * the program; those from the terminal reach both (one process group), and
 * nthrun leaves them to the program.
 *
 * The library is looked up, in order, as: $NTH_PTHREAD_LIB; the build tree
 * next to this binary (../.libs/libnth-pthread.so), so that `make check`
 * uses the library just built; NTH_LIBDIR/libnth-pthread.so, the installed
 * one. A library that does not exist is an error: the dynamic loader would
 * only warn and run the program on plain kernel threads.
 *
 * Exit status: the program's; 2 for a bad command line (one line saying
 * what is wrong, then "Try 'nthrun --help'", as coreutils do); 127 when the library or the program cannot be found, 126 when
 * the program cannot be executed (as env(1) does).
 */
#include "config.h"   /* PACKAGE_NAME, PACKAGE_VERSION */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "env_names.h"
#include "nthrun_trace.h"

#ifndef NTH_LIBDIR
#define NTH_LIBDIR "/usr/local/lib"
#endif
#define SHIM_SO "libnth-pthread.so"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: nthrun [--vps N] [--trace FILE] [--cpumgr NAME|off] -- prog [args...]\n"
            "Run an unmodified pthread program on nano-threads (LD_PRELOAD=" SHIM_SO ").\n"
            "  --vps N            virtual processors, 1..4096, or 0 for the default: one per\n"
            "                     CPU this process may use (NTH_VPS); more than those CPUs\n"
            "                     is said once for the whole run (NTH_VPS_TOLD)\n"
            "  --trace FILE       write a trace; .json[.gz] for Perfetto, .prv for Paraver, .bin\n"
            "                     (NTH_TRACE). The program writes FILE; any other process it\n"
            "                     starts writes FILE with its pid before the suffix\n"
            "                     (run.json.gz: run.PID.json.gz; NTH_TRACE_MAIN_PID). If the\n"
            "                     program leaves only FILE.PID.bin (_exit(), SIGKILL), nthrun\n"
            "                     converts it into FILE once the program is gone\n"
            "  --cpumgr NAME|off  CPU manager segment to attach to, or off (NTH_CPUMGR)\n"
            "  -h, --help         this text\n"
            "  --version          nthrun's version\n"
            "Environment: NTH_SHIM_TLS=thread (default: __thread data and errno per thread,\n"
            "  a thread-pointer change at each switch between threads) or vp (per VP, faster).\n"
            "The library is $NTH_PTHREAD_LIB, else the build tree's, else " NTH_LIBDIR "/" SHIM_SO ".\n"
            "Exit status: the program's; 2 bad usage; 126/127 cannot execute/find.\n");
}

/* After the one line that says what is wrong: the help stays out of the
 * way (the error would scroll off), as in coreutils. Returns 2, the exit
 * status of a bad command line. */
static int usage_error(void)
{
    fputs("Try 'nthrun --help' for more information.\n", stderr);
    return 2;
}

static int file_exists(const char *p) { return access(p, R_OK) == 0; }

/* The shim to preload, in the order given above; NULL if none exists.
 * `tried` collects the paths looked at, for the error message. */
static const char *find_shim(char *buf, size_t len, char *tried, size_t tlen)
{
    const char *env = getenv("NTH_PTHREAD_LIB");
    if (env && *env) {
        snprintf(tried, tlen, "%s (NTH_PTHREAD_LIB)", env);
        return file_exists(env) ? env : NULL;
    }
    tried[0] = 0;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        const char *dir = dirname(exe);
        /* pthread-shim/nthrun, or its libtool copy in pthread-shim/.libs/ */
        const char *rel[] = { "/../.libs/" SHIM_SO, "/../../.libs/" SHIM_SO };
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            snprintf(buf, len, "%s%s", dir, rel[i]);
            if (file_exists(buf))
                return buf;
        }
        snprintf(tried, tlen, "%s/../.libs, ", dir);
    }
    snprintf(buf, len, "%s/%s", NTH_LIBDIR, SHIM_SO);
    strncat(tried, buf, tlen - strlen(tried) - 1);
    return file_exists(buf) ? buf : NULL;
}

/* N in 0..4096, what NTH_VPS accepts (0: one VP per allowed CPU). */
static int parse_vps(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || *s == '-' || *s == '+' || v < 0 || v > 4096) return -1;
    return (int)v;
}

/* More VPs than the CPUs of our affinity mask (which the program
 * inherits): said here, once for the whole run, and NTH_VPS_TOLD=VPS/CPUS
 * tells the runtime of every process under us with the same figures not to
 * say it again (a script or a pyenv shim starts many threaded processes;
 * one run printed the runtime's line 14 times). */
static void tell_oversubscribed(const char *vps_s)
{
    cpu_set_t set;
    int vps = vps_s && *vps_s ? parse_vps(vps_s) : -1;
    if (vps <= 0 || sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    int ncpus = CPU_COUNT(&set);
    if (vps <= ncpus)
        return;
    char told[32];
    snprintf(told, sizeof told, "%d/%d", vps, ncpus);
    fprintf(stderr, "nthrun: NTH_VPS=%d is more than the %d CPU%s this program may use; "
            "VPs will share CPUs\n", vps, ncpus, ncpus == 1 ? "" : "s");
    (void)setenv("NTH_VPS_TOLD", told, 1);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "vps", required_argument, NULL, 'v' },
        { "trace", required_argument, NULL, 't' },
        { "cpumgr", required_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    const char *vps = NULL, *trace = NULL, *cpumgr = NULL;
    int c;
    /* '+': stop at the program's name, so its own options stay its own */
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'v':
            if (parse_vps(optarg) < 0) {
                fprintf(stderr, "nthrun: --vps '%s': accepted values are integers 1..4096, or 0 for one VP per allowed CPU\n", optarg);
                return usage_error();
            }
            vps = optarg;
            break;
        case 't':
            /* Checked here, before the program starts: the runtime
             * would only warn, in the program's output, and run it
             * untraced. */
            if (!nth_trace_name_ok(optarg)) {
                fprintf(stderr, "nthrun: --trace '%s': accepted values: " NTH_TRACE_ACCEPTED "\n", optarg);
                return usage_error();
            }
            trace = optarg;
            break;
        case 'c':
            if (!nth_cpumgr_name_ok(optarg)) {
                fprintf(stderr, "nthrun: --cpumgr '%s': accepted values: " NTH_CPUMGR_ACCEPTED "\n", optarg);
                return usage_error();
            }
            cpumgr = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("nthrun (" PACKAGE_NAME ") " PACKAGE_VERSION "\n");
            return 0;
        default:
            /* getopt_long said what is wrong in one line */
            return usage_error();
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "nthrun: no program given\n");
        return usage_error();
    }

    char buf[PATH_MAX + 64], tried[2 * PATH_MAX + 128];
    const char *shim = find_shim(buf, sizeof buf, tried, sizeof tried);
    if (!shim) {
        fprintf(stderr, "nthrun: %s not found (looked at %s); set NTH_PTHREAD_LIB\n", SHIM_SO, tried);
        return 127;
    }
    const char *old = getenv("LD_PRELOAD");
    char *preload;
    if (old && *old) {
        size_t len = strlen(shim) + strlen(old) + 2;
        preload = malloc(len);
        if (!preload) {
            perror("nthrun");
            return 127;
        }
        snprintf(preload, len, "%s:%s", shim, old);
    } else {
        preload = (char *)shim;
    }
    if ((vps && setenv("NTH_VPS", vps, 1)) || (trace && setenv("NTH_TRACE", trace, 1)) ||
        (cpumgr && setenv("NTH_CPUMGR", cpumgr, 1)) || setenv("LD_PRELOAD", preload, 1)) {
        perror("nthrun: setenv");
        return 127;
    }
    tell_oversubscribed(vps ? vps : getenv("NTH_VPS"));
    /* Traced: the program runs as our child, which writes the trace file
     * itself (NTH_TRACE_MAIN_PID, set there), every other process of the
     * run FILE.PID.EXT (trace_writer.c), so that no process overwrites
     * another's; and what it leaves behind when it cannot write FILE is
     * converted once it is gone (nthrun_trace.c). */
    const char *tr = getenv("NTH_TRACE");
    if (tr && *tr)
        return nthrun_traced(&argv[optind], tr);
    execvp(argv[optind], &argv[optind]);
    int e = errno;
    fprintf(stderr, "nthrun: cannot run '%s': %s\n", argv[optind], strerror(e));
    return e == ENOENT ? 127 : 126;
}
