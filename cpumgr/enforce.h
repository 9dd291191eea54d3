/*
 * enforce.h -- the daemon's side of bounded reclaim: move the threads of a
 * client that keeps running on CPUs taken from it (issue 5: "the daemon may
 * enforce the same on a client that ignores the contract"). Same user, no
 * root: sched_setaffinity on the client's threads.
 */
#ifndef CPUMGR_ENFORCE_H
#define CPUMGR_ENFORCE_H

#include <hwloc.h>
#include <stdint.h>
#include <sys/types.h>

/* Does process pid map the shared-memory segment `name` ("/NAME")? The
 * slot's pid is client-written: only a process that attached to us (its
 * /proc/PID/maps shows /dev/shm/NAME, readable for our own user only) is
 * ever touched. 1 yes, 0 no or unreadable. */
int cm_enforce_is_client(pid_t pid, const char *name);

/* The same question for admission: 1 pid maps the segment, 0 it does not
 * (or there is no such process), -1 we may not read its maps (another
 * user's process, a client of --group: EACCES), so cannot tell. */
int cm_maps_segment(pid_t pid, const char *name);

struct cm_moved; /* below */

/* Threads of pid that are runnable on a CPU of `taken` (state R, last CPU
 * in taken) are bound to `to` (non-empty). Returns how many were moved;
 * *first_cpu gets the CPU the first one was found on. Each move is
 * recorded in rec (NULL: not recorded) for cm_enforce_restore(). Errors
 * (a thread gone, EPERM) skip that thread. Not thread-safe (static buffers are not
 * used, but call it from the daemon loop only).
 *
 * What it reads, and why not more: the thread list (readdir of
 * /proc/PID/task), each thread's affinity (sched_getaffinity(2), no file),
 * and only for a thread allowed on a taken CPU its state and CPU from
 * /proc/TID/stat -- the same fields as /proc/PID/task/TID/stat (proc(5):
 * state and processor are the thread's own there too), not the same
 * dentries. Opening a file under /proc/PID/task/TID/ made each client
 * process cost the one who reaps it 0.3-2 s of CPU per mix on this VM
 * (wait4 -> proc_flush_pid -> d_walk; bench/RESULTS.md "mal3", "mig"). */
int cm_enforce_move(hwloc_topology_t topo, pid_t pid, hwloc_const_bitmap_t taken,
                    hwloc_const_bitmap_t to, int *first_cpu, struct cm_moved *rec);

/* What enforcement did to one application's threads, so that it can be
 * undone: the move is the daemon's measure for as long as the CPU is
 * someone else's, not a new binding for the thread's life. A thread of
 * the application that is no VP (the runtime's helper threads, a foreign
 * thread of the program or of a library) has nothing that would bind it
 * back, and stayed on the CPUs left to the application at that moment
 * for good, also once it had every CPU again. Up to CM_MOVED_MAX threads
 * per application are remembered; one moved beyond that keeps the
 * daemon's mask. */
#define CM_MOVED_MAX 64
struct cm_moved_thread {
    int tid;
    uint64_t start;            /* its start time (/proc/TID/stat field 22) */
    hwloc_bitmap_t before;     /* its mask before the first move */
    hwloc_bitmap_t set;        /* the mask the daemon gave it last */
    hwloc_bitmap_t cause;      /* CPUs of `before` taken from the application */
};
struct cm_moved {
    int n;
    struct cm_moved_thread t[CM_MOVED_MAX];
};

/* Give back their masks to the threads in rec whose cause is all in
 * `assigned` again (the application holds again every CPU whose taking
 * moved them), or to all of them when assigned is NULL (the application
 * leaves the daemon: it detached, or the daemon stops, and it runs alone
 * on its own mask). A thread is given `before` only if it is still the
 * same thread (tid and start time) and its mask is still the one the
 * daemon set: a mask the application changed since is its own choice
 * and stays. Each restored or forgotten entry leaves rec. Returns how
 * many threads got their mask back. Daemon loop only. */
int cm_enforce_restore(hwloc_topology_t topo, struct cm_moved *rec, hwloc_const_bitmap_t assigned);

/* Forget every entry (a dead application), freeing their bitmaps. */
void cm_enforce_forget(struct cm_moved *rec);

#endif
