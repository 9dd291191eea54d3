/*
 * errno_migrate.c -- errno after a blocking call that resumed on another
 * kernel thread. glibc declares __errno_location() const, so compiled code
 * may read errno after a call through the address it obtained before it;
 * this program does so on purpose (ep below). Natively a thread never
 * changes kernel thread. Under the shim, a nano-thread that blocks on VP A
 * and is woken from VP B may resume on B: a wrapper that then sets errno on
 * B leaves the program reading A's errno (another thread's).
 *
 * Each round forces that migration when the runtime has two VPs: the
 * target thread T blocks in an interruptible call; two helpers then spin
 * without any scheduling point, so they occupy both VPs; the one on T's
 * kernel thread (same gettid()) keeps spinning (the "hog", after setting
 * errno there to 0; only when the other helper runs at the same time on
 * another kernel thread), and the other sends SIGUSR1 to T and blocks, which
 * wakes T on its own VP while T's VP is taken. Natively, or with one VP,
 * no helper shares T's kernel thread and the round simply interrupts T.
 * Calls: nanosleep, poll, select, read (a pipe), waitpid (a child), and
 * sigsuspend; each must fail with EINTR seen through the old address.
 * POSIX: errno(3p) is thread-local; signal(7) for EINTR without SA_RESTART.
 * stderr (not compared) says in how many rounds the handler ran on another
 * kernel thread than the one T blocked on.
 */
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "check.h"

#define ROUNDS 10
#define PAIR_WAIT_NS (50 * 1000000LL)     /* helpers meet within this, or not */
#define HOG_MAX_NS (5 * 1000000000LL)

static pthread_t target;
static int target_tid, handled, handled_tid, waker_taken, round_no;
static int helper_tid[2];
static sem_t go[2], helpers_done, woke;
static int pipefd[2];
static pid_t child;

static int tid(void) { return (int)syscall(SYS_gettid); }

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_usr1(int sig)
{
    (void)sig;
    __atomic_store_n(&handled_tid, tid(), __ATOMIC_RELAXED);
    __atomic_store_n(&handled, 1, __ATOMIC_RELEASE);
}

/* One helper per index: each round it either hogs T's kernel thread, or
 * wakes T by pthread_kill, or (the second one natively) does nothing. */
static void *helper(void *arg)
{
    int me = (int)(intptr_t)arg, other = 1 - me;
    for (;;) {
        while (sem_wait(&go[me]) != 0)
            ;
        int r = __atomic_load_n(&round_no, __ATOMIC_ACQUIRE);
        if (r < 0)
            return NULL;
        int mine = tid();
        __atomic_store_n(&helper_tid[me], mine, __ATOMIC_RELEASE);
        /* No scheduling point while the pair meets: both VPs stay taken. */
        long long t0 = now_ns();
        int their = 0;
        while (!(their = __atomic_load_n(&helper_tid[other], __ATOMIC_ACQUIRE)) && now_ns() - t0 < PAIR_WAIT_NS)
            ;
        if (their && their != mine && mine == __atomic_load_n(&target_tid, __ATOMIC_ACQUIRE)) {
            errno = 0;               /* what T would read there without the fix */
            t0 = now_ns();
            while (!__atomic_load_n(&handled, __ATOMIC_ACQUIRE) && now_ns() - t0 < HOG_MAX_NS)
                ;
        } else if (!__atomic_exchange_n(&waker_taken, 1, __ATOMIC_ACQ_REL)) {
            for (;;) {
                pthread_kill(target, SIGUSR1);
                struct timespec d = deadline_ms(CLOCK_REALTIME, 5);
                if (sem_timedwait(&woke, &d) == 0)
                    break;
            }
        }
        sem_post(&helpers_done);
    }
}

static int call_nanosleep(void)
{
    struct timespec d = { 30, 0 };
    return nanosleep(&d, NULL);
}
static int call_poll(void)
{
    struct pollfd p = { pipefd[0], POLLIN, 0 };
    return poll(&p, 1, 30000);
}
static int call_select(void)
{
    struct timeval tv = { 30, 0 };
    return select(0, NULL, NULL, NULL, &tv);
}
static int call_read(void)
{
    char c;
    return (int)read(pipefd[0], &c, 1);
}
static int call_waitpid(void)
{
    int st;
    return (int)waitpid(child, &st, 0);
}
static int call_sigsuspend(void)
{
    sigset_t none;
    sigemptyset(&none);
    return sigsuspend(&none);
}

static const struct {
    const char *name;
    int (*call)(void);
} calls[] = {
    { "nanosleep", call_nanosleep }, { "poll", call_poll }, { "select", call_select },
    { "read", call_read }, { "waitpid", call_waitpid }, { "sigsuspend", call_sigsuspend },
};

static void *target_main(void *arg)
{
    (void)arg;
    int moved = 0, total = 0;
    for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
        int bad = 0;
        for (int r = 0; r < ROUNDS; r++) {
            __atomic_store_n(&handled, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&waker_taken, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&helper_tid[0], 0, __ATOMIC_RELAXED);
            __atomic_store_n(&helper_tid[1], 0, __ATOMIC_RELAXED);
            int mine = tid();
            __atomic_store_n(&target_tid, mine, __ATOMIC_RELEASE);
            __atomic_store_n(&round_no, r, __ATOMIC_RELEASE);
            /* The address the compiler could have kept: taken before the call. */
            int *volatile ep = &errno;
            *ep = 0;
            sem_post(&go[0]);
            sem_post(&go[1]);
            int ret = calls[c].call();
            int e = *ep;
            if (ret != -1 || e != EINTR) {
                if (!bad)
                    printf("FAIL %s: returned %d, errno read through the address taken before "
                           "the call is %s (want -1, EINTR)\n", calls[c].name, ret, errname(e));
                bad++;
            }
            moved += __atomic_load_n(&handled_tid, __ATOMIC_RELAXED) != mine;
            total++;
            sem_post(&woke);
            while (sem_wait(&helpers_done) != 0)
                ;
            while (sem_wait(&helpers_done) != 0)
                ;
            while (sem_trywait(&woke) == 0)   /* the waker may have left early */
                ;
        }
        check_failures += bad;
        printf("%s: EINTR through the old errno address%s\n", calls[c].name, bad ? " FAILED" : "");
    }
    fprintf(stderr, "errno_migrate: the handler ran on another kernel thread in %d of %d rounds\n", moved, total);
    return NULL;
}

int main(void)
{
    check_start("errno_migrate");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;           /* no SA_RESTART: EINTR */
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    CHECK(pipe(pipefd) == 0);
    child = fork();
    if (child == 0) {
        execl("/bin/sleep", "sleep", "60", (char *)NULL);
        _exit(127);
    }
    CHECK(child > 0);
    sem_init(&go[0], 0, 0);
    sem_init(&go[1], 0, 0);
    sem_init(&helpers_done, 0, 0);
    sem_init(&woke, 0, 0);
    pthread_t h[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&h[i], NULL, helper, (void *)(intptr_t)i) == 0);
    CHECK(pthread_create(&target, NULL, target_main, NULL) == 0);
    CHECK(pthread_join(target, NULL) == 0);
    __atomic_store_n(&round_no, -1, __ATOMIC_RELEASE);
    sem_post(&go[0]);
    sem_post(&go[1]);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(h[i], NULL) == 0);
    kill(child, SIGKILL);
    int st;
    CHECK(waitpid(child, &st, 0) == child);
    return check_end("errno_migrate");
}
