/* input_kind.h -- recognise a viewer's file handed to nth-trace (input_kind.c). */
#ifndef NTH_TOOLS_INPUT_KIND_H
#define NTH_TOOLS_INPUT_KIND_H
#include <stdio.h>

/* nth_trace_viewer_file: when PATH is a trace the runtime converted for a
 * viewer (.json, .json.gz, Paraver's .prv/.pcf/.row) rather than the binary
 * trace, says so on ERR in one line, naming the PATH.PID.bin files beside
 * it, and returns 1; otherwise (a .bin, an unreadable file, anything else:
 * the loader judges those) returns 0 and prints nothing. Reads at most 16
 * bytes of PATH and lists its directory. Thread-safe (no shared state). */
int nth_trace_viewer_file(const char *path, FILE *err);

#endif
