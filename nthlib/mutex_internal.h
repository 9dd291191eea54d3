/*
 * mutex_internal.h -- what condvar.c needs from mutex.c: release a mutex
 * fully and take it back, keeping a recursive mutex's depth.
 */
#ifndef NTH_MUTEX_INTERNAL_H
#define NTH_MUTEX_INTERNAL_H

#include "nth.h"
#include "mutex_bias.h"

/* Check the caller may wait with m held (EPERM if an owner-aware m is not
 * the caller's), then release it completely; *depth keeps the recursion. */
int nth__mutex_release(nth_mutex_t *m, uint32_t *depth) __attribute__((visibility("hidden")));
/* Lock m again and restore depth. */
void nth__mutex_reacquire(nth_mutex_t *m, uint32_t depth) __attribute__((visibility("hidden")));

/* The biased fast paths of nth_mutex_unlock and nth_mutex_lock for a
 * normal mutex (mutex.c; its bias word is __count), inline for the
 * condvar wait: 1 when done (depth 0), 0 to go through nth__mutex_release
 * or nth__mutex_reacquire. Saves two calls each way on the 1-VP
 * ping-pong's path. */
static inline int nth__mutex_release_fast(nth_mutex_t *m)
{
    return m->__type == NTH_MUTEX_NORMAL && nth_bias_fast(&m->__count, &m->__state, 1, 0, m);
}

static inline int nth__mutex_reacquire_fast(nth_mutex_t *m)
{
    return m->__type == NTH_MUTEX_NORMAL && nth_bias_fast(&m->__count, &m->__state, 0, 1, m);
}

#endif
