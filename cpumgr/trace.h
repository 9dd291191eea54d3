/*
 * trace.h -- `cpumgr --trace FILE`: the daemon's grants as an nthlib binary
 * trace (nthlib/trace_format.h), for `nth-trace merge` with the
 * applications' traces (one timeline: both use CLOCK_MONOTONIC).
 */
#ifndef CPUMGR_TRACE_H
#define CPUMGR_TRACE_H

#include <stdint.h>

/* Create FILE (truncating it) and write the header. Returns 0 or the errno
 * of open/write; the daemon reports it and refuses to start. */
int cm_trace_open(const char *path);

/* Record that application pid (named name, client-written: sanitised by
 * the reader) now holds cpus CPUs. Each grant is written at once with one
 * write(2): grants are rare (a change of assignment), and a daemon killed
 * with SIGKILL keeps every grant it made. No-op when no trace is open. */
void cm_trace_grant(int32_t pid, const char *name, unsigned cpus);

/* Write the end record and close. Safe to call when none is open. */
void cm_trace_close(void);

#endif
