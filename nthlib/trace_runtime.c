/*
 * trace_runtime.c -- what the runtime's trace call sites (trace_core.h) do
 * when tracing is on: descriptors turned into trace records.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "trace_core.h"
#include "trace_rt.h"

void nth_trace__rt_start(const nth_config_t *cfg)
{
    int rc = nth_trace_start(cfg->trace, cfg->trace_buffer, 0);
    /* EBUSY: this process traces already -- libnth-probes.so or
     * libnth-malloc.so started it from NTH_TRACE in their constructor
     * (nth_trace_start_standalone, which recorded VP 0 and the main
     * nano-thread, #1, as below), before the pthread shim started the
     * runtime. That is the trace the runtime wanted: said nothing ("cannot
     * trace: busy" then "wrote FILE" contradicted each other). */
    if (rc == EBUSY && nth_trace_enabled())
        return;
    if (rc) {
        if (rc != EINVAL && !nth_trace_start_told)   /* EINVAL (bad suffix), no current
                                                      * directory: said already */
            fprintf(stderr, "nthlib: NTH_TRACE=%s: cannot trace: %s; running untraced\n",
                    cfg->trace, strerror(rc));
        return;
    }
    nth_trace_vp_start(0);
    nth_trace_thread_create(1, 0, "main");
    nth_trace__switch(0, 1);
}

void nth_trace__rt_vp(struct nth_vp *vp)
{
    nth_trace__vp(NTH_REC_VP_START, (unsigned)vp->id);
    nth_trace__switch(0, 0);
}

/* vp->trace holds the last ready-queue length recorded for vp, plus one
 * (0 = none yet); only vp's kernel thread touches it, in the switch path. */
void nth_trace__rt_switch(struct nth_vp *vp, struct nth_thread *from, struct nth_thread *to)
{
    int s = __atomic_load_n(&from->state, __ATOMIC_RELAXED) & NTH_ST_MASK;
    int blocked = s == NTH_ST_BLOCKED;
    uint64_t t0 = vp->trace_t0;
    vp->trace_t0 = 0;
    struct nth_trace_sw sw = {
        .from = from->id, .to = to->id,
        .t0 = from->flags & NTH_TF_IDLE ? 0 : t0,
        .obj = blocked ? from->trace_obj : 0, .kind = from->trace_kind & ~NTH_OBJ_HELD,
        .why = blocked ? NTH_SWITCH_BLOCK : NTH_SWITCH_YIELD,
        .ended = s == NTH_ST_EXITED,   /* its last switch ends its exit OVERHEAD */
        .rq_vp = -1,
        .to_last = to->trace_last,
    };
    /* A wait named by its kind alone: in the switch record (trace_format.h). */
    if (sw.obj && sw.kind == NTH_OBJ_TEAM_IDLE) {
        sw.why = NTH_SWITCH_BLOCK_TEAM_IDLE;
        sw.obj = 0;
    } else if (sw.obj && sw.kind == NTH_OBJ_SLEEP) {
        sw.why = NTH_SWITCH_BLOCK_SLEEP;
        sw.obj = 0;
    }
    /* A watchdog stand-in's shell VP (id < 0) has no queue and no track. */
    if (vp->id >= 0) {
        long n = nth_trace_rt_rq_len(&vp->rq);
        if ((uintptr_t)vp->trace != (uintptr_t)n + 1) {
            vp->trace = (void *)((uintptr_t)n + 1);
            sw.rq_vp = vp->id;
            sw.rq_len = (uint64_t)n;
        }
    }
    /* Published to the next VP that runs `from` with its context: that
     * VP's switch loads it after this one saved the context. */
    from->trace_last = nth_trace__switch_rt(&sw);
}

int nth_trace_wait_join(nth_t t)
{
    NTH_TRACE_IF_ON {
        struct nth_vp *vp = nth_vp_self();
        struct nth_thread *self = vp ? vp->current : NULL;
        if (self) {
            self->trace_obj = t ? t->id : 0;
            self->trace_kind = t ? NTH_OBJ_JOIN | NTH_OBJ_HELD : 0;
        }
    }
    return 0;
}

void nth_trace__rt_create(struct nth_vp *vp, struct nth_thread *t, uint64_t since)
{
    struct nth_thread *c = vp ? vp->current : NULL;
    /* Before t is queued: whichever VP runs it first starts its track
     * no earlier than its creation. */
    t->trace_last = nth_trace__create_rt(t->id, c ? c->id : 0, t->name, since);
}

void nth_trace__rt_join_done(struct nth_thread *self, uint64_t since)
{
    if (self)
        nth_trace__rec(NTH_REC_STATE_SET, since ? NTH_TRACE_OVERHEAD : NTH_TRACE_RUN, self->id, 0);
}

/* Region numbers in blocks of REGION_BLOCK per VP, as nano-thread ids
 * (nth_rt.next_id): one locked add on a global line per 64 regions, not
 * one per region -- the add waited for the ring stores before it, 0.13 ms
 * per LU 1000 run (bench/RESULTS.md, "trover"). Numbers stay unique and
 * start at 1; they increase along one VP's regions, not across VPs. A
 * kernel thread that is no VP (or a stand-in's shell VP, id < 0) takes
 * one number at a time. */
#define REGION_BLOCK 64
uint64_t nth_trace__rt_region_id(void)
{
    static uint64_t seq;
    struct nth_vp *vp = nth_vp_self();
    if (!vp || vp->id < 0)
        return __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
    if (vp->trace_region_next == vp->trace_region_end) {
        vp->trace_region_next = __atomic_fetch_add(&seq, REGION_BLOCK, __ATOMIC_RELAXED) + 1;
        vp->trace_region_end = vp->trace_region_next + REGION_BLOCK;
    }
    return vp->trace_region_next++;
}

void nth_trace__rt_rename(struct nth_thread *t)
{
    nth_trace__name(NTH_NAME_THREAD, t->id, 0, t->name);
}

void nth_trace__rt_region(int begin, uint64_t region, int team, int member)
{
    struct nth_vp *vp = nth_vp_self();
    struct nth_thread *self = vp ? vp->current : NULL;
    if (!self)
        return;
    if (begin)
        nth_trace_region_begin(self->id, region, (unsigned)team, (unsigned)member);
    else
        nth_trace_region_end(self->id, region);
}
