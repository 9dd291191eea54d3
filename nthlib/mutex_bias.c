/*
 * mutex_bias.c -- the slow half of biased locking (see mutex_bias.h):
 * kernel-thread ids and slots, claiming, revoking.
 *
 * Biasing is on when membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) can be
 * registered and NTH_MUTEX_BIAS is not "0"; otherwise no word is ever
 * claimed and every object goes straight to the atomic protocol (one CAS
 * on its bias word, at its first slow path).
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "olock.h"
#include "mutex_bias.h"

__thread struct nth_bias_slot *nth_bias_me __attribute__((tls_model("initial-exec")));

/* Slot of the kernel threads that have no id (biasing off, or ids used
 * up): one for all, as nobody ever reads its announcement (no bias word
 * holds NTH_BIAS_NOID); its stores are atomic. Not in TLS: with
 * per-nano-thread thread pointers (tls_switch.c) the TCB whose copy
 * nth_bias_me pointed at could be a nano-thread's, reused or freed. */
static struct nth_bias_slot noid_slot = { NULL, NTH_BIAS_NOID };

static struct nth_bias_slot slots[NTH_BIAS_MAX_IDS + 1];   /* [id]; 0 unused */
static uint32_t next_id = 1;
static int mode;                 /* 0 not probed, 1 on, -1 off */

/* Claims are refused once more than half of them (beyond a first 1024)
 * ended in a revocation: objects shared across kernel threads would pay a
 * membarrier each for nothing (the lesson of the JVM's biased locking). */
static uint64_t n_claims, n_revokes;

/* In a child of fork() only the forking kernel thread lives on: a slot
 * left naming an object by a thread caught inside its fast path would
 * make a revoker wait forever. (The membarrier registration is inherited.) */
static void clear_slots_in_child(void)
{
    for (uint32_t i = 1; i <= NTH_BIAS_MAX_IDS; i++)
        __atomic_store_n(&slots[i].in, NULL, __ATOMIC_RELAXED);
}

static int bias_mode(void)
{
    int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);
    if (m)
        return m;
    const char *e = getenv("NTH_MUTEX_BIAS");
    m = -1;
    if (!(e && strcmp(e, "0") == 0)) {
        long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
        if (q >= 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
            syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
            m = 1;
    }
    /* Racing probers reach the same answer; registering twice is harmless,
     * the atfork handler is installed once. pthread_atfork is libc's even
     * under the pthread shim. */
    static int atfork_done;
    if (m > 0 && !__atomic_exchange_n(&atfork_done, 1, __ATOMIC_RELAXED))
        (void)pthread_atfork(NULL, NULL, clear_slots_in_child);
    __atomic_store_n(&mode, m, __ATOMIC_RELEASE);
    return m;
}

static struct nth_bias_slot *me(void)
{
    struct nth_bias_slot *s = nth_bias_me;
    if (s)
        return s;
    s = &noid_slot;
    if (bias_mode() > 0) {
        uint32_t id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
        if (id <= NTH_BIAS_MAX_IDS) {
            s = &slots[id];
            s->id = id;
        } else {
            __atomic_store_n(&next_id, NTH_BIAS_MAX_IDS + 1, __ATOMIC_RELAXED);
        }
    }
    nth_bias_me = s;
    return s;
}

static void spin_pause(unsigned *n)
{
    nth_sync_relax();
    /* The kernel thread we wait for may be preempted on our CPU; a raw
     * call, as under the pthread shim sched_yield is nth_yield. */
    if (++*n % 1024 == 0)
        syscall(SYS_sched_yield);
}

static void bias_revoke(uint32_t *bias, uint32_t id, const void *obj)
{
    uint32_t exp = id;
    if (!__atomic_compare_exchange_n(bias, &exp, NTH_BIAS_REVOKING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;                  /* changed meanwhile: the caller looks again */
    __atomic_fetch_add(&n_revokes, 1, __ATOMIC_RELAXED);
    /* Registered before any id was handed out, so this cannot fail; if
     * the kernel ever said otherwise the owner's plain stores would be
     * unordered against ours: nothing safe is left to do. */
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
        fprintf(stderr, "nthlib: membarrier failed after registration\n");
        abort();
    }
    const struct nth_bias_slot *s = &slots[id];
    unsigned n = 0;
    while (__atomic_load_n(&s->in, __ATOMIC_ACQUIRE) == obj)
        spin_pause(&n);
    __atomic_store_n(bias, NTH_BIAS_REVOKED, __ATOMIC_RELEASE);
}

int nth_bias_settle(uint32_t *bias, const void *obj, int claim)
{
    struct nth_bias_slot *s = me();
    unsigned n = 0;
    for (;;) {
        uint32_t b = __atomic_load_n(bias, __ATOMIC_ACQUIRE);
        if (b == NTH_BIAS_REVOKED)
            return 0;
        if (b == s->id)
            return 1;
        if (b == NTH_BIAS_REVOKING) {
            spin_pause(&n);
            continue;
        }
        if (b != 0) {
            bias_revoke(bias, b, obj);
            continue;
        }
        uint32_t to = NTH_BIAS_REVOKED;
        if (claim && s->id != NTH_BIAS_NOID &&
            __atomic_load_n(&n_revokes, __ATOMIC_RELAXED) <=
                __atomic_load_n(&n_claims, __ATOMIC_RELAXED) / 2 + 1024)
            to = s->id;
        if (__atomic_compare_exchange_n(bias, &b, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
            to != NTH_BIAS_REVOKED) {
            __atomic_fetch_add(&n_claims, 1, __ATOMIC_RELAXED);
            return 1;
        }
    }
}

void nth_bias_drop(uint32_t *bias, const void *obj)
{
    uint32_t id = me()->id;
    if (__atomic_compare_exchange_n(bias, &id, NTH_BIAS_REVOKED, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return;
    /* Someone is revoking it: wait for them (we are in no fast path). */
    while (nth_bias_settle(bias, obj, 0))
        ;
}

int nth_olock_biased_slow(uint32_t *l, uint32_t *bias)
{
    /* Ours (claimed now, or already): hold it by the announcement, which
     * a revocation may beat between the settle and the announcement; then
     * the settle sees it REVOKING or REVOKED. */
    while (nth_bias_settle(bias, bias, 1)) {
        struct nth_bias_slot *s = nth_bias_me;      /* set by the settle */
        __atomic_store_n(&s->in, (const void *)bias, __ATOMIC_RELEASE);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (__atomic_load_n(bias, __ATOMIC_RELAXED) == s->id)
            return 1;
        __atomic_store_n(&s->in, NULL, __ATOMIC_RELEASE);
    }
    nth_olock(l);
    return 0;
}
