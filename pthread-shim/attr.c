/*
 * attr.c -- thread attributes. pthread_attr_t keeps glibc's layout and
 * glibc's own functions fill and read it (the shim forwards to them), so
 * binaries and libc agree on it; pthread_create reads it back through
 * them. Scheduling policy, priority, inheritance and scope are stored and
 * returned but do not change the nano-thread scheduler. A stack given with
 * pthread_attr_setstack is the nano-thread's stack (nth_attr_setstack):
 * no guard page, and pthread_create returns EINVAL below 16 KiB. Otherwise
 * the guard size is applied (nth_attr_setguardsize: rounded up to pages,
 * 0 = none).
 */
#include "shim.h"

#define FWD(name, params, args)                                             \
    SHIM_DECL(name)                                                         \
    int nth_shim_##name params { return REAL(name) args; }                  \
    SHIM_EXPORT(name)

typedef pthread_attr_t A;
FWD(pthread_attr_init, (A *a), (a))
FWD(pthread_attr_destroy, (A *a), (a))
FWD(pthread_attr_setdetachstate, (A *a, int v), (a, v))
FWD(pthread_attr_getdetachstate, (const A *a, int *v), (a, v))
FWD(pthread_attr_setguardsize, (A *a, size_t v), (a, v))
FWD(pthread_attr_getguardsize, (const A *a, size_t *v), (a, v))
FWD(pthread_attr_setinheritsched, (A *a, int v), (a, v))
FWD(pthread_attr_getinheritsched, (const A *restrict a, int *restrict v), (a, v))
FWD(pthread_attr_setschedparam, (A *restrict a, const struct sched_param *restrict v), (a, v))
FWD(pthread_attr_getschedparam, (const A *restrict a, struct sched_param *restrict v), (a, v))
FWD(pthread_attr_setschedpolicy, (A *a, int v), (a, v))
FWD(pthread_attr_getschedpolicy, (const A *restrict a, int *restrict v), (a, v))
FWD(pthread_attr_setscope, (A *a, int v), (a, v))
FWD(pthread_attr_getscope, (const A *restrict a, int *restrict v), (a, v))
FWD(pthread_attr_setstack, (A *a, void *s, size_t n), (a, s, n))
FWD(pthread_attr_getstack, (const A *restrict a, void **restrict s, size_t *restrict n), (a, s, n))
FWD(pthread_attr_setstacksize, (A *a, size_t v), (a, v))
FWD(pthread_attr_getstacksize, (const A *restrict a, size_t *restrict v), (a, v))
FWD(pthread_attr_setaffinity_np, (A *a, size_t n, const cpu_set_t *s), (a, n, s))
FWD(pthread_attr_getaffinity_np, (const A *a, size_t n, cpu_set_t *s), (a, n, s))
FWD(pthread_attr_setsigmask_np, (A *a, const sigset_t *s), (a, s))
FWD(pthread_attr_getsigmask_np, (const A *a, sigset_t *s), (a, s))
FWD(pthread_getattr_default_np, (A *a), (a))
FWD(pthread_setattr_default_np, (const A *a), (a))
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
FWD(pthread_attr_setstackaddr, (A *a, void *s), (a, s))
FWD(pthread_attr_getstackaddr, (const A *restrict a, void **restrict s), (a, s))
#pragma GCC diagnostic pop
