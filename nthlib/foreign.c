/*
 * foreign.c -- waiting on nthlib objects from a kernel thread that is no VP
 * (a plain pthread beside libnth, a C11 or library-internal thread under
 * the pthread shim): such a "foreign" waiter has no nano-thread to block,
 * so it blocks its kernel thread on a futex word of its own.
 *
 * Its waiter records name it by a tagged handle (the word's address | 1;
 * nano-thread descriptors are aligned, so bit 0 tells the two apart), and
 * the same records, queues, wake-up CAS and final states serve both kinds:
 * a waker's nth__wake() on a tagged handle posts the word instead of
 * queueing a nano-thread (the permit semantics of nth_wait/nth_to_rq). The
 * word lives in the kernel thread's TLS, which outlives every wake-up of
 * it, since a waiter returns only once its record's state is final, after
 * the waker's last use of the handle (wait_queue.h).
 *
 * A foreign timed waiter arms no alarm in a timer queue (no VP of its own
 * fires it, and parked VPs would not wake for it): it sleeps on its word
 * until the deadline and then runs its alarm's callback itself, which wins
 * or loses the waiter with the same CAS a VP's firing would
 * (nth_waiter_block).
 */
#include <errno.h>
#include <stdint.h>
#include "sync_core.h"
#include "futex_lock.h"

struct nth_foreign {
    int word;   /* 1: a wake-up is pending (the permit) */
} __attribute__((aligned(8)));

static __thread struct nth_foreign foreign_self;

nth_t nth__foreign_self(void)
{
    return (nth_t)((uintptr_t)&foreign_self | NTH_FOREIGN_TAG);
}

static int *word_of(nth_t t)
{
    return &((struct nth_foreign *)((uintptr_t)t & ~(uintptr_t)NTH_FOREIGN_TAG))->word;
}

void nth__foreign_wake(nth_t t)
{
    int *w = word_of(t);
    /* Release: what the waker did before shows to the woken thread. */
    if (__atomic_exchange_n(w, 1, __ATOMIC_RELEASE) == 0)
        nth_futex_wake(w, 1);
}

int nth__foreign_wait(nth_t self, uint64_t deadline)
{
    int *w = word_of(self);
    for (;;) {
        if (__atomic_exchange_n(w, 0, __ATOMIC_ACQUIRE))
            return 0;
        int64_t left = -1;
        if (deadline != NTH_TQ_NONE) {
            uint64_t now = nth_now_ns();
            if (now >= deadline)
                return ETIMEDOUT;
            left = (int64_t)(deadline - now);
        }
        nth_futex_wait(w, 0, left);   /* EINTR, EAGAIN, ETIMEDOUT: re-check */
    }
}
