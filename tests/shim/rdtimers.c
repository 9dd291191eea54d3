/*
 * rdtimers.c -- timed waits while another thread is blocked in read(): the
 * wait ends at its deadline, then the pipe is written and the reader
 * joined. POSIX: a read on an empty pipe blocks only its caller, and
 * sleeps and timed waits end when their time is up.
 *
 * Under the shim the reader's read lends its VP to a stand-in, and the
 * waiter's alarm may sit on the timer queue of that VP, whose kernel thread
 * is in read(): nobody fired it, and usleep-then-write hung (2 runs of 3 on
 * 2 VPs, every run on 1; found by a new-user trial, /work/notes/f5t). Each
 * timed kind the shim has: usleep, nanosleep, clock_nanosleep, condvar,
 * semaphore, mutex and rwlock timed waits, timedjoin, sigtimedwait; and a
 * signal sent to the reader while it is in read() (EINTR without
 * SA_RESTART, the read carrying on with it).
 * Run with 2 VPs and with one (run-compare.sh's shim-vps1 mode).
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include "check.h"

#define WAIT_MS 40

static int pfd[2];
static volatile sig_atomic_t handled;
static int reading;               /* the reader is about to read */

static void on_usr1(int s)
{
    (void)s;
    handled++;
}

/* Returns 1 (read one byte), or -errno. */
static void *reader(void *arg)
{
    (void)arg;
    char c;
    __atomic_store_n(&reading, 1, __ATOMIC_SEQ_CST);
    ssize_t r = read(pfd[0], &c, 1);
    return (void *)(intptr_t)(r < 0 ? -errno : r);
}

static pthread_t start_reader(void)
{
    pthread_t t;
    CHECK(pipe(pfd) == 0);
    CHECK(pthread_create(&t, NULL, reader, NULL) == 0);
    return t;
}

static void end_reader(const char *label, pthread_t t)
{
    CHECK(write(pfd[1], "x", 1) == 1);
    void *r;
    CHECK(pthread_join(t, &r) == 0);
    printf("%s: read returned %ld\n", label, (long)(intptr_t)r);
    close(pfd[0]);
    close(pfd[1]);
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, held = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static int hpipe[2];

/* Holds `held` and a read lock of `rw` while it too is blocked in read(). */
static void *holder(void *arg)
{
    (void)arg;
    char c;
    pthread_mutex_lock(&held);
    pthread_rwlock_rdlock(&rw);
    ssize_t r = read(hpipe[0], &c, 1);
    pthread_rwlock_unlock(&rw);
    pthread_mutex_unlock(&held);
    return (void *)(intptr_t)r;
}

int main(void)
{
    check_start("rdtimers");
    alarm(10);                    /* a hang is a failure here, not the harness's */
    pthread_t t;

    t = start_reader();
    CHECK(usleep(WAIT_MS * 1000) == 0);
    end_reader("usleep", t);

    t = start_reader();
    struct timespec d = { 0, WAIT_MS * 1000000L };
    CHECK(nanosleep(&d, NULL) == 0);
    end_reader("nanosleep", t);

    t = start_reader();
    struct timespec ab = deadline_ms(CLOCK_MONOTONIC, WAIT_MS);
    EXPECT("clock_nanosleep", clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ab, NULL), 0);
    end_reader("clock_nanosleep", t);

    t = start_reader();
    struct timespec dl = deadline_ms(CLOCK_REALTIME, WAIT_MS);
    pthread_mutex_lock(&m);
    EXPECT("cond_timedwait", pthread_cond_timedwait(&cv, &m, &dl), ETIMEDOUT);
    pthread_mutex_unlock(&m);
    end_reader("cond_timedwait", t);

    t = start_reader();
    sem_t s;
    CHECK(sem_init(&s, 0, 0) == 0);
    dl = deadline_ms(CLOCK_REALTIME, WAIT_MS);
    EXPECT_ERRNO("sem_timedwait", sem_timedwait(&s, &dl), ETIMEDOUT);
    end_reader("sem_timedwait", t);

    /* The holder blocks in read() too: two threads in the kernel. */
    CHECK(pipe(hpipe) == 0);
    pthread_t h;
    CHECK(pthread_create(&h, NULL, holder, NULL) == 0);
    while (pthread_mutex_trylock(&held) == 0) {
        pthread_mutex_unlock(&held);
        sched_yield();
    }
    t = start_reader();
    dl = deadline_ms(CLOCK_REALTIME, WAIT_MS);
    EXPECT("mutex_timedlock", pthread_mutex_timedlock(&held, &dl), ETIMEDOUT);
    end_reader("mutex_timedlock", t);
    t = start_reader();
    dl = deadline_ms(CLOCK_REALTIME, WAIT_MS);
    EXPECT("rwlock_timedwrlock", pthread_rwlock_timedwrlock(&rw, &dl), ETIMEDOUT);
    end_reader("rwlock_timedwrlock", t);
    CHECK(write(hpipe[1], "h", 1) == 1);
    CHECK(pthread_join(h, NULL) == 0);

    t = start_reader();
    dl = deadline_ms(CLOCK_REALTIME, WAIT_MS);
    EXPECT("timedjoin", pthread_timedjoin_np(t, NULL, &dl), ETIMEDOUT);
    end_reader("timedjoin", t);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
    t = start_reader();
    struct timespec rel = { 0, WAIT_MS * 1000000L };
    EXPECT_ERRNO("sigtimedwait", sigtimedwait(&set, NULL, &rel), EAGAIN);
    end_reader("sigtimedwait", t);

    /* A signal to the thread in read(): no SA_RESTART, EINTR (and the
     * handler once); SA_RESTART, the read goes on and gets the byte. */
    for (int restart = 0; restart < 2; restart++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sa.sa_flags = restart ? SA_RESTART : 0;
        CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
        handled = 0;
        __atomic_store_n(&reading, 0, __ATOMIC_SEQ_CST);
        t = start_reader();
        while (!__atomic_load_n(&reading, __ATOMIC_SEQ_CST))
            CHECK(usleep(1000) == 0);
        CHECK(usleep(100000) == 0);            /* let it get into read() */
        CHECK(pthread_kill(t, SIGUSR1) == 0);
        if (restart) {
            CHECK(usleep(WAIT_MS * 1000) == 0);
            end_reader("signal, SA_RESTART", t);
        } else {
            /* The pipe stays empty until the read has ended: it can end
             * only by the signal. */
            void *r;
            CHECK(pthread_join(t, &r) == 0);
            printf("signal: read returned %ld\n", (long)(intptr_t)r);
            close(pfd[0]);
            close(pfd[1]);
        }
        printf("handler ran %d time(s)\n", (int)handled);
    }
    return check_end("rdtimers");
}
