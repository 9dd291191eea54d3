/*
 * trace_rt.h -- state shared by the recorder (trace_record.c), the background
 * writer (trace_writer.c) and the exit paths (trace_exit.c). Internal.
 */
#ifndef NTH_TRACE_RT_H
#define NTH_TRACE_RT_H

#include <stdint.h>
#include "trace_hooks.h"

/* One kernel thread's buffer: a single-producer (the owning kernel thread),
 * single-consumer (whoever holds the drain lock) ring of records. The
 * producer never waits: a record that does not fit is counted in `lost` and
 * reported by a LOST record once there is room again. */
struct nth_trace_buf {
    struct nth_trace_buf *next;      /* registration list; never unlinked */
    struct nth_trace_rec *ring;
    uint64_t cap;                    /* records, a power of two */
    uint64_t head;                   /* written by the producer (release) */
    uint64_t tail;                   /* written by the consumer (release) */
    uint64_t lost;                   /* producer's count not yet reported */
    uint64_t lost_total;             /* producer's count since the start (the exit line) */
};

NTH_HIDDEN extern struct nth_trace_buf *nth_trace_bufs;   /* list head (CAS push) */
NTH_HIDDEN extern uint64_t nth_trace_ring_cap;            /* records per buffer */
NTH_HIDDEN extern uint64_t nth_trace_alloc_lost;          /* records of threads without a buffer */

NTH_HIDDEN uint64_t nth_trace_now(void);
/* Wake the (SCHED_IDLE) writer because some buffer is half full. */
NTH_HIDDEN void nth_trace_kick_writer(void);
/* Wake the normal-policy rescuer: some buffer is three quarters full. */
NTH_HIDDEN void nth_trace_kick_rescuer(void);
/* Test hook (tests/trace/test_trace_writer.c): while non-zero the idle
 * writer does not drain, as if it never got a CPU. */
NTH_HIDDEN extern int nth_trace_writer_test_hold;

/* Bench hook (bench/trace_lu_ab.c): write every buffer's records to the
 * file now, on the calling thread, as a writer pass does. Returns 0 (also
 * when tracing is not started or finishing), EBUSY if a drainer held the
 * lock for 2 s. Thread-safe (the drain lock). */
NTH_HIDDEN int nth_trace_drain_now(void);

/* Exit paths (trace_exit.c): atexit and the fatal-signal handlers. */
NTH_HIDDEN int nth_trace_install_exit_paths(void);

#endif
