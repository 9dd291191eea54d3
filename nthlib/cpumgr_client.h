/*
 * cpumgr_client.h -- libnth's side of the CPU manager (internal).
 *
 * The runtime calls nth_cpumgr_client_init() at start-up, registers a
 * callback that receives each new assigned CPU set (the core's
 * nth_vps_set_allowed()), calls nth_cpumgr_poll() at every scheduling point
 * (one atomic load on the fast path) and nth_cpumgr_tick() every few
 * milliseconds from its idle loop or timer (daemon liveness, re-attach).
 * No pthread_mutex_*: a tiny atomic spinlock serialises the slow paths.
 */
#ifndef NTH_CPUMGR_CLIENT_H
#define NTH_CPUMGR_CLIENT_H

#include <hwloc.h>
#include <stdint.h>

/* Called with the new assigned CPU set (OS indices), while the client's
 * lock is held: do not call back into the cpumgr client from it. */
typedef void (*nth_cpumgr_assign_fn)(hwloc_const_bitmap_t cpus, void *arg);

/* Start the client. name: segment name, "off", or NULL for NTH_CPUMGR or
 * the per-user default. Attaches if a daemon runs, else standalone.
 * Returns 0; EINVAL for a bad name (one line on stderr, standalone);
 * ENOMEM. Idempotent: later calls return 0 and change nothing. */
int nth_cpumgr_client_init(const char *name);

/* As nth_cpumgr_client_init(), but no slot is claimed until
 * nth_cpumgr_client_attach(): the runtime starts the client early, to read
 * the affinity mask before VP 0 binds itself, but may attach only once its
 * VPs follow the assignment. Attached earlier, a CPU taken from us while
 * nth_init() still runs stays in use past the bounded-reclaim deadline, and
 * the daemon (--enforce) binds whichever thread runs there, nth_init()'s
 * own included. Same return values. */
int nth_cpumgr_client_init_held(const char *name);

/* Record the current assignment in the trace ("CPUs assigned" counter)
 * if a daemon has answered us: for the runtime's start, right after the
 * trace's, since an application that attached first (nth_cpus_request()
 * or nth_set_priority() before nth_init()) may have had its grant applied
 * while tracing was off, and the counter records only changes. Nothing
 * before the client starts. Thread-safe (client lock). */
void nth_cpumgr_client_trace_start(void);

/* The CPU (OS index, or -1 for unknown) our main VP is bound to, written
 * to the slot at every claim (home_cpu1) so that the daemon's first
 * assignment to us is that CPU when it is free: VP 0 runs the program's
 * serial start-up without a scheduling point, and given another CPU it is
 * moved there by bounded reclaim and back later, two CPU migrations per
 * process start (bench/RESULTS.md "mig2"). Unknown: the claiming thread's
 * CPU (sched_getcpu(3)). Call before nth_cpumgr_client_attach().
 * Thread-safe (client lock). */
void nth_cpumgr_client_set_home(int cpu);

/* The runtime's VP count and the CPUs its VPs are bound to (OS indices;
 * NULL: none preferred): the default request becomes min(nvps, CPUs of
 * the mask) (nth_cpumgr_request_rule, cpumgr_request.h) instead of the
 * whole mask, published at once when attached; alone, the assignment is
 * redone with the VPs' CPUs first, so that no VP moves. nvps <= 0: not
 * known (the mask). An explicit nth_cpus_request() still wins. Nothing
 * before the client starts. Thread-safe (client lock); not from the
 * assignment callback. */
void nth_cpumgr_client_set_vps(int nvps, hwloc_const_bitmap_t vp_cpus);

/* Attach now if a daemon runs and we are not attached (ends the hold of
 * nth_cpumgr_client_init_held). Returns nonzero if the assignment changed
 * (the callback ran). Thread-safe. */
int nth_cpumgr_client_attach(void);

/* Bind the calling thread back to the process affinity mask the client
 * read before it first attached, if it was ever attached (else nothing: the
 * binding is the user's own). For nth_init() when the application attached
 * first through the public API (nth_cpus_request() before nth_init()): the
 * daemon may have bound this thread to the CPUs assigned at that moment
 * (--enforce), and the runtime takes its CPUs and VP count from the
 * calling thread's binding. Errors are ignored (the binding stays).
 * Thread-safe. */
void nth_cpumgr_client_rebind_self(void);

/* The process affinity mask the client read before it first attached,
 * into out, if it was ever attached (1); else 0 and out untouched. For
 * nth_init() when the application attached first (nth_cpus_request()
 * before nth_init()): the runtime's topology is restricted to this mask,
 * not to the calling thread's binding of the moment, which the daemon's
 * --enforce may narrow at any time to the CPUs then assigned -- also just
 * after nth_cpumgr_client_rebind_self(). A topology narrowed so had one
 * CPU while the daemon went on granting from the whole mask: a later
 * grant of only the other CPU left every VP disabled, for good (the
 * runtime_cpumgr_early.sh hang). Thread-safe (client lock). */
int nth_cpumgr_client_early_mask(hwloc_bitmap_t out);

/* Test hook NTH_TEST_ENFORCE_AT_INIT=1: bind every thread of the process
 * to the assignment, as the daemon's --enforce does to a client
 * that overstays on a CPU taken away, at the moment nth_init() calls it
 * (just after nth_cpumgr_client_rebind_self(): the window in which an
 * early client's enforcement narrowed the runtime's topology). Attached
 * only; a no-op otherwise. Not thread-safe against nth_init(). */
void nth_cpumgr_client_test_enforce(void);

/* Detach (slot freed) and release everything. Safe to call twice. Called
 * by the client's exit handler. With a detach hook registered (the
 * runtime's VPs sleep on and wake through the slot's words), the hook runs
 * once the client has stopped handing out segment pointers, and the
 * segment is then left mapped until the process ends: exit handlers that
 * run later, and VPs still running meanwhile, may hold a pointer read
 * before (issue 4/5: a late exit handler's sleep woke a disabled VP
 * through an unmapped word, SIGSEGV). Not thread-safe against a second
 * init. */
void nth_cpumgr_client_fini(void);

/* Register fn (NULL to remove), called by nth_cpumgr_client_fini() with
 * the client lock held, after nth_cpumgr_vp_word is NULL and before the
 * slot's mapping would go: fn must make its users leave the segment's
 * words (wake who sleeps on them) and must not call back into the
 * client. One hook; its presence also keeps the mapping at fini (above).
 * Thread-safe (atomic store). */
void nth_cpumgr_set_detach_hook(void (*fn)(void));

/* Register fn (NULL to remove); it is called at once with the current set. */
void nth_cpumgr_set_assign_callback(nth_cpumgr_assign_fn fn, void *arg);

/* Scheduling-point check: one relaxed atomic load of the word the daemon
 * bumps when this application's assignment changes (plus the pointer to it
 * and our last value, both in this process's cache). Returns nonzero when a
 * change was applied (the callback ran). Thread-safe, lock-free fast path. */
extern const uint32_t *nth_cpumgr_watch;
extern uint32_t nth_cpumgr_watch_seen;
int nth_cpumgr_refresh(void);
static inline int nth_cpumgr_poll(void)
{
    if (__builtin_expect(__atomic_load_n(__atomic_load_n(&nth_cpumgr_watch, __ATOMIC_ACQUIRE),
                                         __ATOMIC_RELAXED) ==
                         __atomic_load_n(&nth_cpumgr_watch_seen, __ATOMIC_RELAXED), 1))
        return 0;
    return nth_cpumgr_refresh();
}

/* As nth_cpumgr_refresh(), but waits for the client's lock and reads the
 * assignment even when the watched word did not change: a CPU handed to us
 * by its releaser (one-hop hand-off, nth/cpumgr_shm.h) changes no word of
 * ours but vp_wake. For a VP about to park or just woken from it. Returns
 * nonzero when a change was applied (the callback ran). Thread-safe. */
int nth_cpumgr_refresh_handoff(void);

/* The slot's vp_wake futex word while attached, else NULL: VPs without a
 * CPU sleep on it (shared futex), the daemon wakes them after a grant. The
 * memory stays mapped while the runtime runs (a detached segment is retired,
 * not unmapped), so a sleeper holding an old pointer is safe. */
extern uint32_t *nth_cpumgr_vp_word;

/* Slow check, every few ms: daemon died (go standalone), stopped (unmap),
 * or came back (re-attach). Returns nonzero if the assignment changed. */
int nth_cpumgr_tick(void);

/* CLOCK_MONOTONIC ns from which the CPUs the assignment last applied took
 * away count their reclaim budget (the slot's budget_ns: the request that
 * caused the change, else the daemon's pass), 0 when not attached. Read it
 * in the assignment callback: the bounded-reclaim clock starts when the new
 * owner asked, not when we noticed. Daemon-written, so a caller
 * sanity-checks it against its own clock. */
uint64_t nth_cpumgr_budget_ns(void);

/* Attached, and the daemon has answered our claim (its first assignment
 * was read and given to the callback, even if it equals the standalone
 * set). Called from the assignment callback (client lock held). */
int nth_cpumgr_client_answered(void);

/* Wait until the daemon has answered our claim, or CLOCK_MONOTONIC reaches
 * deadline_ns (absolute), sleeping in the kernel on the slot's publication
 * word (shared futex: never a nano-thread switch), then read the answer on
 * the calling thread, which gives it to the assignment callback. For the
 * runtime's start (cpumgr_rt.c): a newcomer's main thread is bound to its
 * first grant before the program's serial start-up runs. Returns 1 if
 * answered (also when it was already), 0 when not attached or at the
 * deadline. Thread-safe; not from the assignment callback (client lock). */
int nth_cpumgr_client_wait_answer(int64_t deadline_ns);

/* Without attaching: does a daemon run on the segment, with a valid header
 * and CPUs in common with our mask (what the attach that follows needs)?
 * 1 also when attached already; 0 when off or not initialised. Maps the
 * segment (kept for the attach). For nth_init's lazy VPs. Thread-safe. */
int nth_cpumgr_client_daemon_up(void);

/* CLOCK_MONOTONIC ns of the daemon's publication of the assignment last
 * applied (the slot's grant_ns, read with it under the seqlock), 0 when
 * not attached: a late notice counts the reclaim budget from there, not
 * from the notice (cpumgr_reclaim.h). Same caveats as budget_ns. */
uint64_t nth_cpumgr_grant_ns(void);

/* C.attached without starting the client (for the watcher, also at exit). */
int nth_cpumgr_client_attached(void);

/* Say whether the application needs no CPU now (on != 0: every VP parked
 * with nothing to run) or needs its request again (on == 0). Attached,
 * a change is written to the slot's dormant word (layout 6) and the
 * daemon is woken (futex), which then plans the application as asking
 * for 0 CPUs, or for its request; the request itself is kept. Alone it
 * is only remembered (published at the next attach). Returns 1 if the
 * change was published, else 0. Thread-safe (client lock); not from a
 * signal handler, nor from the assignment callback. Issue 5, DESIGN
 * invariant 3. */
int nth_cpumgr_client_set_dormant(int on);

/* ---- runtime side (cpumgr_rt.c) ---- */

struct nth_config;
/* Wire the client into the running runtime (init.c calls it once `started`
 * is set): start the client on cfg->cpumgr, follow the assignment with
 * nth_vps_set_allowed() (no CPU: every VP parks), poll at scheduling points,
 * and start the watcher thread that ticks the client and enforces bounded
 * reclaim (cfg->reclaim_us). Failure leaves the runtime running alone on its
 * affinity mask (DESIGN invariant 8). Returns 0, or ENOMEM/EAGAIN. */
int nth_cpumgr_rt_start(const struct nth_config *cfg);

/* Kernel thread id of VP vp as seen by the watcher (0 if not known yet);
 * the number of times bounded reclaim moved a VP. For tests and benches. */
int nth_cpumgr_rt_vp_tid(int vp);
unsigned long nth_cpumgr_rt_reclaims(void);
/* The last move bounded reclaim made: since_ns when its reclaim clock
 * started (the budget's start, nth_cpumgr_budget_start()) and due_ns when
 * the watcher planned to start it (since + NTH_RECLAIM_US - the margin),
 * both CLOCK_MONOTONIC ns; n, its number among this process's moves
 * (nth_cpumgr_rt_reclaims() just after it, 1 for the first); vp, the VP
 * whose kernel thread it moved; path, NTH_CPUMGR_MOVE_DISABLED (a disabled
 * VP onto the CPUs still ours) or NTH_CPUMGR_MOVE_STALE (an enabled VP
 * still bound to a CPU taken away, onto its own). All from the same move:
 * a test tells the move it watched from a later one. */
enum { NTH_CPUMGR_MOVE_DISABLED = 1, NTH_CPUMGR_MOVE_STALE = 2 };
struct nth_cpumgr_move {
    int64_t since_ns, due_ns;
    unsigned long n;
    int vp, path;
};
/* Fills *m with the last move. Returns 1, or 0 (nothing written) before
 * the first move or without a daemon. Thread-safe (the watcher's lock);
 * not from a signal handler. For tests: the margin is checked on the
 * plan, which no delay of a loaded machine changes. */
int nth_cpumgr_rt_last_move(struct nth_cpumgr_move *m);
/* Dormancies begun since start (the watcher said the application needs no
 * CPU, issue 5): for tests. Thread-safe. */
unsigned long nth_cpumgr_rt_dormancies(void);

#endif
