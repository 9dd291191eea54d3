/*
 * sync_spin.h -- the bounded adaptive spin before a nano-thread blocks.
 *
 * Spinning only pays when the holder can run at the same time, i.e. on
 * another VP; with one VP it would just delay the holder. The bound is a
 * few hundred pause instructions (about a context switch's cost, measured
 * by bench/micro-sync), never a wait on time.
 */
#ifndef NTH_SYNC_SPIN_H
#define NTH_SYNC_SPIN_H

#include "olock.h"

#define NTH_SYNC_SPIN_ITERS 200

/* Spin iterations allowed for this runtime: 0 with a single VP. */
unsigned nth__sync_spin_iters(void) __attribute__((visibility("hidden")));

#endif
