/*
 * mutex_internal.h -- what condvar.c needs from mutex.c: release a mutex
 * fully and take it back, keeping a recursive mutex's depth.
 */
#ifndef NTH_MUTEX_INTERNAL_H
#define NTH_MUTEX_INTERNAL_H

#include "nth.h"

/* Check the caller may wait with m held (EPERM if an owner-aware m is not
 * the caller's), then release it completely; *depth keeps the recursion. */
int nth__mutex_release(nth_mutex_t *m, uint32_t *depth) __attribute__((visibility("hidden")));
/* Lock m again and restore depth. */
void nth__mutex_reacquire(nth_mutex_t *m, uint32_t depth) __attribute__((visibility("hidden")));

#endif
