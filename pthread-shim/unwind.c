/*
 * unwind.c -- pthread_exit and acted-upon cancellation as a forced unwind
 * of the nano-thread's stack, as glibc's nptl/unwind.c does it: C++
 * destructors of every frame and the cleanup handlers of code compiled
 * with -fexceptions (pthread_cleanup_push's cleanup attribute, C++'s
 * __pthread_cleanup_class) run, newest first, interleaved with the
 * setjmp-based buffers of C code compiled without it (cancel.c), and the
 * unwinding stops at the nano-thread's entry frame. A catch (...) that
 * does not rethrow ends the process ("FATAL: exception not rethrown"), as
 * in glibc. POSIX: pthread_exit(3p), pthread_cancel(3p), "Thread
 * Cancellation Cleanup Handlers" (XSH 2.9.5.3); the Itanium C++ ABI's
 * level I (_Unwind_ForcedUnwind, the stop function).
 *
 * libgcc_s is opened at first use (dlopen), never linked: a C program
 * that does not have it gets it only when it ends a thread this way, as
 * with glibc. If it cannot be loaded, the shim falls back to running the
 * setjmp-based handlers alone (no destructors), its behaviour before.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <dlfcn.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <unwind.h>
#include "shim.h"

#if defined(__SANITIZE_ADDRESS__)
#define SHIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHIM_ASAN 1
#endif
#endif
#ifdef SHIM_ASAN
void __asan_handle_no_return(void);
#endif

__attribute__((noreturn)) void shim_finish(struct shim_thread *self);

typedef _Unwind_Reason_Code (*forced_unwind_fn)(struct _Unwind_Exception *, _Unwind_Stop_Fn, void *);
typedef _Unwind_Word (*get_cfa_fn)(struct _Unwind_Context *);

static forced_unwind_fn forced_unwind;
static get_cfa_fn get_cfa;
static int unwind_state;         /* 0 not tried, 1 loaded, -1 unavailable */

/* "NTH\0PTHR": a class no C++ runtime owns, so a catch (...) sees a
 * foreign exception and __cxa_rethrow resumes the forced unwind. */
#define SHIM_EXCEPTION_CLASS 0x4e54480050544852ULL

int shim_unwind_load(void)
{
    int s = __atomic_load_n(&unwind_state, __ATOMIC_ACQUIRE);
    if (s)
        return s > 0;
    /* Never closed: the frames it unwinds may belong to any later exit.
     * Two threads racing here both get the same handle (dlopen counts). */
    void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
    void *fu = h ? dlsym(h, "_Unwind_ForcedUnwind") : NULL;
    void *gc = h ? dlsym(h, "_Unwind_GetCFA") : NULL;
    if (!fu || !gc) {
        __atomic_store_n(&unwind_state, -1, __ATOMIC_RELEASE);
        return 0;
    }
    __atomic_store_n(&forced_unwind, (forced_unwind_fn)fu, __ATOMIC_RELAXED);
    __atomic_store_n(&get_cfa, (get_cfa_fn)gc, __ATOMIC_RELAXED);
    __atomic_store_n(&unwind_state, 1, __ATOMIC_RELEASE);
    return 1;
}

/* The exception object was dropped by a catch that did not rethrow
 * (__cxa_end_catch deletes a foreign exception): the thread cannot end
 * and its frames are gone. glibc's unwind_cleanup says the same. */
static void unwind_cleanup(_Unwind_Reason_Code reason, struct _Unwind_Exception *exc)
{
    (void)reason;
    (void)exc;
    static const char msg[] = "FATAL: exception not rethrown\n";
    (void)!write(2, msg, sizeof msg - 1);
    abort();
}

/* Called by the unwinder before it runs each frame's cleanups. ctx's CFA
 * (_Unwind_GetCFA) is that frame's stack pointer, which is what the
 * targets hold: the setjmp buffer's owner's (cancel.c records it at
 * registration) or the one thread.c records below the entry frame. The
 * first frame at or above the target is where the unwinding ends: at a
 * setjmp buffer, longjmp there (its handler runs and calls
 * __pthread_unwind_next, which unwinds on to the next target); at the
 * entry, finish the thread. The unwinder's end of the stack (a frame with
 * no unwind data, or nthlib's entry, whose return address is undefined)
 * ends it too: only C frames without cleanups can lie beyond. */
static _Unwind_Reason_Code unwind_stop(int version, _Unwind_Action actions, _Unwind_Exception_Class cls,
                                       struct _Unwind_Exception *exc, struct _Unwind_Context *ctx,
                                       void *arg)
{
    (void)version;
    (void)cls;
    (void)exc;
    struct shim_thread *self = arg;
    uintptr_t cfa = (uintptr_t)get_cfa(ctx);
    __pthread_unwind_buf_t *top = self->cleanup_top;
    int reached = (actions & _UA_END_OF_STACK) ||
                  (top ? cfa >= (uintptr_t)shim_cleanup_buf_sp(top)
                       : self->entry_cfa && cfa >= self->entry_cfa);
    /* _pthread_cleanup_push's handlers (the old ABI, glibc's "compatibility
     * stuff"): those whose buffer lies in a frame now left, newer than
     * the target's. */
    struct _pthread_cleanup_buffer *keep = top ? shim_cleanup_buf_old(top) : NULL;
    while (self->old_cleanup && self->old_cleanup != keep &&
           (reached || cfa >= (uintptr_t)self->old_cleanup)) {
        struct _pthread_cleanup_buffer *b = self->old_cleanup;
        self->old_cleanup = b->__prev;
        b->__routine(b->__arg);
    }
    if (!reached)
        return _URC_NO_REASON;
    if (top)
        shim_cleanup_buf_jump(top);
    shim_finish(self);
}

void shim_unwind(struct shim_thread *self)
{
    if (!shim_unwind_load())
        return;
    struct _Unwind_Exception *exc = &self->unwind_exc;
    exc->exception_class = SHIM_EXCEPTION_CLASS;
    exc->exception_cleanup = unwind_cleanup;
#ifdef SHIM_ASAN
    /* The frames below are left without their epilogues: unpoison them
     * (the fiber annotations tell ASan which stack this is), as ASan does
     * itself for a throw or a longjmp. */
    __asan_handle_no_return();
#endif
    forced_unwind(exc, unwind_stop, self);
    /* Returns only when the unwinder failed before any frame's cleanups
     * ran (no unwind data at all for our own frames): the caller goes on
     * the old way. */
}
