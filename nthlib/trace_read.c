/*
 * trace_read.c -- loading a binary trace file without trusting it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace_convert.h"

const char *nth_tr_msg_prefix = "nth-trace";
int nth_tr_no_end_ok;

static void warnf(struct nth_tr_file *f, FILE *warn, const char *fmt, ...)
{
    f->warnings++;
    if (!warn || f->warnings > 20)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(warn, "%s: warning: %s: ", nth_tr_msg_prefix, f->path);
    vfprintf(warn, fmt, ap);
    fputc('\n', warn);
    va_end(ap);
}

static const char *const builtin_states[] = { "IDLE", "RUN", "READY", "SYNCH", "BLOCKED", "OVERHEAD" };

const char *nth_tr_state_builtin(unsigned state)
{
    return state < sizeof builtin_states / sizeof builtin_states[0] ? builtin_states[state] : NULL;
}

static const char *const obj_kinds[] = { "object", "mutex", "condvar", "barrier", "rwlock", "semaphore",
                                         "join", "once", "team barrier", "team join", "sleep", "team idle" };

const char *nth_tr_obj_kind_name(unsigned kind)
{
    return kind < sizeof obj_kinds / sizeof obj_kinds[0] ? obj_kinds[kind] : obj_kinds[0];
}

const char *nth_tr_obj_label(const struct nth_tr_file *f, unsigned kind, uint64_t obj, char *buf, size_t n)
{
    if (kind == NTH_OBJ_JOIN) {
        const char *tn = nth_tr_name(f, NTH_NAME_THREAD, obj, 0);
        snprintf(buf, n, "join %s #%llu", tn ? tn : "nano-thread", (unsigned long long)obj);
        return buf;
    }
    if (kind == NTH_OBJ_SLEEP || kind == NTH_OBJ_TEAM_IDLE) {   /* no object: the kind says it all */
        snprintf(buf, n, "%s", nth_tr_obj_kind_name(kind));
        return buf;
    }
    const char *on = nth_tr_name(f, NTH_NAME_OBJECT, obj, 0);
    if (on && kind)
        snprintf(buf, n, "%s %s", nth_tr_obj_kind_name(kind), on);
    else if (on)
        snprintf(buf, n, "%s", on);
    else
        snprintf(buf, n, "%s 0x%llx", nth_tr_obj_kind_name(kind), (unsigned long long)obj);
    return buf;
}

static int name_cmp(const void *a, const void *b)
{
    const struct nth_tr_name *x = a, *y = b;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    if (x->key2 != y->key2) return x->key2 < y->key2 ? -1 : 1;
    return 0;
}

static int name_cmp_seq(const void *a, const void *b)
{
    int c = name_cmp(a, b);
    if (c)
        return c;
    const struct nth_tr_name *x = a, *y = b;
    return x->seq > y->seq ? -1 : x->seq < y->seq;
}

const char *nth_tr_name(const struct nth_tr_file *f, uint16_t kind, uint64_t key, uint64_t key2)
{
    struct nth_tr_name k = { kind, key, key2, NULL, 0 };
    const struct nth_tr_name *n = f->nnames ? bsearch(&k, f->names, f->nnames, sizeof k, name_cmp) : NULL;
    return n ? n->name : NULL;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33;
    return x;
}

struct nth_tr_thread *nth_tr_thread(struct nth_tr_file *f, uint64_t id)
{
    if (!id || !f->hash)
        return NULL;
    for (size_t i = mix(id) & f->hmask;; i = (i + 1) & f->hmask) {
        size_t v = f->hash[i];
        if (!v)
            return NULL;
        if (f->threads[v - 1].id == id)
            return &f->threads[v - 1];
    }
}

static int thread_add(struct nth_tr_file *f, uint64_t id, size_t *cap)
{
    if (!id || id == UINT64_MAX || nth_tr_thread(f, id))
        return 0;
    if ((f->nthreads + 1) * 2 > f->hmask + 1) {   /* grow the table */
        size_t nm = f->hmask ? (f->hmask + 1) * 2 : 64;
        size_t *h = calloc(nm, sizeof *h);
        if (!h)
            return ENOMEM;
        free(f->hash);
        f->hash = h;
        f->hmask = nm - 1;
        for (size_t t = 0; t < f->nthreads; t++) {
            size_t i = mix(f->threads[t].id) & f->hmask;
            while (h[i]) i = (i + 1) & f->hmask;
            h[i] = t + 1;
        }
    }
    if (f->nthreads == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        struct nth_tr_thread *t = realloc(f->threads, nc * sizeof *t);
        if (!t)
            return ENOMEM;
        f->threads = t;
        *cap = nc;
    }
    struct nth_tr_thread *t = &f->threads[f->nthreads];
    memset(t, 0, sizeof *t);
    t->id = id;
    t->index = (unsigned)++f->nthreads;
    t->vp = -1;
    size_t i = mix(id) & f->hmask;
    while (f->hash[i]) i = (i + 1) & f->hmask;
    f->hash[i] = f->nthreads;
    return 0;
}

/* Stable merge sort by timestamp: records of one VP keep their order.
 * Bottom-up; each merge copies the shorter of its two runs into tmp (at
 * most n / 2 records) and merges forward or backward into place, and runs
 * already in order are left as they are: a 10 M-record file took a second
 * full copy of its records (320 MB) and a whole-array copy per pass. */
static void sort_recs(struct nth_trace_rec *a, struct nth_trace_rec *tmp, size_t n)
{
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo + w < n; lo += 2 * w) {
            size_t mid = lo + w, hi = lo + 2 * w < n ? lo + 2 * w : n;
            if (a[mid - 1].ts <= a[mid].ts)
                continue;   /* in order already */
            if (mid - lo <= hi - mid) {   /* left run to tmp, merge forward */
                size_t nl = mid - lo, i = 0, j = mid, k = lo;
                memcpy(tmp, a + lo, nl * sizeof *a);
                while (i < nl && j < hi) a[k++] = a[j].ts < tmp[i].ts ? a[j++] : tmp[i++];
                while (i < nl) a[k++] = tmp[i++];
            } else {                      /* right run to tmp, merge backward */
                size_t nr = hi - mid, i = mid, j = nr, k = hi;
                memcpy(tmp, a + mid, nr * sizeof *a);
                while (i > lo && j > 0) a[--k] = tmp[j - 1].ts < a[i - 1].ts ? a[--i] : tmp[--j];
                while (j > 0) a[--k] = tmp[--j];
            }
        }
    }
}

int nth_tr_load(const char *path, struct nth_tr_file *f, FILE *warn)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    FILE *in = fopen(path, "rb");
    if (!in)
        return errno;
    /* Each refusal says what is wrong with the file, once: "(version 1)"
     * then strerror(EINVAL) was all /etc/passwd got. */
    const char *why = NULL;
    if (fread(&f->hdr, sizeof f->hdr, 1, in) != 1)
        why = ferror(in) ? NULL : "not an nthlib trace (shorter than a trace header)";
    else if (memcmp(f->hdr.magic, NTH_TRACE_MAGIC, 8))
        why = "not an nthlib trace (bad magic)";
    if (!why && !ferror(in) && (f->hdr.version != NTH_TRACE_VERSION ||
                                f->hdr.record_size != sizeof(struct nth_trace_rec))) {
        fclose(in);
        if (warn)
            fprintf(warn, "%s: %s: an nthlib trace of format version %u with %u-byte records; "
                    "this build reads version %u with %zu-byte records\n", nth_tr_msg_prefix, path,
                    f->hdr.version, f->hdr.record_size, NTH_TRACE_VERSION, sizeof(struct nth_trace_rec));
        return EINVAL;
    }
    if (why || ferror(in)) {
        int e = ferror(in) ? (errno ? errno : EIO) : EINVAL;
        fclose(in);
        if (warn && why)
            fprintf(warn, "%s: %s: %s\n", nth_tr_msg_prefix, path, why);
        return e;
    }
    f->hdr.host[sizeof f->hdr.host - 1] = 0;
    size_t cap = 0, n = 0;
    struct nth_trace_rec *all = NULL;
    for (;;) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 4096;
            struct nth_trace_rec *r = realloc(all, nc * sizeof *r);
            if (!r) { free(all); fclose(in); return ENOMEM; }
            all = r;
            cap = nc;
        }
        size_t want = (cap - n) * sizeof *all;
        size_t got = fread((char *)(all + n), 1, want, in);
        n += got / sizeof *all;
        if (got < want) {
            if (got % sizeof *all)
                warnf(f, warn, "file ends inside a record (truncated); the partial record is ignored");
            break;
        }
    }
    fclose(in);
    f->nfile = n;

    /* Names first, in file order; timed records are compacted in place. */
    size_t ncap = 0, tcap = 0, nt = 0;
    uint64_t start = f->hdr.mono_start_ns;
    unsigned bad_type = 0, bad_vp = 0, bad_ts = 0;
    for (size_t i = 0; i < n; i++) {
        struct nth_trace_rec r = all[i];
        if (r.type == NTH_REC_NAME) {
            uint32_t len = r.arg & 0xffff, kind = r.arg >> 16;
            size_t payload = (len + sizeof r - 1) / sizeof r;
            if (len > NTH_TRACE_NAME_MAX || kind < NTH_NAME_THREAD || kind > NTH_NAME_APP ||
                payload > n - i - 1) {
                warnf(f, warn, "record %zu: bad name record (kind %u, length %u); rest of file skipped", i, kind, len);
                break;
            }
            if (f->nnames == ncap) {
                size_t nc = ncap ? ncap * 2 : 64;
                struct nth_tr_name *nn = realloc(f->names, nc * sizeof *nn);
                if (!nn) { free(all); nth_tr_free(f); return ENOMEM; }
                f->names = nn;
                ncap = nc;
            }
            char *s = malloc(len + 1);
            if (!s) { free(all); nth_tr_free(f); return ENOMEM; }
            memcpy(s, &all[i + 1], len);
            s[len] = 0;
            for (char *c = s; *c; c++)   /* names reach JSON and Paraver text */
                if ((unsigned char)*c < 0x20) *c = ' ';
            f->names[f->nnames] = (struct nth_tr_name){ (uint16_t)kind, r.id, r.value, s, f->nnames };
            f->nnames++;
            i += payload;
            continue;
        }
        if (r.type < NTH_REC_VP_START || r.type > NTH_REC_TYPE_MAX) { bad_type++; continue; }
        if (r.vp != NTH_TRACE_NO_VP && (r.vp & ~NTH_TRACE_LOAN_VP) >= NTH_TRACE_MAX_VPS) { bad_vp++; continue; }
        if ((r.type == NTH_REC_VP_START || r.type == NTH_REC_VP_STOP) && r.value >= NTH_TRACE_MAX_VPS) { bad_vp++; continue; }
        if (r.type == NTH_REC_COUNTER && r.arg == NTH_CTR_RQ_LEN && r.id >= NTH_TRACE_MAX_VPS) { bad_vp++; continue; }
        if (r.ts < start || r.ts - start > 1000000ull * 1000000000ull) { bad_ts++; continue; }
        all[nt++] = r;
    }
    int ended = 0;
    for (size_t i = 0; i < nt; i++)
        if (all[i].type == NTH_REC_END) ended = 1;
    if (f->hdr.flags & NTH_TRACE_FLAG_WRITE_ERROR)   /* the writer's own word on why records are missing */
        warnf(f, warn, "writing this file failed during the run (%s): the records from then on are missing "
                       "(the process's exit line counted them as lost)%s",
              strerror((int)NTH_TRACE_FLAG_ERRNO(f->hdr.flags)), ended ? "" : ", the end record too");
    else if (!ended && !nth_tr_no_end_ok)
        warnf(f, warn, "no end record: the process was killed or left through _exit() or a crash; "
                       "records after its last flush are missing");
    if (bad_type) warnf(f, warn, "%u records of unknown type skipped", bad_type);
    if (bad_vp) warnf(f, warn, "%u records with a VP out of range skipped", bad_vp);
    if (bad_ts) warnf(f, warn, "%u records with a timestamp outside the trace skipped", bad_ts);
    /* Later registrations win: sort by key, then newest first, keep the first. */
    if (f->nnames) {
        qsort(f->names, f->nnames, sizeof *f->names, name_cmp_seq);
        size_t w = 0;
        for (size_t i = 0; i < f->nnames; i++) {
            if (w && name_cmp(&f->names[w - 1], &f->names[i]) == 0) { free(f->names[i].name); continue; }
            f->names[w++] = f->names[i];
        }
        f->nnames = w;
    }
    struct nth_trace_rec *tmp = malloc((nt / 2 + 1) * sizeof *tmp);   /* sort_recs: the shorter run */
    if (!tmp) { free(all); nth_tr_free(f); return ENOMEM; }
    sort_recs(all, tmp, nt);
    free(tmp);
    f->recs = all;
    f->nrecs = nt;
    f->first_ts = nt ? all[0].ts : start;
    f->last_ts = nt ? all[nt - 1].ts : start;
    f->nvps = 1;
    for (size_t i = 0; i < nt; i++) {
        struct nth_trace_rec *r = &all[i];
        unsigned vp = r->vp == NTH_TRACE_NO_VP ? r->vp : r->vp & ~NTH_TRACE_LOAN_VP;
        if (r->type == NTH_REC_VP_START || r->type == NTH_REC_VP_STOP) vp = (unsigned)r->value;
        if (r->type == NTH_REC_COUNTER && r->arg == NTH_CTR_RQ_LEN) vp = (unsigned)r->id;
        if (vp < NTH_TRACE_MAX_VPS && vp + 1 > f->nvps) f->nvps = vp + 1;
        if (r->type == NTH_REC_LOST) f->lost += r->value;
        if (r->type != NTH_REC_COUNTER && r->type != NTH_REC_VP_START && r->type != NTH_REC_VP_STOP &&
            r->type != NTH_REC_LOST && r->type != NTH_REC_END) {
            int e = thread_add(f, r->id, &tcap);
            if (!e && r->type == NTH_REC_SWITCH) e = thread_add(f, r->value, &tcap);
            if (e) { nth_tr_free(f); return e; }
        }
    }
    return 0;
}

void nth_tr_free(struct nth_tr_file *f)
{
    for (size_t i = 0; i < f->nnames; i++)
        free(f->names[i].name);
    free(f->names);
    free(f->recs);
    free(f->threads);
    free(f->hash);
    f->names = NULL; f->recs = NULL; f->threads = NULL; f->hash = NULL;
    f->nnames = f->nrecs = f->nthreads = 0;
}
