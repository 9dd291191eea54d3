/*
 * team.h -- the tiny "team" layer the LU and SOR kernels are written against.
 *
 * Each kernel source expresses its parallel loops once, as parallel regions:
 * team_run() runs fn(id, n, arg) on a team of n workers (id = 0 .. n-1, the
 * caller being worker 0) and returns when all of them have returned, which is
 * the region's closing barrier. Inside a region team_barrier() waits for the
 * whole team. The same kernel source is then linked with one backend:
 *
 *   team_seq.c     a team of one, the sequential build;
 *   team_glibc.c   glibc pthreads, a fixed pool created by team_start() and
 *                  reused by every region, pthread_barrier for the barriers;
 *   team_openmp.c  gcc's libgomp: `#pragma omp parallel` and `omp barrier`;
 *   team_nth.c     (later) libnth: nth_parallel(n, fn, arg), where n = 0 asks
 *                  nth_cpus_assigned() at every region entry, so a malleable
 *                  run follows the CPUs the CPU manager gives it, region by
 *                  region, as the JOMP applications did on JNE.
 *
 * Because the team size may change from one region to the next (malleable
 * builds), a kernel must derive its partition from the n it is handed, never
 * from a value cached across regions.
 *
 * None of these calls is thread-safe with respect to another team_start /
 * team_stop / team_run: one control thread (main) drives the team.
 */
#ifndef NTH_BENCH_TEAM_H
#define NTH_BENCH_TEAM_H

/* Body of a parallel region: worker id of a team of n. */
typedef void (*team_fn)(int id, int n, void *arg);

/* Name of the backend as it appears in the benchmark JSON "impl" field:
 * "seq", "glibc", "openmp", "nth-fixed" or "nth-malleable" (the nth backend
 * answers according to the malleable flag given to team_start()). */
const char *team_impl(void);

/* Prepare the team. threads: workers per region, in CPUs' worth of kernel
 * threads (glibc, openmp) or nano-threads (nth); 0 = one per CPU this process
 * may run on (hwloc: binding mask within the allowed cpuset). malleable: 1 =
 * let the runtime choose the team size at every region entry (only the nth
 * backend accepts it; `threads` is then the number of CPUs requested).
 * Returns 0; EINVAL for a negative or oversized thread count, for a team of
 * more than one in the sequential build, or for malleable on a backend that
 * cannot be; EAGAIN if the workers cannot be created. */
int team_start(int threads, int malleable);

/* Workers the next region will get when team_run() is passed n = 0 (for
 * reports; a malleable backend may change it before the region starts). */
int team_size(void);

/* Run a parallel region: fn(id, n, arg) on n workers, n = 0 meaning the
 * backend's choice (team_start()'s thread count, or the CPUs assigned for a
 * malleable run). Returns after every worker has returned: 0, or EINVAL if n
 * exceeds what the backend can provide or team_start() was not called. */
int team_run(int n, team_fn fn, void *arg);

/* Wait until every worker of the current region has called it. Only valid
 * inside a region function; a team of one returns at once. */
void team_barrier(void);

/* Release the workers; team_start() may be called again afterwards. */
void team_stop(void);

/* Static block partition of the iteration range [lo, hi) among n workers:
 * worker id gets [*b, *e), the first (hi-lo) % n workers one iteration more.
 * Blocks are contiguous and in id order, so they tile [lo, hi) exactly. */
static inline void team_block(long lo, long hi, int id, int n, long *b, long *e)
{
    long len = hi > lo ? hi - lo : 0;
    long q = len / n, r = len % n;
    *b = lo + id * q + (id < r ? id : r);
    *e = *b + q + (id < r ? 1 : 0);
}

/* CPUs this process may run on, from hwloc (binding mask intersected with
 * the allowed cpuset, so taskset and cgroup cpusets are honoured); at least 1.
 * Shared by the backends for the threads = 0 default. */
int team_cpus_available(void);

#endif /* NTH_BENCH_TEAM_H */
