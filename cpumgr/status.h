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

/* Stop the daemon of segment name (SIGTERM) and wait for it to end: up to
 * 5 s for it to say STOPPED and unlink the segment, then up to 10 s for its
 * process to exit (pidfd_open(2) and poll(2); /proc before Linux 5.3) and
 * up to 5 s more for the pid to be reaped, so that `kill -0 PID` right after
 * fails (not when the daemon's parent is one of our ancestors, which reaps
 * it after we return). "daemon N stopped" is printed only then. A segment left by a dead
 * daemon is removed. Exit status 0; 1 with one line on stderr when there is
 * no segment, the signal cannot be sent, or either wait times out. */
int cm_stop(const char *name);

#endif
