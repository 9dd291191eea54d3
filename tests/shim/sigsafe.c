/*
 * sigsafe.c -- sem_post, pthread_self, pthread_kill(pthread_self(), sig)
 * and raise are async-signal-safe (signal-safety(7)), also under the shim.
 *
 * Part 1 (no thread made yet, so under the shim main has no thread record
 * when the first signal comes): a timer sends SIGUSR2 every 50 us while
 * main mallocs and frees in a loop, so that the signals land inside
 * malloc. The handler calls pthread_self, pthread_kill(pthread_self(),
 * SIGWINCH) and raise(SIGWINCH), and counts the allocations its kernel
 * thread makes meanwhile (this program interposes malloc, calloc and
 * realloc, as sigwrite.c does). The shim's raise there, and its
 * pthread_self, started the runtime (hwloc allocates) when it had not
 * started, and pthread_self made the thread's record with calloc:
 * allocations inside the interrupted malloc (a corrupted heap: glibc's
 * malloc assertion). Checked: no allocation, each SIGWINCH handled, and
 * pthread_self in the handler equal to main's after.
 *
 * Part 2: the same kind of timer (SIGUSR1, 50 us) runs a handler that
 * sem_posts a semaphore that two threads sem_wait on in a loop and a
 * third sem_posts, so that the signals land while a thread holds the
 * semaphore's lock or is queued on it. The shim's sem_post took that lock
 * (and woke the waiter through the runtime's ready queues) from the
 * handler: a handler that interrupted the lock's holder spun for ever on
 * its own kernel thread. Checked: no hang (check.h's alarm) and every
 * unit accounted for (posts == waits taken + value left).
 *
 * Part 3: a timer's handler on main sends pthread_kill to a thread that
 * waits on a condvar main broadcasts in a loop. The shim's pthread_kill
 * woke the target's condvar wait from the handler (taking the condvar's
 * lock, which main may hold there). Checked: no hang, the target's
 * handler ran.
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include "check.h"

/* A storm lasts until its target count of ticks, or, on a machine so
 * loaded that the ticks come slowly (a native run once needed over 40 s
 * for all three parts at load 36), until STORM_BUDGET_S have passed with
 * at least a twentieth of the target: still a storm over the code under
 * test, and the hang this program looks for is left to its alarm. */
#define STORM_BUDGET_S 8
static int storm_done(unsigned ticks, unsigned target, const struct timespec *t0)
{
    if (ticks >= target)
        return 1;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec - t0->tv_sec >= STORM_BUDGET_S && ticks >= target / 20;
}

/* ---- allocation counting (per thread, as in sigwrite.c) ---- */
#include "malloc_count.h"

static timer_t start_storm(int sig)
{
    timer_t t;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = sig;
    if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0) {
        perror("timer_create");
        exit(2);
    }
    struct itimerspec it = { { 0, 50000 }, { 0, 50000 } };
    timer_settime(t, 0, &it, NULL);
    return t;
}

static void stop_storm(timer_t t)
{
    struct itimerspec off;
    memset(&off, 0, sizeof off);
    timer_settime(t, 0, &off, NULL);
    timer_delete(t);
}

static void on(int sig, void (*fn)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, NULL);
}

/* ---- part 1 ---- */
#define STORM1 2000
static int storms, winches, handler_allocs, kill_errors;
static pthread_t handler_self;
static int handler_self_set, handler_self_differs;

static void on_winch(int sig)
{
    (void)sig;
    __atomic_fetch_add(&winches, 1, __ATOMIC_RELAXED);
}

static void on_usr2(int sig)
{
    (void)sig;
    int e = errno;
    counted = 0;
    counting = 1;
    pthread_t me = pthread_self();
    if (pthread_kill(me, SIGWINCH) != 0)
        kill_errors++;
    if (raise(SIGWINCH) != 0)
        kill_errors++;
    counting = 0;
    handler_allocs += counted;
    if (!handler_self_set) {
        handler_self = me;
        handler_self_set = 1;
    } else if (!pthread_equal(me, handler_self)) {
        handler_self_differs = 1;
    }
    __atomic_fetch_add(&storms, 1, __ATOMIC_RELEASE);
    errno = e;
}

static void part1(void)
{
    on(SIGWINCH, on_winch);
    on(SIGUSR2, on_usr2);
    timer_t t = start_storm(SIGUSR2);
    unsigned n = 1;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!storm_done(__atomic_load_n(&storms, __ATOMIC_ACQUIRE), STORM1, &t0)) {
        n = n * 1103515245u + 12345u;
        void *p = malloc(16 + (n >> 16) % 4096);
        void *q = calloc(1, 32 + (n >> 8) % 512);
        p = realloc(p, 64 + (n >> 4) % 8192);
        free(q);
        free(p);
    }
    stop_storm(t);
    /* A last tick may still be running its handler on another kernel
     * thread (none natively): wait until the counts stop moving. */
    struct timespec ms = { 0, 1000000 };
    nanosleep(&ms, NULL);
    int s = __atomic_load_n(&storms, __ATOMIC_ACQUIRE);
    printf("part 1: %s handled\n", s >= STORM1 / 20 ? "storm" : "too few");
    EXPECT("part 1: allocations in the handler", handler_allocs, 0);
    EXPECT("part 1: pthread_kill/raise errors", kill_errors, 0);
    CHECK(__atomic_load_n(&winches, __ATOMIC_RELAXED) == 2 * s);
    printf("part 1: SIGWINCH per tick: %s\n",
           __atomic_load_n(&winches, __ATOMIC_RELAXED) == 2 * s ? "2" : "other");
    CHECK(!handler_self_differs);
    CHECK(handler_self_set && pthread_equal(handler_self, pthread_self()));
    printf("part 1: pthread_self in the handler is main's: %s\n",
           handler_self_set && !handler_self_differs && pthread_equal(handler_self, pthread_self())
               ? "yes" : "no");
    on(SIGUSR2, SIG_IGN);
}

/* ---- part 2 ---- */
#define STORM2 4000
#define POSTER_POSTS 200000
static sem_t sem;
static int ticks, handler_posts, handler_post_errors, taken, stop;

static void on_usr1(int sig)
{
    (void)sig;
    int e = errno;
    if (sem_post(&sem) == 0)
        __atomic_fetch_add(&handler_posts, 1, __ATOMIC_RELAXED);
    else
        __atomic_fetch_add(&handler_post_errors, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&ticks, 1, __ATOMIC_RELEASE);
    errno = e;
}

static void *waiter(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        while (sem_wait(&sem) != 0)
            CHECK(errno == EINTR);
        __atomic_fetch_add(&taken, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* Posts made by the poster: POSTER_POSTS, or fewer when its yields (one
 * each 64 posts, a whole time slice each on a loaded machine) outlast the
 * storm's budget. */
static long poster_posts;

static void *poster(void *arg)
{
    const struct timespec *t0 = arg;
    int i;
    for (i = 0; i < POSTER_POSTS; i++) {
        CHECK(sem_post(&sem) == 0);
        if (i % 64 == 0) {
            sched_yield();
            if (i >= POSTER_POSTS / 20 && storm_done(0, 1, t0))
                break;
        }
    }
    __atomic_store_n(&poster_posts, i < POSTER_POSTS ? i + 1 : i, __ATOMIC_RELEASE);
    return NULL;
}

static void part2(void)
{
    CHECK(sem_init(&sem, 0, 0) == 0);
    on(SIGUSR1, on_usr1);
    pthread_t w[2], p;
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&w[i], NULL, waiter, NULL) == 0);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(pthread_create(&p, NULL, poster, &t0) == 0);
    timer_t t = start_storm(SIGUSR1);
    CHECK(pthread_join(p, NULL) == 0);
    /* Main waits on the semaphore too while the storm goes on. */
    while (!storm_done(__atomic_load_n(&ticks, __ATOMIC_ACQUIRE), STORM2, &t0)) {
        struct timespec d = deadline_ms(CLOCK_REALTIME, 1);
        if (sem_timedwait(&sem, &d) == 0)
            __atomic_fetch_add(&taken, 1, __ATOMIC_RELAXED);
    }
    stop_storm(t);
    struct timespec ms = { 0, 1000000 };
    nanosleep(&ms, NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    /* One unit per waiter to let it see stop (a unit it does not need
     * stays in the value). */
    CHECK(sem_post(&sem) == 0);
    CHECK(sem_post(&sem) == 0);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(w[i], NULL) == 0);
    int left = -1;
    CHECK(sem_getvalue(&sem, &left) == 0);
    long posts = __atomic_load_n(&poster_posts, __ATOMIC_ACQUIRE) + __atomic_load_n(&handler_posts, __ATOMIC_RELAXED) + 2;
    long got = (long)__atomic_load_n(&taken, __ATOMIC_RELAXED) + left;
    printf("part 2: %s ticks handled\n", __atomic_load_n(&ticks, __ATOMIC_RELAXED) >= STORM2 / 20 ? "enough" : "too few");
    EXPECT("part 2: sem_post errors in the handler", handler_post_errors, 0);
    CHECK(posts == got);
    printf("part 2: posts == waits + value: %s\n", posts == got ? "yes" : "no");
    if (posts != got)
        printf("  posts %ld, taken %d, value %d\n", posts, taken, left);
    CHECK(sem_destroy(&sem) == 0);
}

/* ---- part 3 ---- */
#define STORM3 5000
static pthread_mutex_t m3 = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c3 = PTHREAD_COND_INITIALIZER;
static int stop3, ticks3, worker_handled, kill3_errors;
static pthread_t worker3;

static void on_usr2_worker(int sig)
{
    (void)sig;
    __atomic_fetch_add(&worker_handled, 1, __ATOMIC_RELAXED);
}

static void on_usr1_kill(int sig)
{
    (void)sig;
    int e = errno;
    if (pthread_kill(worker3, SIGUSR2) != 0)
        __atomic_fetch_add(&kill3_errors, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&ticks3, 1, __ATOMIC_RELEASE);
    errno = e;
}

static void *cond_worker(void *arg)
{
    (void)arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);          /* the timer's: main runs its handler */
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    pthread_mutex_lock(&m3);
    while (!stop3)
        pthread_cond_wait(&c3, &m3);
    pthread_mutex_unlock(&m3);
    return NULL;
}

static void part3(void)
{
    on(SIGUSR2, on_usr2_worker);
    on(SIGUSR1, on_usr1_kill);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &s, NULL);      /* until worker3 is set */
    CHECK(pthread_create(&worker3, NULL, cond_worker, NULL) == 0);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    timer_t t = start_storm(SIGUSR1);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!storm_done(__atomic_load_n(&ticks3, __ATOMIC_ACQUIRE), STORM3, &t0)) {
        pthread_mutex_lock(&m3);
        pthread_cond_broadcast(&c3);
        pthread_mutex_unlock(&m3);
    }
    stop_storm(t);
    pthread_mutex_lock(&m3);
    stop3 = 1;
    pthread_cond_broadcast(&c3);
    pthread_mutex_unlock(&m3);
    CHECK(pthread_join(worker3, NULL) == 0);
    EXPECT("part 3: pthread_kill errors in the handler", kill3_errors, 0);
    int ran = __atomic_load_n(&worker_handled, __ATOMIC_RELAXED) > 0;
    CHECK(ran);
    printf("part 3: the worker's handler ran: %s\n", ran ? "yes" : "no");
}

int main(void)
{
    check_start("sigsafe");
    alarm(40);
    part1();
    part2();
    part3();
    return check_end("sigsafe");
}
