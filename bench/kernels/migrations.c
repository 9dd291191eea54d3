/* migrations.c -- see migrations.h. */
#include "migrations.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { SRC_NONE, SRC_PERF, SRC_PROC };

static int source = SRC_NONE;
static int perf_fd = -1;
static long proc_base;
static char why[96];

/* The old source: se.nr_migrations summed over the live threads. */
static long proc_sum(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    long total = 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[96], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%.40s/sched", e->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "se.nr_migrations", 16) == 0) {
                char *colon = strchr(line, ':');
                if (colon) {
                    total += strtol(colon + 1, NULL, 10);
                    found = 1;
                }
                break;
            }
        }
        fclose(f);
    }
    closedir(d);
    return found ? total : -1;
}

static int perf_open(void)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_SOFTWARE;
    a.size = sizeof a;
    a.config = PERF_COUNT_SW_CPU_MIGRATIONS;
    a.inherit = 1;      /* threads created from now on */
    a.exclude_hv = 1;
    /* exclude_kernel stays 0: the event is raised from the scheduler with
     * kernel registers, and excluding the kernel counts nothing (6.18). */
    long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        snprintf(why, sizeof why, "perf_event_open: %s", strerror(errno));
        return -1;
    }
    perf_fd = (int)fd;
    return 0;
}

int migr_start(void)
{
    const char *v = getenv("HARNESS_MIGRATIONS");
    source = SRC_NONE;
    why[0] = 0;
    if (!v || !*v || !strcmp(v, "perf")) {
        if (perf_fd >= 0 || perf_open() == 0)
            source = SRC_PERF;
    } else if (!strcmp(v, "proc")) {
        source = SRC_PROC;
        proc_base = proc_sum();
        if (proc_base < 0) {
            snprintf(why, sizeof why, "/proc/self/task/*/sched: no se.nr_migrations");
            source = SRC_NONE;
        }
    } else if (!strcmp(v, "off")) {
        snprintf(why, sizeof why, "HARNESS_MIGRATIONS=off");
    } else {
        fprintf(stderr, "HARNESS_MIGRATIONS: bad value '%s' (accepted: perf, proc, off)\n", v);
        return EINVAL;
    }
    return 0;
}

long migr_read(void)
{
    if (source == SRC_PERF) {
        uint64_t n;
        /* With inherit, read() sums the live threads' counters and those
         * the exited ones handed back (kernel perf_event_read_value). */
        if (read(perf_fd, &n, sizeof n) != (ssize_t)sizeof n)
            return -1;
        return (long)n;
    }
    if (source == SRC_PROC) {
        long n = proc_sum();
        return n < 0 ? -1 : n - proc_base;
    }
    return -1;
}

const char *migr_source(void)
{
    return source == SRC_PERF ? "perf" : source == SRC_PROC ? "proc" : "none";
}

const char *migr_why(void)
{
    return source == SRC_NONE ? why : "";
}
