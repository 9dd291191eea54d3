/*
 * accounting.h -- one CSV line per application when it leaves.
 */
#ifndef CPUMGR_ACCOUNTING_H
#define CPUMGR_ACCOUNTING_H

#include <stdint.h>

/* Append "end_unix_s,name,pid,priority,request,cpu_seconds,reason" to path
 * (header line first when the file is empty). reason: detach, dead, stop.
 * Returns 0 or the errno of open/write; the daemon logs and goes on. */
int cm_account(const char *path, const char *name, int32_t pid, int priority,
               int request, uint64_t cpu_ns, const char *reason);

/* Check at start that path can be opened for append (creating it if
 * missing), so that a typo is refused at start rather than logged at the
 * first detach. *created is set when this call created the (empty) file:
 * the daemon removes it if it then does not start. Returns 0 or the errno
 * of open. */
int cm_account_check(const char *path, int *created);

#endif
