/*
 * negtime.c -- timed waits given an absolute deadline before the epoch
 * ({-5, 0}): a valid time in the past, so the call acts as its try form
 * and times out (ETIMEDOUT) when it would block; EINVAL is only for
 * tv_nsec outside [0, 1e9). As glibc, after sem_timedwait(3p),
 * pthread_mutex_timedlock(3p), pthread_cond_timedwait(3p),
 * pthread_rwlock_timedrdlock(3p) and their clock* forms. (The kernel's
 * sleeps and waits with a timeout, clock_nanosleep, ppoll, sigtimedwait,
 * refuse a negative time with EINVAL: checked too.)
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <poll.h>
#include "check.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static sem_t held, release;

/* Holds m and rw (for writing) until released. */
static void *holder(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    pthread_rwlock_wrlock(&rw);
    sem_post(&held);
    while (sem_wait(&release) != 0)
        ;
    pthread_rwlock_unlock(&rw);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void)
{
    check_start("negtime");
    const struct timespec neg = { -5, 0 }, bad = { -5, 1000000000L };
    sem_t s;
    CHECK(sem_init(&s, 0, 1) == 0);
    EXPECT_ERRNO("sem_timedwait {-5,0}, value 1", sem_timedwait(&s, &neg), 0);
    EXPECT_ERRNO("sem_timedwait {-5,0}, value 0", sem_timedwait(&s, &neg), ETIMEDOUT);
    EXPECT_ERRNO("sem_timedwait {-5,1e9}, value 0", sem_timedwait(&s, &bad), EINVAL);
    CHECK(sem_post(&s) == 0);
    EXPECT_ERRNO("sem_clockwait mono {-5,0}, value 1", sem_clockwait(&s, CLOCK_MONOTONIC, &neg), 0);
    EXPECT_ERRNO("sem_clockwait mono {-5,0}, value 0", sem_clockwait(&s, CLOCK_MONOTONIC, &neg), ETIMEDOUT);

    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&cm);
    EXPECT("cond_timedwait {-5,0}", pthread_cond_timedwait(&c, &cm, &neg), ETIMEDOUT);
    EXPECT("cond_clockwait mono {-5,0}", pthread_cond_clockwait(&c, &cm, CLOCK_MONOTONIC, &neg), ETIMEDOUT);
    EXPECT("cond_timedwait {-5,1e9}", pthread_cond_timedwait(&c, &cm, &bad), EINVAL);
    pthread_mutex_unlock(&cm);

    EXPECT("mutex_timedlock free {-5,0}", pthread_mutex_timedlock(&cm, &neg), 0);
    pthread_mutex_unlock(&cm);
    EXPECT("rwlock_timedrdlock free {-5,0}", pthread_rwlock_timedrdlock(&rw, &neg), 0);
    pthread_rwlock_unlock(&rw);
    EXPECT("rwlock_timedwrlock free {-5,0}", pthread_rwlock_timedwrlock(&rw, &neg), 0);
    pthread_rwlock_unlock(&rw);

    pthread_t t;
    CHECK(sem_init(&held, 0, 0) == 0 && sem_init(&release, 0, 0) == 0);
    CHECK(pthread_create(&t, NULL, holder, NULL) == 0);
    while (sem_wait(&held) != 0)
        ;
    EXPECT("mutex_timedlock held {-5,0}", pthread_mutex_timedlock(&m, &neg), ETIMEDOUT);
    EXPECT("mutex_clocklock mono held {-5,0}", pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &neg), ETIMEDOUT);
    EXPECT("rwlock_timedwrlock held {-5,0}", pthread_rwlock_timedwrlock(&rw, &neg), ETIMEDOUT);
    EXPECT("rwlock_clockwrlock mono held {-5,0}", pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &neg), ETIMEDOUT);
    EXPECT("timedjoin_np running {-5,0}", pthread_timedjoin_np(t, NULL, &neg), ETIMEDOUT);
    EXPECT("clockjoin_np mono running {-5,0}", pthread_clockjoin_np(t, NULL, CLOCK_MONOTONIC, &neg), ETIMEDOUT);
    CHECK(sem_post(&release) == 0);
    CHECK(pthread_join(t, NULL) == 0);

    EXPECT("clock_nanosleep abs {-5,0}", clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &neg, NULL), EINVAL);
    EXPECT_ERRNO("ppoll {-5,0}", ppoll(NULL, 0, &neg, NULL), EINVAL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    EXPECT_ERRNO("sigtimedwait {-5,0}", sigtimedwait(&set, NULL, &neg), EINVAL);
    return check_end("negtime");
}
