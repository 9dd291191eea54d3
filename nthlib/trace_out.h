/*
 * trace_out.h -- buffered text output to a plain or gzip (zlib) file, for the
 * trace writers. Internal.
 */
#ifndef NTH_TRACE_OUT_H
#define NTH_TRACE_OUT_H

#include <stdint.h>
#include <stdio.h>
#include <zlib.h>

struct nth_out {
    FILE *fp;
    gzFile gz;
    int err;                     /* first error (errno value), sticky */
    char path[4096];             /* removed by nth_out_close on an error */
    uint64_t written;            /* bytes handed to the file (uncompressed) */
    uint64_t gz_above;           /* nth_out_open_auto: switch to gzip past it, 0 = never */
    size_t n;
    char buf[1 << 16];
};

/* Open `path` for writing, gzip-compressed if gz. Returns 0 or errno. */
int nth_out_open(struct nth_out *o, const char *path, int gz);
/* Open `path` for plain writing; once more than gz_above bytes are written,
 * the text so far moves into `path`.gz, which then takes the rest, and
 * `path` is removed: a small output stays readable as it is, a big one is
 * stored compressed, decided by its exact size without writing it twice
 * (the first gz_above bytes are read back once). o->path names the file
 * in use (its final name after nth_out_close). Returns 0 or errno;
 * ENAMETOOLONG if path.gz does not fit o->path. */
int nth_out_open_auto(struct nth_out *o, const char *path, uint64_t gz_above);
void nth_out_printf(struct nth_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n bytes of s as they are (any length). */
void nth_out_write(struct nth_out *o, const char *s, size_t n);
/* A JSON string literal with quotes, escaping what JSON requires. */
void nth_out_json_str(struct nth_out *o, const char *s);
/* Flush and close; returns the first error seen (the errno of the failed
 * write, e.g. ENOSPC, also through zlib), or 0. On an error the file is
 * removed: a cut-off trace (often 0 bytes on a full disk) opens in no
 * viewer and only hid that it was not written. */
int nth_out_close(struct nth_out *o);

#endif
