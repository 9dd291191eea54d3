/*
 * trace_tool.h -- where the `nth-trace` converter is, for the two programs
 * that run it on a trace they could not convert themselves: libnth's
 * fatal-signal path (trace_exit.c) and `nthrun --trace` (nthrun_trace.c).
 *
 * Header-only on purpose: nthrun links no libnth (it only sets the
 * environment and runs the program), and libnth exports only its public
 * API, so a function of one could not be called from the other. Each build
 * passes the two candidate paths with NTH_TOOL_CPPFLAGS (nthlib/trace.mk):
 * NTH_TOOL_BUILD_PATH (this build tree's tools/nth-trace, for an
 * uninstalled build and the test suite) and NTH_TOOL_INSTALL_PATH
 * ($bindir/nth-trace).
 */
#ifndef NTH_TRACE_TOOL_H
#define NTH_TRACE_TOOL_H

#include <stdlib.h>
#include <unistd.h>

/* The nth-trace to run: $NTH_TRACE_TOOL when it names an executable, else
 * the build tree's, else the installed one; NULL when none of them is
 * executable (access(2) X_OK). When NTH_TRACE_TOOL is set but names no
 * executable, *unusable (if unusable is not NULL) gets its value and the
 * search goes on: the caller decides whether a bad setting is reported and
 * overridden (the runtime, which has its one-line message for a bad
 * variable) or means "no tool" (nthrun: the user named one, and nthrun does
 * not run another in its place). Else *unusable is set to NULL.
 * Reads the environment: not for a signal handler (callers look the tool up
 * at start-up); thread-safe as far as getenv is. */
static inline const char *nth_trace_tool_find(const char **unusable)
{
    const char *env = getenv("NTH_TRACE_TOOL");
    if (unusable)
        *unusable = NULL;
    if (env && *env) {
        if (access(env, X_OK) == 0)
            return env;
        if (unusable)
            *unusable = env;
    }
#ifdef NTH_TOOL_BUILD_PATH
    if (access(NTH_TOOL_BUILD_PATH, X_OK) == 0)
        return NTH_TOOL_BUILD_PATH;
#endif
#ifdef NTH_TOOL_INSTALL_PATH
    if (access(NTH_TOOL_INSTALL_PATH, X_OK) == 0)
        return NTH_TOOL_INSTALL_PATH;
#endif
    return NULL;
}

#endif
