/*
 * trace_convert.c -- binary files in, the format named by the output suffix
 * out. Used at exit by libnth and by `nth-trace convert|merge`.
 *
 * Big runs: a name without a suffix (NTH_TRACE=run, nthrun --trace run,
 * nth-trace convert -o run) lets the size choose: run.json while the JSON
 * stays within NTH_TRACE_JSON_MAX (256 MiB), run.json.gz past it. A name
 * with a suffix is written as it says; an explicit .json past the limit is
 * said in one line, with its size and the smaller choices (.json.gz is
 * about 20 times smaller, bench/RESULTS.md "trbig").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "trace_convert.h"

static int ends(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n > m && strcmp(s + n - m, suf) == 0;
}

int nth_trace_name_auto(const char *out)
{
    if (!out || !*out)
        return 0;
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    return *base && !strchr(base, '.');
}

/* NTH_TRACE_JSON_MAX: bytes with an optional K, M or G (powers of 1024),
 * at least 1; a bad value is said on warn and the default used. */
static uint64_t json_max(FILE *warn)
{
    const char *v = getenv("NTH_TRACE_JSON_MAX");
    if (!v || !*v)
        return NTH_TRACE_JSON_MAX_DEFAULT;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    unsigned shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : *end == 'G' || *end == 'g' ? 30 : 0;
    if (shift)
        end++;
    if (errno || end == v || *v == '-' || *end || !x || x > (UINT64_MAX >> shift)) {
        if (warn)
            fprintf(warn, "%s: NTH_TRACE_JSON_MAX='%s' is not valid: a size in bytes with an optional K, M or G "
                          "suffix, at least 1 (default 256M); using 256M\n", nth_tr_msg_prefix, v);
        return NTH_TRACE_JSON_MAX_DEFAULT;
    }
    return (uint64_t)x << shift;
}

int nth_trace_convert_to(const char *const *bins, int n, const char *out, FILE *warn, unsigned *warnings,
                         const char **failed, char *wrote, size_t wn)
{
    if (failed)
        *failed = out;
    if (wrote && wn)
        snprintf(wrote, wn, "%s", out);
    int fmt = ends(out, ".json.gz") ? 2 : ends(out, ".json") ? 1 : ends(out, ".prv") ? 3
            : nth_trace_name_auto(out) ? 4 : 0;
    if (!fmt || n < 1)
        return EINVAL;
    static char json[4096], done[4096];   /* not on the stack: exit() on a nano-thread's small stack */
    if (fmt == 4 && (size_t)snprintf(json, sizeof json, "%s.json", out) >= sizeof json - 3)
        return ENAMETOOLONG;
    uint64_t limit = fmt == 1 || fmt == 4 ? json_max(warn) : 0;
    struct nth_tr_file *files = calloc((size_t)n, sizeof *files);
    if (!files)
        return ENOMEM;
    int rc = 0, loaded = 0;
    unsigned w = 0;
    for (; loaded < n; loaded++) {
        rc = nth_tr_load(bins[loaded], &files[loaded], warn);
        if (rc) {
            if (failed)   /* the input, not the output: say which */
                *failed = bins[loaded];
            break;
        }
        w += files[loaded].warnings;
    }
    if (!rc && fmt == 3)
        rc = nth_tr_write_prv(files, n, out);
    else if (!rc && fmt == 4) {
        rc = nth_tr_write_json(files, n, json, 0, limit, done, sizeof done);
        if (!rc && !strcmp(done, json)) {   /* a previous run's OUT.json.gz is not this run's */
            strcat(json, ".gz");
            unlink(json);
        }
        if (wrote && wn)
            snprintf(wrote, wn, "%s", done);
    }
    else if (!rc)
        rc = nth_tr_write_json(files, n, out, fmt == 2, 0, NULL, 0);
    for (int i = 0; i < loaded; i++)
        nth_tr_free(&files[i]);
    free(files);
    struct stat st;
    if (!rc && fmt == 1 && warn && stat(out, &st) == 0 && (uint64_t)st.st_size > limit)
        fprintf(warn, "%s: trace: %s is %" PRIu64 " bytes of plain JSON, past NTH_TRACE_JSON_MAX (%" PRIu64
                      " bytes): Perfetto's UI may not load it; %s.gz is about 20 times smaller (a name without "
                      "a suffix picks it past the limit), .prv is Paraver's\n",
                nth_tr_msg_prefix, out, (uint64_t)st.st_size, limit, out);
    if (warnings)
        *warnings = w;
    return rc;
}

int nth_trace_convert(const char *const *bins, int n, const char *out, FILE *warn, unsigned *warnings,
                      const char **failed)
{
    return nth_trace_convert_to(bins, n, out, warn, warnings, failed, NULL, 0);
}
