/*
 * context_ucontext.c -- portable context switch with getcontext/makecontext/
 * swapcontext (POSIX.1-2001, removed in 2008 but kept by glibc). Slower (the
 * signal mask costs a system call per switch) but runs everywhere; configure
 * selects it with --with-context=ucontext or on unknown architectures.
 */
#include "context.h"
#include <stdlib.h>

static void ctx_start(unsigned hi_e, unsigned lo_e, unsigned hi_a, unsigned lo_a)
{
    /* makecontext passes ints only: pointers travel as two halves. */
    void (*entry)(void *) =
        (void (*)(void *))(uintptr_t)(((uint64_t)hi_e << 32) | lo_e);
    void *arg = (void *)(uintptr_t)(((uint64_t)hi_a << 32) | lo_a);
    entry(arg);
    abort();
}

void nth_ctx_make(nth_ctx_t *ctx, void *stack_lo, size_t size,
                  void (*entry)(void *), void *arg)
{
    uint64_t e = (uint64_t)(uintptr_t)entry, a = (uint64_t)(uintptr_t)arg;
    getcontext(&ctx->uc);
    ctx->uc.uc_stack.ss_sp = stack_lo;
    ctx->uc.uc_stack.ss_size = size & ~(size_t)15;
    ctx->uc.uc_link = NULL;
    makecontext(&ctx->uc, (void (*)(void))ctx_start, 4,
                (unsigned)(e >> 32), (unsigned)e, (unsigned)(a >> 32), (unsigned)a);
}

void nth_ctx_switch(nth_ctx_t *from, nth_ctx_t *to)
{
    swapcontext(&from->uc, &to->uc);
}
