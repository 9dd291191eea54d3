/*
 * shim.h -- what the pthread shim's files share: the per-thread record,
 * libc's own functions, cancellation and the waiting helpers.
 *
 * Every exported function is defined as nth_shim_<name>, declared here with
 * the type of libc's <name> (so a wrong signature does not compile), and
 * given its glibc symbol versions by SHIM_EXPORT(<name>) (symver.h,
 * generated from glibc-symbols.txt).
 */
#ifndef NTH_SHIM_H
#define NTH_SHIM_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <unwind.h>
#include "nth.h"
#include "symver.h"

#define SHIM_API __attribute__((visibility("default")))
/* Declare nth_shim_<sym> with libc's type for <sym>. */
#define SHIM_DECL(sym) SHIM_API __typeof__(sym) nth_shim_##sym;

/* errno through a fresh __errno_location() call at each use. glibc
 * declares that function const, so within one function the compiler may
 * reuse the address it returned before a call that switched: after a
 * migration to another VP that is another kernel thread's errno. The
 * shim's own functions switch, so they never use a reused address. */
static inline int *shim_errno_loc(void)
{
    int *(*volatile f)(void) = __errno_location;
    return f();
}
#undef errno
#define errno (*shim_errno_loc())

/* The kernel thread (by its errno address) and VP a wrapper was entered on.
 * A program's compiled code may read errno after the call through the
 * address it obtained before it (see above), so a wrapper that reports an
 * error in errno after it may have switched first goes back to the kernel
 * thread it was entered on: SHIM_HOME_ENTER() at the top, SHIM_HOME_RET(r)
 * around each return value that may be -1. Costs a migration only on an
 * error return after a migration. */
struct shim_home {
    int *errp;
    int vp;                      /* -1: not entered on a VP (nothing to do) */
};
static inline struct shim_home shim_home_here(void)
{
    return (struct shim_home){ shim_errno_loc(), nth_vp_id() };
}
/* Back to h's kernel thread, keeping errno (best effort: a few tries, see
 * nth_move_to_vp; none when the VP's CPU is taken away). */
void shim_go_home(const struct shim_home *h);
#define SHIM_HOME_ENTER() const struct shim_home shim_home_ = shim_home_here()
#define SHIM_HOME_RET(expr)                                                 \
    ({                                                                      \
        __typeof__(expr) r_ = (expr);                                       \
        if (r_ < 0)                                                         \
            shim_go_home(&shim_home_);                                      \
        r_;                                                                 \
    })

/* Thread-directed signals a nano-thread can have pending at once (a
 * standard signal counts once, as in the kernel; each real-time one queues). */
#define SHIM_SIGQ_MAX 32

/* One per thread known to the shim: pthread_t is a pointer to it. */
struct shim_thread {
    nth_t nt;                    /* the nano-thread */
    uint64_t nid;                /* nth_id(nt), to tell a reused descriptor */
    int created;                 /* made by pthread_create (not main's) */
    int detached;
    int done;                    /* its function returned / pthread_exit */
    nth_sem_t done_sem;          /* posted once at done, for timed joins */
    int cancel_state, cancel_type;
    int cancel_pending;          /* atomic */
    int exiting;                 /* unwinding its cleanup handlers */
    void *exit_value;
    void *cleanup_top;           /* newest __pthread_unwind_buf_t */
    struct _pthread_cleanup_buffer *old_cleanup;   /* _pthread_cleanup_push */
    uintptr_t entry_cfa;         /* a forced unwind ends at the frame with
                                    this stack pointer (thread.c); 0 for
                                    main's: at the end of its stack */
    struct _Unwind_Exception unwind_exc;   /* the forced unwind's (unwind.c) */
    size_t stacksize, guardsize;
    int sched_policy;
    struct sched_param sched_param;
    void *(*fn)(void *);
    void *arg;
    struct shim_thread *next_zombie;
    int zclaim;
    struct shim_thread *joining; /* the thread it joins, for pthread_cancel */
    pthread_cond_t *waiting_cond; /* the condvar it waits on, for pthread_cancel */
    sem_t *waiting_sem;          /* the semaphore it waits on (sem.c) */
    int ktid;                    /* its kernel thread's id while it waits in
                                    the kernel (blocking.c), else 0 (atomic) */
    int cond_wake;               /* the stop flag of its interruptible waits:
                                    set by pthread_cancel and pthread_kill
                                    before they look at waiting_cond,
                                    waiting_sem and ktid (atomic) */
    uint64_t sig_delivered;      /* queued signals run since the wait began,
                                    bit sig-1, for SA_RESTART (signal.c) */
    uint64_t pending;            /* signals in sigq, bit sig-1 (atomic) */
    unsigned testcancel_calls;   /* pthread_testcancel yields now and then */
    int has_cpus;                /* pthread_setaffinity_np gave a hint */
    cpu_set_t cpus;              /* its affinity hint */
    /* Signals (signal.c): the nano-thread's own mask, its queue of pending
     * thread-directed signals, and a doorbell that pthread_kill rings to
     * end an interruptible wait's nap at once. */
    uint64_t sigmask;            /* blocked signals, bit sig-1 (atomic) */
    int sigq_lock;
    int sigq_n;
    struct shim_sigq_entry {
        int sig, code;
        pid_t pid;
        uid_t uid;
        union sigval value;
    } sigq[SHIM_SIGQ_MAX];
    nth_sem_t sig_bell;
    int sig_unreported;          /* a queued signal was delivered: EINTR */
    unsigned handlers_ran;       /* the program's handlers that interrupted
                                    this thread (sighand.c's trampoline;
                                    atomic, only ever grows) */
    unsigned sleep_ran0;         /* handlers_ran when its sleep began */
    struct shim_thread *reg_next, *reg_prev;   /* the registry (sigwatch.c);
                                    NULL when not in it */
};

/* m as an nth mutex, after the static-initialiser fix-up (mutex.c). */
nth_mutex_t *shim_mutex(pthread_mutex_t *m);
/* The caller's record (created for threads the shim did not start). */
struct shim_thread *shim_self(void);
/* The caller's record for pthread_self and pthread_kill inside a signal
 * handler (both async-signal-safe, signal-safety(7)): the record it has,
 * or one from a static pool that its first shim_self outside a handler
 * adopts, so pthread_self gives the same value in and out of handlers.
 * Never allocates, never locks, never starts the runtime. */
struct shim_thread *shim_self_in_handler(void);
/* shim_self_peek for a handler: NULL also on a kernel thread that runs no
 * nano-thread (where the peek could start the runtime). */
struct shim_thread *shim_self_in_handler_peek(void);
/* The caller's record if it has one, else NULL: never allocates, never
 * locks, so async-signal-safe (signal-safety(7)). For the paths the
 * wrappers of async-signal-safe calls (write, read, close...) take, which a
 * signal handler may run while the code it interrupted holds malloc's
 * lock. A thread with no record has no cancellation request and no queued
 * signal: both need its pthread_t, and pthread_self makes the record. */
struct shim_thread *shim_self_peek(void);
/* libc's definition of name (its default version), never the shim's.
 * Every REAL call site records its name and its pointer in the section
 * shim_real_sites, and shim_real_resolve_all() fills them all in once,
 * from the shim's constructor (or from the first REAL, when another
 * library's constructor calls the shim before that): never later on a
 * thread-creating or blocking path. dlsym takes ld.so's load lock, which
 * a dlopen in progress holds, recursively, for the kernel thread that
 * began it: a nano-thread running a constructor that had moved to another
 * kernel thread (a VP's stand-in) waited there forever for itself. */
struct shim_real_site {
    const char *name;
    void **slot;
};
void shim_real_resolve_all(void);

/* Says once per process, on stderr, that a process-shared or robust
 * request (named by FN) was refused with ENOTSUP: programs such as fio
 * treat that error as fatal, and without a word the user cannot tell the
 * shim from the program. Async-signal-safe (write(2) only). */
void shim_note_refused(const char *fn);
#define REAL(name)                                                          \
    ({                                                                      \
        static __typeof__(&name) real_f_;                                   \
        static struct shim_real_site real_site_                             \
            __attribute__((section("shim_real_sites"), used,                \
                           aligned(sizeof(void *)))) = { #name, (void **)&real_f_ }; \
        (void)real_site_;                                                   \
        __typeof__(&name) f_ = __atomic_load_n(&real_f_, __ATOMIC_ACQUIRE); \
        if (__builtin_expect(!f_, 0)) {                                     \
            shim_real_resolve_all();                                        \
            f_ = __atomic_load_n(&real_f_, __ATOMIC_ACQUIRE);               \
        }                                                                   \
        f_;                                                                 \
    })

/* Act on a pending cancellation request if cancellation is enabled:
 * does not return then. Called at every cancellation point. */
void shim_testcancel(void);
/* 1 when shim_testcancel would act now (a request, cancellation enabled). */
int shim_cancel_requested(void);
/* Deliver the signals queued for the caller that its mask leaves open;
 * 1 if any queued signal was delivered to it since the last call or
 * shim_signals_begin (also by the switch-in hook), so that an
 * interruptible wait returns EINTR. */
int shim_signals(void);
/* Sleeps (nanosleep, clock_nanosleep, sleep, usleep) that a
 * process-directed signal's handler must end, as natively:
 * shim_sleep_guard_begin blocks every signal on the caller for the sleep
 * and returns its mask; shim_sleep_guard_check (each slice) 1 when a
 * signal that mask leaves open and that has a handler was pending -- the
 * handlers have run then, with the mask restored, or when a handler
 * interrupted the caller since shim_sleep_guard_begin was entered (its
 * first call installs the switch-in hook, which may wait seconds for a
 * VP on a loaded machine: an alarm due meanwhile ran its handler on the
 * caller, before the sleep had blocked anything); shim_sleep_guard_end
 * restores the mask. Called on a VP, by a nano-thread. */
uint64_t shim_sleep_guard_begin(void);
int shim_sleep_guard_check(uint64_t old);
void shim_sleep_guard_end(uint64_t old);
/* Start of an interruptible wait: forget deliveries reported before it. */
void shim_signals_begin(void);
/* After a wait of a restartable call (read, write, accept, waitpid, ...,
 * signal(7) "Interruption of system calls") ended by a signal handler:
 * 1 if it should resume, as the kernel does when the handlers that ran
 * have SA_RESTART. The queued signals delivered since shim_signals_begin
 * are known; a signal the kernel delivered itself is not, so then every
 * handler the caller's mask leaves open must have SA_RESTART. */
int shim_signals_restart(void);
/* Stop st's interruptible waits after a request was made for it (a
 * queued signal, a cancellation): sets its stop flag, then wakes its
 * condvar or semaphore wait, its nap, or its wait in the kernel. */
void shim_interrupt_waits(struct shim_thread *st);
/* Waits in the kernel (ppoll, epoll_pwait, pselect) that pthread_kill and
 * pthread_cancel can end: shim_kwait_begin publishes the caller's kernel
 * thread and fills *mask with the signal mask for the call (umask, or the
 * caller's, with the shim's wake-up signal open); 0 to go on, EINTR when
 * a request is already there (no call then). shim_kwait_end after the
 * call: 1 if the wake-up signal interrupted it (a request for the caller,
 * or a late one for an earlier wait on this kernel thread). */
int shim_kwait_begin(sigset_t *mask, const sigset_t *umask);
int shim_kwait_end(void);
/* The same for a call with no mask argument (waitpid): the wake-up signal
 * opens on the kernel thread in between, so a request that comes just
 * before the call starts is seen only when it returns. */
int shim_kwait_open(void);
void shim_kwait_close(void);
/* A wait in the kernel left without its end (a siglongjmp out of a
 * handler that interrupted it, sighand.c): unpublish the kernel thread,
 * forget a kick. Async-signal-safe (no allocation, no lock). */
void shim_kwait_abandon(void);
/* Signal handlers' semaphore posts and signals (sigdefer.c).
 * shim_defer_need(what): the process installed a handler (1) or made a
 * semaphore or a thread (2); with both,
 * the helper kernel thread runs (started here, outside handlers).
 * shim_defer_drain(s): from a handler, have the helper run nth_sem_drain(s)
 * (async-signal-safe: CAS and futex only). shim_defer_forget(s): at
 * sem_destroy, drain s here and wait until the helper no longer uses it.
 * shim_defer_fork_child: in a fork() child, start the helper again. */
void shim_defer_need(int what);

/* Start one of the shim's own kernel threads (the signal helper, the
 * signal watcher): detached, running fn(NULL), with a 64 KiB stack, or
 * glibc's default when 64 KiB is refused (a program's static TLS does not
 * fit in it). The caller sets the signal mask it inherits. 0, or
 * pthread_create's error (EAGAIN, EINVAL) from the second try. Normal
 * context only; thread-safe. */
int shim_kthread_start(void *(*fn)(void *), pthread_t *t);
void shim_defer_drain(nth_sem_t *s);
void shim_defer_forget(nth_sem_t *s);
void shim_defer_fork_child(void);
/* From a handler, after queueing a signal for st: have the helper turn
 * the switch-in hook on and stop st's waits (shim_interrupt_waits).
 * Before st's record is freed: shim_defer_forget_thread. */
void shim_defer_kick(struct shim_thread *st);
void shim_defer_forget_thread(struct shim_thread *st);
/* Turn the switch-in hook on (signal.c; allocates, may wait): never from
 * a handler. */
void shim_sig_hook_ensure(void);
/* Process-directed signals while every VP is idle (sigwatch.c).
 * shim_sigwatch_add/_remove: a record enters the registry the watcher
 * looks for targets in (ordinary context only; remove before freeing it).
 * shim_sigwatch_idle(vp)/shim_sigwatch_busy(vp): the switch-in hook saw
 * VP vp (-1: no VP, ignored) resume its idle context / a nano-thread with
 * a record. shim_sigwatch_start: start the watcher in this process (from
 * the hook's installation; ordinary context). shim_sigwatch_fork_child:
 * in a fork() child, only the caller's record, and a new watcher.
 * shim_sig_queue_info (signal.c): queue sig for st with the sender and
 * value of *si, as pthread_kill queues: 0 or EAGAIN (queue full). */
void shim_sigwatch_add(struct shim_thread *st);
void shim_sigwatch_remove(struct shim_thread *st);
void shim_sigwatch_idle(int vp);
void shim_sigwatch_busy_slow(int vp);
#define SHIM_SIGWATCH_MAX_VPS 4096
extern uint64_t shim_idle_bits[SHIM_SIGWATCH_MAX_VPS / 64];
/* Called at every switch-in once the hook is on: a load and a branch
 * unless the VP was idle. */
static inline void shim_sigwatch_busy(int vp)
{
    if (__builtin_expect((unsigned)vp < SHIM_SIGWATCH_MAX_VPS &&
                         (__atomic_load_n(&shim_idle_bits[vp / 64], __ATOMIC_RELAXED) & (1ULL << (vp % 64))), 0))
        shim_sigwatch_busy_slow(vp);
}
void shim_sigwatch_start(void);
void shim_sigwatch_fork_child(void);
int shim_sig_queue_info(struct shim_thread *st, int sig, const siginfo_t *si);
/* Per-thread TLS (tls.c): shim_tls_init at start-up reads NTH_SHIM_TLS
 * and enables it (shim_tls_on); shim_tls_thread_begin is a created
 * thread's first call (its TCB: new, or a used one reset);
 * shim_tls_thread_end runs its C++ thread_local destructors.
 * shim_sig_tls_carry registers signal.c's kernel-thread state. */
extern int shim_tls_on;
void shim_tls_init(void);
/* cpumask.c: find libhwloc's code (the runtime binds VPs through it), at
 * start-up, before any sched_setaffinity the shim wraps. */
void shim_cpumask_init(void);
void shim_tls_thread_begin(void);
void shim_tls_thread_end(void);
int shim_sig_tls_carry(void);
/* In a fork child: the calling kernel thread's cached id is the parent's. */
void shim_kick_forget(void);
/* Signal state of a new record: st's mask is the creator's (creator NULL:
 * the kernel thread's), its doorbell ready. */
void shim_sig_init(struct shim_thread *st, struct shim_thread *creator);
/* First code of a nano-thread with record st: tell the switch-in hook
 * about st and put st's mask on the kernel thread. */
void shim_sig_started(struct shim_thread *st);
/* Nap until time until (ns) on clock or until pthread_kill rings the
 * caller's doorbell; on a stand-in, in the kernel (ppoll) with the VP
 * handed on, ended early by the wake-up signal instead. */
void shim_nap(clockid_t clock, int64_t until);
/* 1 when ra (a return address) is in the runtime's own code. */
int shim_runtime_caller(const void *ra);
/* The executable PT_LOAD segment of the loaded object that holds addr
 * (dl_iterate_phdr): [*lo, *hi), both 0 when none does; *hi is stored last
 * (release), so a reader that loads it with acquire sees *lo. For the
 * start-up only (dl_iterate_phdr takes ld.so's lock). */
void shim_code_range(const void *addr, uintptr_t *lo, uintptr_t *hi);
#define FROM_RUNTIME() shim_runtime_caller(__builtin_return_address(0))
/* 1 when the caller is a nano-thread: on a VP, or run by a stall
 * watchdog's stand-in (its VP's kernel thread in a system call), and not
 * inside a signal handler the program installed (shim_in_handler: there
 * a wrapped call is made as libc makes it). No side
 * effect (never starts the runtime). Else (a kernel thread that is no VP,
 * main before the runtime starts) a wrapped call blocks in the kernel as
 * libc's does. On a stand-in the shim's waits, and the calls it brackets
 * with nth_blocking_enter/leave (which hands the stand-in's VP on first),
 * stay interruptible by pthread_kill and pthread_cancel. */
int shim_on_nano(void);
/* Signal handlers the program installed (sighand.c): how many run, nested,
 * on the calling kernel thread (or, with a TLS block per thread, on the
 * interrupted thread: the same, as a handler never switches). */
extern __thread int shim_sig_depth __attribute__((tls_model("initial-exec")));
int shim_in_handler_slow(void);
/* 1 when the caller runs inside a signal handler the program installed
 * (records left by a siglongjmp out of one are dropped here). There the
 * wrappers of async-signal-safe calls go straight to the kernel: no lock,
 * no allocation, no cancellation point (signal-safety(7)). The common
 * case, no handler, costs one TLS load and a predictable branch. */
static inline int shim_in_handler(void)
{
    if (__builtin_expect(shim_sig_depth == 0, 1))
        return 0;
    return shim_in_handler_slow();
}
/* What signal.c last put on this kernel thread's mask is no longer known
 * (a siglongjmp out of a handler): the next change makes the call. */
void shim_kmask_forget(void);
/* Finish the calling thread with value (pthread_exit, a cancellation
 * acted upon): unwind its stack, running destructors and cleanup
 * handlers newest first (unwind.c, cancel.c), then nth_exit (which runs
 * key destructors). */
__attribute__((noreturn)) void shim_exit(void *value);
/* The forced unwind (unwind.c). shim_unwind_load: 1 once libgcc_s's
 * unwinder is loaded (dlopen at first use), 0 if it cannot be; thread-safe.
 * shim_unwind: unwind self's stack (the caller's own) down to its newest
 * setjmp cleanup buffer, or to its entry and finish it; returns only
 * when no unwinder can be had. */
int shim_unwind_load(void);
void shim_unwind(struct shim_thread *self);
/* A glibc setjmp cleanup buffer (cancel.c): its frame's stack pointer,
 * the _pthread_cleanup_push list's head when it was registered, and the
 * jump to it that runs its handler. */
void *shim_cleanup_buf_sp(__pthread_unwind_buf_t *b);
struct _pthread_cleanup_buffer *shim_cleanup_buf_old(__pthread_unwind_buf_t *b);
__attribute__((noreturn)) void shim_cleanup_buf_jump(__pthread_unwind_buf_t *b);

/* Waiting in slices: blocked calls wake up every SHIM_SLICE_NS to act on
 * cancellation requests, since the runtime's waits cannot be interrupted
 * from outside yet. The slices are no due work for the cpumgr's dormancy
 * (nth_wait_slices): a loop of slices tells the runtime its real deadline
 * with shim_slices_begin (deadline on clock, INT64_MAX for none) and puts
 * back the value it returns with nth_wait_slices when it leaves, also
 * around a shim_testcancel that may act (so cleanup handlers wait as
 * themselves). */
#define SHIM_SLICE_NS (10 * 1000000LL)
uint64_t shim_slices_begin(clockid_t clock, int64_t deadline);
int64_t shim_now(clockid_t clock);
int64_t shim_ts_ns(const struct timespec *ts);
struct timespec shim_ns_ts(int64_t ns);
/* EINVAL unless 0 <= tv_nsec < 1e9 and tv_sec >= 0: the kernel's rule
 * for the timeouts of sleeps, ppoll, sigtimedwait. */
int shim_check_ts(const struct timespec *ts);
/* EINVAL unless 0 <= tv_nsec < 1e9: glibc's rule for the absolute
 * deadlines of waits on objects (sem_timedwait, pthread_*_timed*,
 * *clock*); a tv_sec < 0 is a valid time long past (ETIMEDOUT then). */
int shim_check_deadline(const struct timespec *ts);
/* Leave the VP until the monotonic time `until` or for one slice at most,
 * with a growing back-off for the polling loops (*step, ns, starts at 0). */
void shim_backoff(int64_t until, int64_t *step);

#endif /* NTH_SHIM_H */
