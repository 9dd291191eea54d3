/*
 * group.h -- the argument of `cpumgr --group`: which group the segment is
 * given to (mode 0660), checked before anything starts.
 */
#ifndef CPUMGR_GROUP_H
#define CPUMGR_GROUP_H

#include <stddef.h>
#include <sys/types.h>

/* Resolve arg, a group name or a numeric group ID (as chgrp(1) takes
 * them; a name is tried first, so a group named "1234" is that group),
 * into *gid. The group must exist in the group database, and a caller
 * whose effective user is not root must belong to it (its effective or
 * a supplementary group): fchown(2) of the segment to any other group
 * fails with EPERM, which the daemon could only report as "cannot create
 * NAME: Operation not permitted", naming the wrong problem (a new user's
 * report). Returns 0, or EINVAL (empty or unknown), ENOENT (no group of
 * that name or ID) or EPERM (not a member), with one line for the user
 * in msg (without "cpumgr: --group: "; it names the value and what is
 * accepted, with the caller's own groups when it is not a member). Uses
 * getgrnam(3) and getgrgid(3): not thread-safe; call it from main. */
int cm_group_parse(const char *arg, gid_t *gid, char *msg, size_t len);

#endif
