/*
 * overflow.c -- naming the nano-thread whose stack overflowed.
 *
 * A nano-thread that runs off its stack touches the guard page below it and
 * gets SIGSEGV. The handler runs on the VP's alternate signal stack (the
 * faulting stack is unusable), maps the fault address to the unit's
 * descriptor through the slab registry, writes one line
 *   nthlib: stack overflow in nano-thread <id> (<name>)   -- " (<name>)" only if named
 * with write(2) only (async-signal-safe), restores the previous action and
 * returns: the faulting instruction runs again under it. Tracing installs
 * its handler before this one, so an overflow under NTH_TRACE prints the
 * line, then flushes the trace, then dies of SIGSEGV; untraced, the process
 * dies as it would have without us.
 *
 * A frame bigger than the guard (a large local array) can jump over it:
 * the stack pointer then lies below the stack, in unmapped memory or in
 * another mapping, and the fault is not on a guard page. Such a fault is
 * still the running nano-thread's overflow when the interrupted stack
 * pointer (ucontext) lies below that nano-thread's stack by at most
 * JUMP_REACH; it gets the same line. The stack pointer, not the faulting
 * address: compiled code moves it down first (sub, or a stack-clash probe
 * loop) and then touches the frame, so a frame that jumped always has it
 * below; an address below the stack with the stack pointer still in it is
 * a wild access, not an overflow. It is checked before the guard pages:
 * a jump that lands on another unit's guard is still the runner's.
 *
 * A SIGSEGV is not always a fault: kill(2), raise(3), tgkill(2) and
 * sigqueue(3) send one too (si_code <= 0, the kernel's SI_FROMUSER), and
 * nothing repeats it if the handler just returns. Such a signal (and any
 * fault that is not an overflow) gets what the previous action would have
 * done with it, and the overflow report stays armed where that action lets
 * the process go on (ignored, or a handler that returns): sigaction(2),
 * signal(7) "Signal dispositions".
 */
#include "internal.h"
#include "libc_real.h"
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define ALTSTACK_SIZE (64 * 1024)
/* How far below the running nano-thread's stack the interrupted stack
 * pointer may lie and still be taken for its overflow. A frame that ran natively
 * fits in glibc's default thread stack (RLIMIT_STACK, 8 MiB on Debian):
 * eight times that covers such frames on any smaller stack, while a crash
 * on some unrelated stack or mapping further away is left alone (the
 * reach is what bounds a wrong report). */
#define JUMP_REACH ((uintptr_t)64 << 20)

static struct sigaction old_segv;

static size_t put(char *buf, size_t at, const char *s)
{
    while (*s && at < 255)
        buf[at++] = *s++;
    return at;
}

/* Whether the kernel raised this SIGSEGV for the thread's own access
 * (SEGV_MAPERR, SEGV_ACCERR, SI_KERNEL, ...: positive codes), which runs
 * again when the handler returns, rather than a process or thread sending
 * it (SI_USER, SI_TKILL, SI_QUEUE, ...: zero or negative). */
static int is_fault(const siginfo_t *si)
{
    return si->si_code > 0;
}

static void sys_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    /* The system call: under the pthread shim sigprocmask is the shim's. */
    syscall(SYS_rt_sigprocmask, how, set, old, (size_t)(_NSIG / 8));
}

/* Give the signal to the action that was there before ours, as the kernel
 * would have. A handler (the trace's flush, or the program's) is called
 * from here, under its own mask, so that ours stays installed: a sent
 * SIGSEGV the program handles and goes on from, or a fault its handler
 * repairs (mprotect), leaves a later overflow still reported. Otherwise
 * the previous action is put back: a fault then repeats under it; a sent
 * signal is sent again (pending, since SIGSEGV is blocked in this handler,
 * it is delivered when we return), unless it was ignored. */
static void chain(int sig, siginfo_t *si, void *uc)
{
    struct sigaction prev = old_segv;
    int is_handler = (prev.sa_flags & SA_SIGINFO) ||
                     (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN);
    /* SA_RESETHAND: the kernel would have put SIG_DFL back on delivery;
     * let the kernel do it (below), at the cost of our handler. */
    if (is_handler && !(prev.sa_flags & SA_RESETHAND)) {
        sigset_t saved;
        sys_sigmask(SIG_BLOCK, &prev.sa_mask, &saved);
        if (prev.sa_flags & SA_SIGINFO)
            prev.sa_sigaction(sig, si, uc);
        else
            prev.sa_handler(sig);
        sys_sigmask(SIG_SETMASK, &saved, NULL);
        return;
    }
    if (!is_fault(si) && !is_handler && prev.sa_handler == SIG_IGN)
        return;   /* ignored, as it would have been without us */
    sigaction(sig, &prev, NULL);
    if (!is_fault(si))
        syscall(SYS_tgkill, (long)getpid(), (long)syscall(SYS_gettid), (long)sig);
}

/* The interrupted stack pointer, 0 where we cannot read it. */
static uintptr_t fault_sp(const void *uc)
{
    const ucontext_t *u = uc;
#if defined(__x86_64__)
    return (uintptr_t)u->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    return (uintptr_t)u->uc_mcontext.sp;
#else
    (void)u;
    return 0;            /* other architectures: the guard pages only */
#endif
}

/* The nano-thread running on this kernel thread if the fault is its frame
 * having jumped over its guard (see the top), else NULL. */
static struct nth_thread *jump_owner(const void *uc)
{
    struct nth_vp *vp = nth_vp_self();
    uintptr_t sp = fault_sp(uc);
    if (!vp || !sp)
        return NULL;
    struct nth_thread *t = __atomic_load_n(&vp->current, __ATOMIC_RELAXED);
    if (!t || !t->stack_lo)      /* main on the process stack: the kernel's */
        return NULL;
    /* A handler that faulted on an alternate signal stack (ours, or one
     * the program set): that stack may lie anywhere, below ours too. */
    stack_t alt;
    if (syscall(SYS_sigaltstack, NULL, &alt) == 0 && !(alt.ss_flags & SS_DISABLE) &&
        sp >= (uintptr_t)alt.ss_sp && sp - (uintptr_t)alt.ss_sp < alt.ss_size)
        return NULL;
    uintptr_t lo = (uintptr_t)t->stack_lo;
    return sp < lo && lo - sp <= JUMP_REACH ? t : NULL;
}

static void segv_handler(int sig, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    /* si_addr means nothing for a sent signal (it overlays si_pid). */
    struct nth_thread *t = NULL;
    if (is_fault(si)) {
        t = jump_owner(uc);
        if (!t)
            t = nth_guard_owner(si->si_addr);
    }
    if (t) {
        char buf[256], num[24];
        size_t at = put(buf, 0, "nthlib: stack overflow in nano-thread ");
        uint64_t id = t->id;
        int n = 0;
        do { num[n++] = (char)('0' + id % 10); id /= 10; } while (id && n < 23);
        while (n > 0 && at < 255)
            buf[at++] = num[--n];
        char name[NTH_NAME_MAX + 1];
        memcpy(name, t->name, NTH_NAME_MAX);
        name[NTH_NAME_MAX] = '\0';
        if (name[0]) { /* an unnamed one is its id alone, not "()" */
            at = put(buf, at, " (");
            at = put(buf, at, name);
            at = put(buf, at, ")");
        }
        at = put(buf, at, "\n");
        ssize_t w = nth_sys_write(2, buf, at);
        (void)w;
        /* No going on from an overflowed stack: the previous action takes
         * the repeated fault (a handler that returned from it would have
         * the line printed again on every repeat). */
        sigaction(sig, &old_segv, NULL);
    } else {
        chain(sig, si, uc);
    }
    errno = saved_errno;
}

int nth_overflow_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = segv_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGSEGV, &sa, &old_segv) == 0 ? 0 : EAGAIN;
}

int nth_overflow_vp_altstack(struct nth_vp *vp)
{
    void *p = mmap(NULL, ALTSTACK_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return EAGAIN;
    stack_t ss = { .ss_sp = p, .ss_size = ALTSTACK_SIZE, .ss_flags = 0 };
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(p, ALTSTACK_SIZE);
        return EAGAIN;
    }
    vp->altstack = p;
    return 0;
}
