/*
 * nth.h -- the nthlib runtime API: nano-threads on virtual processors.
 *
 * Conventions for every function here, unless its comment says otherwise:
 *  - errors are returned as POSIX error codes (0 on success), never through
 *    errno and never as a crash; a failed call leaves no resource behind;
 *  - times are in nanoseconds, sizes in bytes, CPU counts in CPUs;
 *  - calls are thread-safe and may be made from any nano-thread; the runtime
 *    starts lazily on the first call (or explicitly with nth_init()).
 *
 * A nano-thread switches only inside nthlib calls (cooperative scheduling):
 * code between two nthlib calls runs without being interleaved with other
 * nano-threads of the same virtual processor.
 *
 * `__thread` data is per kernel thread (per virtual processor), not per
 * nano-thread: a nano-thread that blocks and resumes may find another VP's
 * values. Use nano-thread keys (see the synchronisation section) instead.
 */
#ifndef NTH_H
#define NTH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define NTH_API __attribute__((visibility("default")))
#else
#define NTH_API
#endif

/* ------------------------------------------------------------------------
 * Configuration
 * ------------------------------------------------------------------------ */

/* Runtime settings. Every field has an environment variable (in brackets)
 * read by nth_config_from_env(); nth_config_default() gives the built-in
 * defaults without looking at the environment. */
typedef struct nth_config {
    unsigned vps;          /* [NTH_VPS] virtual processors; 0 = one per CPU of
                              the affinity mask, capped by the cgroup CPU quota */
    int bind;              /* [NTH_BIND] 1 = bind each VP to its CPU (default),
                              0 = no binding ("none") */
    size_t stack_size;     /* [NTH_STACK_SIZE] default nano-thread stack, bytes
                              (default 64 KiB) */
    unsigned spin_us;      /* [NTH_SPIN_US] idle spin before parking, µs (50) */
    unsigned stall_us;     /* [NTH_STALL_US] stall watchdog period, µs; 0 = off */
    const char *cpumgr;    /* [NTH_CPUMGR] cpumgr segment name, "off", or NULL
                              for the per-user default */
    const char *trace;     /* [NTH_TRACE] trace output path, NULL = no trace */
    size_t trace_buffer;   /* [NTH_TRACE_BUFFER] trace buffer per VP, bytes */
    unsigned reclaim_us;   /* [NTH_RECLAIM_US] bounded reclaim, µs (1000): a CPU
                              the cpumgr takes away is left within this time
                              even by a nano-thread that never yields */
    unsigned reserved[7];  /* zero; room for later settings */
} nth_config_t;

/* Fill *cfg with the built-in defaults. Never fails; thread-safe. */
NTH_API void nth_config_default(nth_config_t *cfg);

/* Fill *cfg with the defaults overridden by the NTH_* environment variables.
 * Returns 0, or EINVAL if a variable has a bad value: one line on stderr names
 * the variable and the accepted values, and that field keeps its default.
 * Thread-safe (reads the environment only). */
NTH_API int nth_config_from_env(nth_config_t *cfg);

/* Start the runtime with *cfg (NULL: nth_config_from_env()). The calling
 * kernel thread becomes VP 0 and the caller becomes a nano-thread.
 * Returns 0; EBUSY if the runtime already runs (lazily started or a second
 * nth_init); EINVAL for a bad field (vps > 4096, stack_size below 16 KiB or
 * above 1 GiB, ...); EAGAIN if kernel threads or memory cannot be had.
 * Call it from one thread before others use the runtime. */
NTH_API int nth_init(const nth_config_t *cfg);

/* ------------------------------------------------------------------------
 * Nano-threads
 * ------------------------------------------------------------------------ */

typedef struct nth_thread *nth_t;

#define NTH_VP_ANY (-1)
#define NTH_NAME_MAX 32          /* bytes, including the terminating NUL */
#define NTH_STACK_MIN (16 * 1024) /* bytes */

/* Creation attributes. Initialise with nth_attr_init(); use the setters. */
typedef struct nth_attr {
    size_t stack_size;           /* bytes; 0 = the runtime's default */
    int detached;                /* 1 = created detached */
    int vp;                      /* initial VP, or NTH_VP_ANY */
    char name[NTH_NAME_MAX];     /* for traces and the stack-overflow message */
    uintptr_t reserved[4];
} nth_attr_t;

/* Attribute setters and getters. Return 0 or EINVAL (NULL attr; stack size
 * below NTH_STACK_MIN or above 1 GiB; detach state not 0/1; vp neither
 * NTH_VP_ANY nor >= 0; name NULL). A name longer than NTH_NAME_MAX-1 bytes is
 * truncated. Not thread-safe on the same attr object. */
NTH_API int nth_attr_init(nth_attr_t *attr);
NTH_API int nth_attr_setstacksize(nth_attr_t *attr, size_t bytes);
NTH_API int nth_attr_getstacksize(const nth_attr_t *attr, size_t *bytes);
NTH_API int nth_attr_setdetached(nth_attr_t *attr, int detached);
NTH_API int nth_attr_getdetached(const nth_attr_t *attr, int *detached);
NTH_API int nth_attr_setvp(nth_attr_t *attr, int vp);
NTH_API int nth_attr_getvp(const nth_attr_t *attr, int *vp);
NTH_API int nth_attr_setname(nth_attr_t *attr, const char *name);

/* Create a nano-thread running fn(arg), ready at the tail of the creating
 * VP's local ready queue (or of attr->vp's). attr may be NULL.
 * Returns 0 and the handle in *t; EAGAIN if a stack or descriptor cannot be
 * allocated (nothing is leaked); EINVAL for a NULL t or fn, a bad attribute,
 * or attr->vp >= nth_num_vps(). Semantics after pthread_create(3p). */
NTH_API int nth_create(nth_t *t, const nth_attr_t *attr, void *(*fn)(void *), void *arg);

/* Wait for t to end and collect its result in *ret (ret may be NULL); the
 * caller leaves its VP to others while it waits. Returns 0; EDEADLK if t is
 * the caller; EINVAL if t is detached or another nano-thread already joins
 * it; ESRCH if t is not a live or unjoined nano-thread. After
 * pthread_join(3p). */
NTH_API int nth_join(nth_t t, void **ret);

/* Make t release its resources by itself when it ends. Returns 0; EINVAL if
 * it is already detached; ESRCH if t is unknown. After pthread_detach(3p). */
NTH_API int nth_detach(nth_t t);

/* End the calling nano-thread with result ret, after pthread_exit(3p).
 * Called from main's nano-thread, the other nano-threads go on and the
 * process exits with status 0 when the last of them ends. */
NTH_API __attribute__((noreturn)) void nth_exit(void *ret);

/* The calling nano-thread (starts the runtime if needed). Never fails. */
NTH_API nth_t nth_self(void);

/* Nonzero when a and b are the same nano-thread. */
NTH_API int nth_equal(nth_t a, nth_t b);

/* Put the caller at the tail of its VP's local ready queue and run the next
 * ready nano-thread, if any. Returns 0. */
NTH_API int nth_yield(void);

/* Block the running nano-thread until nth_to_rq() makes it ready again. The
 * caller must first have put itself where a waker will find it (a wait
 * queue). Permit semantics: an nth_to_rq() that comes before the nth_wait()
 * makes that nth_wait() return at once, so no wake-up is lost; a return does
 * not prove the awaited condition (re-check it). Thread-safe. */
NTH_API void nth_wait(void);

/* Make the blocked nano-thread t ready (it goes to the local ready queue of
 * the calling VP, or to the global ready queue when called from a kernel
 * thread that is no VP), waking a parked VP if one is needed. If t is
 * running or ready, its next nth_wait() returns at once. Returns 0, or ESRCH
 * if t is unknown. Thread-safe; async-signal-safe. */
NTH_API int nth_to_rq(nth_t t);

/* Number of virtual processors (starts the runtime if needed). */
NTH_API int nth_num_vps(void);

/* Index of the VP running the caller, 0 .. nth_num_vps()-1; -1 when called
 * from a kernel thread that is not a VP. */
NTH_API int nth_vp_id(void);

/* A unique, never reused number for t (1 for main's nano-thread); 0 for an
 * unknown t. */
NTH_API uint64_t nth_id(nth_t t);

/* Copy t's name into buf (len bytes, NUL-terminated). Returns 0, ERANGE if
 * len is too small, ESRCH if t is unknown. */
NTH_API int nth_getname(nth_t t, char *buf, size_t len);
/* Set t's name (truncated to NTH_NAME_MAX-1 bytes). 0, EINVAL, ESRCH. */
NTH_API int nth_setname(nth_t t, const char *name);

/* ------------------------------------------------------------------------
 * Synchronisation, timers and blocking system calls
 * ------------------------------------------------------------------------ */

/* ------------------------------------------------------------------------
 * CPU manager
 *
 * A malleable application says how many CPUs it wants; a cpumgr(8) daemon,
 * when one runs on the segment named by NTH_CPUMGR (default
 * "/nth-cpumgr-<uid>"; "off" disables it), decides how many and which CPUs
 * it gets, never outside the process affinity mask. Without a daemon the
 * application runs alone on min(request, CPUs of its affinity mask); if the
 * daemon dies it carries on alone and re-attaches when the daemon returns.
 * The assignment changes between two calls: size parallel work from
 * nth_cpus_assigned() each time a region starts.
 * ------------------------------------------------------------------------ */

struct hwloc_bitmap_s; /* hwloc_bitmap_t, from <hwloc.h> */

/* Ask for n CPUs (1..1024); more than the affinity mask holds is capped
 * to it. Takes effect at the daemon's next rebalance (a futex wakes it).
 * Returns 0; EINVAL if n is out of range; ENOMEM. Thread-safe. */
NTH_API int nth_cpus_request(int n);

/* Number of CPUs assigned now (0 while the daemon rotates CPUs among more
 * applications than it has CPUs). Standalone: min(request, CPUs of the
 * affinity mask), the request defaulting to all of them. Never fails;
 * thread-safe, lock-free. */
NTH_API int nth_cpus_assigned(void);

/* A copy of the assigned CPU set (OS indices) in *out, to be released with
 * hwloc_bitmap_free(). Returns 0; EINVAL if out is NULL; ENOMEM.
 * Thread-safe. */
NTH_API int nth_cpus_assigned_mask(struct hwloc_bitmap_s **out);

/* Set this application's priority for cpumgr's `priority` policy, 1..1000
 * (default 1; higher gets more). Returns 0, EINVAL if out of range, ENOMEM.
 * Standalone it is kept and sent on attach. Thread-safe. */
NTH_API int nth_set_priority(int p);

/* 1 if attached to a running cpumgr daemon now, 0 if running alone.
 * Thread-safe. */
NTH_API int nth_cpumgr_attached(void);

/* ------------------------------------------------------------------------
 * Parallel regions
 * ------------------------------------------------------------------------ */

#ifdef __cplusplus
}
#endif
#endif /* NTH_H */
