/*
 * wait_gen.c -- the fork generation stamped on every waiter.
 *
 * POSIX fork(2p): the child has one thread, the one that called fork().
 * Objects locked in the parent stay locked, but the waiters queued on them
 * by the parent's other threads do not exist in the child. Their records
 * (on their nano-threads' stacks, which the child keeps in its copy of the
 * address space and never reuses) are still linked into every mutex,
 * condvar, rwlock, semaphore, barrier and once queue; a wake that picked
 * one would hand the object to a thread that never runs (and switch to a
 * context whose VP is gone).
 *
 * Rather than walk every object at fork (the runtime does not know them
 * all: they live in user memory), each waiter records the generation it
 * was queued in, and the child's fork handler bumps it: a waker that meets
 * a waiter of an older generation unlinks and skips it (nth_wq_pop). The
 * cost is one load and one store per wait and one compare per wake.
 */
#include "wait_queue.h"

unsigned nth_wait_gen;

void nth_wait_gen_fork_child(void)
{
    /* Only the child's one kernel thread runs here: no race. */
    __atomic_store_n(&nth_wait_gen, nth_wait_gen + 1, __ATOMIC_RELAXED);
}
