/*
 * stack.c -- nano-thread stacks and descriptors, carved from large slabs.
 *
 * A unit is [guard page][stack ........ descriptor]: the descriptor sits at
 * the top of its own stack, so creating a nano-thread touches one page. A
 * size class is a (stack size, guard size) pair: a guard of other than one
 * page (pthread_attr_setguardsize, rounded up to pages; 0 = none) gets a
 * class and slabs of its own, so its units are only reused for that pair. Units
 * come from slabs of a few MiB mapped with one mmap each; the guard page of
 * each unit is a Linux 6.13+ guard region (madvise MADV_GUARD_INSTALL), which
 * does not split the mapping, so 100 000 stacks stay a few hundred VMAs under
 * vm.max_map_count. Older kernels (and emulators that accept the advice
 * without enforcing it) get mprotect(PROT_NONE): two VMAs per unit.
 *
 * Freed units go to a per-VP cache per size class (no atomics: only the
 * owner VP touches it, and a nano-thread is never switched inside these
 * calls), overflowing to a global pool per class, a liburcu lock-free stack
 * (cds_lfs: push is lock-free; pop is serialised by our spin lock against
 * ABA). Slabs are never unmapped: that is what lets nth_desc_check()
 * validate a handle against the slab registry without touching wild memory.
 * But the pages a freed stack touched are given back (MADV_DONTNEED, as
 * glibc's advise_stack_range does for an exiting thread) once the VP's cache
 * slot for its class already keeps SLOT_RESIDENT bytes of stacks, and on the
 * way to the global pool (classes above 64 KiB only): otherwise a burst of threads with
 * deep stacks stays resident for good. LIFO caches make this a bound: a unit
 * keeps its pages only at a slot depth below the slot's keep count, and its
 * depth does not change while it is cached, so each slot holds at most
 * SLOT_RESIDENT bytes of stacks with pages. The common create/join case
 * (slot depth 0) never makes the call.
 */
#include "internal.h"
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The global pool is a slow path: call liburcu's out-of-line push/pop. Its
 * inline push forms &NULL->node (a member at offset 0) on an empty stack,
 * which UBSan reports, while the library's own copies are not instrumented. */
#undef cds_lfs_push
#undef __cds_lfs_pop
extern bool cds_lfs_push(cds_lfs_stack_ptr_t s, struct cds_lfs_node *node);
extern struct cds_lfs_node *__cds_lfs_pop(cds_lfs_stack_ptr_t s);

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#define SLAB_BYTES (4u << 20)       /* a slab holds about this much */
#define SLAB_MIN_UNITS 4
#define MAX_SLABS (1 << 16)
#define MAX_CLASSES 16
#define CACHE_MAX NTH_CACHE_MAX
/* Stack bytes a VP's cache slot keeps resident (about glibc's 40 MiB stack
 * cache over 2 VPs x 4 slots). A class of stacks up to SLOT_RESIDENT /
 * CACHE_MAX (64 KiB: nthlib's 16 KiB default) never releases pages: its
 * units hold at most that each, and its bursts pay no system call. */
#define SLOT_RESIDENT (4u << 20)
#define DESC_SIZE ((sizeof(struct nth_thread) + 63) & ~(size_t)63)

struct nth_stack_class {
    size_t stack_size;              /* requested bytes, rounded to pages */
    size_t guard;                   /* bytes below the stack, whole pages, 0 none */
    size_t unit;                    /* guard + stack */
    int keep;                       /* units a VP cache slot keeps with their
                                       pages: SLOT_RESIDENT / stack_size, at
                                       most CACHE_MAX */
    struct __cds_lfs_stack pool;
    nth_spinlock_t pop_lock;
    nth_futex_lock_t grow_lock;
    int slab;                       /* slab being carved, -1 none */
    size_t bump;                    /* next unit index in it */
};

struct slab {
    char *base;                     /* NULL until published */
    size_t len;
    size_t unit;
    struct nth_stack_class *cls;
    uint64_t recip;                 /* floor(2^64 / unit) + 1: offset / unit
                                       without a divide (handle checks) */
};

static struct nth_stack_class classes[MAX_CLASSES];
static int nclasses;
static nth_futex_lock_t classes_lock = NTH_FUTEX_LOCK_INIT;
static struct slab slabs[MAX_SLABS];
static int nslabs;
static int guard_mode;              /* 0 unknown, 1 madvise, 2 mprotect */
static size_t pagesz;

size_t nth_page_size(void)
{
    if (!pagesz)
        pagesz = (size_t)sysconf(_SC_PAGESIZE);
    return pagesz;
}

int nth_guard_uses_madvise(void)
{
    return guard_mode == 1;
}

static struct nth_stack_class *class_for(size_t stack_size, size_t guard)
{
    size_t pg = nth_page_size();
    size_t sz = (stack_size + pg - 1) & ~(pg - 1);
    size_t gd = (guard + pg - 1) & ~(pg - 1);
    int n = __atomic_load_n(&nclasses, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (classes[i].stack_size == sz && classes[i].guard == gd)
            return &classes[i];
    nth_futex_lock(&classes_lock);
    struct nth_stack_class *c = NULL;
    for (int i = 0; i < nclasses; i++)
        if (classes[i].stack_size == sz && classes[i].guard == gd)
            c = &classes[i];
    if (!c && nclasses < MAX_CLASSES) {
        c = &classes[nclasses];
        c->stack_size = sz;
        c->guard = gd;
        c->unit = sz + gd;
        c->keep = sz >= SLOT_RESIDENT / CACHE_MAX ? (int)(SLOT_RESIDENT / sz) : CACHE_MAX;
        __cds_lfs_init(&c->pool);
        c->pop_lock = (nth_spinlock_t)NTH_SPINLOCK_INIT;
        c->grow_lock = (nth_futex_lock_t)NTH_FUTEX_LOCK_INIT;
        c->slab = -1;
        __atomic_store_n(&nclasses, nclasses + 1, __ATOMIC_RELEASE);
    }
    nth_futex_unlock(&classes_lock);
    return c;
}

/* Whether the guard region just installed on p is enforced. An emulator may
 * take MADV_GUARD_INSTALL as a hint, return 0 and do nothing (qemu-user 7
 * does so for every advice but MADV_DONTNEED), which would leave all stacks
 * unguarded. access(2) makes the kernel read its path from p: EFAULT when
 * the page is a guard region; otherwise the fresh page reads as "" and the
 * call fails with ENOENT. */
static int guard_enforced(const char *p)
{
    int e = errno;
    int enforced = access(p, F_OK) != 0 && errno == EFAULT;
    errno = e;
    return enforced;
}

static int guard_install(char *p, size_t len)
{
    if (guard_mode != 2) {
        if (madvise(p, len, MADV_GUARD_INSTALL) == 0 &&
            (guard_mode == 1 || guard_enforced(p))) {
            guard_mode = 1;
            return 0;
        }
        if (guard_mode == 1)
            return -1;
        guard_mode = 2;  /* older kernel, or not enforced: fall back for good */
    }
    return mprotect(p, len, PROT_NONE);
}

/* Map a new slab for c; called with c->grow_lock held. */
static int slab_new(struct nth_stack_class *c)
{
    size_t units = SLAB_BYTES / c->unit;
    if (units < SLAB_MIN_UNITS)
        units = SLAB_MIN_UNITS;
    int idx = __atomic_load_n(&nslabs, __ATOMIC_RELAXED);
    if (idx >= MAX_SLABS)
        return EAGAIN;
    size_t len = units * c->unit;
    char *base = mmap(NULL, len, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED)
        return EAGAIN;
    for (size_t i = 0; c->guard && i < units; i++) {
        if (guard_install(base + i * c->unit, c->guard) != 0) {
            munmap(base, len);
            return EAGAIN;
        }
    }
    idx = __atomic_fetch_add(&nslabs, 1, __ATOMIC_RELAXED);
    if (idx >= MAX_SLABS) {
        munmap(base, len);
        return EAGAIN;
    }
    slabs[idx].len = len;
    slabs[idx].unit = c->unit;
    slabs[idx].cls = c;
    slabs[idx].recip = UINT64_MAX / c->unit + 1;
    __atomic_store_n(&slabs[idx].base, base, __ATOMIC_RELEASE);
    c->slab = idx;
    c->bump = 0;
    return 0;
}

static struct nth_thread *desc_of_unit(char *unit_base, struct nth_stack_class *c)
{
    return (struct nth_thread *)(unit_base + c->unit - DESC_SIZE);
}

/* liburcu's inline emptiness test is a volatile load (tsan_annot.h). */
static int pool_empty(struct nth_stack_class *c)
{
    NTH_TSAN_OPAQUE_BEGIN();
    int e = cds_lfs_empty(&c->pool);
    NTH_TSAN_OPAQUE_END();
    return e;
}

static struct nth_thread *carve(struct nth_stack_class *c)
{
    struct nth_thread *t = NULL;
    nth_futex_lock(&c->grow_lock);
    if (c->slab < 0 || c->bump * c->unit >= slabs[c->slab].len) {
        if (slab_new(c) != 0)
            goto out;
    }
    struct slab *s = &slabs[c->slab];
    t = desc_of_unit(s->base + c->bump * c->unit, c);
    c->bump++;
    t->cls = c;
    t->stack_lo = (char *)t + DESC_SIZE - c->unit + c->guard;
    t->stack_size = (size_t)((char *)t - t->stack_lo);
out:
    nth_futex_unlock(&c->grow_lock);
    return t;
}

struct nth_thread *nth_unit_alloc(struct nth_vp *vp, size_t stack_size, size_t guard)
{
    /* Fast path: the VP's first cache slot holds this exact size (the
     * default stack size, typically), so no class lookup. */
    if (vp && vp->cache[0].head && vp->cache[0].cls->stack_size == stack_size &&
        vp->cache[0].cls->guard == guard) {
        struct nth_unit_cache *uc = &vp->cache[0];
        struct nth_thread *t = uc->head;
        uc->head = t->next_free;
        uc->n--;
        return t;
    }
    struct nth_stack_class *c = class_for(stack_size, guard);
    if (!c)
        return NULL;
    struct nth_thread *t = NULL;
    if (vp) {
        for (int i = 0; i < NTH_CACHE_SLOTS; i++) {
            struct nth_unit_cache *uc = &vp->cache[i];
            if (uc->cls == c && uc->head) {
                t = uc->head;
                uc->head = t->next_free;
                uc->n--;
                break;
            }
        }
    }
    if (!t && !pool_empty(c)) {
        nth_spin_lock(&c->pop_lock);
        struct cds_lfs_node *n = __cds_lfs_pop(&c->pool);
        nth_spin_unlock(&c->pop_lock);
        if (n) {
            t = caa_container_of(n, struct nth_thread, pool_node);
            NTH_TSAN_ACQUIRE(t);
        }
    }
    if (!t)
        t = carve(c);
    return t;
}

/* Give back the pages of t's stack: all of it below the page holding the
 * descriptor, which stays (next_free, pool_node, magic live there). Only
 * for a unit that is off its stack for good (freed), and only the unit's
 * own stack: stack_lo was reset from a caller's (nth_attr_setstack) one
 * before, so a caller-provided stack is never touched. The guard is below
 * stack_lo and is left alone. The pages read as zeros at the next use. */
static void stack_release(struct nth_thread *t)
{
    char *hi = (char *)((uintptr_t)t & ~(uintptr_t)(nth_page_size() - 1));
    if (hi > (char *)t->stack_lo)
        (void)madvise(t->stack_lo, (size_t)(hi - (char *)t->stack_lo), MADV_DONTNEED);
}

void nth_unit_free(struct nth_vp *vp, struct nth_thread *t)
{
    struct nth_stack_class *c = t->cls;
    __atomic_store_n(&t->magic, NTH_MAGIC_FREE, __ATOMIC_RELEASE);
    /* A nano-thread on a caller's stack (nth_attr_setstack) borrowed these. */
    t->stack_lo = (char *)t + DESC_SIZE - c->unit + c->guard;
    t->stack_size = (size_t)((char *)t - t->stack_lo);
    if (vp && vp->cache[0].cls == c && vp->cache[0].n < CACHE_MAX) {
        /* The default size's slot, the one nth_unit_alloc looks at first. */
        if (vp->cache[0].n >= c->keep)
            stack_release(t);
        t->next_free = vp->cache[0].head;
        vp->cache[0].head = t;
        vp->cache[0].n++;
        return;
    }
    if (vp) {
        struct nth_unit_cache *slot = NULL;
        for (int i = 0; i < NTH_CACHE_SLOTS; i++) {
            if (vp->cache[i].cls == c) { slot = &vp->cache[i]; break; }
            if (!slot && !vp->cache[i].cls)
                slot = &vp->cache[i];
        }
        if (slot && slot->cls != c && slot->cls == NULL) {
            /* The inline fast paths (nth_unit_get, nth_create) match a
             * slot by stack size alone, for the one-page guard: a slot of
             * another guard gets a size no request has. */
            slot->stack_size = c->guard == nth_page_size() ? c->stack_size : 0;
            slot->keep = c->keep;
            slot->cls = c;
        }
        if (slot && slot->cls == c && slot->n < CACHE_MAX) {
            if (slot->n >= c->keep)
                stack_release(t);
            t->next_free = slot->head;
            slot->head = t;
            slot->n++;
            return;
        }
    }
    if (c->keep < CACHE_MAX)
        stack_release(t);
    NTH_TSAN_RELEASE(t);
    NTH_TSAN_OPAQUE_BEGIN();
    cds_lfs_node_init(&t->pool_node);
    NTH_TSAN_OPAQUE_END();
    cds_lfs_push(&c->pool, &t->pool_node);
}

static int last_hit;   /* slab of the previous lookup: handles cluster */

static int in_slab(int i, uintptr_t a)
{
    char *b = __atomic_load_n(&slabs[i].base, __ATOMIC_ACQUIRE);
    return b && a >= (uintptr_t)b && a < (uintptr_t)b + slabs[i].len;
}

/* Linear in the number of slabs (a few hundred for 100 000 nano-threads),
 * after a one-compare guess at the slab of the previous lookup. */
static struct slab *slab_of(uintptr_t a)
{
    int n = __atomic_load_n(&nslabs, __ATOMIC_ACQUIRE);
    if (n > MAX_SLABS)
        n = MAX_SLABS;
    int h = __atomic_load_n(&last_hit, __ATOMIC_RELAXED);
    if (h < n && in_slab(h, a))
        return &slabs[h];
    for (int i = n - 1; i >= 0; i--) {
        if (in_slab(i, a)) {
            __atomic_store_n(&last_hit, i, __ATOMIC_RELAXED);
            return &slabs[i];
        }
    }
    return NULL;
}

struct nth_thread *nth_desc_check(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    if (!p)
        return NULL;
    if (p == &nth_main_thread)
        return &nth_main_thread;
    struct slab *s = slab_of(a);
    if (!s)
        return NULL;
    /* off % unit by multiplication (a 64-bit divide costs tens of cycles on
     * every join): exact because off < slab length << 2^64 / unit. */
    uint64_t off = (uint64_t)(a - (uintptr_t)s->base);
    uint64_t q = (uint64_t)(((unsigned __int128)off * s->recip) >> 64);
    if (off - q * s->unit != s->unit - DESC_SIZE)
        return NULL;
    struct nth_thread *t = (struct nth_thread *)p;
    if (__atomic_load_n(&t->magic, __ATOMIC_ACQUIRE) != NTH_MAGIC_LIVE)
        return NULL;
    return t;
}

struct nth_thread *nth_guard_owner(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    struct slab *s = slab_of(a);
    if (!s)
        return NULL;
    size_t off = (a - (uintptr_t)s->base) % s->unit;
    if (off >= s->cls->guard)
        return NULL;
    uintptr_t unit = a - off;
    return (struct nth_thread *)(unit + s->unit - DESC_SIZE);
}

/* nth_getstack (nth.h): a runtime stack is reported up to the end of its
 * unit, the descriptor at its top included, as glibc's pthread_getattr_np
 * includes the thread descriptor and static TLS at the top of a stack: the
 * size is then the one asked for (rounded to pages). */
int nth_getstack(nth_t th, void **addr, size_t *bytes, size_t *guard)
{
    struct nth_thread *t = nth_desc_check(th);
    if (!t || !addr || !bytes || !guard || !t->stack_lo)
        return EINVAL;
    *addr = t->stack_lo;
    if (t->flags & NTH_TF_USTACK) {
        *bytes = t->stack_size;
        *guard = 0;
    } else {
        *bytes = t->cls->stack_size;
        *guard = t->cls->guard;
    }
    return 0;
}

void nth_stack_fork_child(void)
{
    /* The pools are liburcu stacks: a pop or push cut short by the fork is
     * one compare-and-swap that happened or did not, so they are whole;
     * only the locks a dead kernel thread may hold need resetting. A slab
     * being carved at the fork stays half published (base NULL): its
     * units are lost, nothing else. */
    classes_lock = (nth_futex_lock_t)NTH_FUTEX_LOCK_INIT;
    for (int i = 0; i < MAX_CLASSES; i++) {
        classes[i].pop_lock = (nth_spinlock_t)NTH_SPINLOCK_INIT;
        classes[i].grow_lock = (nth_futex_lock_t)NTH_FUTEX_LOCK_INIT;
    }
}
