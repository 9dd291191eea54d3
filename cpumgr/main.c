/*
 * main.c -- the cpumgr command line: run the daemon, `status`, `stop`.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>

#include "cpulist.h"
#include "group.h"
#include "daemon.h"
#include "segment.h"
#include "status.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: cpumgr [run] [--foreground] [--name /NAME] [--policy equipartition|priority]\n"
        "              [--period MS] [--quantum MS] [--enforce US] [--share] [--group GROUP]\n"
        "              [--cpus LIST] [--accounting FILE] [--trace FILE] [--exit-grace MS]\n"
        "       cpumgr status [--name /NAME] [--watch [MS]]\n"
        "       cpumgr stop [--name /NAME]\n"
        "See cpumgr(8).\n");
}

static int parse_ms(const char *opt, const char *v, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long x = strtoul(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-' || x < lo || x > hi) {
        fprintf(stderr, "cpumgr: %s: bad value '%s' (accepted: %u..%u milliseconds)\n", opt, v, lo, hi);
        return -1;
    }
    *out = (unsigned)x;
    return 0;
}

/* path made absolute against the current directory: the background daemon
 * runs in / (so that it holds no directory busy), where a relative
 * --accounting or --trace name would land. The result goes to buf (one per
 * option, static, so that nothing is left for the leak checker to report).
 * NULL if the current directory is gone or the name is too long (reported). */
static const char *absolute(const char *opt, const char *path, char *buf, size_t len)
{
    if (path[0] == '/')
        return path;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) {
        fprintf(stderr, "cpumgr: %s %s: cannot read the current directory: %s\n", opt, path, strerror(errno));
        return NULL;
    }
    if ((size_t)snprintf(buf, len, "%s/%s", cwd, path) >= len) {
        fprintf(stderr, "cpumgr: %s %s: the path is longer than %zu bytes\n", opt, path, len - 1);
        return NULL;
    }
    return buf;
}

int main(int argc, char **argv)
{
    static char defname[64];
    static char acct_path[PATH_MAX], trace_path[PATH_MAX];
    const char *env = getenv("NTH_CPUMGR");
    nth_cpumgr_default_name(defname, (unsigned long)getuid());
    struct cm_opts o = {
        .name = (env && *env && strcmp(env, "off") != 0) ? env : defname,
        .policy = CM_POLICY_EQUIPARTITION, .period_ms = 10, .quantum_ms = 100,
        .enforce_us = 2000,
        .gid = (gid_t)-1, .ready_fd = -1,
    };
    /* Who gave the name, for its message: NTH_CPUMGR=foo was blamed on
     * a --name nobody passed (fresh15). */
    const char *name_from = o.name == env ? "NTH_CPUMGR" : "--name";
    enum { RUN, STATUS, STOP } cmd = RUN;
    int argi = 1;
    if (argc > 1 && argv[1][0] != '-') {
        if (strcmp(argv[1], "run") == 0) cmd = RUN;
        else if (strcmp(argv[1], "status") == 0) cmd = STATUS;
        else if (strcmp(argv[1], "stop") == 0) cmd = STOP;
        else { fprintf(stderr, "cpumgr: unknown command '%s' (accepted: run, status, stop)\n", argv[1]); return 2; }
        argi = 2;
    }
    static const struct option lo[] = {
        {"foreground", no_argument, 0, 'f'}, {"name", required_argument, 0, 'n'},
        {"policy", required_argument, 0, 'p'}, {"period", required_argument, 0, 'P'},
        {"quantum", required_argument, 0, 'q'}, {"share", no_argument, 0, 's'},
        {"enforce", required_argument, 0, 'e'}, {"exit-grace", required_argument, 0, 'x'},
        {"group", required_argument, 0, 'g'}, {"cpus", required_argument, 0, 'c'},
        {"accounting", required_argument, 0, 'a'}, {"trace", required_argument, 0, 't'}, {"watch", optional_argument, 0, 'w'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    /* Which options each command takes: `status --policy priority` used
     * to be accepted and ignored, so a user believed it did something
     * (issue 5). The daemon's options belong to run, --watch to status. */
    static const char *const takes[] = {
        [RUN] = "fnpPqsexgcath", [STATUS] = "nwh", [STOP] = "nh" };
    static const char *const accepted[] = {
        [RUN] = "every option but --watch", [STATUS] = "--name, --watch, --help",
        [STOP] = "--name, --help" };
    static const char *const cmd_name[] = { [RUN] = "run", [STATUS] = "status", [STOP] = "stop" };
    unsigned watch = 0;
    optind = argi;
    int c, li = -1;
    while ((c = getopt_long(argc, argv, "", lo, &li)) != -1) {
        if (c != '?' && c != ':' && li >= 0 && !strchr(takes[cmd], c)) {
            fprintf(stderr, "cpumgr: --%s: not an option of `cpumgr %s` (accepted: %s)\n",
                    lo[li].name, cmd_name[cmd], accepted[cmd]);
            return 2;
        }
        li = -1;
        switch (c) {
        case 'f': o.foreground = 1; break;
        case 'n': o.name = optarg; name_from = "--name"; break;
        case 'p':
            if (cm_policy_parse(optarg, &o.policy)) {
                fprintf(stderr, "cpumgr: --policy: bad value '%s' (accepted: equipartition, priority)\n", optarg);
                return 2;
            }
            break;
        case 'P': if (parse_ms("--period", optarg, 1, 10000, &o.period_ms)) return 2; break;
        case 'q': if (parse_ms("--quantum", optarg, 1, 600000, &o.quantum_ms)) return 2; break;
        case 'x': if (parse_ms("--exit-grace", optarg, 0, 10000, &o.exit_grace_ms)) return 2; break;
        case 's': o.share = 1; break;
        case 'e': {
            char *end;
            errno = 0;
            unsigned long x = strtoul(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-' || x > 10000000ul) {
                fprintf(stderr, "cpumgr: --enforce: bad value '%s' (accepted: 0..10000000 "
                        "microseconds, 0 = never)\n", optarg);
                return 2;
            }
            o.enforce_us = (unsigned)x;
            break;
        }
        case 'g': {
            char msg[512];
            if (cm_group_parse(optarg, &o.gid, msg, sizeof msg) != 0) {
                fprintf(stderr, "cpumgr: --group: %s\n", msg);
                return 2;
            }
            break;
        }
        case 'c': {
            /* Checked here as well as in the daemon: a typo, or a list
             * with none of the CPUs we may use, is reported before
             * anything starts, with the usage's exit status and the
             * CPUs that would do (a new user tried --cpus 1024 on a
             * 2-CPU machine and was not told 0-1). */
            hwloc_bitmap_t b = hwloc_bitmap_alloc(), mine = hwloc_bitmap_alloc();
            char avail[256] = "?";
            int bad = !b || !mine || cm_cpulist_parse(optarg, b) != 0;
            if (mine && cm_cpulist_allowed(mine) == 0) {
                hwloc_bitmap_list_snprintf(avail, sizeof avail, mine);
                bad = bad || !hwloc_bitmap_intersects(b, mine);
            }
            hwloc_bitmap_free(b);
            hwloc_bitmap_free(mine);
            if (bad) {
                fprintf(stderr, "cpumgr: --cpus: bad value '%s' (accepted: " CM_CPULIST_SYNTAX
                        ", among the CPUs this process may use: %s)\n", optarg, avail);
                return 2;
            }
            o.cpus = optarg;
            break;
        }
        case 'a': if (!(o.accounting = absolute("--accounting", optarg, acct_path, sizeof acct_path))) return 1; break;
        case 't': if (!(o.trace = absolute("--trace", optarg, trace_path, sizeof trace_path))) return 1; break;
        case 'w':
            /* An optional argument of getopt_long is only taken as
             * --watch=MS; take `--watch MS` too when a number follows. */
            if (!optarg && optind < argc && argv[optind][0] >= '0' && argv[optind][0] <= '9')
                optarg = argv[optind++];
            watch = 1000;
            if (optarg && parse_ms("--watch", optarg, 10, 3600000, &watch)) return 2;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) { fprintf(stderr, "cpumgr: unexpected argument '%s'\n", argv[optind]); usage(stderr); return 2; }
    if (cm_seg_name_ok(o.name)) {
        fprintf(stderr, "cpumgr: %s: bad value '%s' (accepted: '/' then 1..199 bytes without '/'%s)\n",
                name_from, o.name, strcmp(name_from, "NTH_CPUMGR") ? "" : ", or off");
        return 2;
    }
    if (cmd == STATUS)
        return cm_status(o.name, watch);
    if (cmd == STOP)
        return cm_stop(o.name);
    if (o.foreground)
        return cm_daemon_run(&o);
    /* Background: the parent returns once the daemon is ready (or failed),
     * so `cpumgr && app` never races the segment's creation. */
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) { perror("cpumgr: pipe"); return 1; }
    pid_t pid = fork();
    if (pid < 0) { perror("cpumgr: fork"); return 1; }
    if (pid == 0) {
        close(fds[0]);
        setsid();
        /* stderr stays the terminal's until the daemon is ready, so that
         * start-up errors are seen; cm_daemon_run() then points it at
         * /dev/null (cpumgr(8), --foreground). */
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) { dup2(nul, 0); dup2(nul, 1); if (nul > 2) close(nul); }
        if (chdir("/") != 0) { /* keep going: nothing needs the cwd */ }
        o.ready_fd = fds[1];
        _exit(cm_daemon_run(&o));
    }
    close(fds[1]);
    char b;
    ssize_t r = read(fds[0], &b, 1);
    close(fds[0]);
    if (r == 1) { printf("%d\n", (int)pid); return 0; }
    int st;
    waitpid(pid, &st, 0);
    return 1;
}
