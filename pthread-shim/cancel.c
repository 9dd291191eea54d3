/*
 * cancel.c -- deferred cancellation and cleanup handlers, after
 * pthread_cancel(3p), pthread_setcancelstate(3p), pthread_cleanup_push(3p),
 * with glibc's private entry points that its <pthread.h> macros emit:
 * __pthread_register_cancel / __pthread_unregister_cancel /
 * __pthread_unwind_next (C code: each handler's buffer holds a sigsetjmp
 * context; unwinding longjmps to the newest, which runs its handler and
 * calls __pthread_unwind_next for the next one), the older
 * _pthread_cleanup_push / _pthread_cleanup_pop, and __pthread_cleanup_routine
 * (-fexceptions code).
 *
 * Limits: asynchronous cancellation is refused (ENOTSUP from
 * pthread_setcanceltype): a nano-thread cannot be stopped safely at an
 * arbitrary instruction. C++ code cancelled gets its C cleanup handlers run
 * but no destructors (no forced unwinding).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>          /* NTH_TSAN, for nth_full_fence */
#endif
#include <errno.h>
#include <setjmp.h>
#include "futex_lock.h"
#include "shim.h"

__attribute__((noreturn)) void shim_finish(struct shim_thread *self);

/* The private-buffer layout glibc's macros allocate: the jump context, then
 * four pointers the library may use; the shim keeps the previous buffer in
 * the first. */
static void **buf_prev(__pthread_unwind_buf_t *b) { return &b->__pad[0]; }

__attribute__((noreturn)) static void unwind_continue(struct shim_thread *self)
{
    __pthread_unwind_buf_t *top = self->cleanup_top;
    /* glibc's macros saved no signal mask (__mask_was_saved is 0), so
     * longjmp reads only the part of a jmp_buf the buffer has. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
    if (top)
        longjmp((struct __jmp_buf_tag *)(void *)top->__cancel_jmp_buf, 1);
#pragma GCC diagnostic pop
    shim_finish(self);
}

__attribute__((noreturn)) void shim_run_cleanup_and_exit(struct shim_thread *self)
{
    unwind_continue(self);
}

/* Peeks (shim_self_peek): every cancellation point of a wrapper runs
 * here, also write() called from a signal handler. */
void shim_testcancel(void)
{
    struct shim_thread *self = shim_self_peek();
    if (!self)
        return;                  /* no record: nobody can have asked */
    if (__builtin_expect(shim_cancel_requested(), 0)) {
        self->cancel_state = PTHREAD_CANCEL_DISABLE;   /* acted on once */
        shim_exit(PTHREAD_CANCELED);
    }
}

int shim_cancel_requested(void)
{
    struct shim_thread *self = shim_self_peek();
    return self && __atomic_load_n(&self->cancel_pending, __ATOMIC_ACQUIRE) &&
           self->cancel_state == PTHREAD_CANCEL_ENABLE && !(self->exiting & 1);
}

SHIM_DECL(pthread_cancel)
int nth_shim_pthread_cancel(pthread_t t)
{
    struct shim_thread *st = (struct shim_thread *)t;
    if (!st)
        return ESRCH;
    __atomic_store_n(&st->cancel_pending, 1, __ATOMIC_SEQ_CST);
    shim_interrupt_waits(st);
    struct shim_thread *j = __atomic_load_n(&st->joining, __ATOMIC_SEQ_CST);
    if (j)
        nth_sem_post(&j->done_sem);   /* wake it in its join to look */
    return 0;
}
SHIM_EXPORT(pthread_cancel)

SHIM_DECL(pthread_testcancel)
void nth_shim_pthread_testcancel(void)
{
    /* A loop of pthread_testcancel waits for a cancellation; on a VP shared
     * cooperatively, the canceller must get to run. */
    struct shim_thread *self = shim_self();
    if ((++self->testcancel_calls & 63) == 0)
        nth_yield();
    shim_testcancel();
}
SHIM_EXPORT(pthread_testcancel)

SHIM_DECL(pthread_setcancelstate)
int nth_shim_pthread_setcancelstate(int state, int *old)
{
    if (state != PTHREAD_CANCEL_ENABLE && state != PTHREAD_CANCEL_DISABLE)
        return EINVAL;
    struct shim_thread *self = shim_self();
    if (old)
        *old = self->cancel_state;
    self->cancel_state = state;
    return 0;
}
SHIM_EXPORT(pthread_setcancelstate)

SHIM_DECL(pthread_setcanceltype)
int nth_shim_pthread_setcanceltype(int type, int *old)
{
    if (type != PTHREAD_CANCEL_DEFERRED && type != PTHREAD_CANCEL_ASYNCHRONOUS)
        return EINVAL;
    if (type == PTHREAD_CANCEL_ASYNCHRONOUS)
        return ENOTSUP;
    struct shim_thread *self = shim_self();
    if (old)
        *old = self->cancel_type;
    self->cancel_type = type;
    return 0;
}
SHIM_EXPORT(pthread_setcanceltype)

/* ---- glibc's cleanup ABI ------------------------------------------------- */

SHIM_DECL(__pthread_register_cancel)
void nth_shim___pthread_register_cancel(__pthread_unwind_buf_t *buf)
{
    struct shim_thread *self = shim_self();
    *buf_prev(buf) = self->cleanup_top;
    self->cleanup_top = buf;
}
SHIM_EXPORT(__pthread_register_cancel)

SHIM_DECL(__pthread_unregister_cancel)
void nth_shim___pthread_unregister_cancel(__pthread_unwind_buf_t *buf)
{
    shim_self()->cleanup_top = *buf_prev(buf);
}
SHIM_EXPORT(__pthread_unregister_cancel)

void __pthread_register_cancel_defer(__pthread_unwind_buf_t *buf);
SHIM_DECL(__pthread_register_cancel_defer)
void nth_shim___pthread_register_cancel_defer(__pthread_unwind_buf_t *buf)
{
    nth_shim___pthread_register_cancel(buf);
}
SHIM_EXPORT(__pthread_register_cancel_defer)

void __pthread_unregister_cancel_restore(__pthread_unwind_buf_t *buf);
SHIM_DECL(__pthread_unregister_cancel_restore)
void nth_shim___pthread_unregister_cancel_restore(__pthread_unwind_buf_t *buf)
{
    nth_shim___pthread_unregister_cancel(buf);
}
SHIM_EXPORT(__pthread_unregister_cancel_restore)

SHIM_DECL(__pthread_unwind_next)
void nth_shim___pthread_unwind_next(__pthread_unwind_buf_t *buf)
{
    struct shim_thread *self = shim_self();
    self->cleanup_top = *buf_prev(buf);
    unwind_continue(self);
}
SHIM_EXPORT(__pthread_unwind_next)

struct __pthread_cleanup_frame;
void __pthread_cleanup_routine(struct __pthread_cleanup_frame *f);
struct shim_cleanup_frame {      /* glibc's struct __pthread_cleanup_frame */
    void (*routine)(void *);
    void *arg;
    int do_it;
    int cancel_type;
};
SHIM_DECL(__pthread_cleanup_routine)
void nth_shim___pthread_cleanup_routine(struct __pthread_cleanup_frame *f)
{
    struct shim_cleanup_frame *fr = (struct shim_cleanup_frame *)f;
    if (fr->do_it)
        fr->routine(fr->arg);
}
SHIM_EXPORT(__pthread_cleanup_routine)

void _pthread_cleanup_push(struct _pthread_cleanup_buffer *b, void (*routine)(void *), void *arg);
void _pthread_cleanup_pop(struct _pthread_cleanup_buffer *b, int execute);
void _pthread_cleanup_push_defer(struct _pthread_cleanup_buffer *b, void (*routine)(void *), void *arg);
void _pthread_cleanup_pop_restore(struct _pthread_cleanup_buffer *b, int execute);

SHIM_DECL(_pthread_cleanup_push)
void nth_shim__pthread_cleanup_push(struct _pthread_cleanup_buffer *b, void (*routine)(void *), void *arg)
{
    struct shim_thread *self = shim_self();
    b->__routine = routine;
    b->__arg = arg;
    b->__prev = self->old_cleanup;
    self->old_cleanup = b;
}
SHIM_EXPORT(_pthread_cleanup_push)

SHIM_DECL(_pthread_cleanup_pop)
void nth_shim__pthread_cleanup_pop(struct _pthread_cleanup_buffer *b, int execute)
{
    shim_self()->old_cleanup = b->__prev;
    if (execute)
        b->__routine(b->__arg);
}
SHIM_EXPORT(_pthread_cleanup_pop)

SHIM_DECL(_pthread_cleanup_push_defer)
void nth_shim__pthread_cleanup_push_defer(struct _pthread_cleanup_buffer *b, void (*routine)(void *), void *arg)
{
    nth_shim__pthread_cleanup_push(b, routine, arg);
}
SHIM_EXPORT(_pthread_cleanup_push_defer)

SHIM_DECL(_pthread_cleanup_pop_restore)
void nth_shim__pthread_cleanup_pop_restore(struct _pthread_cleanup_buffer *b, int execute)
{
    nth_shim__pthread_cleanup_pop(b, execute);
}
SHIM_EXPORT(_pthread_cleanup_pop_restore)
