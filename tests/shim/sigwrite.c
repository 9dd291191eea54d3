/*
 * sigwrite.c -- write(2) and read(2) from a signal handler are
 * async-signal-safe under the shim (the self-pipe pattern).
 * signal-safety(7) lists write, read and close as async-signal-safe: a
 * handler may call them even when the signal interrupted malloc or the
 * runtime. Under the shim, the write wrapper's cancellation check used to
 * create the calling thread's record with calloc when it had none yet
 * (main before any pthread call, a thread starting or ending), which
 * deadlocked with the arena lock held by the interrupted code
 * (/work/notes/f10t/F-write-in-signal-handler-deadlock.md); then the
 * wrapper still lent the VP around the call (nth_blocking_enter), which
 * takes runtime locks the interrupted code may hold: about one run in
 * three of that note's program hung. The shim now runs the program's
 * handlers in a trampoline (pthread-shim/sighand.c) and the wrappers make
 * the plain system call inside one.
 *
 * Part 1: the handler counts the allocations its own kernel thread makes
 * during its write and read (this program interposes malloc, calloc and
 * realloc, which count while a per-thread flag is set and forward to
 * glibc's; a count, not the heap's size, so that the runtime's other
 * kernel threads allocating meanwhile do not count): it runs when main
 * has made no pthread call, on a thread the program created, in that
 * thread's key destructor (the thread is ending), and on main again after
 * that. Each signal is sent by the thread it lands on, from code that is
 * not in malloc.
 *
 * Part 2 (the note's program, shortened): a timer raises SIGUSR2 every
 * 300 us; its handler writes a byte to a pipe that main reads, while
 * threads lock, signal, time out on a condvar and create and join threads
 * in a loop, so that the signals land inside the runtime's and malloc's
 * critical sections. run-compare.sh runs it 30 times in each mode.
 */
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include "check.h"

static int fds[2];
static volatile sig_atomic_t grew, ran;

/* Allocations by the calling thread while its flag is set. Per thread
 * (__thread): under the shim a handler runs on the thread it interrupted,
 * which does not switch inside it. */
#include "malloc_count.h"

static void on_usr1(int sig)
{
    (void)sig;
    int e = errno;
    char c = 'x';
    counted = 0;
    counting = 1;
    ssize_t w = write(fds[1], &c, 1);
    ssize_t r = read(fds[0], &c, 1);
    counting = 0;
    if (w != 1 || r != 1 || counted != 0)
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
    printf("%s: handler ran %d, allocated in it %d\n", label, ran - n, (int)grew);
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

/* ---- part 2 ---- */

static int tp[2];
static volatile sig_atomic_t ticks;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static volatile int stop;
static long counter;

static void on_tick(int sig)
{
    (void)sig;
    int e = errno;
    char b = 't';
    if (write(tp[1], &b, 1) == 1)
        ticks++;
    errno = e;
}

static void *nop(void *a)
{
    return a;
}

static void *churn(void *a)
{
    (void)a;
    while (!stop) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_cond_signal(&c);
        pthread_mutex_unlock(&m);
        pthread_t t;
        if (pthread_create(&t, NULL, nop, NULL) == 0)
            pthread_join(t, NULL);
    }
    return NULL;
}

static void *waiter(void *a)
{
    (void)a;
    while (!stop) {
        pthread_mutex_lock(&m);
        struct timespec ts = deadline_ms(CLOCK_REALTIME, 1);
        pthread_cond_timedwait(&c, &m, &ts);
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static void stress(void)
{
    enum { WANT = 1000 };
    CHECK(pipe(tp) == 0);
    /* The handler never blocks: a full pipe loses the tick. */
    CHECK(fcntl(tp[1], F_SETFL, O_NONBLOCK) == 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);
    pthread_t t[3];
    CHECK(pthread_create(&t[0], NULL, churn, NULL) == 0);
    CHECK(pthread_create(&t[1], NULL, churn, NULL) == 0);
    CHECK(pthread_create(&t[2], NULL, waiter, NULL) == 0);
    /* Not alarm/setitimer: check.h's watchdog is SIGALRM. */
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGUSR2;
    timer_t tm;
    CHECK(timer_create(CLOCK_MONOTONIC, &ev, &tm) == 0);
    struct itimerspec its = { { 0, 300000 }, { 0, 300000 } };
    CHECK(timer_settime(tm, 0, &its, NULL) == 0);
    int got = 0;
    char buf[256];
    while (got < WANT) {
        ssize_t n = read(tp[0], buf, sizeof buf);
        if (n > 0)
            got += (int)n;
        else if (n < 0 && errno != EINTR)
            break;
    }
    CHECK(timer_delete(tm) == 0);
    stop = 1;
    pthread_mutex_lock(&m);
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
    for (int i = 0; i < 3; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    printf("stress: %d bytes through the self-pipe from the handler, counter moved %d\n",
           got >= WANT ? WANT : got, counter > 0);
    CHECK(got >= WANT);
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
    printf("thread: handler ran %d, allocated in it %d\n", (int)ran, (int)grew);
    send_self("main again");
    CHECK(ran == 4);
    CHECK(grew == 0);
    stress();
    return check_end("sigwrite");
}
