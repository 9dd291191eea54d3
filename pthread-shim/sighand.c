/*
 * sighand.c -- the program's signal handlers run inside a shim trampoline
 * that tells the shim "this kernel thread is in a signal handler", so that
 * the calls signal-safety(7) lists as async-signal-safe (write, read,
 * sigprocmask, raise, the sleeps, poll, ...) stay so under the shim.
 *
 * Why: the wrappers of blocking calls lend the VP around the call
 * (nth_blocking_enter: the ready queues, the timer queue, a stand-in
 * kernel thread that may have to be started with malloc), and their
 * cancellation checks and queued-signal delivery look at the thread's
 * record. A handler may have interrupted the runtime, or malloc, while it
 * held one of those locks: the self-pipe pattern (write from a SIGALRM
 * handler) deadlocked. While the depth below is not zero, shim_on_nano()
 * answers 0, and every wrapper then makes libc's call directly, as for a
 * kernel thread that runs no nano-thread: no lock, no allocation, no
 * cancellation point -- POSIX's cancellation points are not required to
 * act in a handler, and acting there (unwinding through the kernel's
 * signal frame) would not be async-signal-safe anyway.
 *
 * sigaction(2)/signal(2)/bsd_signal/sysv_signal/ssignal/sigset(3) are
 * wrapped: a handler the program installs is kept in a table, and the
 * kernel gets the trampoline with SA_SIGINFO added and every other flag
 * and the mask as given (SA_RESETHAND, SA_NODEFER, SA_ONSTACK, SA_RESTART
 * keep their kernel meaning). An old action read back (oact, signal's
 * return value) names the program's handler and flags, never the
 * trampoline: it is what the kernel has, with the handler translated, so
 * that a SA_RESETHAND handler reads back as SIG_DFL once it ran, and
 * siginterrupt's changes (made inside libc) show. SIG_DFL and SIG_IGN go
 * to the kernel unchanged. The runtime's own handlers (stack overflow,
 * fatal-signal trace flush: FROM_RUNTIME) and the shim's wake-up signal
 * (signal.c, installed with the system call) are not wrapped.
 *
 * The depth is a __thread counter with a record per nested handler: its
 * entry stack pointer, the nano-thread it interrupted and, for a handler
 * on a sigaltstack(2), that stack's range. It is per kernel thread in the
 * default build; with a TLS block per thread (NTH_SHIM_TLS=thread) it is
 * in the interrupted thread's block, which is the same thing because a
 * handler never switches (the wrappers it calls do not). A handler left
 * with siglongjmp (POSIX allows that) never returns through the
 * trampoline: the longjmp wrappers below drop the records of the handlers
 * the jump leaves (x86-64: the target stack pointer from the jmp_buf;
 * elsewhere the innermost handler), and a record whose nano-thread is not
 * the caller, or whose stack the caller is no longer below (or no longer
 * on, for a sigaltstack), is dropped when next looked at: the depth is
 * never left set, so blocking calls after such a jump go through the
 * runtime again.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include "shim.h"

/* ---- the program's handlers ------------------------------------------------ */

/* Signals 1..64. Each has two slots and the index of the current one: a
 * writer (under table_lock) fills the other slot, then flips the index,
 * so the trampoline, which may run at any moment on any kernel thread,
 * reads a handler and its SA_SIGINFO flag that belong together without a
 * lock. */
#define NSIGS 65
struct prog_action {
    void *handler;               /* NULL: none of the program's */
    int flags;                   /* the program's sa_flags */
};
static struct prog_action table[NSIGS][2];
static int table_cur[NSIGS];
static int table_lock;

/* The lock is taken with every signal blocked on the kernel thread:
 * sigaction is async-signal-safe, so a handler may call it while its
 * kernel thread holds the lock. Raw system calls: no wrapper, no libc
 * lock. */
static void table_acquire(sigset_t *saved)
{
    sigset_t all;
    sigfillset(&all);
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, saved, (size_t)(_NSIG / 8));
    while (__atomic_exchange_n(&table_lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&table_lock, __ATOMIC_RELAXED))
            ;
}

static void table_release(const sigset_t *saved)
{
    __atomic_store_n(&table_lock, 0, __ATOMIC_RELEASE);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, saved, NULL, (size_t)(_NSIG / 8));
}

static struct prog_action table_get(int sig)
{
    int i = __atomic_load_n(&table_cur[sig], __ATOMIC_ACQUIRE);
    struct prog_action a;
    a.handler = __atomic_load_n(&table[sig][i].handler, __ATOMIC_RELAXED);
    a.flags = __atomic_load_n(&table[sig][i].flags, __ATOMIC_RELAXED);
    return a;
}

static void table_set(int sig, void *handler, int flags)
{
    int i = !__atomic_load_n(&table_cur[sig], __ATOMIC_RELAXED);
    __atomic_store_n(&table[sig][i].handler, handler, __ATOMIC_RELAXED);
    __atomic_store_n(&table[sig][i].flags, flags, __ATOMIC_RELAXED);
    __atomic_store_n(&table_cur[sig], i, __ATOMIC_RELEASE);
}

/* ---- the depth ------------------------------------------------------------------ */

#define DEPTH_RECORDS 16

__thread int shim_sig_depth __attribute__((tls_model("initial-exec")));

struct handler_record {
    uintptr_t sp;                /* an address in the trampoline's frame */
    uintptr_t alt_lo, alt_hi;    /* its sigaltstack, else both 0 */
    void *nt;                    /* the nano-thread it interrupted, or NULL */
    int in_call;                 /* it may have interrupted a call made between
                                    nth_blocking_enter and _leave (or a kernel
                                    thread that is no VP) */
};
static __thread struct handler_record records[DEPTH_RECORDS] __attribute__((tls_model("initial-exec")));

/* The nano-thread running here, with no side effect: nth_self() would
 * start the runtime when it has not started (a handler may run before). */
static void *current_nt(void)
{
    return nth_vp_id() >= 0 || nth_on_standin() ? (void *)nth_self() : NULL;
}

/* Is record r still a handler the code at sp (of nano-thread nt) runs in? */
static int record_live(const struct handler_record *r, uintptr_t sp, void *nt)
{
    if (r->nt != nt)
        return 0;
    if (r->alt_hi)
        return sp >= r->alt_lo && sp < r->sp;
    return sp < r->sp;
}

__attribute__((noinline)) int shim_in_handler_slow(void)
{
    /* The frame, not a local's address: a sanitizer may keep locals on
     * a heap-allocated fake stack. */
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    void *nt = current_nt();
    int d = shim_sig_depth;
    while (d > 0 && d <= DEPTH_RECORDS && !record_live(&records[d - 1], sp, nt))
        d--;
    shim_sig_depth = d;
    return d > 0;
}

static void trampoline(int sig, siginfo_t *si, void *ucv)
{
    int saved_errno = errno;
    struct prog_action a = table_get(sig);
    if (!a.handler) {
        /* The program set SIG_DFL or SIG_IGN while this was being
         * delivered: it asked for the signal to do nothing more here. */
        errno = saved_errno;
        return;
    }
    errno = saved_errno;
    int d = shim_sig_depth;
    if (d < 0)
        d = 0;
    if (d < DEPTH_RECORDS) {
        struct handler_record *r = &records[d];
        r->sp = (uintptr_t)__builtin_frame_address(0);
        r->alt_lo = r->alt_hi = 0;
        const ucontext_t *uc = ucv;
        /* The kernel saves the sigaltstack in uc_stack: on it when this
         * frame is inside. */
        if (uc && !(uc->uc_stack.ss_flags & SS_DISABLE) && uc->uc_stack.ss_size) {
            uintptr_t lo = (uintptr_t)uc->uc_stack.ss_sp, hi = lo + uc->uc_stack.ss_size;
            if (r->sp >= lo && r->sp < hi) {
                r->alt_lo = lo;
                r->alt_hi = hi;
            }
        }
        r->nt = current_nt();
        r->in_call = nth_vp_id() < 0 && !nth_on_standin();
    }
    /* For a sleep that began before its guard was up (signal.c,
     * shim_sleep_guard_begin): a handler ran on the thread it interrupted. */
    struct shim_thread *me = shim_self_in_handler_peek();
    if (me)
        __atomic_add_fetch(&me->handlers_ran, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    shim_sig_depth = d + 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (a.flags & SA_SIGINFO)
        ((void (*)(int, siginfo_t *, void *))a.handler)(sig, si, ucv);
    else
        ((void (*)(int))a.handler)(sig);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    shim_sig_depth = d;          /* also drops the records of nested handlers left by a jump */
}

/* ---- sigaction and relatives ----------------------------------------------------- */

static int wrapped_sig(int sig)
{
    /* 32 and 33 are glibc's (its sigaction refuses them); SIGKILL and
     * SIGSTOP the kernel refuses: libc gives those errors. */
    return sig >= 1 && sig < NSIGS && sig != 32 && sig != 33 && sig != SIGKILL && sig != SIGSTOP;
}

static int is_handler(const struct sigaction *act)
{
    return act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
}

/* What the kernel has (k), as the program sees it given its table entry
 * (old): the trampoline becomes the program's handler and SA_SIGINFO its
 * own choice. */
static void translate(struct sigaction *out, const struct sigaction *k, struct prog_action old)
{
    *out = *k;
    int ours = k->sa_sigaction == trampoline;
    if (ours)
        out->sa_sigaction = (void (*)(int, siginfo_t *, void *))old.handler;
    /* The kernel's SA_SIGINFO is ours for the trampoline, and still once
     * SA_RESETHAND put SIG_DFL back (the kernel keeps the flags). A
     * handler the runtime put there (FROM_RUNTIME) keeps its own. */
    if (old.handler && (ours || (k->sa_handler == SIG_DFL && (old.flags & SA_RESETHAND))))
        out->sa_flags = (k->sa_flags & ~SA_SIGINFO) | (old.flags & SA_SIGINFO);
}

SHIM_DECL(sigaction)
int nth_shim_sigaction(int sig, const struct sigaction *restrict act, struct sigaction *restrict oact)
{
    int (*real)(int, const struct sigaction *, struct sigaction *) = REAL(sigaction);
    if (FROM_RUNTIME() || !wrapped_sig(sig))
        return real(sig, act, oact);
    struct sigaction k, kold;
    if (!act) {
        /* A query (signal.c asks at each pthread_kill): no lock, no mask
         * change. Racing with a change, it reads the one or the other. */
        struct prog_action cur = table_get(sig);
        if (real(sig, NULL, &kold) != 0)
            return -1;
        if (oact)
            translate(oact, &kold, cur);
        return 0;
    }
    sigset_t saved;
    table_acquire(&saved);
    struct prog_action old = table_get(sig);
    int r;
    if (is_handler(act)) {
        k = *act;
        k.sa_sigaction = trampoline;
        k.sa_flags |= SA_SIGINFO;
        /* Table first: a signal that comes before the kernel has the new
         * action runs the new handler, as natively after the call. */
        table_set(sig, (void *)act->sa_sigaction, act->sa_flags);
        r = real(sig, &k, &kold);
        if (r != 0)
            table_set(sig, old.handler, old.flags);
    } else {
        r = real(sig, act, &kold);
        if (r == 0)
            table_set(sig, NULL, 0);
    }
    int e = errno;
    table_release(&saved);
    if (r == 0 && is_handler(act))
        shim_defer_need(1);      /* its sem_posts may need the helper */
    if (r == 0 && oact)
        translate(oact, &kold, old);
    errno = e;
    return r;
}
SHIM_EXPORT(sigaction)

extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *oact);
SHIM_DECL(__sigaction)
int nth_shim___sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
    return nth_shim_sigaction(sig, act, oact);
}
SHIM_EXPORT(__sigaction)

/* signal(2) with glibc's BSD semantics (bsd_signal, ssignal too): the
 * signal blocked during its handler, SA_RESTART. */
static __sighandler_t set_handler(int sig, __sighandler_t h, int flags, int self_blocked)
{
    struct sigaction sa, old;
    if (h == SIG_ERR) {
        errno = EINVAL;
        return SIG_ERR;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sigemptyset(&sa.sa_mask);
    if (self_blocked)
        sigaddset(&sa.sa_mask, sig);   /* EINVAL for a bad sig: sigaction says so */
    sa.sa_flags = flags;
    if (nth_shim_sigaction(sig, &sa, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}

SHIM_DECL(signal)
__sighandler_t nth_shim_signal(int sig, __sighandler_t h)
{
    return set_handler(sig, h, SA_RESTART, 1);
}
SHIM_EXPORT(signal)

/* Declared by <signal.h> only for X/Open without _GNU_SOURCE. */
extern __sighandler_t bsd_signal(int sig, __sighandler_t h);
SHIM_DECL(bsd_signal)
__sighandler_t nth_shim_bsd_signal(int sig, __sighandler_t h)
{
    return set_handler(sig, h, SA_RESTART, 1);
}
SHIM_EXPORT(bsd_signal)

SHIM_DECL(ssignal)
__sighandler_t nth_shim_ssignal(int sig, __sighandler_t h)
{
    return set_handler(sig, h, SA_RESTART, 1);
}
SHIM_EXPORT(ssignal)

/* System V semantics: reset to SIG_DFL on delivery, not blocked in its
 * handler, no restart (glibc's __sysv_signal). */
SHIM_DECL(sysv_signal)
__sighandler_t nth_shim_sysv_signal(int sig, __sighandler_t h)
{
    return set_handler(sig, h, SA_RESETHAND | SA_NODEFER, 0);
}
SHIM_EXPORT(sysv_signal)

SHIM_DECL(__sysv_signal)
__sighandler_t nth_shim___sysv_signal(int sig, __sighandler_t h)
{
    return nth_shim_sysv_signal(sig, h);
}
SHIM_EXPORT(__sysv_signal)

/* sigset(3) (System V): SIG_HOLD blocks sig, any other disposition sets
 * it and unblocks sig; returns SIG_HOLD when sig was blocked, else the
 * previous disposition. The mask through the shim's sigprocmask, so a
 * nano-thread's own mask changes. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
SHIM_DECL(sigset)
#pragma GCC diagnostic pop
__sighandler_t nth_shim_sigset(int sig, __sighandler_t disp)
{
    if (sig < 1 || sig >= NSIGS || sig == 32 || sig == 33 || disp == SIG_ERR) {
        errno = EINVAL;
        return SIG_ERR;
    }
    sigset_t one, cur;
    sigemptyset(&one);
    sigaddset(&one, sig);
    if (sigprocmask(SIG_BLOCK, NULL, &cur) != 0)
        return SIG_ERR;
    int was_blocked = sigismember(&cur, sig) == 1;
    struct sigaction old;
    if (disp == SIG_HOLD) {
        if (nth_shim_sigaction(sig, NULL, &old) != 0 || sigprocmask(SIG_BLOCK, &one, NULL) != 0)
            return SIG_ERR;
    } else {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = disp;
        sigemptyset(&sa.sa_mask);
        if (nth_shim_sigaction(sig, &sa, &old) != 0 || sigprocmask(SIG_UNBLOCK, &one, NULL) != 0)
            return SIG_ERR;
    }
    return was_blocked ? SIG_HOLD : old.sa_handler;
}
SHIM_EXPORT(sigset)

/* ---- leaving a handler with a jump -------------------------------------------------- */

/* The stack pointer a jmp_buf restores, or 0 when unknown. glibc x86-64:
 * __jmpbuf[6] is %rsp, mangled with the thread's pointer guard (its TCB,
 * %fs:0x30: xor, then rotate left by 17). */
static uintptr_t jmp_target_sp(struct __jmp_buf_tag *env)
{
#if defined(__x86_64__) && defined(__GLIBC__)
    uintptr_t v = (uintptr_t)env[0].__jmpbuf[6], guard;
    __asm__("movq %%fs:0x30, %0" : "=r"(guard));
    v = (v >> 17) | (v << (64 - 17));
    return v ^ guard;
#else
    (void)env;
    return 0;
#endif
}

/* Drop the records of the handlers the jump to env leaves: those whose
 * frame is below the target on the same stack, or on a sigaltstack the
 * target is not on. Target unknown: the innermost handler. */
static void leave_handlers(struct __jmp_buf_tag *env)
{
    int d = shim_sig_depth;
    if (d <= 0)
        return;
    uintptr_t t = jmp_target_sp(env);
    int left_call = 0;
    if (!t) {
        left_call = d <= DEPTH_RECORDS && records[d - 1].in_call;
        shim_sig_depth = d - 1;
    } else {
        while (d > 0 && d <= DEPTH_RECORDS) {
            const struct handler_record *r = &records[d - 1];
            int left = r->alt_hi ? !(t >= r->alt_lo && t < r->alt_hi) : t > r->sp;
            if (!left)
                break;
            left_call |= r->in_call;
            d--;
        }
        shim_sig_depth = d;
    }
    if (left_call) {
        /* The handler interrupted a wrapper's call in the kernel (the
         * old way to time out a read: an alarm whose handler jumps out):
         * nth_blocking_leave and the wait's end never run, and the VP
         * would stay marked as in a system call, its nano-thread outside
         * the runtime's reach. Nothing between a wrapper's enter and leave
         * can be a jump target, so leaving the handler leaves the call. A
         * no-op on a kernel thread that is no VP. */
        shim_kwait_abandon();
        nth_blocking_leave();
    }
    /* The jump may restore a saved mask, or leave the handler's on the
     * kernel thread: what signal.c last put there is no longer known. */
    shim_kmask_forget();
}

SHIM_DECL(siglongjmp)
void nth_shim_siglongjmp(sigjmp_buf env, int val)
{
    if (__builtin_expect(shim_sig_depth != 0, 0))
        leave_handlers(env);
    REAL(siglongjmp)(env, val);
    __builtin_unreachable();
}
SHIM_EXPORT(siglongjmp)

SHIM_DECL(longjmp)
void nth_shim_longjmp(jmp_buf env, int val)
{
    if (__builtin_expect(shim_sig_depth != 0, 0))
        leave_handlers(env);
    REAL(longjmp)(env, val);
    __builtin_unreachable();
}
SHIM_EXPORT(longjmp)

SHIM_DECL(_longjmp)
void nth_shim__longjmp(jmp_buf env, int val)
{
    if (__builtin_expect(shim_sig_depth != 0, 0))
        leave_handlers(env);
    REAL(_longjmp)(env, val);
    __builtin_unreachable();
}
SHIM_EXPORT(_longjmp)

/* _FORTIFY_SOURCE's longjmp (checks that the jump goes up the stack). */
extern void __longjmp_chk(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));
SHIM_DECL(__longjmp_chk)
void nth_shim___longjmp_chk(struct __jmp_buf_tag env[1], int val)
{
    if (__builtin_expect(shim_sig_depth != 0, 0))
        leave_handlers(env);
    REAL(__longjmp_chk)(env, val);
    __builtin_unreachable();
}
SHIM_EXPORT(__longjmp_chk)
