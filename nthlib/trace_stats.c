/*
 * trace_stats.c -- `nth-trace stats`: time per state per nano-thread, time
 * per VP (running nano-threads vs idle), the longest state slices, and the
 * CPUs cpumgr gave: the questions one would otherwise ask Perfetto's SQL.
 *
 * A file may hold no nano-thread at all (`cpumgr --trace` writes only
 * grants): it says so in one line, with what the file holds instead, and no
 * table is printed empty.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "trace_convert.h"

#define NTOP 10
#define NSTATES 32   /* distinct states counted per nano-thread; more go to "other" */

struct tstat { unsigned state[NSTATES]; uint64_t ns[NSTATES]; unsigned n; uint64_t other; };
struct slice { uint64_t dur, since; uint64_t id; unsigned state; };

/* Time a process spent with k CPUs: what cpumgr granted one application
 * (NTH_CTR_GRANT, daemon file, key = pid) or what this process was told
 * (NTH_CTR_CPUS, key = 0). Between two records the earlier value holds;
 * after the last one it holds to the end of the trace unless it is 0 (the
 * daemon records 0 when an application detaches: it is gone, not idle). */
#define NCPUVALS 32  /* distinct CPU counts kept per process; more go to "other" */
struct cpus {
    int64_t key;
    uint64_t cur, since, first;
    unsigned changes, nv;
    uint64_t val[NCPUVALS], ns[NCPUVALS], other;
};

struct sctx {
    struct tstat *t;
    uint64_t *vp_busy, *vp_idle;
    struct slice top[NTOP];
    unsigned ntop;
    struct cpus *cpu;
    size_t ncpu, capcpu;
    int nomem;
    uint64_t ncounters, mem_peak, mem_calls, nmem, nevents;
};

static void cpus_add(struct cpus *c, uint64_t val, uint64_t d)
{
    unsigned i;
    for (i = 0; i < c->nv && c->val[i] != val; i++)
        ;
    if (i == c->nv) {
        if (c->nv == NCPUVALS) { c->other += d; return; }
        /* kept in increasing CPU count */
        for (i = c->nv++; i > 0 && c->val[i - 1] > val; i--) { c->val[i] = c->val[i - 1]; c->ns[i] = c->ns[i - 1]; }
        c->val[i] = val;
        c->ns[i] = 0;
    }
    c->ns[i] += d;
}

static void s_counter(void *c, struct nth_tr_file *f, uint64_t ts, uint32_t kind, int vp, uint64_t value)
{
    (void)f;
    struct sctx *s = c;
    s->ncounters++;
    if (kind == NTH_CTR_MEM_BYTES) {
        s->nmem++;
        if (value > s->mem_peak) s->mem_peak = value;
        return;
    }
    if (kind == NTH_CTR_MEM_CALLS) {
        if (value > s->mem_calls) s->mem_calls = value;
        return;
    }
    if (kind != NTH_CTR_GRANT && kind != NTH_CTR_CPUS)
        return;
    int64_t key = kind == NTH_CTR_GRANT ? (int64_t)vp : 0;
    size_t i;
    for (i = 0; i < s->ncpu && s->cpu[i].key != key; i++)
        ;
    if (i == s->ncpu) {
        if (s->ncpu == s->capcpu) {
            size_t n = s->capcpu ? 2 * s->capcpu : 8;
            struct cpus *p = realloc(s->cpu, n * sizeof *p);
            if (!p) { s->nomem = 1; return; }
            s->cpu = p;
            s->capcpu = n;
        }
        s->cpu[s->ncpu++] = (struct cpus){ .key = key, .cur = value, .since = ts, .first = ts, .changes = 1 };
        return;
    }
    struct cpus *p = &s->cpu[i];
    if (p->cur == value)
        return;
    cpus_add(p, p->cur, ts - p->since);
    p->cur = value;
    p->since = ts;
    p->changes++;
}

static void s_event(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, int vp, uint32_t type, uint64_t value)
{
    (void)f; (void)ts; (void)t; (void)vp; (void)type; (void)value;
    ((struct sctx *)c)->nevents++;
}

static void s_state_end(void *c, struct nth_tr_file *f, uint64_t ts, struct nth_tr_thread *t, const struct nth_tr_level *l)
{
    (void)f;
    struct sctx *s = c;
    struct tstat *st = &s->t[t->index - 1];
    uint64_t d = ts - l->since;
    unsigned i;
    for (i = 0; i < st->n && st->state[i] != l->state; i++)
        ;
    if (i == st->n) {
        if (st->n == NSTATES) { st->other += d; goto top; }
        st->state[st->n] = l->state;
        st->ns[st->n++] = 0;
    }
    st->ns[i] += d;
top:
    if (s->ntop < NTOP || d > s->top[s->ntop - 1].dur) {
        unsigned k = s->ntop < NTOP ? s->ntop++ : NTOP - 1;
        while (k > 0 && s->top[k - 1].dur < d) { s->top[k] = s->top[k - 1]; k--; }
        s->top[k] = (struct slice){ d, l->since, t->id, l->state };
    }
}

static void s_run_end(void *c, struct nth_tr_file *f, uint64_t ts, uint64_t since, unsigned vp, struct nth_tr_thread *t)
{
    (void)f;
    struct sctx *s = c;
    if (t) s->vp_busy[vp] += ts - since;
    else s->vp_idle[vp] += ts - since;
}

static const char *sname(struct nth_tr_file *f, unsigned st, char *b, size_t n)
{
    const char *s = nth_tr_state_builtin(st);
    if (!s) s = nth_tr_name(f, NTH_NAME_STATE, st, 0);
    if (!s) { snprintf(b, n, "state %u", st); s = b; }
    return s;
}

static double ms(uint64_t ns) { return (double)ns / 1e6; }

static void write_threads(struct nth_tr_file *f, struct sctx *s, FILE *out, char *b, size_t bn);

static int cpus_cmp(const void *a, const void *b)
{
    const struct cpus *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* The CPU tables: time with k CPUs per process, then changes and the mean. */
static void write_cpus(struct nth_tr_file *f, struct sctx *s, FILE *out)
{
    int daemon = (f->hdr.flags & NTH_TRACE_FLAG_CPUMGR) != 0;
    qsort(s->cpu, s->ncpu, sizeof *s->cpu, cpus_cmp);
    for (size_t i = 0; i < s->ncpu; i++) {
        struct cpus *p = &s->cpu[i];
        if (p->cur && f->last_ts > p->since)
            cpus_add(p, p->cur, f->last_ts - p->since);
    }
    fprintf(out, "\n%s\n%-40s %6s %12s %8s\n", daemon ? "CPUs granted by cpumgr per application" : "CPUs assigned by cpumgr",
            daemon ? "application" : "process", "CPUs", "time (ms)", "share");
    char an[320];
    for (size_t i = 0; i < s->ncpu; i++) {
        struct cpus *p = &s->cpu[i];
        const char *nm = daemon ? nth_tr_name(f, NTH_NAME_APP, (uint64_t)p->key, 0) : NULL;
        if (daemon)
            snprintf(an, sizeof an, "%s (pid %" PRId64 ")", nm ? nm : "application", p->key);
        else
            snprintf(an, sizeof an, "this process (pid %u)", f->hdr.pid);
        uint64_t total = p->other;
        for (unsigned k = 0; k < p->nv; k++) total += p->ns[k];
        for (unsigned k = 0; k < p->nv; k++)
            fprintf(out, "%-40s %6" PRIu64 " %12.3f %7.1f%%\n", an, p->val[k], ms(p->ns[k]),
                    total ? 100.0 * (double)p->ns[k] / (double)total : 0.0);
        if (p->other)
            fprintf(out, "%-40s %6s %12.3f %7.1f%%\n", an, "other", ms(p->other), 100.0 * (double)p->other / (double)total);
    }
    fprintf(out, "\n%-40s %8s %10s %12s %12s\n", daemon ? "application" : "process", "changes", "mean CPUs",
            "first (ms)", "time (ms)");
    for (size_t i = 0; i < s->ncpu; i++) {
        struct cpus *p = &s->cpu[i];
        const char *nm = daemon ? nth_tr_name(f, NTH_NAME_APP, (uint64_t)p->key, 0) : NULL;
        if (daemon)
            snprintf(an, sizeof an, "%s (pid %" PRId64 ")", nm ? nm : "application", p->key);
        else
            snprintf(an, sizeof an, "this process (pid %u)", f->hdr.pid);
        uint64_t total = 0;
        double cpu_ns = 0;
        for (unsigned k = 0; k < p->nv; k++) { total += p->ns[k]; cpu_ns += (double)p->val[k] * (double)p->ns[k]; }
        fprintf(out, "%-40s %8u %10.3f %12.3f %12.3f\n", an, p->changes, total ? cpu_ns / (double)total : 0.0,
                ms(p->first - f->hdr.mono_start_ns), ms(total + p->other));
    }
}

int nth_tr_write_stats(struct nth_tr_file *f, FILE *out)
{
    struct sctx s;
    memset(&s, 0, sizeof s);
    s.t = calloc(f->nthreads ? f->nthreads : 1, sizeof *s.t);
    s.vp_busy = calloc(f->nvps, sizeof *s.vp_busy);
    s.vp_idle = calloc(f->nvps, sizeof *s.vp_idle);
    if (!s.t || !s.vp_busy || !s.vp_idle) {
        free(s.t); free(s.vp_busy); free(s.vp_idle);
        return ENOMEM;
    }
    struct nth_tr_sink sink = { .ctx = &s, .state_end = s_state_end, .run_end = s_run_end, .counter = s_counter,
                                .event = s_event };
    nth_tr_replay(f, &sink);
    if (s.nomem) {
        free(s.t); free(s.vp_busy); free(s.vp_idle); free(s.cpu);
        return ENOMEM;
    }
    char b[48];
    int daemon = (f->hdr.flags & NTH_TRACE_FLAG_CPUMGR) != 0;
    /* "records" as in the runtime's exit line and convert's "wrote" line:
     * the file's 32-byte records; the timed ones are those on the timeline
     * (the rest: names and what a damaged file had skipped). */
    fprintf(out, "%s of pid %u: %.3f ms, %zu records (%zu timed), %zu nano-threads, %u VPs, %" PRIu64
                 " lost events, %u warnings\n",
            daemon ? "cpumgr daemon trace" : "trace", f->hdr.pid, ms(f->last_ts - f->hdr.mono_start_ns), f->nfile, f->nrecs,
            f->nthreads, daemon ? 0 : f->nvps, f->lost, f->warnings);
    if (f->hdr.flags & NTH_TRACE_FLAG_WRITE_ERROR)
        /* A full disk: the LOST record that would count them could not be
         * written either, so the lost figure above is short of them. */
        fprintf(out, "records missing: writing this file failed during the run (%s) at %.3f ms; the events from "
                     "then on are not in it, and not in the lost figure (the process's exit line counted them)\n",
                strerror((int)NTH_TRACE_FLAG_ERRNO(f->hdr.flags)), ms(f->last_ts - f->hdr.mono_start_ns));
    if (!f->nthreads) {
        /* Said once, instead of three empty tables. */
        if (daemon)
            fprintf(out, "no nano-thread states: a cpumgr daemon trace holds its CPU grants, %zu application%s, "
                         "%" PRIu64 " grant records (below)\n", s.ncpu, s.ncpu == 1 ? "" : "s", s.ncounters);
        else
            fprintf(out, "no nano-thread states in this file: it holds %" PRIu64 " counter records and %" PRIu64
                         " events%s\n", s.ncounters, s.nevents, s.ncpu ? " (CPUs below)" : "");
    } else
        write_threads(f, &s, out, b, sizeof b);
    if (s.ncpu)
        write_cpus(f, &s, out);
    if (s.nmem)
        fprintf(out, "\nmalloc (NTH_TRACE_MALLOC): peak %" PRIu64 " bytes in use, %" PRIu64 " calls\n", s.mem_peak,
                s.mem_calls);
    free(s.t); free(s.vp_busy); free(s.vp_idle); free(s.cpu);
    return 0;
}

/* The nano-thread and VP tables and the longest slices. */
static void write_threads(struct nth_tr_file *f, struct sctx *sp, FILE *out, char *b, size_t bn)
{
    struct sctx s = *sp;
    fprintf(out, "\n%-32s %-16s %12s\n", "nano-thread", "state", "time (ms)");
    for (size_t i = 0; i < f->nthreads; i++) {
        struct nth_tr_thread *t = &f->threads[i];
        const char *nm = nth_tr_name(f, NTH_NAME_THREAD, t->id, 0);
        char tn[300];
        snprintf(tn, sizeof tn, "%s #%" PRIu64, nm ? nm : "nano-thread", t->id);
        for (unsigned k = 0; k < s.t[i].n; k++)
            fprintf(out, "%-32s %-16s %12.3f\n", tn, sname(f, s.t[i].state[k], b, bn), ms(s.t[i].ns[k]));
        if (s.t[i].other)
            fprintf(out, "%-32s %-16s %12.3f\n", tn, "(other states)", ms(s.t[i].other));
    }
    fprintf(out, "\n%-8s %14s %14s\n", "VP", "running (ms)", "idle (ms)");
    for (unsigned v = 0; v < f->nvps; v++)
        fprintf(out, "%-8u %14.3f %14.3f\n", v, ms(s.vp_busy[v]), ms(s.vp_idle[v]));
    fprintf(out, "\nlongest state slices\n%-32s %-16s %12s %12s\n", "nano-thread", "state", "start (ms)", "length (ms)");
    for (unsigned k = 0; k < s.ntop; k++) {
        const char *nm = nth_tr_name(f, NTH_NAME_THREAD, s.top[k].id, 0);
        char tn[300];
        snprintf(tn, sizeof tn, "%s #%" PRIu64, nm ? nm : "nano-thread", s.top[k].id);
        fprintf(out, "%-32s %-16s %12.3f %12.3f\n", tn, sname(f, s.top[k].state, b, bn),
                ms(s.top[k].since - f->hdr.mono_start_ns), ms(s.top[k].dur));
    }
}
