/*
 * trace_convert.c -- binary files in, the format named by the output suffix
 * out. Used at exit by libnth and by `nth-trace convert|merge`.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "trace_convert.h"

static int ends(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n > m && strcmp(s + n - m, suf) == 0;
}

int nth_trace_convert(const char *const *bins, int n, const char *out, FILE *warn, unsigned *warnings,
                      const char **failed)
{
    if (failed)
        *failed = out;
    int fmt = ends(out, ".json.gz") ? 2 : ends(out, ".json") ? 1 : ends(out, ".prv") ? 3 : 0;
    if (!fmt || n < 1)
        return EINVAL;
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
    if (!rc)
        rc = fmt == 3 ? nth_tr_write_prv(files, n, out) : nth_tr_write_json(files, n, out, fmt == 2);
    for (int i = 0; i < loaded; i++)
        nth_tr_free(&files[i]);
    free(files);
    if (warnings)
        *warnings = w;
    return rc;
}
