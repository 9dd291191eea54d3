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
    /* The producer's own marks, from the tail it last read: a record that
     * ends at or below room_end fits (0 while `lost` waits to be
     * reported), one that ends below kick_at crosses no wake-up threshold.
     * The common record then reads neither `tail` nor `lost`. */
    uint64_t room_end, kick_at;
    uint64_t lost;                   /* producer's count not yet reported */
    uint64_t lost_total;             /* producer's count since the start (the exit line) */
    /* The consumer's line: its drains do not take the producer's away. */
    uint64_t tail __attribute__((aligned(64)));   /* written by the consumer (release) */
};

NTH_HIDDEN extern struct nth_trace_buf *nth_trace_bufs;   /* list head (CAS push) */
NTH_HIDDEN extern uint64_t nth_trace_ring_cap;            /* records per buffer */
NTH_HIDDEN extern uint64_t nth_trace_alloc_lost;          /* records of threads without a buffer */

NTH_HIDDEN uint64_t nth_trace_now(void);
/* Wake the idle writer (SCHED_BATCH, trace_writer.c): some buffer is half
 * full, or the rescuer's tick found records waiting. */
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

/* What nth_trace_finish_records() leaves for the conversion. */
struct nth_trace_finished {
    const char *bin;          /* the binary file, complete and closed */
    const char *out;          /* the chosen format's file; NULL for a .bin trace */
    uint64_t record_bytes;    /* bytes of records in bin */
    uint64_t lost;            /* events lost since the start */
    int write_error;          /* errno of the first failed append to bin, 0 if none */
};

/* The exit line of a process whose trace got no "wrote" line (a .bin
 * trace, or an output that could not be written), when events were lost
 * or the binary file could not be written: "nthlib: trace: N events lost
 * (CAUSE)". Every message about a full disk sends the user to this count.
 * Async-signal-safe (write(2), strerrordesc_np). */
NTH_HIDDEN void nth_trace_say_lost(const struct nth_trace_finished *f);

/* The exit line of a .bin trace (NTH_TRACE=NAME.bin): "nthlib: trace:
 * wrote BIN (N bytes, R records, L events lost)", the line every other
 * format gets, so that the user learns where the records went; R counts
 * the file's 32-byte records after its header, as `nth-trace stats` and
 * convert do. When bin could not be written (f->write_error) the
 * nth_trace_say_lost line is said instead. Async-signal-safe. */
NTH_HIDDEN void nth_trace_say_bin(const struct nth_trace_finished *f);

/* The first half of nth_trace_finish(): stop recording, write every
 * buffer, the LOST and END marks, close the binary file; fills *f.
 * Returns 0; -1 when there is nothing to do (tracing not started, already
 * finishing, or a fork()ed child: the file is the parent's); EBUSY if a
 * drainer held the lock for 2 s. Async-signal-safe: no malloc, no stdio,
 * no lock but the drain flag (bounded wait), so the fatal-signal handlers
 * call it; the conversion (malloc, zlib, stdio) is done elsewhere. */
NTH_HIDDEN int nth_trace_finish_records(struct nth_trace_finished *f);

/* Claim the output name abs_path (absolute) for this process while it
 * lives (trace_claim.c): returns a descriptor >= 0 that holds it (kept
 * open, close-on-exec; the kernel releases it when the process ends), -1
 * when another live process holds it (it traces to the same name), -2
 * when no claim can be made (no directory, no sockets): the caller then
 * writes the name as if free. Thread-safe. */
NTH_HIDDEN int nth_trace_claim_name(const char *abs_path);

/* 1 once nth_trace_start has said in its own line why it does not trace
 * (a relative NTH_TRACE with no nameable current directory), so that its
 * caller adds no second line. */
extern NTH_HIDDEN int nth_trace_start_told;

/* Exit paths (trace_exit.c): atexit and the fatal-signal handlers, and
 * what the latter need to have `nth-trace convert` turn bin into out (NULL:
 * a .bin trace, nothing to convert). Called once, at trace start (it
 * allocates; the handlers do not). Returns 0. */
NTH_HIDDEN int nth_trace_install_exit_paths(const char *bin, const char *out);

#endif
