/*
 * cpumgr_wait.c -- the watcher's two-word sleep (cpumgr_wait.h). Why two
 * words at once: the watcher used to sleep on the shared word only, having
 * checked the kick word first; a kick between that check and the futex
 * call bumped a word nobody slept on, and the watcher slept until its tick
 * (10 ms) or its older deadline -- a bounded-reclaim deadline set by that
 * kick was missed by up to 10 ms.
 */
#include "cpumgr_wait.h"
#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef FUTEX_32
#define FUTEX_32 2
#endif

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int no_waitv; /* atomic: futex_waitv said ENOSYS once */

int nth_cpumgr_wait2(const uint32_t *shared, uint32_t shared_val, const int *kick, int kick_val,
                     int64_t deadline_ns)
{
    if (deadline_ns < 0)
        deadline_ns = 0;
    struct timespec ts = { (time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000) };
    long r;
#ifdef SYS_futex_waitv
    if (!__atomic_load_n(&no_waitv, __ATOMIC_RELAXED)) {
        struct futex_waitv w[2] = {
            /* Private: the kicker is a thread of this process. */
            { .val = (uint32_t)kick_val, .uaddr = (uintptr_t)kick,
              .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG },
            /* Shared: the daemon wakes it from another process. */
            { .val = shared_val, .uaddr = (uintptr_t)shared, .flags = FUTEX_32 },
        };
        r = syscall(SYS_futex_waitv, w, shared ? 2u : 1u, 0u, &ts, CLOCK_MONOTONIC);
        if (r >= 0)
            return 0;
        if (errno == ETIMEDOUT || errno == EINTR)
            return errno;
        if (errno == EAGAIN)
            return 0; /* a word moved before we slept */
        /* ENOSYS (before 5.16), or EPERM from a seccomp filter that does
         * not know the call: returning at once would spin the watcher. */
        __atomic_store_n(&no_waitv, 1, __ATOMIC_RELAXED);
    }
#endif
    if (!shared) {
        r = syscall(SYS_futex, kick, FUTEX_WAIT_BITSET_PRIVATE, kick_val, &ts, NULL,
                    FUTEX_BITSET_MATCH_ANY);
    } else {
        /* One word only: a kick may be lost, for one slice at most. */
        int64_t until = mono_ns() + NTH_CPUMGR_WAIT_FALLBACK_NS;
        if (until < deadline_ns) {
            ts.tv_sec = (time_t)(until / 1000000000);
            ts.tv_nsec = (long)(until % 1000000000);
        }
        if (__atomic_load_n(kick, __ATOMIC_ACQUIRE) != kick_val)
            return 0;
        r = syscall(SYS_futex, shared, FUTEX_WAIT_BITSET, shared_val, &ts, NULL,
                    FUTEX_BITSET_MATCH_ANY);
        if (r != 0 && errno == ETIMEDOUT && until < deadline_ns)
            return 0;
    }
    if (r == 0)
        return 0;
    return errno == ETIMEDOUT || errno == EINTR ? errno : 0;
}

/* Test hook: pretend futex_waitv is missing (tests/cpumgr/test_client). */
void nth_cpumgr_wait_force_fallback(int on)
{
    __atomic_store_n(&no_waitv, on, __ATOMIC_RELAXED);
}
