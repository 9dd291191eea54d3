/*
 * trace_json.c -- Chrome trace-event JSON, as Perfetto's UI and
 * chrome://tracing load it ("Trace Event Format": X complete events, i
 * instant events, C counter events, M metadata).
 *
 * Every slice is one X event, "ts" its begin and "dur" its length: the
 * converter sees the whole run, and a slice still open where the records
 * stop (a crash, a kill) is closed at the last timestamp by the replay, as
 * it was when slices were B/E pairs. One object a slice instead of two
 * halves the JSON (bench/RESULTS.md "trbig"). Since X events are written
 * at their begin, in begin order, and the replay closes slices on one
 * track innermost first, a child always ends before its parent ends
 * (tests/trace/check_json.jq checks it). The end of each slice comes from
 * a first replay of the file (slice_ends): 8 bytes a slice.
 *
 * Tracks, per process (pid = the traced process): tid 1+v is VP v, showing
 * which nano-thread runs; tid 8192+4i is nano-thread i (index of first
 * appearance) with its states; tid 8193+4i its parallel regions, nested;
 * tid 8194+4i its function probes, nested (a track of their own, so that a
 * state change inside a function never breaks the nesting).
 * Timed events are written in timestamp order across all tracks and all
 * files (nth_tr_write_json), so timestamps never go backwards, on a track
 * or in the file; ts is microseconds since the earliest trace start with
 * three decimals, i.e. exact nanoseconds.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "trace_convert.h"
#include "trace_out.h"
#include "trace_text.h"

/* A timed event waiting for its turn: sorted by (ts, seq), seq being the
 * order the replays reported them in. */
struct pend {
    uint64_t ts, seq;
    char *text;
    size_t len;
};

/* The end time of every slice of one file, in the order the replay begins
 * them. While a slice is open its slot holds the track's previous open
 * slice + 1 (a stack threaded through the array), then its end. */
struct slice_ends {
    uint64_t *end;
    size_t n, cap;
    size_t *top;                 /* per track: open slice + 1, 0 = none */
    size_t ntracks;
    size_t next;                 /* the second replay: next slice to begin */
};

struct jctx {
    struct nth_out o;
    struct slice_ends *se;       /* the file being replayed */
    uint64_t base;
    long pid;
    int first;
    int nomem;                   /* an event could not be kept: ENOMEM */
    /* the event being written */
    char *cur;
    size_t cur_len, cur_cap;
    int cur_open;
    uint64_t cur_ts, seq;
    /* no event reported from now on is earlier: one up to it is written at
     * once (those in the heap up to it were released first) */
    uint64_t direct;
    /* events written, not yet released: a binary min-heap */
    struct pend *heap;
    size_t hn, hcap;
};

#define VP_TID(v) (1 + (long)(v))
#define THREAD_TID(t) (8192 + 4 * (long)(t)->index)
#define REGION_TID(t) (8193 + 4 * (long)(t)->index)
#define FUNC_TID(t) (8194 + 4 * (long)(t)->index)

static void sep(struct jctx *j)
{
    nth_out_printf(&j->o, j->first ? "\n" : ",\n");
    j->first = 0;
}

static int cur_room(struct jctx *j, size_t more)
{
    if (j->cur_len + more < j->cur_cap)
        return 1;
    size_t nc = j->cur_cap ? j->cur_cap : 1024;
    while (nc <= j->cur_len + more)
        nc *= 2;
    char *c = realloc(j->cur, nc);
    if (!c) {
        j->nomem = 1;
        return 0;
    }
    j->cur = c;
    j->cur_cap = nc;
    return 1;
}

__attribute__((format(printf, 2, 3))) static void jp(struct jctx *j, const char *fmt, ...)
{
    if (!cur_room(j, 1024))   /* every piece fits, unless a name is long */
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(j->cur + j->cur_len, j->cur_cap - j->cur_len, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= j->cur_cap - j->cur_len) {
        if (k < 0 || !cur_room(j, (size_t)k + 1))
            return;
        va_start(ap, fmt);
        vsnprintf(j->cur + j->cur_len, j->cur_cap - j->cur_len, fmt, ap);
        va_end(ap);
    }
    j->cur_len += (size_t)k;
}

/* A JSON string literal, escaped as nth_out_json_str does (trace_text.h:
 * valid UTF-8 whatever the name holds). */
static void jstr(struct jctx *j, const char *s)
{
    size_t n = strnlen(s, 512);
    if (!cur_room(j, 6 * n + 3))
        return;
    char *p = j->cur + j->cur_len;
    *p++ = '"';
    p = nth_tr_json_escape(p, s, n);
    *p++ = '"';
    *p = 0;
    j->cur_len = (size_t)(p - j->cur);
}

static int pend_less(const struct pend *a, const struct pend *b)
{
    return a->ts < b->ts || (a->ts == b->ts && a->seq < b->seq);
}

/* The event being written joins the heap. */
static void pend_push(struct jctx *j)
{
    if (!j->cur_open)
        return;
    j->cur_open = 0;
    size_t len = j->cur_len;
    j->cur_len = 0;
    if (j->nomem)
        return;
    if (j->cur_ts <= j->direct) {   /* the common case: no copy, no heap */
        sep(j);
        nth_out_write(&j->o, j->cur, len);
        return;
    }
    if (j->hn == j->hcap) {
        size_t nc = j->hcap ? j->hcap * 2 : 256;
        struct pend *h = realloc(j->heap, nc * sizeof *h);
        if (!h) { j->nomem = 1; return; }
        j->heap = h;
        j->hcap = nc;
    }
    char *t = malloc(len + 1);
    if (!t) { j->nomem = 1; return; }
    memcpy(t, j->cur, len);
    struct pend e = { j->cur_ts, j->seq++, t, len };
    size_t i = j->hn++;
    while (i > 0 && pend_less(&e, &j->heap[(i - 1) / 2])) {
        j->heap[i] = j->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    j->heap[i] = e;
}

/* Write, in (ts, seq) order, every pending event with ts <= upto: no event
 * reported later sorts before them. */
static void release(struct jctx *j, uint64_t upto)
{
    while (j->hn && j->heap[0].ts <= upto) {
        struct pend top = j->heap[0], last = j->heap[--j->hn];
        size_t i = 0;
        for (;;) {
            size_t c = 2 * i + 1;
            if (c >= j->hn) break;
            if (c + 1 < j->hn && pend_less(&j->heap[c + 1], &j->heap[c])) c++;
            if (!pend_less(&j->heap[c], &last)) break;
            j->heap[i] = j->heap[c];
            i = c;
        }
        if (j->hn)
            j->heap[i] = last;
        sep(j);
        nth_out_write(&j->o, top.text, top.len);
        free(top.text);
    }
}

/* Tracks of one file, as slice_ends indexes them: VP v, then per
 * nano-thread its states, regions and functions. */
static size_t track_vp(unsigned vp) { return vp; }
static size_t track_of(const struct nth_tr_file *f, const struct nth_tr_thread *t, unsigned which)
{
    return f->nvps + 3 * (size_t)(t->index - 1) + which;
}

static void se_begin(struct slice_ends *e, size_t track)
{
    if (!e->end)
        return;
    if (e->n == e->cap) {
        size_t nc = e->cap * 2;
        uint64_t *a = realloc(e->end, nc * sizeof *a);
        if (!a) {
            free(e->end);   /* the caller sees end == NULL: ENOMEM */
            e->end = NULL;
            return;
        }
        e->end = a;
        e->cap = nc;
    }
    if (track >= e->ntracks) {   /* no such track (a guard): a slot all the same, so the */
        e->end[e->n++] = 0;        /* second replay stays in step; it shows with dur 0 */
        return;
    }
    e->end[e->n] = e->top[track];
    e->top[track] = ++e->n;
}

static void se_end(struct slice_ends *e, size_t track, uint64_t ts)
{
    if (!e->end || track >= e->ntracks || !e->top[track])
        return;
    size_t s = e->top[track] - 1;
    e->top[track] = (size_t)e->end[s];
    e->end[s] = ts;
}

static void p_state_begin(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, const struct nth_tr_level *l)
{
    (void)ts; (void)l;
    se_begin(c, track_of(f, t, 0));
}
static void p_state_end(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, const struct nth_tr_level *l)
{
    (void)l;
    se_end(c, track_of(f, t, 0), ts);
}
static void p_run_begin(void *c, struct nth_tr_file *f, uint64_t ts, unsigned vp, struct nth_tr_thread *t)
{
    (void)f; (void)ts; (void)t;
    se_begin(c, track_vp(vp));
}
static void p_run_end(void *c, struct nth_tr_file *f, uint64_t ts, uint64_t since, unsigned vp, struct nth_tr_thread *t)
{
    (void)f; (void)since; (void)t;
    se_end(c, track_vp(vp), ts);
}
static void p_region_begin(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, uint64_t region,
                           unsigned team, unsigned member)
{
    (void)ts; (void)region; (void)team; (void)member;
    se_begin(c, track_of(f, t, 1));
}
static void p_region_end(void *c, struct nth_tr_file *f, uint64_t ts, uint64_t since, struct nth_tr_thread *t, uint64_t region)
{
    (void)since; (void)region;
    se_end(c, track_of(f, t, 1), ts);
}
static void p_func_begin(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, uint64_t fn)
{
    (void)ts; (void)fn;
    se_begin(c, track_of(f, t, 2));
}
static void p_func_end(void *c, struct nth_tr_file *f, uint64_t ts, uint64_t since, struct nth_tr_thread *t, uint64_t fn)
{
    (void)since; (void)fn;
    se_end(c, track_of(f, t, 2), ts);
}

/* The first replay of f: the end of every slice. 0 or ENOMEM. A slice the
 * replay left open (it closes them all; a guard, not a case) ends at
 * f->last_ts. */
static int slice_ends_find(struct nth_tr_file *f, struct slice_ends *e)
{
    memset(e, 0, sizeof *e);
    e->ntracks = f->nvps + 3 * f->nthreads;
    e->cap = f->nrecs / 2 + 16;
    e->end = malloc(e->cap * sizeof *e->end);
    e->top = calloc(e->ntracks ? e->ntracks : 1, sizeof *e->top);
    static const struct nth_tr_sink pre = {
        NULL, p_state_begin, p_state_end, p_run_begin, p_run_end, p_region_begin, p_region_end,
        NULL, NULL, NULL, p_func_begin, p_func_end,
    };
    struct nth_tr_sink s = pre;
    s.ctx = e;
    struct nth_tr_replay *p = e->end && e->top ? nth_tr_replay_open(f, &s) : NULL;
    if (!p) {
        free(e->end);
        free(e->top);
        e->end = NULL;
        e->top = NULL;
        return ENOMEM;
    }
    while (e->end && nth_tr_replay_step(p))
        ;
    nth_tr_replay_close(p);
    if (e->end)
        for (size_t t = 0; t < e->ntracks; t++)
            while (e->top[t])
                se_end(e, t, f->last_ts);
    free(e->top);
    e->top = NULL;
    return e->end ? 0 : ENOMEM;
}

/* The second replay: the end of the slice that begins now (at ts). */
static uint64_t slice_end(struct jctx *j, uint64_t ts)
{
    struct slice_ends *e = j->se;
    uint64_t end = e && e->next < e->n ? e->end[e->next++] : ts;
    return end > ts ? end : ts;
}

/* A timed event: its text goes to a pending buffer until every event that
 * sorts before it has been written (release). */
static void ev(struct jctx *j, const char *ph, uint64_t ts, long tid)
{
    pend_push(j);
    j->cur_open = 1;
    j->cur_ts = ts;
    uint64_t d = ts - j->base;
    jp(j, "{\"ph\":\"%s\",\"ts\":%" PRIu64 ".%03u,\"pid\":%ld,\"tid\":%ld", ph,
       d / 1000, (unsigned)(d % 1000), j->pid, tid);
}

/* A slice beginning at ts: an X event with its duration (exact ns, as ts). */
static void ev_x(struct jctx *j, uint64_t ts, long tid)
{
    uint64_t dur = slice_end(j, ts) - ts;
    ev(j, "X", ts, tid);
    jp(j, ",\"dur\":%" PRIu64 ".%03u", dur / 1000, (unsigned)(dur % 1000));
}

static const char *state_name(struct nth_tr_file *f, unsigned st, char *buf, size_t n)
{
    const char *s = nth_tr_state_builtin(st);
    if (!s) s = nth_tr_name(f, NTH_NAME_STATE, st, 0);
    if (!s) { snprintf(buf, n, "state %u", st); s = buf; }
    return s;
}

static const char *thread_name(struct nth_tr_file *f, struct nth_tr_thread *t, char *buf, size_t n)
{
    const char *s = nth_tr_name(f, NTH_NAME_THREAD, t->id, 0);
    snprintf(buf, n, "%s #%" PRIu64, s ? s : "nano-thread", t->id);
    return buf;
}

static void j_state_begin(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, const struct nth_tr_level *l)
{
    struct jctx *j = c;
    char b[48], full[400];
    const char *s = state_name(f, l->state, b, sizeof b);
    ev_x(j, ts, THREAD_TID(t));
    jp(j, ",\"cat\":\"state\",\"name\":");
    if (l->obj || l->kind) {   /* kind alone: a wait named by its kind (team idle, sleep) */
        char lab[320], addr[24];
        nth_tr_obj_label(f, l->kind, l->obj, lab, sizeof lab);
        snprintf(addr, sizeof addr, "0x%" PRIx64, l->obj);
        snprintf(full, sizeof full, "%s %s", s, lab);
        jstr(j, full);
        jp(j, ",\"args\":{\"state\":");
        jstr(j, s);
        jp(j, ",\"object\":");
        jstr(j, lab);
        if (l->kind) {
            jp(j, ",\"kind\":");
            jstr(j, nth_tr_obj_kind_name(l->kind));
        }
        if (l->kind == NTH_OBJ_JOIN)
            jp(j, ",\"nano_thread\":%" PRIu64 "}}", l->obj);
        else if (l->kind == NTH_OBJ_SLEEP || l->kind == NTH_OBJ_TEAM_IDLE)
            jp(j, "}}");
        else
            jp(j, ",\"address\":\"%s\"}}", addr);
    } else {   /* the name is the state: an args.state would repeat it */
        jstr(j, s);
        jp(j, "}");
    }
}

static void j_run_begin(void *c, struct nth_tr_file *f, uint64_t ts, unsigned vp, struct nth_tr_thread *t)
{
    struct jctx *j = c;
    char b[300];
    ev_x(j, ts, VP_TID(vp));
    jp(j, ",\"cat\":\"vp\",\"name\":");
    jstr(j, t ? thread_name(f, t, b, sizeof b) : "IDLE");
    if (t)
        jp(j, ",\"args\":{\"nano_thread\":%" PRIu64 "}", t->id);
    jp(j, "}");
}

static void j_region_begin(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, uint64_t region, unsigned team,
                           unsigned member)
{
    (void)f;
    struct jctx *j = c;
    ev_x(j, ts, REGION_TID(t));
    jp(j, ",\"cat\":\"region\",\"name\":\"parallel region %" PRIu64 "\",\"args\":{\"region\":%" PRIu64
                   ",\"member\":%u,\"team\":%u}}", region, region, member, team);
}

static void j_event(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, int vp, uint32_t type, uint64_t value)
{
    struct jctx *j = c;
    const char *tn = nth_tr_name(f, NTH_NAME_EVENT, type, 0);
    const char *vn = nth_tr_name(f, NTH_NAME_VALUE, type, value);
    char b[32];
    if (!tn) { snprintf(b, sizeof b, "event %u", type); tn = b; }
    ev(j, "i", ts, t ? THREAD_TID(t) : VP_TID(vp < 0 ? 0 : vp));
    jp(j, ",\"s\":\"t\",\"cat\":\"event\",\"name\":");
    jstr(j, tn);
    jp(j, ",\"args\":{\"type\":%u,\"value\":%" PRIu64, type, value);
    if (vn) {
        jp(j, ",\"value_name\":");
        jstr(j, vn);
    }
    jp(j, "}}");
}

static void j_counter(void *c, struct nth_tr_file *f, uint64_t ts, uint32_t kind, int vp, uint64_t value)
{
    struct jctx *j = c;
    ev(j, "C", ts, 0);
    if (kind == NTH_CTR_GRANT) {
        /* One counter track per application on the daemon's process. */
        const char *an = nth_tr_name(f, NTH_NAME_APP, (uint64_t)vp, 0);
        char b[320];
        snprintf(b, sizeof b, "CPUs granted to %s (pid %d)", an ? an : "application", vp);
        jp(j, ",\"name\":");
        jstr(j, b);
        jp(j, ",\"args\":{\"cpus\":%" PRIu64 "}}", value);
    } else if (kind == NTH_CTR_RQ_LEN)
        jp(j, ",\"name\":\"ready queue VP %d\",\"args\":{\"length\":%" PRIu64 "}}", vp, value);
    else if (kind == NTH_CTR_CPUS)
        jp(j, ",\"name\":\"CPUs assigned\",\"args\":{\"cpus\":%" PRIu64 "}}", value);
    else if (kind == NTH_CTR_MEM_BYTES)
        jp(j, ",\"name\":\"malloc bytes in use\",\"args\":{\"bytes\":%" PRIu64 "}}", value);
    else if (kind == NTH_CTR_MEM_CALLS)
        jp(j, ",\"name\":\"malloc calls\",\"args\":{\"calls\":%" PRIu64 "}}", value);
    else
        jp(j, ",\"name\":\"counter %u\",\"args\":{\"value\":%" PRIu64 "}}", kind, value);
}

static void j_func_begin(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, uint64_t fn)
{
    struct jctx *j = c;
    const char *n = nth_tr_name(f, NTH_NAME_FUNCTION, fn, 0);
    char b[24];
    if (!n) { snprintf(b, sizeof b, "0x%" PRIx64, fn); n = b; }
    /* The most frequent slice of a probed run, so the shortest: no "cat"
     * (its track says "functions") and no args.address (an unresolved
     * name is the address itself). */
    ev_x(j, ts, FUNC_TID(t));
    jp(j, ",\"name\":");
    jstr(j, n);
    jp(j, "}");
}

static void j_lost(void *c, struct nth_tr_file *f, uint64_t ts, uint64_t count)
{
    (void)f;
    struct jctx *j = c;
    ev(j, "i", ts, 0);
    jp(j, ",\"s\":\"p\",\"cat\":\"trace\",\"name\":\"lost events\",\"args\":{\"count\":%" PRIu64 "}}", count);
}

/* A binary file cut by a write error (a full disk): the LOST record that
 * would have counted what is missing could not be written either, so the
 * header's flag is all the trace has; shown where the records stop. */
static void j_cut(struct jctx *j, struct nth_tr_file *f)
{
    ev(j, "i", f->last_ts, 0);
    jp(j, ",\"s\":\"p\",\"cat\":\"trace\",\"name\":\"records missing: write error\",\"args\":{\"error\":");
    jstr(j, strerror((int)NTH_TRACE_FLAG_ERRNO(f->hdr.flags)));
    jp(j, ",\"missing\":\"writing the binary trace failed here; the events from then on are not in this trace "
          "and not in lost_events (the process's exit line counted them)\"}}");
}

static void meta(struct jctx *j, long tid, const char *what, const char *name, long sort)
{
    sep(j);
    nth_out_printf(&j->o, "{\"ph\":\"M\",\"pid\":%ld,\"tid\":%ld,\"name\":\"%s\",\"args\":{\"name\":", j->pid, tid, what);
    nth_out_json_str(&j->o, name);
    nth_out_printf(&j->o, "}}");
    if (sort >= 0) {
        sep(j);
        nth_out_printf(&j->o, "{\"ph\":\"M\",\"pid\":%ld,\"tid\":%ld,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%ld}}",
                       j->pid, tid, sort);
    }
}

/* The processes' tracks are named first (metadata has no time), then every
 * timed event of every file in one timestamp order: the replays advance
 * together, the one with the earliest next record first (a k-way merge of
 * files already sorted by time; ties in file order), and each event waits
 * in a heap only until no replay can report an earlier one (a switch's
 * OVERHEAD slice is dated before its record). Memory: the loaded records,
 * 8 bytes a slice (its end, from a first replay) and the events of that
 * overlap window, never the whole output. Sorted by ts, stable: each track
 * keeps its order, so a parent slice precedes the children that begin
 * with it. */
int nth_tr_write_json(struct nth_tr_file *files, int n, const char *out, int gz, uint64_t gz_above, char *wrote,
                      size_t wn)
{
    static struct jctx j;   /* 64 KiB buffer: not on a crashing stack */
    memset(&j, 0, sizeof j);
    long *pids = calloc((size_t)(n > 0 ? n : 1), sizeof *pids);
    struct nth_tr_replay **rp = calloc((size_t)(n > 0 ? n : 1), sizeof *rp);
    struct slice_ends *ses = calloc((size_t)(n > 0 ? n : 1), sizeof *ses);
    int nomem = !pids || !rp || !ses;
    for (int i = 0; !nomem && i < n; i++)   /* the first replay: where each slice ends */
        nomem = slice_ends_find(&files[i], &ses[i]) != 0;
    if (nomem) {
        for (int i = 0; ses && i < n; i++)
            free(ses[i].end);
        free(ses);
        free(pids);
        free(rp);
        return ENOMEM;
    }
    int rc = gz || !gz_above ? nth_out_open(&j.o, out, gz) : nth_out_open_auto(&j.o, out, gz_above);
    if (rc) {
        for (int i = 0; i < n; i++)
            free(ses[i].end);
        free(ses);
        free(pids);
        free(rp);
        return rc;
    }
    j.first = 1;
    j.base = UINT64_MAX;
    uint64_t lost = 0;
    unsigned warnings = 0;
    for (int i = 0; i < n; i++) {
        if (files[i].hdr.mono_start_ns < j.base) j.base = files[i].hdr.mono_start_ns;
        lost += files[i].lost;
        warnings += files[i].warnings;
    }
    nth_out_printf(&j.o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"nthlib\",\"lost_events\":%" PRIu64
                   ",\"warnings\":%u", lost, warnings);
    /* Processes whose binary file was cut by a write error: their loss is
     * in no LOST record, so lost_events is short of it. */
    int cut = 0;
    for (int i = 0; i < n; i++)
        if (files[i].hdr.flags & NTH_TRACE_FLAG_WRITE_ERROR) {
            nth_out_printf(&j.o, "%s{\"pid\":%u,\"error\":", cut++ ? "," : ",\"write_errors\":[", files[i].hdr.pid);
            nth_out_json_str(&j.o, strerror((int)NTH_TRACE_FLAG_ERRNO(files[i].hdr.flags)));
            nth_out_printf(&j.o, "}");
        }
    /* Which processes' records these are (pid and trace start): nth-trace
     * convert without -o replaces an existing output only when it is the
     * same process's trace (tools/default_out.c reads this back). */
    nth_out_printf(&j.o, "%s,\"processes\":[", cut ? "]" : "");
    for (int i = 0; i < n; i++)
        nth_out_printf(&j.o, "%s{\"pid\":%" PRIu32 ",\"real_start_ns\":%" PRIu64 "}", i ? "," : "", files[i].hdr.pid,
                       files[i].hdr.real_start_ns);
    nth_out_printf(&j.o, "]},\"traceEvents\":[");
    static const struct nth_tr_sink sink = {   /* ends are in the begins' dur */
        NULL, j_state_begin, NULL, j_run_begin, NULL, j_region_begin, NULL,
        j_event, j_counter, j_lost, j_func_begin, NULL,
    };
    struct nth_tr_sink s = sink;
    s.ctx = &j;
    for (int i = 0; i < n; i++) {
        struct nth_tr_file *f = &files[i];
        j.pid = (long)f->hdr.pid;
        for (int k = 0; k < i; k++)   /* a recycled pid must not merge two processes */
            if (files[k].hdr.pid == f->hdr.pid)
                j.pid += 4194304L * (i + 1);
        pids[i] = j.pid;
        char b[320];
        snprintf(b, sizeof b, "%s %u", f->hdr.flags & NTH_TRACE_FLAG_CPUMGR ? "cpumgr daemon" : "nthlib process",
                 f->hdr.pid);
        meta(&j, 0, "process_name", b, -1);
        for (unsigned v = 0; v < f->nvps; v++) {
            snprintf(b, sizeof b, "VP %u", v);
            meta(&j, VP_TID(v), "thread_name", b, (long)v);
        }
        /* A nano-thread's regions and functions tracks are named only when
         * they will hold a slice: a named track shows in Perfetto even when
         * empty, and without probes every nano-thread had two of them. */
        unsigned char *used = calloc(f->nthreads ? f->nthreads : 1, 1);
        if (!used) {
            j.nomem = 1;
            break;
        }
        for (size_t r = 0; r < f->nrecs; r++) {
            unsigned type = f->recs[r].type, bit = type == NTH_REC_REGION_BEGIN || type == NTH_REC_REGION_END ? 1
                                                : type == NTH_REC_FUNC_ENTER || type == NTH_REC_FUNC_EXIT ? 2 : 0;
            struct nth_tr_thread *th = bit ? nth_tr_thread(f, f->recs[r].id) : NULL;
            if (th && th->index >= 1 && th->index <= f->nthreads)
                used[th->index - 1] |= (unsigned char)bit;
        }
        for (size_t t = 0; t < f->nthreads; t++) {
            struct nth_tr_thread *th = &f->threads[t];
            char nb[300];
            thread_name(f, th, nb, sizeof nb);
            meta(&j, THREAD_TID(th), "thread_name", nb, 10000 + 4 * (long)th->index);
            if (used[th->index - 1] & 1) {
                snprintf(b, sizeof b, "%s regions", nb);
                meta(&j, REGION_TID(th), "thread_name", b, 10001 + 4 * (long)th->index);
            }
            if (used[th->index - 1] & 2) {
                snprintf(b, sizeof b, "%s functions", nb);
                meta(&j, FUNC_TID(th), "thread_name", b, 10002 + 4 * (long)th->index);
            }
        }
        free(used);
        if (!(rp[i] = nth_tr_replay_open(f, &s)))
            j.nomem = 1;
    }
    while (!j.nomem) {
        int next = -1;
        uint64_t nts = UINT64_MAX;
        for (int i = 0; i < n; i++) {
            uint64_t t = nth_tr_replay_next_ts(rp[i]);
            if (t != UINT64_MAX && (next < 0 || t < nts)) {
                next = i;
                nts = t;
            }
        }
        if (next < 0)
            break;
        uint64_t low = UINT64_MAX;
        for (int i = 0; i < n; i++) {
            uint64_t l = nth_tr_replay_low(rp[i]);
            if (l < low) low = l;
        }
        release(&j, low);
        j.direct = low;
        j.pid = pids[next];
        j.se = &ses[next];
        nth_tr_replay_step(rp[next]);
        if ((files[next].hdr.flags & NTH_TRACE_FLAG_WRITE_ERROR) && nth_tr_replay_next_ts(rp[next]) == UINT64_MAX)
            j_cut(&j, &files[next]);   /* after its last slice closed */
        pend_push(&j);
    }
    release(&j, UINT64_MAX);
    for (int i = 0; i < n; i++)
        nth_tr_replay_close(rp[i]);
    while (j.hn)
        free(j.heap[--j.hn].text);
    free(j.heap);
    free(j.cur);
    for (int i = 0; i < n; i++)
        free(ses[i].end);
    free(ses);
    free(pids);
    free(rp);
    j.se = NULL;
    j.heap = NULL;
    j.cur = NULL;
    j.hcap = j.cur_cap = 0;
    nth_out_printf(&j.o, "\n]}\n");
    rc = nth_out_close(&j.o);
    out = j.o.path;   /* out, or out.gz if it grew past gz_above */
    if (wrote && wn)
        snprintf(wrote, wn, "%s", out);
    if (j.nomem && !rc) {
        unlink(out);   /* an incomplete trace hides what is missing */
        rc = ENOMEM;
    }
    return rc;
}
