/*
 * sigwrite.c -- write(2) from a signal handler allocates nothing (the
 * self-pipe pattern). signal-safety(7) lists write, read and close as
 * async-signal-safe: a handler may call them even when the signal
 * interrupted malloc. Under the shim, the write wrapper's cancellation
 * check used to create the calling thread's record with calloc when it had
 * none yet (main before any pthread call, a thread starting or ending);
 * with the arena lock held by the interrupted code, that calloc deadlocked
 * (/work/notes/f10t/F-write-in-signal-handler-deadlock.md). That one is
 * gone (shim_self_peek); what is left, and makes this an XFAIL of
 * run-compare.sh: the wrapper still lends the VP around the call
 * (nth_blocking_enter), which may start a stand-in kernel thread (malloc)
 * and takes runtime locks the interrupted code may hold.
 *
 * The handler compares the heap's bytes in use (mallinfo2) around its
 * write and read: it runs when main has made no pthread call, on a thread
 * the program created, in that thread's key destructor (the thread is
 * ending), and on main again after that. The handler's own
 * mallinfo2 is safe here: each signal is sent by the thread it lands on,
 * from code that is not in malloc.
 */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include "check.h"

static int fds[2];
static volatile sig_atomic_t grew, ran;

static void on_usr1(int sig)
{
    (void)sig;
    int e = errno;
    char c = 'x';
    size_t before = mallinfo2().uordblks;
    ssize_t w = write(fds[1], &c, 1);
    ssize_t r = read(fds[0], &c, 1);
    size_t after = mallinfo2().uordblks;
    if (w != 1 || r != 1 || after != before)
        grew++;
    ran++;
    errno = e;
}

static void tgkill_self(void);

static void send_self(const char *label)
{
    int n = ran;
    /* tgkill to the calling kernel thread: the handler runs before it
     * returns. Not raise: that is pthread_kill(pthread_self()), which
     * under the shim would make main's record before the handler runs. */
    tgkill_self();
    printf("%s: handler ran %d, heap grew in it %d\n", label, ran - n, (int)grew);
}

static void tgkill_self(void)
{
    CHECK(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR1) == 0);
}

/* A key destructor runs while the thread ends, when the runtime may have
 * cleared the thread's own records already. */
static void key_gone(void *v)
{
    (void)v;
    tgkill_self();
}

static pthread_key_t key;

static void *thread_body(void *arg)
{
    (void)arg;
    CHECK(pthread_setspecific(key, &key) == 0);
    tgkill_self();
    return NULL;
}

int main(void)
{
    check_start("sigwrite");
    CHECK(pipe(fds) == 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    send_self("main first");
    CHECK(pthread_key_create(&key, key_gone) == 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, thread_body, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    printf("thread: handler ran %d, heap grew in it %d\n", (int)ran, (int)grew);
    send_self("main again");
    CHECK(ran == 4);
    CHECK(grew == 0);
    return check_end("sigwrite");
}
