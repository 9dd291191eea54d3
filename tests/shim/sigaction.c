/*
 * sigaction.c -- sigaction(2), signal(2), sysv_signal(3), sigset(3) read
 * back what the program set, and handlers run as the flags say.
 *
 * Under the shim the kernel runs a trampoline that calls the program's
 * handler (pthread-shim/sighand.c): the old action returned must still be
 * the program's handler and flags (SA_SIGINFO as the program chose), a
 * SA_RESETHAND handler must read back as SIG_DFL once it ran, SA_NODEFER
 * must let the handler nest, a handler on a sigaltstack must run on it,
 * and calls made in handlers (write, sigprocmask, raise, sigpending) must
 * act as natively. Bad signal numbers give EINVAL.
 */
#include <signal.h>
#include <stdint.h>
#include "check.h"

/* sigset(3) is obsolescent (glibc says so), still exported: the shim wraps it. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static volatile sig_atomic_t runs1, runs2, runs_info, nest, max_nest, info_ok;
static int fds[2];

static void h1(int sig)
{
    (void)sig;
    runs1++;
}

static void h2(int sig)
{
    (void)sig;
    runs2++;
}

static void h_info(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    runs_info++;
    info_ok = si && si->si_signo == sig;
}

/* Raises its own signal once from inside: with SA_NODEFER the second run
 * nests in the first, else it waits until the first returns. */
static void h_nest(int sig)
{
    nest++;
    if (nest > max_nest)
        max_nest = nest;
    if (runs1++ == 0)
        raise(sig);
    nest--;
}

static void show(const char *label, int sig)
{
    struct sigaction o;
    CHECK(sigaction(sig, NULL, &o) == 0);
    const char *h = o.sa_handler == SIG_DFL ? "SIG_DFL"
                    : o.sa_handler == SIG_IGN ? "SIG_IGN"
                    : (o.sa_flags & SA_SIGINFO) && o.sa_sigaction == h_info ? "h_info"
                    : o.sa_handler == h1 ? "h1"
                    : o.sa_handler == h2 ? "h2"
                    : o.sa_handler == h_nest ? "h_nest" : "other";
    printf("%s: %s%s%s%s%s, mask has USR2 %d\n", label, h,
           (o.sa_flags & SA_SIGINFO) ? " SA_SIGINFO" : "",
           (o.sa_flags & SA_RESTART) ? " SA_RESTART" : "",
           (o.sa_flags & SA_RESETHAND) ? " SA_RESETHAND" : "",
           (o.sa_flags & SA_NODEFER) ? " SA_NODEFER" : "",
           sigismember(&o.sa_mask, SIGUSR2));
}

static int set(int sig, void (*h)(int), int flags, struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR2);
    return sigaction(sig, &sa, old);
}

/* SIGUSR1's handler blocks SIGUSR2, raises it (pending, not run), checks
 * sigpending, and writes to a pipe: all in the handler. SIGUSR2 runs
 * when the kernel puts the mask back, after the handler returns. */
static volatile sig_atomic_t usr2_seen_in_h, usr2_pending_in_h, wrote;
static void h_masks(int sig)
{
    (void)sig;
    sigset_t b, p;
    sigemptyset(&b);
    sigaddset(&b, SIGUSR2);
    if (sigprocmask(SIG_BLOCK, &b, NULL) != 0)
        return;
    raise(SIGUSR2);
    usr2_seen_in_h = runs2;
    if (sigpending(&p) == 0)
        usr2_pending_in_h = sigismember(&p, SIGUSR2);
    char c = 'm';
    wrote = write(fds[1], &c, 1) == 1;
}

/* On the sigaltstack? */
static char *alt_lo, *alt_hi;
static volatile sig_atomic_t on_alt;
static void h_alt(int sig)
{
    (void)sig;
    char here;
    on_alt = &here >= alt_lo && &here < alt_hi;
    char c = 'a';
    wrote = write(fds[1], &c, 1) == 1;
}

int main(void)
{
    check_start("sigaction");
    CHECK(pipe(fds) == 0);
    struct sigaction old;

    /* Round trip: the old action is the program's handler and flags. */
    CHECK(set(SIGUSR1, h1, SA_RESTART, &old) == 0);
    printf("first old: %s\n", old.sa_handler == SIG_DFL ? "SIG_DFL" : "other");
    show("h1 set", SIGUSR1);
    struct sigaction si;
    memset(&si, 0, sizeof si);
    si.sa_sigaction = h_info;
    si.sa_flags = SA_SIGINFO;
    sigemptyset(&si.sa_mask);
    CHECK(sigaction(SIGUSR1, &si, &old) == 0);
    printf("replacing h1 gave back: %s\n", old.sa_handler == h1 && !(old.sa_flags & SA_SIGINFO) ? "h1" : "other");
    show("h_info set", SIGUSR1);
    CHECK(raise(SIGUSR1) == 0);
    printf("h_info ran %d, siginfo right %d\n", (int)runs_info, (int)info_ok);
    /* Putting back what was read restores it exactly. */
    CHECK(sigaction(SIGUSR1, &old, NULL) == 0);
    show("restored", SIGUSR1);
    CHECK(raise(SIGUSR1) == 0);
    printf("h1 ran %d\n", (int)runs1);

    /* SA_RESETHAND: once, then SIG_DFL. SIGURG is ignored by default, so
     * a second one does nothing. */
    runs1 = 0;
    CHECK(set(SIGURG, h1, SA_RESETHAND, NULL) == 0);
    show("resethand set", SIGURG);
    CHECK(raise(SIGURG) == 0);
    show("resethand after one", SIGURG);
    CHECK(raise(SIGURG) == 0);
    printf("resethand handler ran %d\n", (int)runs1);

    /* SA_NODEFER: the handler nests; without it, it does not. */
    runs1 = 0; max_nest = 0;
    CHECK(set(SIGUSR1, h_nest, SA_NODEFER, NULL) == 0);
    CHECK(raise(SIGUSR1) == 0);
    printf("nodefer: ran %d, deepest %d\n", (int)runs1, (int)max_nest);
    runs1 = 0; max_nest = 0;
    CHECK(set(SIGUSR1, h_nest, 0, NULL) == 0);
    CHECK(raise(SIGUSR1) == 0);
    printf("deferred: ran %d, deepest %d\n", (int)runs1, (int)max_nest);

    /* SIG_IGN and SIG_DFL read back as such; the old one is the handler. */
    runs1 = 0;
    CHECK(signal(SIGUSR1, SIG_IGN) == h_nest);
    show("ignored", SIGUSR1);
    CHECK(raise(SIGUSR1) == 0);
    printf("ignored: handler ran %d\n", (int)runs1);
    CHECK(signal(SIGUSR1, h1) == SIG_IGN);
    show("signal()", SIGUSR1);
    CHECK(sysv_signal(SIGUSR1, h2) == h1);
    show("sysv_signal()", SIGUSR1);
    CHECK(raise(SIGUSR1) == 0);
    show("sysv_signal() after one", SIGUSR1);
    printf("sysv handler ran %d\n", (int)runs2);

    /* Calls in a handler: sigprocmask, raise, sigpending, write. */
    runs2 = 0;
    CHECK(set(SIGUSR2, h2, 0, NULL) == 0);
    CHECK(set(SIGUSR1, h_masks, 0, NULL) == 0);
    CHECK(raise(SIGUSR1) == 0);
    char c = 0;
    CHECK(read(fds[0], &c, 1) == 1);
    printf("in handler: usr2 ran %d, pending %d, wrote %d (%c); after: usr2 ran %d\n",
           (int)usr2_seen_in_h, (int)usr2_pending_in_h, (int)wrote, c, (int)runs2);
    sigset_t cur;
    CHECK(sigprocmask(SIG_BLOCK, NULL, &cur) == 0);
    printf("mask after the handler has USR2 %d\n", sigismember(&cur, SIGUSR2));

    /* A handler on a sigaltstack. */
    static char altstack[64 * 1024];
    stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0 };
    alt_lo = altstack;
    alt_hi = altstack + sizeof altstack;
    CHECK(sigaltstack(&ss, NULL) == 0);
    wrote = 0;
    CHECK(set(SIGUSR1, h_alt, SA_ONSTACK, NULL) == 0);
    CHECK(raise(SIGUSR1) == 0);
    CHECK(read(fds[0], &c, 1) == 1);
    printf("altstack: on it %d, wrote %d (%c)\n", (int)on_alt, (int)wrote, c);
    ss.ss_flags = SS_DISABLE;
    CHECK(sigaltstack(&ss, NULL) == 0);

    /* sigset: SIG_HOLD blocks, a handler unblocks. */
    CHECK(sigset(SIGUSR1, SIG_HOLD) == h_alt);
    CHECK(sigprocmask(SIG_BLOCK, NULL, &cur) == 0);
    printf("sigset hold: blocked %d\n", sigismember(&cur, SIGUSR1));
    CHECK(sigset(SIGUSR1, h1) == SIG_HOLD);
    CHECK(sigprocmask(SIG_BLOCK, NULL, &cur) == 0);
    printf("sigset h1: blocked %d\n", sigismember(&cur, SIGUSR1));
    show("sigset()", SIGUSR1);

    /* Bad input. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h1;
    EXPECT_ERRNO("sigaction(0)", sigaction(0, &sa, NULL), EINVAL);
    EXPECT_ERRNO("sigaction(65)", sigaction(65, &sa, NULL), EINVAL);
    EXPECT_ERRNO("sigaction(-1)", sigaction(-1, NULL, &old), EINVAL);
    EXPECT_ERRNO("sigaction(SIGKILL)", sigaction(SIGKILL, &sa, NULL), EINVAL);
    EXPECT_ERRNO("sigaction(SIGSTOP)", sigaction(SIGSTOP, &sa, NULL), EINVAL);
    errno = 0;
    CHECK(signal(SIGKILL, h1) == SIG_ERR && errno == EINVAL);
    errno = 0;
    CHECK(signal(SIGUSR1, SIG_ERR) == SIG_ERR && errno == EINVAL);
    errno = 0;
    CHECK(signal(100, h1) == SIG_ERR && errno == EINVAL);
    show("SIGKILL", SIGKILL);
    return check_end("sigaction");
}
