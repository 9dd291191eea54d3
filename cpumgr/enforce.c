/*
 * enforce.c -- find a client's threads still running on CPUs taken from it
 * and bind them to the client's current CPUs. Everything read here comes
 * from /proc, never from the segment.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "enforce.h"

int cm_enforce_is_client(pid_t pid, const char *name)
{
    return cm_maps_segment(pid, name) == 1;
}

int cm_maps_segment(pid_t pid, const char *name)
{
    char path[64], want[256 + 16], line[4096];
    if (pid <= 0 || !name || name[0] != '/')
        return 0;
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    snprintf(want, sizeof want, " /dev/shm%s", name);
    size_t wl = strlen(want);
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == EACCES || errno == EPERM ? -1 : 0;
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n'))
            line[--n] = 0;
        /* The path is the line's last field; "(deleted)" follows an
         * unlinked object, which a stopping daemon never enforces on. */
        found = n >= wl && strcmp(line + n - wl, want) == 0;
    }
    fclose(f);
    return found;
}

/* State (field 3) and last CPU (field 39) of one thread; 0 or -1. Read
 * from /proc/TID/stat, not /proc/PID/task/TID/stat: enforce.h says why. */
static int thread_stat(const char *tid, char *state, int *cpu)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%.20s/stat", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0)
        return -1;
    buf[len] = 0;
    char *p = strrchr(buf, ')'); /* the command may hold spaces and ')' */
    if (!p || p[1] != ' ' || !p[2])
        return -1;
    *state = p[2];
    int field = 2;
    for (p++; *p && field < 39; p++)
        if (*p == ' ')
            field++;
    if (!*p)
        return -1;
    *cpu = atoi(p);
    return 0;
}

int cm_enforce_move(hwloc_topology_t topo, pid_t pid, hwloc_const_bitmap_t taken,
                    hwloc_const_bitmap_t to, int *first_cpu)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    hwloc_bitmap_t allowed = hwloc_bitmap_alloc();
    int moved = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        long tid = strtol(e->d_name, NULL, 10);
        if (tid <= 0)
            continue;
        /* A thread not allowed on any taken CPU cannot run there (a VP
         * bound to a CPU the client kept): no /proc file for it. When the
         * affinity cannot be read, the state decides, as before. */
        if (allowed &&
            hwloc_get_proc_cpubind(topo, (hwloc_pid_t)tid, allowed, HWLOC_CPUBIND_THREAD) == 0 &&
            !hwloc_bitmap_intersects(allowed, taken))
            continue;
        char st;
        int cpu;
        if (thread_stat(e->d_name, &st, &cpu) != 0 || st != 'R' || cpu < 0 ||
            !hwloc_bitmap_isset(taken, (unsigned)cpu))
            continue;
        if (hwloc_set_proc_cpubind(topo, (hwloc_pid_t)tid, to, HWLOC_CPUBIND_THREAD) == 0) {
            if (!moved)
                *first_cpu = cpu;
            moved++;
        }
    }
    closedir(d);
    hwloc_bitmap_free(allowed);
    return moved;
}
