/*
 * trace_stats.c -- `nth-trace stats`: time per state per nano-thread, time
 * per VP (running nano-threads vs idle), and the longest state slices: the
 * questions one would otherwise ask Perfetto's SQL.
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

struct sctx {
    struct tstat *t;
    uint64_t *vp_busy, *vp_idle;
    struct slice top[NTOP];
    unsigned ntop;
};

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
    struct nth_tr_sink sink = { .ctx = &s, .state_end = s_state_end, .run_end = s_run_end };
    nth_tr_replay(f, &sink);
    char b[48];
    fprintf(out, "trace of pid %u: %.3f ms, %zu records, %zu nano-threads, %u VPs, %" PRIu64 " lost events, %u warnings\n\n",
            f->hdr.pid, ms(f->last_ts - f->hdr.mono_start_ns), f->nrecs, f->nthreads, f->nvps, f->lost, f->warnings);
    fprintf(out, "%-32s %-16s %12s\n", "nano-thread", "state", "time (ms)");
    for (size_t i = 0; i < f->nthreads; i++) {
        struct nth_tr_thread *t = &f->threads[i];
        const char *nm = nth_tr_name(f, NTH_NAME_THREAD, t->id, 0);
        char tn[300];
        snprintf(tn, sizeof tn, "%s #%" PRIu64, nm ? nm : "nano-thread", t->id);
        for (unsigned k = 0; k < s.t[i].n; k++)
            fprintf(out, "%-32s %-16s %12.3f\n", tn, sname(f, s.t[i].state[k], b, sizeof b), ms(s.t[i].ns[k]));
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
        fprintf(out, "%-32s %-16s %12.3f %12.3f\n", tn, sname(f, s.top[k].state, b, sizeof b),
                ms(s.top[k].since - f->hdr.mono_start_ns), ms(s.top[k].dur));
    }
    free(s.t); free(s.vp_busy); free(s.vp_idle);
    return 0;
}
