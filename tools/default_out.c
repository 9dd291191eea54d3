/*
 * default_out.c -- where `nth-trace convert BIN` writes without -o: the name
 * the runtime would have written (PATH for PATH.PID.bin), never over
 * another process's trace. The rule is in default_out.h and nth-trace(1).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "default_out.h"
#include "trace_convert.h"

static int ends(const char *s, size_t n, const char *suf)
{
    size_t m = strlen(suf);
    return n > m && !strncmp(s + n - m, suf, m);
}

/* The JSON writer puts "processes":[{"pid":P,"real_start_ns":R}] in the
 * otherData at the file's start: ours if it names exactly this process.
 * gzread reads a plain file as it is. */
static int json_is(const char *path, const struct nth_trace_file_header *h)
{
    gzFile g = gzopen(path, "rb");
    if (!g)
        return 0;
    static __thread char buf[65536];
    int k = gzread(g, buf, sizeof buf - 1);
    gzclose(g);
    if (k <= 0)
        return 0;
    buf[k] = 0;
    char want[128];
    snprintf(want, sizeof want, "\"processes\":[{\"pid\":%" PRIu32 ",\"real_start_ns\":%" PRIu64 "}]", h->pid,
             h->real_start_ns);
    return strstr(buf, want) != NULL;
}

/* A .prv holds no pid: its header has the start to the minute (local
 * time, as the writer prints it) and its .row names the pid of every
 * nano-thread. Both must match, and the .row name no other pid. */
static int prv_is(const char *path, const struct nth_trace_file_header *h)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256], want[64];
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    time_t secs = (time_t)(h->real_start_ns / 1000000000u);
    struct tm tm;
    localtime_r(&secs, &tm);
    snprintf(want, sizeof want, "#Paraver (%02d/%02d/%02d at %02d:%02d):", tm.tm_mday, tm.tm_mon + 1,
             tm.tm_year % 100, tm.tm_hour, tm.tm_min);
    if (!ok || strncmp(line, want, strlen(want)))
        return 0;
    size_t n = strlen(path);
    char *row = malloc(n + 1);
    if (!row)
        return 0;
    memcpy(row, path, n - 4);
    strcpy(row + n - 4, ".row");
    f = fopen(row, "r");
    free(row);
    if (!f)
        return 0;
    int mine = 0, other = 0;
    while (fgets(line, sizeof line, f)) {
        char *p = strstr(line, " pid ");
        if (!p)
            continue;
        if (strtoul(p + 5, NULL, 10) == h->pid)
            mine = 1;
        else
            other = 1;
    }
    fclose(f);
    return mine && !other;
}

/* Is name (a convert output) free to write: absent, or this file's own? */
static int free_for(const char *name, const struct nth_trace_file_header *h, int have)
{
    size_t n = strlen(name);
    if (nth_trace_name_auto(name)) {   /* name.json or name.json.gz, whichever comes */
        char *j = malloc(n + 9);
        if (!j)
            return 0;
        sprintf(j, "%s.json", name);
        int ok = free_for(j, h, have);
        strcat(j, ".gz");
        ok = ok && free_for(j, h, have);
        free(j);
        return ok;
    }
    if (access(name, F_OK))
        return 1;
    if (!have)
        return 0;
    return ends(name, n, ".prv") ? prv_is(name, h) : json_is(name, h);
}

int nth_trace_default_out(const char *bin, char *out, size_t n, FILE *err)
{
    size_t len = strlen(bin);
    if (ends(bin, len, ".bin"))
        len -= 4;
    /* PATH.PID: digits after the last dot, in the file name */
    size_t d = len;
    while (d > 0 && bin[d - 1] >= '0' && bin[d - 1] <= '9')
        d--;
    int runtime_name = d < len && d > 1 && bin[d - 1] == '.' && bin[d - 2] != '/';
    if (runtime_name) {
        size_t plen = d - 1;
        if (plen + 1 > n)
            return ENAMETOOLONG;
        memcpy(out, bin, plen);
        out[plen] = 0;
        const char *base = strrchr(out, '/');
        base = base ? base + 1 : out;
        runtime_name = *base && (ends(out, plen, ".json") || ends(out, plen, ".json.gz") || ends(out, plen, ".prv") ||
                                 nth_trace_name_auto(out));
    }
    if (!runtime_name) {   /* NAME.bin: NAME.json.gz, as always */
        if (len + 9 > n)
            return ENAMETOOLONG;
        memcpy(out, bin, len);
        strcpy(out + len, ".json.gz");
    }
    struct nth_trace_file_header h;
    int have = 0;
    FILE *f = fopen(bin, "rb");
    if (f) {
        have = fread(&h, sizeof h, 1, f) == 1 && !memcmp(h.magic, NTH_TRACE_MAGIC, sizeof h.magic);
        fclose(f);
    }
    if (!have || free_for(out, &h, have))   /* !have: the converter says what is wrong with bin */
        return 0;
    /* Someone else's trace is there: PATH with .PID before the suffix. */
    static const char *const sufs[] = { ".json.gz", ".json", ".prv" };
    size_t olen = strlen(out), keep = olen;
    for (size_t i = 0; i < sizeof sufs / sizeof sufs[0]; i++)
        if (ends(out, olen, sufs[i])) {
            keep = olen - strlen(sufs[i]);
            break;
        }
    char pid[24];
    snprintf(pid, sizeof pid, ".%" PRIu32, h.pid);
    if (olen + strlen(pid) + 1 > n)
        return ENAMETOOLONG;
    char *taken = strdup(out);
    if (!taken)
        return ENOMEM;
    memmove(out + keep + strlen(pid), out + keep, olen - keep + 1);
    memcpy(out + keep, pid, strlen(pid));
    if (!free_for(out, &h, have)) {
        fprintf(err, "nth-trace: %s and %s exist and hold other traces; give -o OUT to name the output\n", taken,
                out);
        free(taken);
        return EEXIST;
    }
    fprintf(err, "nth-trace: %s holds another process's trace (kept); writing %s\n", taken, out);
    free(taken);
    return 0;
}
