/*
 * sem.c -- unnamed and named POSIX semaphores: counting, try/timed/clock
 * waits with their errors, overflow, process-shared use across fork. After
 * sem_init(3p), sem_wait(3p), sem_timedwait(3p), sem_post(3p), sem_open(3p).
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "check.h"

static sem_t items, slots;
static long total;
static void *producer(void *arg)
{
    for (int i = 1; i <= 2000; i++) {
        sem_wait(&slots);
        __atomic_add_fetch(&total, i, __ATOMIC_SEQ_CST);
        sem_post(&items);
    }
    return arg;
}
static void *consumer(void *arg)
{
    for (int i = 0; i < 2000; i++) {
        sem_wait(&items);
        sem_post(&slots);
    }
    return arg;
}

static sem_t gate;
static void *timed_waiter(void *arg)
{
    (void)arg;
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 30000);
    return (void *)(intptr_t)(sem_timedwait(&gate, &dl) == 0 ? 0 : errno);
}

/* sem_timedwait(3p)/sem_clockwait(3): glibc checks the deadline's
 * tv_nsec and the clock before it tries to take a unit, so they fail with
 * EINVAL even when the value is positive (issue 4's audit). */
static void test_error_audit(void)
{
    sem_t s;
    CHECK(sem_init(&s, 0, 1) == 0);
    struct timespec bad = deadline_ms(CLOCK_REALTIME, 20);
    bad.tv_nsec = 1000000000L;
    EXPECT_ERRNO("timedwait(tv_nsec 1e9, value 1)", sem_timedwait(&s, &bad), EINVAL);
    struct timespec dl = deadline_ms(CLOCK_MONOTONIC, 20);
    EXPECT_ERRNO("clockwait(clock 12345, value 1)", sem_clockwait(&s, 12345, &dl), EINVAL);
    int v = -1;
    CHECK(sem_getvalue(&s, &v) == 0);
    printf("value still 1: %d\n", v == 1);
    CHECK(sem_destroy(&s) == 0);
}

int main(void)
{
    check_start("sem");
    sem_t s;
    int v;
    EXPECT_ERRNO("sem_init(SEM_VALUE_MAX+1)", sem_init(&s, 0, (unsigned)SEM_VALUE_MAX + 1u), EINVAL);
    EXPECT_ERRNO("sem_init(0)", sem_init(&s, 0, 0), 0);
    sem_getvalue(&s, &v);
    printf("value: %d\n", v);
    EXPECT_ERRNO("trywait(0)", sem_trywait(&s), EAGAIN);
    EXPECT_ERRNO("post", sem_post(&s), 0);
    EXPECT_ERRNO("post", sem_post(&s), 0);
    sem_getvalue(&s, &v);
    printf("value: %d\n", v);
    EXPECT_ERRNO("wait", sem_wait(&s), 0);
    EXPECT_ERRNO("trywait", sem_trywait(&s), 0);
    struct timespec dl = deadline_ms(CLOCK_REALTIME, 20), now;
    EXPECT_ERRNO("timedwait(+20ms)", sem_timedwait(&s, &dl), ETIMEDOUT);
    clock_gettime(CLOCK_REALTIME, &now);
    printf("did not return before the deadline: %d\n", elapsed_ns(dl, now) >= 0);
    struct timespec bad = { 0, 1000000000L };
    EXPECT_ERRNO("timedwait(tv_nsec 1e9)", sem_timedwait(&s, &bad), EINVAL);
    dl = deadline_ms(CLOCK_MONOTONIC, 20);
    EXPECT_ERRNO("clockwait(MONOTONIC, +20ms)", sem_clockwait(&s, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
    EXPECT_ERRNO("clockwait(PROCESS_CPUTIME)", sem_clockwait(&s, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);
    EXPECT_ERRNO("destroy", sem_destroy(&s), 0);

    EXPECT_ERRNO("sem_init(SEM_VALUE_MAX)", sem_init(&s, 0, SEM_VALUE_MAX), 0);
    EXPECT_ERRNO("post at SEM_VALUE_MAX", sem_post(&s), EOVERFLOW);
    sem_destroy(&s);

    /* a bounded buffer made of two semaphores */
    sem_init(&items, 0, 0);
    sem_init(&slots, 0, 3);
    pthread_t p[2], c[2];
    for (int i = 0; i < 2; i++) {
        CHECK(pthread_create(&c[i], NULL, consumer, NULL) == 0);
        CHECK(pthread_create(&p[i], NULL, producer, NULL) == 0);
    }
    for (int i = 0; i < 2; i++) { pthread_join(p[i], NULL); }
    for (int i = 0; i < 2; i++) pthread_join(c[i], NULL);
    sem_getvalue(&items, &v);
    printf("bounded buffer total %ld, items left %d\n", total, v);
    CHECK(total == 2 * 2000L * 2001 / 2 && v == 0);
    sem_destroy(&items);
    sem_destroy(&slots);

    /* a timed waiter is woken by a post long before its deadline */
    sem_init(&gate, 0, 0);
    pthread_t t;
    void *res;
    CHECK(pthread_create(&t, NULL, timed_waiter, NULL) == 0);
    sem_post(&gate);
    pthread_join(t, &res);
    printf("timed waiter woken by post: %s\n", errname((int)(intptr_t)res));
    CHECK(res == NULL);
    sem_destroy(&gate);

    /* process-shared semaphore in shared memory */
    sem_t *ps = mmap(NULL, 2 * sizeof(sem_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(ps != MAP_FAILED);
    EXPECT_ERRNO("sem_init(pshared)", sem_init(&ps[0], 1, 0), 0);
    sem_init(&ps[1], 1, 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 100; i++) { sem_wait(&ps[0]); sem_post(&ps[1]); }
        _exit(0);
    }
    int pingpong = 1;
    for (int i = 0; i < 100; i++) { sem_post(&ps[0]); pingpong &= sem_wait(&ps[1]) == 0; }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    printf("pshared ping-pong with child: %d\n", pingpong);
    sem_destroy(&ps[0]);
    sem_destroy(&ps[1]);
    munmap(ps, 2 * sizeof(sem_t));

    /* named semaphores (may go straight to libc) */
    char name[64];
    snprintf(name, sizeof name, "/nth-shim-test-%ld", (long)getpid());
    sem_t *ns = sem_open(name, O_CREAT | O_EXCL, 0600, 1);
    CHECK(ns != SEM_FAILED);
    EXPECT_ERRNO("named wait", sem_wait(ns), 0);
    EXPECT_ERRNO("named trywait(0)", sem_trywait(ns), EAGAIN);
    EXPECT_ERRNO("named post", sem_post(ns), 0);
    EXPECT_ERRNO("named close", sem_close(ns), 0);
    EXPECT_ERRNO("named unlink", sem_unlink(name), 0);
    EXPECT_ERRNO("named unlink again", sem_unlink(name), ENOENT);
    test_error_audit();
    return check_end("sem");
}
