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

/* State (field 3), start time (field 22) and last CPU (field 39) of one
 * thread; 0 or -1. Read from /proc/TID/stat, not /proc/PID/task/TID/stat:
 * enforce.h says why. */
static int thread_stat(const char *tid, char *state, uint64_t *start, int *cpu)
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
    *start = 0;
    for (p++; *p && field < 39; p++)
        if (*p == ' ' && ++field == 22)
            *start = strtoull(p + 1, NULL, 10);
    if (!*p)
        return -1;
    *cpu = atoi(p);
    return 0;
}

/* Remember that tid (started at start), whose mask was `before`, was given
 * `to` because CPUs `taken` went away. A thread moved again keeps its
 * first `before`; its cause grows. */
static void record(struct cm_moved *rec, int tid, uint64_t start, hwloc_const_bitmap_t before,
                   hwloc_const_bitmap_t taken, hwloc_const_bitmap_t to, int cpu)
{
    struct cm_moved_thread *m = NULL;
    for (int i = 0; i < rec->n && !m; i++)
        if (rec->t[i].tid == tid && rec->t[i].start == start)
            m = &rec->t[i];
    if (!m) {
        if (rec->n >= CM_MOVED_MAX)
            return;
        m = &rec->t[rec->n];
        m->before = hwloc_bitmap_dup(before);
        m->set = hwloc_bitmap_alloc();
        m->cause = hwloc_bitmap_alloc();
        if (!m->before || !m->set || !m->cause) {
            hwloc_bitmap_free(m->before);
            hwloc_bitmap_free(m->set);
            hwloc_bitmap_free(m->cause);
            return;
        }
        m->tid = tid;
        m->start = start;
        rec->n++;
    }
    hwloc_bitmap_copy(m->set, to);
    hwloc_bitmap_t c = hwloc_bitmap_alloc();
    if (c) {
        hwloc_bitmap_and(c, m->before, taken);
        hwloc_bitmap_or(m->cause, m->cause, c);
        hwloc_bitmap_free(c);
    }
    /* The CPU it was found on, always: a mask changed between our two
     * reads must not leave an empty cause, which would undo the move at
     * once. */
    hwloc_bitmap_set(m->cause, (unsigned)cpu);
}

static void drop(struct cm_moved *rec, int i)
{
    hwloc_bitmap_free(rec->t[i].before);
    hwloc_bitmap_free(rec->t[i].set);
    hwloc_bitmap_free(rec->t[i].cause);
    rec->t[i] = rec->t[--rec->n];
}

int cm_enforce_restore(hwloc_topology_t topo, struct cm_moved *rec, hwloc_const_bitmap_t assigned)
{
    int restored = 0;
    hwloc_bitmap_t now = hwloc_bitmap_alloc();
    for (int i = 0; now && i < rec->n;) {
        struct cm_moved_thread *m = &rec->t[i];
        if (assigned && !hwloc_bitmap_isincluded(m->cause, assigned)) {
            i++;
            continue;
        }
        char tid[24], st;
        uint64_t start;
        int cpu;
        snprintf(tid, sizeof tid, "%d", m->tid);
        if (thread_stat(tid, &st, &start, &cpu) == 0 && start == m->start &&
            hwloc_get_proc_cpubind(topo, (hwloc_pid_t)m->tid, now, HWLOC_CPUBIND_THREAD) == 0 &&
            hwloc_bitmap_isequal(now, m->set) &&
            hwloc_set_proc_cpubind(topo, (hwloc_pid_t)m->tid, m->before, HWLOC_CPUBIND_THREAD) == 0)
            restored++;
        drop(rec, i);
    }
    hwloc_bitmap_free(now);
    return restored;
}

void cm_enforce_forget(struct cm_moved *rec)
{
    while (rec->n)
        drop(rec, 0);
}

int cm_enforce_move(hwloc_topology_t topo, pid_t pid, hwloc_const_bitmap_t taken,
                    hwloc_const_bitmap_t to, int *first_cpu, struct cm_moved *rec)
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
         * affinity cannot be read, the state decides, as before (and the
         * move is not recorded: there is no mask to give back). */
        int known = allowed &&
            hwloc_get_proc_cpubind(topo, (hwloc_pid_t)tid, allowed, HWLOC_CPUBIND_THREAD) == 0;
        if (known && !hwloc_bitmap_intersects(allowed, taken))
            continue;
        char st;
        uint64_t start;
        int cpu;
        if (thread_stat(e->d_name, &st, &start, &cpu) != 0 || st != 'R' || cpu < 0 ||
            !hwloc_bitmap_isset(taken, (unsigned)cpu))
            continue;
        if (hwloc_set_proc_cpubind(topo, (hwloc_pid_t)tid, to, HWLOC_CPUBIND_THREAD) == 0) {
            if (!moved)
                *first_cpu = cpu;
            moved++;
            if (rec && known && start)
                record(rec, (int)tid, start, allowed, taken, to, cpu);
        }
    }
    closedir(d);
    hwloc_bitmap_free(allowed);
    return moved;
}
