/*
 * sync_core.h -- what the synchronisation part needs from the runtime core,
 * in one place.
 *
 * The public half (nth_self, nth_wait, nth_to_rq, nth_yield, nth_num_vps)
 * is in nth.h. The internal half is declared weak so that libnth links and
 * the sync objects work before the core provides it: without a per-VP timer
 * queue, timed waits use one process-wide queue (sync_fallback_tq) fired by
 * every scheduling point that reaches nth__timers_poll(); without a
 * per-descriptor `specific` slot, keys report ENOMEM.
 */
#ifndef NTH_SYNC_CORE_H
#define NTH_SYNC_CORE_H

#include "nth.h"
#include "timer_queue.h"

#define NTH_HIDDEN __attribute__((visibility("hidden")))

/* Core -> sync (core defines these; weak here until it does). */

/* The timer queue of the VP running the caller; NULL when the caller is no
 * VP. Core keeps one per VP, calls nth__timers_poll() on it at every
 * scheduling point and in the idle loop, bounds a park by
 * nth_tq_next_deadline(), and nth_tq_move()s it to a running VP when the VP
 * parks for good or loses its CPU. */
extern struct nth_tq *nth__vp_timer_queue(void) __attribute__((weak));

/* The address of the calling nano-thread's `specific` pointer (NULL when
 * the caller is no nano-thread). nth__keys_exit(slot) must run when a
 * nano-thread ends, before its descriptor is reused. */
extern void **nth__specific_slot(void) __attribute__((weak));
/* Make sure nth__keys_exit runs at every nano-thread exit (first key). */
extern void nth__keys_exit_hook_install(void) __attribute__((weak));

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

#endif
