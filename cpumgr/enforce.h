/*
 * enforce.h -- the daemon's side of bounded reclaim: move the threads of a
 * client that keeps running on CPUs taken from it (issue 5: "the daemon may
 * enforce the same on a client that ignores the contract"). Same user, no
 * root: sched_setaffinity on the client's threads.
 */
#ifndef CPUMGR_ENFORCE_H
#define CPUMGR_ENFORCE_H

#include <hwloc.h>
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

/* Threads of pid that are runnable on a CPU of `taken` (state R, last CPU
 * in taken) are bound to `to` (non-empty). Returns how many were moved;
 * *first_cpu gets the CPU the first one was found on. Errors (a thread
 * gone, EPERM) skip that thread. Not thread-safe (static buffers are not
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
                    hwloc_const_bitmap_t to, int *first_cpu);

#endif
