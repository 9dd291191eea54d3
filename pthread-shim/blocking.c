/*
 * blocking.c -- sleeps and blocking system calls from nano-threads.
 *
 * Sleeps become nano-thread sleeps (nth_sleep_until), in slices so that a
 * cancellation request or a queued signal is seen (on a stand-in, each
 * slice is an interruptible ppoll in the kernel instead); an interrupted sleep
 * returns EINTR and the remaining time, after nanosleep(3p) and
 * clock_nanosleep(3p).
 *
 * Blocking calls must not stall the other nano-threads of the VP (DESIGN
 * invariant 4): they wait in the kernel between nth_blocking_enter and
 * nth_blocking_leave, which lends the VP to a stand-in kernel thread
 * while the call sleeps (and costs a few loads when it does not). Calls on
 * descriptors first try a zero-timeout poll (ready: the call at once);
 * a blocking descriptor that is not ready waits in ppoll, then the call is
 * made. The waits (ppoll, pselect, epoll_pwait) take a signal mask, so the
 * shim's wake-up signal (signal.c, shim_kwait_begin) opens atomically in
 * them: pthread_kill and pthread_cancel end them at once, with no window.
 * Signal semantics after signal(7) "Interruption of system calls": a
 * handler that interrupts read, write, recv, send, accept, waitpid resumes
 * the call when it has SA_RESTART, else -1/EINTR; poll, select and epoll
 * always return EINTR. waitpid has no mask argument: its wake-up signal
 * is open around the call, so a request that comes just before it starts
 * waits for the call to return (glibc's cancellation had that window too).
 * connect and fsync wait in the kernel, not interruptible by pthread_kill.
 * A nano-thread that a stand-in runs (its VP's kernel thread in another
 * call) takes the same paths as one on a VP: nth_blocking_enter hands the
 * VP on, and its waits stay interruptible (they went to libc before, where
 * no cancellation or pthread_kill reached them). Calls from kernel threads
 * that run no nano-thread, and the runtime's own, go straight to libc.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "shim.h"

/* ---- sleeps ------------------------------------------------------------------- */

static int kppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *umask, int *kicked);

/* Sleep until deadline on clock; 0, or EINTR with *left_ns set when a
 * signal's handler ran (queued for the caller, or process-directed and
 * pending while it slept: shim_sleep_guard_*). A cancellation point. */
static int sleep_until(clockid_t clock, int64_t deadline, int64_t *left_ns)
{
    shim_signals_begin();
    uint64_t mask = shim_sleep_guard_begin();
    uint64_t prev = shim_slices_begin(clock, deadline);
    for (;;) {
        int64_t now = shim_now(clock);
        if (now >= deadline) {
            nth_wait_slices(prev);
            shim_sleep_guard_end(mask);
            return 0;
        }
        if (shim_sleep_guard_check(mask) || shim_signals()) {
            nth_wait_slices(prev);
            shim_sleep_guard_end(mask);
            if (left_ns)
                *left_ns = deadline - now;
            return EINTR;
        }
        if (shim_cancel_requested()) {
            uint64_t real = nth_wait_slices(prev);
            shim_sleep_guard_end(mask);  /* cleanup handlers with the own mask */
            shim_testcancel();
            mask = shim_sleep_guard_begin();
            nth_wait_slices(real);
        }
        int64_t end = deadline - now > SHIM_SLICE_NS ? now + SHIM_SLICE_NS : deadline;
        shim_nap(clock, end);     /* pthread_kill ends it early (also on a stand-in) */
    }
}

SHIM_DECL(clock_nanosleep)
int nth_shim_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
    if ((clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) || FROM_RUNTIME())
        return REAL(clock_nanosleep)(clock, flags, req, rem);
    if (!shim_on_nano())
        return REAL(clock_nanosleep)(clock, flags, req, rem);
    if (shim_check_ts(req))
        return EINVAL;
    int64_t deadline = (flags & TIMER_ABSTIME) ? shim_ts_ns(req) : shim_now(clock) + shim_ts_ns(req);
    int64_t left = 0;
    int r = sleep_until(clock, deadline, &left);
    if (r == EINTR && rem && !(flags & TIMER_ABSTIME))
        *rem = shim_ns_ts(left);
    return r;
}
SHIM_EXPORT(clock_nanosleep)

SHIM_DECL(nanosleep)
int nth_shim_nanosleep(const struct timespec *req, struct timespec *rem)
{
    SHIM_HOME_ENTER();
    int r = nth_shim_clock_nanosleep(CLOCK_MONOTONIC, 0, req, rem);
    if (r) {
        errno = r;
        return SHIM_HOME_RET(-1);
    }
    return 0;
}
SHIM_EXPORT(nanosleep)

SHIM_DECL(sleep)
unsigned nth_shim_sleep(unsigned s)
{
    struct timespec req = { (time_t)s, 0 }, rem = { 0, 0 };
    if (nth_shim_nanosleep(&req, &rem) == 0)
        return 0;
    /* The whole seconds left, as glibc's sleep (not rounded up: an
     * alarm(1) cutting sleep(3) gives 1). */
    return (unsigned)rem.tv_sec;
}
SHIM_EXPORT(sleep)

SHIM_DECL(usleep)
int nth_shim_usleep(useconds_t us)
{
    struct timespec req = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
    return nth_shim_nanosleep(&req, NULL);
}
SHIM_EXPORT(usleep)

/* ---- waits in the kernel ----------------------------------------------- */

/* ppoll(fds, n, tmo) in the kernel with the VP lent; mask: umask, or the
 * caller's. -1/EINTR without waiting when a request is already there.
 * *kicked: the wake-up signal ended it (else a kernel-delivered signal). */
static int kppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *umask, int *kicked)
{
    int (*rppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *) = REAL(ppoll);
    sigset_t m;
    *kicked = 0;
    if (shim_kwait_begin(&m, umask)) {
        errno = EINTR;
        *kicked = 1;
        return -1;
    }
    nth_blocking_enter();
    int r = rppoll(fds, n, tmo, &m);
    nth_blocking_leave();
    *kicked = shim_kwait_end();
    return r;
}

/* After an EINTR of a wait: act on cancellation, run queued signals.
 * 1 to wait again: only the wake-up signal ran and no handler did (a
 * late kick, or cancellation while disabled), or (restart set) every
 * handler that ran has SA_RESTART. */
static int wait_again(int kicked, int restart)
{
    shim_testcancel();
    int ran = shim_signals();
    if (!ran && kicked)
        return 1;
    return restart && shim_signals_restart();
}

/* Before a call on fd that may block: wait until fd is ready for events,
 * unless waiting is not ours to do. 0 to go on with the call; EINTR when
 * a signal handler interrupted the wait (no SA_RESTART). */
static int wait_fd(int fd, short events)
{
    struct pollfd p = { fd, events, 0 };
    if (REAL(poll)(&p, 1, 0) != 0)
        return 0;                /* ready, hung up, or an error the call will report */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || (fl & O_NONBLOCK))
        return 0;
    shim_signals_begin();
    for (;;) {
        shim_testcancel();
        int kicked;
        int r = kppoll(&p, 1, NULL, NULL, &kicked);
        if (r != 0 && !(r < 0 && errno == EINTR))
            return 0;
        if (r < 0 && !wait_again(kicked, 1))
            return EINTR;
    }
}

/* The call itself may still block (another reader took the data, a big
 * write to a pipe): it too runs with the VP lent. */
#define IO_CALL(ret, name, params, fd, ev, args)                            \
    SHIM_DECL(name)                                                         \
    ret nth_shim_##name params                                              \
    {                                                                       \
        __typeof__(&name) real_ = REAL(name);                               \
        if (FROM_RUNTIME())                                                 \
            return real_ args;                                              \
        if (!shim_on_nano())                                                \
            return real_ args;                                              \
        SHIM_HOME_ENTER();                                                  \
        int w_ = wait_fd(fd, ev);                                           \
        if (w_) { errno = w_; return SHIM_HOME_RET((ret)-1); }              \
        nth_blocking_enter();                                               \
        ret res_ = real_ args;                                              \
        nth_blocking_leave();                                               \
        if (res_ >= 0) {                                                    \
            shim_testcancel();   /* a request that came during the call */  \
            /* A signal sent while it waited that lost the race with the */ \
            /* data (the kernel's poll counts ready descriptors before a */ \
            /* pending signal): its handler runs now, as on return from */  \
            /* the kernel. */                                               \
            (void)shim_signals();                                           \
        }                                                                   \
        return SHIM_HOME_RET(res_);                                         \
    }                                                                       \
    SHIM_EXPORT(name)
#define IO_IN(ret, name, params, fd, args) IO_CALL(ret, name, params, fd, POLLIN, args)
#define IO_OUT(ret, name, params, fd, args) IO_CALL(ret, name, params, fd, POLLOUT, args)

IO_IN(ssize_t, read, (int fd, void *b, size_t n), fd, (fd, b, n))
IO_IN(ssize_t, readv, (int fd, const struct iovec *v, int n), fd, (fd, v, n))
IO_IN(ssize_t, pread, (int fd, void *b, size_t n, off_t o), fd, (fd, b, n, o))
IO_IN(ssize_t, pread64, (int fd, void *b, size_t n, off64_t o), fd, (fd, b, n, o))
IO_IN(ssize_t, recv, (int fd, void *b, size_t n, int f), fd, (fd, b, n, f))
IO_IN(ssize_t, recvfrom, (int fd, void *restrict b, size_t n, int f, struct sockaddr *restrict a, socklen_t *restrict l), fd, (fd, b, n, f, a, l))
IO_IN(ssize_t, recvmsg, (int fd, struct msghdr *m, int f), fd, (fd, m, f))
IO_IN(int, accept, (int fd, struct sockaddr *restrict a, socklen_t *restrict l), fd, (fd, a, l))
IO_IN(int, accept4, (int fd, struct sockaddr *restrict a, socklen_t *restrict l, int f), fd, (fd, a, l, f))
IO_OUT(ssize_t, write, (int fd, const void *b, size_t n), fd, (fd, b, n))
IO_OUT(ssize_t, writev, (int fd, const struct iovec *v, int n), fd, (fd, v, n))
IO_OUT(ssize_t, pwrite, (int fd, const void *b, size_t n, off_t o), fd, (fd, b, n, o))
IO_OUT(ssize_t, pwrite64, (int fd, const void *b, size_t n, off64_t o), fd, (fd, b, n, o))
IO_OUT(ssize_t, send, (int fd, const void *b, size_t n, int f), fd, (fd, b, n, f))
IO_OUT(ssize_t, sendto, (int fd, const void *b, size_t n, int f, const struct sockaddr *a, socklen_t l), fd, (fd, b, n, f, a, l))
IO_OUT(ssize_t, sendmsg, (int fd, const struct msghdr *m, int f), fd, (fd, m, f))

/* In the kernel with the VP lent; not interruptible by the shim's
 * requests (a connect in progress cannot be waited for by poll before it
 * starts). */
#define KCALL(ret, name, params, args)                                      \
    SHIM_DECL(name)                                                         \
    ret nth_shim_##name params                                              \
    {                                                                       \
        __typeof__(&name) real_ = REAL(name);                               \
        if (FROM_RUNTIME())                                                 \
            return real_ args;                                              \
        if (!shim_on_nano())                                                \
            return real_ args;                                              \
        SHIM_HOME_ENTER();                                                  \
        nth_blocking_enter();                                               \
        ret res_ = real_ args;                                              \
        nth_blocking_leave();                                               \
        return SHIM_HOME_RET(res_);                                         \
    }                                                                       \
    SHIM_EXPORT(name)

KCALL(int, connect, (int fd, const struct sockaddr *a, socklen_t l), (fd, a, l))
KCALL(int, fsync, (int fd), (fd))

/* ---- poll / select / epoll ------------------------------------------------ */

/* Monotonic deadline of a relative timeout (NULL: none). */
static int64_t deadline_of(const struct timespec *tmo)
{
    return tmo ? shim_now(CLOCK_MONOTONIC) + shim_ts_ns(tmo) : INT64_MAX;
}

/* The time left until deadline, for the next try (NULL: none). */
static const struct timespec *left_until(int64_t deadline, struct timespec *ts)
{
    if (deadline == INT64_MAX)
        return NULL;
    int64_t left = deadline - shim_now(CLOCK_MONOTONIC);
    *ts = shim_ns_ts(left > 0 ? left : 0);
    return ts;
}

static int kpoll_common(struct pollfd *fds, nfds_t n, int64_t deadline, const sigset_t *umask)
{
    SHIM_HOME_ENTER();
    shim_signals_begin();
    for (;;) {
        shim_testcancel();
        struct timespec ts;
        int kicked;
        int r = kppoll(fds, n, left_until(deadline, &ts), umask, &kicked);
        if (r >= 0 || errno != EINTR)
            return SHIM_HOME_RET(r);
        if (!wait_again(kicked, 0)) {
            errno = EINTR;
            return SHIM_HOME_RET(-1);
        }
    }
}

SHIM_DECL(poll)
int nth_shim_poll(struct pollfd *fds, nfds_t n, int ms)
{
    if (ms == 0 || FROM_RUNTIME())
        return REAL(poll)(fds, n, ms);
    if (!shim_on_nano())
        return REAL(poll)(fds, n, ms);
    struct timespec tmo = shim_ns_ts((int64_t)ms * 1000000LL);
    return kpoll_common(fds, n, deadline_of(ms < 0 ? NULL : &tmo), NULL);
}
SHIM_EXPORT(poll)

SHIM_DECL(ppoll)
int nth_shim_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
    if ((tmo && tmo->tv_sec == 0 && tmo->tv_nsec == 0))
        return REAL(ppoll)(fds, n, tmo, mask);
    if (!shim_on_nano())
        return REAL(ppoll)(fds, n, tmo, mask);
    if (tmo && shim_check_ts(tmo)) {
        errno = EINVAL;
        return -1;
    }
    return kpoll_common(fds, n, deadline_of(tmo), mask);
}
SHIM_EXPORT(ppoll)

/* select modifies its sets only on success, so a retry reuses them. */
static int select_common(int n, fd_set *r, fd_set *w, fd_set *e, int64_t deadline, const sigset_t *umask)
{
    int (*rpselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *) = REAL(pselect);
    SHIM_HOME_ENTER();
    shim_signals_begin();
    for (;;) {
        shim_testcancel();
        struct timespec ts;
        const struct timespec *tmo = left_until(deadline, &ts);
        sigset_t m;
        int kicked = 1, res = -1;
        errno = EINTR;
        if (!shim_kwait_begin(&m, umask)) {
            nth_blocking_enter();
            res = rpselect(n, r, w, e, tmo, &m);
            nth_blocking_leave();
            kicked = shim_kwait_end();
        }
        if (res >= 0 || errno != EINTR)
            return SHIM_HOME_RET(res);
        if (!wait_again(kicked, 0)) {
            errno = EINTR;
            return SHIM_HOME_RET(-1);
        }
    }
}

SHIM_DECL(select)
int nth_shim_select(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e, struct timeval *restrict tv)
{
    if ((tv && tv->tv_sec == 0 && tv->tv_usec == 0))
        return REAL(select)(n, r, w, e, tv);
    if (!shim_on_nano())
        return REAL(select)(n, r, w, e, tv);
    if (tv && (tv->tv_sec < 0 || tv->tv_usec < 0 || tv->tv_usec >= 1000000)) {
        errno = EINVAL;
        return -1;
    }
    int64_t deadline = tv ? shim_now(CLOCK_MONOTONIC) + (int64_t)tv->tv_sec * 1000000000LL + tv->tv_usec * 1000LL
                          : INT64_MAX;
    int res = select_common(n, r, w, e, deadline, NULL);
    if (tv) {
        /* Linux's select leaves the time not slept in *tv. */
        int64_t left = deadline - shim_now(CLOCK_MONOTONIC);
        if (left < 0)
            left = 0;
        tv->tv_sec = (time_t)(left / 1000000000LL);
        tv->tv_usec = (suseconds_t)(left % 1000000000LL / 1000);
    }
    return res;
}
SHIM_EXPORT(select)

SHIM_DECL(pselect)
int nth_shim_pselect(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e,
                     const struct timespec *restrict tmo, const sigset_t *restrict mask)
{
    if ((tmo && tmo->tv_sec == 0 && tmo->tv_nsec == 0))
        return REAL(pselect)(n, r, w, e, tmo, mask);
    if (!shim_on_nano())
        return REAL(pselect)(n, r, w, e, tmo, mask);
    if (tmo && shim_check_ts(tmo)) {
        errno = EINVAL;
        return -1;
    }
    return select_common(n, r, w, e, deadline_of(tmo), mask);
}
SHIM_EXPORT(pselect)

static int epoll_common(int ep, struct epoll_event *ev, int max, int ms, const sigset_t *umask)
{
    int (*rwait)(int, struct epoll_event *, int, int, const sigset_t *) = REAL(epoll_pwait);
    int64_t deadline = ms < 0 ? INT64_MAX : shim_now(CLOCK_MONOTONIC) + (int64_t)ms * 1000000LL;
    SHIM_HOME_ENTER();
    shim_signals_begin();
    for (;;) {
        shim_testcancel();
        int left = -1;
        if (deadline != INT64_MAX) {
            int64_t ns = deadline - shim_now(CLOCK_MONOTONIC);
            left = ns <= 0 ? 0 : (int)((ns + 999999) / 1000000);
        }
        sigset_t m;
        int kicked = 1, res = -1;
        errno = EINTR;
        if (!shim_kwait_begin(&m, umask)) {
            nth_blocking_enter();
            res = rwait(ep, ev, max, left, &m);
            nth_blocking_leave();
            kicked = shim_kwait_end();
        }
        if (res >= 0 || errno != EINTR)
            return SHIM_HOME_RET(res);
        if (!wait_again(kicked, 0)) {
            errno = EINTR;
            return SHIM_HOME_RET(-1);
        }
    }
}

SHIM_DECL(epoll_wait)
int nth_shim_epoll_wait(int ep, struct epoll_event *ev, int max, int ms)
{
    if (ms == 0)
        return REAL(epoll_wait)(ep, ev, max, ms);
    if (!shim_on_nano())
        return REAL(epoll_wait)(ep, ev, max, ms);
    return epoll_common(ep, ev, max, ms, NULL);
}
SHIM_EXPORT(epoll_wait)

SHIM_DECL(epoll_pwait)
int nth_shim_epoll_pwait(int ep, struct epoll_event *ev, int max, int ms, const sigset_t *mask)
{
    if (ms == 0)
        return REAL(epoll_pwait)(ep, ev, max, ms, mask);
    if (!shim_on_nano())
        return REAL(epoll_pwait)(ep, ev, max, ms, mask);
    return epoll_common(ep, ev, max, ms, mask);
}
SHIM_EXPORT(epoll_pwait)

/* ---- waiting for children ----------------------------------------------- */

SHIM_DECL(waitpid)
pid_t nth_shim_waitpid(pid_t pid, int *status, int options)
{
    pid_t (*rwaitpid)(pid_t, int *, int) = REAL(waitpid);
    if ((options & WNOHANG))
        return rwaitpid(pid, status, options);
    if (!shim_on_nano())
        return rwaitpid(pid, status, options);
    SHIM_HOME_ENTER();
    pid_t r = rwaitpid(pid, status, options | WNOHANG);
    if (r != 0)
        return SHIM_HOME_RET(r);  /* a child was ready, or an error (ECHILD) */
    shim_signals_begin();
    for (;;) {
        shim_testcancel();
        int kicked = 1;
        r = -1;
        errno = EINTR;
        if (!shim_kwait_open()) {
            nth_blocking_enter();
            r = rwaitpid(pid, status, options);
            nth_blocking_leave();
            shim_kwait_close();
            kicked = shim_kwait_end();
        }
        if (r >= 0 || errno != EINTR)
            return SHIM_HOME_RET(r);
        if (!wait_again(kicked, 1)) {
            errno = EINTR;
            return SHIM_HOME_RET(-1);
        }
    }
}
SHIM_EXPORT(waitpid)

SHIM_DECL(wait)
pid_t nth_shim_wait(int *status)
{
    return nth_shim_waitpid(-1, status, 0);
}
SHIM_EXPORT(wait)

/* ---- fork ------------------------------------------------------------------ */

/* libc's fork runs the pthread_atfork handlers (registered in libc) in
 * POSIX order; nthlib's own, installed when libnth is loaded (before the
 * program's), gives the child a one-VP
 * runtime running the forking thread (nthlib/fork.c). */
SHIM_DECL(fork)
pid_t nth_shim_fork(void)
{
    pid_t p = REAL(fork)();
    if (p == 0) {
        shim_kick_forget();
        shim_defer_fork_child();
        shim_sigwatch_fork_child();
    }
    return p;
}
SHIM_EXPORT(fork)
