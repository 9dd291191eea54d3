/*
 * overflow.c -- naming the nano-thread whose stack overflowed.
 *
 * A nano-thread that runs off its stack touches the guard page below it and
 * gets SIGSEGV. The handler runs on the VP's alternate signal stack (the
 * faulting stack is unusable), maps the fault address to the unit's
 * descriptor through the slab registry, writes one line
 *   nthlib: stack overflow in nano-thread <id> (<name>)
 * with write(2) only (async-signal-safe), restores the previous action and
 * returns: the faulting instruction runs again under it. Tracing installs
 * its handler before this one, so an overflow under NTH_TRACE prints the
 * line, then flushes the trace, then dies of SIGSEGV by the default action;
 * untraced, the process dies as it would have without us. Faults elsewhere
 * go to the previous handler the same way.
 */
#include "internal.h"
#include "libc_real.h"
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ALTSTACK_SIZE (64 * 1024)

static struct sigaction old_segv;

static size_t put(char *buf, size_t at, const char *s)
{
    while (*s && at < 255)
        buf[at++] = *s++;
    return at;
}

static void segv_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    struct nth_thread *t = nth_guard_owner(si->si_addr);
    if (t) {
        char buf[256], num[24];
        size_t at = put(buf, 0, "nthlib: stack overflow in nano-thread ");
        uint64_t id = t->id;
        int n = 0;
        do { num[n++] = (char)('0' + id % 10); id /= 10; } while (id && n < 23);
        while (n > 0 && at < 255)
            buf[at++] = num[--n];
        at = put(buf, at, " (");
        char name[NTH_NAME_MAX + 1];
        memcpy(name, t->name, NTH_NAME_MAX);
        name[NTH_NAME_MAX] = '\0';
        at = put(buf, at, name);
        at = put(buf, at, ")\n");
        ssize_t w = nth_sys_write(2, buf, at);
        (void)w;
        /* Fall through: the fault repeats under the previous handler (the
         * trace's flush when NTH_TRACE is set, else the default action). */
    }
    sigaction(sig, &old_segv, NULL);
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
