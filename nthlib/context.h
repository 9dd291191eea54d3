/*
 * context.h -- the machine context switch between nano-threads.
 *
 * nth_ctx_switch(from, to) saves the callee-saved registers, the stack
 * pointer and the floating-point control state (MXCSR and x87 control word
 * on x86-64, FPCR on aarch64) of the caller in *from and resumes *to. Only
 * callee-saved state is kept because a switch is always a C function call
 * (cooperative scheduling: DESIGN invariant 1); caller-saved registers are
 * already dead. The FP control state is kept because the ABI says it is
 * "callee-saved" too (a nano-thread that sets a rounding mode must not see it
 * change under it, nor impose it on others).
 *
 * nth_ctx_make() prepares a context that, when switched to, calls
 * entry(arg) on a 16-byte aligned stack, from a trampoline whose return
 * address is null and whose CFI marks the return address undefined, so
 * debuggers and unwinders stop there. entry must never return.
 *
 * Selected at configure time: context_x86_64.S, context_aarch64.S, or the
 * portable context_ucontext.c (NTH_CTX_UCONTEXT).
 */
#ifndef NTH_CONTEXT_H
#define NTH_CONTEXT_H

#include "config.h"
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef NTH_CTX_UCONTEXT
#include <ucontext.h>
#endif

typedef struct nth_ctx {
    void *sp;                 /* saved stack pointer (assembly switch) */
#ifdef NTH_CTX_UCONTEXT
    ucontext_t uc;
#endif
} nth_ctx_t;

void nth_ctx_switch(nth_ctx_t *from, nth_ctx_t *to);
void nth_ctx_make(nth_ctx_t *ctx, void *stack_lo, size_t size,
                  void (*entry)(void *), void *arg);
#if defined(__x86_64__) && !defined(NTH_CTX_UCONTEXT)
/* nth_ctx_make() of a context and nth_ctx_switch() from *from to it, in one
 * and without writing the first frame (the new context needs no storage of
 * its own until it switches away). */
#define NTH_CTX_HAVE_START 1
void nth_ctx_start(nth_ctx_t *from, void *stack_lo, size_t size,
                   void (*entry)(void *), void *arg);
/* nth_ctx_switch() from a context that is never resumed (an exited
 * nano-thread): the caller's registers are not saved. Never returns. */
#define NTH_CTX_HAVE_JUMP 1
void nth_ctx_jump(nth_ctx_t *to) __attribute__((noreturn));
/* entry(arg) called on a new stack, as a function: the caller's frame is
 * saved in *from as by nth_ctx_switch (nth_ctx_jump(from) also ends the
 * call), entry starts with the ABI-default FP control state, and when it
 * returns the caller goes on with its own registers and FP control state.
 * Cheaper than nth_ctx_start and a later nth_ctx_jump back: the returns
 * pair with their calls, so the CPU predicts them. entry may switch away
 * and return on another kernel thread. */
#define NTH_CTX_HAVE_CALL 1
void nth_ctx_call(nth_ctx_t *from, void *stack_lo, size_t size,
                  void (*entry)(void *), void *arg);
#endif

#endif
