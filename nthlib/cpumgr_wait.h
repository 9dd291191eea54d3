/*
 * cpumgr_wait.h -- the cpumgr watcher's sleep (internal): one wait on two
 * futex words, the segment's shared assignment word (the daemon, another
 * process, bumps and wakes it) and the runtime's private kick word (our own
 * threads bump and wake it).
 */
#ifndef NTH_CPUMGR_WAIT_H
#define NTH_CPUMGR_WAIT_H

#include <stdint.h>

/* Sleep until *shared != shared_val, *kick != kick_val, a wake-up on either
 * word, or CLOCK_MONOTONIC reaches deadline_ns (absolute). shared may be
 * NULL (not attached: the kick word alone). Both values are compared by the
 * kernel when the wait is queued, so a bump of either word made after the
 * caller read it and before the wait is never lost (a wait on one word
 * only, with the other checked just before, loses it). futex_waitv(2),
 * Linux 5.16; without it (any error but EAGAIN, ETIMEDOUT, EINTR: ENOSYS,
 * or EPERM from a seccomp filter) the shared word is waited on alone in
 * slices of at most NTH_CPUMGR_WAIT_FALLBACK_NS, so a lost kick costs one
 * slice. Returns 0 when woken or a word moved, ETIMEDOUT at the deadline,
 * EINTR on a signal. Thread-safe (its one state, whether futex_waitv
 * works, is an atomic flag). */
#define NTH_CPUMGR_WAIT_FALLBACK_NS 200000
int nth_cpumgr_wait2(const uint32_t *shared, uint32_t shared_val, const int *kick, int kick_val,
                     int64_t deadline_ns);

/* Test hook: on = 1 uses the one-word fallback as if futex_waitv were
 * missing, 0 goes back to futex_waitv. Not thread-safe against a wait in
 * progress (a test calls it between waits). */
void nth_cpumgr_wait_force_fallback(int on);

#endif
