/*
 * env_msg.h -- the one wording of a bad NTH_* environment variable, shared
 * by the runtime (config.c), the trace writer and the preloaded trace
 * libraries (libnth-malloc, libnth-probes), which cannot call libnth's
 * hidden functions: a header-only helper keeps them to one message.
 */
#ifndef NTH_ENV_MSG_H
#define NTH_ENV_MSG_H

#include <stdio.h>

/* One line on stderr: "nthlib: VAR='VALUE' is not valid; accepted values:
 * ACCEPTED". The caller keeps the variable's default and reports it once
 * per process. Any thread (one fprintf). */
static inline void nth_env_bad(const char *var, const char *val, const char *accepted)
{
    fprintf(stderr, "nthlib: %s='%s' is not valid; accepted values: %s\n", var, val, accepted);
}

#endif
