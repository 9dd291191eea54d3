/*
 * nthrun_trace.h -- nthrun's traced run: the program as a child, waited
 * for, and its binary trace converted when it could not do it itself.
 */
#ifndef NTHRUN_TRACE_H
#define NTHRUN_TRACE_H

/* Run argv[0] (looked up in PATH) as a child with NTH_TRACE_MAIN_PID set
 * to its pid, so that it writes `trace` itself (every other process of the
 * run writes trace with .PID before its suffix); forward the signals sent
 * to nthrun with kill(2) to it, and wait for it. If it leaves FILE.PID.bin
 * without its end record (it left through _exit() or was killed: it never
 * ran its exit path), convert that file into `trace` with nth-trace and
 * say so in one line on stderr. If the program ran (the exec succeeded)
 * but never started its trace (no pthread call: no FILE.PID.bin, or no
 * .bin FILE, with its pid), say that in one line instead; no empty trace
 * is written (nthrun(1), TRACING). Returns the exit status for nthrun: the
 * program's, 127/126 when it cannot be found/run; when the program died by
 * a signal, nthrun dies by the same signal here (without a core dump of
 * its own) and this returns only if that failed, with 128 + signal.
 * Call it from a single-threaded process (it forks and installs signal
 * handlers); not reentrant. */
int nthrun_traced(char **argv, const char *trace);

#endif
