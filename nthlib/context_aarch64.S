/*
 * context_aarch64.S -- context switch for aarch64 (AAPCS64).
 * Frame on the old stack (176 bytes, 16-aligned), low to high:
 *   x19..x30 (96), d8..d15 (64), fpcr (8), pad (8)
 * nth_ctx_make() in context_asm.c builds the same frame for a new context.
 * Only the low 64 bits of v8-v15 (d8-d15) are callee-saved (AAPCS64 6.1.2);
 * FPSR holds sticky status flags, not modes, and is not kept.
 */

/* Built with -mbranch-protection: a BTI landing pad where an indirect call
 * may arrive, and the property note, without which the linker turns BTI
 * off for the whole library. The switch itself signs nothing: it is a leaf
 * and returns to the x30 it loaded. */
#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define NTH_BTI_C hint #34
#define NTH_FEATURE_BTI 1
#else
#define NTH_BTI_C
#define NTH_FEATURE_BTI 0
#endif
#if defined(__ARM_FEATURE_PAC_DEFAULT) && __ARM_FEATURE_PAC_DEFAULT
#define NTH_FEATURE_PAC 2
#else
#define NTH_FEATURE_PAC 0
#endif

    .text

/* void nth_ctx_switch(nth_ctx_t *from, nth_ctx_t *to)  x0 = &from->sp, x1 = &to->sp */
    .globl nth_ctx_switch
    .hidden nth_ctx_switch
    .type nth_ctx_switch, %function
    .p2align 4
nth_ctx_switch:
    .cfi_startproc
    NTH_BTI_C
    sub sp, sp, #176
    .cfi_adjust_cfa_offset 176
    stp x19, x20, [sp, #0]
    stp x21, x22, [sp, #16]
    stp x23, x24, [sp, #32]
    stp x25, x26, [sp, #48]
    stp x27, x28, [sp, #64]
    stp x29, x30, [sp, #80]
    .cfi_rel_offset x29, 80
    .cfi_rel_offset x30, 88
    stp d8, d9, [sp, #96]
    stp d10, d11, [sp, #112]
    stp d12, d13, [sp, #128]
    stp d14, d15, [sp, #144]
    mrs x11, fpcr
    str x11, [sp, #160]
    mov x9, sp
    str x9, [x0]
    ldr x9, [x1]
    mov sp, x9
    ldp x19, x20, [sp, #0]
    ldp x21, x22, [sp, #16]
    ldp x23, x24, [sp, #32]
    ldp x25, x26, [sp, #48]
    ldp x27, x28, [sp, #64]
    ldp x29, x30, [sp, #80]
    ldp d8, d9, [sp, #96]
    ldp d10, d11, [sp, #112]
    ldp d12, d13, [sp, #128]
    ldp d14, d15, [sp, #144]
    ldr x9, [sp, #160]
    /* msr fpcr is slow (it may serialise): write it only if it differs. */
    cmp x9, x11
    b.eq 1f
    msr fpcr, x9
1:  add sp, sp, #176
    .cfi_adjust_cfa_offset -176
    .cfi_restore x29
    .cfi_restore x30
    ret
    .cfi_endproc
    .size nth_ctx_switch, .-nth_ctx_switch

/* First code run by a new context, reached by the switch's `ret` on the
 * stack nth_ctx_make() aligned: x19 = arg, x20 = entry. x29 = 0 ends the
 * frame-record chain and x30 is undefined in the CFI, as in glibc's _start:
 * frame-pointer walkers and libgcc's unwinder both stop here. */
    .globl nth_ctx_trampoline
    .hidden nth_ctx_trampoline
    .type nth_ctx_trampoline, %function
    .p2align 4
nth_ctx_trampoline:
    .cfi_startproc
    .cfi_undefined x30
    mov x29, #0
    mov x30, #0
    mov x0, x19
    blr x20
    brk #0
    .cfi_endproc
    .size nth_ctx_trampoline, .-nth_ctx_trampoline

    .section .note.GNU-stack,"",%progbits

#if NTH_FEATURE_BTI || NTH_FEATURE_PAC
    .pushsection .note.gnu.property, "a"
    .balign 8
    .long 4                     /* name size */
    .long 16                    /* descriptor size */
    .long 5                     /* NT_GNU_PROPERTY_TYPE_0 */
    .asciz "GNU"
    .long 0xc0000000            /* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
    .long 4
    .long NTH_FEATURE_BTI | NTH_FEATURE_PAC
    .long 0
    .popsection
#endif
