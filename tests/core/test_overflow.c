/* Guard page: a nano-thread that overflows its stack kills the process with
 * SIGSEGV after one line on stderr naming it. A SIGSEGV sent by raise,
 * kill, sigqueue or another process is no fault: it does what it would
 * have done without the runtime (kills by default, reaches the program's
 * handler, or is ignored), and a later overflow is still reported. */
#include "child.h"
#include <signal.h>
#include <time.h>

static int deep(int n)
{
    volatile char pad[1024];
    pad[0] = (char)n;
    pad[sizeof pad - 1] = (char)n;
    return n > 1000000 ? pad[0] : deep(n + 1) + pad[sizeof pad - 1];
}

static void *overflow(void *a)
{
    (void)a;
    return (void *)(uintptr_t)deep(0);
}

/* a: the nano-thread's name, or NULL for none. */
static void c_overflow(void *a)
{
    child_init(2);
    nth_attr_t attr;
    nth_attr_init(&attr);
    nth_attr_setstacksize(&attr, NTH_STACK_MIN);
    if (a)
        nth_attr_setname(&attr, (const char *)a);
    nth_t t;
    CHECK_EQ(nth_create(&t, &attr, overflow, NULL), 0);
    CHECK_EQ(nth_id(t), 2);
    nth_join(t, NULL);
    fprintf(stderr, "not reached\n");
}

/* The overflow of a nano-thread named name (NULL: unnamed) prints line. */
static void check_guard_page(const char *name, const char *line)
{
    char path[] = "/tmp/nth-overflow-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int st = run_child(c_overflow, (void *)name, path, 30);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGSEGV);
    char buf[4096] = {0};
    assert_true(pread(fd, buf, sizeof buf - 1, 0) > 0);
    if (!strstr(buf, line))
        fail_msg("expected \"%s\" in: %s", line, buf);
    assert_null(strstr(buf, "not reached"));
    close(fd);
    unlink(path);
}

static void test_guard_page(void **s)
{
    (void)s;
    check_guard_page("deep-diver", "nthlib: stack overflow in nano-thread 2 (deep-diver)\n");
}

/* An unnamed nano-thread: its id alone, no empty "()" (fresh15). */
static void test_guard_page_unnamed(void **s)
{
    (void)s;
    check_guard_page(NULL, "nthlib: stack overflow in nano-thread 2\n");
}

/* ---- a frame that jumps over the guard --------------------------------- */

static void assert_killed_by_segv(int st, const char *how);

#define BIG_FRAME (3u << 20)
static volatile size_t big_pick = 12345;

/* A 3 MiB local array on a 1 MiB stack: the stack pointer lands 2 MiB
 * below the stack, past the one-page guard, and the first touch faults
 * outside any guard. */
static void *big_frame(void *a)
{
    (void)a;
    char buf[BIG_FRAME];
    memset(buf, 1, sizeof buf);
    __asm__ __volatile__("" : : "r"(buf) : "memory");
    return (void *)(uintptr_t)buf[big_pick % BIG_FRAME];
}

static void c_jump(void *a)
{
    (void)a;
    child_init(2);
    nth_attr_t attr;
    nth_attr_init(&attr);
    nth_attr_setstacksize(&attr, 1u << 20);
    nth_attr_setname(&attr, "jumper");
    nth_t t;
    CHECK_EQ(nth_create(&t, &attr, big_frame, NULL), 0);
    CHECK_EQ(nth_id(t), 2);
    nth_join(t, NULL);
    fprintf(stderr, "not reached\n");
}

/* The jump gets the guard page's line, not a bare SIGSEGV. */
static void test_frame_jumps_guard(void **s)
{
    (void)s;
    char path[] = "/tmp/nth-overflow-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int st = run_child(c_jump, NULL, path, 30);
    char buf[4096] = {0};
    assert_true(pread(fd, buf, sizeof buf - 1, 0) >= 0);
    close(fd);
    unlink(path);
    assert_killed_by_segv(st, "a frame jumping the guard");
    if (!strstr(buf, "nthlib: stack overflow in nano-thread 2 (jumper)\n"))
        fail_msg("expected the overflow line naming nano-thread 2 (jumper) in: %s", buf);
    assert_null(strstr(buf, "not reached"));
}

/* ---- SIGSEGV sent, not a fault ---------------------------------------- */

enum send_how { SEND_RAISE, SEND_KILL, SEND_SIGQUEUE };

static void send_segv(enum send_how how)
{
    if (how == SEND_RAISE)
        raise(SIGSEGV);
    else if (how == SEND_KILL)
        kill(getpid(), SIGSEGV);
    else
        sigqueue(getpid(), SIGSEGV, (union sigval){ .sival_int = 1 });
}

static void *sender(void *a)
{
    send_segv((enum send_how)(intptr_t)a);
    return NULL;
}

/* Sends itself SIGSEGV from a nano-thread, then naps: a swallowed signal
 * reaches "survived" and exit status 3. */
static void c_sent(void *a)
{
    child_init(2);
    nth_t t;
    CHECK_EQ(nth_create(&t, NULL, sender, a), 0);
    CHECK_EQ(nth_join(t, NULL), 0);
    for (int i = 0; i < 10; i++)
        nth_sleep_ns(100 * 1000 * 1000);
    fprintf(stderr, "survived\n");
    fflush(stderr);
    _exit(3);
}

static void assert_killed_by_segv(int st, const char *how)
{
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV)
        fail_msg("SIGSEGV by %s: wait status %#x (%s %d), expected death by SIGSEGV", how, st,
                 WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static void test_sent_raise(void **s)
{
    (void)s;
    assert_killed_by_segv(run_child(c_sent, (void *)(intptr_t)SEND_RAISE, NULL, 30), "raise");
}

static void test_sent_kill(void **s)
{
    (void)s;
    assert_killed_by_segv(run_child(c_sent, (void *)(intptr_t)SEND_KILL, NULL, 30), "kill");
}

static void test_sent_sigqueue(void **s)
{
    (void)s;
    assert_killed_by_segv(run_child(c_sent, (void *)(intptr_t)SEND_SIGQUEUE, NULL, 30), "sigqueue");
}

/* kill -SEGV from another process while the runtime naps in nth_sleep_ns. */
static void test_sent_from_outside(void **s)
{
    (void)s;
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        signal(SIGSEGV, SIG_DFL);   /* not cmocka's */
        alarm(60);
        child_init(2);
        CHECK_EQ(write(p[1], "r", 1), 1);
        for (int i = 0; i < 300; i++)   /* 30 s: killed long before */
            nth_sleep_ns(100 * 1000 * 1000);
        _exit(3);
    }
    close(p[1]);
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    assert_int_equal(kill(pid, SIGSEGV), 0);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_killed_by_segv(st, "kill from another process");
}

static int sent_seen;

/* The program's own handler (installed before nth_init): counts the sent
 * SIGSEGVs; a fault puts the default back so that it repeats and kills. */
static void program_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (si->si_code <= 0)
        sent_seen++;
    else
        signal(sig, SIG_DFL);
}

static void overflow_now(void)
{
    nth_attr_t attr;
    nth_attr_init(&attr);
    nth_attr_setstacksize(&attr, NTH_STACK_MIN);
    nth_attr_setname(&attr, "deep-diver");
    nth_t t;
    CHECK_EQ(nth_create(&t, &attr, overflow, NULL), 0);
    nth_join(t, NULL);
    fprintf(stderr, "not reached\n");
}

static void c_handled_then_overflow(void *a)
{
    (void)a;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = program_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGSEGV, &sa, NULL), 0);
    child_init(2);
    raise(SIGSEGV);
    kill(getpid(), SIGSEGV);
    CHECK_EQ(sent_seen, 2);      /* swallowed: 0 */
    fprintf(stderr, "handler saw %d\n", sent_seen);
    fflush(stderr);   /* the overflow kills the process: no stdio flush */
    overflow_now();
}

static void c_ignored_then_overflow(void *a)
{
    (void)a;
    signal(SIGSEGV, SIG_IGN);
    child_init(2);
    raise(SIGSEGV);
    kill(getpid(), SIGSEGV);
    nth_sleep_ns(100 * 1000 * 1000);
    fprintf(stderr, "ignored\n");
    fflush(stderr);
    overflow_now();
}

/* After sent SIGSEGVs the process went on (program's handler, or SIG_IGN):
 * a stack overflow then still prints its line and kills. */
static void check_overflow_after_sent(void (*fn)(void *), const char *went_on)
{
    char path[] = "/tmp/nth-overflow-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int st = run_child(fn, NULL, path, 30);
    char buf[4096] = {0};
    assert_true(pread(fd, buf, sizeof buf - 1, 0) >= 0);
    close(fd);
    unlink(path);
    if (!strstr(buf, went_on))
        fail_msg("the process did not go on after sent SIGSEGVs (wait status %#x): %s", st, buf);
    if (!strstr(buf, "nthlib: stack overflow in nano-thread "))
        fail_msg("no overflow line after sent SIGSEGVs (the report was disarmed): %s", buf);
    assert_null(strstr(buf, "not reached"));
    assert_killed_by_segv(st, "a stack overflow after sent ones");
}

static void test_handled_sent_then_overflow(void **s)
{
    (void)s;
    check_overflow_after_sent(c_handled_then_overflow, "handler saw 2\n");
}

static void test_ignored_sent_then_overflow(void **s)
{
    (void)s;
    check_overflow_after_sent(c_ignored_then_overflow, "ignored\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guard_page),
        cmocka_unit_test(test_guard_page_unnamed),
        cmocka_unit_test(test_frame_jumps_guard),
        cmocka_unit_test(test_sent_raise),
        cmocka_unit_test(test_sent_kill),
        cmocka_unit_test(test_sent_sigqueue),
        cmocka_unit_test(test_sent_from_outside),
        cmocka_unit_test(test_handled_sent_then_overflow),
        cmocka_unit_test(test_ignored_sent_then_overflow),
    };
    child_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
