/*
 * sigjmp.c -- a handler left with siglongjmp (or longjmp) leaves no trace:
 * the blocking calls made after the jump behave as they did before it.
 *
 * Under the shim, a handler the program installed runs in a trampoline
 * that marks the kernel thread as "in a signal handler", where the I/O
 * wrappers make the plain system call (pthread-shim/sighand.c). A jump
 * out of the handler skips the trampoline's end: if the mark stayed, a
 * later blocking read would keep the VP in the kernel instead of lending
 * it. So each case below jumps out of a handler, then reads from a pipe
 * that only another thread, which starts after the read has begun to
 * wait, writes to. run-compare.sh runs it with NTH_STALL_US=0 (no stall
 * watchdog to rescue a VP stuck in the kernel): with one VP, a read that
 * did not lend its VP hangs (the harness kills it), one that went through
 * the runtime lends it to a stand-in, which runs the writer. The cases:
 * the read shallower on the stack than the handler was (the trampoline's
 * frame is gone from below the stack pointer), deeper than it was (only
 * the jump itself tells), from a handler on a sigaltstack, with longjmp,
 * from a nested handler to a point inside the outer one, and out of a
 * handler that interrupted the blocking read itself (a timeout the old
 * way), after which a read must again be one that pthread_kill can end.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <time.h>
#include "check.h"

static int fds[2];
static sigjmp_buf env;
static jmp_buf plain_env;
static volatile sig_atomic_t jumped, inner_jumped;
static int use_plain;

static void jump_out(int sig)
{
    (void)sig;
    jumped++;
    if (use_plain)
        longjmp(plain_env, 1);
    siglongjmp(env, 1);
}

static void *writer(void *arg)
{
    (void)arg;
    /* Starts after main is in read() (a nano-thread sleep: with one VP
     * this runs only once the reader's VP is lent). */
    usleep(20000);
    char c = 'w';
    CHECK(write(fds[1], &c, 1) == 1);
    return NULL;
}

static pthread_t main_thread;
static volatile sig_atomic_t usr2_runs;

static void count_usr2(int sig)
{
    (void)sig;
    usr2_runs++;
}

/* Signals main, until its handler has run (a signal sent before main is
 * in read() runs at once and the read would wait on). */
static void *kicker(void *arg)
{
    (void)arg;
    while (!usr2_runs) {
        usleep(20000);
        CHECK(pthread_kill(main_thread, SIGUSR2) == 0);
    }
    return NULL;
}

/* A blocking read from depth levels of recursion (each with a frame of
 * about 512 bytes), while writer supplies the byte. */
static __attribute__((noinline)) int read_at(int depth)
{
    volatile char pad[512];
    pad[0] = (char)depth;
    if (depth > 0)
        return read_at(depth - 1) + pad[0] - (char)depth;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, writer, NULL) == 0);
    char c = 0;
    ssize_t n = read(fds[0], &c, 1);
    CHECK(pthread_join(t, NULL) == 0);
    return n == 1 && c == 'w';
}

static __attribute__((noinline)) void raise_at(int depth, int sig)
{
    volatile char pad[512];
    pad[0] = 0;
    if (depth > 0)
        raise_at(depth - 1, sig);
    else
        raise(sig);
    (void)pad[0];
}

static void set_handler(int sig, void (*h)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(sig, &sa, NULL) == 0);
}

/* Nested: SIGUSR2's handler jumps to a point inside SIGUSR1's handler,
 * which then reads (still in a handler: a plain read, as natively) and
 * returns normally. */
static sigjmp_buf inner_env;
static volatile sig_atomic_t inner_read_ok;
static void inner_jump(int sig)
{
    (void)sig;
    siglongjmp(inner_env, 1);
}

static void outer(int sig)
{
    (void)sig;
    if (sigsetjmp(inner_env, 1) == 0) {
        raise(SIGUSR2);
        return;
    }
    inner_jumped = 1;
    char c = 'i', d = 0;
    inner_read_ok = write(fds[1], &c, 1) == 1 && read(fds[0], &d, 1) == 1 && d == 'i';
}

int main(void)
{
    check_start("sigjmp");
    CHECK(pipe(fds) == 0);
    set_handler(SIGUSR1, jump_out, 0);

    /* 1: raised deep, read shallow. */
    if (sigsetjmp(env, 1) == 0)
        raise_at(40, SIGUSR1);
    printf("deep handler left: jumped %d, read %d\n", (int)jumped, read_at(0));

    /* 2: raised shallow, read deep (below where the handler ran). */
    if (sigsetjmp(env, 1) == 0)
        raise(SIGUSR1);
    printf("shallow handler left: jumped %d, read %d\n", (int)jumped, read_at(60));

    /* 3: the handler on a sigaltstack. */
    static char alt[64 * 1024];
    stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0 };
    CHECK(sigaltstack(&ss, NULL) == 0);
    set_handler(SIGUSR1, jump_out, SA_ONSTACK);
    if (sigsetjmp(env, 1) == 0)
        raise(SIGUSR1);
    ss.ss_flags = SS_DISABLE;
    CHECK(sigaltstack(&ss, NULL) == 0);
    printf("altstack handler left: jumped %d, read %d\n", (int)jumped, read_at(60));

    /* 4: longjmp (the mask stays as the handler had it: open it). */
    set_handler(SIGUSR1, jump_out, SA_NODEFER);
    use_plain = 1;
    if (setjmp(plain_env) == 0)
        raise(SIGUSR1);
    use_plain = 0;
    printf("longjmp handler left: jumped %d, read %d\n", (int)jumped, read_at(60));

    /* 5: nested, the inner jumping into the outer. */
    set_handler(SIGUSR1, outer, 0);
    set_handler(SIGUSR2, inner_jump, 0);
    CHECK(raise(SIGUSR1) == 0);
    printf("nested: jumped inside %d, read in the outer %d, read after %d\n", (int)inner_jumped,
           (int)inner_read_ok, read_at(60));

    /* 6: the handler interrupts a blocking read (a timeout the old way:
     * a timer, a handler that jumps out of the read). */
    set_handler(SIGUSR1, jump_out, 0);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGUSR1;
    timer_t tm;
    CHECK(timer_create(CLOCK_MONOTONIC, &ev, &tm) == 0);
    struct itimerspec its = { { 0, 0 }, { 0, 30000000 } };
    char c;
    if (sigsetjmp(env, 1) == 0) {
        CHECK(timer_settime(tm, 0, &its, NULL) == 0);
        CHECK(read(fds[0], &c, 1) < 0);          /* nobody writes: the timer ends it */
    }
    CHECK(timer_delete(tm) == 0);
    printf("read left by a jump: jumped %d, read %d\n", (int)jumped, read_at(60));
    /* ... and the next blocking read is interruptible again: pthread_kill
     * from another thread ends it with EINTR (no SA_RESTART), as natively.
     * A read left in the state of the one the jump cut short would sit in
     * the kernel, out of the shim's reach. */
    set_handler(SIGUSR2, count_usr2, 0);
    main_thread = pthread_self();
    pthread_t k;
    CHECK(pthread_create(&k, NULL, kicker, NULL) == 0);
    errno = 0;
    ssize_t rn = read(fds[0], &c, 1);
    int e = errno;
    CHECK(pthread_join(k, NULL) == 0);
    printf("after it, pthread_kill ends a read: %s, handler ran %d\n", rn < 0 ? errname(e) : "data",
           usr2_runs > 0);

    sigset_t cur;
    CHECK(sigprocmask(SIG_BLOCK, NULL, &cur) == 0);
    printf("mask at the end has USR1 %d USR2 %d\n", sigismember(&cur, SIGUSR1), sigismember(&cur, SIGUSR2));
    return check_end("sigjmp");
}
