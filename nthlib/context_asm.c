/*
 * context_asm.c -- builds the first frame of a new context for the
 * assembly switches (context_x86_64.S, context_aarch64.S); the layout must
 * match the frame those files pop.
 */
#include "context.h"

void nth_ctx_trampoline(void);

void nth_ctx_make(nth_ctx_t *ctx, void *stack_lo, size_t size,
                  void (*entry)(void *), void *arg)
{
    uintptr_t top = ((uintptr_t)stack_lo + size) & ~(uintptr_t)15;
#if defined(__x86_64__)
    /* The ABI wants rsp+8 16-aligned at a function's entry. The trampoline
     * reaches entry with a `call`, so after the switch's `ret` pops the
     * trampoline address rsp must be 16-aligned: the return address slot is
     * at top-24, the popped frame (7 words) below it, and the 16 bytes above
     * stay 0 (a null return address for the trampoline's own frame). */
    uint64_t *f = (uint64_t *)(top - 24 - 7 * 8);
    memset(f, 0, 10 * 8);
    uint32_t mxcsr = 0x1F80;            /* ABI defaults: all masked, nearest */
    uint16_t fpucw = 0x037F;
    memcpy(&f[0], &mxcsr, 4);
    memcpy((char *)&f[0] + 4, &fpucw, 2);
    f[3] = (uint64_t)(uintptr_t)entry;  /* r13 */
    f[4] = (uint64_t)(uintptr_t)arg;    /* r12 */
    f[7] = (uint64_t)(uintptr_t)nth_ctx_trampoline;
    ctx->sp = f;
#elif defined(__aarch64__)
    uint64_t *f = (uint64_t *)(top - 176);
    memset(f, 0, 176);
    f[0] = (uint64_t)(uintptr_t)arg;    /* x19 */
    f[1] = (uint64_t)(uintptr_t)entry;  /* x20 */
    f[11] = (uint64_t)(uintptr_t)nth_ctx_trampoline; /* x30 */
    f[20] = 0;                          /* fpcr: round to nearest, no traps */
    ctx->sp = f;
#else
#error "context_asm.c is for x86-64 and aarch64; configure selects ucontext elsewhere"
#endif
}
