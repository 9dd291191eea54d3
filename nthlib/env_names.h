/*
 * env_names.h -- what NTH_TRACE and NTH_CPUMGR accept, as header-only
 * checks shared by the runtime (config.c, trace_writer.c) and the nthrun
 * launcher, which refuses a bad --trace or --cpumgr before it starts the
 * program: with the rule in one place the launcher cannot accept what the
 * runtime would then refuse (a user's run went on untraced, the warning
 * lost in the program's output).
 */
#ifndef NTH_ENV_NAMES_H
#define NTH_ENV_NAMES_H

#include <string.h>

/* The accepted values of NTH_TRACE, for the one-line message. */
#define NTH_TRACE_ACCEPTED "a file name ending in .json, .json.gz (Perfetto), .prv (Paraver) or .bin, " \
                           "or without a suffix (NAME.json, NAME.json.gz past NTH_TRACE_JSON_MAX)"

/* The accepted values of NTH_CPUMGR, for the one-line message. */
#define NTH_CPUMGR_ACCEPTED "off, or a shared-memory name: '/' then 1..199 bytes without '/' " \
                            "(default /nth-cpumgr-UID)"

/* The accepted values of NTH_TRACE_MALLOC (libnth and libnth-malloc.so
 * report a bad one with these words). */
#define NTH_TRACE_MALLOC_ACCEPTED "1 (malloc counter tracks in the trace) or 0 (off, the default)"

static inline int nth_name_has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n > m && strcmp(s + n - m, suf) == 0;
}

/* 1 if path names a trace format the writer knows (by its suffix, with at
 * least one character before it), or no format at all (no '.' in its last
 * component, which is not empty: the converter then picks .json or, for a
 * big run, .json.gz; nth_trace_name_auto), else 0. "run.txt" stays an
 * error: a suffix that is no format is more likely a slip than a wish.
 * Pure; any thread. */
static inline int nth_trace_name_ok(const char *path)
{
    if (!path)
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return nth_name_has_suffix(path, ".json") || nth_name_has_suffix(path, ".json.gz") ||
           nth_name_has_suffix(path, ".prv") || nth_name_has_suffix(path, ".bin") || (*base && !strchr(base, '.'));
}

/* 1 if v is what NTH_CPUMGR accepts: "off", or a POSIX shared-memory name
 * as `cpumgr --name` takes it ('/' then 1..199 bytes, no other '/'; POSIX
 * leaves names without the leading '/' implementation-defined). Pure. */
static inline int nth_cpumgr_name_ok(const char *v)
{
    size_t n = v ? strlen(v) : 0;
    if (n && !strcmp(v, "off"))
        return 1;
    return !(n < 2 || n > 200 || v[0] != '/' || strchr(v + 1, '/'));
}

#endif
