/*
 * sync_core.h -- what the synchronisation part needs from the runtime core,
 * in one place.
 *
 * The public half (nth_self, nth_wait, nth_to_rq, nth_yield, nth_num_vps)
 * is in nth.h. The internal half is defined by sync_glue.c on the core's
 * hooks, or by tests/sync/mock_core.c for the tests of the objects alone.
 * (Not weak symbols: a static link would then leave sync_glue.o out.)
 */
#ifndef NTH_SYNC_CORE_H
#define NTH_SYNC_CORE_H

#include <stdint.h>
#include "nth.h"
#include "timer_queue.h"
#include "trace_format.h"

#define NTH_HIDDEN __attribute__((visibility("hidden")))

/* Core -> sync: sync_glue.c implements these on the core's hooks. */

/* The timer queue of the VP running the caller; NULL when the caller is no
 * VP. Core keeps one per VP, calls nth__timers_poll() on it at every
 * scheduling point and in the idle loop, bounds a park by
 * nth_tq_next_deadline(), and nth_tq_move()s it to a running VP when the VP
 * parks for good or loses its CPU. */
NTH_HIDDEN struct nth_tq *nth__vp_timer_queue(void);
/* The running nano-thread's real deadline for the alarms it arms
 * (nth_wait_slices), 0 none or no nano-thread. */
NTH_HIDDEN uint64_t nth__wait_real(void);

/* The address of the calling nano-thread's `specific` pointer (NULL when
 * the caller is no nano-thread). nth__keys_exit(slot) must run when a
 * nano-thread ends, before its descriptor is reused. */
NTH_HIDDEN void **nth__specific_slot(void);
/* Make sure nth__keys_exit runs at every nano-thread exit (first key). */
NTH_HIDDEN void nth__keys_exit_hook_install(void);

/* nth_to_rq(t) for a nano-thread the caller knows to be alive (the owner of
 * a waiter record it claimed, which waits for the record's final state):
 * skips the handle check (a slab lookup per wake-up). Any kernel thread;
 * same permit semantics as nth_to_rq. */
NTH_HIDDEN void nth__wake(nth_t t);
/* nth__wake, but at the tail of the calling VP's local ready queue (the
 * global queue from a kernel thread that is no VP), never in its
 * next_local slot, which runs before that queue. For wake-ups made by an
 * alarm (a timed wait that timed out, a sleep that ended): those are due at
 * every scheduling point while timed waiters retry with short deadlines,
 * and put in next_local they kept it full, so that the local queue -- a
 * nano-thread that yielded holding a mutex those waiters want -- never ran
 * (issue 4: test_sync's timed mutex stress, 1-3 s without a critical
 * section). next_local is for a waker handing work to the nano-thread it
 * woke (Go's runnext); an alarm hands nothing. */
NTH_HIDDEN void nth__wake_fifo(nth_t t);

/* Foreign waiters (foreign.c): a kernel thread that is no VP waits on a
 * futex word of its own, named in waiter records and owner fields by a
 * tagged handle (bit 0 set; descriptors are aligned). */
#define NTH_FOREIGN_TAG ((uintptr_t)1)
static inline int nth_is_foreign(nth_t t)
{
    return ((uintptr_t)t & NTH_FOREIGN_TAG) != 0;
}
/* The calling kernel thread's tagged handle. */
NTH_HIDDEN nth_t nth__foreign_self(void);
/* Post foreign t's word (a permit, as nth_to_rq's), waking its thread. */
NTH_HIDDEN void nth__foreign_wake(nth_t t);
/* Sleep the calling foreign thread self until its word is posted (consumed:
 * 0) or CLOCK_MONOTONIC deadline ns passes (ETIMEDOUT; NTH_TQ_NONE: none). */
NTH_HIDDEN int nth__foreign_wait(nth_t self, uint64_t deadline);
/* Who the caller is to the sync objects: its nano-thread, or its foreign
 * handle on a kernel thread that is no VP (nth_self() NULL). */
static inline nth_t nth__me(void)
{
    nth_t t = nth_self();
    return t ? t : nth__foreign_self();
}
/* nth__wake for any waiter record's owner, nano-thread or foreign. */
static inline void nth__wake_any(nth_t t)
{
    if (nth_is_foreign(t))
        nth__foreign_wake(t);
    else
        nth__wake(t);
}
/* nth__wake_fifo for any waiter record's owner: the alarms' wake-up. */
static inline void nth__wake_any_fifo(nth_t t)
{
    if (nth_is_foreign(t))
        nth__foreign_wake(t);
    else
        nth__wake_fifo(t);
}

/* Tracing: nonzero while recording (trace_record.c; the mock's is 0). */
extern NTH_HIDDEN int nth_trace_on;
/* The calling nano-thread is about to wait on obj, of enum
 * nth_trace_obj_kind kind (NULL: the wait is over): if it is switched out
 * blocked meanwhile, its SYNCH slice names obj. Stores in the caller's
 * descriptor; no record, no allocation. Call through nth_sync_trace_wait. */
NTH_HIDDEN void nth__sync_trace_wait(const void *obj, unsigned kind);
static inline void nth_sync_trace_wait(const void *obj, unsigned kind)
{
    if (__builtin_expect(__atomic_load_n(&nth_trace_on, __ATOMIC_RELAXED), 0))
        nth__sync_trace_wait(obj, kind);
}

/* An alarm was armed on the shared fallback queue (by a kernel thread
 * that is no VP, or a nano-thread a stall watchdog stand-in runs), whose
 * earliest deadline was `before` (CLOCK_MONOTONIC ns, UINT64_MAX: empty)
 * just before: make sure something fires it (wake a parked VP to
 * recompute its park timeout, or the watchdog's backstop when every VP is
 * in a system call). Any kernel thread. */
NTH_HIDDEN void nth__sync_fallback_armed(uint64_t before);

/* Sync -> core (sync defines these). */

/* Fire the expired alarms of q (may be NULL) and of the fallback queue. Returns the earliest remaining deadline, CLOCK_MONOTONIC
 * ns, or UINT64_MAX. Runs on a VP's kernel thread, never switches. */
NTH_HIDDEN uint64_t nth__timers_poll(struct nth_tq *q);

/* Run the key destructors for the specific table in *slot (destructors
 * may store values again through the same slot), free it, NULL *slot. */
NTH_HIDDEN void nth__keys_exit(void **slot);

/* The queue shared by callers that have no VP timer queue. */
NTH_HIDDEN struct nth_tq *nth__sync_fallback_tq(void);

/* The timer queue a timed wait of the caller arms its alarm on. */
NTH_HIDDEN struct nth_tq *nth__sync_tq(void);

/* Arm a on the caller's timer queue (nth__sync_tq), and see that someone
 * fires it when that is the shared queue. */
NTH_HIDDEN void nth__sync_arm(struct nth_alarm *a);

#endif
