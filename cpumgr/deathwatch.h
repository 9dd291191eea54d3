/*
 * deathwatch.h -- wake the daemon the moment an attached application dies
 * (issue 5: "a dead client's slot is reclaimed within one period"; a trial
 * measured 7-101 ms with the once-a-period /proc check alone). One thread
 * polls a pidfd (pidfd_open(2), Linux >= 5.3) per application; a pidfd
 * turns readable when its process has exited, and the thread then wakes the
 * daemon's futex. The daemon still decides death itself from /proc (pid
 * plus start time): the pidfd only says "look now". Without pidfds (ENOSYS,
 * EPERM under a seccomp filter, EMFILE) the once-a-period check remains.
 */
#ifndef CPUMGR_DEATHWATCH_H
#define CPUMGR_DEATHWATCH_H

#include <stdint.h>
#include <sys/types.h>

/* Start the watcher thread. On a death it adds 1 to *wake_word and
 * FUTEX_WAKEs it (shared futex: the word is in the segment). Returns 0, or
 * an errno: ENOSYS/EPERM when pidfd_open is refused for our own pid (the
 * daemon then relies on its periodic check), or that of eventfd(2) or
 * pthread_create(3). Call once, from the daemon loop's thread. */
int cm_dw_start(uint32_t *wake_word);

/* Watch slot `slot` (0..NTH_CPUMGR_MAX_SLOTS-1) for the death of process
 * pid started at `start` (clock ticks since boot, /proc/PID/stat field
 * 22); replaces the slot's previous watch. The pidfd is opened by the
 * watcher, which then checks the start time, so a pid reused meanwhile
 * counts as a death. No-op if the watcher is not running. Daemon thread
 * only. */
void cm_dw_watch(int slot, pid_t pid, uint64_t start);

/* Stop watching slot `slot` (its pidfd is closed by the watcher). No-op if
 * not watched or not running. Daemon thread only. */
void cm_dw_unwatch(int slot);

/* Did a watched process die since the last call? Clears the flag. Safe
 * from the daemon thread while the watcher runs; 0 if not running. */
int cm_dw_deaths(void);

/* Stop the watcher thread and close its descriptors. Daemon thread only;
 * no-op if not running. */
void cm_dw_stop(void);

#endif
