/*
 * blocking.c -- sleeps and blocking system calls from nano-threads.
 *
 * Sleeps become nano-thread sleeps (nth_sleep_until), in slices so that a
 * cancellation request or a queued signal is seen; an interrupted sleep
 * returns EINTR and the remaining time, after nanosleep(3p) and
 * clock_nanosleep(3p).
 *
 * Blocking calls on file descriptors, poll/select/epoll and waitpid must
 * not stall the other nano-threads of the VP (DESIGN invariant 4). Until
 * the runtime has nth_blocking_enter/leave (a spare kernel thread takes
 * the VP meanwhile), the shim waits for readiness by polling without
 * blocking (poll with a zero timeout, WNOHANG), leaving the VP between
 * tries with a growing back-off (SHIM_SLICE_NS at most), then makes the
 * call. Non-blocking descriptors, regular files and calls from kernel
 * threads that are not VPs go straight to libc. connect and fsync go
 * straight to libc (they block the VP).
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

/* Sleep until deadline on clock; 0, or EINTR with *left_ns set when a
 * queued signal was delivered. A cancellation point. */
static int sleep_until(clockid_t clock, int64_t deadline, int64_t *left_ns)
{
    shim_signals_begin();
    for (;;) {
        shim_testcancel();
        int64_t now = shim_now(clock);
        if (now >= deadline)
            return 0;
        if (shim_signals()) {
            if (left_ns)
                *left_ns = deadline - now;
            return EINTR;
        }
        int64_t end = deadline - now > SHIM_SLICE_NS ? now + SHIM_SLICE_NS : deadline;
        shim_nap(clock, end);         /* pthread_kill ends it early */
    }
}

SHIM_DECL(clock_nanosleep)
int nth_shim_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
    if ((clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) || FROM_RUNTIME() || !shim_on_vp())
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
    return (unsigned)rem.tv_sec + (rem.tv_nsec > 0);
}
SHIM_EXPORT(sleep)

SHIM_DECL(usleep)
int nth_shim_usleep(useconds_t us)
{
    struct timespec req = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
    return nth_shim_nanosleep(&req, NULL);
}
SHIM_EXPORT(usleep)

/* ---- readiness --------------------------------------------------------- */

/* Wait until fd is ready for events, unless waiting is not ours to do.
 * 0 to go on with the call; EINTR when a queued signal was delivered. */
static int wait_fd(int fd, short events)
{
    if (!shim_on_vp())
        return 0;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || (fl & O_NONBLOCK))
        return 0;
    int64_t step = 0;
    shim_signals_begin();
    for (;;) {
        struct pollfd p = { fd, events, 0 };
        if (REAL(poll)(&p, 1, 0) != 0)
            return 0;            /* ready, hung up, or an error the call will report */
        shim_testcancel();
        if (shim_signals())
            return EINTR;
        shim_backoff(INT64_MAX, &step);
    }
}

#define IO_IN(ret, name, params, fd, args)                                  \
    SHIM_DECL(name)                                                         \
    ret nth_shim_##name params                                              \
    {                                                                       \
        if (FROM_RUNTIME())                                                 \
            return REAL(name) args;                                         \
        SHIM_HOME_ENTER();                                                  \
        int w_ = wait_fd(fd, POLLIN);                                       \
        if (w_) { errno = w_; return SHIM_HOME_RET((ret)-1); }              \
        return SHIM_HOME_RET(REAL(name) args);                              \
    }                                                                       \
    SHIM_EXPORT(name)
#define IO_OUT(ret, name, params, fd, args)                                 \
    SHIM_DECL(name)                                                         \
    ret nth_shim_##name params                                              \
    {                                                                       \
        if (FROM_RUNTIME())                                                 \
            return REAL(name) args;                                         \
        SHIM_HOME_ENTER();                                                  \
        int w_ = wait_fd(fd, POLLOUT);                                      \
        if (w_) { errno = w_; return SHIM_HOME_RET((ret)-1); }              \
        return SHIM_HOME_RET(REAL(name) args);                              \
    }                                                                       \
    SHIM_EXPORT(name)

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

SHIM_DECL(connect)
int nth_shim_connect(int fd, const struct sockaddr *a, socklen_t l) { return REAL(connect)(fd, a, l); }
SHIM_EXPORT(connect)

SHIM_DECL(fsync)
int nth_shim_fsync(int fd) { return REAL(fsync)(fd); }
SHIM_EXPORT(fsync)

/* ---- poll / select / epoll ------------------------------------------------ */

static int64_t deadline_after_ms(int ms)
{
    return ms < 0 ? INT64_MAX : shim_now(CLOCK_MONOTONIC) + (int64_t)ms * 1000000LL;
}

/* Repeat try() (a zero-timeout call) until it reports something or the
 * deadline passes; -1/EINTR when a queued signal was delivered. Used at
 * the top of a wrapper, before anything that switches (SHIM_HOME_ENTER). */
#define POLL_LOOP(deadline, try_expr)                                       \
    do {                                                                    \
        SHIM_HOME_ENTER();                                                  \
        int64_t step_ = 0;                                                  \
        shim_signals_begin();                                               \
        for (;;) {                                                          \
            int r_ = (try_expr);                                            \
            if (r_ != 0)                                                    \
                return SHIM_HOME_RET(r_);                                   \
            if (shim_now(CLOCK_MONOTONIC) >= (deadline))                    \
                return 0;                                                   \
            shim_testcancel();                                              \
            if (shim_signals()) { errno = EINTR; return SHIM_HOME_RET(-1); } \
            shim_backoff((deadline), &step_);                               \
        }                                                                   \
    } while (0)

SHIM_DECL(poll)
int nth_shim_poll(struct pollfd *fds, nfds_t n, int ms)
{
    if (ms == 0 || FROM_RUNTIME() || !shim_on_vp())
        return REAL(poll)(fds, n, ms);
    int64_t deadline = deadline_after_ms(ms);
    POLL_LOOP(deadline, REAL(poll)(fds, n, 0));
}
SHIM_EXPORT(poll)

SHIM_DECL(ppoll)
int nth_shim_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
    static const struct timespec zero = { 0, 0 };
    if ((tmo && tmo->tv_sec == 0 && tmo->tv_nsec == 0) || !shim_on_vp())
        return REAL(ppoll)(fds, n, tmo, mask);
    if (tmo && shim_check_ts(tmo)) {
        errno = EINVAL;
        return -1;
    }
    int64_t deadline = tmo ? shim_now(CLOCK_MONOTONIC) + shim_ts_ns(tmo) : INT64_MAX;
    POLL_LOOP(deadline, REAL(ppoll)(fds, n, &zero, mask));
}
SHIM_EXPORT(ppoll)

/* select modifies its sets: each try starts from the caller's. */
static int select_try(int n, fd_set *r, fd_set *w, fd_set *e, const fd_set *r0, const fd_set *w0,
                      const fd_set *e0, const sigset_t *mask)
{
    static const struct timespec zero = { 0, 0 };
    if (r) *r = *r0;
    if (w) *w = *w0;
    if (e) *e = *e0;
    return REAL(pselect)(n, r, w, e, &zero, mask);
}

static int select_common(int n, fd_set *r, fd_set *w, fd_set *e, int64_t deadline, const sigset_t *mask)
{
    fd_set r0, w0, e0;
    if (r) r0 = *r;
    if (w) w0 = *w;
    if (e) e0 = *e;
    POLL_LOOP(deadline, select_try(n, r, w, e, &r0, &w0, &e0, mask));
}

SHIM_DECL(select)
int nth_shim_select(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e, struct timeval *restrict tv)
{
    if ((tv && tv->tv_sec == 0 && tv->tv_usec == 0) || !shim_on_vp())
        return REAL(select)(n, r, w, e, tv);
    if (tv && (tv->tv_sec < 0 || tv->tv_usec < 0 || tv->tv_usec >= 1000000)) {
        errno = EINVAL;
        return -1;
    }
    int64_t deadline = tv ? shim_now(CLOCK_MONOTONIC) + (int64_t)tv->tv_sec * 1000000000LL + tv->tv_usec * 1000LL
                          : INT64_MAX;
    return select_common(n, r, w, e, deadline, NULL);
}
SHIM_EXPORT(select)

SHIM_DECL(pselect)
int nth_shim_pselect(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e,
                     const struct timespec *restrict tmo, const sigset_t *restrict mask)
{
    if ((tmo && tmo->tv_sec == 0 && tmo->tv_nsec == 0) || !shim_on_vp())
        return REAL(pselect)(n, r, w, e, tmo, mask);
    if (tmo && shim_check_ts(tmo)) {
        errno = EINVAL;
        return -1;
    }
    int64_t deadline = tmo ? shim_now(CLOCK_MONOTONIC) + shim_ts_ns(tmo) : INT64_MAX;
    return select_common(n, r, w, e, deadline, mask);
}
SHIM_EXPORT(pselect)

SHIM_DECL(epoll_wait)
int nth_shim_epoll_wait(int ep, struct epoll_event *ev, int max, int ms)
{
    if (ms == 0 || !shim_on_vp())
        return REAL(epoll_wait)(ep, ev, max, ms);
    int64_t deadline = deadline_after_ms(ms);
    POLL_LOOP(deadline, REAL(epoll_wait)(ep, ev, max, 0));
}
SHIM_EXPORT(epoll_wait)

SHIM_DECL(epoll_pwait)
int nth_shim_epoll_pwait(int ep, struct epoll_event *ev, int max, int ms, const sigset_t *mask)
{
    if (ms == 0 || !shim_on_vp())
        return REAL(epoll_pwait)(ep, ev, max, ms, mask);
    int64_t deadline = deadline_after_ms(ms);
    POLL_LOOP(deadline, REAL(epoll_pwait)(ep, ev, max, 0, mask));
}
SHIM_EXPORT(epoll_pwait)

/* ---- waiting for children ----------------------------------------------- */

SHIM_DECL(waitpid)
pid_t nth_shim_waitpid(pid_t pid, int *status, int options)
{
    if ((options & WNOHANG) || !shim_on_vp())
        return REAL(waitpid)(pid, status, options);
    POLL_LOOP(INT64_MAX, REAL(waitpid)(pid, status, options | WNOHANG));
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
 * POSIX order. Limit: the child's runtime is not re-initialised yet, so a
 * child should only call async-signal-safe functions and exec, as POSIX
 * requires of multi-threaded programs anyway. */
SHIM_DECL(fork)
pid_t nth_shim_fork(void)
{
    return REAL(fork)();
}
SHIM_EXPORT(fork)
