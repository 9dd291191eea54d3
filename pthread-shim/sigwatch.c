/*
 * sigwatch.c -- process-directed signals while every VP is idle, after
 * signal(7) ("a process-directed signal may be delivered to any one of
 * the threads that does not currently have the signal blocked").
 *
 * A VP's idle context blocks every signal (signal.c: no handler may run
 * outside a nano-thread: one that leaves with siglongjmp would jump off
 * the idle context), and the shim's helper threads block them too. So
 * once every VP is idle -- every nano-thread in an untimed wait: sem_wait,
 * pthread_join, pthread_cond_wait, pthread_mutex_lock -- no kernel thread
 * of the process left a signal open, and kill -TERM, an alarm's SIGALRM
 * or a sigqueue stayed pending for ever, where glibc's threads run the
 * handler or die of the default action.
 *
 * The watcher, a kernel thread of libc's that runs no nano-thread, takes
 * those signals while every VP is idle: it waits in rt_sigtimedwait for
 * the signals some live thread's mask leaves open (the registry below),
 * then, in ordinary context:
 *   - SIG_IGN, or SIG_DFL of a signal ignored by default: nothing;
 *   - SIG_DFL otherwise (terminate, core, stop): the default action, by
 *     raising it on itself with the signal open (the process ends, or
 *     stops and goes on);
 *   - a handler: queued, with its siginfo, on a nano-thread whose mask
 *     leaves it open -- one in an interruptible wait first -- exactly as
 *     pthread_kill queues one (signal.c), and its waits interrupted: the
 *     nano-thread runs the handler itself when it resumes (switch-in hook,
 *     deliver_queued) and its wait reacts as to pthread_kill.
 * A signal nobody's mask leaves open any more, or whose queue is full, is
 * put back pending on the process (rt_sigqueueinfo; kill(2) when the
 * kernel refuses a siginfo of that kind from this thread) and left alone
 * until a VP next runs a nano-thread.
 *
 * "Idle" is per VP (a bit each): set when the switch-in hook runs for the
 * VP's idle context, cleared when it runs for a nano-thread on it (both in
 * signal.c, which calls shim_sigwatch_idle / shim_sigwatch_busy). The VP
 * that makes the count reach the number of VPs wakes the watcher (a futex
 * word); the first to leave that state, if the watcher is in its wait,
 * ends it with the wake-up signal, which the watcher keeps blocked and
 * includes in its wait (so a kick never gets lost between its check and
 * the system call). While some VP runs a nano-thread the watcher takes
 * nothing: that VP's kernel thread carries its nano-thread's mask, and
 * the kernel delivers there directly, as before.
 *
 * The registry lists every thread record the shim made (created threads,
 * main's and other adopted ones), under a spin lock taken only in
 * ordinary context (never in a handler), held for a few instructions by
 * nano-threads (which do not switch while holding it) and for a walk by
 * the watcher. A record leaves it before it is freed, so the watcher never
 * touches freed memory.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "shim.h"

#define BIT(sig) (1ULL << ((sig) - 1))
#define KICK_SIG 32
#define UNBLOCKABLE (BIT(SIGKILL) | BIT(SIGSTOP) | BIT(32) | BIT(33))

/* ---- the registry of records ------------------------------------------------- */

static struct shim_thread reg_head = { .reg_next = &reg_head, .reg_prev = &reg_head };
static int reg_lock;

static void reg_acquire(void)
{
    while (__atomic_exchange_n(&reg_lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&reg_lock, __ATOMIC_RELAXED))
            syscall(SYS_sched_yield);
}

static void reg_release(void)
{
    __atomic_store_n(&reg_lock, 0, __ATOMIC_RELEASE);
}

void shim_sigwatch_add(struct shim_thread *st)
{
    reg_acquire();
    if (!st->reg_next) {
        st->reg_next = &reg_head;
        st->reg_prev = reg_head.reg_prev;
        reg_head.reg_prev->reg_next = st;
        reg_head.reg_prev = st;
    }
    reg_release();
}

void shim_sigwatch_remove(struct shim_thread *st)
{
    reg_acquire();
    if (st->reg_next) {
        st->reg_prev->reg_next = st->reg_next;
        st->reg_next->reg_prev = st->reg_prev;
        st->reg_next = st->reg_prev = NULL;
    }
    reg_release();
}

/* A record whose thread may take a signal: not finished (main's record,
 * which has no done flag, after a pthread_exit from main: its nano-thread
 * is gone). */
static int live(const struct shim_thread *st)
{
    nth_t nt = __atomic_load_n(&st->nt, __ATOMIC_ACQUIRE);
    return !__atomic_load_n(&st->done, __ATOMIC_ACQUIRE) && nt && nth_id(nt) == st->nid;
}

/* The signals some live thread leaves open (lock held). */
static uint64_t open_union(void)
{
    uint64_t u = 0;
    for (struct shim_thread *st = reg_head.reg_next; st != &reg_head; st = st->reg_next)
        if (live(st))
            u |= ~__atomic_load_n(&st->sigmask, __ATOMIC_ACQUIRE);
    return u & ~UNBLOCKABLE;
}

/* In a wait that shim_interrupt_waits ends at once. */
static int interruptible(const struct shim_thread *st)
{
    return __atomic_load_n(&st->waiting_cond, __ATOMIC_ACQUIRE) ||
           __atomic_load_n(&st->waiting_sem, __ATOMIC_ACQUIRE) ||
           __atomic_load_n(&st->ktid, __ATOMIC_ACQUIRE);
}

/* A live thread that leaves sig open, one in an interruptible wait if any
 * (lock held): NULL when none. */
static struct shim_thread *target_for(int sig)
{
    struct shim_thread *any = NULL;
    for (struct shim_thread *st = reg_head.reg_next; st != &reg_head; st = st->reg_next) {
        if (!live(st) || (__atomic_load_n(&st->sigmask, __ATOMIC_ACQUIRE) & BIT(sig)))
            continue;
        if (interruptible(st))
            return st;
        if (!any)
            any = st;
    }
    return any;
}

/* ---- which VPs are idle --------------------------------------------------------- */

#define MAX_VPS SHIM_SIGWATCH_MAX_VPS
#define idle_bits shim_idle_bits
uint64_t shim_idle_bits[MAX_VPS / 64];
static int nidle;                /* bits set (atomic) */
static int idle_gen;             /* futex word: bumped when every VP is idle */
static int watch_tid;            /* the watcher's kernel thread, or 0 */
static int watch_waiting;        /* 1 while it may be in rt_sigtimedwait */
static pid_t watch_pid;          /* the process whose watcher runs */

static int all_idle(void)
{
    return __atomic_load_n(&nidle, __ATOMIC_SEQ_CST) >= nth_num_vps();
}

void shim_sigwatch_idle(int vp)
{
    if (vp < 0 || vp >= MAX_VPS)
        return;
    uint64_t b = 1ULL << (vp % 64);
    if (__atomic_load_n(&idle_bits[vp / 64], __ATOMIC_RELAXED) & b)
        return;
    if (__atomic_fetch_or(&idle_bits[vp / 64], b, __ATOMIC_SEQ_CST) & b)
        return;
    if (__atomic_add_fetch(&nidle, 1, __ATOMIC_SEQ_CST) >= nth_num_vps() &&
        __atomic_load_n(&watch_tid, __ATOMIC_ACQUIRE)) {
        __atomic_add_fetch(&idle_gen, 1, __ATOMIC_SEQ_CST);
        syscall(SYS_futex, &idle_gen, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

void shim_sigwatch_busy_slow(int vp)
{
    uint64_t b = 1ULL << (vp % 64);
    if (!(__atomic_fetch_and(&idle_bits[vp / 64], ~b, __ATOMIC_SEQ_CST) & b))
        return;
    __atomic_sub_fetch(&nidle, 1, __ATOMIC_SEQ_CST);
    /* Dekker with the watcher: it sets watch_waiting, then looks at
     * nidle. */
    int tid = __atomic_load_n(&watch_tid, __ATOMIC_SEQ_CST);
    if (tid && __atomic_load_n(&watch_waiting, __ATOMIC_SEQ_CST))
        syscall(SYS_tgkill, getpid(), tid, KICK_SIG);
}

/* ---- the watcher ------------------------------------------------------------------ */

static int ignored_by_default(int sig)
{
    return sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH || sig == SIGCONT;
}

static void mask_to_set(uint64_t m, sigset_t *s)
{
    sigemptyset(s);
    memcpy(s, &m, sizeof m);
}

/* Back to pending on the process: the siginfo kept where the kernel lets
 * this thread send it (si_code < 0, not SI_TKILL), else as kill(2). */
static void put_back(int sig, siginfo_t *si)
{
    if (si->si_code < 0 && si->si_code != SI_TKILL &&
        syscall(SYS_rt_sigqueueinfo, getpid(), sig, si) == 0)
        return;
    syscall(SYS_kill, getpid(), sig);
}

/* The default action of sig, taken on this kernel thread. */
static void default_action(int sig)
{
    sigset_t one;
    mask_to_set(BIT(sig), &one);
    syscall(SYS_tgkill, getpid(), (int)syscall(SYS_gettid), sig);
    syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &one, NULL, (size_t)(_NSIG / 8));
    /* A stop signal: the process went on (SIGCONT). */
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &one, NULL, (size_t)(_NSIG / 8));
}

/* What to do with sig, taken from the process: 1 if put back. */
static int route(int sig, siginfo_t *si)
{
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) != 0)
        return 0;
    int handler = (sa.sa_flags & SA_SIGINFO) || (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN);
    if (!handler && (sa.sa_handler == SIG_IGN || ignored_by_default(sig)))
        return 0;                /* discarded, as the kernel would */
    reg_acquire();
    struct shim_thread *st = target_for(sig);
    if (!st || (!handler ? 0 : (!interruptible(st) && !all_idle()))) {
        /* No thread leaves it open now; or only a running one (a VP left
         * idle meanwhile), which takes it from the kernel directly. */
        reg_release();
        put_back(sig, si);
        return 1;
    }
    if (!handler) {
        reg_release();
        default_action(sig);
        return 0;
    }
    int r = shim_sig_queue_info(st, sig, si);
    if (r == 0)
        shim_interrupt_waits(st);   /* the handler runs there, then EINTR / a spurious wake-up */
    reg_release();
    if (r) {
        put_back(sig, si);
        return 1;
    }
    return 0;
}

static void *watcher_main(void *arg)
{
    (void)arg;
    /* glibc's thread start unblocks its SIGCANCEL, our wake-up signal,
     * whatever the creator's mask: blocked again before anyone may send
     * it (its default action would end the process). */
    sigset_t k;
    mask_to_set(BIT(KICK_SIG), &k);
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &k, NULL, (size_t)(_NSIG / 8));
    __atomic_store_n(&watch_tid, (int)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
    for (;;) {
        int g = __atomic_load_n(&idle_gen, __ATOMIC_SEQ_CST);
        if (!all_idle()) {
            syscall(SYS_futex, &idle_gen, FUTEX_WAIT_PRIVATE, g, NULL, NULL, 0);
            continue;
        }
        /* Every VP idle: wait for what some thread leaves open. Signals
         * put back are left out until a VP runs a nano-thread again. */
        uint64_t left_out = 0;
        for (;;) {
            reg_acquire();
            uint64_t want = open_union() & ~left_out;
            reg_release();
            if (!want)
                break;
            __atomic_store_n(&watch_waiting, 1, __ATOMIC_SEQ_CST);
            if (!all_idle()) {
                __atomic_store_n(&watch_waiting, 0, __ATOMIC_SEQ_CST);
                break;
            }
            sigset_t set;
            mask_to_set(want | BIT(KICK_SIG), &set);
            siginfo_t si;
            int sig = (int)syscall(SYS_rt_sigtimedwait, &set, &si, NULL, (size_t)(_NSIG / 8));
            __atomic_store_n(&watch_waiting, 0, __ATOMIC_SEQ_CST);
            if (sig == KICK_SIG)
                break;           /* a VP runs a nano-thread again (or a stale kick) */
            if (sig <= 0)
                continue;
            if (route(sig, &si))
                left_out |= BIT(sig);
        }
        /* Until the next time every VP is idle (a wake-up meanwhile shows
         * in idle_gen). */
        if (all_idle() && __atomic_load_n(&idle_gen, __ATOMIC_SEQ_CST) == g)
            syscall(SYS_futex, &idle_gen, FUTEX_WAIT_PRIVATE, g, NULL, NULL, 0);
    }
    return NULL;
}

void shim_sigwatch_start(void)
{
    static int lock;
    pid_t me = getpid();
    if (__atomic_load_n(&watch_pid, __ATOMIC_ACQUIRE) == me)
        return;
    while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
        syscall(SYS_sched_yield);
    if (__atomic_load_n(&watch_pid, __ATOMIC_RELAXED) != me) {
        /* Every signal blocked from its first instruction (inherited),
         * the wake-up signal too (it is waited for, never handled);
         * glibc's set*id signal stays open. */
        sigset_t all, old;
        sigfillset(&all);
        sigdelset(&all, SIGSEGV);
        sigdelset(&all, SIGBUS);
        uint64_t b;
        memcpy(&b, &all, sizeof b);
        b |= BIT(KICK_SIG);
        memcpy(&all, &b, sizeof b);
        syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &old, (size_t)(_NSIG / 8));
        pthread_t t;
        int r = shim_kthread_start(watcher_main, &t);
        syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, (size_t)(_NSIG / 8));
        if (r == 0) {
            REAL(pthread_setname_np)(t, "nth-sigwatch");
            __atomic_store_n(&watch_pid, me, __ATOMIC_RELEASE);
        } else {
            static const char msg[] =
                "nthlib: pthread shim: cannot start the signal watcher thread: a process-directed "
                "signal may wait while every thread waits\n";
            (void)!write(2, msg, sizeof msg - 1);
        }
    }
    __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

void shim_sigwatch_fork_child(void)
{
    /* One thread, running, on one VP: the others' records are the
     * parent's (their threads are not here), and so are the idle bits. */
    struct shim_thread *self = shim_self_peek();
    reg_head.reg_next = reg_head.reg_prev = &reg_head;
    __atomic_store_n(&reg_lock, 0, __ATOMIC_RELAXED);
    if (self) {
        self->reg_next = self->reg_prev = NULL;
        shim_sigwatch_add(self);
    }
    memset(idle_bits, 0, sizeof idle_bits);
    __atomic_store_n(&nidle, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&watch_tid, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&watch_waiting, 0, __ATOMIC_RELAXED);
    if (__atomic_load_n(&watch_pid, __ATOMIC_RELAXED))
        shim_sigwatch_start();   /* watch_pid is the parent's: a new one */
}
