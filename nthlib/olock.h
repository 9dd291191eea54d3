/*
 * olock.h -- the tiny lock around a sync object's wait queue.
 *
 * Held only for a few queue operations, never across a switch (a
 * nano-thread that holds it never calls nth_wait or nth_yield), so spinning
 * is bounded by the holder's kernel thread being scheduled. Not a pthread
 * lock: the pthread shim replaces those.
 */
#ifndef NTH_SYNC_SPINLOCK_H
#define NTH_SYNC_SPINLOCK_H

#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline void nth_sync_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static inline void nth_olock(uint32_t *l)
{
    unsigned n = 0;
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
        do {
            nth_sync_relax();
            /* The holder's kernel thread may have been preempted. A raw
             * system call (inline: the sync mocks link no libc_real.c):
             * under the pthread shim sched_yield is nth_yield, and this
             * may run on a kernel thread that is no VP (a blocking spare:
             * it crashed there). */
            if (++n % 1024 == 0)
                syscall(SYS_sched_yield);
        } while (__atomic_load_n(l, __ATOMIC_RELAXED));
    }
}

static inline void nth_ounlock(uint32_t *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

#endif
