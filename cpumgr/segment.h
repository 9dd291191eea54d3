/*
 * segment.h -- creating, opening and checking the shared segment
 * (layout in include/nth/cpumgr_shm.h).
 */
#ifndef CPUMGR_SEGMENT_H
#define CPUMGR_SEGMENT_H

#include <stddef.h>
#include <sys/types.h>

#include "nth/cpumgr_shm.h"

/* Check a mapped segment of size bytes: magic, layout version, size and
 * slot count. 0 if usable; EPROTO with a one-line reason in msg otherwise. */
int cm_seg_check(const struct nth_cpumgr_shm *s, size_t size, char *msg, size_t msglen);

/* Open and map an existing segment read-write. 0; ENOENT if absent;
 * EACCES; EPROTO (msg says why) for another layout or a foreign object. */
int cm_seg_open(const char *name, struct nth_cpumgr_shm **out, char *msg, size_t msglen);

/* The same, keeping the read-write descriptor in *fd (the caller closes
 * it): for a reader that guards its mapping against a shrunk file
 * (nth/cpumgr_sigbus.h), which needs it to grow the file back. */
int cm_seg_open_fd(const char *name, struct nth_cpumgr_shm **out, int *fd, char *msg,
                   size_t msglen);

/* Create a new zeroed segment, mode 0600, or 0660 owned by group gid when
 * gid != (gid_t)-1. 0, EEXIST, or the errno of shm_open/ftruncate/mmap. */
int cm_seg_create(const char *name, gid_t gid, struct nth_cpumgr_shm **out);

void cm_seg_unmap(struct nth_cpumgr_shm *s);

/* Validate a segment name: "/" then 1..200 bytes without "/". 0 or EINVAL. */
int cm_seg_name_ok(const char *name);

/* Pid of a process holding a POSIX lock on slot i's bytes of the segment
 * file open as fd (the slot lock, nth_cpumgr_slot_lock_range): 0 if none,
 * -1 if fd is bad or F_GETLK fails. The kernel fills the pid: unlike the
 * slot's pid, no client can forge it. One of several holders may be
 * reported. */
pid_t cm_seg_slot_locker(int fd, unsigned i);

/* Is the daemon recorded in s alive (same pid and start time)? */
int cm_seg_daemon_alive(const struct nth_cpumgr_shm *s);

/* The header words the daemon alone writes (cpumgr_shm.h), as the daemon
 * last wrote them: its private copy, which the segment's must match. The
 * heartbeat and pass_ns (rewritten at every pass) and the client-written
 * wake and wake_ns are not in it; the reserved words must stay 0. */
struct nth_cpumgr_shm_hdr {
    uint64_t magic;
    uint32_t layout_version, size, max_slots, ncpus;
    uint64_t cpus[NTH_CPUMGR_MASK_WORDS];
    uint64_t epoch;
    int32_t daemon_pid;
    uint32_t daemon_state;
    uint64_t daemon_start_time;
    uint32_t period_ms;
    uint64_t exit_grace_ms;
};

/* Write every word of h into s's header, and zero its reserved words.
 * Daemon only; atomic word stores (clients read them concurrently). */
void cm_seg_header_write(struct nth_cpumgr_shm *s, const struct nth_cpumgr_shm_hdr *h);

/* Compare s's header with h; if a word differs, rewrite the header from h
 * (cm_seg_header_write) and describe the first difference in what (one
 * line, no newline: field, value found, value expected). Returns the
 * number of words that differed, 0 if none (what untouched). Daemon only,
 * once a pass (DESIGN invariant 7: the header is the daemon's, a client
 * that scribbles on it is repaired, never believed). */
int cm_seg_header_repair(struct nth_cpumgr_shm *s, const struct nth_cpumgr_shm_hdr *h,
                         char *what, size_t whatlen);

#endif
