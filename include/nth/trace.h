/*
 * nth/trace.h -- instrumentation API: trace states and trace events, after
 * the JIS instrumentation library that fed Paraver (UPC/BSC).
 *
 * Tracing is switched on by NTH_TRACE=path (format by suffix: .json,
 * .json.gz, .prv, .bin); see the README's configuration table. Every call
 * here applies to the nano-thread running on the calling virtual processor
 * (VP); called from a kernel thread that is no VP it applies to "no
 * nano-thread" (trace id 0). With tracing off every call returns 0 at once:
 * the cost is one predictable branch. All calls are thread-safe, take no
 * lock and never block: when the per-VP buffer is full the record is counted
 * as lost instead (see NTH_TRACE_BUFFER).
 *
 * States form a stack per nano-thread (JIS semantics): _set replaces the top,
 * _push saves the current state and shows a new one, _pop returns to the
 * saved one. The runtime itself sets RUN, READY, SYNCH, BLOCKED, OVERHEAD
 * and IDLE; applications use their own states from NTH_TRACE_STATE_USER.
 */
#ifndef NTH_TRACE_H
#define NTH_TRACE_H

#include <stdint.h>
#include <nth.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Built-in trace states (Paraver state values in the .pcf). */
enum nth_trace_state {
    NTH_TRACE_IDLE = 0,      /* VP in its idle loop, no nano-thread */
    NTH_TRACE_RUN = 1,       /* running user code */
    NTH_TRACE_READY = 2,     /* in a ready queue, waiting for a VP */
    NTH_TRACE_SYNCH = 3,     /* waiting on a mutex, condvar, barrier or join */
    NTH_TRACE_BLOCKED = 4,   /* in a blocking system call */
    NTH_TRACE_OVERHEAD = 5,  /* inside the runtime (create, schedule, ...) */
    NTH_TRACE_STATE_USER = 16,  /* first application state */
    NTH_TRACE_STATE_MAX = 1023  /* last valid state */
};

/* Event types from NTH_TRACE_EVENT_RESERVED on belong to the runtime. */
#define NTH_TRACE_EVENT_RESERVED 60000000u

/* Nonzero when this process records a trace. */
NTH_API int nth_trace_enabled(void);

/* Replace the calling nano-thread's current state by `state`.
 * Returns 0; EINVAL if state > NTH_TRACE_STATE_MAX. */
NTH_API int nth_trace_state_set(unsigned state);

/* Save the current state and show `state` until nth_trace_state_pop().
 * Returns 0; EINVAL if state > NTH_TRACE_STATE_MAX. At most 16 levels are
 * shown; deeper pushes are recorded but nest no further in the output. */
NTH_API int nth_trace_state_push(unsigned state);

/* Return to the state saved by the matching push. Returns 0 (a pop with
 * nothing pushed is recorded and ignored by the converters). */
NTH_API int nth_trace_state_pop(void);

/* Record event (type, value) at the current time on the calling
 * nano-thread: an instant event in JSON, a "2:" record in Paraver.
 * Returns 0; EINVAL if type is 0 or >= NTH_TRACE_EVENT_RESERVED. */
NTH_API int nth_trace_event(uint32_t type, uint64_t value);

/* The state call and the event, with one timestamp. Errors as both. */
NTH_API int nth_trace_state_set_event(unsigned state, uint32_t type, uint64_t value);
NTH_API int nth_trace_state_push_event(unsigned state, uint32_t type, uint64_t value);
NTH_API int nth_trace_state_pop_event(uint32_t type, uint64_t value);

/* Name a state, an event type or one value of an event type; the names go
 * to the Paraver .pcf and to the JSON slice names and args. Names are
 * recorded in the trace, so they may be registered at any time, from any
 * thread, also before the runtime starts (the first registration then
 * starts recording from NTH_TRACE, as libnth-probes.so does). Returns 0; EINVAL for a NULL or empty name, a state below
 * NTH_TRACE_STATE_USER or above NTH_TRACE_STATE_MAX, a type 0 or reserved.
 * Names longer than 255 bytes are truncated. */
NTH_API int nth_trace_register_state(unsigned state, const char *name);
NTH_API int nth_trace_register_event(uint32_t type, const char *name);
NTH_API int nth_trace_register_event_value(uint32_t type, uint64_t value, const char *name);

/* Name a synchronisation object (an nth_mutex_t, nth_cond_t, nth_barrier_t,
 * nth_rwlock_t, nth_sem_t, ... at address obj) in the trace: the SYNCH
 * slices of nano-threads that wait on it show "<kind> <name>" instead of
 * "<kind> 0x<address>" (JSON args.object; a value name of the Paraver
 * object event). Names are recorded in the trace (registering costs
 * nothing on the wait path); a later registration for the same address
 * wins, so name an object again when its memory is reused. Returns 0;
 * EINVAL for a NULL obj or a NULL or empty name. Thread-safe. */
NTH_API int nth_trace_register_object(const void *obj, const char *name);

/* Until called again with NULL, the calling nano-thread's waits show as
 * SYNCH on joining nano-thread t ("SYNCH join NAME #ID", as nth_join's),
 * whatever object they wait on: for a library whose join is built from
 * other primitives (the pthread shim's pthread_join waits on a semaphore
 * of its own, and showed as "SYNCH semaphore 0x..."). t must stay valid
 * until the NULL call. Returns 0, also when tracing is off or the caller
 * is no nano-thread (nothing to name). Two stores in the caller's
 * descriptor while tracing, nothing otherwise. Not async-signal-safe. */
NTH_API int nth_trace_wait_join(nth_t t);

/* Function-level probes (libnth-probes.so, or hand instrumentation): the
 * function at address fn was entered / left at at_ns (CLOCK_MONOTONIC ns, as
 * nth_trace_clock_ns(); 0 = now) on the calling nano-thread. A time in the
 * past lets a caller that filters short calls record an entry late; the
 * converters order records by time. Shown as nested slices on the
 * nano-thread's "functions" track. Returns 0; EINVAL for a NULL fn. */
NTH_API int nth_trace_function_enter(const void *fn, uint64_t at_ns);
NTH_API int nth_trace_function_exit(const void *fn, uint64_t at_ns);

/* Name the function at address fn (e.g. "solve_ (lu.f90:42)"), once.
 * Returns 0; EINVAL for a NULL fn or name. */
NTH_API int nth_trace_register_function(const void *fn, const char *name);

/* For libnth-malloc (NTH_TRACE_MALLOC=1): the process's malloc bytes in
 * use and allocation calls so far, shown as two counter tracks. Returns 0. */
NTH_API int nth_trace_memory(uint64_t bytes_in_use, uint64_t alloc_calls);

/* CLOCK_MONOTONIC in ns, the clock of every record. Never fails. */
NTH_API uint64_t nth_trace_clock_ns(void);

/* Start tracing from NTH_TRACE* without the runtime, for programs that are
 * traced only through libnth-probes: the calling kernel thread is shown as
 * nano-thread 1 ("main") running on VP 0. Returns 0 (also when NTH_TRACE is
 * unset); EBUSY if tracing already runs; EINVAL for a bad variable (one line
 * on stderr); the errors of opening the binary file. Call once, early. */
NTH_API int nth_trace_start_standalone(void);

#ifdef __cplusplus
}
#endif
#endif /* NTH_TRACE_H */
