/* jrandom.h -- java.util.Random's 48-bit linear congruential generator
 * (Java SE API documentation of java.util.Random; Knuth, TAOCP vol. 2,
 * 3.2.1), so the kernels' inputs are generated as the Java Grande codes
 * generate them. One generator per program: not thread-safe. */
#ifndef NTH_BENCH_JRANDOM_H
#define NTH_BENCH_JRANDOM_H

#include <stdint.h>

static uint64_t jr_seed;

static inline void jr_init(uint64_t s) { jr_seed = (s ^ 0x5DEECE66DULL) & ((1ULL << 48) - 1); }

static inline uint32_t jr_next(int bits)
{
    jr_seed = (jr_seed * 0x5DEECE66DULL + 0xBULL) & ((1ULL << 48) - 1);
    return (uint32_t)(jr_seed >> (48 - bits));
}

/* Uniform in [0, 1), 53 random bits, as Random.nextDouble(). */
static inline double jr_double(void)
{
    uint64_t hi = jr_next(26), lo = jr_next(27);
    return (double)((hi << 27) + lo) * 0x1.0p-53;
}

#endif /* NTH_BENCH_JRANDOM_H */
