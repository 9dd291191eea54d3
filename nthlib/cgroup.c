/*
 * cgroup.c -- the CPU cap a cgroup v2 quota puts on the process.
 *
 * cpu.max holds "<quota> <period>" (µs) or "max <period>"; a quota of q per
 * period p lets the group use q/p CPUs on average, so more than ceil(q/p)
 * VPs would only take turns. Every cgroup on the path from the root to ours
 * may cap; the tightest wins. On cgroup v1 or hybrid hosts (no "0::" line,
 * no cpu.max files) there is no cap. See the kernel's cgroup-v2.rst, "cpu".
 */
#include "internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nth_cgroup_parse_cpu_max(const char *line)
{
    char q[32];
    unsigned long long period;
    if (sscanf(line, "%31s %llu", q, &period) != 2 || period == 0)
        return -1;
    if (!strcmp(q, "max"))
        return 0;
    char *end;
    unsigned long long quota = strtoull(q, &end, 10);
    if (*end || q[0] == '-' || quota == 0)
        return -1;
    unsigned long long cap = (quota + period - 1) / period;
    return cap > 4096 ? 4096 : (int)cap;
}

static int read_cap(const char *file)
{
    char line[128];
    FILE *f = fopen(file, "re");
    if (!f)
        return 0;
    int cap = 0;
    if (fgets(line, sizeof line, f))
        cap = nth_cgroup_parse_cpu_max(line);
    fclose(f);
    return cap < 0 ? 0 : cap;
}

int nth_cgroup_cpu_cap(const char *proc_cgroup, const char *root)
{
    char line[4096], path[4096 + 256];
    FILE *f = fopen(proc_cgroup, "re");
    if (!f)
        return 0;
    char *rel = NULL;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "0::", 3)) {
            rel = line + 3;
            rel[strcspn(rel, "\n")] = '\0';
            break;
        }
    }
    fclose(f);
    if (!rel || rel[0] != '/')
        return 0;
    int best = 0;
    /* Walk /, /a, /a/b, ... reading each cpu.max. */
    size_t len = strlen(rel);
    for (size_t i = 1; i <= len; i++) {
        if (i < len && rel[i] != '/')
            continue;
        snprintf(path, sizeof path, "%s%.*s/cpu.max", root, (int)i, rel);
        if (i == 1 && len == 1)
            snprintf(path, sizeof path, "%s/cpu.max", root);
        int cap = read_cap(path);
        if (cap > 0 && (best == 0 || cap < best))
            best = cap;
    }
    return best;
}
