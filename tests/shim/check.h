/*
 * check.h -- the few helpers shared by the plain POSIX test programs in
 * tests/shim/. These programs are compiled with `gcc -pthread` only (never
 * linked with nthlib) so that run-compare.sh can run each one natively and
 * under LD_PRELOAD=libnth-pthread.so and compare the two runs.
 *
 * Rules every program follows, so that the two runs can be compared:
 *  - stdout holds only deterministic lines written by one thread in a fixed
 *    order (no addresses, thread ids, timings or interleavings);
 *  - each program checks its own results: a failed check prints a "FAIL"
 *    line on stdout and makes the exit status 1;
 *  - a watchdog (alarm) turns a hang into a death by SIGALRM, which the
 *    harness reports, instead of a stuck `make check`.
 */
#ifndef SHIM_CHECK_H
#define SHIM_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int check_failures;

/* Symbolic name of the error codes the programs expect, so that the output
 * says "EDEADLK" rather than a number or a locale-dependent message. */
static inline const char *errname(int e)
{
    switch (e) {
    case 0: return "0";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EBUSY: return "EBUSY";
    case EINVAL: return "EINVAL";
    case ERANGE: return "ERANGE";
    case EDEADLK: return "EDEADLK";
    case ENOTSUP: return "ENOTSUP";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EOVERFLOW: return "EOVERFLOW";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    case ECHILD: return "ECHILD";
    case ENOSYS: return "ENOSYS";
    default: return "E?";
    }
}

/* CHECK(cond): record and print a failure, carry on. */
#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) {                                                      \
            check_failures++;                                               \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
            fflush(stdout);                                                 \
        }                                                                   \
    } while (0)

/* EXPECT(label, call, want): a pthread-style call returning an error number;
 * prints "label: NAME" and checks it is want. */
#define EXPECT(label, call, want)                                           \
    do {                                                                    \
        int r_ = (call);                                                    \
        printf("%s: %s\n", (label), errname(r_));                           \
        if (r_ != (want)) {                                                 \
            check_failures++;                                               \
            printf("FAIL %s:%d: %s returned %s, want %s\n", __FILE__,       \
                   __LINE__, #call, errname(r_), errname(want));            \
        }                                                                   \
    } while (0)

/* EXPECT_ERRNO(label, call, want): a call returning -1 and errno on failure
 * (want 0 means it must succeed). */
#define EXPECT_ERRNO(label, call, want)                                     \
    do {                                                                    \
        errno = 0;                                                          \
        int r_ = (call) == -1 ? errno : 0;                                  \
        printf("%s: %s\n", (label), errname(r_));                           \
        if (r_ != (want)) {                                                 \
            check_failures++;                                               \
            printf("FAIL %s:%d: %s gave %s, want %s\n", __FILE__,           \
                   __LINE__, #call, errname(r_), errname(want));            \
        }                                                                   \
    } while (0)

/* A deadline `ms` milliseconds from now on `clock`, for the timed calls. */
static inline struct timespec deadline_ms(clockid_t clock, long ms)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* Nanoseconds from a to b (b later). */
static inline long long elapsed_ns(struct timespec a, struct timespec b)
{
    return (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
}

/* Start of every program: unbuffered-enough stdout for fork, and a watchdog.
 * The watchdog is generous: a correct run takes well under a second. */
static inline void check_start(const char *name)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    alarm(60);
    printf("== %s\n", name);
}

/* End of every program: the verdict line and the exit status. */
static inline int check_end(const char *name)
{
    printf("== %s: %s\n", name, check_failures ? "FAILED" : "ok");
    fflush(stdout);
    return check_failures ? 1 : 0;
}

#endif /* SHIM_CHECK_H */
