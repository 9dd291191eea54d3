/*
 * trace_hooks.h -- what the runtime calls to be traced (internal to libnth).
 *
 * Every hook is a static inline that tests nth_trace_on with
 * __builtin_expect: tracing off costs one predictable branch per site
 * (DESIGN.md invariant 9); on, it calls the out-of-line recorder, which writes
 * one 32-byte record into the calling kernel thread's (= VP's) buffer without
 * any lock. Hooks are async-signal-safe once the kernel thread has its
 * buffer (after its first record or nth_trace_vp_start()).
 *
 * Identity: `id` is the runtime's 64-bit never-reused nano-thread id
 * (nth_id()); 0 means "no nano-thread". `vp` is the VP index.
 *
 * When the runtime calls what:
 *   nth_trace_start(cfg->trace, cfg->trace_buffer, 0)   in nth_init, once
 *   nth_trace_vp_start(vp) / _vp_stop(vp)  on the VP's own kernel thread,
 *                                         first and last thing it does
 *   nth_trace_thread_create(id, creator, name)  in nth_create (also for main, id 1)
 *   nth_trace_thread_end(id)              when the nano-thread ends
 *   nth_trace_switch(from, to)            on the VP, at each context switch;
 *                                         to = 0 when entering the idle loop.
 *                                         `to` becomes RUN; `from` becomes READY
 *                                         unless the runtime set SYNCH/BLOCKED/
 *                                         READY for it just before.
 *   nth_trace_state(id, state, obj)       state changes: SYNCH with the object
 *                                         before blocking on it, READY in
 *                                         nth_to_rq, BLOCKED around blocking
 *                                         system calls, OVERHEAD in the runtime
 *   nth_trace_state_push/_pop(id, state)  nested states (e.g. OVERHEAD around
 *                                         a runtime call, then back)
 *   nth_trace_object_name(obj, name)      once per synchronisation object
 *                                         that has a name (else the address)
 *   nth_trace_region_begin/_end(id, region, team, member)  parallel regions (nest)
 *   nth_trace_rq_len(vp, len)             when a VP's ready queue length changes
 *   nth_trace_cpus(n)                     when cpumgr's assignment changes
 *
 * The runtime itself calls these through trace_core.h, whose helpers take
 * descriptors (one line per call site in the core).
 */
#ifndef NTH_TRACE_HOOKS_H
#define NTH_TRACE_HOOKS_H

#include <stddef.h>
#include <stdint.h>
#include "nth/trace.h"
#include "trace_format.h"

#define NTH_HIDDEN __attribute__((visibility("hidden")))

/* Nonzero while recording. Written at start, at finish and at a fatal signal. */
extern NTH_HIDDEN int nth_trace_on;
/* Set once the runtime has made its own attempt to start tracing (at its
 * start, traced or not): from then on a name registered while tracing is
 * off stays unrecorded, since NTH_TRACE was unset or could not be opened. */
extern NTH_HIDDEN int nth_trace_rt_began;

/* Start tracing to `path` (format by suffix: .json, .json.gz, .prv, .bin;
 * the records go to "<path>.<pid>.bin" in any case). buffer_bytes is the
 * per-VP buffer (0 = NTH_TRACE_BUFFER, else 1 MiB), flush_ms the longest time
 * a record stays in memory (0 = NTH_TRACE_FLUSH_MS, else 100 ms); the size
 * limit comes from NTH_TRACE_LIMIT (default 4 GiB). Bad NTH_TRACE_FLUSH_MS /
 * NTH_TRACE_LIMIT values print one line and keep their default. Returns 0;
 * EBUSY if already started; EINVAL for a path without a known suffix (one
 * line on stderr); errno of open(2) or pthread_create if the file or the
 * writer thread cannot be had. Not thread-safe: call once, from nth_init. */
NTH_HIDDEN int nth_trace_start(const char *path, size_t buffer_bytes, unsigned flush_ms);

/* Read NTH_TRACE, NTH_TRACE_BUFFER, NTH_TRACE_FLUSH_MS, NTH_TRACE_LIMIT and
 * start tracing if NTH_TRACE is set. Returns 0 (also when unset) or
 * nth_trace_start's errors; EINVAL for a bad variable, after one line on
 * stderr naming it and its accepted values: that setting keeps its default
 * and tracing still starts (as nth_config_from_env does for its fields). */
NTH_HIDDEN int nth_trace_start_from_env(void);

/* Stop recording, write every buffer to the binary file and convert it to
 * the chosen format, in this process (malloc, zlib, stdio: not for a signal
 * handler; the fatal-signal handlers use nth_trace_finish_records and a
 * fresh nth-trace process, trace_exit.c). Idempotent; registered with
 * atexit() by nth_trace_start. Returns 0 or an error code. */
NTH_HIDDEN int nth_trace_finish(void);

/* Out-of-line recorders; call them through the inlines below. */
NTH_HIDDEN void nth_trace__rec(uint16_t type, uint32_t arg, uint64_t id, uint64_t value);
NTH_HIDDEN void nth_trace__name(uint16_t kind, uint64_t key, uint64_t key2, const char *name);
NTH_HIDDEN void nth_trace__vp(uint16_t type, unsigned vp);
NTH_HIDDEN void nth_trace__switch(uint64_t from, uint64_t to);
/* The calling kernel thread (a stand-in, no VP of its own) starts (vp >= 0)
 * or ends (vp < 0) a lease of VP vp: its records carry vp | NTH_TRACE_LOAN_VP
 * in between, framed by flagged VP_START / VP_STOP records. */
NTH_HIDDEN void nth_trace__loan(int vp);
NTH_HIDDEN void nth_trace__switch_why(uint64_t from, uint64_t to, unsigned why);
/* The runtime's switch (trace_core.h): vp now runs `to`; `from` left it
 * blocked or not (why). Every record of the switch in one reservation and
 * one clock read: `from`'s THREAD_END if it ended, NTH_REC_WAIT_OBJ (kind,
 * obj) if obj is nonzero (it blocked on obj; a wait named by its kind
 * alone comes as obj 0 and why NTH_SWITCH_BLOCK_TEAM_IDLE or _SLEEP,
 * trace_format.h), the SWITCH record -- whose arg carries the switch
 * path's time since t0 (trace clock ns, 0 = unknown) -- and the VP's
 * ready-queue length if rq_vp >= 0. Before its clock read, the calling
 * kernel thread's floor is raised to to_last (trace_clock.h). Returns the
 * switch's stamp, for `from`'s descriptor (its next VP's floor). */
struct nth_trace_sw {
    uint64_t from, to, t0, obj, rq_len;
    uint64_t to_last;          /* stamp of to's last record (0 = none): its track's floor */
    unsigned why, kind;
    int ended;                 /* nonzero: `from` has exited */
    int rq_vp;                 /* VP whose queue length rq_len is; -1 = none */
};
NTH_HIDDEN uint64_t nth_trace__switch_rt(const struct nth_trace_sw *s);
/* The runtime's create (trace_core.h), in one reservation and one clock
 * read: the name (if any), THREAD_CREATE (id, creator), and, when creator
 * and since are nonzero, the creator's OVERHEAD slice from since to now
 * (as nth_trace__overhead). Returns the stamp, the new nano-thread's
 * first floor. */
NTH_HIDDEN uint64_t nth_trace__create_rt(uint64_t id, uint64_t creator, const char *name, uint64_t since);
NTH_HIDDEN void nth_trace__counter(uint32_t kind, int vp, uint64_t value);
/* An OVERHEAD slice on nano-thread id from since_ns to now: a push stamped
 * since_ns and its pop stamped now, written together (so a cut file never
 * holds one without the other). Converters order records by time, so the
 * push lands before whatever id recorded in between, which nests inside. */
NTH_HIDDEN void nth_trace__overhead(uint64_t id, uint64_t since_ns);
NTH_HIDDEN uint64_t nth_trace_now(void);

/* A relaxed atomic load is a plain load on x86-64 and AArch64: the branch
 * stays one compare, and ThreadSanitizer sees no race with nth_trace_finish. */
#define NTH_TRACE_IF_ON if (__builtin_expect(__atomic_load_n(&nth_trace_on, __ATOMIC_RELAXED), 0))

static inline void nth_trace_vp_start(unsigned vp) { NTH_TRACE_IF_ON nth_trace__vp(NTH_REC_VP_START, vp); }
static inline void nth_trace_vp_stop(unsigned vp) { NTH_TRACE_IF_ON nth_trace__vp(NTH_REC_VP_STOP, vp); }
static inline void nth_trace_thread_create(uint64_t id, uint64_t creator, const char *name)
{
    NTH_TRACE_IF_ON {
        if (name && *name) nth_trace__name(NTH_NAME_THREAD, id, 0, name);
        nth_trace__rec(NTH_REC_THREAD_CREATE, 0, id, creator);
    }
}
static inline void nth_trace_thread_end(uint64_t id) { NTH_TRACE_IF_ON nth_trace__rec(NTH_REC_THREAD_END, 0, id, 0); }
static inline void nth_trace_switch(uint64_t from, uint64_t to) { NTH_TRACE_IF_ON nth_trace__switch(from, to); }
static inline void nth_trace_state(uint64_t id, unsigned state, const void *obj)
{
    NTH_TRACE_IF_ON nth_trace__rec(NTH_REC_STATE_SET, state, id, (uintptr_t)obj);
}
static inline void nth_trace_state_push_id(uint64_t id, unsigned state, const void *obj)
{
    NTH_TRACE_IF_ON nth_trace__rec(NTH_REC_STATE_PUSH, state, id, (uintptr_t)obj);
}
static inline void nth_trace_state_pop_id(uint64_t id) { NTH_TRACE_IF_ON nth_trace__rec(NTH_REC_STATE_POP, 0, id, 0); }
static inline void nth_trace_object_name(const void *obj, const char *name)
{
    NTH_TRACE_IF_ON nth_trace__name(NTH_NAME_OBJECT, (uintptr_t)obj, 0, name);
}
/* Member `member` (0 = the caller) of a team of `team` enters region
 * number `region`; both below 65536 (NTH_TEAM_MAX is 1024). */
static inline void nth_trace_region_begin(uint64_t id, uint64_t region, unsigned team, unsigned member)
{
    NTH_TRACE_IF_ON nth_trace__rec(NTH_REC_REGION_BEGIN, (team & 0xffffu) | (member & 0xffffu) << 16, id, region);
}
static inline void nth_trace_region_end(uint64_t id, uint64_t region)
{
    NTH_TRACE_IF_ON nth_trace__rec(NTH_REC_REGION_END, 0, id, region);
}
static inline void nth_trace_rq_len(unsigned vp, uint64_t len) { NTH_TRACE_IF_ON nth_trace__counter(NTH_CTR_RQ_LEN, (int)vp, len); }
static inline void nth_trace_cpus(uint64_t cpus) { NTH_TRACE_IF_ON nth_trace__counter(NTH_CTR_CPUS, -1, cpus); }

/* The recorder's per-kernel-thread state (its TLS), for add: carried
 * from TCB to TCB with per-nano-thread thread pointers (tls_switch.c). */
int nth_trace_tls_carry(int (*add)(const void *addr, __SIZE_TYPE__ len));

#endif
