/*
 * trace.h -- `cpumgr --trace FILE`: the daemon's grants as an nthlib binary
 * trace (nthlib/trace_format.h), for `nth-trace merge` with the
 * applications' traces (one timeline: both use CLOCK_MONOTONIC).
 */
#ifndef CPUMGR_TRACE_H
#define CPUMGR_TRACE_H

#include <stdint.h>

/* Open FILE for writing, creating it if missing but not truncating it yet:
 * the daemon checks it before it creates its segment, and a second daemon
 * refused on a running one's segment must not clobber that one's trace.
 * *created is set when this call created the file (the caller removes it
 * if the daemon then does not start). Returns 0 or the errno of open. */
int cm_trace_open(const char *path, int *created);

/* Truncate the file opened by cm_trace_open() and write the header: the
 * daemon does it once its segment is its own. Returns 0 or the errno of
 * ftruncate/write (the file is then closed). */
int cm_trace_begin(void);

/* Record that application pid (named name, client-written: sanitised by
 * the reader) now holds cpus CPUs. Each grant is written at once with one
 * write(2): grants are rare (a change of assignment), and a daemon killed
 * with SIGKILL keeps every grant it made. No-op when no trace is open. */
void cm_trace_grant(int32_t pid, const char *name, unsigned cpus);

/* Write the end record (when cm_trace_begin() ran) and close. Safe to
 * call when none is open. */
void cm_trace_close(void);

#endif
