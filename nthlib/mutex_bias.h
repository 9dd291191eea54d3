/*
 * mutex_bias.h -- biased ("reserved") locking: the kernel thread that keeps
 * using a lock word changes it with plain loads and stores instead of
 * atomic read-modify-writes.
 *
 * After Kawachiya, Koseki and Onodera, "Lock reservation" (OOPSLA 2002)
 * and Dice, Moir and Scherer, "Quickly reacquirable locks", with the
 * asymmetric Dekker of liburcu's urcu-memb flavour: the owner's side has
 * only a compiler barrier, the revoker's side a
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which runs a full barrier
 * on every running thread of the process.
 *
 * The owner of a bias is a KERNEL THREAD, not a VP or a nano-thread:
 * nano-threads that run on one kernel thread never run at the same time,
 * so program order orders them; a VP may have two kernel threads at once
 * (a blocking stand-in, the stall watchdog's stand-in), and a nano-thread
 * may continue on another kernel thread (steal, nth_move_to_vp), where it
 * simply is not the owner any more.
 *
 * The bias word (32 bits in the object): 0 unclaimed, 1..NTH_BIAS_MAX_IDS
 * the owner's id, NTH_BIAS_REVOKING, NTH_BIAS_REVOKED (for good: from
 * then on only the object's ordinary atomic protocol). Invariant: while
 * the word holds an id, only that kernel thread writes the state word.
 * Anyone else first makes the word NTH_BIAS_REVOKED (nth_bias_settle).
 *
 * Owner fast path (nth_bias_fast): announce the object in the caller's
 * slot, compiler barrier, check the bias is the caller's, plain
 * (relaxed atomic) state change, clear the slot with a release store.
 * Revoker: CAS id -> REVOKING, membarrier, wait until the owner's slot no
 * longer names the object (acquire), store REVOKED (release). Either the
 * membarrier's barrier on the owner falls after its slot store, and the
 * revoker sees the slot and waits for the fast path to end (whose state
 * store its acquire then sees), or it falls before, and the owner's bias
 * load sees REVOKING and takes the atomic path.
 */
#ifndef NTH_MUTEX_BIAS_H
#define NTH_MUTEX_BIAS_H

#include <stddef.h>
#include <stdint.h>
#include "olock.h"

#define NTH_BIAS_MAX_IDS 1024u            /* kernel threads that may own biases */
#define NTH_BIAS_NOID 0xfffffffdu         /* an id no bias word ever holds */
#define NTH_BIAS_REVOKING 0xfffffffeu
#define NTH_BIAS_REVOKED 0xffffffffu

/* One per kernel thread that owns an id, a cache line each (the owner
 * writes it twice per fast path). Never freed: a revoker may read the slot
 * of a kernel thread that has exited. */
struct nth_bias_slot {
    const void *in;              /* object whose fast path is running, or NULL */
    uint32_t id;                 /* this slot's id, or NTH_BIAS_NOID */
} __attribute__((aligned(64)));

/* The calling kernel thread's slot; NULL until its first slow path. Read
 * it only where no switch can intervene before its last use: a
 * nano-thread may continue on another kernel thread after any switch. */
extern __thread struct nth_bias_slot *nth_bias_me
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* If the bias word *bias names the calling kernel thread and *state ==
 * from, set *state = to with plain accesses and return 1; else change
 * nothing and return 0 (then call nth_bias_settle). obj identifies the
 * object to revokers. No atomic read-modify-write, no fence. */
static inline int nth_bias_fast(const uint32_t *bias, uint32_t *state, uint32_t from, uint32_t to,
                                const void *obj)
{
    struct nth_bias_slot *s = nth_bias_me;
    if (__builtin_expect(!s, 0))
        return 0;
    /* Release: a revoker whose acquire load reads this value sees our
     * earlier critical sections (TSan too; a plain mov on x86-64). */
    __atomic_store_n(&s->in, obj, __ATOMIC_RELEASE);
    /* Only a compiler barrier: the revoker's membarrier supplies the CPU
     * barrier between this store and the bias load below. */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    int ok = 0;
    if (__builtin_expect(__atomic_load_n(bias, __ATOMIC_RELAXED) == s->id, 1) &&
        __builtin_expect(__atomic_load_n(state, __ATOMIC_RELAXED) == from, 1)) {
        __atomic_store_n(state, to, __ATOMIC_RELAXED);
        ok = 1;
    }
    __atomic_store_n(&s->in, NULL, __ATOMIC_RELEASE);
    return ok;
}

/* Resolve the bias word for the caller before it touches *state by other
 * means than nth_bias_fast. Returns 1 when the bias is (now) the calling
 * kernel thread's: it claimed an unclaimed word (only if claim is nonzero
 * and biasing is available), or already owned it; returns 0 once the word
 * is NTH_BIAS_REVOKED, after revoking another kernel thread's bias if
 * needed (one membarrier, then a wait bounded by the owner's fast path).
 * Never switches; may spin while another kernel thread revokes. */
int nth_bias_settle(uint32_t *bias, const void *obj, int claim) __attribute__((visibility("hidden")));

/* The caller owns the bias (nth_bias_settle returned 1) but has to use the
 * atomic protocol (the state was not what its fast path needed): give the
 * bias up for good. Returns when *bias is NTH_BIAS_REVOKED. */
void nth_bias_drop(uint32_t *bias, const void *obj) __attribute__((visibility("hidden")));

/* A wait-queue spinlock (olock.h) with a bias word: the kernel thread that
 * keeps taking it (the condvar of two nano-threads on one VP) holds it by
 * its announcement alone, anyone else revokes the bias and uses nth_olock.
 * The bias word's own address names the object to revokers. Every user of
 * the lock word must go through these two once a bias word is attached.
 *
 * Held by the announcement: the owner's slot names the object for the
 * whole critical section, not just around a store to the lock word. A
 * revoker waits until the slot lets go (bias_revoke), so it cannot enter
 * while the owner is inside, and the owner never writes the lock word:
 * while the bias word holds an id the lock word stays 0 (nobody takes it
 * under the atomic protocol before the bias is settled), which is what a
 * revoker then takes with nth_olock. Two stores and a compare per
 * lock/unlock pair instead of two biased state changes. The section must
 * not take another biased object (one slot per kernel thread) nor switch:
 * olock.h's rule already (a few queue operations, never across a switch).
 *
 * nth_olock_biased returns 1 when the caller holds the lock by its
 * announcement, 0 when by the lock word; pass it to nth_ounlock_biased. */
int nth_olock_biased_slow(uint32_t *l, uint32_t *bias) __attribute__((visibility("hidden")));

static inline int nth_olock_biased(uint32_t *l, uint32_t *bias)
{
    struct nth_bias_slot *s = nth_bias_me;
    if (__builtin_expect(s != NULL, 1)) {
        /* As nth_bias_fast: release store, compiler barrier, bias load. */
        __atomic_store_n(&s->in, (const void *)bias, __ATOMIC_RELEASE);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (__builtin_expect(__atomic_load_n(bias, __ATOMIC_RELAXED) == s->id, 1))
            return 1;
        __atomic_store_n(&s->in, NULL, __ATOMIC_RELEASE);
    }
    /* Revoked for good (shared across kernel threads): the plain lock, no
     * call. Acquire: the revoker's release hands us the owner's sections. */
    if (__atomic_load_n(bias, __ATOMIC_ACQUIRE) == NTH_BIAS_REVOKED) {
        nth_olock(l);
        return 0;
    }
    return nth_olock_biased_slow(l, bias);
}

static inline void nth_ounlock_biased(uint32_t *l, int by_bias)
{
    if (__builtin_expect(by_bias, 1))
        __atomic_store_n(&nth_bias_me->in, NULL, __ATOMIC_RELEASE);
    else
        __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

#endif
