/* default_out.h -- the output `nth-trace convert BIN` writes without -o
 * (default_out.c). */
#ifndef NTH_TOOLS_DEFAULT_OUT_H
#define NTH_TOOLS_DEFAULT_OUT_H
#include <stddef.h>
#include <stdio.h>

/* nth_trace_default_out: the output name for converting `bin` when no -o
 * is given, into out (n bytes). Returns 0, ENAMETOOLONG when it does not
 * fit, EEXIST when every candidate holds another process's trace (said on
 * err in one line asking for -o).
 *
 * The runtime's binary files are PATH.PID.bin for NTH_TRACE=PATH (nth(3)):
 * the default is PATH, in the format PATH's suffix names (.json, .json.gz,
 * .prv; no suffix: PATH.json, or .json.gz past NTH_TRACE_JSON_MAX), as
 * nthrun --trace converts. Any other NAME.bin gives NAME.json.gz (NAME.bin
 * written by NTH_TRACE=NAME.bin, or a renamed file).
 *
 * An existing output is replaced only when it is this binary file's own
 * trace (the same pid and trace start: a second conversion of one file).
 * Another process's trace there (the first process of a tree wrote PATH,
 * this .bin is a child's; an earlier run's) is kept: the name then gets
 * ".PID" before its suffix (PATH.json -> PATH.4242.json, the runtime's name
 * for a process that is not the first of its tree), said on err in one
 * line. If that one too holds another trace, nothing is picked (EEXIST).
 * `bin`'s header gives pid and start; an unreadable header (the converter
 * then says why) skips the check. Reads the first 64 KiB of an existing
 * JSON output (gzip or plain) or the first line of a .prv and its .row.
 * Thread-safe (no shared state). */
int nth_trace_default_out(const char *bin, char *out, size_t n, FILE *err);

#endif
