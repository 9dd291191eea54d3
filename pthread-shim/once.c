/*
 * once.c -- pthread_once, after pthread_once(3p): "if init_routine is a
 * cancellation point and is canceled, the effect on once_control shall be
 * as if pthread_once() was never called". glibc gives a C++ exception
 * that leaves the routine the same effect (std::call_once is pthread_once
 * there, and C++ says the next call runs a callable again when one threw).
 *
 * nth_once cannot do this: a routine that never returns leaves it
 * "running" and every later caller waits forever. So the shim keeps its
 * own state in the 4-byte pthread_once_t: 0 not run, 1 running, 3 running
 * with waiters, 2 done; waiters sleep on one of a few condition variables
 * hashed by the object's address, and the runner, done or abandoned,
 * wakes them: after an abandon they race for the object again.
 *
 * The routine runs inside two guards, as glibc's pthread_cleanup_push
 * does with unwinding: a cancellation buffer on the shim's cleanup chain
 * (cancellation longjmps along that chain, cancel.c) and a cleanup
 * attribute that the C++ unwinder runs (the shim is built with
 * -fexceptions for it).
 */
#include <errno.h>
#include <setjmp.h>
#include "shim.h"

#define ONCE_RUNNING 1
#define ONCE_DONE 2
#define ONCE_WAITERS 3
#define LOT_BUCKETS 16

static struct once_bucket {
    nth_mutex_t lock;
    nth_cond_t cv;
} lot[LOT_BUCKETS];

static struct once_bucket *bucket_of(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    return &lot[((a >> 2) ^ (a >> 9)) % LOT_BUCKETS];
}

/* Leave the running state for to (ONCE_DONE or 0), waking any waiter. */
static void once_leave(pthread_once_t *once, int to)
{
    if (__atomic_exchange_n(once, to, __ATOMIC_ACQ_REL) == ONCE_WAITERS) {
        /* A waiter flags itself with the bucket locked and then waits,
         * which unlocks it: locking here orders this broadcast after. */
        struct once_bucket *b = bucket_of(once);
        nth_mutex_lock(&b->lock);
        nth_cond_broadcast(&b->cv);
        nth_mutex_unlock(&b->lock);
    }
}

/* <pthread.h> declares these only without -fexceptions (cancel.c). */
void __pthread_register_cancel(__pthread_unwind_buf_t *buf);
void __pthread_unregister_cancel(__pthread_unwind_buf_t *buf);
__attribute__((noreturn)) void __pthread_unwind_next(__pthread_unwind_buf_t *buf);
SHIM_DECL(__pthread_register_cancel)
SHIM_DECL(__pthread_unregister_cancel)
SHIM_DECL(__pthread_unwind_next)

struct once_guard {
    pthread_once_t *once;
    __pthread_unwind_buf_t *buf;
    int armed;
};

/* Run by the C++ unwinder when an exception leaves the routine. */
static void once_guard_release(struct once_guard *g)
{
    if (g->armed) {
        if (g->buf)
            nth_shim___pthread_unregister_cancel(g->buf);
        once_leave(g->once, 0);
    }
}

/* Run routine for once; a cancellation or an exception that leaves it
 * resets once to "not run". */
__attribute__((noinline)) static void run_guarded(pthread_once_t *once, void (*routine)(void))
{
    __pthread_unwind_buf_t buf;
    /* Only a nano-thread has a cancellation chain: a kernel thread that is
     * no VP (the runtime's own, main before the runtime starts) must not
     * get a thread record from here (shim_self). */
    int nano = shim_on_nano();
    struct once_guard g __attribute__((cleanup(once_guard_release))) = { once, nano ? &buf : NULL, 1 };
    /* glibc's pthread_cleanup_push does the same: no signal mask saved
     * (so only the part of a jmp_buf the buffer has is used), and the
     * cancellation unwinding (cancel.c) longjmps here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
    int unwound = __sigsetjmp((struct __jmp_buf_tag *)(void *)buf.__cancel_jmp_buf, 0);
#pragma GCC diagnostic pop
    if (__builtin_expect(unwound, 0)) {
        __atomic_store_n(&g.armed, 0, __ATOMIC_RELAXED);
        once_leave(once, 0);
        nth_shim___pthread_unwind_next(&buf);   /* the next handler */
        __builtin_unreachable();
    }
    if (nano)
        nth_shim___pthread_register_cancel(&buf);
    routine();
    if (nano)
        nth_shim___pthread_unregister_cancel(&buf);
    __atomic_store_n(&g.armed, 0, __ATOMIC_RELAXED);
}

static int shim_once(pthread_once_t *once, void (*routine)(void))
{
    if (!once || !routine)
        return EINVAL;
    for (;;) {
        int s = __atomic_load_n(once, __ATOMIC_ACQUIRE);
        if (s == ONCE_DONE)
            return 0;
        if (s == 0) {
            if (!__atomic_compare_exchange_n(once, &s, ONCE_RUNNING, 0, __ATOMIC_ACQUIRE,
                                             __ATOMIC_ACQUIRE))
                continue;
            run_guarded(once, routine);
            once_leave(once, ONCE_DONE);
            return 0;
        }
        /* Someone else runs it: wait until it is done or abandoned. */
        struct once_bucket *b = bucket_of(once);
        nth_mutex_lock(&b->lock);
        s = __atomic_load_n(once, __ATOMIC_ACQUIRE);
        while (s == ONCE_RUNNING || s == ONCE_WAITERS) {
            if (s == ONCE_RUNNING &&
                !__atomic_compare_exchange_n(once, &s, ONCE_WAITERS, 0, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE))
                continue;
            nth_cond_wait(&b->cv, &b->lock);
            s = __atomic_load_n(once, __ATOMIC_ACQUIRE);
        }
        nth_mutex_unlock(&b->lock);
    }
}

SHIM_DECL(pthread_once)
int nth_shim_pthread_once(pthread_once_t *once, void (*routine)(void))
{
    return shim_once(once, routine);
}
SHIM_EXPORT(pthread_once)

int __pthread_once(pthread_once_t *once, void (*routine)(void));
SHIM_DECL(__pthread_once)
int nth_shim___pthread_once(pthread_once_t *once, void (*routine)(void)) { return shim_once(once, routine); }
SHIM_EXPORT(__pthread_once)
