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

/* Create a new zeroed segment, mode 0600, or 0660 owned by group gid when
 * gid != (gid_t)-1. 0, EEXIST, or the errno of shm_open/ftruncate/mmap. */
int cm_seg_create(const char *name, gid_t gid, struct nth_cpumgr_shm **out);

void cm_seg_unmap(struct nth_cpumgr_shm *s);

/* Validate a segment name: "/" then 1..200 bytes without "/". 0 or EINVAL. */
int cm_seg_name_ok(const char *name);

/* Is the daemon recorded in s alive (same pid and start time)? */
int cm_seg_daemon_alive(const struct nth_cpumgr_shm *s);

#endif
