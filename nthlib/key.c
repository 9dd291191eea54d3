/*
 * key.c -- nano-thread-specific data, after pthread_key_create(3p),
 * pthread_setspecific(3p) and pthread_key_delete(3p).
 *
 * Keys are slots of one process-wide table; each slot has a sequence
 * number, odd while the key exists, bumped by create and delete so that a
 * value stored under a deleted key is never seen under a later key that
 * reuses the slot. Each nano-thread's values hang off the `specific`
 * pointer of its descriptor, allocated on first nth_setspecific in blocks
 * of 32 keys (a nano-thread that never uses keys costs nothing). The
 * table's last NTH_KEYS_RESERVED slots are for nth_key_create_reserved.
 */
#include <errno.h>
#include <stdlib.h>
#include "sync_core.h"
#include "olock.h"

#define BLOCK 32
#define KEYS_ALL (NTH_KEYS_MAX + NTH_KEYS_RESERVED)
#define NBLOCKS ((KEYS_ALL + BLOCK - 1) / BLOCK)

static struct key_slot {
    _Atomic uint64_t seq;
    void (*destructor)(void *);
} keys[KEYS_ALL];
static uint32_t keys_lock;

struct specific_entry {
    uint64_t seq;
    void *value;
};

struct specific {
    struct specific_entry *block[NBLOCKS];
};

/* Take a free slot among keys[lo, hi). */
static int key_create_in(unsigned lo, unsigned hi, nth_key_t *key, void (*destructor)(void *))
{
    if (!key)
        return EINVAL;
    nth__keys_exit_hook_install();
    nth_olock(&keys_lock);
    for (unsigned i = lo; i < hi; i++) {
        uint64_t s = atomic_load_explicit(&keys[i].seq, memory_order_relaxed);
        if (s & 1)
            continue;
        keys[i].destructor = destructor;
        atomic_store_explicit(&keys[i].seq, s + 1, memory_order_release);
        nth_ounlock(&keys_lock);
        *key = i;
        return 0;
    }
    nth_ounlock(&keys_lock);
    return EAGAIN;
}

int nth_key_create(nth_key_t *key, void (*destructor)(void *))
{
    return key_create_in(0, NTH_KEYS_MAX, key, destructor);
}

int nth_key_create_reserved(nth_key_t *key, void (*destructor)(void *))
{
    return key_create_in(NTH_KEYS_MAX, KEYS_ALL, key, destructor);
}

int nth_key_delete(nth_key_t key)
{
    if (key >= KEYS_ALL)
        return EINVAL;
    nth_olock(&keys_lock);
    uint64_t s = atomic_load_explicit(&keys[key].seq, memory_order_relaxed);
    if (!(s & 1)) {
        nth_ounlock(&keys_lock);
        return EINVAL;
    }
    keys[key].destructor = NULL;
    atomic_store_explicit(&keys[key].seq, s + 1, memory_order_release);
    nth_ounlock(&keys_lock);
    return 0;
}

static struct specific **my_specific(void)
{
    nth_self(); /* the runtime must be running to have a descriptor */
    return (struct specific **)nth__specific_slot();
}

int nth_setspecific(nth_key_t key, const void *value)
{
    if (key >= KEYS_ALL)
        return EINVAL;
    uint64_t seq = atomic_load_explicit(&keys[key].seq, memory_order_acquire);
    if (!(seq & 1))
        return EINVAL;
    struct specific **slot = my_specific();
    if (!slot)
        return ENOMEM;
    if (!*slot) {
        if (!value)
            return 0;
        if (!(*slot = calloc(1, sizeof(struct specific))))
            return ENOMEM;
    }
    struct specific_entry **b = &(*slot)->block[key / BLOCK];
    if (!*b) {
        if (!value)
            return 0;
        if (!(*b = calloc(BLOCK, sizeof(struct specific_entry))))
            return ENOMEM;
    }
    (*b)[key % BLOCK].seq = seq;
    (*b)[key % BLOCK].value = (void *)value;
    return 0;
}

void *nth_getspecific(nth_key_t key)
{
    if (key >= KEYS_ALL)
        return NULL;
    struct specific **slot = my_specific();
    if (!slot || !*slot)
        return NULL;
    struct specific_entry *b = (*slot)->block[key / BLOCK];
    if (!b)
        return NULL;
    uint64_t seq = atomic_load_explicit(&keys[key].seq, memory_order_acquire);
    return b[key % BLOCK].seq == seq ? b[key % BLOCK].value : NULL;
}

void nth__keys_exit(void **slot)
{
    if (!*slot)
        return;
    /* POSIX: clear each value before calling its destructor, and repeat
     * while destructors set values again, up to the iteration limit. */
    for (int round = 0; round < NTH_DESTRUCTOR_ITERATIONS; round++) {
        int called = 0;
        for (unsigned k = 0; k < KEYS_ALL; k++) {
            struct specific *sp = *slot;
            struct specific_entry *b = sp->block[k / BLOCK];
            if (!b) {
                k += BLOCK - 1;
                continue;
            }
            struct specific_entry *e = &b[k % BLOCK];
            uint64_t seq = atomic_load_explicit(&keys[k].seq, memory_order_acquire);
            void (*d)(void *) = keys[k].destructor;
            if (!e->value || e->seq != seq)
                continue;
            void *v = e->value;
            e->value = NULL;
            if (d) {
                d(v);
                called = 1;
            }
        }
        if (!called)
            break;
    }
    struct specific *sp = *slot;
    *slot = NULL;
    for (unsigned i = 0; i < NBLOCKS; i++)
        free(sp->block[i]);
    free(sp);
}

void nth_keys_fork_child(void)
{
    /* A dead kernel thread may have held it: the table itself is only
     * written under it, one slot at a time, so it stays usable. */
    __atomic_store_n(&keys_lock, 0, __ATOMIC_RELAXED);
}
