/*
 * trace_out.c -- buffered plain/gzip text output for the trace writers.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "trace_out.h"
#include "trace_text.h"

int nth_out_open(struct nth_out *o, const char *path, int gz)
{
    o->fp = NULL;
    o->gz = NULL;
    o->err = 0;
    o->n = 0;
    o->written = 0;
    o->gz_above = 0;
    snprintf(o->path, sizeof o->path, "%s", path);
    if (gz) {
        o->gz = gzopen(path, "wb6");
        return o->gz ? 0 : (errno ? errno : ENOMEM);
    }
    o->fp = fopen(path, "w");
    return o->fp ? 0 : errno;
}

/* zlib says Z_ERRNO when the file's write(2) failed: errno has why. */
static int gz_errno(gzFile gz)
{
    int e = errno, zerr = Z_OK;
    gzerror(gz, &zerr);
    if (zerr == Z_ERRNO && e)
        return e;
    return zerr == Z_MEM_ERROR ? ENOMEM : EIO;
}

int nth_out_open_auto(struct nth_out *o, const char *path, uint64_t gz_above)
{
    if (strlen(path) + 4 > sizeof o->path)
        return ENAMETOOLONG;
    int rc = nth_out_open(o, path, 0);
    o->gz_above = gz_above;
    return rc;
}

/* The plain file grew past gz_above: its text so far goes to path.gz,
 * which takes over. On an error the plain file stays (nth_out_close
 * removes it) and o->err says why. */
static void to_gzip(struct nth_out *o)
{
    o->gz_above = 0;
    static char plain[sizeof o->path];   /* exit() may run on a nano-thread's small stack */
    memcpy(plain, o->path, sizeof plain);
    if (fflush(o->fp)) {
        o->err = errno ? errno : EIO;
        return;
    }
    FILE *in = fopen(plain, "rb");
    strcat(o->path, ".gz");
    errno = 0;
    gzFile gz = in ? gzopen(o->path, "wb6") : NULL;
    if (!gz) {
        o->err = errno ? errno : ENOMEM;
        if (in)
            fclose(in);
        memcpy(o->path, plain, sizeof plain);
        return;
    }
    static char chunk[1 << 16];   /* o->buf holds the pending text; one converter at a time */
    size_t k;
    while (!o->err && (k = fread(chunk, 1, sizeof chunk, in)) > 0)
        if (gzwrite(gz, chunk, (unsigned)k) != (int)k)
            o->err = gz_errno(gz);
    if (!o->err && ferror(in))
        o->err = EIO;
    fclose(in);
    fclose(o->fp);
    o->fp = NULL;
    o->gz = gz;       /* closed (and on an error removed) by nth_out_close */
    unlink(plain);
}

static void flush(struct nth_out *o)
{
    if (!o->n || o->err) {
        o->n = 0;
        return;
    }
    if (o->gz_above && o->written + o->n > o->gz_above)
        to_gzip(o);
    if (o->err) {
        o->n = 0;
        return;
    }
    o->written += o->n;
    errno = 0;
    if (o->gz) {
        if (gzwrite(o->gz, o->buf, (unsigned)o->n) != (int)o->n)
            o->err = gz_errno(o->gz);
    } else if (fwrite(o->buf, 1, o->n, o->fp) != o->n) {
        o->err = errno ? errno : EIO;
    }
    o->n = 0;
}

void nth_out_printf(struct nth_out *o, const char *fmt, ...)
{
    if (sizeof o->buf - o->n < 4096)
        flush(o);
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(o->buf + o->n, sizeof o->buf - o->n, fmt, ap);
    va_end(ap);
    if (k < 0) {
        o->err = EINVAL;
        return;
    }
    if ((size_t)k >= sizeof o->buf - o->n) {   /* longer than the room left: never here,
                                                   every line is < 1 KiB plus one name */
        o->err = EOVERFLOW;
        return;
    }
    o->n += (size_t)k;
}

void nth_out_write(struct nth_out *o, const char *s, size_t n)
{
    while (n) {
        if (o->n == sizeof o->buf)
            flush(o);
        size_t k = sizeof o->buf - o->n < n ? sizeof o->buf - o->n : n;
        memcpy(o->buf + o->n, s, k);
        o->n += k;
        s += k;
        n -= k;
    }
}

void nth_out_json_str(struct nth_out *o, const char *s)
{
    if (sizeof o->buf - o->n < 4096)
        flush(o);
    char *p = o->buf + o->n;
    *p++ = '"';
    p = nth_tr_json_escape(p, s, 512);
    *p++ = '"';
    o->n = (size_t)(p - o->buf);
}

int nth_out_close(struct nth_out *o)
{
    flush(o);
    if (o->gz) {
        errno = 0;
        int zrc = gzclose(o->gz);   /* the file is gone: errno is all there is */
        if (zrc != Z_OK && !o->err)
            o->err = zrc == Z_ERRNO && errno ? errno : zrc == Z_MEM_ERROR ? ENOMEM : EIO;
    } else if (o->fp) {
        if (fclose(o->fp) && !o->err)
            o->err = errno ? errno : EIO;
    }
    if (o->err && (o->gz || o->fp))
        unlink(o->path);
    o->gz = NULL;
    o->fp = NULL;
    return o->err;
}
