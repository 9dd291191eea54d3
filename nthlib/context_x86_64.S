/*
 * context_x86_64.S -- context switch for x86-64 (System V ABI).
 * Frame pushed on the old stack, low to high:
 *   [mxcsr:4 x87cw:2 pad:2] r15 r14 r13 r12 rbx rbp <return address>
 * nth_ctx_make() in context_asm.c builds the same frame for a new context.
 * The FP control words are always saved, but loaded only when they differ
 * from the current ones (same observable state, without the slow loads).
 */
    .text

/* The caller's frame (above), pushed on its own stack: nth_ctx_switch and
 * nth_ctx_start save the same way. */
.macro CTX_SAVE
    pushq %rbp
    .cfi_adjust_cfa_offset 8
    pushq %rbx
    .cfi_adjust_cfa_offset 8
    pushq %r12
    .cfi_adjust_cfa_offset 8
    pushq %r13
    .cfi_adjust_cfa_offset 8
    pushq %r14
    .cfi_adjust_cfa_offset 8
    pushq %r15
    .cfi_adjust_cfa_offset 8
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
.endm

/* Resume the context whose frame rsp points at, eax/ecx holding the current
 * MXCSR and x87 control word: nth_ctx_switch and nth_ctx_jump resume the
 * same way. ldmxcsr and fldcw are the slow part of the switch (microcoded,
 * serialising): load only what differs, which is rare (out of line, after
 * the ret). */
.macro CTX_RESUME
    cmpl (%rsp), %eax
    jne 2f
1:  cmpw 4(%rsp), %cx
    jne 4f
3:  addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
2:  ldmxcsr (%rsp)
    jmp 1b
4:  fldcw 4(%rsp)
    jmp 3b
.endm

/* void nth_ctx_switch(nth_ctx_t *from, nth_ctx_t *to)  rdi = &from->sp, rsi = &to->sp */
    .globl nth_ctx_switch
    .hidden nth_ctx_switch
    .type nth_ctx_switch, @function
    .p2align 4
nth_ctx_switch:
    .cfi_startproc
    CTX_SAVE
    movl (%rsp), %eax           /* our MXCSR and x87 control word */
    movzwl 4(%rsp), %ecx
    movq %rsp, (%rdi)
    movq (%rsi), %rsp
    CTX_RESUME
    .cfi_endproc
    .size nth_ctx_switch, .-nth_ctx_switch

/* void nth_ctx_jump(nth_ctx_t *to)  rdi = &to->sp
 * nth_ctx_switch() from a context that never runs again (an exited
 * nano-thread, whose stack its joiner or the post-switch hook frees):
 * nothing of the caller is saved. The FP control words are read in the red
 * zone only to compare them with the resumed context's, as the switch does. */
    .globl nth_ctx_jump
    .hidden nth_ctx_jump
    .type nth_ctx_jump, @function
    .p2align 4
nth_ctx_jump:
    .cfi_startproc
    stmxcsr -8(%rsp)
    fnstcw -4(%rsp)
    movl -8(%rsp), %eax
    movzwl -4(%rsp), %ecx
    movq (%rdi), %rsp
    CTX_RESUME
    .cfi_endproc
    .size nth_ctx_jump, .-nth_ctx_jump

/* void nth_ctx_start(nth_ctx_t *from, void *stack_lo, size_t size,
 *                    void (*entry)(void *), void *arg)
 * rdi = &from->sp, rsi = stack_lo, rdx = size, rcx = entry, r8 = arg.
 * nth_ctx_make() and nth_ctx_switch() to it in one: saves the caller's frame
 * as nth_ctx_switch does, then enters the trampoline on the new stack with
 * the frame nth_ctx_make would have popped (same stack top, the same 16
 * null bytes above it, ABI-default FP control state) without writing and
 * popping it. */
    .globl nth_ctx_start
    .hidden nth_ctx_start
    .type nth_ctx_start, @function
    .p2align 4
nth_ctx_start:
    .cfi_startproc
    CTX_SAVE
    movq %rsp, (%rdi)
    addq %rdx, %rsi             /* top = (stack_lo + size) & ~15 */
    andq $-16, %rsi
    cmpl $0x1F80, (%rsp)        /* ABI defaults, loaded only if they differ */
    jne 2f
1:  cmpw $0x037F, 4(%rsp)
    jne 4f
3:  leaq -16(%rsi), %rsp
    movq $0, (%rsp)             /* the trampoline's null return address */
    movq $0, 8(%rsp)
    movq %r8, %r12
    movq %rcx, %r13
    jmp nth_ctx_trampoline
2:  movl $0x1F80, -4(%rsi)      /* scratch below the new top: unused yet */
    ldmxcsr -4(%rsi)
    jmp 1b
4:  movw $0x037F, -4(%rsi)
    fldcw -4(%rsi)
    jmp 3b
    .cfi_endproc
    .size nth_ctx_start, .-nth_ctx_start

/* void nth_ctx_call(nth_ctx_t *from, void *stack_lo, size_t size,
 *                   void (*entry)(void *), void *arg)
 * rdi = &from->sp, rsi = stack_lo, rdx = size, rcx = entry, r8 = arg.
 * entry(arg) as a function call on a new stack: saves the caller's frame
 * as nth_ctx_start does (so nth_ctx_jump(from) ends the call too, the way
 * out when entry does not return), enters entry with the ABI-default FP
 * control state, and when it returns goes back to the caller's frame (its
 * registers, its FP control state). entry may switch away and return on
 * another kernel thread: rbx, callee-saved, holds the frame across it.
 * Unlike a switch, both returns are predicted (call and ret pair up). */
    .globl nth_ctx_call
    .hidden nth_ctx_call
    .type nth_ctx_call, @function
    .p2align 4
nth_ctx_call:
    .cfi_startproc
    CTX_SAVE
    movq %rsp, (%rdi)
    movq %rsp, %rbx
    .cfi_def_cfa_register %rbx
    addq %rdx, %rsi             /* top = (stack_lo + size) & ~15 */
    andq $-16, %rsi
    cmpl $0x1F80, (%rsp)        /* ABI defaults, loaded only if they differ */
    jne 6f
5:  cmpw $0x037F, 4(%rsp)
    jne 8f
7:  leaq -16(%rsi), %rsp        /* the 16 bytes nth_ctx_start leaves */
    movq %r8, %rdi
    /* Unwinders stop at entry's caller, as at the trampoline of a started
     * context: the caller's frames are another nano-thread's (a forced
     * unwind, pthread_cancel's, must not run into them). */
    .cfi_undefined rip
    call *%rcx
    movq %rbx, %rsp
    .cfi_def_cfa_register %rsp
    .cfi_restore rip
    stmxcsr -8(%rsp)            /* entry's FP control words, to compare */
    fnstcw -4(%rsp)
    movl -8(%rsp), %eax
    movzwl -4(%rsp), %ecx
    CTX_RESUME
6:  movl $0x1F80, -4(%rsi)      /* scratch below the new top: unused yet */
    ldmxcsr -4(%rsi)
    jmp 5b
8:  movw $0x037F, -4(%rsi)
    fldcw -4(%rsi)
    jmp 7b
    .cfi_endproc
    .size nth_ctx_call, .-nth_ctx_call

/* First code run by a new context: r12 = arg, r13 = entry. The return
 * address is undefined so unwinders stop here. */
    .globl nth_ctx_trampoline
    .hidden nth_ctx_trampoline
    .type nth_ctx_trampoline, @function
    .p2align 4
nth_ctx_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    xorl %ebp, %ebp
    movq %r12, %rdi
    call *%r13
    ud2
    .cfi_endproc
    .size nth_ctx_trampoline, .-nth_ctx_trampoline

    .section .note.GNU-stack,"",@progbits
