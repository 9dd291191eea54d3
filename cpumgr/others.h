/*
 * others.h -- other cpumgr daemons on the same machine: a start-up note
 * when one of them manages some of the CPUs this one manages.
 */
#ifndef CPUMGR_OTHERS_H
#define CPUMGR_OTHERS_H

#include <hwloc.h>

/* Say on stderr, one line each (at most 8), which other live cpumgr
 * daemons manage CPUs of `owned`: every object in /dev/shm (where glibc's
 * shm_open(3) keeps them) other than our own segment `self` ("/NAME")
 * that is a cpumgr segment of our layout (cm_seg_check), whose daemon is
 * alive (pid and start time, not stopped) and whose CPU set intersects
 * owned. Two daemons on the same CPUs each give their applications those
 * CPUs, unaware of the other's, which is what a user should hear about
 * (the applications then share the CPUs as without any manager).
 * Segments read with pread(2), never mapped: a segment someone truncates
 * meanwhile reads short, it cannot SIGBUS us. Objects we may not read are
 * skipped silently (another user's daemon: not ours to report). Returns
 * the number of daemons reported. Start-up only; not thread-safe with
 * respect to stderr's other writers. */
int cm_others_report(const char *self, hwloc_const_bitmap_t owned);

#endif
