/*
 * signal.c -- signals and threads, after pthread_kill(3p),
 * pthread_sigmask(3p), sigwait(3p).
 *
 * pthread_kill to the caller raises the signal on its kernel thread at
 * once. To another nano-thread, it queues the signal in that thread's
 * record; the target delivers it (on whatever VP runs it) at its next
 * cancellation or wait point, and an interruptible wait (sleeps, sem_wait,
 * sigsuspend, pause, poll, ...) then returns EINTR.
 *
 * Present limit: signal masks are per kernel thread (per VP), as libc keeps
 * them, not yet per nano-thread; sigwait and its relatives poll the
 * caller's kernel thread and the process.
 */
#include <errno.h>
#include <string.h>
#include "shim.h"

int shim_on_vp(void)
{
    return nth_vp_id() >= 0;
}

int shim_signals(void)
{
    struct shim_thread *self = shim_self();
    uint64_t p = __atomic_load_n(&self->pending, __ATOMIC_ACQUIRE);
    if (!p)
        return 0;
    sigset_t blocked;
    REAL(pthread_sigmask)(SIG_BLOCK, NULL, &blocked);
    int any = 0;
    for (int sig = 1; sig <= 64; sig++) {
        uint64_t bit = 1ULL << (sig - 1);
        if (!(p & bit) || sigismember(&blocked, sig) == 1)
            continue;
        __atomic_and_fetch(&self->pending, ~bit, __ATOMIC_ACQ_REL);
        REAL(pthread_kill)(REAL(pthread_self)(), sig);
        any = 1;
    }
    return any;
}

SHIM_DECL(pthread_kill)
int nth_shim_pthread_kill(pthread_t t, int sig)
{
    struct shim_thread *st = (struct shim_thread *)t;
    if (!st)
        return ESRCH;
    if (sig < 0 || sig > 64)
        return EINVAL;
    if (sig == 0)
        return 0;
    if (st == shim_self())
        return REAL(pthread_kill)(REAL(pthread_self)(), sig);
    __atomic_or_fetch(&st->pending, 1ULL << (sig - 1), __ATOMIC_SEQ_CST);
    pthread_cond_t *c = __atomic_load_n(&st->waiting_cond, __ATOMIC_SEQ_CST);
    if (c)
        nth_cond_broadcast((nth_cond_t *)c);   /* runs the handler, then re-waits */
    return 0;
}
SHIM_EXPORT(pthread_kill)

SHIM_DECL(pthread_sigqueue)
int nth_shim_pthread_sigqueue(pthread_t t, int sig, const union sigval value)
{
    struct shim_thread *st = (struct shim_thread *)t;
    if (st == shim_self())
        return REAL(pthread_sigqueue)(REAL(pthread_self)(), sig, value);
    return nth_shim_pthread_kill(t, sig);   /* the value is lost (limit) */
}
SHIM_EXPORT(pthread_sigqueue)

SHIM_DECL(pthread_sigmask)
int nth_shim_pthread_sigmask(int how, const sigset_t *restrict set, sigset_t *restrict old)
{
    int r = REAL(pthread_sigmask)(how, set, old);
    if (r == 0)
        shim_signals();          /* queued ones now unblocked */
    return r;
}
SHIM_EXPORT(pthread_sigmask)

SHIM_DECL(sigprocmask)
int nth_shim_sigprocmask(int how, const sigset_t *restrict set, sigset_t *restrict old)
{
    int r = nth_shim_pthread_sigmask(how, set, old);
    if (r) {
        errno = r;
        return -1;
    }
    return 0;
}
SHIM_EXPORT(sigprocmask)

SHIM_DECL(raise)
int nth_shim_raise(int sig)
{
    int r = REAL(pthread_kill)(REAL(pthread_self)(), sig);
    if (r) {
        errno = r;
        return -1;
    }
    return 0;
}
SHIM_EXPORT(raise)

/* Poll for one of set's signals until deadline (monotonic ns). */
static int wait_signal(const sigset_t *set, siginfo_t *info, int64_t deadline)
{
    static const struct timespec zero = { 0, 0 };
    int64_t step = 0;
    for (;;) {
        shim_signals();
        int r = REAL(sigtimedwait)(set, info, &zero);
        if (r > 0 || (r < 0 && errno != EAGAIN))
            return r;
        shim_testcancel();
        if (shim_now(CLOCK_MONOTONIC) >= deadline) {
            errno = EAGAIN;
            return -1;
        }
        shim_backoff(deadline, &step);
    }
}

SHIM_DECL(sigtimedwait)
int nth_shim_sigtimedwait(const sigset_t *restrict set, siginfo_t *restrict info, const struct timespec *restrict tmo)
{
    if (!shim_on_vp())
        return REAL(sigtimedwait)(set, info, tmo);
    if (tmo && shim_check_ts(tmo)) {
        errno = EINVAL;
        return -1;
    }
    int64_t deadline = tmo ? shim_now(CLOCK_MONOTONIC) + shim_ts_ns(tmo) : INT64_MAX;
    return wait_signal(set, info, deadline);
}
SHIM_EXPORT(sigtimedwait)

SHIM_DECL(sigwaitinfo)
int nth_shim_sigwaitinfo(const sigset_t *restrict set, siginfo_t *restrict info)
{
    if (!shim_on_vp())
        return REAL(sigwaitinfo)(set, info);
    return wait_signal(set, info, INT64_MAX);
}
SHIM_EXPORT(sigwaitinfo)

SHIM_DECL(sigwait)
int nth_shim_sigwait(const sigset_t *restrict set, int *restrict sig)
{
    if (!shim_on_vp())
        return REAL(sigwait)(set, sig);
    siginfo_t si;
    int r = wait_signal(set, &si, INT64_MAX);
    if (r < 0)
        return errno;
    *sig = r;
    return 0;
}
SHIM_EXPORT(sigwait)

/* sigsuspend/pause: wait, all signals blocked on the kernel thread, until
 * one that mask leaves open is pending (for the process, this kernel thread
 * or queued for this nano-thread); then open the mask, so the kernel runs
 * its handler here, and return EINTR. */
SHIM_DECL(sigsuspend)
int nth_shim_sigsuspend(const sigset_t *mask)
{
    if (!shim_on_vp())
        return REAL(sigsuspend)(mask);
    sigset_t old, all, pending;
    sigfillset(&all);
    REAL(pthread_sigmask)(SIG_SETMASK, &all, &old);
    struct shim_thread *self = shim_self();
    int64_t step = 0;
    for (;;) {
        sigpending(&pending);
        int ready = 0;
        uint64_t q = __atomic_load_n(&self->pending, __ATOMIC_ACQUIRE);
        for (int s = 1; s <= 64 && !ready; s++)
            if (sigismember(mask, s) != 1 && (sigismember(&pending, s) == 1 || (q >> (s - 1) & 1)))
                ready = 1;
        if (ready)
            break;
        shim_testcancel();
        shim_backoff(INT64_MAX, &step);
    }
    REAL(pthread_sigmask)(SIG_SETMASK, mask, NULL);   /* handlers run here */
    shim_signals();
    REAL(pthread_sigmask)(SIG_SETMASK, &old, NULL);
    errno = EINTR;
    return -1;
}
SHIM_EXPORT(sigsuspend)

SHIM_DECL(pause)
int nth_shim_pause(void)
{
    sigset_t cur;
    REAL(pthread_sigmask)(SIG_BLOCK, NULL, &cur);
    return nth_shim_sigsuspend(&cur);
}
SHIM_EXPORT(pause)
