/*
 * test_runtime.c -- the cpumgr client inside the real runtime: rt_app
 * processes (nthlib applications with VPs and counted work items) under a
 * cpumgr daemon (foreground, a private segment per test). Checks that VPs
 * park and unpark with the assignment, that no work item is lost or run
 * twice, that an application survives its daemon and re-attaches, and that
 * a nano-thread which never yields leaves a CPU taken from it (bounded
 * reclaim), and by the daemon when the runtime ignores it. Every test kills its children and unlinks its segment in
 * teardown; children die with us (PR_SET_PDEATHSIG). Waits are bounded.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "nth/cpumgr_shm.h"
#include "../../cpumgr/segment.h"
#include "../../nthlib/sched_slice.h"

#define WAIT_MS 20000     /* generous: 2 noisy cores, maybe sanitizers; an app took over
                           * 8 s to print its first line beside 6 CPU hogs and a build */
#define RECLAIM_BOUND_MS 500

struct proc {
    pid_t pid;
    int in, out;
    char buf[16384];
    size_t len;
    char state[512];  /* last "A=..." line */
    char done[256];   /* "DONE ..." line */
    char spin[128];   /* "SPIN ..." line */
    char fspin[64];   /* "FSPIN ..." line */
    char pre[128];    /* last "PRE ..." line */
    char move[160];   /* last "MOVE ..." line */
    char slept[128];  /* "SLEPT ..." line */
    int exiting;      /* an "EXITING" line came */
    char late[128];   /* "LATE ..." line (rt_app late) */
    char init[256];   /* "INIT ..." line (rt_app, right after nth_init()) */
};

static char bindir[PATH_MAX];
static char seg[64], logf[PATH_MAX];
static pid_t kids[32];
static int nkids;
static pid_t daemon_pid;
static int ncpus;
/* The cases share 2 CPUs between applications (one each, or one taken from
 * an application of 2). main() runs them on the first 2 CPUs of the
 * process mask, whatever their numbers and however many more the machine
 * has (the daemon and the applications inherit that mask); with 1 CPU
 * they skip, saying why. cpu_pair: those 2 CPUs' OS indices. */
static int cpu_pair[2] = { -1, -1 };

static int other_cpu(int c) { return c == cpu_pair[0] ? cpu_pair[1] : cpu_pair[0]; }

#define NEED_TWO_CPUS()                                                                    \
    do {                                                                                   \
        if (ncpus != 2) {                                                                  \
            print_message("the daemon manages %d CPU(s): this case shares 2 CPUs between "  \
                          "applications\n", ncpus);                                        \
            skip();                                                                        \
        }                                                                                  \
    } while (0)

static uint64_t us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_ms(unsigned m)
{
    struct timespec ts = {(time_t)(m / 1000), (long)(m % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* cpu >= 0: the child runs with that one CPU as its affinity mask. */
static pid_t spawn(char *const argv[], int *in, int *out, int cpu)
{
    int pin[2], pout[2];
    assert_int_equal(pipe2(pin, O_CLOEXEC), 0);
    if (out) assert_int_equal(pipe2(pout, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (cpu >= 0) {
            cpu_set_t cs;
            CPU_ZERO(&cs);
            CPU_SET(cpu, &cs);
            sched_setaffinity(0, sizeof cs, &cs);
        }
        if (in) { dup2(pin[0], 0); close(pin[0]); close(pin[1]); }
        else { int nul = open("/dev/null", O_RDONLY); dup2(nul, 0); }
        if (out) { dup2(pout[1], 1); close(pout[0]); close(pout[1]); }
        int fd = open(logf, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) dup2(fd, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pin[0]);
    if (in) *in = pin[1]; else close(pin[1]);
    if (out) { close(pout[1]); *out = pout[0]; fcntl(*out, F_SETFL, O_NONBLOCK); }
    kids[nkids++] = pid;
    return pid;
}

static void reap(pid_t pid)
{
    for (int i = 0; i < nkids; i++)
        if (kids[i] == pid) {
            waitpid(pid, NULL, 0);
            kids[i] = kids[--nkids];
            return;
        }
}

/* opt, val: one more daemon option, or NULL. */
static void start_daemon_opt(const char *opt, const char *val)
{
    static char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/cpumgr/cpumgr", bindir);
    char *argv[] = {path, "--foreground", "--name", seg, "--period", "10", "--quantum", "50",
                    (char *)opt, (char *)val, NULL};
    daemon_pid = spawn(argv, NULL, NULL, -1);
    uint64_t t0 = us();
    for (;;) {
        struct nth_cpumgr_shm *s = NULL;
        char msg[200];
        int ok = 0;
        if (cm_seg_open(seg, &s, msg, sizeof msg) == 0 && s) {
            ok = s->daemon_pid == daemon_pid &&
                 __atomic_load_n(&s->daemon_state, __ATOMIC_ACQUIRE) == NTH_CPUMGR_DAEMON_RUNNING;
            ncpus = (int)s->ncpus;
            cm_seg_unmap(s);
        }
        if (ok) return;
        /* No start-up time is promised: long enough for an ASan daemon at
         * load ~170 (8 s was not, in test_integration). */
        if (us() - t0 > 2u * WAIT_MS * 1000u) fail_msg("daemon not ready on %s", seg);
        sleep_ms(5);
    }
}

static void start_daemon(void) { start_daemon_opt(NULL, NULL); }

/* arg: rt_app's mode ("pre") or client_app's priority. */
static void start_arg(struct proc *p, const char *prog, const char *req, int cpu, const char *arg)
{
    static char path[2][PATH_MAX + 32];
    static int k;
    k ^= 1;
    snprintf(path[k], sizeof path[k], "%s/tests/cpumgr/%s", bindir, prog);
    char *argv[] = {path[k], seg, (char *)req, (char *)arg, NULL};
    memset(p, 0, sizeof *p);
    p->pid = spawn(argv, &p->in, &p->out, cpu);
}

static void start(struct proc *p, const char *prog, const char *req, int cpu)
{
    start_arg(p, prog, req, cpu, "1");
}

static void send(struct proc *p, const char *cmd)
{
    assert_int_equal(write(p->in, cmd, strlen(cmd)), (ssize_t)strlen(cmd));
}

static void drain(struct proc *p)
{
    for (;;) {
        ssize_t r = read(p->out, p->buf + p->len, sizeof p->buf - 1 - p->len);
        if (r <= 0) break;
        p->len += (size_t)r;
        p->buf[p->len] = 0;
        char *nl;
        while ((nl = strchr(p->buf, '\n')) != NULL) {
            *nl = 0;
            if (getenv("RT_DEBUG"))
                fprintf(stderr, "[%d] %s\n", (int)p->pid, p->buf);
            if (!strncmp(p->buf, "A=", 2))
                snprintf(p->state, sizeof p->state, "%.*s", (int)sizeof p->state - 1, p->buf);
            else if (!strncmp(p->buf, "DONE", 4))
                snprintf(p->done, sizeof p->done, "%.*s", (int)sizeof p->done - 1, p->buf);
            else if (!strncmp(p->buf, "SPIN", 4))
                snprintf(p->spin, sizeof p->spin, "%.*s", (int)sizeof p->spin - 1, p->buf);
            else if (!strncmp(p->buf, "FSPIN", 5))
                snprintf(p->fspin, sizeof p->fspin, "%.*s", (int)sizeof p->fspin - 1, p->buf);
            else if (!strncmp(p->buf, "SLEPT", 5))
                snprintf(p->slept, sizeof p->slept, "%.*s", (int)sizeof p->slept - 1, p->buf);
            else if (!strcmp(p->buf, "EXITING"))
                p->exiting = 1;
            else if (!strncmp(p->buf, "PRE", 3))
                snprintf(p->pre, sizeof p->pre, "%.*s", (int)sizeof p->pre - 1, p->buf);
            else if (!strncmp(p->buf, "MOVE", 4))
                snprintf(p->move, sizeof p->move, "%.*s", (int)sizeof p->move - 1, p->buf);
            else if (!strncmp(p->buf, "INIT", 4))
                snprintf(p->init, sizeof p->init, "%.*s", (int)sizeof p->init - 1, p->buf);
            else if (!strncmp(p->buf, "LATE", 4))
                snprintf(p->late, sizeof p->late, "%.*s", (int)sizeof p->late - 1, p->buf);
            size_t used = (size_t)(nl - p->buf) + 1;
            memmove(p->buf, nl + 1, p->len - used + 1);
            p->len -= used;
        }
    }
}

/* Does the state line hold every space-separated word of want? */
static int state_has(const struct proc *p, const char *want)
{
    char w[256], line[520];
    snprintf(w, sizeof w, "%.*s", (int)sizeof w - 1, want);
    snprintf(line, sizeof line, " %.*s ", 511, p->state);
    for (char *save, *t = strtok_r(w, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        char pat[300];
        snprintf(pat, sizeof pat, " %s ", t);
        if (!strstr(line, pat)) return 0;
    }
    return 1;
}

static void wait_state(struct proc *p, const char *want)
{
    uint64_t t0 = us();
    for (;;) {
        drain(p);
        if (state_has(p, want)) return;
        if (us() - t0 > WAIT_MS * 1000u)
            fail_msg("app %d: want '%s', have '%s'", (int)p->pid, want, p->state);
        sleep_ms(2);
    }
}

/* Stop the work and check every item ran exactly once. */
static void check_work(struct proc *p)
{
    send(p, "stop\n");
    uint64_t t0 = us();
    while (!p->done[0]) {
        drain(p);
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("app %d: no DONE line", (int)p->pid);
        sleep_ms(2);
    }
    long items = -1, lost = -1, dup = -1;
    assert_int_equal(sscanf(p->done, "DONE items=%ld lost=%ld dup=%ld", &items, &lost, &dup), 3);
    print_message("app %d: %s\n", (int)p->pid, p->done);
    assert_true(items > 0);
    assert_int_equal(lost, 0);
    assert_int_equal(dup, 0);
}

/* Segments and logs of earlier runs of this test whose process is gone:
 * teardown unlinks what a test made, but a run killed from outside (an
 * outer timeout, SIGKILL) cannot, and its /dev/shm/nth-rttest-PID-N stays
 * (dozens were found, one rt_app pid holding two slots in each). */
static void sweep_dead_runs(void)
{
    DIR *dir = opendir("/dev/shm");
    if (!dir)
        return;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        int pid = 0, n = 0;
        if (sscanf(e->d_name, "nth-rttest-%d-%d", &pid, &n) != 2 || pid <= 0 ||
            pid == (int)getpid() || kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        char name[300];
        snprintf(name, sizeof name, "/%s", e->d_name);
        shm_unlink(name);
        snprintf(name, sizeof name, "/tmp/nth-rttest-%d-%d.log", pid, n);
        unlink(name);
    }
    closedir(dir);
}

static int setup(void **state)
{
    (void)state;
    static int serial;
    if (!serial)
        sweep_dead_runs();
    const char *b = getenv("top_builddir");
    snprintf(bindir, sizeof bindir, "%s", b ? b : ".");
    snprintf(seg, sizeof seg, "/nth-rttest-%d-%d", (int)getpid(), ++serial);
    /* A segment of this name is a dead earlier run's whose pid we reuse
     * (pid_max is 32768 on a small machine, and a killed run leaves its
     * segment): the daemon would take it over and "rebuild" its state. */
    shm_unlink(seg);
    snprintf(logf, sizeof logf, "/tmp/nth-rttest-%d-%d.log", (int)getpid(), serial);
    unlink(logf);
    nkids = 0;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < nkids; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    nkids = 0;
    shm_unlink(seg);
    if (getenv("NTH_TEST_KEEP_LOGS") == NULL)
        unlink(logf);
    return 0;
}

/* The assignment shrinks and grows under running work: the VP of the CPU
 * taken away parks, comes back with the CPU, and every item runs once. */
static void test_shrink_grow(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b;
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1 N=2 EN=2");
    send(&a, "work\n");
    sleep_ms(50);
    start(&b, "client_app", "1", -1);
    wait_state(&a, "A=1 N=1 EN=1 PK=1 OUT=0");
    sleep_ms(50);
    send(&b, "exit\n");
    reap(b.pid);
    wait_state(&a, "A=1 N=2 EN=2 PK=0 OUT=0");
    sleep_ms(50);
    check_work(&a);
}

/* Exit with a VP the daemon disabled, parked on the slot's word, and an
 * exit handler that runs after the client's detach and wakes disabled VPs
 * (nth_switch_hook_set, as the pthread shim's first sleep from a late
 * exit handler or the trace writer's does). The wake went through the
 * slot word the VP had recorded, in a segment the client had unmapped:
 * SIGSEGV in every run (the fresh14 report: a traced shim program beside
 * busy neighbours, 10 of 12 runs). The handler must run, the hook
 * install and removal succeed, and the process exit 0. */
static void test_exit_handler_wakes_parked_vp(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b;
    start_arg(&a, "rt_app", "2", -1, "late");
    wait_state(&a, "A=1 N=2 EN=2");
    /* Busy when its CPU goes: a disabled VP found idle stays asleep on
     * its own word (the bug then passed, 4 runs in 6); one leaving work
     * parks through the park operation, on the slot's word. */
    send(&a, "work\n");
    sleep_ms(50);
    start(&b, "client_app", "1", -1);
    wait_state(&a, "A=1 N=1 EN=1 PK=1");
    check_work(&a);
    send(&a, "exit\n");
    int st = 0;
    assert_int_equal(waitpid(a.pid, &st, 0), a.pid);
    for (int i = 0; i < nkids; i++)
        if (kids[i] == a.pid)
            kids[i] = kids[--nkids];
    drain(&a);
    print_message("app %d: status 0x%x, '%s'\n", (int)a.pid, st, a.late);
    if (WIFSIGNALED(st))
        fail_msg("app %d killed by signal %d at exit", (int)a.pid, WTERMSIG(st));
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_true(strncmp(a.late, "LATE hook=0 unhook=0 ", 21) == 0);
}

/* Two applications on 2 CPUs: one CPU each, disjoint, each VP on its own. */
static void test_two_apps(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b;
    start(&a, "rt_app", "2", -1);
    start(&b, "rt_app", "2", -1);
    send(&a, "work\n");
    send(&b, "work\n");
    wait_state(&a, "A=1 N=1 EN=1 PK=1 OUT=0 V=2");
    wait_state(&b, "A=1 N=1 EN=1 PK=1 OUT=0 V=2");
    char ca[32], cb[32];
    assert_int_equal(sscanf(strstr(a.state, "CPUS="), "CPUS=%31s", ca), 1);
    assert_int_equal(sscanf(strstr(b.state, "CPUS="), "CPUS=%31s", cb), 1);
    assert_string_not_equal(ca, cb);
    sleep_ms(100);
    check_work(&a);
    check_work(&b);
}

/* An application attached before nth_init() (nth_cpus_request() first),
 * and a CPU was taken from it while its main thread still ran there: the
 * daemon (--enforce) bound that thread to the CPU left to it. nth_init()
 * must still build its VPs on the process's own mask (2 VPs), not on that
 * passing binding: with it, the application kept one VP for good (seen as
 * test_two_apps failing now and then, its main thread inside nth_init()
 * when the daemon enforced). */
static void test_enforced_before_init(void **state)
{
    (void)state;
    start_daemon_opt("--enforce", "300000"); /* 300 ms: time to stand on the CPU */
    NEED_TWO_CPUS();
    struct proc a, b;
    start_arg(&a, "rt_app", "2", -1, "pre");
    uint64_t t0 = us();
    while (strcmp(a.pre, "PRE attached") != 0) {
        drain(&a);
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("app %d: not attached before init", (int)a.pid);
        sleep_ms(2);
    }
    start(&b, "client_app", "1", -1);
    t0 = us();
    while (strncmp(a.pre, "PRE moved=", 10) != 0) {
        drain(&a);
        if (us() - t0 > 2 * WAIT_MS * 1000u) fail_msg("app %d: no PRE moved line", (int)a.pid);
        sleep_ms(2);
    }
    assert_string_equal(a.pre, "PRE moved=1"); /* else this test tests nothing */
    wait_state(&a, "A=1 N=1 EN=1 PK=1 OUT=0 V=2");
    send(&a, "work\n");
    sleep_ms(50);
    check_work(&a);
}

/* kill -9 the daemon: the application carries on alone on all its CPUs,
 * then re-attaches to a new daemon and shrinks again. */
static void test_daemon_dies(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    char all[16];
    snprintf(all, sizeof all, "N=%d", ncpus);
    struct proc a, b;
    start(&a, "rt_app", "2", -1);
    start(&b, "client_app", "2", -1);
    send(&a, "work\n");
    wait_state(&a, "A=1 N=1 EN=1 PK=1");
    kill(daemon_pid, SIGKILL);
    reap(daemon_pid);
    char want[64];
    snprintf(want, sizeof want, "A=0 %s EN=%d PK=0 OUT=0", all, ncpus);
    wait_state(&a, want);
    sleep_ms(50);
    start_daemon();
    wait_state(&a, "A=1 N=1 EN=1 PK=1 OUT=0");
    check_work(&a);
}

/* More applications than CPUs: the daemon rotates the CPUs, and while the
 * application has none every VP is parked (not spinning); its work resumes
 * and no item is lost or run twice. */
static void test_zero_cpus(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b, c;
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1 N=2 EN=2");
    send(&a, "work\n");
    start(&b, "client_app", "2", -1);
    start(&c, "client_app", "2", -1);
    wait_state(&a, "A=1 N=0 EN=0 PK=2");
    print_message("app %d with no CPU: %s\n", (int)a.pid, a.state);
    kill(b.pid, SIGKILL);
    reap(b.pid);
    kill(c.pid, SIGKILL);
    reap(c.pid);
    wait_state(&a, "A=1 N=2 EN=2 PK=0 OUT=0");
    sleep_ms(50);
    check_work(&a);
}

/* An application that exits while the daemon has given it no CPU (its
 * main nano-thread still on VP 0, disabled under it) must still finish
 * exit handlers that block a nano-thread after the cpumgr client's own
 * (a trace's flush under the pthread shim: notes f14t, traced nested shells
 * hung in exit()). rt_app's handler sleeps 1 ms on a nano-thread; the
 * runtime, alone once its slot is freed, must give it a VP. Without that
 * the process never exits (failed here: checked). */
static void test_exit_with_no_cpu(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b, c;
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1 N=2 EN=2");
    send(&a, "exitzero\n");
    start(&b, "client_app", "2", -1);
    start(&c, "client_app", "2", -1);
    uint64_t t0 = us();
    int st = 0;
    pid_t w = 0;
    while ((w = waitpid(a.pid, &st, WNOHANG)) == 0) {
        drain(&a);
        if (us() - t0 > 2u * WAIT_MS * 1000u)
            fail_msg("app %d did not exit (EXITING seen: %d, '%s'): a nano-thread blocked in "
                     "an exit handler after the client left the daemon, with no VP enabled",
                     (int)a.pid, a.exiting, a.slept);
        sleep_ms(2);
    }
    assert_int_equal(w, a.pid);
    for (int i = 0; i < nkids; i++)
        if (kids[i] == a.pid)
            kids[i] = kids[--nkids];
    drain(&a);
    print_message("app %d: exited with no CPU: EXITING %d, %s\n", (int)a.pid, a.exiting, a.slept);
    assert_true(a.exiting);
    assert_string_equal(a.slept, "SLEPT rc=0");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static int proc_cpu(pid_t pid, int tid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, tid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p) return -1;
    int field = 2;
    for (p++; *p && field < 39; p++)
        if (*p == ' ') field++;
    return atoi(p);
}

/* A nano-thread that never reaches a scheduling point runs on CPU C; C is
 * given to another application (its affinity mask is C alone). This
 * process polls the spinning kernel thread and brackets its move: each
 * look is stamped before it starts and after it ends (CLOCK_MONOTONIC ns),
 * so the move came after the start of the last look that saw the thread
 * on C and no later than the end of the first that saw it off. A stamp
 * taken before a look that sees the thread off is no bound at all: this
 * process may be preempted between the clock read and the look (by the
 * very watcher that moves the thread, sharing its CPU), and the move then
 * seems to precede its own start (test_first_move_margin failed so, 2
 * runs in 40 beside two busy loops). Returns a lower bound of the time
 * (us) from the daemon's grant of C, as this process saw it, to the move:
 * from the end of the scan that saw the grant to the start of the last
 * look that saw the thread on C; a delay of this process shortens it,
 * never lengthens it. With plan (not NULL), the move is waited for as
 * long as any other event here (WAIT_MS: its time is not what is
 * checked), and plan gets the budget's start as the daemon wrote it
 * (budget_ns), the end of the look that saw the thread off C (left_ns),
 * and the move as the runtime planned it (its MOVE line): its reclaim
 * clock's start and due time, all CLOCK_MONOTONIC ns. Then lets the
 * nano-thread yield and gives C back. reclaim_us: the application's
 * NTH_RECLAIM_US, NULL for the default. */
struct move_plan {
    uint64_t budget_ns, left_ns;
    long long since_ns, due_ns;
};

static uint64_t ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The kernel thread whose move is watched. */
struct watched {
    pid_t pid;
    int tid, cpu;
};

/* Is w's kernel thread off its CPU: its mask without it, and not on it
 * (moved, not only rebound)? A look, for bracket_move(). */
static int off_cpu(void *arg)
{
    const struct watched *w = arg;
    cpu_set_t cs;
    int on = proc_cpu(w->pid, w->tid);
    return sched_getaffinity(w->tid, sizeof cs, &cs) == 0 && !CPU_ISSET(w->cpu, &cs) &&
           on != w->cpu;
}

/* Brackets a move: look(arg) every ~20 us from `from` (ns) until it says
 * 1 (moved) or limit_ns have passed. *on_c gets the start of the last
 * look that said 0 (`from` if none did: the move came after it), *left
 * the end of the look that said 1, 0 if none did (CLOCK_MONOTONIC ns).
 * The move then lies in (*on_c, *left]. */
static void bracket_move(int (*look)(void *), void *arg, uint64_t from, uint64_t limit_ns,
                         uint64_t *on_c, uint64_t *left)
{
    *on_c = from;
    *left = 0;
    for (;;) {
        uint64_t before = ns();
        if (look(arg)) {
            *left = ns();
            return;
        }
        *on_c = before;
        if (before - from > limit_ns)
            return;
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

/* A look that says "moved" on its fourth call, the move made inside the
 * call (as when this process is preempted between its clock read and its
 * look by the watcher that moves the thread); moved_at: when. */
struct fake_move {
    int calls;
    uint64_t moved_at;
};

static int fake_look(void *arg)
{
    struct fake_move *f = arg;
    if (++f->calls < 4)
        return 0;
    f->moved_at = ns();
    return 1;
}

/* bracket_move()'s interval holds the move, however late in the look it
 * came: the end stamp is taken after the look. Stamped before the look,
 * as spin_and_reclaim() once did, the move seemed to precede itself and
 * test_first_move_margin saw an early move the runtime never made. */
static void test_move_bracket(void **state)
{
    (void)state;
    struct fake_move f = {0, 0};
    uint64_t from = ns(), on_c = 0, left = 0;
    bracket_move(fake_look, &f, from, 10ull * 1000000000u, &on_c, &left);
    assert_int_equal(f.calls, 4);
    assert_true(on_c >= from);
    assert_true(on_c < f.moved_at);
    assert_true(left >= f.moved_at);
}

static uint64_t spin_and_reclaim(const char *reclaim_us, struct move_plan *plan)
{
    /* Give up on the move at twice the budget, 2 s at least. */
    uint64_t cap_ns = reclaim_us ? 2000u * (uint64_t)strtoull(reclaim_us, NULL, 10) : 0;
    if (cap_ns < 2000000000u)
        cap_ns = 2000000000u;
    struct proc a, b;
    if (reclaim_us)
        setenv("NTH_RECLAIM_US", reclaim_us, 1);
    start(&a, "rt_app", "2", -1);
    unsetenv("NTH_RECLAIM_US");
    wait_state(&a, "A=1 N=2 EN=2");
    send(&a, "spin\n");
    uint64_t t0 = us();
    while (!a.spin[0]) {
        drain(&a);
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("no SPIN line");
        sleep_ms(2);
    }
    int tid = -1, cpu = -1, vp = -1;
    assert_int_equal(sscanf(a.spin, "SPIN tid=%d cpu=%d vp=%d", &tid, &cpu, &vp), 3);
    assert_true(tid > 0 && cpu >= 0 && vp >= 0);
    start(&b, "client_app", "1", cpu);
    /* From the moment B's slot holds C (the daemon gave it), poll A's thread. */
    struct nth_cpumgr_shm *s = NULL;
    char msg[200];
    assert_int_equal(cm_seg_open(seg, &s, msg, sizeof msg), 0);
    /* given: end of the scan that saw B hold C; then the move's bracket
     * (bracket_move): on_c, left. All ns. */
    uint64_t given = 0, on_c = 0, left = 0, budget_ns = 0;
    t0 = ns();
    while (!given && ns() - t0 <= WAIT_MS * 1000000ull) {
        int seen = 0;
        for (unsigned i = 0; i < NTH_CPUMGR_MAX_SLOTS; i++) {
            struct nth_cpumgr_slot *sl = &s->slots[i];
            if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) == NTH_CPUMGR_SLOT_ACTIVE &&
                __atomic_load_n(&sl->pid, __ATOMIC_RELAXED) == b.pid &&
                nth_cpumgr_mask_test(sl->assigned, (unsigned)cpu))
                seen = 1;
        }
        /* A lost C in the same pass, published before B gained it. */
        for (unsigned i = 0; seen && i < NTH_CPUMGR_MAX_SLOTS; i++) {
            struct nth_cpumgr_slot *sl = &s->slots[i];
            if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) == NTH_CPUMGR_SLOT_ACTIVE &&
                __atomic_load_n(&sl->pid, __ATOMIC_RELAXED) == a.pid)
                budget_ns = __atomic_load_n(&sl->budget_ns, __ATOMIC_ACQUIRE);
        }
        if (seen) {
            given = ns();
            break;
        }
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    if (given) {
        struct watched w = {a.pid, tid, cpu};
        bracket_move(off_cpu, &w, given, plan ? WAIT_MS * 1000000ull : cap_ns, &on_c, &left);
    }
    cm_seg_unmap(s);
    assert_true(given != 0);
    assert_true(left != 0);
    print_message("spinning kernel thread left CPU %d %.3f-%.3f ms after the daemon gave it away "
                  "(%.3f-%.3f ms after its budget began)\n", cpu, (double)(on_c - given) / 1e6,
                  (double)(left - given) / 1e6,
                  budget_ns ? ((double)on_c - (double)budget_ns) / 1e6 : -1.0,
                  budget_ns ? ((double)left - (double)budget_ns) / 1e6 : -1.0);
    wait_state(&a, "A=1 N=1 RC=1"); /* the runtime says it moved one VP */
    if (plan) {
        t0 = us();
        while (!a.move[0]) {
            drain(&a);
            if (us() - t0 > WAIT_MS * 1000u) fail_msg("app %d: no MOVE line", (int)a.pid);
            sleep_ms(2);
        }
        plan->budget_ns = budget_ns;
        plan->left_ns = left;
        /* The plan of the move watched: the process's only one (n=1, as
         * RC=1 said), of the spinner's VP, off a CPU taken away. A later
         * move (the stale-binding path, the VP disabled again) would
         * bring another plan. */
        unsigned long n = 0;
        int mvp = -1;
        char path[16] = "";
        if (sscanf(a.move, "MOVE n=%lu vp=%d path=%15s since=%lld due=%lld", &n, &mvp, path,
                   &plan->since_ns, &plan->due_ns) != 5)
            fail_msg("app %d: MOVE line '%s' unreadable", (int)a.pid, a.move);
        if (n != 1 || mvp != vp || strcmp(path, "disabled"))
            fail_msg("app %d: the last move is not the spinner's VP %d moved once off CPU %d: "
                     "'%s'", (int)a.pid, vp, cpu, a.move);
    }
    /* Let it reach a scheduling point: its VP parks; give the CPU back. */
    send(&a, "unspin\n");
    wait_state(&a, "A=1 N=1 EN=1 PK=1 OUT=0");
    send(&b, "exit\n");
    reap(b.pid);
    wait_state(&a, "A=1 N=2 EN=2 PK=0 OUT=0");
    return (on_c - given) / 1000u;
}

/* The runtime must move the spinning kernel thread off C within
 * NTH_RECLAIM_US (1 ms; asserted with a generous bound: timing here is
 * noisy). Checked on a lower bound of the move's time (spin_and_reclaim):
 * a loaded machine that delays this process cannot make it fail, a thread
 * still seen on C that long after the grant does. No --enforce: the
 * daemon's own move (2 ms) would pass for the runtime's, and a runtime
 * 600 ms late passed so (checked). */
static void test_bounded_reclaim(void **state)
{
    (void)state;
    start_daemon_opt("--enforce", "0");
    NEED_TWO_CPUS();
    assert_true(spin_and_reclaim(NULL, NULL) < RECLAIM_BOUND_MS * 1000u);
}

/* The first move of a process starts half the budget before its deadline:
 * no move has been measured yet, so the margin is the largest allowed
 * (cpumgr_rt.c, nth_cpumgr_rt_start). Before, it was 50 us, and the first
 * reclaim of every bench run was late (1.2-2.4 ms against 1 ms). With a
 * 2 s budget the move is due 1 s after the reclaim clock started, not
 * 2 s - 50 us. Checked on the runtime's plan (its MOVE line), exactly:
 * when the watcher gets to carry it out is up to a loaded machine (this
 * case measured the thread's leaving against 500 ms bounds, and failed 1
 * run in 7 at load 25-28 with a move 1.5 s after the budget's start; the
 * speed of the move is bench/cpumgr's). What timing cannot change is
 * checked too: the clock starts no earlier than the budget the daemon
 * wrote, and the thread was not moved before its due time -- seen off C
 * by a look that ended before it is a move made early (the end of the
 * look, not its start: spin_and_reclaim). No --enforce: the daemon would
 * move the thread itself after 2 ms. */
static void test_first_move_margin(void **state)
{
    (void)state;
    start_daemon_opt("--enforce", "0");
    NEED_TWO_CPUS();
    struct move_plan m;
    memset(&m, 0, sizeof m);
    (void)spin_and_reclaim("2000000", &m);
    print_message("budget %llu, clock %lld, due %lld (+%.3f ms), seen off C by %llu (+%.3f ms)\n",
                  (unsigned long long)m.budget_ns, m.since_ns, m.due_ns,
                  (double)(m.due_ns - m.since_ns) / 1e6, (unsigned long long)m.left_ns,
                  (double)((long long)m.left_ns - m.since_ns) / 1e6);
    assert_true(m.budget_ns != 0);
    assert_true(m.since_ns >= (long long)m.budget_ns);
    assert_int_equal(m.due_ns - m.since_ns, 1000000000LL);  /* 2 s - a margin of 1 s */
    assert_true((long long)m.left_ns >= m.due_ns);
}

/* The thread of pid named comm (PR_SET_NAME), or 0. */
static int find_thread(pid_t pid, const char *comm)
{
    char path[320], name[64];
    for (int tries = 0; tries < 2; tries++) {
        snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
        DIR *d = opendir(path);
        if (!d) return 0;
        struct dirent *e;
        int tid = 0;
        while (!tid && (e = readdir(d)) != NULL) {
            if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
            snprintf(path, sizeof path, "/proc/%d/task/%s/comm", (int)pid, e->d_name);
            FILE *f = fopen(path, "r");
            if (!f) continue;
            if (fgets(name, sizeof name, f)) {
                name[strcspn(name, "\n")] = 0;
                if (!strcmp(name, comm)) tid = atoi(e->d_name);
            }
            fclose(f);
        }
        closedir(d);
        if (tid) return tid;
    }
    return 0;
}

/* The threads that must act on time on CPUs others keep busy -- the
 * daemon, and the runtime's watcher, which enforces the reclaim deadline --
 * run with the kernel's shortest time slice, so that a wake-up preempts a
 * computing thread instead of waiting for its slice (sched_slice.h).
 * Skipped where the kernel does not keep a slice (before Linux 6.12). */
static void test_short_slice(void **state)
{
    (void)state;
    pid_t probe = fork();
    assert_true(probe >= 0);
    if (probe == 0)
        _exit(nth_sched_short_slice(NTH_SHORT_SLICE_NS) == 0 &&
              nth_sched_slice_of(0) == NTH_SHORT_SLICE_NS ? 0 : 1);
    int st = 0;
    waitpid(probe, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) skip();
    start_daemon();
    struct proc a;
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1");
    int tid = 0;
    uint64_t t0 = us();
    while (!(tid = find_thread(a.pid, "nth-cpumgr"))) {
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("app %d: no nth-cpumgr thread", (int)a.pid);
        sleep_ms(2);
    }
    /* The watcher sets it first thing; it may not have run yet. */
    t0 = us();
    while (nth_sched_slice_of(tid) != NTH_SHORT_SLICE_NS && us() - t0 < WAIT_MS * 1000u)
        sleep_ms(2);
    print_message("watcher %d slice %llu ns, daemon %d slice %llu ns\n", tid,
                  (unsigned long long)nth_sched_slice_of(tid), (int)daemon_pid,
                  (unsigned long long)nth_sched_slice_of(daemon_pid));
    assert_int_equal(nth_sched_slice_of(tid), NTH_SHORT_SLICE_NS);
    assert_int_equal(nth_sched_slice_of(daemon_pid), NTH_SHORT_SLICE_NS);
    /* The VPs keep the default: they compute, and a short slice would
     * only make them preempt each other more often. */
    int vp1 = find_thread(a.pid, "nth-vp1");
    if (vp1) assert_int_not_equal(nth_sched_slice_of(vp1), NTH_SHORT_SLICE_NS);
}

/* A VP parked disabled holds the short slice, so that the grant's wake-up
 * preempts the releaser still on that CPU (cpumgr_rt.c, wake_slice_*);
 * once it runs again the default comes back (after 1 ms, at a scheduling
 * point): with the short slice kept, the watcher could no longer preempt
 * it at a reclaim deadline. a's VPs are the main thread (VP 0) and nth-vp1;
 * b takes one CPU, so one of a's busy VPs parks disabled. Fails without the
 * short slice (neither VP has it); the wait for the default is bounded.
 * Skipped where the kernel keeps no slice (before Linux 6.12). */
static void test_wake_slice(void **state)
{
    (void)state;
    pid_t probe = fork();
    assert_true(probe >= 0);
    if (probe == 0)
        _exit(nth_sched_short_slice(NTH_SHORT_SLICE_NS) == 0 &&
              nth_sched_slice_of(0) == NTH_SHORT_SLICE_NS ? 0 : 1);
    int st = 0;
    waitpid(probe, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) skip();
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b;
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1 N=2 EN=2");
    int vp1 = 0;
    uint64_t t0 = us();
    while (!(vp1 = find_thread(a.pid, "nth-vp1"))) {
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("app %d: no nth-vp1 thread", (int)a.pid);
        sleep_ms(2);
    }
    const int tids[2] = { (int)a.pid, vp1 };
    assert_int_not_equal(nth_sched_slice_of(tids[0]), NTH_SHORT_SLICE_NS);
    assert_int_not_equal(nth_sched_slice_of(tids[1]), NTH_SHORT_SLICE_NS);
    /* Busy VPs: the one that loses its CPU parks disabled at its next
     * scheduling point. (One idle-parked when disabled sleeps on in that
     * park, default slice: an idle application's grant is not urgent.) */
    send(&a, "work\n");
    start(&b, "client_app", "1", -1);
    wait_state(&a, "A=1 N=1 EN=1 PK=1");
    /* The parked one sets it just before it sleeps, after PK counts it
     * (park() marks the VP parked before it calls the park operation). */
    int nshort = 0;
    t0 = us();
    while ((nshort = (nth_sched_slice_of(tids[0]) == NTH_SHORT_SLICE_NS) +
                     (nth_sched_slice_of(tids[1]) == NTH_SHORT_SLICE_NS)) == 0) {
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("no VP of app %d took the short slice", (int)a.pid);
        sleep_ms(2);
    }
    print_message("parked: slices %llu, %llu ns\n",
                  (unsigned long long)nth_sched_slice_of(tids[0]),
                  (unsigned long long)nth_sched_slice_of(tids[1]));
    assert_int_equal(nshort, 1);
    send(&b, "exit\n"); /* the work makes scheduling points on both VPs */
    reap(b.pid);
    wait_state(&a, "A=1 N=2 EN=2 PK=0");
    t0 = us();
    while (nth_sched_slice_of(tids[0]) == NTH_SHORT_SLICE_NS ||
           nth_sched_slice_of(tids[1]) == NTH_SHORT_SLICE_NS) {
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("a VP of app %d kept the short slice", (int)a.pid);
        sleep_ms(2);
    }
    print_message("running: slices %llu, %llu ns\n",
                  (unsigned long long)nth_sched_slice_of(tids[0]),
                  (unsigned long long)nth_sched_slice_of(tids[1]));
    check_work(&a);
}

/* Does the Cpus_allowed_list of thread tid of pid include cpu? -1 if the
 * thread is gone. */
static int allowed_has(pid_t pid, int tid, int cpu)
{
    char path[96], line[512];
    snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)pid, tid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int has = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Cpus_allowed_list:", 18)) {
            has = 0;
            for (char *save, *t = strtok_r(line + 18, " \t\n,", &save); t;
                 t = strtok_r(NULL, " \t\n,", &save)) {
                int lo = -1, hi = -1;
                if (sscanf(t, "%d-%d", &lo, &hi) == 2 ? (cpu >= lo && cpu <= hi)
                                                      : (atoi(t) == cpu))
                    has = 1;
            }
        }
    fclose(f);
    return has;
}

static int count_in_log(const char *needle)
{
    char line[1024];
    int n = 0;
    FILE *f = fopen(logf, "r");
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* The same non-yielding nano-thread, in an application whose runtime
 * ignores the reclaim (NTH_TEST_NO_RECLAIM=1, a test hook): the daemon
 * moves its threads off the CPU it gave away (--enforce, 2 ms by default),
 * seen in /proc/PID/task/TID/status, and says so once in its log. */
static void test_daemon_enforces(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b;
    setenv("NTH_TEST_NO_RECLAIM", "1", 1);
    start(&a, "rt_app", "2", -1);
    unsetenv("NTH_TEST_NO_RECLAIM");
    wait_state(&a, "A=1 N=2 EN=2");
    send(&a, "spin\n");
    uint64_t t0 = us();
    while (!a.spin[0]) {
        drain(&a);
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("no SPIN line");
        sleep_ms(2);
    }
    int tid = -1, cpu = -1;
    assert_int_equal(sscanf(a.spin, "SPIN tid=%d cpu=%d", &tid, &cpu), 2);
    assert_int_equal(allowed_has(a.pid, tid, cpu), 1);
    start(&b, "client_app", "1", cpu);
    t0 = us();
    while (allowed_has(a.pid, tid, cpu) == 1 && us() - t0 < WAIT_MS * 1000u)
        sleep_ms(2);
    assert_int_equal(allowed_has(a.pid, tid, cpu), 0);
    /* The runtime did not move it: the daemon did, and logged it once. */
    wait_state(&a, "A=1 N=1 RC=0");
    t0 = us();
    while (count_in_log("its threads were moved") == 0 && us() - t0 < WAIT_MS * 1000u)
        sleep_ms(5);
    sleep_ms(100);
    assert_int_equal(count_in_log("its threads were moved"), 1);
    send(&a, "unspin\n");
    wait_state(&a, "A=1 N=1 EN=1 PK=1 OUT=0");
    send(&b, "exit\n");
    reap(b.pid);
    /* Its CPU back: the VP's own binding comes back with it. */
    wait_state(&a, "A=1 N=2 EN=2 PK=0 OUT=0");
}

/* The one CPU thread tid of pid is bound to; -1 when it may run on
 * several, -2 when it is gone. */
static int bound_cpu(pid_t pid, int tid)
{
    char path[96], line[512];
    snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)pid, tid);
    FILE *f = fopen(path, "r");
    if (!f) return -2;
    int cpu = -2;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Cpus_allowed_list:", 18)) {
            char *p = line + 18, *end;
            while (*p == ' ' || *p == '\t') p++;
            long v = strtol(p, &end, 10);
            cpu = end != p && (*end == '\n' || *end == 0) ? (int)v : -1;
        }
    fclose(f);
    return cpu;
}

/* se.nr_migrations of thread tid of pid (CONFIG_SCHED_DEBUG), or -1. */
static long nr_migrations(pid_t pid, int tid)
{
    char path[96], line[256];
    snprintf(path, sizeof path, "/proc/%d/task/%d/sched", (int)pid, tid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long m = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "se.nr_migrations", 16) && strchr(line, ':'))
            m = strtol(strchr(line, ':') + 1, NULL, 10);
    fclose(f);
    return m;
}

/* Issue 5 "enforce-mask-not-restored": the daemon (--enforce) bound the
 * kernel thread of a VP whose nano-thread never yields to the CPU left to
 * the application (its runtime ignores the reclaim: NTH_TEST_NO_RECLAIM);
 * the CPU comes back while that nano-thread still runs. The VP is enabled
 * on its CPU again, so its kernel thread must be bound there again too,
 * without waiting for a scheduling point it never reaches: before the
 * fix it stayed on the daemon's mask (beside VP 0, the CPU given back
 * idle) until the nano-thread ended. */
static void test_enforced_mask_restored(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b;
    setenv("NTH_TEST_NO_RECLAIM", "1", 1);
    start(&a, "rt_app", "2", -1);
    unsetenv("NTH_TEST_NO_RECLAIM");
    wait_state(&a, "A=1 N=2 EN=2");
    send(&a, "spin\n");
    uint64_t t0 = us();
    while (!a.spin[0]) {
        drain(&a);
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("no SPIN line");
        sleep_ms(2);
    }
    int tid = -1, cpu = -1;
    assert_int_equal(sscanf(a.spin, "SPIN tid=%d cpu=%d", &tid, &cpu), 2);
    assert_int_equal(bound_cpu(a.pid, tid), cpu);
    start(&b, "client_app", "1", cpu);
    /* The daemon moves it to the other CPU (else this tests nothing). */
    t0 = us();
    while (bound_cpu(a.pid, tid) != other_cpu(cpu) && us() - t0 < WAIT_MS * 1000u)
        sleep_ms(2);
    assert_int_equal(bound_cpu(a.pid, tid), other_cpu(cpu));
    wait_state(&a, "A=1 N=1 RC=0");
    send(&b, "exit\n");
    reap(b.pid);
    wait_state(&a, "A=1 N=2 EN=2");
    /* Still spinning: only the runtime can bind it back now. */
    t0 = us();
    while (bound_cpu(a.pid, tid) != cpu && us() - t0 < WAIT_MS * 1000u)
        sleep_ms(5);
    drain(&a);
    assert_int_equal(bound_cpu(a.pid, tid), cpu);
    send(&a, "unspin\n");
}

/* A thread of the application that is no VP -- a plain kernel thread the
 * program bound to one CPU, as a library's worker might be -- spins on the
 * CPU the daemon takes; --enforce binds it to the CPU the application
 * keeps. Nothing in the runtime knows that thread: when the CPU comes
 * back, the daemon gives it the mask it had (cpumgr(8) --enforce); before,
 * it stayed on the daemon's mask for good. */
static void test_enforced_foreign_restored(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b;
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1 N=2 EN=2");
    int cpu = cpu_pair[1];
    char cmd[32];
    snprintf(cmd, sizeof cmd, "fspin %d\n", cpu);
    send(&a, cmd);
    int tid = 0;
    uint64_t t0 = us();
    while (!tid) {
        drain(&a);
        if (a.fspin[0]) assert_int_equal(sscanf(a.fspin, "FSPIN tid=%d", &tid), 1);
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("no FSPIN line");
        sleep_ms(2);
    }
    assert_true(tid > 0);
    assert_int_equal(bound_cpu(a.pid, tid), cpu);
    start(&b, "client_app", "1", cpu);
    t0 = us();
    while (bound_cpu(a.pid, tid) != other_cpu(cpu) && us() - t0 < WAIT_MS * 1000u)
        sleep_ms(2);
    assert_int_equal(bound_cpu(a.pid, tid), other_cpu(cpu)); /* else this tests nothing */
    send(&b, "exit\n");
    reap(b.pid);
    wait_state(&a, "A=1 N=2 EN=2");
    t0 = us();
    while (bound_cpu(a.pid, tid) != cpu && us() - t0 < WAIT_MS * 1000u)
        sleep_ms(5);
    assert_int_equal(bound_cpu(a.pid, tid), cpu);
    /* Moved again, then the daemon stops (SIGTERM, as `cpumgr stop`): the
     * application runs alone on its own mask, the thread on its own. */
    start(&b, "client_app", "1", cpu);
    t0 = us();
    while (bound_cpu(a.pid, tid) != other_cpu(cpu) && us() - t0 < WAIT_MS * 1000u)
        sleep_ms(2);
    assert_int_equal(bound_cpu(a.pid, tid), other_cpu(cpu));
    kill(daemon_pid, SIGTERM);
    reap(daemon_pid);
    assert_int_equal(bound_cpu(a.pid, tid), cpu);
}

/* The cpumgr watcher is born on VP 0's CPU and stays there, also while
 * that CPU is another application's: unbound, the load balancer moved it
 * at most wake-ups (about 5 migrations per malleable process), and
 * following the assignment moved it at most rotations. No --enforce here:
 * the daemon would move any thread it finds running on the CPU it gave
 * away, the watcher too if it runs at that instant. */
static void test_watcher_stays(void **state)
{
    (void)state;
    start_daemon_opt("--enforce", "0");
    NEED_TWO_CPUS();
    struct proc a, b;
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1 N=2 EN=2");
    int tid = 0;
    uint64_t t0 = us();
    while (!(tid = find_thread(a.pid, "nth-cpumgr"))) {
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("app %d: no nth-cpumgr thread", (int)a.pid);
        sleep_ms(2);
    }
    if (bound_cpu(a.pid, a.pid) < 0) {
        print_message("VP 0 is not bound to one CPU here (binding refused?): nothing to check\n");
        skip();
    }
    int w = bound_cpu(a.pid, tid);
    if (w == -2) fail_msg("app %d: watcher %d gone", (int)a.pid, tid);
    if (w < 0) fail_msg("app %d: watcher %d may run on any CPU", (int)a.pid, tid);
    assert_true(w == cpu_pair[0] || w == cpu_pair[1]);
    long m0 = nr_migrations(a.pid, tid);
    if (m0 < 0) {
        print_message("no se.nr_migrations in /proc (CONFIG_SCHED_DEBUG): binding checked only\n");
    } else {
        assert_int_equal(m0, 0); /* born there: never moved */
    }
    /* b may only use the watcher's CPU: the daemon gives it that one. */
    start(&b, "client_app", "1", w);
    char want[32];
    snprintf(want, sizeof want, "CPUS=%d", other_cpu(w));
    wait_state(&a, "A=1 N=1 EN=1");
    wait_state(&a, want);
    sleep_ms(100); /* ten ticks of the watcher's, on b's CPU */
    send(&b, "exit\n");
    reap(b.pid);
    wait_state(&a, "A=1 N=2 EN=2");
    sleep_ms(50);
    assert_int_equal(bound_cpu(a.pid, tid), w);
    if (m0 >= 0)
        assert_int_equal(nr_migrations(a.pid, tid), 0);
    print_message("watcher %d: on CPU %d throughout, %ld migrations\n", tid, w,
                  nr_migrations(a.pid, tid));
}

/* The slot of process pid in s, or -1. */
static int slot_of(const struct nth_cpumgr_shm *s, pid_t pid)
{
    for (unsigned i = 0; i < NTH_CPUMGR_MAX_SLOTS; i++)
        if (__atomic_load_n(&s->slots[i].state, __ATOMIC_ACQUIRE) == NTH_CPUMGR_SLOT_ACTIVE &&
            __atomic_load_n(&s->slots[i].pid, __ATOMIC_RELAXED) == pid)
            return (int)i;
    return -1;
}

/* One-hop hand-off: b owns one CPU, armed for a (the daemon published that
 * a gets it when b gives it up). The daemon is then stopped (SIGSTOP) and b
 * exits: b's detach hands the CPU to a and wakes a's parked VP itself, so a
 * runs on both CPUs with no daemon pass. Once continued, the daemon
 * confirms the move (a's published assignment holds both CPUs). Without
 * the hand-off a keeps one CPU until the daemon runs again. */
static void test_handoff_without_daemon(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b;
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1 N=2 EN=2");
    start(&b, "client_app", "1", -1);
    wait_state(&a, "A=1 N=1 EN=1 PK=1 OUT=0");
    struct nth_cpumgr_shm *s = NULL;
    char msg[200];
    assert_int_equal(cm_seg_open(seg, &s, msg, sizeof msg), 0);
    int sa = slot_of(s, a.pid), sb = slot_of(s, b.pid);
    assert_true(sa >= 0 && sb >= 0);
    /* b's CPU, and its record armed for a's slot and generation. */
    uint64_t t0 = us();
    int c = -1;
    for (;;) {
        uint64_t m = __atomic_load_n(&s->slots[sb].assigned[0], __ATOMIC_ACQUIRE);
        c = m ? __builtin_ctzll(m) : -1;
        if (c >= 0) {
            const struct nth_cpumgr_cpu *r = &s->cpu[c];
            if (__atomic_load_n(&r->token, __ATOMIC_ACQUIRE) &&
                __atomic_load_n(&r->owner, __ATOMIC_ACQUIRE) == (uint32_t)sb + 1 &&
                __atomic_load_n(&r->next_slot, __ATOMIC_ACQUIRE) == (uint32_t)sa + 1 &&
                __atomic_load_n(&r->next_gen, __ATOMIC_ACQUIRE) ==
                    __atomic_load_n(&s->slots[sa].gen, __ATOMIC_ACQUIRE))
                break;
        }
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("CPU %d of b never armed for a", c);
        sleep_ms(2);
    }
    uint32_t aseq = __atomic_load_n(&s->slots[sa].aseq, __ATOMIC_ACQUIRE);
    assert_int_equal(kill(daemon_pid, SIGSTOP), 0);
    send(&b, "exit\n");
    reap(b.pid);
    wait_state(&a, "A=1 N=2 EN=2 PK=0 OUT=0");
    /* Really without the daemon: it published nothing for a meanwhile. */
    assert_int_equal(__atomic_load_n(&s->slots[sa].aseq, __ATOMIC_ACQUIRE), aseq);
    assert_int_equal(kill(daemon_pid, SIGCONT), 0);
    t0 = us();
    while (__atomic_load_n(&s->slots[sa].assigned_count, __ATOMIC_ACQUIRE) != 2) {
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("the daemon did not confirm the hand-off");
        sleep_ms(2);
    }
    sleep_ms(50);
    wait_state(&a, "A=1 N=2 EN=2 PK=0 OUT=0");
    cm_seg_unmap(s);
}

/* The hand-off to a lazy VP (one never given a CPU: it sleeps on its own
 * word, not on the slot's vp_wake that the releaser bumps). b starts while
 * c holds one CPU, so b's second VP is born lazy and stays so; c's CPU is
 * armed for b, the daemon is stopped and c exits. b must take the CPU and
 * run work on both with no daemon pass. End to end, not the latency: b's
 * watcher finds the hand-off at its tick (10 ms) even without the wake on
 * aseq that now brings it at once (test_client's
 * test_handoff_wakes_watcher fails without that wake; this passes). */
static void test_handoff_to_lazy_vp(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc b, c;
    start(&c, "client_app", "1", -1);
    wait_state(&c, "A=1 N=1");
    start(&b, "rt_app", "2", -1);
    wait_state(&b, "A=1 N=1 EN=1 PK=1 OUT=0 V=2");
    wait_state(&b, "A=1 N=1 EN=1 PK=1 UB=1"); /* its second VP: lazy, unbound */
    struct nth_cpumgr_shm *s = NULL;
    char msg[200];
    assert_int_equal(cm_seg_open(seg, &s, msg, sizeof msg), 0);
    int sb = slot_of(s, b.pid), sc = slot_of(s, c.pid);
    assert_true(sb >= 0 && sc >= 0);
    uint64_t t0 = us();
    int cpu = -1;
    for (;;) {
        uint64_t m = __atomic_load_n(&s->slots[sc].assigned[0], __ATOMIC_ACQUIRE);
        cpu = m ? __builtin_ctzll(m) : -1;
        if (cpu >= 0) {
            const struct nth_cpumgr_cpu *r = &s->cpu[cpu];
            if (__atomic_load_n(&r->token, __ATOMIC_ACQUIRE) &&
                __atomic_load_n(&r->owner, __ATOMIC_ACQUIRE) == (uint32_t)sc + 1 &&
                __atomic_load_n(&r->next_slot, __ATOMIC_ACQUIRE) == (uint32_t)sb + 1 &&
                __atomic_load_n(&r->next_gen, __ATOMIC_ACQUIRE) ==
                    __atomic_load_n(&s->slots[sb].gen, __ATOMIC_ACQUIRE))
                break;
        }
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("CPU %d of c never armed for b", cpu);
        sleep_ms(2);
    }
    uint32_t aseq = __atomic_load_n(&s->slots[sb].aseq, __ATOMIC_ACQUIRE);
    assert_int_equal(kill(daemon_pid, SIGSTOP), 0);
    send(&c, "exit\n");
    reap(c.pid);
    wait_state(&b, "A=1 N=2 EN=2 PK=0 OUT=0");
    assert_int_equal(__atomic_load_n(&s->slots[sb].aseq, __ATOMIC_ACQUIRE), aseq);
    assert_int_equal(kill(daemon_pid, SIGCONT), 0);
    send(&b, "work\n");
    sleep_ms(50);
    check_work(&b);
    cm_seg_unmap(s);
}

/* The CPU a thread is bound to when its mask holds exactly one, else -1. */
static int bound_one(pid_t tid)
{
    cpu_set_t cs;
    CPU_ZERO(&cs);
    if (sched_getaffinity(tid, sizeof cs, &cs) != 0 || CPU_COUNT(&cs) != 1)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &cs))
            return c;
    return -1;
}

/* A newcomer's first CPU is its home (issue 6, mig2): a holds both CPUs,
 * b arrives with home h and gets h -- for h = 0 and h = 1, so neither the
 * compactness tie-break (a keeps CPU 0) nor chance passes it. */
static void test_home_first_cpu(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b;
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1 N=2 EN=2");
    for (int k = 0; k < 2; k++) {
        int h = cpu_pair[k];
        char home[8], want[64];
        snprintf(home, sizeof home, "%d", h);
        setenv("CLIENT_HOME", home, 1);
        start(&b, "client_app", "1", -1);
        unsetenv("CLIENT_HOME");
        snprintf(want, sizeof want, "A=1 N=1 CPUS=%d", h);
        wait_state(&b, want);
        snprintf(want, sizeof want, "A=1 N=1 CPUS=%d", other_cpu(h));
        wait_state(&a, want);
        send(&b, "exit\n");
        reap(b.pid);
        wait_state(&a, "A=1 N=2 EN=2");
    }
}

/* The runtime tells the daemon its VP 0's CPU: the slot's home is the CPU
 * the main thread is bound to, and the newcomer's one CPU is that one. */
static void test_home_is_vp0(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b;
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1 N=2 EN=2");
    start(&b, "rt_app", "2", -1);
    wait_state(&b, "A=1 N=1 EN=1");
    struct nth_cpumgr_shm *s = NULL;
    char msg[200];
    assert_int_equal(cm_seg_open(seg, &s, msg, sizeof msg), 0);
    int sb = slot_of(s, b.pid);
    assert_true(sb >= 0);
    uint32_t h1 = __atomic_load_n(&s->slots[sb].home_cpu1, __ATOMIC_ACQUIRE);
    assert_true(h1 == (uint32_t)cpu_pair[0] + 1 || h1 == (uint32_t)cpu_pair[1] + 1);
    uint64_t m = __atomic_load_n(&s->slots[sb].assigned[(h1 - 1) / 64], __ATOMIC_ACQUIRE);
    uint32_t count = __atomic_load_n(&s->slots[sb].assigned_count, __ATOMIC_ACQUIRE);
    cm_seg_unmap(s);
    print_message("b: home %u - 1, assigned word %#llx (%u CPU), main thread bound to %d\n", h1,
                  (unsigned long long)m, count, bound_one(b.pid));
    assert_int_equal(m, UINT64_C(1) << ((h1 - 1) % 64));
    assert_int_equal(count, 1);
    /* VP 0 (the main thread) is bound there, or was moved off it by
     * nothing: no reclaim was needed. */
    assert_int_equal(bound_one(b.pid), (int)h1 - 1);
}

/* Three applications rotating on 2 CPUs (quantum 50 ms): an application
 * that holds a CPU keeps it until it is rotated out -- its assignment goes
 * from a CPU to none and back, never straight to the other CPU. A home
 * (VP 0's CPU) counts only for an application never given a CPU: applied
 * to one coming back from rotation, its neighbour was moved off that CPU
 * at every quantum (a reclaim each, lu+sor+lu at 17.7 migrations/s). The
 * daemon's published assignments are sampled every millisecond for 2 s
 * (about 40 rotations), once each has held a CPU; a change is judged only
 * when exactly one publication (aseq + 2) separates it from the last
 * sample, so a sampler starved under load cannot see X -> none -> Y as
 * X -> Y (one such false failure at load 20). */
static void test_rotation_keeps_cpus(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc p[3];
    for (int i = 0; i < 3; i++)
        start(&p[i], "rt_app", "2", -1);
    for (int i = 0; i < 3; i++)
        wait_state(&p[i], "A=1");
    struct nth_cpumgr_shm *s = NULL;
    char msg[200];
    assert_int_equal(cm_seg_open(seg, &s, msg, sizeof msg), 0);
    int sl[3];
    for (int i = 0; i < 3; i++) {
        sl[i] = slot_of(s, p[i].pid);
        assert_true(sl[i] >= 0);
    }
    /* From the moment each has held a CPU (a newcomer's first CPU may
     * legitimately be its home, its keeper moved). */
    uint64_t last[3] = {0, 0, 0};
    uint32_t lastq[3] = {0, 0, 0};
    int had = 0, changes = 0, straight = 0, missed = 0;
    uint64_t t0 = us();
    while (had != 7) {
        for (int i = 0; i < 3; i++)
            if (__atomic_load_n(&s->slots[sl[i]].assigned[0], __ATOMIC_ACQUIRE))
                had |= 1 << i;
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("not every app got a CPU (%#x)", had);
        sleep_ms(1);
    }
    t0 = us();
    while (us() - t0 < 2000000u) {
        for (int i = 0; i < 3; i++) {
            struct nth_cpumgr_slot *x = &s->slots[sl[i]];
            uint32_t q = __atomic_load_n(&x->aseq, __ATOMIC_ACQUIRE);
            uint64_t m = __atomic_load_n(&x->assigned[0], __ATOMIC_RELAXED);
            if ((q & 1u) || __atomic_load_n(&x->aseq, __ATOMIC_ACQUIRE) != q)
                continue;
            if (m != last[i]) {
                changes++;
                /* Judged only across one publication (aseq + 2): a
                 * sampler starved for a quantum (load) misses the empty
                 * one between. */
                if (lastq[i] && q - lastq[i] != 2u)
                    missed++;
                else if (last[i] && m && !(m & last[i]))
                    straight++;
                last[i] = m;
            }
            lastq[i] = q;
        }
        sleep_ms(1);
    }
    cm_seg_unmap(s);
    print_message("%d assignment changes (%d after a missed publication), %d straight from one "
                  "CPU to the other\n", changes, missed, straight);
    assert_true(changes - missed >= 6); /* it did rotate, and we saw it */
    assert_int_equal(straight, 0);
}

/* --exit-grace: the CPU of an application that exits is kept from the one
 * that still holds a CPU (it would grow, then shrink again when the next
 * instance attaches: a reclaim, often two migrations) and goes to the next
 * newcomer; once the grace ends, the holder grows. The check is on the
 * daemon's published assignment after two passes past the exit, not on
 * elapsed time: the grace (5 s) is far longer than two 10 ms periods. */
static void test_exit_grace(void **state)
{
    (void)state;
    start_daemon_opt("--exit-grace", "5000");
    NEED_TWO_CPUS();
    struct proc a, b, c;
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1 N=2 EN=2");
    start(&b, "client_app", "1", -1);
    wait_state(&a, "A=1 N=1 EN=1");
    wait_state(&b, "A=1 N=1");
    char cb[32];
    assert_int_equal(sscanf(strstr(b.state, "CPUS="), "CPUS=%31s", cb), 1);
    struct nth_cpumgr_shm *s = NULL;
    char msg[200];
    assert_int_equal(cm_seg_open(seg, &s, msg, sizeof msg), 0);
    int sa = slot_of(s, a.pid);
    assert_true(sa >= 0);
    send(&b, "exit\n");
    reap(b.pid);
    /* Two daemon passes after b's slot is free. */
    uint64_t t0 = us();
    while (slot_of(s, b.pid) >= 0) {
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("b's slot never freed");
        sleep_ms(1);
    }
    for (int k = 0; k < 3; k++) {
        uint64_t hb = __atomic_load_n(&s->heartbeat_ms, __ATOMIC_ACQUIRE);
        while (__atomic_load_n(&s->heartbeat_ms, __ATOMIC_ACQUIRE) == hb) {
            if (us() - t0 > WAIT_MS * 1000u) fail_msg("daemon passes stopped");
            sleep_ms(1);
        }
    }
    assert_int_equal(__atomic_load_n(&s->slots[sa].assigned_count, __ATOMIC_ACQUIRE), 1);
    /* The next instance gets the CPU b left. */
    start(&c, "client_app", "1", -1);
    char want[64];
    snprintf(want, sizeof want, "A=1 N=1 CPUS=%s", cb);
    wait_state(&c, want);
    assert_int_equal(__atomic_load_n(&s->slots[sa].assigned_count, __ATOMIC_ACQUIRE), 1);
    /* It leaves too: a grows once the grace is over. */
    send(&c, "exit\n");
    reap(c.pid);
    wait_state(&a, "A=1 N=2 EN=2");
    cm_seg_unmap(s);
}

/* A newcomer whose home (the CPU its runtime starts on) another
 * application keeps (issue 6, bench/RESULTS.md "mix2"): a holds CPU x, c
 * held y and exits, so y cools for applications holding none (--exit-grace)
 * and b, started on x, is granted y. Its start must wait for that first
 * answer and bind its main thread (VP 0) to y before nth_init() returns, so
 * the program's serial start-up runs on y: rt_app's INIT line, printed
 * right after nth_init(), must say 1 CPU, y, the main thread bound to y,
 * and no reclaim (VP 0 was not disabled and moved from outside). Before,
 * nth_init() returned before the answer (INIT said N=2, the standalone
 * set) and VP 0 stayed bound to x until bounded reclaim moved it, and back
 * again later. Then b's other VP stays lazy: parked, never bound. */
static void test_newcomer_bound_to_first_grant(void **state)
{
    (void)state;
    start_daemon_opt("--exit-grace", "5000");
    NEED_TWO_CPUS();
    int x = cpu_pair[0], y = cpu_pair[1];
    struct proc a, b, c;
    char want[96], cy[8];
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1 N=2 EN=2");
    snprintf(cy, sizeof cy, "%d", y);
    setenv("CLIENT_HOME", cy, 1);
    start(&c, "client_app", "1", -1);
    unsetenv("CLIENT_HOME");
    snprintf(want, sizeof want, "A=1 N=1 CPUS=%d", y);
    wait_state(&c, want);
    snprintf(want, sizeof want, "A=1 N=1 CPUS=%d EN=1", x);
    wait_state(&a, want);
    struct nth_cpumgr_shm *s = NULL;
    char msg[200];
    assert_int_equal(cm_seg_open(seg, &s, msg, sizeof msg), 0);
    send(&c, "exit\n");
    reap(c.pid);
    uint64_t t0 = us();
    while (slot_of(s, c.pid) >= 0) {
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("c's slot never freed");
        sleep_ms(1);
    }
    cm_seg_unmap(s);
    char cx[8];
    snprintf(cx, sizeof cx, "%d", x);
    setenv("RT_HOME", cx, 1);
    /* The runtime's bound on its wait (20 ms) made generous: the check is
     * of the binding, not of how soon a loaded machine runs the daemon. */
    setenv("NTH_TEST_FIRST_ANSWER_MS", "20000", 1);
    start(&b, "rt_app", "2", -1);
    unsetenv("NTH_TEST_FIRST_ANSWER_MS");
    unsetenv("RT_HOME");
    t0 = us();
    while (!b.init[0]) {
        if (us() - t0 > WAIT_MS * 1000u) fail_msg("b printed no INIT line");
        drain(&b);
        sleep_ms(2);
    }
    print_message("b: %s (a keeps %d)\n", b.init, x);
    int n = -1, bound = -2, home = -2;
    unsigned long rc = 99;
    char cpus[64];
    assert_int_equal(sscanf(b.init, "INIT A=1 N=%d CPUS=%63s BOUND=%d HOME=%d RC=%lu", &n, cpus,
                            &bound, &home, &rc), 5);
    if (home != x)
        print_message("b's runtime started on %d, not %d: its main thread had no move to make\n",
                      home, x);
    assert_int_equal(n, 1);
    assert_string_equal(cpus, cy);
    assert_int_equal(bound, y);
    assert_int_equal(rc, 0);
    snprintf(want, sizeof want, "A=1 N=1 CPUS=%d EN=1 PK=1 OUT=0 RC=0 NB=0 UB=1", y);
    wait_state(&b, want);
}

/* At exit the runtime, alone once its slot is freed, applies the
 * standalone set so that late exit handlers find an enabled VP
 * (test_exit_with_no_cpu); a lazy VP (never given a CPU) must not get a
 * CPU then while VP 0 keeps one: enabling it bound its sleeping kernel
 * thread and woke it, a migration at nearly every exit of a mix's
 * processes (bench/RESULTS.md "mix2"). b holds one CPU beside a, its VP 1
 * lazy; after its exit handlers, rt_app's late handler must still see VP 1
 * disabled and lazy. Fails without the exit rule (vps=ee lazy=00). */
static void test_exit_leaves_lazy_vp(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b;
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1 N=2 EN=2");
    start_arg(&b, "rt_app", "2", -1, "late");
    wait_state(&b, "A=1 N=1 EN=1 PK=1 NB=0 UB=1");
    send(&b, "exit\n");
    int st = 0;
    assert_int_equal(waitpid(b.pid, &st, 0), b.pid);
    for (int i = 0; i < nkids; i++)
        if (kids[i] == b.pid)
            kids[i] = kids[--nkids];
    drain(&b);
    print_message("b at exit: '%s'\n", b.late);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_true(strncmp(b.late, "LATE hook=0 unhook=0 ", 21) == 0);
    assert_non_null(strstr(b.late, " vps=ed lazy=01"));
}

/* The first 2 CPUs of our mask as cpu_pair; with more, the mask becomes
 * those 2 (see cpu_pair). */
static void pick_two_cpus(void)
{
    cpu_set_t mine, two;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0)
        return;
    CPU_ZERO(&two);
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &mine)) {
            cpu_pair[n++] = c;
            CPU_SET(c, &two);
        }
    if (CPU_COUNT(&mine) > 2 && sched_setaffinity(0, sizeof two, &two) != 0)
        fprintf(stderr, "test_runtime: cannot restrict the mask to CPUs %d,%d: %s\n", cpu_pair[0],
                cpu_pair[1], strerror(errno));
}

/* Lazy VPs (bench/RESULTS.md "lazy"): under a daemon, a newcomer's VPs
 * other than VP 0 are started unbound and parked until the daemon gives
 * them a CPU. b arrives while a holds both CPUs and gets one (its VP 0's,
 * test_home_is_vp0): its other VP must be parked and never bound (its
 * kernel thread's mask is still the process's) -- a VP bound at birth
 * cost a migration whenever the kernel started it elsewhere, for a CPU it
 * mostly never got. When a leaves, b grows: that VP is enabled and bound
 * to one CPU of the assignment. Fails without the lazy birth (NB=1 UB=0:
 * bound at birth). No timing: waits are bounded. */
static void test_lazy_vp_parked_unbound(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b;
    start(&a, "rt_app", "2", -1);
    wait_state(&a, "A=1 N=2 EN=2");
    send(&a, "work\n");
    start(&b, "rt_app", "2", -1);
    wait_state(&b, "A=1 N=1 EN=1 PK=1 OUT=0 V=2");
    drain(&b);
    print_message("b with one CPU: %s\n", b.state);
    wait_state(&b, "A=1 N=1 EN=1 PK=1 NB=0 UB=1");
    send(&a, "exit\n");
    reap(a.pid);
    wait_state(&b, "A=1 N=2 EN=2 PK=0 OUT=0 SB=2");
    print_message("b with two: %s\n", b.state);
}

/* The daemon's first answer may equal the standalone set (an application
 * alone gets every CPU): the held VPs must still be given their CPUs
 * (the client calls back on the first answer even when nothing changed).
 * Guards the hold: without that call back, b kept one VP for good. */
static void test_lazy_first_answer_all(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc b;
    start(&b, "rt_app", "2", -1);
    wait_state(&b, "A=1 N=2 EN=2 PK=0 OUT=0 SB=2");
    send(&b, "work\n");
    sleep_ms(50);
    check_work(&b);
}

/* The request process pid's slot holds (the daemon's view), or -1. */
static int slot_request(pid_t pid)
{
    struct nth_cpumgr_shm *s = NULL;
    char msg[200];
    if (cm_seg_open(seg, &s, msg, sizeof msg) != 0 || !s)
        return -1;
    int i = slot_of(s, pid), r = -1;
    if (i >= 0)
        r = (int)__atomic_load_n(&s->slots[i].request, __ATOMIC_RELAXED);
    cm_seg_unmap(s);
    return r;
}

/* rt_app with NTH_VPS=vps (0: unset) and the default request. */
static void start_vps(struct proc *p, int vps, int cpu)
{
    char v[16];
    snprintf(v, sizeof v, "%d", vps);
    if (vps)
        setenv("NTH_VPS", v, 1);
    start(p, "rt_app", "default", cpu);
    unsetenv("NTH_VPS");
}

/* The default request is min(VPs, CPUs of the mask) (notes f13t: it was
 * the mask, so an NTH_VPS=1 process held 2 CPUs it could not use, and on
 * a big machine equipartition handed idle CPUs to few-VP applications).
 * a (NTH_VPS=1, no nth_cpus_request) alone under the daemon gets 1 CPU
 * and asks for 1; b (default VPs, one per CPU) then gets the other and
 * asks for both; when a leaves, b has both; a's 1 CPU throughout. On 2
 * CPUs the shares beside a busy application are 1 and 1 either way: the
 * checks that fail on the base are a's request (2) and its assignment
 * while alone (N=2, one CPU idle). */
static void test_default_request_vps(void **state)
{
    (void)state;
    start_daemon();
    NEED_TWO_CPUS();
    struct proc a, b;
    start_vps(&a, 1, -1);
    wait_state(&a, "A=1 V=1 EN=1");
    sleep_ms(100); /* a few daemon periods: a would be given more now */
    drain(&a);
    print_message("a (NTH_VPS=1) alone: %s, request %d\n", a.state, slot_request(a.pid));
    assert_true(state_has(&a, "A=1 N=1 V=1 EN=1"));
    assert_int_equal(slot_request(a.pid), 1);
    send(&a, "work\n");
    start_vps(&b, 0, -1);
    send(&b, "work\n");
    wait_state(&b, "A=1 N=1 EN=1 PK=1 OUT=0 V=2");
    wait_state(&a, "A=1 N=1 EN=1 OUT=0 V=1");
    assert_int_equal(slot_request(b.pid), 2);
    assert_int_equal(slot_request(a.pid), 1);
    /* One CPU each, not the same one. a's wait above may match the line
     * it printed before b came (1 CPU then too): a move of a to the other
     * CPU can still be on its way, so look until both lines agree. */
    char ca[32], cb[32];
    uint64_t t0 = us();
    for (;;) {
        drain(&a);
        drain(&b);
        assert_int_equal(sscanf(strstr(a.state, "CPUS="), "CPUS=%31s", ca), 1);
        assert_int_equal(sscanf(strstr(b.state, "CPUS="), "CPUS=%31s", cb), 1);
        if (strcmp(ca, cb) != 0 && state_has(&a, "A=1 N=1 EN=1 OUT=0 V=1") &&
            state_has(&b, "A=1 N=1 EN=1 PK=1 OUT=0 V=2"))
            break;
        if (us() - t0 > WAIT_MS * 1000u)
            fail_msg("a on CPUs %s (%s), b on CPUs %s (%s): want one CPU each, different", ca,
                     a.state, cb, b.state);
        sleep_ms(2);
    }
    check_work(&a);
    send(&a, "exit\n");
    reap(a.pid);
    wait_state(&b, "A=1 N=2 EN=2 PK=0 OUT=0");
    check_work(&b);
}

/* Alone (NTH_CPUMGR=off), the same rule: nth_cpus_assigned() of an
 * NTH_VPS=1 process is 1, which sizes its nth_parallel(0, ...) teams (it
 * was 2: teams of 2 on 1 VP); with one VP per CPU, every CPU. */
static void test_default_request_alone(void **state)
{
    (void)state;
    if (cpu_pair[1] < 0)
        skip();
    char keep[sizeof seg];
    memcpy(keep, seg, sizeof seg);
    snprintf(seg, sizeof seg, "off");
    struct proc a, b;
    start_vps(&a, 1, -1);
    start_vps(&b, 0, -1);
    memcpy(seg, keep, sizeof seg);
    wait_state(&a, "A=0 V=1 EN=1");
    wait_state(&b, "A=0 V=2 EN=2");
    drain(&a);
    print_message("alone, NTH_VPS=1: %s\n", a.state);
    assert_true(state_has(&a, "A=0 N=1 V=1 EN=1"));
    assert_true(state_has(&b, "A=0 N=2 V=2 EN=2"));
}

/* A daemon that manages part of an application's mask (cpumgr --cpus):
 * the application is confined to the daemon's CPUs (cpumgr(8), "CPUs the
 * daemon does not manage"), never runs a VP on the others, and its work
 * is all done there. Here the daemon manages the second CPU of the pair
 * and the application's mask is the pair: one VP enabled on that CPU, the
 * other parked, none bound outside. */
static void test_unmanaged_cpus_unused(void **state)
{
    (void)state;
    if (cpu_pair[1] < 0)
        skip();
    char one[16];
    snprintf(one, sizeof one, "%d", cpu_pair[1]);
    start_daemon_opt("--cpus", one);
    assert_int_equal(ncpus, 1);
    struct proc a;
    start_vps(&a, 0, -1);
    char want[96];
    snprintf(want, sizeof want, "A=1 N=1 CPUS=%d EN=1 PK=1 OUT=0 V=2", cpu_pair[1]);
    wait_state(&a, want);
    send(&a, "work\n");
    sleep_ms(200);
    drain(&a);
    print_message("mask %d,%d, daemon on %d: %s\n", cpu_pair[0], cpu_pair[1], cpu_pair[1],
                  a.state);
    assert_true(state_has(&a, want));
    check_work(&a);
}

int main(void)
{
    pick_two_cpus();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shrink_grow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_apps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_handler_wakes_parked_vp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enforced_before_init, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_dies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_cpus, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_with_no_cpu, setup, teardown),
        cmocka_unit_test(test_move_bracket),
        cmocka_unit_test_setup_teardown(test_bounded_reclaim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_move_margin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_enforces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enforced_mask_restored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enforced_foreign_restored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_short_slice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wake_slice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watcher_stays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff_without_daemon, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff_to_lazy_vp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_home_first_cpu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_home_is_vp0, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_grace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rotation_keeps_cpus, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lazy_vp_parked_unbound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lazy_first_answer_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newcomer_bound_to_first_grant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_leaves_lazy_vp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_request_vps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_request_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unmanaged_cpus_unused, setup, teardown),
    };
    /* Some cases only (cmocka's pattern), e.g. one looped by hand:
     * NTH_TEST_FILTER=test_first_move_margin (NTH_TEST_ONLY, its older
     * name, too). */
    const char *only = getenv("NTH_TEST_FILTER") ? getenv("NTH_TEST_FILTER")
                     : getenv("NTH_TEST_ONLY") ? getenv("NTH_TEST_ONLY") : getenv("RT_ONLY");
    if (only)
        cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
