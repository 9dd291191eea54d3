/*
 * masks.h -- the segment's fixed CPU masks (uint64_t words, bit i = OS CPU
 * i, NTH_CPUMGR_MASK_WORDS words) to and from hwloc bitmaps.
 */
#ifndef CPUMGR_MASKS_H
#define CPUMGR_MASKS_H

#include <hwloc.h>
#include <stdint.h>

/* b = the CPUs of m. Each word of m is read once, atomically (relaxed): m
 * may live in the shared segment and be written meanwhile. Any thread; b
 * is the caller's. */
void cm_mask_to_bitmap(const uint64_t *m, hwloc_bitmap_t b);

/* m = the CPUs of b below NTH_CPUMGR_MAX_CPUS (the others are dropped);
 * each word written once, atomically (relaxed). Any thread; the caller
 * orders the writes against readers (the slot's seqlock). */
void cm_bitmap_to_mask(hwloc_const_bitmap_t b, uint64_t *m);

#endif
