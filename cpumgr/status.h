/*
 * status.h -- `cpumgr status [--watch]` and `cpumgr stop`.
 */
#ifndef CPUMGR_STATUS_H
#define CPUMGR_STATUS_H

/* Print the table of attached applications once, or every watch_ms (> 0)
 * until interrupted. Exit status: 0 daemon running, 1 no segment or a
 * refused one, 3 segment present but its daemon is not running. */
int cm_status(const char *name, unsigned watch_ms);

/* Stop the daemon of segment name and wait (up to 5 s) for it to end; a
 * segment left by a dead daemon is removed. Exit status 0, or 1. */
int cm_stop(const char *name);

#endif
