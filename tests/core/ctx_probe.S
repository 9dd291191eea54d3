/*
 * ctx_probe.S -- register-level probes for test_context.c, where C cannot
 * look: what a new context's entry function finds in its registers, and
 * whether callee-saved registers survive a call that switches contexts.
 *
 * uint64_t ctx_regs_hold(uint64_t seed, void (*fn)(void))
 *   Loads every callee-saved register with a value derived from seed
 *   (aarch64: x19..x28 then d8..d15 = seed+1..seed+18; x86-64: rbx, rbp,
 *   r12..r15 = seed+1..seed+6), calls fn, and returns a bit mask of the
 *   registers that no longer hold their value (bit i for seed+i+1). The
 *   caller's own values are saved and restored, as the ABI requires.
 *
 * void ctx_entry_probe(struct ctx_probe *p)
 *   Used as the entry of a context made by nth_ctx_make(): stores p->sp (the
 *   stack pointer the caller had at the call, i.e. sp on aarch64, rsp+8 on
 *   x86-64), p->fp (x29 / rbp) and p->ra (x30 / the return address), then
 *   tail-calls ctx_probe_done(p) with the registers as it found them.
 *
 * Empty on other architectures (the test skips those cases).
 */
#if defined(__aarch64__)
    .text

    .globl ctx_regs_hold
    .type ctx_regs_hold, %function
    .p2align 4
ctx_regs_hold:
    stp x29, x30, [sp, #-176]!
    mov x29, sp
    stp x19, x20, [sp, #16]
    stp x21, x22, [sp, #32]
    stp x23, x24, [sp, #48]
    stp x25, x26, [sp, #64]
    stp x27, x28, [sp, #80]
    stp d8, d9, [sp, #96]
    stp d10, d11, [sp, #112]
    stp d12, d13, [sp, #128]
    stp d14, d15, [sp, #144]
    str x0, [sp, #160]
    add x19, x0, #1
    add x20, x0, #2
    add x21, x0, #3
    add x22, x0, #4
    add x23, x0, #5
    add x24, x0, #6
    add x25, x0, #7
    add x26, x0, #8
    add x27, x0, #9
    add x28, x0, #10
    .irp n, 8, 9, 10, 11, 12, 13, 14, 15
    add x9, x0, #(\n + 3)
    fmov d\n, x9
    .endr
    blr x1
    ldr x0, [sp, #160]
    mov x10, #0
    .irp n, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28
    add x9, x0, #(\n - 18)
    cmp x\n, x9
    cset x11, ne
    orr x10, x10, x11, lsl #(\n - 19)
    .endr
    .irp n, 8, 9, 10, 11, 12, 13, 14, 15
    add x9, x0, #(\n + 3)
    fmov x12, d\n
    cmp x12, x9
    cset x11, ne
    orr x10, x10, x11, lsl #(\n + 2)
    .endr
    mov x0, x10
    ldp x19, x20, [sp, #16]
    ldp x21, x22, [sp, #32]
    ldp x23, x24, [sp, #48]
    ldp x25, x26, [sp, #64]
    ldp x27, x28, [sp, #80]
    ldp d8, d9, [sp, #96]
    ldp d10, d11, [sp, #112]
    ldp d12, d13, [sp, #128]
    ldp d14, d15, [sp, #144]
    ldp x29, x30, [sp], #176
    ret
    .size ctx_regs_hold, .-ctx_regs_hold

    .globl ctx_entry_probe
    .type ctx_entry_probe, %function
    .p2align 4
ctx_entry_probe:
    mov x9, sp
    str x9, [x0]
    str x29, [x0, #8]
    str x30, [x0, #16]
    b ctx_probe_done
    .size ctx_entry_probe, .-ctx_entry_probe

    .section .note.GNU-stack,"",%progbits

#elif defined(__x86_64__)
    .text

    .globl ctx_regs_hold
    .type ctx_regs_hold, @function
    .p2align 4
ctx_regs_hold:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    pushq %rdi                  /* the seed; rsp is 16-aligned for the call */
    leaq 1(%rdi), %rbx
    leaq 2(%rdi), %rbp
    leaq 3(%rdi), %r12
    leaq 4(%rdi), %r13
    leaq 5(%rdi), %r14
    leaq 6(%rdi), %r15
    call *%rsi
    movq (%rsp), %rdi
    xorl %eax, %eax
    .macro CHECKREG reg, k
    leaq (\k + 1)(%rdi), %rcx
    cmpq %rcx, \reg
    setne %dl
    movzbl %dl, %edx
    shll $\k, %edx
    orl %edx, %eax
    .endm
    CHECKREG %rbx, 0
    CHECKREG %rbp, 1
    CHECKREG %r12, 2
    CHECKREG %r13, 3
    CHECKREG %r14, 4
    CHECKREG %r15, 5
    popq %rdi
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size ctx_regs_hold, .-ctx_regs_hold

    .globl ctx_entry_probe
    .type ctx_entry_probe, @function
    .p2align 4
ctx_entry_probe:
    leaq 8(%rsp), %rax
    movq %rax, (%rdi)
    movq %rbp, 8(%rdi)
    movq (%rsp), %rax
    movq %rax, 16(%rdi)
    jmp ctx_probe_done
    .size ctx_entry_probe, .-ctx_entry_probe

    .section .note.GNU-stack,"",@progbits
#endif
