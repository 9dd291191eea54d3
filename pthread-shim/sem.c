/*
 * sem.c -- POSIX semaphores, after sem_init(3p), sem_wait(3p),
 * sem_timedwait(3p), sem_post(3p), sem_open(3p). Errors go to errno.
 *
 * Unnamed process-private semaphores are nth_sem_t (32 bytes, as sem_t);
 * their waits leave the VP and are cancellation points; pthread_kill and
 * pthread_cancel interrupt them at once (nth_sem_clockwait_interruptible).
 * Process-shared (sem_init with pshared != 0) and named (sem_open)
 * semaphores are glibc's own, marked in the last 8 bytes of the sem_t,
 * which glibc's layout does not use: their waits block the VP's kernel
 * thread, since another process may post them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include "shim.h"

#define LIBC_SEM_MARK 0x4e54482d6c696263ULL   /* "NTH-libc" */

static int is_libc(sem_t *s) { return ((nth_sem_t *)s)->__reserved == LIBC_SEM_MARK; }
static void mark_libc(sem_t *s) { ((nth_sem_t *)s)->__reserved = LIBC_SEM_MARK; }
static int fail(int e) { errno = e; return -1; }

SHIM_DECL(sem_init)
int nth_shim_sem_init(sem_t *s, int pshared, unsigned value)
{
    if (value > SEM_VALUE_MAX)
        return fail(EINVAL);
    if (pshared) {
        int r = REAL(sem_init)(s, pshared, value);
        if (r == 0)
            mark_libc(s);
        return r;
    }
    int r = nth_sem_init((nth_sem_t *)s, value);
    ((nth_sem_t *)s)->__reserved = 0;
    if (r == 0)
        shim_defer_need(2);
    return r ? fail(r) : 0;
}
SHIM_EXPORT(sem_init)

SHIM_DECL(sem_destroy)
int nth_shim_sem_destroy(sem_t *s)
{
    if (is_libc(s))
        return REAL(sem_destroy)(s);
    shim_defer_forget((nth_sem_t *)s);
    int r = nth_sem_destroy((nth_sem_t *)s);
    return r ? fail(r) : 0;
}
SHIM_EXPORT(sem_destroy)

SHIM_DECL(sem_post)
int nth_shim_sem_post(sem_t *s)
{
    if (is_libc(s))
        return REAL(sem_post)(s);
    if (shim_in_handler()) {
        /* Async-signal-safe (sem_post(3p)): the code this handler
         * interrupted may hold s's lock or a ready queue's on this kernel
         * thread. The unit is added lock-free; waking waiters, if any, is
         * the helper's (sigdefer.c). */
        int r = nth_sem_post_async((nth_sem_t *)s);
        if (r == EINPROGRESS) {
            shim_defer_drain((nth_sem_t *)s);
            r = 0;
        }
        return r ? fail(r) : 0;
    }
    int r = nth_sem_post((nth_sem_t *)s);
    return r ? fail(r) : 0;
}
SHIM_EXPORT(sem_post)

SHIM_DECL(sem_trywait)
int nth_shim_sem_trywait(sem_t *s)
{
    if (is_libc(s))
        return REAL(sem_trywait)(s);
    int r = nth_sem_trywait((nth_sem_t *)s);
    return r ? fail(r) : 0;
}
SHIM_EXPORT(sem_trywait)

SHIM_DECL(sem_getvalue)
int nth_shim_sem_getvalue(sem_t *restrict s, int *restrict v)
{
    if (is_libc(s))
        return REAL(sem_getvalue)(s, v);
    int r = nth_sem_getvalue((nth_sem_t *)s, v);
    return r ? fail(r) : 0;
}
SHIM_EXPORT(sem_getvalue)

/* Wait until abs on clock (NULL: no deadline). A cancellation point; a
 * signal queued for the caller (pthread_kill) interrupts it at once: the
 * handler runs, then -1/EINTR as sem_wait(3p) says, or, when the handler
 * has SA_RESTART, the wait goes on (Linux's sem_wait, signal(7)). */
static int wait_until(sem_t *s, clockid_t clock, const struct timespec *abs)
{
    struct shim_thread *self = shim_self();
    shim_signals_begin();
    for (;;) {
        shim_testcancel();
        if (nth_sem_trywait((nth_sem_t *)s) == 0)
            return 0;
        if (shim_signals() && !shim_signals_restart())
            return fail(EINTR);
        /* Stop flag, then where we wait, then the requests: Dekker with
         * shim_interrupt_waits (flag, fence, waiting_sem). */
        __atomic_store_n(&self->cond_wake, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&self->waiting_sem, s, __ATOMIC_SEQ_CST);
        int r = EINTR;
        int cancel = __atomic_load_n(&self->cancel_pending, __ATOMIC_SEQ_CST) &&
                     self->cancel_state == PTHREAD_CANCEL_ENABLE;
        uint64_t open = __atomic_load_n(&self->pending, __ATOMIC_SEQ_CST) &
                        ~__atomic_load_n(&self->sigmask, __ATOMIC_RELAXED);
        if (!cancel && !open)
            r = nth_sem_clockwait_interruptible((nth_sem_t *)s, clock, abs, &self->cond_wake);
        __atomic_store_n(&self->waiting_sem, NULL, __ATOMIC_SEQ_CST);
        if (r == 0)
            return 0;
        if (r != EINTR)
            return fail(r);
        /* EINTR: a request (acted on at the top) or a cancellation while
         * disabled (the flag is cleared: wait again). */
    }
}

SHIM_DECL(sem_wait)
int nth_shim_sem_wait(sem_t *s)
{
    if (is_libc(s))
        return REAL(sem_wait)(s);
    SHIM_HOME_ENTER();
    return SHIM_HOME_RET(wait_until(s, CLOCK_MONOTONIC, NULL));
}
SHIM_EXPORT(sem_wait)

SHIM_DECL(sem_clockwait)
int nth_shim_sem_clockwait(sem_t *restrict s, clockid_t clock, const struct timespec *restrict abstime)
{
    if (is_libc(s))
        return REAL(sem_clockwait)(s, clock, abstime);
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return fail(EINVAL);
    if (shim_check_deadline(abstime))
        return fail(EINVAL);
    SHIM_HOME_ENTER();
    return SHIM_HOME_RET(wait_until(s, clock, abstime));
}
SHIM_EXPORT(sem_clockwait)

SHIM_DECL(sem_timedwait)
int nth_shim_sem_timedwait(sem_t *restrict s, const struct timespec *restrict abstime)
{
    if (is_libc(s))
        return REAL(sem_timedwait)(s, abstime);
    return nth_shim_sem_clockwait(s, CLOCK_REALTIME, abstime);
}
SHIM_EXPORT(sem_timedwait)

SHIM_DECL(sem_open)
sem_t *nth_shim_sem_open(const char *name, int oflag, ...)
{
    mode_t mode = 0;
    unsigned value = 0;
    if (oflag & O_CREAT) {
        va_list ap;
        va_start(ap, oflag);
        mode = va_arg(ap, mode_t);
        value = va_arg(ap, unsigned);
        va_end(ap);
    }
    sem_t *s = REAL(sem_open)(name, oflag, mode, value);
    if (s != SEM_FAILED)
        mark_libc(s);
    return s;
}
SHIM_EXPORT(sem_open)

SHIM_DECL(sem_close)
int nth_shim_sem_close(sem_t *s) { return REAL(sem_close)(s); }
SHIM_EXPORT(sem_close)

SHIM_DECL(sem_unlink)
int nth_shim_sem_unlink(const char *name) { return REAL(sem_unlink)(name); }
SHIM_EXPORT(sem_unlink)
