/*
 * ldso_lock.c -- finding the dynamic loader's own locks, so that a
 * nano-thread whose kernel thread holds one of them never leaves that
 * kernel thread (nth_ldso_held, used by nth_wait, nth_yield, nth_join and
 * nth_move_to_vp).
 *
 * Why: glibc's ld.so runs the constructors of dlopen(3p) and the
 * destructors of dlclose(3p) holding its load lock, a recursive lock whose
 * owner is a kernel thread (glibc's dl_load_lock; also dl_load_write_lock,
 * taken by dl_iterate_phdr, and dl_load_tls_lock, by TLS set-up). A
 * constructor that creates and joins threads, sleeps or waits on a lock
 * would otherwise be switched out and resumed on another VP or a stand-in:
 * its unlock there fails (not the owner) and leaves the lock held for ever,
 * and meanwhile the nano-threads its old kernel thread runs enter ld.so
 * "recursively" under a lock they do not hold. While the caller's kernel
 * thread owns one of these locks, a wait blocks that kernel thread
 * instead (the VP is lent to a stand-in as for a system call, DESIGN
 * invariant 4), so the constructor ends on the kernel thread it began on.
 *
 * How: the locks are fields of ld.so's `_rtld_global` (GLIBC_PRIVATE),
 * declared one after the other as pthread_mutex_t (glibc's
 * sysdeps/generic/ldsodefs.h). Their offsets change between glibc
 * versions, so they are found, not assumed: inside a dl_iterate_phdr
 * callback this kernel thread holds dl_load_write_lock, the one recursive
 * mutex in `_rtld_global` it holds once more than before the call (a
 * start inside a constructor holds dl_load_lock already); dl_load_lock is
 * the mutex just before it and (glibc 2.34 on) dl_load_tls_lock the one
 * just after, each checked to be a recursive mutex that is idle or held
 * by us (glibc 2.36: offsets 2568, 2608, 2648 of 4336). Anything else
 * found (no symbol: a static program, another libc; no single match) turns
 * the check off, and the runtime behaves as before (a constructor that
 * waits may hang, the README's limit).
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

const int *nth_ldso_owner;
int nth_ldso_nlocks;

#define PROBE_HELD_MAX 8

struct ldso_probe {
    char *lo;
    size_t size;
    int tid;
    /* Mutexes this thread held before the callback, with their counts:
     * started inside a constructor, it holds dl_load_lock already. */
    size_t held_off[PROBE_HELD_MAX];
    unsigned held_count[PROBE_HELD_MAX];
    int nheld;
    char *hit;
    int nhits;
};

/* Times this thread held the recursive mutex at off before the callback. */
static unsigned held_before(const struct ldso_probe *p, size_t off)
{
    for (int i = 0; i < p->nheld; i++)
        if (p->held_off[i] == off)
            return p->held_count[i];
    return 0;
}

static int owned_recursive(const struct ldso_probe *p, size_t off)
{
    const pthread_mutex_t *m = (const pthread_mutex_t *)(const void *)(p->lo + off);
    return m->__data.__owner == p->tid && m->__data.__count >= 1 &&
           m->__data.__kind == PTHREAD_MUTEX_RECURSIVE_NP;
}

static int recursive_idle(const char *p)
{
    const pthread_mutex_t *m = (const pthread_mutex_t *)(const void *)p;
    return m->__data.__kind == PTHREAD_MUTEX_RECURSIVE_NP && m->__data.__owner == 0 &&
           m->__data.__count == 0 && m->__data.__lock == 0;
}

static int probe_cb(struct dl_phdr_info *info, size_t sz, void *arg)
{
    (void)info;
    (void)sz;
    struct ldso_probe *p = arg;
    /* The struct's mutexes are 8-aligned; scan every candidate. The one
     * taken for this call is held once more than before it. */
    for (size_t off = 0; off + sizeof(pthread_mutex_t) <= p->size; off += 8) {
        const pthread_mutex_t *m = (const pthread_mutex_t *)(const void *)(p->lo + off);
        if (owned_recursive(p, off) && m->__data.__count == held_before(p, off) + 1) {
            p->hit = p->lo + off;
            p->nhits++;
        }
    }
    return 1;                    /* one call is enough: the lock is held now */
}

int nth_ldso_locks_find(void)
{
    if (__atomic_load_n(&nth_ldso_owner, __ATOMIC_ACQUIRE))
        return 0;
    void *g = dlsym(RTLD_DEFAULT, "_rtld_global");
    Dl_info di;
    const ElfW(Sym) *sym = NULL;
    if (!g || !dladdr1(g, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
        sym->st_size < 3 * sizeof(pthread_mutex_t))
        return ENOENT;
    struct ldso_probe p;
    memset(&p, 0, sizeof p);
    p.lo = g;
    p.size = sym->st_size;
    p.tid = (int)syscall(SYS_gettid);
    for (size_t off = 0; off + sizeof(pthread_mutex_t) <= p.size; off += 8) {
        if (!owned_recursive(&p, off))
            continue;
        if (p.nheld == PROBE_HELD_MAX)
            return ENOENT;
        p.held_off[p.nheld] = off;
        p.held_count[p.nheld++] =
            ((const pthread_mutex_t *)(const void *)(p.lo + off))->__data.__count;
    }
    dl_iterate_phdr(probe_cb, &p);
    if (p.nhits != 1 || p.hit < p.lo + sizeof(pthread_mutex_t))
        return ENOENT;
    char *load = p.hit - sizeof(pthread_mutex_t);
    char *tls = p.hit + sizeof(pthread_mutex_t);
    /* Idle, or held by us already (the runtime starting inside a
     * constructor, or in a dl_iterate_phdr callback). */
    if (!recursive_idle(load) && !held_before(&p, (size_t)(load - p.lo)))
        return ENOENT;
    int n = 2;
    if (tls + sizeof(pthread_mutex_t) <= p.lo + p.size &&
        (recursive_idle(tls) || held_before(&p, (size_t)(tls - p.lo))))
        n = 3;
    nth_ldso_nlocks = n;
    __atomic_store_n(&nth_ldso_owner, &((pthread_mutex_t *)(void *)load)->__data.__owner,
                     __ATOMIC_RELEASE);
    return 0;
}
