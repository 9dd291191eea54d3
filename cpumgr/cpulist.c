/*
 * cpulist.c -- `--cpus` parsing: the Linux cpuset list format (cpuset(7),
 * "List format") without its stride extension, and strict, since a CPU
 * set that silently comes out smaller than asked is hard to notice.
 */
#include <errno.h>
#include <sched.h>

#include "cpulist.h"
#include "nth/cpumgr_shm.h"

/* A decimal number below NTH_CPUMGR_MAX_CPUS at *p; advances *p. */
static int number(const char **p, unsigned *out)
{
    const char *s = *p;
    unsigned v = 0;
    if (*s < '0' || *s > '9')
        return EINVAL;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10u + (unsigned)(*s - '0');
        if (v >= NTH_CPUMGR_MAX_CPUS)
            return EINVAL;
    }
    *p = s;
    *out = v;
    return 0;
}

int cm_cpulist_parse(const char *s, hwloc_bitmap_t b)
{
    hwloc_bitmap_zero(b);
    if (!s || !*s)
        return EINVAL;
    for (;;) {
        unsigned lo, hi;
        if (number(&s, &lo))
            goto bad;
        hi = lo;
        if (*s == '-') {
            s++;
            if (number(&s, &hi) || hi < lo)
                goto bad;
        }
        hwloc_bitmap_set_range(b, lo, (int)hi);
        if (*s == '\0')
            return 0;
        if (*s != ',')
            goto bad;
        s++;
    }
bad:
    hwloc_bitmap_zero(b);
    return EINVAL;
}

int cm_cpulist_allowed(hwloc_bitmap_t b)
{
    cpu_set_t set;
    hwloc_bitmap_zero(b);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return errno;
    for (unsigned c = 0; c < NTH_CPUMGR_MAX_CPUS && c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            hwloc_bitmap_set(b, c);
    return 0;
}
