/*
 * trace_prv.c -- Paraver output: FILE.prv (records), FILE.pcf (names of
 * states, event types and values), FILE.row (names of CPUs, node, threads).
 *
 * Mapping: one Paraver application per traced process, one task per
 * application, one Paraver thread per nano-thread (in order of first
 * appearance), one Paraver CPU per VP. Records:
 *   1:cpu:appl:task:thread:begin:end:state     one per state slice
 *   2:cpu:appl:task:thread:time:type:value     events
 * A cpumgr daemon's file (cpumgr --trace, merged) is one more application:
 * each grant is an EV_GRANT_APP (the pid) and EV_GRANT (the CPUs) pair on
 * its thread 1, and also an EV_GRANT on thread 1 of the application with
 * that pid when it is in the same merge, beside that application's own
 * EV_CPUS (what its runtime was told).
 * Times are ns from the trace start; the header's duration is the last
 * record's time and its object counts are exactly those used by the records.
 * Paraver keeps every object of the .row in memory and its thread field is
 * bounded, so at most NTH_PRV_MAX_THREADS nano-threads per process are kept;
 * the records of the others are dropped and counted in a warning.
 *
 * Memory: the .prv is sorted by time (a state record by its begin), but a
 * state record is known only when its slice ends, so records cannot be
 * written as the replay makes them. Holding all of them (56 bytes each, an
 * array doubled as it grew) took 955 MiB for 10 M events. They are
 * collected in chunks of PRV_CHUNK records; a full chunk is sorted and
 * appended to one unlinked temporary file (tmpfile(3)) as a run, and the
 * runs are merged into the .prv at the end (a heap over the runs' heads,
 * read ahead with pread(2) within PRV_MERGE_BYTES for all runs): bounded
 * memory and one file descriptor, the same bytes as the in-memory sort (the
 * order is total: time, then the order made).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include "trace_convert.h"
#include "trace_out.h"
#include "trace_text.h"

#define NTH_PRV_MAX_THREADS 32768u

#define EV_RUNNING 60000001u   /* value: trace id of the nano-thread now running */
#define EV_REGION  60000002u   /* value: region number, 0 = outside */
#define EV_OBJECT  60000003u   /* value: address of the synchronisation object, 0 = none */
#define EV_OBJKIND 60000004u   /* value: enum nth_trace_obj_kind of that object, 0 = none */
#define EV_MEMBER  60000005u   /* value: member index + 1 in the region entered, 0 = outside */
#define EV_TEAM    60000006u   /* value: team size of the region entered, 0 = outside */
#define EV_FUNC    60000020u   /* value: address of the function entered, 0 = none */
#define EV_CPUS    60000011u   /* CPUs assigned, as the runtime's cpumgr client saw it */
#define EV_GRANT   60000014u   /* CPUs granted by the cpumgr daemon (cpumgr --trace) */
#define EV_GRANT_APP 60000015u /* value: pid of the application the grant beside it is for */
#define EV_MEM     60000012u   /* malloc bytes in use */
#define EV_MEMCALL 60000013u   /* malloc calls so far */
#define EV_LOST    60000099u
#define EV_RQ_BASE 60000100u   /* + VP: ready-queue length of that VP */

struct pe {
    uint64_t t0, t1, a, b, seq;
    uint32_t kind, cpu, appl, thread;
};

#define PRV_CHUNK ((size_t)1 << 18)   /* records sorted in memory at once: 14 MiB */
#define PRV_READ 4096                  /* at most, records read ahead per run when merging */
#define PRV_MERGE_BYTES ((size_t)16 << 20)   /* read-ahead of all runs together, at most */

struct pctx {
    struct pe *v;
    size_t n, cap;
    uint64_t seq;                    /* records made so far: the tie-break */
    size_t chunk;                    /* PRV_CHUNK, or NTH_TEST_PRV_CHUNK's (tests) */
    FILE *tmp;                       /* the sorted chunks spilled so far, one after the other */
    uint64_t *run_len;               /* records of each run, in file order */
    size_t nruns;
    int spill_err;                   /* errno of a failed spill, 0 if none */
    uint64_t base, dropped;
    uint32_t appl;
    struct nth_tr_file *files;       /* all of the merge, to find a pid's application */
    int nfiles;
    int oom;
    unsigned char used_state[NTH_TRACE_STATE_MAX + 1];
    uint32_t *types; size_t ntypes, ctypes;
};

static int pe_cmp(const void *a, const void *b)
{
    const struct pe *x = a, *y = b;
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The chunk in p->v, sorted, to a temporary file of its own; p->v empty
 * again. A failure is kept in spill_err (the conversion then fails with
 * it) and the records are dropped: the output would be incomplete anyway. */
static void spill(struct pctx *p)
{
    if (!p->n)
        return;
    qsort(p->v, p->n, sizeof *p->v, pe_cmp);
    if (!p->spill_err) {
        errno = 0;
        uint64_t *r = realloc(p->run_len, (p->nruns + 1) * sizeof *r);
        if (r)
            p->run_len = r;
        if (r && !p->tmp)
            p->tmp = tmpfile();
        if (!r || !p->tmp || fwrite(p->v, sizeof *p->v, p->n, p->tmp) != p->n)
            p->spill_err = errno ? errno : EIO;
        else
            p->run_len[p->nruns++] = p->n;
    }
    p->n = 0;
}

static void add(struct pctx *p, uint32_t kind, uint32_t cpu, struct nth_tr_thread *t, uint64_t t0, uint64_t t1,
                uint64_t a, uint64_t b)
{
    uint32_t th = t ? t->index : 1;
    if (th > NTH_PRV_MAX_THREADS) { p->dropped++; return; }
    if (p->n == p->chunk)
        spill(p);
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 4096;
        struct pe *v = realloc(p->v, nc * sizeof *v);
        if (!v) { p->oom = 1; return; }
        p->v = v;
        p->cap = nc;
    }
    p->v[p->n] = (struct pe){ t0 - p->base, t1 - p->base, a, b, p->seq++, kind, cpu, p->appl, th };
    p->n++;
    if (kind == 1 && a <= NTH_TRACE_STATE_MAX)
        p->used_state[a] = 1;
    if (kind == 2) {
        for (size_t i = 0; i < p->ntypes; i++)
            if (p->types[i] == a) return;
        if (p->ntypes == p->ctypes) {
            size_t nc = p->ctypes ? p->ctypes * 2 : 32;
            uint32_t *ty = realloc(p->types, nc * sizeof *ty);
            if (!ty) { p->oom = 1; return; }
            p->types = ty;
            p->ctypes = nc;
        }
        p->types[p->ntypes++] = (uint32_t)a;
    }
}

static uint32_t cpu_of(struct nth_tr_thread *t) { return t && t->vp >= 0 ? (uint32_t)t->vp + 1 : 0; }

static void p_state_begin(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, const struct nth_tr_level *l)
{
    (void)f;
    if (l->obj) add(c, 2, cpu_of(t), t, ts, ts, EV_OBJECT, l->obj);
    if (l->kind) add(c, 2, cpu_of(t), t, ts, ts, EV_OBJKIND, l->kind);   /* also with no object: team idle, sleep */
}

static void p_state_end(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, const struct nth_tr_level *l)
{
    (void)f;
    if (ts > l->since) add(c, 1, cpu_of(t), t, l->since, ts, l->state, 0);
    if (l->obj) add(c, 2, cpu_of(t), t, ts, ts, EV_OBJECT, 0);
    if (l->kind) add(c, 2, cpu_of(t), t, ts, ts, EV_OBJKIND, 0);
}

static void p_run_begin(void *c, struct nth_tr_file *f, uint64_t ts, unsigned vp, struct nth_tr_thread *t)
{
    (void)f;
    if (t) add(c, 2, vp + 1, t, ts, ts, EV_RUNNING, t->id);
}

static void p_run_end(void *c, struct nth_tr_file *f, uint64_t ts, uint64_t since, unsigned vp, struct nth_tr_thread *t)
{
    (void)f; (void)since;
    if (t) add(c, 2, vp + 1, t, ts, ts, EV_RUNNING, 0);
}

static void p_region_begin(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, uint64_t region, unsigned team,
                           unsigned member)
{
    (void)f;
    add(c, 2, cpu_of(t), t, ts, ts, EV_REGION, region);
    add(c, 2, cpu_of(t), t, ts, ts, EV_MEMBER, (uint64_t)member + 1);
    add(c, 2, cpu_of(t), t, ts, ts, EV_TEAM, team);
}

static void p_region_end(void *c, struct nth_tr_file *f, uint64_t ts, uint64_t since, struct nth_tr_thread *t, uint64_t region)
{
    (void)f; (void)since; (void)region;
    /* Back to the enclosing region (the replay has already popped this one). */
    int in = t->rdepth > 0;
    add(c, 2, cpu_of(t), t, ts, ts, EV_REGION, in ? t->region[t->rdepth - 1] : 0);
    add(c, 2, cpu_of(t), t, ts, ts, EV_MEMBER, in ? (uint64_t)t->rmember[t->rdepth - 1] + 1 : 0);
    add(c, 2, cpu_of(t), t, ts, ts, EV_TEAM, in ? t->rteam[t->rdepth - 1] : 0);
}

static void p_event(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, int vp, uint32_t type, uint64_t value)
{
    (void)f;
    add(c, 2, t ? cpu_of(t) : (vp >= 0 ? (uint32_t)vp + 1 : 0), t, ts, ts, type, value);
}

static void p_counter(void *c, struct nth_tr_file *f, uint64_t ts, uint32_t kind, int vp, uint64_t value)
{
    (void)f;
    if (kind == NTH_CTR_RQ_LEN && vp >= 0)
        add(c, 2, (uint32_t)vp + 1, NULL, ts, ts, EV_RQ_BASE + (uint32_t)vp, value);
    else if (kind == NTH_CTR_CPUS)
        add(c, 2, 0, NULL, ts, ts, EV_CPUS, value);
    else if (kind == NTH_CTR_GRANT && vp > 0) {   /* vp holds the pid */
        struct pctx *p = c;
        add(c, 2, 0, NULL, ts, ts, EV_GRANT_APP, (uint64_t)vp);
        add(c, 2, 0, NULL, ts, ts, EV_GRANT, value);
        uint32_t self = p->appl;
        for (int i = 0; i < p->nfiles; i++)
            if (!(p->files[i].hdr.flags & NTH_TRACE_FLAG_CPUMGR) && p->files[i].hdr.pid == (uint32_t)vp) {
                p->appl = (uint32_t)i + 1;
                add(c, 2, 0, NULL, ts, ts, EV_GRANT, value);
                p->appl = self;
            }
    }
    else if (kind == NTH_CTR_MEM_BYTES)
        add(c, 2, 0, NULL, ts, ts, EV_MEM, value);
    else if (kind == NTH_CTR_MEM_CALLS)
        add(c, 2, 0, NULL, ts, ts, EV_MEMCALL, value);
}

static void p_lost(void *c, struct nth_tr_file *f, uint64_t ts, uint64_t count)
{
    (void)f;
    add(c, 2, 0, NULL, ts, ts, EV_LOST, count);
}

static void p_func_begin(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, uint64_t fn)
{
    (void)f;
    add(c, 2, cpu_of(t), t, ts, ts, EV_FUNC, fn);
}

static void p_func_end(void *c, struct nth_tr_file *f, uint64_t ts, uint64_t since, struct nth_tr_thread *t, uint64_t fn)
{
    (void)f; (void)since; (void)fn;
    add(c, 2, cpu_of(t), t, ts, ts, EV_FUNC, t->fdepth > 0 ? t->func[t->fdepth - 1] : 0);
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static const char *type_name(struct nth_tr_file *files, int n, uint32_t type, char *buf, size_t len)
{
    switch (type) {
    case EV_RUNNING: return "Nano-thread running (trace id)";
    case EV_REGION: return "Parallel region";
    case EV_OBJECT: return "Synchronisation object (address; join: trace id)";
    case EV_OBJKIND: return "Synchronisation object kind";
    case EV_MEMBER: return "Team member index + 1";
    case EV_TEAM: return "Team size";
    case EV_CPUS: return "CPUs assigned";
    case EV_GRANT: return "CPUs granted by cpumgr";
    case EV_GRANT_APP: return "cpumgr grant to application (pid)";
    case EV_MEM: return "malloc bytes in use";
    case EV_MEMCALL: return "malloc calls";
    case EV_LOST: return "Lost events";
    case EV_FUNC: return "Function (address)";
    default: break;
    }
    if (type >= EV_RQ_BASE && type < EV_RQ_BASE + NTH_TRACE_MAX_VPS) {
        snprintf(buf, len, "Ready-queue length VP %u", type - EV_RQ_BASE);
        return buf;
    }
    for (int i = 0; i < n; i++) {
        const char *s = nth_tr_name(&files[i], NTH_NAME_EVENT, type, 0);
        if (s) return s;
    }
    snprintf(buf, len, "User event %u", type);
    return buf;
}

static void put_pe(struct nth_out *o, const struct pe *e)
{
    if (e->kind == 1)
        nth_out_printf(o, "1:%u:%u:1:%u:%" PRIu64 ":%" PRIu64 ":%" PRIu64 "\n", e->cpu, e->appl, e->thread, e->t0, e->t1, e->a);
    else
        nth_out_printf(o, "2:%u:%u:1:%u:%" PRIu64 ":%" PRIu64 ":%" PRIu64 "\n", e->cpu, e->appl, e->thread, e->t0, e->a, e->b);
}

static void close_runs(struct pctx *p)
{
    if (p->tmp)
        fclose(p->tmp);
    p->tmp = NULL;
    free(p->run_len);
    p->run_len = NULL;
    p->nruns = 0;
}

/* One run being merged: its next records read ahead. */
struct run {
    int fd;
    off_t off;                 /* the file's next unread record of this run */
    uint64_t left;             /* records of the run not yet read */
    struct pe *buf;
    size_t cap, at, n;
};

/* r's head record in its buffer (*done: the run is over). Returns 0, or an
 * errno when the file cannot be read. */
static int run_fill(struct run *r, int *done)
{
    *done = 0;
    if (r->at < r->n)
        return 0;
    size_t want = r->left < r->cap ? (size_t)r->left : r->cap;
    r->at = r->n = 0;
    if (!want) {
        *done = 1;
        return 0;
    }
    size_t bytes = want * sizeof *r->buf, got = 0;
    while (got < bytes) {
        ssize_t k = pread(r->fd, (char *)r->buf + got, bytes - got, r->off + (off_t)got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? errno : EIO;   /* the file is ours: short means damaged */
        got += (size_t)k;
    }
    r->off += (off_t)bytes;
    r->left -= want;
    r->n = want;
    return 0;
}

static int run_less(const struct run *x, const struct run *y)
{
    return pe_cmp(&x->buf[x->at], &y->buf[y->at]) < 0;
}

/* The sorted runs merged into o: a binary heap of the runs by their head
 * record. Returns 0, ENOMEM, or the errno of a run that cannot be read. */
static int merge_runs(struct pctx *p, struct nth_out *o)
{
    size_t k = p->nruns, h = 0;
    struct run *rs = calloc(k, sizeof *rs);
    struct run **heap = calloc(k, sizeof *heap);
    int rc = rs && heap ? 0 : ENOMEM;
    if (!rc && fflush(p->tmp))
        rc = errno ? errno : EIO;
    /* Read-ahead shared out among the runs: memory stays bounded however
     * many runs a long trace makes. */
    size_t per = PRV_MERGE_BYTES / (k * sizeof(struct pe));
    per = per < 16 ? 16 : per > PRV_READ ? PRV_READ : per;
    off_t off = 0;
    for (size_t i = 0; !rc && i < k; i++) {
        rs[i].fd = fileno(p->tmp);
        rs[i].off = off;
        rs[i].left = p->run_len[i];
        off += (off_t)(p->run_len[i] * sizeof(struct pe));
        rs[i].cap = p->run_len[i] < per ? (size_t)p->run_len[i] : per;
        if (!(rs[i].buf = malloc((rs[i].cap ? rs[i].cap : 1) * sizeof *rs[i].buf))) {
            rc = ENOMEM;
            break;
        }
        int done;
        rc = run_fill(&rs[i], &done);
        if (!rc && !done) {   /* sift up */
            size_t c = h++;
            heap[c] = &rs[i];
            while (c && run_less(heap[c], heap[(c - 1) / 2])) {
                struct run *t = heap[c]; heap[c] = heap[(c - 1) / 2]; heap[(c - 1) / 2] = t;
                c = (c - 1) / 2;
            }
        }
    }
    while (!rc && h) {
        struct run *r = heap[0];
        put_pe(o, &r->buf[r->at++]);
        int done;
        rc = run_fill(r, &done);
        if (done)
            heap[0] = heap[--h];
        for (size_t c = 0;;) {   /* sift down */
            size_t l = 2 * c + 1, m = c;
            if (l < h && run_less(heap[l], heap[m])) m = l;
            if (l + 1 < h && run_less(heap[l + 1], heap[m])) m = l + 1;
            if (m == c) break;
            struct run *t = heap[c]; heap[c] = heap[m]; heap[m] = t;
            c = m;
        }
    }
    for (size_t i = 0; rs && i < k; i++)
        free(rs[i].buf);
    free(rs);
    free(heap);
    return rc;
}

static char *sibling(const char *out, const char *suffix)
{
    size_t n = strlen(out);
    char *p = malloc(n + strlen(suffix) + 1);
    if (!p) return NULL;
    memcpy(p, out, n - 4);   /* drop ".prv" */
    strcpy(p + n - 4, suffix);
    return p;
}

int nth_tr_write_prv(struct nth_tr_file *files, int n, const char *out)
{
    struct pctx p;
    memset(&p, 0, sizeof p);
    p.base = UINT64_MAX;
    p.files = files;
    p.nfiles = n;
    /* Tests make every few records a run, to check the merge against the
     * in-memory sort on small traces. */
    const char *tc = getenv("NTH_TEST_PRV_CHUNK");
    p.chunk = tc && atol(tc) > 0 ? (size_t)atol(tc) : PRV_CHUNK;
    unsigned ncpu = 1;
    uint64_t end = 0;
    for (int i = 0; i < n; i++) {
        if (files[i].hdr.mono_start_ns < p.base) p.base = files[i].hdr.mono_start_ns;
        if (files[i].nvps > ncpu) ncpu = files[i].nvps;
    }
    static const struct nth_tr_sink sink = {
        NULL, p_state_begin, p_state_end, p_run_begin, p_run_end, p_region_begin, p_region_end,
        p_event, p_counter, p_lost, p_func_begin, p_func_end,
    };
    struct nth_tr_sink s = sink;
    s.ctx = &p;
    for (int i = 0; i < n; i++) {
        p.appl = (uint32_t)i + 1;
        nth_tr_replay(&files[i], &s);
        if (files[i].last_ts - p.base > end) end = files[i].last_ts - p.base;
    }
    if (p.nruns && !p.oom)
        spill(&p);   /* the last chunk is a run too: everything merges */
    if (p.oom || p.spill_err) {
        int e = p.oom ? ENOMEM : p.spill_err;
        close_runs(&p);
        free(p.v);
        free(p.types);
        return e;
    }
    if (p.dropped)
        fprintf(stderr, "%s: warning: Paraver keeps %u nano-threads per process; %" PRIu64
                " records of the others dropped\n", nth_tr_msg_prefix, NTH_PRV_MAX_THREADS, p.dropped);
    if (!p.nruns)
        qsort(p.v, p.n, sizeof *p.v, pe_cmp);

    static struct nth_out o;   /* 64 KiB: kept off a crashing stack */
    int rc = nth_out_open(&o, out, 0);
    if (rc) { close_runs(&p); free(p.v); free(p.types); return rc; }
    time_t secs = (time_t)(files[0].hdr.real_start_ns / 1000000000u);
    struct tm tm;
    localtime_r(&secs, &tm);
    nth_out_printf(&o, "#Paraver (%02d/%02d/%02d at %02d:%02d):%" PRIu64 "_ns:1(%u):%d",
                   tm.tm_mday, tm.tm_mon + 1, tm.tm_year % 100, tm.tm_hour, tm.tm_min, end, ncpu, n);
    for (int i = 0; i < n; i++) {
        size_t nt = files[i].nthreads < NTH_PRV_MAX_THREADS ? files[i].nthreads : NTH_PRV_MAX_THREADS;
        nth_out_printf(&o, ":1(%zu:1)", nt ? nt : 1);
    }
    nth_out_printf(&o, "\n");
    int mrc = 0;
    if (p.nruns)
        mrc = merge_runs(&p, &o);
    else
        for (size_t i = 0; i < p.n; i++)
            put_pe(&o, &p.v[i]);
    close_runs(&p);
    rc = nth_out_close(&o);
    if (!rc && mrc) {
        unlink(out);
        rc = mrc;
    }
    free(p.v);
    if (rc) { free(p.types); return rc; }

    /* .pcf: every state and event type the records use, named. Names are
     * user text: one valid UTF-8 line each (trace_text.h). */
    char lb[1024];
    char *pcf = sibling(out, ".pcf"), *row = sibling(out, ".row");
    if (!pcf || !row) { free(pcf); free(row); free(p.types); return ENOMEM; }
    rc = nth_out_open(&o, pcf, 0);
    if (!rc) {
        nth_out_printf(&o, "DEFAULT_OPTIONS\n\nLEVEL               THREAD\nUNITS               NANOSEC\n"
                       "LOOK_BACK           100\nSPEED               1\nFLAG_ICONS          ENABLED\n"
                       "NUM_OF_STATE_COLORS 1000\nYMAX_SCALE          37\n\n\nDEFAULT_SEMANTIC\n\n"
                       "THREAD_FUNC          State As Is\n\n\nSTATES\n");
        static const char *const colors[] = { "{117,195,255}", "{0,0,255}", "{255,255,255}", "{255,0,0}",
                                              "{255,0,174}", "{179,0,0}" };
        for (unsigned st = 0; st <= NTH_TRACE_STATE_MAX; st++) {
            const char *nm = nth_tr_state_builtin(st);
            for (int i = 0; !nm && i < n; i++) nm = nth_tr_name(&files[i], NTH_NAME_STATE, st, 0);
            if (nm || p.used_state[st]) {
                if (nm) nth_out_printf(&o, "%-4u %s\n", st, nth_tr_text_line(nm, lb, sizeof lb));
                else nth_out_printf(&o, "%-4u State %u\n", st, st);
            }
        }
        nth_out_printf(&o, "\n\nSTATES_COLOR\n");
        for (unsigned st = 0; st < 6; st++)
            nth_out_printf(&o, "%-4u %s\n", st, colors[st]);
        qsort(p.types, p.ntypes, sizeof *p.types, u32_cmp);
        for (size_t k = 0; k < p.ntypes; k++) {
            char b[64];
            nth_out_printf(&o, "\n\nEVENT_TYPE\n0    %u    %s\n", p.types[k],
                           nth_tr_text_line(type_name(files, n, p.types[k], b, sizeof b), lb, sizeof lb));
            int header = 0;
            if (p.types[k] == EV_OBJKIND) {
                nth_out_printf(&o, "VALUES\n0    End\n");
                header = 1;
                for (unsigned kd = 1; kd <= NTH_OBJ_KIND_MAX; kd++)
                    nth_out_printf(&o, "%u    %s\n", kd, nth_tr_obj_kind_name(kd));
            }
            for (int i = 0; i < n; i++)
                for (size_t q = 0; q < files[i].nnames; q++) {
                    struct nth_tr_name *nm = &files[i].names[q];
                    if ((nm->kind == NTH_NAME_VALUE && nm->key == p.types[k]) ||
                        (nm->kind == NTH_NAME_OBJECT && p.types[k] == EV_OBJECT) ||
                        (nm->kind == NTH_NAME_APP && p.types[k] == EV_GRANT_APP) ||
                        (nm->kind == NTH_NAME_FUNCTION && p.types[k] == EV_FUNC)) {
                        if (!header++) nth_out_printf(&o, "VALUES\n0    End\n");
                        nth_out_printf(&o, "%" PRIu64 "    %s\n", nm->kind == NTH_NAME_VALUE ? nm->key2 : nm->key,
                                       nth_tr_text_line(nm->name, lb, sizeof lb));
                    }
                }
        }
        nth_out_printf(&o, "\n");
        rc = nth_out_close(&o);
    }
    /* .row: CPUs (= VPs), the node, then every thread of every application. */
    if (!rc) rc = nth_out_open(&o, row, 0);
    if (!rc) {
        nth_out_printf(&o, "LEVEL CPU SIZE %u\n", ncpu);
        for (unsigned v = 0; v < ncpu; v++) nth_out_printf(&o, "VP %u\n", v);
        nth_out_printf(&o, "\nLEVEL NODE SIZE 1\n%s\n", nth_tr_text_line(files[0].hdr.host[0] ? files[0].hdr.host : "node", lb, sizeof lb));
        size_t total = 0;
        for (int i = 0; i < n; i++) {
            size_t nt = files[i].nthreads < NTH_PRV_MAX_THREADS ? files[i].nthreads : NTH_PRV_MAX_THREADS;
            total += nt ? nt : 1;
        }
        nth_out_printf(&o, "\nLEVEL THREAD SIZE %zu\n", total);
        for (int i = 0; i < n; i++) {
            size_t nt = files[i].nthreads < NTH_PRV_MAX_THREADS ? files[i].nthreads : NTH_PRV_MAX_THREADS;
            if (!nt) nth_out_printf(&o, "(no nano-thread) pid %u\n", files[i].hdr.pid);
            for (size_t t = 0; t < nt; t++) {
                const char *nm = nth_tr_name(&files[i], NTH_NAME_THREAD, files[i].threads[t].id, 0);
                nth_out_printf(&o, "%s #%" PRIu64 " pid %u\n", nth_tr_text_line(nm ? nm : "nano-thread", lb, sizeof lb), files[i].threads[t].id, files[i].hdr.pid);
            }
        }
        rc = nth_out_close(&o);
    }
    if (rc)   /* a .prv without its .pcf and .row is no Paraver trace */
        unlink(out);
    free(pcf);
    free(row);
    free(p.types);
    return rc;
}
