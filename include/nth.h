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
    unsigned stall_us;     /* [NTH_STALL_US] stall watchdog threshold, µs (default 1000); 0 = off */
    const char *cpumgr;    /* [NTH_CPUMGR] cpumgr segment name, "off", or NULL
                              for the per-user default */
    const char *trace;     /* [NTH_TRACE] trace output path, NULL = no trace */
    size_t trace_buffer;   /* [NTH_TRACE_BUFFER] trace buffer per VP, bytes */
    unsigned reclaim_us;   /* [NTH_RECLAIM_US] bounded reclaim, µs (1000): a CPU
                              the cpumgr takes away is left within this time
                              even by a nano-thread that never yields */
    unsigned team_spin_us; /* [NTH_TEAM_SPIN_US] how long a team member waiting
                              at nth_team_barrier() or a region's end spins
                              before it blocks, µs (1000); it spins only
                              while its VP has nothing else to run */
    unsigned standins_max; /* [NTH_STANDINS_MAX] stand-in kernel threads that may
                              exist at once (0 = the default, 1024): one serves
                              each kernel thread asleep in a system call with
                              ready nano-threads behind it (watchdog.c) */
    unsigned reserved[5];  /* zero; room for later settings */
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
 * Start *cfg from nth_config_default() (or nth_config_from_env()) and
 * change the fields you set: a zero-filled struct is not the defaults
 * (stack_size 0 is out of range, bind 0 means no binding).
 * Returns 0; EBUSY if the runtime already runs (lazily started or a second
 * nth_init), whatever *cfg holds; EINVAL for a bad field (vps > 4096,
 * stack_size below 16 KiB or above 1 GiB, ...), with one line on stderr
 * naming the field, its value and the accepted ones; EAGAIN if kernel
 * threads or memory cannot be had.
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
    uintptr_t reserved[4];       /* [0]: the caller's stack (nth_attr_setstack);
                                    [1]: guard bytes + 1, 0 = default */
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
/* The guard below a runtime stack, in bytes (after pthread_attr_setguardsize
 * (3p)): rounded up to whole pages when the nano-thread is created, 0 for
 * none; the default is one page. A guard other than one page puts the stack
 * in a size class of its own. Ignored with nth_attr_setstack (no guard is
 * added to a caller's stack). Return 0; EINVAL for a NULL pointer or a
 * guard above 1 GiB. The getter gives the bytes set, or one page. Not
 * thread-safe on one attr. */
NTH_API int nth_attr_setguardsize(nth_attr_t *attr, size_t bytes);
NTH_API int nth_attr_getguardsize(const nth_attr_t *attr, size_t *bytes);
/* Run the nano-thread on the caller's memory [addr, addr + bytes) instead of
 * a runtime stack (after pthread_attr_setstack(3p)). The caller keeps the
 * memory valid until the nano-thread is joined (or, detached, has exited)
 * and frees it. No guard page is added: an overflow writes below addr. The
 * descriptor is not put on that memory (nor at its top): it lives in a
 * runtime unit of the smallest stack class, so the whole range is stack.
 * Setting a stack also sets the stack size to bytes. Returns 0; EINVAL for
 * a NULL attr or addr, or bytes outside the stack size range. Not
 * thread-safe on one attr. The getter gives NULL when none was set. */
NTH_API int nth_attr_setstack(nth_attr_t *attr, void *addr, size_t bytes);
NTH_API int nth_attr_getstack(const nth_attr_t *attr, void **addr, size_t *bytes);

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
 * ready nano-thread, if any. Returns 0. While the caller's kernel thread
 * holds one of ld.so's locks (in a constructor or destructor that
 * dlopen(3p)/dlclose(3p) runs: see nth_wait), it yields that kernel
 * thread's CPU instead (sched_yield(2)) and goes on there. */
NTH_API int nth_yield(void);

/* Continue the calling nano-thread on VP vp (0 .. nth_num_vps()-1), i.e. on
 * that VP's kernel thread: the caller goes to the tail of vp's local ready
 * queue and its current VP runs something else. For code that must see the
 * kernel thread it saw before a switch (an errno address a compiler cached:
 * glibc declares __errno_location() const). Best effort: other VPs leave
 * the caller in vp's queue while vp is parked (being woken for it), else
 * for 10 ms at most (a vp that computes without scheduling points cannot
 * hold it longer); a stall stand-in may run it.
 * Returns 0 when the caller now runs on vp (also when it already did);
 * EAGAIN when it ended on another one (retry if it matters), vp's CPU is
 * taken away (disabled VP), or the caller's kernel thread holds one of
 * ld.so's locks (nth_wait: it stays where it is); EINVAL for a bad vp; EPERM when the caller is no
 * nano-thread. Thread-safe. A scheduling point. */
NTH_API int nth_move_to_vp(int vp);

/* Block the running nano-thread until nth_to_rq() makes it ready again. The
 * caller must first have put itself where a waker will find it (a wait
 * queue). Permit semantics: an nth_to_rq() that comes before the nth_wait()
 * makes that nth_wait() return at once, so no wake-up is lost; a return does
 * not prove the awaited condition (re-check it). Thread-safe.
 * While the caller's kernel thread holds one of ld.so's locks (glibc runs
 * the constructors of dlopen(3p) and the destructors of dlclose(3p) with
 * its recursive load lock held, owned by a kernel thread), the caller
 * blocks that kernel thread, with its VP lent to a stand-in as in
 * nth_blocking_enter(), and resumes on it: switched out, it could resume
 * on another kernel thread, whose unlock would leave the lock held for
 * ever, while the nano-threads run meanwhile on the owner would enter
 * ld.so under a lock they do not hold (nthlib/ldso_lock.c). */
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
 * unknown t. Not dense: each VP takes ids in blocks of 1024 (no shared
 * counter on the create path), so the nano-threads created on a second
 * VP are numbered from 1026 or 2050, ... */
NTH_API uint64_t nth_id(nth_t t);

/* t's stack as pthread_attr_getstack(3p) gives it: *addr its lowest usable
 * byte, *bytes its size in bytes (for a runtime stack the size asked for,
 * rounded to pages, the runtime's descriptor at its top included, as
 * glibc's thread stacks include theirs), *guard
 * the bytes of inaccessible guard just below *addr (for a runtime stack the
 * guard asked for, rounded to pages, by default one page; 0 for a caller's
 * stack from nth_attr_setstack). For stack scanners
 * and pthread_getattr_np. Returns 0; EINVAL for a NULL pointer, an unknown
 * t, or one that runs on its kernel thread's own stack (main's). Thread-safe:
 * a stack does not change while its nano-thread lives. */
NTH_API int nth_getstack(nth_t t, void **addr, size_t *bytes, size_t *guard);

/* Copy t's name into buf (len bytes, NUL-terminated). Returns 0; ERANGE if
 * len is too small for the name and its NUL (also for buf NULL, len 0: as
 * glibc's pthread_getname_np(3)); EINVAL for buf NULL with a len that
 * would fit; ESRCH if t is unknown. */
NTH_API int nth_getname(nth_t t, char *buf, size_t len);
/* Set t's name (truncated to NTH_NAME_MAX-1 bytes). 0, EINVAL, ESRCH. */
NTH_API int nth_setname(nth_t t, const char *name);

/* ------------------------------------------------------------------------
 * Synchronisation, timers and blocking system calls
 *
 * Every object here is built on nth_wait()/nth_to_rq(): a nano-thread that
 * has to wait leaves its VP to run other nano-threads, and a VP with nothing
 * to run parks. The object types fit in the corresponding glibc types
 * (pthread_mutex_t 40 bytes, pthread_cond_t 48, pthread_rwlock_t 56,
 * pthread_barrier_t 32, sem_t 32 on x86-64) so a pthread shim can place
 * them inside the application's own objects, and an all-zero object is a
 * valid default-initialised one (the *_INITIALIZER macros are all zero), so
 * glibc's static initialisers are recognised.
 *
 * Absolute deadlines are struct timespec against the object's clock:
 * CLOCK_REALTIME unless a clock was chosen (condition variables), checked
 * like POSIX: EINVAL for tv_nsec outside [0, 1e9) or tv_sec < 0, ETIMEDOUT
 * at once for a deadline already past. A timed wait never returns
 * ETIMEDOUT before its deadline. CLOCK_REALTIME deadlines are re-checked
 * against the wall clock when they fire, so setting the clock back delays
 * the timeout accordingly; setting it forward is seen when the original
 * (CLOCK_MONOTONIC) deadline fires.
 *
 * None of these calls is async-signal-safe.
 * ------------------------------------------------------------------------ */

/* --- mutex (after pthread_mutex_lock(3p)) ------------------------------ */

#define NTH_MUTEX_NORMAL     0   /* relock deadlocks; no owner checks */
#define NTH_MUTEX_RECURSIVE  1   /* relock counts; unlock by non-owner EPERM */
#define NTH_MUTEX_ERRORCHECK 2   /* relock EDEADLK; unlock by non-owner EPERM */
#define NTH_MUTEX_DEFAULT    NTH_MUTEX_NORMAL

/* 40 bytes: fits pthread_mutex_t. Fields are private. */
typedef struct nth_mutex {
    uint32_t __state;            /* 0 free, 1 locked, 2 locked with waiters */
    uint32_t __lock;             /* wait-queue spinlock */
    uint32_t __type;             /* NTH_MUTEX_* */
    uint32_t __count;            /* recursion depth beyond the first lock; normal: bias word */
    void *__owner;               /* nth_t (recursive and error-checking) */
    void *__head, *__tail;       /* wait queue */
} nth_mutex_t;
#define NTH_MUTEX_INITIALIZER { 0, 0, 0, 0, 0, 0, 0 }

typedef struct nth_mutexattr { int __type; int __reserved; } nth_mutexattr_t;

/* Attributes: 0, or EINVAL for a NULL attr or a type that is not NTH_MUTEX_*.
 * Not thread-safe on one attr object. */
NTH_API int nth_mutexattr_init(nth_mutexattr_t *attr);
NTH_API int nth_mutexattr_destroy(nth_mutexattr_t *attr);
NTH_API int nth_mutexattr_settype(nth_mutexattr_t *attr, int type);
NTH_API int nth_mutexattr_gettype(const nth_mutexattr_t *attr, int *type);

/* Initialise m (attr NULL: normal). 0; EINVAL for NULL m or a bad attr.
 * A normal mutex is biased to the first kernel thread that locks it: while
 * only nano-threads run by that kernel thread use it, lock and unlock are
 * plain stores (no atomic instruction). The first use from another kernel
 * thread (another VP, a blocking stand-in) revokes the bias for good, at
 * the cost of one membarrier(2) (a barrier on every CPU running a thread of
 * the process). NTH_MUTEX_BIAS=0 turns this off. */
NTH_API int nth_mutex_init(nth_mutex_t *m, const nth_mutexattr_t *attr);
/* 0; EBUSY if m is locked or has waiters (m is left intact). */
NTH_API int nth_mutex_destroy(nth_mutex_t *m);
/* Lock m; a nano-thread that finds it taken spins briefly (only when there
 * is more than one VP) and then blocks. 0; EDEADLK relocking an
 * error-checking mutex; EAGAIN when a recursive mutex's count would
 * overflow. A normal mutex relocked by its owner deadlocks, as in POSIX.
 * Unfair within a bound: a woken waiter retries against running lockers,
 * and once it has lost 16 times or for 1 ms the next unlock hands m to it
 * (after Go's sync.Mutex starvation mode), so a nano-thread that unlocks
 * and relocks at once cannot starve it. */
NTH_API int nth_mutex_lock(nth_mutex_t *m);
/* Like nth_mutex_lock() without blocking: EBUSY when m is taken (also when
 * the owner of an error-checking mutex retries). */
NTH_API int nth_mutex_trylock(nth_mutex_t *m);
/* Like nth_mutex_lock() until the absolute deadline *abstime
 * (CLOCK_REALTIME, after pthread_mutex_timedlock(3p)): ETIMEDOUT when it
 * passes, EINVAL for a bad timespec (checked only if m is taken). */
NTH_API int nth_mutex_timedlock(nth_mutex_t *m, const struct timespec *abstime);
/* The same against CLOCK_MONOTONIC or CLOCK_REALTIME (EINVAL otherwise),
 * after pthread_mutex_clocklock. */
NTH_API int nth_mutex_clocklock(nth_mutex_t *m, clockid_t clock, const struct timespec *abstime);
/* Unlock m and make its first waiter ready (handing m to it if it is
 * starving: see nth_mutex_lock). 0; EPERM when the caller does not own a
 * recursive or error-checking mutex. */
NTH_API int nth_mutex_unlock(nth_mutex_t *m);

/* --- condition variable (after pthread_cond_wait(3p)) ------------------ */

/* 48 bytes: fits pthread_cond_t. Fields are private. */
typedef struct nth_cond {
    uint32_t __lock;             /* wait-queue spinlock */
    uint32_t __clock;            /* clockid_t for timed waits; 0 = REALTIME */
    void *__head, *__tail;       /* wait queue */
    uint32_t __bias;             /* __lock's bias word (mutex_bias.h) */
    uint32_t __pad;
    uintptr_t __reserved[2];
} nth_cond_t;
#define NTH_COND_INITIALIZER { 0, 0, 0, 0, 0, 0, { 0, 0 } }

typedef struct nth_condattr { int __clock; int __reserved; } nth_condattr_t;

/* Attributes: the clock of timed waits, CLOCK_REALTIME (default) or
 * CLOCK_MONOTONIC. 0, or EINVAL (NULL attr, other clock). */
NTH_API int nth_condattr_init(nth_condattr_t *attr);
NTH_API int nth_condattr_destroy(nth_condattr_t *attr);
NTH_API int nth_condattr_setclock(nth_condattr_t *attr, clockid_t clock);
NTH_API int nth_condattr_getclock(const nth_condattr_t *attr, clockid_t *clock);

/* 0; EINVAL for NULL c or a bad attr. */
NTH_API int nth_cond_init(nth_cond_t *c, const nth_condattr_t *attr);
/* 0; EBUSY while nano-threads wait on c (c is left intact). */
NTH_API int nth_cond_destroy(nth_cond_t *c);
/* Atomically unlock m (which the caller holds) and wait until signalled,
 * then relock m. 0; EPERM if m is recursive or error-checking and not held
 * by the caller. Spurious wake-ups do not happen in this implementation
 * but callers should re-check their predicate as POSIX says. */
NTH_API int nth_cond_wait(nth_cond_t *c, nth_mutex_t *m);
/* nth_cond_wait() until the absolute deadline *abstime on c's clock.
 * ETIMEDOUT once it passed (m is relocked either way); EINVAL for a bad
 * timespec. A signal and a timeout that race are resolved once: the return
 * value says which won, and a signal that lost goes to another waiter. */
NTH_API int nth_cond_timedwait(nth_cond_t *c, nth_mutex_t *m, const struct timespec *abstime);
/* nth_cond_wait() that a third party can interrupt without holding m:
 * it sets *stop to non-zero, issues a full fence
 * (__atomic_thread_fence(__ATOMIC_SEQ_CST)), then calls
 * nth_cond_broadcast(c). The waiter returns EINTR, m relocked (still held
 * in fact: it never left), if it saw *stop after queueing itself and
 * before sleeping; otherwise the broadcast wakes it and it returns 0. For
 * cancellation and signals in a pthread layer, where the canceller cannot
 * take the waiter's mutex: reading the flag before nth_cond_wait() would
 * leave a window in which the broadcast finds nobody queued. Thread-safe;
 * EINVAL for a NULL stop, otherwise as nth_cond_wait(). */
NTH_API int nth_cond_wait_interruptible(nth_cond_t *c, nth_mutex_t *m, const int *stop);
/* The same with an explicit clock (CLOCK_REALTIME or CLOCK_MONOTONIC,
 * else EINVAL), after pthread_cond_clockwait. */
NTH_API int nth_cond_clockwait(nth_cond_t *c, nth_mutex_t *m, clockid_t clock,
                               const struct timespec *abstime);
/* nth_cond_clockwait() that a third party can interrupt as
 * nth_cond_wait_interruptible(): EINTR (m held) if the waiter saw *stop
 * after queueing itself, else 0 when the broadcast woke it, or ETIMEDOUT.
 * For a pthread layer's timed waits, which are cancellation points
 * (pthread_cond_timedwait(3p)): without it a cancel waited for the next
 * wake-up the waiter arranged itself. Thread-safe; EINVAL for a NULL
 * stop, otherwise as nth_cond_clockwait(). */
NTH_API int nth_cond_clockwait_interruptible(nth_cond_t *c, nth_mutex_t *m, clockid_t clock,
                                             const struct timespec *abstime, const int *stop);
/* Wake the first waiter / all waiters. 0. Callable from any kernel thread. */
NTH_API int nth_cond_signal(nth_cond_t *c);
NTH_API int nth_cond_broadcast(nth_cond_t *c);

/* --- barrier (after pthread_barrier_wait(3p)) --------------------------- */

#define NTH_BARRIER_SERIAL_THREAD (-1)

/* 32 bytes: fits pthread_barrier_t. Fields are private. */
typedef struct nth_barrier {
    uint32_t __lock, __count, __arrived, __generation;
    void *__head, *__tail;
} nth_barrier_t;

/* count nano-threads meet at b. 0; EINVAL for NULL b or count 0. */
NTH_API int nth_barrier_init(nth_barrier_t *b, unsigned count);
/* 0; EBUSY while nano-threads wait at b. */
NTH_API int nth_barrier_destroy(nth_barrier_t *b);
/* Wait until count nano-threads have arrived. Returns
 * NTH_BARRIER_SERIAL_THREAD to one of them (the last to arrive), 0 to the
 * others; b is then ready for the next round. */
NTH_API int nth_barrier_wait(nth_barrier_t *b);

/* --- read-write lock (after pthread_rwlock_rdlock(3p)) ------------------ */

/* 56 bytes: fits pthread_rwlock_t. Fields are private. Writers are not
 * starved: once a writer waits, new readers queue behind it; when a writer
 * unlocks, the readers that queued meanwhile go first, then the next
 * writer (phase-fair). The lock is handed over directly to the woken. */
typedef struct nth_rwlock {
    uint32_t __lock;             /* wait-queue spinlock */
    uint32_t __readers;          /* readers holding it */
    uint32_t __writer;           /* 1 while a writer holds it */
    uint32_t __writers_waiting;
    void *__owner;               /* writer's nth_t */
    void *__rhead, *__rtail;     /* waiting readers */
    void *__whead, *__wtail;     /* waiting writers */
} nth_rwlock_t;
#define NTH_RWLOCK_INITIALIZER { 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/* 0; EINVAL for NULL rw. (No attributes: pass NULL.) */
NTH_API int nth_rwlock_init(nth_rwlock_t *rw, const void *attr);
/* 0; EBUSY while held or waited on. */
NTH_API int nth_rwlock_destroy(nth_rwlock_t *rw);
/* 0; EDEADLK if the caller holds it for writing; EAGAIN when the reader
 * count would overflow. */
NTH_API int nth_rwlock_rdlock(nth_rwlock_t *rw);
/* 0; EBUSY if a writer holds it or waits (also when that writer is the
 * caller, as POSIX and glibc). */
NTH_API int nth_rwlock_tryrdlock(nth_rwlock_t *rw);
/* 0; ETIMEDOUT after *abstime (CLOCK_REALTIME); EINVAL bad timespec. */
NTH_API int nth_rwlock_timedrdlock(nth_rwlock_t *rw, const struct timespec *abstime);
/* 0; EDEADLK if the caller already holds it for writing. */
NTH_API int nth_rwlock_wrlock(nth_rwlock_t *rw);
/* 0; EBUSY if held (also by the caller, as POSIX and glibc). */
NTH_API int nth_rwlock_trywrlock(nth_rwlock_t *rw);
/* 0; ETIMEDOUT after *abstime (CLOCK_REALTIME); EINVAL bad timespec. */
NTH_API int nth_rwlock_timedwrlock(nth_rwlock_t *rw, const struct timespec *abstime);
/* Release a read or write hold. 0; EPERM if it is held neither for writing
 * by the caller nor for reading by anyone. */
NTH_API int nth_rwlock_unlock(nth_rwlock_t *rw);

/* --- counting semaphore (after sem_wait(3p)) ---------------------------- */

#define NTH_SEM_VALUE_MAX 0x7fffffff

/* 32 bytes: fits sem_t. Fields are private. */
typedef struct nth_sem {
    uint32_t __value;
    uint32_t __lock;             /* wait-queue spinlock */
    void *__head, *__tail;       /* wait queue */
    uint64_t __reserved;
} nth_sem_t;

/* 0; EINVAL for NULL s or value > NTH_SEM_VALUE_MAX. */
NTH_API int nth_sem_init(nth_sem_t *s, unsigned value);
/* 0; EBUSY while nano-threads wait on s. */
NTH_API int nth_sem_destroy(nth_sem_t *s);
/* Decrement, waiting while the value is 0. 0. */
NTH_API int nth_sem_wait(nth_sem_t *s);
/* 0; EAGAIN when the value is 0 (as sem_trywait). */
NTH_API int nth_sem_trywait(nth_sem_t *s);
/* 0; ETIMEDOUT after *abstime (CLOCK_REALTIME); EINVAL bad timespec. */
NTH_API int nth_sem_timedwait(nth_sem_t *s, const struct timespec *abstime);
/* The same with CLOCK_REALTIME or CLOCK_MONOTONIC (else EINVAL). */
NTH_API int nth_sem_clockwait(nth_sem_t *s, clockid_t clock, const struct timespec *abstime);
/* nth_sem_clockwait() (abstime NULL: no deadline) that a third party can
 * interrupt: it sets *stop to non-zero, issues a full fence, then calls
 * nth_sem_interrupt(s). The waiter then returns EINTR without taking a
 * unit; a post that reached it first wins (0). For signals and
 * cancellation in a pthread layer, after sem_wait(3p) (EINTR). 0,
 * ETIMEDOUT, EINTR; EINVAL for a NULL s or stop, a bad clock or timespec.
 * Thread-safe. */
NTH_API int nth_sem_clockwait_interruptible(nth_sem_t *s, clockid_t clock,
                                            const struct timespec *abstime, const int *stop);
/* Wake, with EINTR, every nano-thread in nth_sem_clockwait_interruptible
 * on s whose stop flag is set (others keep waiting). 0; EINVAL for NULL.
 * Thread-safe; never blocks (the semaphore's spinlock only). */
NTH_API int nth_sem_interrupt(nth_sem_t *s);
/* Increment, or hand the unit straight to the first waiter. 0; EOVERFLOW
 * if the value would pass NTH_SEM_VALUE_MAX (POSIX sem_post's code).
 * Lock-free when no nano-thread waits. Thread-safe; callable from any
 * kernel thread, but not from a signal handler (nth_sem_post_async). */
NTH_API int nth_sem_post(nth_sem_t *s);
/* nth_sem_post for a signal handler (sem_post is async-signal-safe,
 * signal-safety(7)): adds the unit with one CAS, never takes a lock, never
 * wakes. The unit is there for nth_sem_trywait/wait at once. 0 when no
 * nano-thread waited; EINPROGRESS when some may: the unit is owed to them
 * and the caller must have nth_sem_drain(s) called soon from normal
 * context (not from the handler: the code it interrupted may hold s's
 * lock). EOVERFLOW as nth_sem_post (no unit added); EINVAL for NULL. */
NTH_API int nth_sem_post_async(nth_sem_t *s);
/* Hand the units posted by nth_sem_post_async to waiting nano-threads
 * and wake them. 0; EINVAL for NULL. Thread-safe; takes s's spinlock, so
 * never from a signal handler. */
NTH_API int nth_sem_drain(nth_sem_t *s);
/* The value now (0 while nano-threads wait). 0; EINVAL for NULL. */
NTH_API int nth_sem_getvalue(nth_sem_t *s, int *value);

/* --- once (after pthread_once(3p)) --------------------------------------- */

typedef int nth_once_t;          /* 4 bytes, as pthread_once_t */
#define NTH_ONCE_INIT 0

/* Run routine exactly once for *once however many nano-threads race; the
 * others wait (leaving their VP) until it has returned. 0; EINVAL for NULL
 * arguments. */
NTH_API int nth_once(nth_once_t *once, void (*routine)(void));

/* --- nano-thread-specific data (after pthread_key_create(3p)) ----------- */

typedef unsigned nth_key_t;
#define NTH_KEYS_MAX 1024
#define NTH_DESTRUCTOR_ITERATIONS 4   /* = PTHREAD_DESTRUCTOR_ITERATIONS */

/* Create a key; destructor (may be NULL) runs at a nano-thread's exit on
 * each non-NULL value, repeated while values remain, at most
 * NTH_DESTRUCTOR_ITERATIONS rounds. 0; EAGAIN when NTH_KEYS_MAX keys exist. */
NTH_API int nth_key_create(nth_key_t *key, void (*destructor)(void *));
/* Like nth_key_create(), from a reserve of NTH_KEYS_RESERVED keys beyond
 * the NTH_KEYS_MAX a program may create: for a library layered on nthlib
 * that needs a key of its own (the pthread shim's thread record), so that
 * its programs still get all NTH_KEYS_MAX keys, as PTHREAD_KEYS_MAX with
 * glibc. The key works with every other nth_key_* and nth_*specific call.
 * 0; EINVAL key NULL; EAGAIN when the reserve is used up. Thread-safe. */
#define NTH_KEYS_RESERVED 4
NTH_API int nth_key_create_reserved(nth_key_t *key, void (*destructor)(void *));
/* Delete key; values stay where they are, destructors are not called.
 * 0; EINVAL for an unknown key. */
NTH_API int nth_key_delete(nth_key_t key);
/* 0; EINVAL for an unknown key; ENOMEM if the caller's table cannot grow. */
NTH_API int nth_setspecific(nth_key_t key, const void *value);
/* The caller's value, NULL if none or key unknown. */
NTH_API void *nth_getspecific(nth_key_t key);

/* --- sleeping ------------------------------------------------------------ */

/* Leave the VP for at least ns nanoseconds. 0. Not interrupted by signals. */
NTH_API int nth_sleep_ns(uint64_t ns);
/* Leave the VP until the absolute time *abstime on clock (CLOCK_REALTIME or
 * CLOCK_MONOTONIC). 0 (also when it is already past); EINVAL for a bad
 * clock or timespec. After clock_nanosleep(3p) with TIMER_ABSTIME. */
NTH_API int nth_sleep_until(clockid_t clock, const struct timespec *abstime);


/* --- switch-in hook ------------------------------------------------------ */

/* Called on the kernel thread of the VP each time a nano-thread resumes
 * after a switch (inside nth_yield, nth_wait and every call that blocks),
 * before that call returns to it, with the data the nano-thread set with
 * nth_switch_data_set (NULL if none); also with NULL when a VP's idle
 * context resumes or is about to park. Not called when a nano-thread first
 * starts. It runs in the scheduler's
 * critical path: keep it short, never block or switch in it. The pthread
 * shim uses it to put a nano-thread's signal mask on the kernel thread and
 * deliver the signals queued for it.
 * nth_switch_hook_set installs fn (NULL removes it; one hook at a time):
 * while none is installed a switch pays one predictable branch. Returns 0.
 * Thread-safe: a switch sees the new hook at the latest on its VP's next
 * switch; installing one wakes every parked VP, and returns only once the
 * idle context of every other VP has called it (with NULL) or that VP
 * runs a nano-thread (sleeping in the kernel meanwhile, about 2 s at most
 * per VP). A VP's kernel thread is born with every signal blocked; with no
 * hook installed it then takes its creator's mask, with one it keeps what
 * the hook sets. */
typedef void (*nth_switch_hook_fn)(void *data);
NTH_API int nth_switch_hook_set(nth_switch_hook_fn fn);
/* Set the calling nano-thread's switch data (what the hook gets when it
 * resumes). Returns 0, or EPERM when the caller is no nano-thread (a kernel
 * thread that is no VP). Not thread-safe for another nano-thread: only
 * the caller sets its own. */
NTH_API int nth_switch_data_set(void *data);

/* --- per-nano-thread thread pointers (TLS) ------------------------------- */

/* For a layer that gives nano-threads their own static TLS block and TCB
 * (the pthread shim: errno and __thread data per pthread, as BLT/ULP-style
 * M:N runtimes do). x86-64 only; not in sanitizer builds (their runtimes
 * keep per-thread state in TLS and follow kernel threads).
 *
 * nth_tls_enable(alloc): from now on a switch loads the incoming
 * nano-thread's thread pointer (%fs) when it differs from the loaded one
 * (a system call, about 4 us, or wrfsbase where the kernel allows it); a
 * nano-thread that adopted none, and every VP's idle context, runs with
 * its kernel thread's own; alloc gives VP 0's idle context a TCB (VP 0's
 * kernel thread's own stays main's). The runtime's own TLS (it describes
 * the kernel thread) is copied into each TCB before it is loaded. Call
 * before the runtime starts, or from main while it runs on VP 0 with its
 * kernel thread's TCB (nano-threads made before run with their VP's).
 * Returns 0; EBUSY when the runtime is starting, or started and the caller
 * is not main so placed; ENOMEM when alloc failed; ENOTSUP where
 * unsupported (then nothing changes); EINVAL for a NULL alloc. Not
 * thread-safe (start-up, one caller).
 *
 * nth_tls_carry(addr, len): also copy the caller's TLS bytes [addr,
 * addr+len) (of the calling kernel thread; in static TLS or glibc's TCB)
 * into each TCB before it is loaded: data that describes the kernel
 * thread. Call before nth_tls_enable. 0; EBUSY after it; EINVAL
 * for an address outside the static TLS area; ENOSPC beyond 16 ranges.
 *
 * nth_tls_adopt(tp): the calling nano-thread runs with thread pointer tp
 * from now on (loaded at once, and at each switch to it). The descriptor
 * keeps tp after the nano-thread ends, for its next use: the caller owns
 * the TCB and may recycle it (nth_tls_adopted). 0; EPERM when not enabled
 * or the caller is no nano-thread; EINVAL for NULL. Only for the caller.
 *
 * nth_tls_adopted(): the calling nano-thread's thread pointer, or NULL
 * (none adopted, by it or by an earlier nano-thread on its descriptor). */
typedef void *(*nth_tls_alloc_fn)(void);
NTH_API int nth_tls_enable(nth_tls_alloc_fn alloc);
NTH_API int nth_tls_carry(void *addr, size_t len);
NTH_API int nth_tls_adopt(void *tp);
NTH_API void *nth_tls_adopted(void);

/* --- waits in slices ----------------------------------------------------- */

/* For a layer that cuts a long wait into short timed waits ("slices") to
 * look for something between them that cannot end the wait itself (the
 * pthread shim: cancellation requests and signals, every SHIM_SLICE_NS):
 * the calling nano-thread's timed waits from now on (nth_sleep_*,
 * nth_*_clockwait, nth_*_timedlock and relatives) are slices of a wait
 * whose real end is real_deadline (CLOCK_MONOTONIC, ns since its epoch;
 * UINT64_MAX: no end, an untimed wait in slices; 0: none, its timed waits
 * are real again). Their alarms still end each slice on time while the
 * application runs; what changes is dormancy (cpumgr, DESIGN invariant 3):
 * an application whose nano-threads all wait, and whose earliest *real*
 * deadline is far, gives its CPUs back although slices are due, and its
 * slices are not fired while it is dormant. Dormancy ends before the
 * earliest real deadline, when work is queued, when a blocking call
 * returns, and when a signal is pending on the process: the layer must
 * then find what it looks for at the next slice end, as usual.
 * Returns the previous value, which the caller puts back when the wait
 * ends (nesting). Only for the caller; outside a nano-thread (a kernel
 * thread that is no VP, the runtime not started) does nothing, returns 0.
 * nthlib's own (no POSIX counterpart). */
NTH_API uint64_t nth_wait_slices(uint64_t real_deadline);

/* --- blocking system calls ---------------------------------------------- */

/* Bracket a system call that may block in the kernel (read on a pipe or
 * socket, waitpid, ...) so that the caller's VP goes on running its other
 * ready nano-threads meanwhile. nth_blocking_enter() marks the VP as being
 * in a system call and, if some nano-thread is ready for it (now or while
 * the call lasts), lends the VP's CPU and ready queue to a stand-in kernel
 * thread bound to that CPU (created on demand, then kept in a small cache);
 * nth_blocking_leave() takes them back (the stand-in stops at its running
 * nano-thread's next scheduling point). The caller stays on its own kernel
 * thread throughout, so errno set by the call is simply there afterwards;
 * a call that does not block, with nothing else ready, costs a few memory
 * operations and wakes no thread. Nano-threads run by a stand-in see
 * nth_vp_id() == -1 until they are back on a VP.
 * Between the two only system calls and libc are allowed: no other nthlib
 * call except nth_self(), nth_vp_id() (-1 there) and nth_to_rq().
 * nth_blocking_enter returns 0; EAGAIN when a stand-in was needed and could
 * not be had (the call then holds the VP: still correct, just slower; leave
 * is then a no-op); EBUSY when already entered. Called from a kernel thread
 * that is no VP, both are no-ops returning 0. nth_blocking_leave returns 0
 * (also without a matching enter). The cost of the pair is measured as
 * blocking_handoff by bench/micro-sync. DESIGN invariant 4, after Go's
 * syscall hand-off (runtime.entersyscall/exitsyscall, sysmon's retake). */
NTH_API int nth_blocking_enter(void);
NTH_API int nth_blocking_leave(void);

/* For a layer that makes a blocking system call itself when the caller
 * holds no VP (nth_vp_id() is -1) without nth_blocking_enter: if the caller is
 * a nano-thread run by a stand-in (its VP's kernel thread being in a
 * system call), hand that VP on to another stand-in, as
 * nth_blocking_enter() does there, so that the call does not carry the
 * VP's only stand-in into the kernel. Returns 0 (also for any other
 * caller, where it does nothing; it never starts the runtime); EAGAIN when
 * no further stand-in could be had (the stall watchdog tries again).
 * Any thread. Go's entersyscall hands its P on in the same way. */
NTH_API int nth_blocking_handoff(void);

/* 1 when the caller is a nano-thread that a stand-in kernel thread runs
 * (its VP's own kernel thread being in a system call, so nth_vp_id() is
 * -1 for it), else 0 (on a VP; on a kernel thread that is no VP; before
 * the runtime starts). A layer that treats callers off a VP as plain
 * kernel threads uses it to tell the nano-threads among them: those may
 * wait the runtime's way (nth_blocking_enter/leave, nano-thread waits),
 * which a stand-in supports. Pure: never starts the runtime, never
 * switches. Any thread. */
NTH_API int nth_on_standin(void);

/* For a layer that clears glibc's __libc_single_threaded itself before
 * the runtime's kernel threads exist (the pthread shim): call it first.
 * glibc installs its SIGSETXID handler (and unblocks SIGCANCEL/SIGSETXID)
 * only in the first pthread_create that finds that flag set (its
 * late_init, glibc 2.34+); with the flag cleared beforehand every
 * set*id(2) call (setuid, setgid, setgroups, ...) would later signal the
 * runtime's kernel threads with SIGSETXID, meet no handler and end the
 * process (POSIX setuid(3p): the credentials are process-wide). While
 * the flag is still set, starts and joins one kernel thread that does
 * nothing (libc's pthread_create, as for the VPs), which leaves glibc
 * set up and the flag cleared; else does nothing. Returns 0, or
 * pthread_create's error (EAGAIN). Never starts the runtime; any thread,
 * though meant for the one thread of a process still single-threaded. */
NTH_API int nth_libc_threads_prepare(void);

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
 * to it, more than the VPs is allowed. Without a call the request is
 * min(VPs, CPUs of the affinity mask) (the whole mask before nth_init()):
 * NTH_VPS=1 asks for 1, the default VP count for every CPU the process
 * can use. Takes effect at the daemon's next rebalance (a futex wakes it).
 * Returns 0; EINVAL if n is out of range; ENOMEM. Thread-safe. */
NTH_API int nth_cpus_request(int n);

/* Number of CPUs assigned now (0 while the daemon rotates CPUs among more
 * applications than it has CPUs). Standalone: min(request, CPUs of the
 * affinity mask), the request defaulting to min(VPs, CPUs of the mask).
 * Attached, only CPUs the daemon manages: CPUs of the mask outside its
 * set stay unused (cpumgr(8)). Attached but not yet answered (between the
 * attach and the daemon's first pass), the first call of this or of
 * nth_cpus_assigned_mask() waits for the daemon's first assignment, at
 * most 1 s, in the kernel, once per process: the first count is the
 * daemon's, not the standalone one (nth(3)); a daemon that does not answer
 * in time leaves the standalone count. Never fails; thread-safe;
 * lock-free after that first call. */
NTH_API int nth_cpus_assigned(void);

/* A copy of the assigned CPU set (OS indices) in *out, to be released with
 * hwloc_bitmap_free(). The first call may wait for the daemon's first
 * answer, as nth_cpus_assigned(). Returns 0; EINVAL if out is NULL;
 * ENOMEM. Thread-safe. */
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

/*
 * A parallel region runs one function on a team of nano-threads, the
 * caller being member 0, and returns when every member has returned (the
 * closing barrier). Semantics after OpenMP's `parallel` and `for`
 * constructs (OpenMP 5.2, sections 10.1 and 11.5) as the JOMP compiler
 * mapped them onto nano-threads on JNE (Martorell et al.): the team size is
 * decided anew at every region entry, so a malleable application that asks
 * for n = 0 follows the CPUs the CPU manager gives it, region by region.
 *
 * Placement: member i > 0 runs on the i-th enabled VP after the caller's
 * (one member per VP while the team is no larger than the VPs), so a team
 * of the assigned size really runs in parallel. Members are nano-threads
 * kept between regions, at most one waiting per VP (as an OpenMP runtime
 * keeps its team threads; one that finds its VP's place taken, or its VP
 * without a CPU, ends), and created only for a VP that has none waiting: a
 * member's nano-thread (nth_self(), its nth_key values) may be the one
 * that ran a member of an earlier region. Waiting members block, using no
 * CPU, and do not keep the process alive after main's nth_exit(). The VPs follow the
 * assigned CPU set (a VP whose CPU is taken away is disabled and parks), and
 * a caller whose VP lost its CPU moves to one that has a CPU before the team
 * starts.
 *
 * Nested regions are serialised: nth_parallel() called by a member of a
 * running region runs fn(0, 1, arg) in the caller alone, as a team of one
 * (OpenMP with max-active-levels = 1); nth_team_id()/nth_team_size() then
 * answer 0 and 1 until it returns, and the outer team's values afterwards.
 *
 * Thread-safety: any nano-thread may start a region; independent regions of
 * different callers run concurrently. Not callable from a kernel thread
 * that is no VP (EPERM).
 */

#define NTH_TEAM_MAX 1024          /* members per region */

/* Body of a region: member id (0 .. n-1) of a team of n. */
typedef void (*nth_team_fn)(int id, int n, void *arg);

/* Run fn(id, n, arg) on a team of n nano-threads; n = 0 means
 * nth_cpus_assigned() at this entry; while that is 0 (the CPU manager
 * rotates CPUs among more applications than it has) the caller sleeps at
 * the entry, its VPs parked, until a CPU comes back. Returns when all members
 * have returned: 0; EINVAL for a NULL fn or n outside 0..NTH_TEAM_MAX;
 * EAGAIN if the members cannot be created (no member then runs fn: they are
 * held at a start gate until all exist); EPERM from a kernel thread that is
 * no VP. Costs, per member, one CAS when its VP spins idle with a member
 * waiting (that VP wakes it), else a wake-up or, for a VP with none
 * waiting, a nano-thread creation (bench/RESULTS.md, "lu4"). */
NTH_API int nth_parallel(int n, nth_team_fn fn, void *arg);

/* Loop schedules, after OpenMP's schedule clause. */
enum {
    NTH_SCHED_STATIC = 0,   /* chunk 0: one contiguous block per member;
                               chunk c: blocks of c iterations dealt round-robin */
    NTH_SCHED_DYNAMIC = 1,  /* blocks of c (chunk 0 means 1) iterations taken
                               first come, first served */
    NTH_SCHED_GUIDED = 2,   /* like dynamic, each block ~ remaining / (2 x team
                               size) iterations, never smaller than c (0: 1) */
};

/* Body of a loop: iterations [begin, end), run by member nth_team_id(). */
typedef void (*nth_for_fn)(long begin, long end, void *arg);

/* Share the iterations [lo, hi) among a team, each exactly once, by
 * calling body on blocks chosen by schedule and chunk (iterations); returns
 * after every iteration is done (an implicit team barrier). Outside a region
 * it opens one (n = 0: the assigned CPUs), like `omp parallel for`; inside a
 * region it is a work-sharing construct (`omp for`): every member must call
 * it with the same arguments. Returns 0 (also for hi == lo, with no call);
 * EINVAL for a bad schedule, a NULL body, hi < lo or chunk < 0; the errors
 * of nth_parallel() when it opens a region. */
NTH_API int nth_parallel_for(long lo, long hi, int schedule, long chunk, nth_for_fn body, void *arg);

/* Wait until every member of the caller's team has called it (returns 0 at
 * once outside a region or in a team of one). Waiters spin for
 * NTH_TEAM_SPIN_US (config.team_spin_us, 1000 µs by default)
 * while their VP has nothing else to run, then block with nth_wait(), so an
 * oversubscribed team still progresses. Returns 0. After `omp barrier`. */
NTH_API int nth_team_barrier(void);

/* The caller's member id in its innermost region (0 outside any), and that
 * team's size (1 outside any). Never fail; thread-safe. */
NTH_API int nth_team_id(void);
NTH_API int nth_team_size(void);

#ifdef __cplusplus
}
#endif
#endif /* NTH_H */
