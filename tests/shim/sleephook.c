/*
 * sleephook.c -- alarm(1); sleep(10) in a process whose first mask change
 * is that sleep: the handler must end the sleep (sleep(3p) returns the
 * unslept seconds), also when it runs before the shim's sleep has blocked
 * anything.
 *
 * Under the shim a sleep blocks every signal on its kernel thread
 * (signal.c, shim_sleep_guard_begin), and the first one installs the
 * switch-in hook, which waits until each idle VP has taken it
 * (nth_switch_hook_set: up to about 2 s per VP that gets no CPU). On a
 * loaded machine the alarm came during that wait: its handler ran on the
 * sleeper, and the sleep then ran its full length (sleepint failed so, 1
 * run in 20 at load 20). Here the wait is made certain: a child process
 * stops the second VP's kernel thread (ptrace PTRACE_INTERRUPT, only that
 * thread) for 3 s around the alarm. Natively, with one VP, or where
 * ptrace is refused, there is nothing to stop and the same lines come out.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "check.h"

static volatile sig_atomic_t alarms;

static void *nothing(void *arg)
{
    return arg;
}

static void on_alrm(int sig)
{
    (void)sig;
    alarms++;
}

/* 10 ms, through the kernel directly: under the shim nanosleep is a
 * sleep of its own, and the first one would install the switch-in hook
 * before the case below (then there is nothing to wait for). */
static void nap_10ms(void)
{
    struct timespec ts = { 0, 10 * 1000000L };
    syscall(SYS_nanosleep, &ts, NULL);
}

/* The id of this process's kernel thread named `want`, or -1. */
static int task_named(const char *want)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int tid = -1;
    struct dirent *e;
    while (tid < 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = 0;
        fclose(f);
        if (strcmp(comm, want) == 0)
            tid = atoi(e->d_name);
    }
    closedir(d);
    return tid;
}

/* The state letter of this process's kernel thread tid (R, S, ...). */
static char task_state(int tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : '?';
}

/* A child that holds kernel thread tid stopped for hold_s seconds; it
 * says on fd whether it could ('y' or 'n'). Raw system calls only: the
 * child of a process under the shim must not need its runtime. */
static pid_t stop_thread(int tid, int fd, int hold_s)
{
    pid_t c = fork();
    if (c != 0)
        return c;
    char ok = 'n';
    if (syscall(SYS_ptrace, PTRACE_SEIZE, tid, 0, 0) == 0) {
        int st;
        if (syscall(SYS_ptrace, PTRACE_INTERRUPT, tid, 0, 0) == 0 &&
            syscall(SYS_wait4, tid, &st, __WALL, NULL) == tid)
            ok = 'y';
    }
    (void)!syscall(SYS_write, fd, &ok, 1);
    if (ok == 'y') {
        struct timespec ts = { hold_s, 0 };
        syscall(SYS_nanosleep, &ts, NULL);
        syscall(SYS_ptrace, PTRACE_DETACH, tid, 0, 0);
    }
    syscall(SYS_exit_group, 0);
    return 0;
}

int main(void)
{
    check_start("sleephook");
    /* A thread made and joined, as sleepint's: under the shim the runtime
     * (and its VPs) starts with the first pthread call. */
    pthread_t t;
    CHECK(pthread_create(&t, NULL, nothing, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alrm;
    CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
    /* Yama's ptrace_scope 1 lets only a declared tracer in. */
    (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    /* The second VP's kernel thread, once the runtime has made it (up to
     * 1 s); natively there is none. */
    int tid = -1;
    for (int i = 0; i < 100 && tid < 0; i++) {
        tid = task_named("nth-vp1");
        if (tid < 0) {
            nap_10ms();
        }
    }
    pid_t helper = -1;
    /* Parked (asleep in the kernel, its idle context current): then the
     * hook's installation waits for it. A VP still finishing `nothing`
     * or spinning idle would take the hook, or be waited for not at all. */
    for (int i = 0; tid > 0 && i < 100 && task_state(tid) != 'S'; i++) {
        nap_10ms();
    }
    if (tid > 0) {
        int p[2];
        CHECK(pipe(p) == 0);
        helper = stop_thread(tid, p[1], 3);
        char ok = 'n';
        CHECK(helper > 0 && read(p[0], &ok, 1) == 1);
        fprintf(stderr, "sleephook: kernel thread nth-vp1 (%d) %s\n", tid,
                ok == 'y' ? "stopped for 3 s" : "could not be stopped (ptrace refused): plain case");
        close(p[0]);
        close(p[1]);
    }
    alarm(1);
    unsigned left = sleep(10);
    printf("sleep interrupted: %s, handler ran: %d\n", left > 0 && left < 10 ? "yes" : "no",
           (int)alarms);
    CHECK(left > 0 && left < 10);
    CHECK(alarms == 1);
    alarm(60);
    if (helper > 0)
        CHECK(waitpid(helper, NULL, 0) == helper);
    return check_end("sleephook");
}
