/*
 * futex_lock.h -- nthlib's own small locks and futex helpers.
 *
 * Why not pthread_mutex: the pthread shim replaces every pthread_* symbol of
 * the process, so the runtime underneath it must never call them. These locks
 * are held for a few instructions (queue dequeue, registry append), so a
 * test-and-test-and-set spin lock is enough; the futex wrappers are for
 * parking idle VPs and sleeping in the rare slow paths.
 */
#ifndef NTH_FUTEX_LOCK_H
#define NTH_FUTEX_LOCK_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline void nth_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

/* A full fence for the Dekker-style checks (enqueue vs park). GCC's
 * ThreadSanitizer rejects atomic_thread_fence; there a seq_cst RMW on a
 * private word stands in (a locked instruction: a full barrier on x86). */
static inline void nth_full_fence(void)
{
#ifdef NTH_TSAN
    static int dummy;
    __atomic_fetch_add(&dummy, 0, __ATOMIC_SEQ_CST);
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Sleep while *addr == val, at most timeout_ns (< 0: no limit). Returns 0
 * on wake-up, ETIMEDOUT, EAGAIN (value changed) or EINTR. */
static inline int nth_futex_wait(int *addr, int val, int64_t timeout_ns)
{
    struct timespec ts, *tp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = timeout_ns / 1000000000;
        ts.tv_nsec = timeout_ns % 1000000000;
        tp = &ts;
    }
    long r = syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, tp, NULL, 0);
    return r == 0 ? 0 : errno;
}

/* Wake up to n kernel threads sleeping on addr. */
static inline void nth_futex_wake(int *addr, int n)
{
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* Spin lock: 0 free, 1 held. */
typedef struct { int v; } nth_spinlock_t;
#define NTH_SPINLOCK_INIT { 0 }

static inline int nth_spin_trylock(nth_spinlock_t *l)
{
    return __atomic_load_n(&l->v, __ATOMIC_RELAXED) == 0 &&
           __atomic_exchange_n(&l->v, 1, __ATOMIC_ACQUIRE) == 0;
}

static inline void nth_spin_lock(nth_spinlock_t *l)
{
    while (!nth_spin_trylock(l))
        nth_cpu_relax();
}

static inline void nth_spin_unlock(nth_spinlock_t *l)
{
    __atomic_store_n(&l->v, 0, __ATOMIC_RELEASE);
}

/* Futex mutex (Drepper, "Futexes are tricky", mutex2): 0 free, 1 locked,
 * 2 locked with sleepers. For slow paths that may wait long (set_allowed). */
typedef struct { int v; } nth_futex_lock_t;
#define NTH_FUTEX_LOCK_INIT { 0 }

static inline void nth_futex_lock(nth_futex_lock_t *l)
{
    int c = 0;
    if (__atomic_compare_exchange_n(&l->v, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    if (c != 2)
        c = __atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE);
    while (c != 0) {
        nth_futex_wait(&l->v, 2, -1);
        c = __atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE);
    }
}

static inline void nth_futex_unlock(nth_futex_lock_t *l)
{
    if (__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) != 1)
        nth_futex_wake(&l->v, 1);
}

#endif
