/*
 * trace_exit.c -- the ways out of a traced process: return from main and
 * exit() (atexit), and SIGTERM, SIGINT, SIGSEGV, SIGABRT. Each writes the
 * buffers to the binary file and the chosen format, then lets the signal do
 * what it would have done: the previous handler if the application had one,
 * otherwise the default action (re-raised). _exit() and SIGKILL run none of
 * this; the binary file then holds what the writer flushed up to its last
 * NTH_TRACE_FLUSH_MS tick, for `nth-trace convert`.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "trace_rt.h"

static const int fatal_signals[] = { SIGTERM, SIGINT, SIGSEGV, SIGABRT };
#define NSIG_TRACED (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction previous[NSIG_TRACED];

static void at_exit(void)
{
    nth_trace_finish();
}

static void on_fatal(int sig, siginfo_t *info, void *uctx)
{
    (void)info;
    (void)uctx;
    int saved = errno;
    /* Converting may take locks the crash left held (malloc's): give it 10 s
     * before SIGALRM's default action ends the process anyway. The binary
     * file is complete before the conversion starts. */
    alarm(10);
    nth_trace_finish();
    alarm(0);
    for (unsigned i = 0; i < NSIG_TRACED; i++)
        if (fatal_signals[i] == sig) {
            struct sigaction sa = previous[i];
            if (sa.sa_handler == SIG_IGN)
                return;
            if (!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL) {
                signal(sig, SIG_DFL);
            } else {
                sigaction(sig, &sa, NULL);
            }
        }
    errno = saved;
    /* Blocked while this handler runs: delivered, with the restored action,
     * as soon as it returns. A SIGSEGV from a faulting instruction faults
     * again on return anyway. */
    raise(sig);
}

int nth_trace_install_exit_paths(void)
{
    atexit(at_exit);
    for (unsigned i = 0; i < NSIG_TRACED; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);   /* SIGALRM must stay deliverable */
        for (unsigned j = 0; j < NSIG_TRACED; j++)
            sigaddset(&sa.sa_mask, fatal_signals[j]);
        sigaction(fatal_signals[i], &sa, &previous[i]);
    }
    return 0;
}
