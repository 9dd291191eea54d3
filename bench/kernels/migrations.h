/*
 * migrations.h -- count the CPU migrations of a kernel program (all its
 * threads) for the workload driver's "migrations per second", without
 * opening a file per thread under /proc.
 *
 * Why not /proc/self/task/TID/sched (se.nr_migrations), as the harness did:
 * every per-thread /proc file a process opens leaves dentries that the
 * kernel flushes when the process is reaped (wait4 -> release_task ->
 * proc_flush_pid -> d_invalidate -> d_walk), in the reaper's context. On
 * this 2-CPU VM under load that cost the workload driver 61-100 ms of CPU
 * per reaped 5-thread child, 20-45 % of the machine in the 3-instance mixes
 * (bench/RESULTS.md, "mal3"): the measurement distorted what it measured.
 *
 * Sources, chosen once by migr_start() from HARNESS_MIGRATIONS:
 *   unset or "perf"  the kernel's software counter
 *                    PERF_COUNT_SW_CPU_MIGRATIONS (perf_event_open(2)),
 *                    opened on the calling thread with inherit = 1, so it
 *                    covers every thread created after it (not before:
 *                    call it before any thread starts). The event fires in
 *                    the scheduler, so kernel counting must be allowed
 *                    (exclude_kernel = 1 counts nothing): root, CAP_PERFMON,
 *                    or kernel.perf_event_paranoid <= 1. When refused the
 *                    source is "none": the cheap fallback is not counting.
 *   "proc"           the old per-thread /proc read, at the reap cost above;
 *                    sums live threads only (opt-in, for kernels without
 *                    perf events).
 *   "off"            not counted.
 */
#ifndef NTH_BENCH_MIGRATIONS_H
#define NTH_BENCH_MIGRATIONS_H

/* Choose the source and open the counter. Call once, from the main thread,
 * before any other thread exists. Returns 0 (whatever the source, even
 * "none"), or EINVAL when HARNESS_MIGRATIONS holds another value (a
 * one-line message on stderr). Not thread-safe. */
int migr_start(void);

/* Migrations counted since migr_start(), every thread of the process
 * (source "perf": threads that exited included); -1 when the source is
 * "none" or the read fails. Thread-safe once migr_start() returned. */
long migr_read(void);

/* "perf", "proc" or "none": what migr_read() reports. */
const char *migr_source(void);

/* Why the source is "none" (e.g. "perf_event_open: Permission denied"),
 * or "" when it is not. */
const char *migr_why(void);

#endif /* NTH_BENCH_MIGRATIONS_H */
