/*
 * status.h -- `cpumgr status [--watch]` and `cpumgr stop`.
 */
#ifndef CPUMGR_STATUS_H
#define CPUMGR_STATUS_H

/* Print the table of attached applications once, or every watch_ms (> 0,
 * milliseconds) until interrupted or until the segment is gone (`cpumgr
 * stop` unlinks it: the watch then ends with status 1). On a terminal each
 * refresh clears the screen; otherwise the tables follow one another,
 * separated by a blank line, with no escape codes. Exit status: 0 daemon
 * running, 1 no segment or a refused one, 3 segment present but its daemon
 * is not running. Reads the segment only; one caller per process. */
int cm_status(const char *name, unsigned watch_ms);

/* Stop the daemon of segment name and wait (up to 5 s) for it to end; a
 * segment left by a dead daemon is removed. Exit status 0, or 1. */
int cm_stop(const char *name);

#endif
