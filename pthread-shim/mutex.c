/*
 * mutex.c -- mutexes and spin locks on nthlib's nth_mutex_t, which fits in
 * glibc's 40-byte pthread_mutex_t. After pthread_mutex_lock(3p),
 * pthread_mutexattr_settype(3p), pthread_spin_lock(3p).
 *
 * glibc's static initialisers: PTHREAD_MUTEX_INITIALIZER is all zero, a
 * valid nth_mutex_t; the _NP ones (recursive, error-checking, adaptive)
 * put the kind (1, 2, 3) at byte 16, where nth_mutex_t keeps its owner
 * pointer, which is never that small: the first call on such a mutex turns
 * it into an nth mutex of that type.
 *
 * Attributes are kept in glibc's 4-byte pthread_mutexattr_t. Refused with
 * ENOTSUP, as POSIX allows, rather than half-working: process-shared
 * mutexes, robust mutexes, the priority-inheritance and -protection
 * protocols.
 */
#include <errno.h>
#include "shim.h"

/* pthread_mutexattr_t bits. The setters keep a refused robust or
 * process-shared request (and still return ENOTSUP) so that init can
 * refuse it too: a program that ignores the setter's error must not get a
 * private, non-robust mutex that silently misbehaves (issue 4). */
#define MA_TYPE 0x3
#define MA_ROBUST_ASKED 0x200
#define MA_PSHARED_ASKED 0x400

nth_mutex_t *shim_mutex(pthread_mutex_t *pm)
{
    nth_mutex_t *m = (nth_mutex_t *)pm;
    uintptr_t k = (uintptr_t)__atomic_load_n(&m->__owner, __ATOMIC_ACQUIRE);
    if (__builtin_expect(k - 1 < 3, 0) && m->__type == 0 && m->__state == 0) {
        static const uint32_t to_type[] = { NTH_MUTEX_RECURSIVE, NTH_MUTEX_ERRORCHECK, NTH_MUTEX_NORMAL };
        __atomic_store_n(&m->__type, to_type[k - 1], __ATOMIC_SEQ_CST);
        void *expect = (void *)k;
        __atomic_compare_exchange_n(&m->__owner, &expect, NULL, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
    return m;
}

#define MUTEX_FN(name, call)                                \
    SHIM_DECL(name)                                         \
    int nth_shim_##name(pthread_mutex_t *m) { return call(shim_mutex(m)); } \
    SHIM_EXPORT(name)

MUTEX_FN(pthread_mutex_lock, nth_mutex_lock)
MUTEX_FN(pthread_mutex_trylock, nth_mutex_trylock)
MUTEX_FN(pthread_mutex_unlock, nth_mutex_unlock)
MUTEX_FN(pthread_mutex_destroy, nth_mutex_destroy)

SHIM_DECL(pthread_mutex_init)
int nth_shim_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
    nth_mutexattr_t a;
    nth_mutexattr_init(&a);
    if (attr && (*(const int *)attr & (MA_ROBUST_ASKED | MA_PSHARED_ASKED)))
        return ENOTSUP;          /* as the attribute setter said */
    if (attr)
        nth_mutexattr_settype(&a, *(const int *)attr & MA_TYPE);
    return nth_mutex_init((nth_mutex_t *)m, &a);
}
SHIM_EXPORT(pthread_mutex_init)

SHIM_DECL(pthread_mutex_timedlock)
int nth_shim_pthread_mutex_timedlock(pthread_mutex_t *restrict m, const struct timespec *restrict abstime)
{
    return nth_mutex_timedlock(shim_mutex(m), abstime);
}
SHIM_EXPORT(pthread_mutex_timedlock)

SHIM_DECL(pthread_mutex_clocklock)
int nth_shim_pthread_mutex_clocklock(pthread_mutex_t *restrict m, clockid_t clock, const struct timespec *restrict abstime)
{
    return nth_mutex_clocklock(shim_mutex(m), clock, abstime);
}
SHIM_EXPORT(pthread_mutex_clocklock)

/* Robust mutexes are refused at the attribute, so no mutex is robust. */
SHIM_DECL(pthread_mutex_consistent)
int nth_shim_pthread_mutex_consistent(pthread_mutex_t *m)
{
    (void)m;
    return EINVAL;
}
SHIM_EXPORT(pthread_mutex_consistent)

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
SHIM_DECL(pthread_mutex_consistent_np)
int nth_shim_pthread_mutex_consistent_np(pthread_mutex_t *m) { (void)m; return EINVAL; }
#pragma GCC diagnostic pop
SHIM_EXPORT(pthread_mutex_consistent_np)

SHIM_DECL(pthread_mutex_getprioceiling)
int nth_shim_pthread_mutex_getprioceiling(const pthread_mutex_t *restrict m, int *restrict c)
{
    (void)m;
    (void)c;
    return EINVAL;               /* no mutex has the PROTECT protocol */
}
SHIM_EXPORT(pthread_mutex_getprioceiling)

SHIM_DECL(pthread_mutex_setprioceiling)
int nth_shim_pthread_mutex_setprioceiling(pthread_mutex_t *restrict m, int c, int *restrict old)
{
    (void)m;
    (void)c;
    (void)old;
    return EINVAL;
}
SHIM_EXPORT(pthread_mutex_setprioceiling)

/* ---- attributes ------------------------------------------------------------ */

#define ATTR(a) (*(int *)(a))
#define CATTR(a) (*(const int *)(a))

SHIM_DECL(pthread_mutexattr_init)
int nth_shim_pthread_mutexattr_init(pthread_mutexattr_t *a) { ATTR(a) = 0; return 0; }
SHIM_EXPORT(pthread_mutexattr_init)

SHIM_DECL(pthread_mutexattr_destroy)
int nth_shim_pthread_mutexattr_destroy(pthread_mutexattr_t *a) { (void)a; return 0; }
SHIM_EXPORT(pthread_mutexattr_destroy)

SHIM_DECL(pthread_mutexattr_settype)
int nth_shim_pthread_mutexattr_settype(pthread_mutexattr_t *a, int type)
{
    int t;
    switch (type) {
    case PTHREAD_MUTEX_NORMAL: t = NTH_MUTEX_NORMAL; break;
    case PTHREAD_MUTEX_RECURSIVE: t = NTH_MUTEX_RECURSIVE; break;
    case PTHREAD_MUTEX_ERRORCHECK: t = NTH_MUTEX_ERRORCHECK; break;
    case PTHREAD_MUTEX_ADAPTIVE_NP: t = NTH_MUTEX_NORMAL | 0x100; break;
    default: return EINVAL;
    }
    ATTR(a) = (ATTR(a) & ~(MA_TYPE | 0x100)) | t;
    return 0;
}
SHIM_EXPORT(pthread_mutexattr_settype)

SHIM_DECL(pthread_mutexattr_gettype)
int nth_shim_pthread_mutexattr_gettype(const pthread_mutexattr_t *a, int *type)
{
    int v = CATTR(a);
    *type = (v & 0x100) ? PTHREAD_MUTEX_ADAPTIVE_NP
          : (v & MA_TYPE) == NTH_MUTEX_RECURSIVE ? PTHREAD_MUTEX_RECURSIVE
          : (v & MA_TYPE) == NTH_MUTEX_ERRORCHECK ? PTHREAD_MUTEX_ERRORCHECK
          : PTHREAD_MUTEX_NORMAL;
    return 0;
}
SHIM_EXPORT(pthread_mutexattr_gettype)

int pthread_mutexattr_setkind_np(pthread_mutexattr_t *a, int kind);
int pthread_mutexattr_getkind_np(const pthread_mutexattr_t *a, int *kind);
SHIM_DECL(pthread_mutexattr_setkind_np)
int nth_shim_pthread_mutexattr_setkind_np(pthread_mutexattr_t *a, int kind) { return nth_shim_pthread_mutexattr_settype(a, kind); }
SHIM_EXPORT(pthread_mutexattr_setkind_np)
SHIM_DECL(pthread_mutexattr_getkind_np)
int nth_shim_pthread_mutexattr_getkind_np(const pthread_mutexattr_t *a, int *kind) { return nth_shim_pthread_mutexattr_gettype(a, kind); }
SHIM_EXPORT(pthread_mutexattr_getkind_np)

SHIM_DECL(pthread_mutexattr_setpshared)
int nth_shim_pthread_mutexattr_setpshared(pthread_mutexattr_t *a, int pshared)
{
    if (pshared == PTHREAD_PROCESS_PRIVATE) {
        ATTR(a) &= ~MA_PSHARED_ASKED;
        return 0;
    }
    if (pshared != PTHREAD_PROCESS_SHARED)
        return EINVAL;
    ATTR(a) |= MA_PSHARED_ASKED; /* pthread_mutex_init refuses it */
    shim_note_refused("pthread_mutexattr_setpshared(PTHREAD_PROCESS_SHARED)");
    return ENOTSUP;
}
SHIM_EXPORT(pthread_mutexattr_setpshared)

SHIM_DECL(pthread_mutexattr_getpshared)
int nth_shim_pthread_mutexattr_getpshared(const pthread_mutexattr_t *restrict a, int *restrict pshared)
{
    (void)a;
    *pshared = PTHREAD_PROCESS_PRIVATE;
    return 0;
}
SHIM_EXPORT(pthread_mutexattr_getpshared)

SHIM_DECL(pthread_mutexattr_setrobust)
int nth_shim_pthread_mutexattr_setrobust(pthread_mutexattr_t *a, int robust)
{
    if (robust == PTHREAD_MUTEX_STALLED) {
        ATTR(a) &= ~MA_ROBUST_ASKED;
        return 0;
    }
    if (robust != PTHREAD_MUTEX_ROBUST)
        return EINVAL;
    ATTR(a) |= MA_ROBUST_ASKED;  /* pthread_mutex_init refuses it */
    shim_note_refused("pthread_mutexattr_setrobust(PTHREAD_MUTEX_ROBUST)");
    return ENOTSUP;
}
SHIM_EXPORT(pthread_mutexattr_setrobust)

SHIM_DECL(pthread_mutexattr_getrobust)
int nth_shim_pthread_mutexattr_getrobust(const pthread_mutexattr_t *a, int *robust)
{
    (void)a;
    *robust = PTHREAD_MUTEX_STALLED;
    return 0;
}
SHIM_EXPORT(pthread_mutexattr_getrobust)

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
SHIM_DECL(pthread_mutexattr_setrobust_np)
int nth_shim_pthread_mutexattr_setrobust_np(pthread_mutexattr_t *a, int r) { return nth_shim_pthread_mutexattr_setrobust(a, r); }
SHIM_EXPORT(pthread_mutexattr_setrobust_np)
SHIM_DECL(pthread_mutexattr_getrobust_np)
int nth_shim_pthread_mutexattr_getrobust_np(pthread_mutexattr_t *a, int *r) { return nth_shim_pthread_mutexattr_getrobust(a, r); }
#pragma GCC diagnostic pop
SHIM_EXPORT(pthread_mutexattr_getrobust_np)

SHIM_DECL(pthread_mutexattr_setprotocol)
int nth_shim_pthread_mutexattr_setprotocol(pthread_mutexattr_t *a, int protocol)
{
    (void)a;
    if (protocol == PTHREAD_PRIO_NONE)
        return 0;
    return (protocol == PTHREAD_PRIO_INHERIT || protocol == PTHREAD_PRIO_PROTECT) ? ENOTSUP : EINVAL;
}
SHIM_EXPORT(pthread_mutexattr_setprotocol)

SHIM_DECL(pthread_mutexattr_getprotocol)
int nth_shim_pthread_mutexattr_getprotocol(const pthread_mutexattr_t *restrict a, int *restrict protocol)
{
    (void)a;
    *protocol = PTHREAD_PRIO_NONE;
    return 0;
}
SHIM_EXPORT(pthread_mutexattr_getprotocol)

SHIM_DECL(pthread_mutexattr_setprioceiling)
int nth_shim_pthread_mutexattr_setprioceiling(pthread_mutexattr_t *a, int c) { (void)a; (void)c; return EINVAL; }
SHIM_EXPORT(pthread_mutexattr_setprioceiling)

SHIM_DECL(pthread_mutexattr_getprioceiling)
int nth_shim_pthread_mutexattr_getprioceiling(const pthread_mutexattr_t *restrict a, int *restrict c)
{
    (void)a;
    *c = 0;
    return 0;
}
SHIM_EXPORT(pthread_mutexattr_getprioceiling)

/* ---- glibc's old internal aliases (libstdc++ and old binaries) ------------ */

#define ALIAS1(alias, target, T)                                              \
    int alias(T a);                                                           \
    SHIM_DECL(alias)                                                          \
    int nth_shim_##alias(T a) { return nth_shim_##target(a); }                \
    SHIM_EXPORT(alias)

ALIAS1(__pthread_mutex_lock, pthread_mutex_lock, pthread_mutex_t *)
ALIAS1(__pthread_mutex_trylock, pthread_mutex_trylock, pthread_mutex_t *)
ALIAS1(__pthread_mutex_unlock, pthread_mutex_unlock, pthread_mutex_t *)
ALIAS1(__pthread_mutex_destroy, pthread_mutex_destroy, pthread_mutex_t *)
ALIAS1(__pthread_mutexattr_init, pthread_mutexattr_init, pthread_mutexattr_t *)
ALIAS1(__pthread_mutexattr_destroy, pthread_mutexattr_destroy, pthread_mutexattr_t *)

int __pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a);
SHIM_DECL(__pthread_mutex_init)
int nth_shim___pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a) { return nth_shim_pthread_mutex_init(m, a); }
SHIM_EXPORT(__pthread_mutex_init)

int __pthread_mutexattr_settype(pthread_mutexattr_t *a, int t);
SHIM_DECL(__pthread_mutexattr_settype)
int nth_shim___pthread_mutexattr_settype(pthread_mutexattr_t *a, int t) { return nth_shim_pthread_mutexattr_settype(a, t); }
SHIM_EXPORT(__pthread_mutexattr_settype)

/* ---- spin locks: an int; waiting spins, then lets the VP run others ------ */

SHIM_DECL(pthread_spin_init)
int nth_shim_pthread_spin_init(pthread_spinlock_t *s, int pshared)
{
    (void)pshared;               /* a plain atomic int works across processes */
    __atomic_store_n(s, 0, __ATOMIC_RELEASE);
    return 0;
}
SHIM_EXPORT(pthread_spin_init)

SHIM_DECL(pthread_spin_destroy)
int nth_shim_pthread_spin_destroy(pthread_spinlock_t *s) { (void)s; return 0; }
SHIM_EXPORT(pthread_spin_destroy)

SHIM_DECL(pthread_spin_trylock)
int nth_shim_pthread_spin_trylock(pthread_spinlock_t *s)
{
    return __atomic_exchange_n(s, 1, __ATOMIC_ACQUIRE) ? EBUSY : 0;
}
SHIM_EXPORT(pthread_spin_trylock)

SHIM_DECL(pthread_spin_lock)
int nth_shim_pthread_spin_lock(pthread_spinlock_t *s)
{
    /* The holder may be a nano-thread waiting for this VP: after a short
     * spin, yield so that it can run and release the lock. */
    for (unsigned i = 0;; i++) {
        if (!__atomic_load_n(s, __ATOMIC_RELAXED) && !__atomic_exchange_n(s, 1, __ATOMIC_ACQUIRE))
            return 0;
        if (i >= 100) {
            nth_yield();
            i = 0;
        } else {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#elif defined(__aarch64__)
            __asm__ __volatile__("yield");
#endif
        }
    }
}
SHIM_EXPORT(pthread_spin_lock)

SHIM_DECL(pthread_spin_unlock)
int nth_shim_pthread_spin_unlock(pthread_spinlock_t *s)
{
    __atomic_store_n(s, 0, __ATOMIC_RELEASE);
    return 0;
}
SHIM_EXPORT(pthread_spin_unlock)
