/*
 * tsan_annot.h -- what ThreadSanitizer cannot see, said to it: the one
 * place the runtime uses the sanitizer annotation API. Every macro
 * compiles to nothing without --enable-sanitizers=thread (NTH_TSAN).
 *
 * - Hand-offs through liburcu (ready queues, the stack pool): its atomics
 *   are inline assembly or live in an uninstrumented library, so the
 *   publisher releases the object and the taker acquires it.
 * - liburcu's inline queue code (wfcqueue.h) reads and writes the links
 *   with volatile plain accesses ordered by its own barriers; TSan takes
 *   them for races. Those calls run inside an "opaque" region (accesses
 *   ignored): third-party code, whose ordering is not ours to prove.
 * - Our context switches: each nano-thread and idle context is a TSan
 *   fiber (sched.c switches fibers with every context switch).
 *
 * The functions are the sanitizer runtime's public interface
 * (sanitizer/tsan_interface.h in GCC and LLVM); declared here so a build
 * needs no particular copy of that header.
 */
#ifndef NTH_TSAN_ANNOT_H
#define NTH_TSAN_ANNOT_H

#include "config.h"

#ifdef NTH_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);

#define NTH_TSAN_RELEASE(p) __tsan_release((void *)(p))
#define NTH_TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define NTH_TSAN_OPAQUE_BEGIN() __tsan_ignore_thread_begin()
#define NTH_TSAN_OPAQUE_END() __tsan_ignore_thread_end()
#else
#define NTH_TSAN_RELEASE(p) ((void)0)
#define NTH_TSAN_ACQUIRE(p) ((void)0)
#define NTH_TSAN_OPAQUE_BEGIN() ((void)0)
#define NTH_TSAN_OPAQUE_END() ((void)0)
#endif

#endif
