/*
 * trace_replay.c -- turning sorted records into slices: the state stack of
 * every nano-thread, what each VP runs, nested parallel regions. Shared by
 * every writer so that JSON, Paraver and the statistics agree.
 */
#include <stdlib.h>
#include <string.h>
#include "trace_convert.h"

#define CALL(sink, fn, ...) do { if ((sink)->fn) (sink)->fn((sink)->ctx, __VA_ARGS__); } while (0)

struct replay {
    struct nth_tr_file *f;
    const struct nth_tr_sink *s;
    struct nth_tr_thread **vp_run;   /* per VP: running thread, or NULL */
    uint64_t *vp_since;
    unsigned char *vp_on;            /* 1 while the VP track has an open slice */
    /* Stand-in leases (NTH_TRACE_LOAN_VP): per VP, LENT while a stand-in's
     * switches drive its track, BACK once the stand-in gave it back, both
     * until the VP's own kernel thread records again and takes the track
     * back for vp_owner, the nano-thread it ran when the lease began. */
    unsigned char *vp_loan;
    struct nth_tr_thread **vp_owner;
};

enum { LOAN_NONE, LOAN_LENT, LOAN_BACK };

static void top_end(struct replay *r, uint64_t ts, struct nth_tr_thread *t)
{
    if (t->depth > 0)
        CALL(r->s, state_end, r->f, ts, t, &t->stack[t->depth - 1]);
}

static void top_begin(struct replay *r, uint64_t ts, struct nth_tr_thread *t)
{
    if (t->depth > 0) {
        t->stack[t->depth - 1].since = ts;
        CALL(r->s, state_begin, r->f, ts, t, &t->stack[t->depth - 1]);
    }
}

/* Replace the top level by (st, obj, kind); `implicit` marks a level the
 * next switch-in pops. */
static void set_level(struct replay *r, uint64_t ts, struct nth_tr_thread *t, unsigned st, uint64_t obj,
                      unsigned kind, int implicit)
{
    if (t->depth > 0) {
        struct nth_tr_level *l = &t->stack[t->depth - 1];
        if (l->state == st && l->obj == obj && l->kind == kind && l->implicit == implicit)
            return;
        top_end(r, ts, t);
    } else {
        t->depth = 1;
    }
    t->stack[t->depth - 1] = (struct nth_tr_level){ st, implicit, obj, ts, kind };
    top_begin(r, ts, t);
}

static void set_state(struct replay *r, uint64_t ts, struct nth_tr_thread *t, unsigned st, uint64_t obj)
{
    set_level(r, ts, t, st, obj, 0, 0);
}

static void push_state(struct replay *r, uint64_t ts, struct nth_tr_thread *t, unsigned st, uint64_t obj,
                       unsigned kind, int implicit)
{
    if (t->depth == NTH_TR_STACK) {
        t->extra++;
        return;
    }
    top_end(r, ts, t);
    t->stack[t->depth++] = (struct nth_tr_level){ st, implicit, obj, ts, kind };
    top_begin(r, ts, t);
}

static void pop_state(struct replay *r, uint64_t ts, struct nth_tr_thread *t)
{
    if (t->extra) {
        t->extra--;
        return;
    }
    if (t->depth == 0)
        return;
    top_end(r, ts, t);
    t->depth--;
    top_begin(r, ts, t);
}

static int parked(unsigned st)
{
    return st == NTH_TRACE_READY || st == NTH_TRACE_SYNCH || st == NTH_TRACE_BLOCKED;
}

/* `from` leaves its VP at ts: blocked (why = NTH_SWITCH_BLOCK) it shows
 * SYNCH, naming the object of its pending NTH_REC_WAIT_OBJ if any, else
 * READY. Replacing RUN; above another state (a user state, OVERHEAD) as an
 * implicit level that the switch-in pops. Already parked (woken, BLOCKED):
 * unchanged. The switch path's last ovh ns show as OVERHEAD first, from no
 * earlier than from's last record so that its track never goes back. */
static void switch_out(struct replay *r, uint64_t ts, struct nth_tr_thread *from, unsigned why, uint64_t ovh)
{
    struct nth_tr_level *l = &from->stack[from->depth - 1];
    if (parked(l->state))
        return;
    int blocked = why == NTH_SWITCH_BLOCK;
    unsigned st = blocked ? NTH_TRACE_SYNCH : NTH_TRACE_READY;
    uint64_t obj = blocked ? from->wobj : 0;
    unsigned kind = blocked ? from->wkind : 0;
    int replace = l->state == NTH_TRACE_RUN, implicit = !replace;
    uint64_t ob = ovh < ts ? ts - ovh : 0;
    if (ob < from->last)
        ob = from->last;
    if (ovh && ob < ts && l->state != NTH_TRACE_OVERHEAD && !from->extra && from->depth < NTH_TR_STACK) {
        if (replace)
            set_level(r, ob, from, NTH_TRACE_OVERHEAD, 0, 0, 0);
        else
            push_state(r, ob, from, NTH_TRACE_OVERHEAD, 0, 0, 1);
        replace = 1;   /* the OVERHEAD level becomes the parked one */
    }
    if (replace)
        set_level(r, ts, from, st, obj, kind, implicit);
    else
        push_state(r, ts, from, st, obj, kind, 1);
}

static void vp_end(struct replay *r, uint64_t ts, unsigned vp)
{
    if (r->vp_on[vp])
        CALL(r->s, run_end, r->f, ts, r->vp_since[vp], vp, r->vp_run[vp]);
    r->vp_on[vp] = 0;
    r->vp_run[vp] = NULL;
}

static void vp_begin(struct replay *r, uint64_t ts, unsigned vp, struct nth_tr_thread *t)
{
    vp_end(r, ts, vp);
    r->vp_on[vp] = 1;
    r->vp_run[vp] = t;
    r->vp_since[vp] = ts;
    CALL(r->s, run_begin, r->f, ts, vp, t);
}

static void regions_close(struct replay *r, uint64_t ts, struct nth_tr_thread *t)
{
    while (t->rdepth > 0) {
        t->rdepth--;
        CALL(r->s, region_end, r->f, ts, t->rsince[t->rdepth], t, t->region[t->rdepth]);
    }
    t->rextra = 0;
}

static void funcs_close(struct replay *r, uint64_t ts, struct nth_tr_thread *t)
{
    while (t->fdepth > 0) {
        t->fdepth--;
        CALL(r->s, func_end, r->f, ts, t->fsince[t->fdepth], t, t->func[t->fdepth]);
    }
    t->fextra = 0;
}

static void step_rec(struct replay *r, const struct nth_trace_rec *x, struct nth_tr_thread *t, unsigned vp);

/* VP v's track while a stand-in holds it or held it. A stand-in's record
 * (loaned): its lease's VP_START lends the track (IDLE until its first
 * switch), VP_STOP gives it back (IDLE: v's own kernel thread is still in
 * the kernel), its switches drive it only while LENT (a stand-in finishing
 * the nano-thread it ran when v took the track back stays off it).
 * v's own record ends any lease: v shows vp_owner again, or, for a switch,
 * what the switch runs. Returns 1 if the record must not touch the track. */
static int loan_step(struct replay *r, const struct nth_trace_rec *x, unsigned v, int loaned)
{
    if (loaned) {
        if (x->type == NTH_REC_VP_START) {
            if (r->vp_loan[v] == LOAN_NONE)
                r->vp_owner[v] = r->vp_run[v];
            r->vp_loan[v] = LOAN_LENT;
            vp_begin(r, x->ts, v, NULL);
        } else if (x->type == NTH_REC_VP_STOP) {
            if (r->vp_loan[v] == LOAN_LENT) {
                r->vp_loan[v] = LOAN_BACK;
                vp_begin(r, x->ts, v, NULL);
            }
        } else if (x->type == NTH_REC_SWITCH) {
            return r->vp_loan[v] != LOAN_LENT;
        }
        return 1;
    }
    if (r->vp_loan[v] != LOAN_NONE) {
        r->vp_loan[v] = LOAN_NONE;
        if (x->type != NTH_REC_SWITCH && x->type != NTH_REC_VP_STOP)
            vp_begin(r, x->ts, v, r->vp_owner[v]);
        r->vp_owner[v] = NULL;
    }
    return 0;
}

static void step(struct replay *r, const struct nth_trace_rec *x)
{
    struct nth_tr_thread *t = nth_tr_thread(r->f, x->id);
    unsigned vp = x->vp;
    if (vp != NTH_TRACE_NO_VP) {
        int loaned = (vp & NTH_TRACE_LOAN_VP) != 0;
        vp &= ~NTH_TRACE_LOAN_VP;
        if (vp < r->f->nvps && loan_step(r, x, vp, loaned)) {
            /* the thread's own states still change; its VP track does not */
            if (x->type == NTH_REC_VP_START || x->type == NTH_REC_VP_STOP)
                return;
            vp = NTH_TRACE_NO_VP;
        }
    }
    step_rec(r, x, t, vp);
    if (t && x->type != NTH_REC_WAIT_OBJ)   /* that one shows nothing by itself */
        t->last = x->ts;
}

static void step_rec(struct replay *r, const struct nth_trace_rec *x, struct nth_tr_thread *t, unsigned vp)
{
    struct nth_tr_file *f = r->f;
    switch (x->type) {
    case NTH_REC_VP_START:
        vp_begin(r, x->ts, (unsigned)x->value, NULL);
        break;
    case NTH_REC_VP_STOP:
        vp_end(r, x->ts, (unsigned)x->value);
        break;
    case NTH_REC_THREAD_CREATE:
        if (t && t->depth == 0)
            set_state(r, x->ts, t, NTH_TRACE_READY, 0);
        break;
    case NTH_REC_THREAD_END:
        if (t) {
            top_end(r, x->ts, t);
            t->depth = 0;
            t->extra = 0;
            regions_close(r, x->ts, t);
            funcs_close(r, x->ts, t);
        }
        break;
    case NTH_REC_SWITCH: {
        struct nth_tr_thread *from = nth_tr_thread(f, x->value);
        unsigned why = x->arg & NTH_SWITCH_WHY_MASK;
        if (why == NTH_SWITCH_UNBLOCK) {
            /* Back from a blocking call, queued for a VP: the BLOCKED level
             * becomes a READY that the next switch-in pops. */
            if (from && from->depth > 0 && !from->extra &&
                from->stack[from->depth - 1].state == NTH_TRACE_BLOCKED) {
                top_end(r, x->ts, from);
                from->stack[from->depth - 1] = (struct nth_tr_level){ NTH_TRACE_READY, 1, 0, x->ts, 0 };
                top_begin(r, x->ts, from);
            }
            if (from) from->last = x->ts;
            break;
        }
        if (from && (why == NTH_SWITCH_BLOCK_TEAM_IDLE || why == NTH_SWITCH_BLOCK_SLEEP)) {
            /* a WAIT_OBJ of that kind, no object, folded in (trace_format.h) */
            from->wobj = 0;
            from->wkind = why == NTH_SWITCH_BLOCK_TEAM_IDLE ? NTH_OBJ_TEAM_IDLE : NTH_OBJ_SLEEP;
            why = NTH_SWITCH_BLOCK;
        }
        if (from && from != t && from->depth > 0)
            switch_out(r, x->ts, from, why, x->arg >> NTH_SWITCH_OVH_SHIFT);
        if (from) {
            from->wobj = 0;
            from->wkind = 0;
            from->last = x->ts;
        }
        if (t) {
            struct nth_tr_level *l = t->depth ? &t->stack[t->depth - 1] : NULL;
            if (l && l->implicit)
                pop_state(r, x->ts, t);
            else if (!l || parked(l->state))
                set_state(r, x->ts, t, NTH_TRACE_RUN, 0);
            if (vp < f->nvps)
                t->vp = (int)vp;
        }
        if (vp < f->nvps)
            vp_begin(r, x->ts, vp, t);
        break;
    }
    case NTH_REC_WAIT_OBJ:
        if (t) {
            t->wobj = x->value;
            t->wkind = x->arg;
        }
        break;
    case NTH_REC_STATE_SET:
        if (t) set_state(r, x->ts, t, x->arg, x->value);
        break;
    case NTH_REC_STATE_PUSH:
        if (t) push_state(r, x->ts, t, x->arg, x->value, 0, 0);
        break;
    case NTH_REC_STATE_POP:
        if (t) pop_state(r, x->ts, t);
        break;
    case NTH_REC_EVENT:
        CALL(r->s, event, f, x->ts, t, vp < f->nvps ? (int)vp : -1, x->arg, x->value);
        break;
    case NTH_REC_REGION_BEGIN:
        if (!t) break;
        if (t->rdepth == NTH_TR_REGIONS) { t->rextra++; break; }
        t->region[t->rdepth] = x->value;
        t->rteam[t->rdepth] = x->arg & 0xffff;
        t->rmember[t->rdepth] = x->arg >> 16;
        t->rsince[t->rdepth++] = x->ts;
        CALL(r->s, region_begin, f, x->ts, t, x->value, x->arg & 0xffff, x->arg >> 16);
        break;
    case NTH_REC_REGION_END:
        if (!t) break;
        if (t->rextra) { t->rextra--; break; }
        if (t->rdepth > 0) {
            t->rdepth--;
            CALL(r->s, region_end, f, x->ts, t->rsince[t->rdepth], t, t->region[t->rdepth]);
        }
        break;
    case NTH_REC_FUNC_ENTER:
        if (!t) break;
        if (t->fdepth == NTH_TR_FUNCS) { t->fextra++; break; }
        t->func[t->fdepth] = x->value;
        t->fsince[t->fdepth++] = x->ts;
        CALL(r->s, func_begin, f, x->ts, t, x->value);
        break;
    case NTH_REC_FUNC_EXIT:
        if (!t) break;
        if (t->fextra) { t->fextra--; break; }
        if (t->fdepth > 0) {   /* an exit without its entry (cut file) is ignored */
            t->fdepth--;
            CALL(r->s, func_end, f, x->ts, t->fsince[t->fdepth], t, t->func[t->fdepth]);
        }
        break;
    case NTH_REC_COUNTER:
        if (x->arg == NTH_CTR_RQ_LEN || x->arg == NTH_CTR_GRANT)
            CALL(r->s, counter, f, x->ts, x->arg, (int)x->id, x->value);
        else
            CALL(r->s, counter, f, x->ts, x->arg, -1, x->value);
        break;
    case NTH_REC_LOST:
        CALL(r->s, lost, f, x->ts, x->value);
        break;
    default:
        break;
    }
}

struct nth_tr_replay {
    struct replay r;
    size_t next;                     /* index of the next record */
    int done;                        /* open slices closed */
    uint64_t max_ovh;                /* largest switch overhead in the file */
};

struct nth_tr_replay *nth_tr_replay_open(struct nth_tr_file *f, const struct nth_tr_sink *sink)
{
    struct nth_tr_replay *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->r.f = f;
    p->r.s = sink;
    p->r.vp_run = calloc(f->nvps, sizeof *p->r.vp_run);
    p->r.vp_since = calloc(f->nvps, sizeof *p->r.vp_since);
    p->r.vp_on = calloc(f->nvps, 1);
    p->r.vp_loan = calloc(f->nvps, 1);
    p->r.vp_owner = calloc(f->nvps, sizeof *p->r.vp_owner);
    if (!p->r.vp_run || !p->r.vp_since || !p->r.vp_on || !p->r.vp_loan || !p->r.vp_owner) {
        nth_tr_replay_close(p);
        return NULL;
    }
    for (size_t i = 0; i < f->nthreads; i++) {
        struct nth_tr_thread *t = &f->threads[i];
        t->depth = t->extra = t->rdepth = t->rextra = t->fdepth = t->fextra = 0;
        t->vp = -1;
        t->last = 0;
        t->wobj = 0;
        t->wkind = 0;
    }
    for (size_t i = 0; i < f->nrecs; i++)
        if (f->recs[i].type == NTH_REC_SWITCH && (f->recs[i].arg >> NTH_SWITCH_OVH_SHIFT) > p->max_ovh)
            p->max_ovh = f->recs[i].arg >> NTH_SWITCH_OVH_SHIFT;
    return p;
}

uint64_t nth_tr_replay_low(const struct nth_tr_replay *p)
{
    const struct nth_tr_file *f = p->r.f;
    if (p->done)
        return UINT64_MAX;
    if (p->next == f->nrecs)
        return f->last_ts;
    uint64_t ts = f->recs[p->next].ts;
    return ts > p->max_ovh ? ts - p->max_ovh : 0;
}

uint64_t nth_tr_replay_next_ts(const struct nth_tr_replay *p)
{
    const struct nth_tr_file *f = p->r.f;
    return p->done ? UINT64_MAX : p->next < f->nrecs ? f->recs[p->next].ts : f->last_ts;
}

int nth_tr_replay_step(struct nth_tr_replay *p)
{
    struct nth_tr_file *f = p->r.f;
    if (p->done)
        return 0;
    if (p->next < f->nrecs) {
        step(&p->r, &f->recs[p->next++]);
        return 1;
    }
    /* Close what is open, innermost first, at the last timestamp. */
    for (size_t i = 0; i < f->nthreads; i++) {
        struct nth_tr_thread *t = &f->threads[i];
        top_end(&p->r, f->last_ts, t);
        t->depth = 0;
        regions_close(&p->r, f->last_ts, t);
        funcs_close(&p->r, f->last_ts, t);
    }
    for (unsigned v = 0; v < f->nvps; v++)
        vp_end(&p->r, f->last_ts, v);
    p->done = 1;
    return 1;
}

void nth_tr_replay_close(struct nth_tr_replay *p)
{
    if (!p)
        return;
    free(p->r.vp_run);
    free(p->r.vp_since);
    free(p->r.vp_on);
    free(p->r.vp_loan);
    free(p->r.vp_owner);
    free(p);
}

void nth_tr_replay(struct nth_tr_file *f, const struct nth_tr_sink *sink)
{
    struct nth_tr_replay *p = nth_tr_replay_open(f, sink);
    if (!p)
        return;
    while (nth_tr_replay_step(p))
        ;
    nth_tr_replay_close(p);
}
