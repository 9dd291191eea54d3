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
 * Acting on a cancellation, or pthread_exit, is a forced unwind of the
 * stack (unwind.c) that stops at each of these buffers in turn, so that
 * C++ destructors and -fexceptions cleanups in the frames between run in
 * order; without libgcc_s, only the buffers' handlers run.
 *
 * Limits: asynchronous cancellation is refused (ENOTSUP from
 * pthread_setcanceltype): a nano-thread cannot be stopped safely at an
 * arbitrary instruction.
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
 * four pointers the library may use. The shim keeps the previous buffer in
 * the first, the owner frame's stack pointer in the second (the forced
 * unwind stops at that frame: the jump context's own copy is mangled with
 * glibc's pointer guard) and the _pthread_cleanup_push list's head at
 * registration in the third (the old-ABI handlers newer than the buffer
 * run before its own). */
static void **buf_prev(__pthread_unwind_buf_t *b) { return &b->__pad[0]; }

void *shim_cleanup_buf_sp(__pthread_unwind_buf_t *b) { return b->__pad[1]; }

struct _pthread_cleanup_buffer *shim_cleanup_buf_old(__pthread_unwind_buf_t *b)
{
    return b->__pad[2];
}

__attribute__((noreturn)) void shim_cleanup_buf_jump(__pthread_unwind_buf_t *b)
{
    /* glibc's macros saved no signal mask (__mask_was_saved is 0), so
     * longjmp reads only the part of a jmp_buf the buffer has. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
    longjmp((struct __jmp_buf_tag *)(void *)b->__cancel_jmp_buf, 1);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
}

__attribute__((noreturn)) static void unwind_continue(struct shim_thread *self)
{
    shim_unwind(self);           /* returns only without a usable unwinder */
    __pthread_unwind_buf_t *top = self->cleanup_top;
    if (top)
        shim_cleanup_buf_jump(top);
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
    /* The canceller loads the unwinder, as glibc's pthread_cancel does:
     * the target then need not dlopen on its own (maybe small) stack. */
    shim_unwind_load();
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

/* sp: the registering frame's stack pointer, which is the CFA of the
 * exported entry point it called (the unwinder reports it at that frame). */
static void register_buf(__pthread_unwind_buf_t *buf, void *sp)
{
    struct shim_thread *self = shim_self();
    *buf_prev(buf) = self->cleanup_top;
    buf->__pad[1] = sp;
    buf->__pad[2] = self->old_cleanup;
    self->cleanup_top = buf;
}

SHIM_DECL(__pthread_register_cancel)
void nth_shim___pthread_register_cancel(__pthread_unwind_buf_t *buf)
{
    register_buf(buf, __builtin_dwarf_cfa());
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
    register_buf(buf, __builtin_dwarf_cfa());
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
