/*
 * trace_json.c -- Chrome trace-event JSON, as Perfetto's UI and
 * chrome://tracing load it ("Trace Event Format": B/E duration events, i
 * instant events, C counter events, M metadata).
 *
 * Tracks, per process (pid = the traced process): tid 1+v is VP v, showing
 * which nano-thread runs; tid 8192+4i is nano-thread i (index of first
 * appearance) with its states; tid 8193+4i its parallel regions, nested;
 * tid 8194+4i its function probes, nested (a track of their own, so that a
 * state change inside a function never breaks the nesting).
 * Everything is written in timestamp order as the replay produces it, so
 * timestamps never go backwards on a track; ts is microseconds since the
 * earliest trace start with three decimals, i.e. exact nanoseconds.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include "trace_convert.h"
#include "trace_out.h"

struct jctx {
    struct nth_out o;
    uint64_t base;
    long pid;
    int first;
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

static void ev(struct jctx *j, const char *ph, uint64_t ts, long tid)
{
    sep(j);
    uint64_t d = ts - j->base;
    nth_out_printf(&j->o, "{\"ph\":\"%s\",\"ts\":%" PRIu64 ".%03u,\"pid\":%ld,\"tid\":%ld", ph,
                   d / 1000, (unsigned)(d % 1000), j->pid, tid);
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
    ev(j, "B", ts, THREAD_TID(t));
    nth_out_printf(&j->o, ",\"cat\":\"state\",\"name\":");
    if (l->obj) {
        char lab[320], addr[24];
        nth_tr_obj_label(f, l->kind, l->obj, lab, sizeof lab);
        snprintf(addr, sizeof addr, "0x%" PRIx64, l->obj);
        snprintf(full, sizeof full, "%s %s", s, lab);
        nth_out_json_str(&j->o, full);
        nth_out_printf(&j->o, ",\"args\":{\"state\":");
        nth_out_json_str(&j->o, s);
        nth_out_printf(&j->o, ",\"object\":");
        nth_out_json_str(&j->o, lab);
        if (l->kind) {
            nth_out_printf(&j->o, ",\"kind\":");
            nth_out_json_str(&j->o, nth_tr_obj_kind_name(l->kind));
        }
        if (l->kind == NTH_OBJ_JOIN)
            nth_out_printf(&j->o, ",\"nano_thread\":%" PRIu64 "}}", l->obj);
        else
            nth_out_printf(&j->o, ",\"address\":\"%s\"}}", addr);
    } else {
        nth_out_json_str(&j->o, s);
        nth_out_printf(&j->o, ",\"args\":{\"state\":");
        nth_out_json_str(&j->o, s);
        nth_out_printf(&j->o, "}}");
    }
}

static void j_state_end(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, const struct nth_tr_level *l)
{
    (void)f; (void)l;
    struct jctx *j = c;
    ev(j, "E", ts, THREAD_TID(t));
    nth_out_printf(&j->o, "}");
}

static void j_run_begin(void *c, struct nth_tr_file *f, uint64_t ts, unsigned vp, struct nth_tr_thread *t)
{
    struct jctx *j = c;
    char b[300];
    ev(j, "B", ts, VP_TID(vp));
    nth_out_printf(&j->o, ",\"cat\":\"vp\",\"name\":");
    nth_out_json_str(&j->o, t ? thread_name(f, t, b, sizeof b) : "IDLE");
    if (t)
        nth_out_printf(&j->o, ",\"args\":{\"nano_thread\":%" PRIu64 "}", t->id);
    nth_out_printf(&j->o, "}");
}

static void j_run_end(void *c, struct nth_tr_file *f, uint64_t ts, uint64_t since, unsigned vp, struct nth_tr_thread *t)
{
    (void)f; (void)since; (void)t;
    struct jctx *j = c;
    ev(j, "E", ts, VP_TID(vp));
    nth_out_printf(&j->o, "}");
}

static void j_region_begin(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, uint64_t region, unsigned team,
                           unsigned member)
{
    (void)f;
    struct jctx *j = c;
    ev(j, "B", ts, REGION_TID(t));
    nth_out_printf(&j->o, ",\"cat\":\"region\",\"name\":\"parallel region %" PRIu64 "\",\"args\":{\"region\":%" PRIu64
                   ",\"member\":%u,\"team\":%u}}", region, region, member, team);
}

static void j_region_end(void *c, struct nth_tr_file *f, uint64_t ts, uint64_t since, struct nth_tr_thread *t, uint64_t region)
{
    (void)f; (void)since; (void)region;
    struct jctx *j = c;
    ev(j, "E", ts, REGION_TID(t));
    nth_out_printf(&j->o, "}");
}

static void j_event(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, int vp, uint32_t type, uint64_t value)
{
    struct jctx *j = c;
    const char *tn = nth_tr_name(f, NTH_NAME_EVENT, type, 0);
    const char *vn = nth_tr_name(f, NTH_NAME_VALUE, type, value);
    char b[32];
    if (!tn) { snprintf(b, sizeof b, "event %u", type); tn = b; }
    ev(j, "i", ts, t ? THREAD_TID(t) : VP_TID(vp < 0 ? 0 : vp));
    nth_out_printf(&j->o, ",\"s\":\"t\",\"cat\":\"event\",\"name\":");
    nth_out_json_str(&j->o, tn);
    nth_out_printf(&j->o, ",\"args\":{\"type\":%u,\"value\":%" PRIu64, type, value);
    if (vn) {
        nth_out_printf(&j->o, ",\"value_name\":");
        nth_out_json_str(&j->o, vn);
    }
    nth_out_printf(&j->o, "}}");
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
        nth_out_printf(&j->o, ",\"name\":");
        nth_out_json_str(&j->o, b);
        nth_out_printf(&j->o, ",\"args\":{\"cpus\":%" PRIu64 "}}", value);
    } else if (kind == NTH_CTR_RQ_LEN)
        nth_out_printf(&j->o, ",\"name\":\"ready queue VP %d\",\"args\":{\"length\":%" PRIu64 "}}", vp, value);
    else if (kind == NTH_CTR_CPUS)
        nth_out_printf(&j->o, ",\"name\":\"CPUs assigned\",\"args\":{\"cpus\":%" PRIu64 "}}", value);
    else if (kind == NTH_CTR_MEM_BYTES)
        nth_out_printf(&j->o, ",\"name\":\"malloc bytes in use\",\"args\":{\"bytes\":%" PRIu64 "}}", value);
    else if (kind == NTH_CTR_MEM_CALLS)
        nth_out_printf(&j->o, ",\"name\":\"malloc calls\",\"args\":{\"calls\":%" PRIu64 "}}", value);
    else
        nth_out_printf(&j->o, ",\"name\":\"counter %u\",\"args\":{\"value\":%" PRIu64 "}}", kind, value);
}

static void j_func_begin(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, uint64_t fn)
{
    struct jctx *j = c;
    const char *n = nth_tr_name(f, NTH_NAME_FUNCTION, fn, 0);
    char b[24];
    if (!n) { snprintf(b, sizeof b, "0x%" PRIx64, fn); n = b; }
    ev(j, "B", ts, FUNC_TID(t));
    nth_out_printf(&j->o, ",\"cat\":\"function\",\"name\":");
    nth_out_json_str(&j->o, n);
    nth_out_printf(&j->o, ",\"args\":{\"address\":\"0x%" PRIx64 "\"}}", fn);
}

static void j_func_end(void *c, struct nth_tr_file *f, uint64_t ts, uint64_t since, struct nth_tr_thread *t, uint64_t fn)
{
    (void)f; (void)since; (void)fn;
    struct jctx *j = c;
    ev(j, "E", ts, FUNC_TID(t));
    nth_out_printf(&j->o, "}");
}

static void j_lost(void *c, struct nth_tr_file *f, uint64_t ts, uint64_t count)
{
    (void)f;
    struct jctx *j = c;
    ev(j, "i", ts, 0);
    nth_out_printf(&j->o, ",\"s\":\"p\",\"cat\":\"trace\",\"name\":\"lost events\",\"args\":{\"count\":%" PRIu64 "}}", count);
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

int nth_tr_write_json(struct nth_tr_file *files, int n, const char *out, int gz)
{
    static struct jctx j;   /* 64 KiB buffer: not on a crashing stack */
    memset(&j, 0, sizeof j);
    int rc = nth_out_open(&j.o, out, gz);
    if (rc)
        return rc;
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
                   ",\"warnings\":%u},\"traceEvents\":[", lost, warnings);
    static const struct nth_tr_sink sink = {
        NULL, j_state_begin, j_state_end, j_run_begin, j_run_end, j_region_begin, j_region_end,
        j_event, j_counter, j_lost, j_func_begin, j_func_end,
    };
    struct nth_tr_sink s = sink;
    s.ctx = &j;
    for (int i = 0; i < n; i++) {
        struct nth_tr_file *f = &files[i];
        j.pid = (long)f->hdr.pid;
        for (int k = 0; k < i; k++)   /* a recycled pid must not merge two processes */
            if (files[k].hdr.pid == f->hdr.pid)
                j.pid += 4194304L * (i + 1);
        char b[320];
        snprintf(b, sizeof b, "%s %u", f->hdr.flags & NTH_TRACE_FLAG_CPUMGR ? "cpumgr daemon" : "nthlib process",
                 f->hdr.pid);
        meta(&j, 0, "process_name", b, -1);
        for (unsigned v = 0; v < f->nvps; v++) {
            snprintf(b, sizeof b, "VP %u", v);
            meta(&j, VP_TID(v), "thread_name", b, (long)v);
        }
        for (size_t t = 0; t < f->nthreads; t++) {
            struct nth_tr_thread *th = &f->threads[t];
            char nb[300];
            thread_name(f, th, nb, sizeof nb);
            meta(&j, THREAD_TID(th), "thread_name", nb, 10000 + 4 * (long)th->index);
            snprintf(b, sizeof b, "%s regions", nb);
            meta(&j, REGION_TID(th), "thread_name", b, 10001 + 4 * (long)th->index);
            snprintf(b, sizeof b, "%s functions", nb);
            meta(&j, FUNC_TID(th), "thread_name", b, 10002 + 4 * (long)th->index);
        }
        nth_tr_replay(f, &s);
    }
    nth_out_printf(&j.o, "\n]}\n");
    return nth_out_close(&j.o);
}
