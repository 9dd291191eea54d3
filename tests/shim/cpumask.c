/*
 * cpumask.c -- a program and the programs it starts see the CPU mask the
 * process was started with (sched_setaffinity(2): a child created by
 * fork, vfork or clone inherits its parent's mask, and execve(2) keeps
 * it). Under the pthread shim each VP's kernel thread, main's among them,
 * is bound to one CPU: sched_getaffinity(0) said 1 CPU and programs
 * started with system(3), popen(3), posix_spawn(3) or exec got that one
 * CPU (only fork+exec was repaired).
 *
 * The reference is the mask of the parent (the test harness's timeout,
 * single-threaded, not under the shim). Each child is this program again
 * ("child LIST"), without LD_PRELOAD, and exits 0 when its own mask is
 * LIST. main also sets its own mask to one CPU and back (as taskset(1)
 * does before it execs): a child started meanwhile gets that CPU. Last,
 * main execs itself ("final LIST FAILURES") after a thread
 * ran, and that image reports.
 */
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include "check.h"

extern char **environ;
static char self_path[4096];
static char start_list[1024];
static char *clean_env[256];       /* environ without LD_PRELOAD */

/* The Cpus_allowed_list of /proc/PID/status (PID "self" or a number). */
static int mask_list(const char *pid, char *out, size_t n)
{
    char path[64], line[1200];
    snprintf(path, sizeof path, "/proc/%s/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int found = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
            char *p = line + 18;
            while (*p == ' ' || *p == '\t')
                p++;
            p[strcspn(p, "\n")] = 0;
            snprintf(out, n, "%.*s", (int)n - 1, p);
            found = 0;
        }
    fclose(f);
    return found;
}

/* The start mask's CPU count, from its list ("0-3,8"). */
static int list_count(const char *s)
{
    int n = 0;
    while (*s) {
        char *e;
        long a = strtol(s, &e, 10), b = a;
        if (*e == '-')
            b = strtol(e + 1, &e, 10);
        n += (int)(b - a + 1);
        s = *e == ',' ? e + 1 : e;
        if (e == s && *s)
            break;
    }
    return n;
}

static const char *yes(int c)
{
    return c ? "yes" : "no";
}

/* Exit status 0 of a wait status. */
static int ok_status(int st)
{
    return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int by_spawn_want(char *list)
{
    char *argv[] = { self_path, "child", list, NULL };
    pid_t p;
    int st = -1;
    if (posix_spawn(&p, self_path, NULL, NULL, argv, clean_env) != 0)
        return 0;
    while (waitpid(p, &st, 0) < 0 && errno == EINTR)
        ;
    return ok_status(st);
}

static int by_spawn(void)
{
    return by_spawn_want(start_list);
}

static int by_system(void)
{
    char cmd[6000];
    snprintf(cmd, sizeof cmd, "exec env -u LD_PRELOAD '%s' child '%s'", self_path, start_list);
    return ok_status(system(cmd));
}

static int by_popen(void)
{
    char cmd[6000];
    snprintf(cmd, sizeof cmd, "exec env -u LD_PRELOAD '%s' child '%s'", self_path, start_list);
    FILE *f = popen(cmd, "r");
    return f && ok_status(pclose(f));
}

static int by_fork_exec(void)
{
    char *argv[] = { self_path, "child", start_list, NULL };
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        execve(self_path, argv, clean_env);
        _exit(127);
    }
    int st = -1;
    while (p > 0 && waitpid(p, &st, 0) < 0 && errno == EINTR)
        ;
    return ok_status(st);
}

static void starts(const char *who)
{
    printf("%s: posix_spawn child has the start mask: %s\n", who, yes(by_spawn()));
    printf("%s: system child has the start mask: %s\n", who, yes(by_system()));
    printf("%s: popen child has the start mask: %s\n", who, yes(by_popen()));
    printf("%s: fork+exec child has the start mask: %s\n", who, yes(by_fork_exec()));
}

static void *thread_starts(void *arg)
{
    starts("thread");
    return arg;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "child") == 0) {
        char mine[1024];
        return mask_list("self", mine, sizeof mine) == 0 && strcmp(mine, argv[2]) == 0 ? 0 : 1;
    }
    if (argc == 4 && strcmp(argv[1], "final") == 0) {
        char mine[1024];
        check_failures = atoi(argv[3]);
        int same = mask_list("self", mine, sizeof mine) == 0 && strcmp(mine, argv[2]) == 0;
        printf("exec of main after a thread keeps the start mask: %s\n", yes(same));
        CHECK(same);
        return check_end("cpumask");
    }
    check_start("cpumask");
    char ppid[32];
    snprintf(ppid, sizeof ppid, "%d", (int)getppid());
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0 || mask_list(ppid, start_list, sizeof start_list) != 0) {
        printf("FAIL: cannot read /proc/self/exe or the parent's mask\n");
        return 1;
    }
    self_path[n] = 0;
    int k = 0;
    for (char **e = environ; *e && k < 255; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
            clean_env[k++] = *e;
    clean_env[k] = NULL;

    /* The process's mask, as the program sees it, before any thread. */
    cpu_set_t s;
    CPU_ZERO(&s);
    CHECK(sched_getaffinity(0, sizeof s, &s) == 0);
    int same0 = CPU_COUNT(&s) == list_count(start_list);
    printf("sched_getaffinity(0) in main counts the start mask's CPUs: %s\n", yes(same0));
    CHECK(same0);
    CPU_ZERO(&s);
    CHECK(sched_getaffinity(getpid(), sizeof s, &s) == 0);
    int samep = CPU_COUNT(&s) == list_count(start_list);
    printf("sched_getaffinity(getpid()) counts them: %s\n", yes(samep));
    CHECK(samep);

    starts("main");

    /* As taskset(1): the process sets its own mask, then starts a
     * program, which must get that mask; then the start mask back. */
    cpu_set_t start, one;
    CPU_ZERO(&start);
    CHECK(sched_getaffinity(0, sizeof start, &start) == 0);
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &start))
            last = c;
    char one_list[16];
    snprintf(one_list, sizeof one_list, "%d", last);
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
    int got_one = by_spawn_want(one_list);
    printf("after sched_setaffinity(0, one CPU) a child has that CPU: %s\n", yes(got_one));
    CHECK(got_one);
    CHECK(sched_setaffinity(0, sizeof start, &start) == 0);
    printf("after it is set back a child has the start mask: %s\n", yes(by_spawn()));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, thread_starts, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CPU_ZERO(&s);
    CHECK(sched_getaffinity(0, sizeof s, &s) == 0);
    int same1 = CPU_COUNT(&s) == list_count(start_list);
    printf("sched_getaffinity(0) after a thread counts them: %s\n", yes(same1));
    CHECK(same1);

    /* Every check above left its line; the exec'd image ends the run. */
    char fails[16];
    snprintf(fails, sizeof fails, "%d", check_failures);
    char *fargv[] = { self_path, "final", start_list, fails, NULL };
    fflush(stdout);
    execve(self_path, fargv, clean_env);
    printf("FAIL: execve: %s\n", strerror(errno));
    return 1;
}
