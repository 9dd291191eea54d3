/*
 * masks.c -- segment CPU masks <-> hwloc bitmaps, a word at a time: a
 * bit-by-bit loop over the 1024-bit masks cost the daemon about 5 us per
 * mask, on the path of every grant.
 */
#include "masks.h"
#include "nth/cpumgr_shm.h"

/* hwloc's words are unsigned long: 64 bits on LP64, two per mask word on
 * 32-bit targets. */
#define ULONG_BITS (8u * (unsigned)sizeof(unsigned long))
#define ULONGS_PER_WORD (64u / ULONG_BITS)

void cm_mask_to_bitmap(const uint64_t *m, hwloc_bitmap_t b)
{
    hwloc_bitmap_zero(b);
    for (unsigned w = 0; w < NTH_CPUMGR_MASK_WORDS; w++) {
        uint64_t v = __atomic_load_n(&m[w], __ATOMIC_RELAXED);
        for (unsigned k = 0; v && k < ULONGS_PER_WORD; k++) {
            unsigned long part = (unsigned long)(v >> (k * ULONG_BITS));
            if (part)
                hwloc_bitmap_set_ith_ulong(b, w * ULONGS_PER_WORD + k, part);
        }
    }
}

void cm_bitmap_to_mask(hwloc_const_bitmap_t b, uint64_t *m)
{
    for (unsigned w = 0; w < NTH_CPUMGR_MASK_WORDS; w++) {
        uint64_t v = 0;
        for (unsigned k = 0; k < ULONGS_PER_WORD; k++)
            v |= (uint64_t)hwloc_bitmap_to_ith_ulong(b, w * ULONGS_PER_WORD + k)
                 << (k * ULONG_BITS);
        __atomic_store_n(&m[w], v, __ATOMIC_RELAXED);
    }
}
