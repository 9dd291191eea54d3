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
NTH_HIDDEN void nth_trace__rt_join_done(struct nth_thread *self, uint64_t since);

/* Runtime start-up (init.c), on the kernel thread that becomes VP 0, before
 * the core's SIGSEGV handler is installed: that handler then chains to the
 * trace's (overflow line, then trace flush, then the default action).
 * Starts tracing when cfg->trace is set and records VP 0 running main
 * (trace id 1). A trace that cannot start is reported on stderr in one
 * line; the runtime runs untraced. Not thread-safe (called once). */
static inline void nth_trace_rt_start(const nth_config_t *cfg)
{
    __atomic_store_n(&nth_trace_rt_began, 1, __ATOMIC_RELEASE);
    if (cfg->trace)
        nth_trace__rt_start(cfg);
}

/* First thing a VP's own kernel thread does (vp.c), so that its records
 * carry its VP index; it starts in its idle loop. */
static inline void nth_trace_rt_vp(struct nth_vp *vp) { NTH_TRACE_IF_ON nth_trace__rt_vp(vp); }

/* Every context switch (sched.c), on the VP, before the registers move:
 * `to` becomes RUN (0 = the idle context); `from` becomes SYNCH if it is
 * blocked in nth_wait -- naming from->trace_obj if set
 * (nth_trace_rt_wait_obj), one more record -- READY otherwise. The time
 * since nth_trace_rt_leave shows as OVERHEAD before that, carried in the
 * switch record (no record of its own). Also samples the VP's ready-queue
 * length when it changed. */
static inline void nth_trace_rt_switch(struct nth_vp *vp, struct nth_thread *from, struct nth_thread *to)
{
    NTH_TRACE_IF_ON nth_trace__rt_switch(vp, from, to);
}

/* Start of the switch path (nth_sched_block, nth_yield), before the next
 * nano-thread is picked: the time until the switch record is the leaving
 * nano-thread's OVERHEAD. One clock read, only while tracing; a path that
 * ends without a switch leaves a stale time that the next switch path
 * overwrites before any switch reads it. */
static inline void nth_trace_rt_leave(struct nth_vp *vp)
{
    NTH_TRACE_IF_ON vp->trace_t0 = nth_trace_now();
}

/* Around a wait in nth_wait (sync objects through sync_glue.c, join, the
 * team's barrier and join): if the nano-thread is switched out blocked
 * meanwhile, its SYNCH names (kind, obj); set before the wait, cleared
 * (obj 0) after it. Two stores in the descriptor, only while tracing: no
 * record, no allocation here; the switch writes the one record. */
/* In trace_kind: set by nth_trace_wait_join (a library's join built on a
 * semaphore, the pthread shim's): the waits inside keep that name. */
#define NTH_OBJ_HELD 0x10000u

static inline void nth_trace_rt_wait_obj(struct nth_thread *self, uint64_t obj, unsigned kind)
{
    NTH_TRACE_IF_ON if (self) {
        self->trace_obj = obj;
        self->trace_kind = kind;
    }
}

/* The same for the nano-thread running on the caller's VP (none: nothing),
 * looked up only while tracing. */
static inline void nth_trace_rt_wait_obj_self(uint64_t obj, unsigned kind)
{
    NTH_TRACE_IF_ON {
        struct nth_vp *vp = nth_vp_self();
        if (vp)
            nth_trace_rt_wait_obj(vp->current, obj, kind);
    }
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

/* nth_join, after the wait: the reaping that follows is OVERHEAD (replaces
 * the RUN it was switched back in with, inside the OVERHEAD level
 * nth_trace_rt_join_end pushes at `since`); RUN when since is 0 (tracing
 * started during the join: no level to return from). The wait itself shows
 * SYNCH on the joined nano-thread through nth_trace_rt_wait_obj
 * (NTH_OBJ_JOIN, its never-reused trace id: a descriptor address is
 * recycled and would name the wrong thread). */
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

/* A stand-in (watchdog.c) starts running nano-threads of VP vp's ready
 * queue, vp's kernel thread being in the kernel: the nano-threads it runs
 * show on vp's track (the converter hands the track back when vp's own
 * kernel thread records again). Called before its first switch of a lease,
 * not at the lend, so that a lease that finds nothing to run shows nothing. */
static inline void nth_trace_rt_loan(struct nth_vp *vp)
{
    NTH_TRACE_IF_ON nth_trace__loan(vp->id);
}

/* The stand-in gives the VP back (no more records on its track); nothing
 * when it had recorded no lease (tracing started meanwhile, or none). */
static inline void nth_trace_rt_loan_end(void)
{
    NTH_TRACE_IF_ON nth_trace__loan(-1);
}

/* Ready-queue length bookkeeping (ready_queue.c): the core keeps no count
 * (it costs an atomic per operation), so it is kept only while tracing,
 * and read at the VP's scheduling points by nth_trace_rt_switch. Two
 * counts, not one: a single count next to the queue's head (as before)
 * had every enqueuer on another VP take the dequeuer's line with a locked
 * add, and every dequeue pay a locked add too -- 0.3 ms of CPU per LU 1000
 * run, a third of tracing's direct cost (bench/RESULTS.md, "trover").
 * Enqueuers count on the tail's line, after their exchange there. */
static inline void nth_trace_rt_rq_pushed(struct nth_rq *q)
{
    NTH_TRACE_IF_ON __atomic_fetch_add(&q->npush, 1, __ATOMIC_RELAXED);
}

/* Dequeuers hold q->lock: a load and a store, no locked instruction.
 * Relaxed atomics: the switch hook of another VP may read it meanwhile. */
static inline void nth_trace_rt_rq_popped(struct nth_rq *q)
{
    NTH_TRACE_IF_ON __atomic_store_n(&q->npop, __atomic_load_n(&q->npop, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* The length for the trace's counter: pushes minus pops, read without
 * the lock, so it may be one off while a push or pop is under way, and
 * briefly negative (a pop counted before its push: tracing turned on in
 * between) -- shown as 0. */
static inline long nth_trace_rt_rq_len(struct nth_rq *q)
{
    long n = __atomic_load_n(&q->npush, __ATOMIC_RELAXED) - __atomic_load_n(&q->npop, __ATOMIC_RELAXED);
    return n < 0 ? 0 : n;
}

/* nth_setname (also the shim's pthread_setname_np), after the copy: the
 * trace names the nano-thread's track, and the joins on it, by the new name
 * (the converters take a nano-thread's last registered name). */
NTH_HIDDEN void nth_trace__rt_rename(struct nth_thread *t);
static inline void nth_trace_rt_rename(struct nth_thread *t)
{
    NTH_TRACE_IF_ON nth_trace__rt_rename(t);
}

/* Parallel regions (parallel.c): a region number for the trace, or 0 when
 * tracing is off (no atomic then). */
NTH_HIDDEN uint64_t nth_trace__rt_region_id(void);
static inline uint64_t nth_trace_rt_region_id(void)
{
    NTH_TRACE_IF_ON return nth_trace__rt_region_id();
    return 0;
}

/* Member `member` of a team of `team` enters (begin 1) / leaves (begin 0)
 * region `region`, as a nested slice on the running nano-thread's regions
 * track. region is 0 when tracing was off at the region's start: then one
 * branch, nothing read (the nano-thread is looked up out of line). */
NTH_HIDDEN void nth_trace__rt_region(int begin, uint64_t region, int team, int member);
static inline void nth_trace_rt_region_begin(uint64_t region, int team, int member)
{
    if (region)
        nth_trace__rt_region(1, region, team, member);
}
static inline void nth_trace_rt_region_end(uint64_t region)
{
    if (region)
        nth_trace__rt_region(0, region, 0, 0);
}

#endif
