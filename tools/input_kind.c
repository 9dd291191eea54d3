/*
 * input_kind.c -- what nth-trace says when it is given a file the runtime
 * wrote for a viewer instead of the binary trace it reads.
 *
 * `NTH_TRACE=run.json.gz ./app` leaves run.json.gz (converted) and the
 * binary run.json.gz.PID.bin it came from; nth-trace reads only the .bin.
 * Handed run.json.gz, the loader's answer was "not an nthlib trace (bad
 * magic)" -- true, and no help for a trace nthlib wrote itself.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include "input_kind.h"

/* The format of the first bytes: gzip's magic, a JSON object, Paraver's
 * header or its .pcf / .row companions; NULL for anything else (the
 * loader then judges it, a .bin included). */
static const char *viewer_kind(const unsigned char *b, size_t n)
{
    if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b)
        return "a gzip file (a .json.gz trace)";
    size_t i = 0;
    while (i < n && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r'))
        i++;
    if (i < n && b[i] == '{')
        return "a JSON trace";
    if (n >= 8 && !memcmp(b, "#Paraver", 8))
        return "a Paraver trace (.prv)";
    if (n >= 15 && !memcmp(b, "DEFAULT_OPTIONS", 15))
        return "a Paraver configuration (.pcf)";
    if (n >= 6 && !memcmp(b, "LEVEL ", 6))
        return "a Paraver names file (.row)";
    return NULL;
}

int nth_trace_viewer_file(const char *path, FILE *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;   /* the caller reports what cannot be read */
    unsigned char b[16];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    const char *kind = viewer_kind(b, n);
    if (!kind)
        return 0;
    /* The runtime's own binary files beside it: PATH.PID.bin. */
    const char *slash = strrchr(path, '/');
    char dir[4096];
    const char *base = slash ? slash + 1 : path;
    size_t dl = slash ? (size_t)(slash - path) : 0;
    if (dl >= sizeof dir)
        dl = 0;
    if (slash && dl == 0)
        strcpy(dir, "/");
    else if (slash) {
        memcpy(dir, path, dl);
        dir[dl] = 0;
    } else
        strcpy(dir, ".");
    fprintf(err, "nth-trace: %s: %s, not the binary trace nth-trace reads: give it the "
                 "PATH.PID.bin the runtime wrote beside it", path, kind);
    unsigned found = 0;
    DIR *d = opendir(dir);
    size_t bl = strlen(base);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t el = strlen(e->d_name);
        if (el > bl + 5 && !strncmp(e->d_name, base, bl) && e->d_name[bl] == '.' &&
            !strcmp(e->d_name + el - 4, ".bin") && strspn(e->d_name + bl + 1, "0123456789") == el - bl - 5) {
            /* the directory as the user wrote it ("/" stays "/", not "//") */
            fprintf(err, "%s%.*s%s", found++ ? ", " : " (here: ", (int)(slash ? slash - path + 1 : 0), path, e->d_name);
        }
    }
    if (d)
        closedir(d);
    fprintf(err, "%s\n", found ? ")" : " (none found here)");
    return 1;
}
