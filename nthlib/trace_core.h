/*
 * trace_core.h -- the runtime's trace call sites (internal to libnth).
 *
 * Each helper takes the core's descriptors, tests nth_trace_on once (one
 * predictable branch when tracing is off: DESIGN.md invariant 9) and hands
 * the rest to an out-of-line function in trace_runtime.c, so a core call
 * site stays one line and reads nothing when tracing is off. Where each one
 * is called, and why there, is said next to it below.
 */
#ifndef NTH_TRACE_CORE_H
#define NTH_TRACE_CORE_H

#include "internal.h"
#include "trace_hooks.h"

NTH_HIDDEN void nth_trace__rt_start(const nth_config_t *cfg);
NTH_HIDDEN void nth_trace__rt_vp(struct nth_vp *vp);
NTH_HIDDEN void nth_trace__rt_switch(struct nth_vp *vp, struct nth_thread *from, struct nth_thread *to);
NTH_HIDDEN void nth_trace__rt_create(struct nth_vp *vp, struct nth_thread *t, uint64_t since);
NTH_HIDDEN void nth_trace__rt_join(struct nth_thread *self, struct nth_thread *t);
NTH_HIDDEN void nth_trace__rt_join_done(struct nth_thread *self, uint64_t since);

/* Runtime start-up (init.c), on the kernel thread that becomes VP 0, before
 * the core's SIGSEGV handler is installed: that handler then chains to the
 * trace's (overflow line, then trace flush, then the default action).
 * Starts tracing when cfg->trace is set and records VP 0 running main
 * (trace id 1). A trace that cannot start is reported on stderr in one
 * line; the runtime runs untraced. Not thread-safe (called once). */
static inline void nth_trace_rt_start(const nth_config_t *cfg)
{
    if (cfg->trace)
        nth_trace__rt_start(cfg);
}

/* First thing a VP's own kernel thread does (vp.c), so that its records
 * carry its VP index; it starts in its idle loop. */
static inline void nth_trace_rt_vp(struct nth_vp *vp) { NTH_TRACE_IF_ON nth_trace__rt_vp(vp); }

/* Every context switch (sched.c), on the VP, before the registers move:
 * `to` becomes RUN (0 = the idle context); `from` becomes SYNCH if it is
 * blocked in nth_wait (unless a SYNCH naming an object was recorded), READY
 * otherwise. Also samples the VP's ready-queue length when it changed. */
static inline void nth_trace_rt_switch(struct nth_vp *vp, struct nth_thread *from, struct nth_thread *to)
{
    NTH_TRACE_IF_ON nth_trace__rt_switch(vp, from, to);
}

/* First line of a runtime call whose time shows as OVERHEAD (nth_create,
 * nth_join): the trace clock in ns, or 0 when tracing is off (one branch,
 * no clock read). The call's last hook takes it as `since`. */
static inline uint64_t nth_trace_rt_clock(void)
{
    NTH_TRACE_IF_ON return nth_trace_now();
    return 0;
}

/* nth_create, once the trace id is known; the creator is the nano-thread
 * running on vp (none for a kernel thread that is no VP). The creator shows
 * OVERHEAD from `since` (nth_trace_rt_clock() on entry; 0 = none) to here:
 * argument checks, descriptor and stack, context set-up. */
static inline void nth_trace_rt_create(struct nth_vp *vp, struct nth_thread *t, uint64_t since)
{
    NTH_TRACE_IF_ON nth_trace__rt_create(vp, t, since);
}

/* nth_join, once the joiner is registered and about to sleep: SYNCH on the
 * joined nano-thread, named "join <name> #<id>" by its never-reused trace id
 * (a descriptor address is recycled and would name the wrong thread). */
static inline void nth_trace_rt_join(struct nth_thread *self, struct nth_thread *t)
{
    NTH_TRACE_IF_ON nth_trace__rt_join(self, t);
}

/* nth_join, after the wait: the reaping that follows is OVERHEAD (replaces
 * the SYNCH or the RUN it was switched back in with, inside the OVERHEAD
 * level nth_trace_rt_join_end pushes at `since`); RUN when since is 0
 * (tracing started during the join: no level to return from). */
static inline void nth_trace_rt_join_done(struct nth_thread *self, uint64_t since)
{
    NTH_TRACE_IF_ON nth_trace__rt_join_done(self, since);
}

/* nth_join's successful return, after the joined nano-thread is reaped:
 * the joiner shows OVERHEAD from `since` (nth_trace_rt_clock() on entry)
 * to here, with the join's SYNCH, if it waited, nested inside. */
static inline void nth_trace_rt_join_end(struct nth_thread *self, uint64_t since)
{
    NTH_TRACE_IF_ON if (self && since) nth_trace__overhead(self->id, since);
}

/* nth_exit, once the nano-thread has returned (in place of
 * nth_trace_thread_end): its exit bookkeeping (joiner hand-off, counters,
 * the last switch) shows as OVERHEAD; the switch away from it records its
 * end (nth_trace__rt_switch sees it EXITED). */
static inline void nth_trace_rt_exit(struct nth_thread *t)
{
    NTH_TRACE_IF_ON nth_trace__rec(NTH_REC_STATE_PUSH, NTH_TRACE_OVERHEAD, t->id, 0);
}

/* nth_blocking_enter: BLOCKED until nth_trace_rt_blocking_leave. Pushed,
 * so the state under it (RUN, or a user state) comes back afterwards. */
static inline void nth_trace_rt_blocking_enter(struct nth_thread *self)
{
    NTH_TRACE_IF_ON nth_trace__rec(NTH_REC_STATE_PUSH, NTH_TRACE_BLOCKED, self->id, 0);
}

/* nth_blocking_leave: the caller never left its VP's kernel thread, so
 * BLOCKED simply ends. */
static inline void nth_trace_rt_blocking_leave(struct nth_thread *self)
{
    NTH_TRACE_IF_ON nth_trace__rec(NTH_REC_STATE_POP, 0, self->id, 0);
}

/* Ready-queue length bookkeeping (ready_queue.c): the core keeps no count
 * (it costs an atomic per operation), so it is kept only while tracing,
 * and read at the VP's scheduling points by nth_trace_rt_switch. */
static inline void nth_trace_rt_rq(struct nth_rq *q, long d)
{
    NTH_TRACE_IF_ON __atomic_fetch_add(&q->n, d, __ATOMIC_RELAXED);
}

#endif
