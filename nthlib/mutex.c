/*
 * mutex.c -- nano-thread mutexes: normal, recursive, error-checking.
 * Semantics after pthread_mutex_lock(3p), pthread_mutex_timedlock(3p).
 *
 * __state: 0 free, 1 locked, 2 locked and someone may be queued. The
 * uncontended path is one CAS to lock and one to unlock. Under contention
 * unlock frees the mutex and wakes the first waiter that can still be
 * woken (FIFO); the woken waiter tries again, at the head of the queue if it
 * loses, and sets 2 so its own unlock wakes the next one (Drepper, "Futexes
 * Are Tricky", mutex type 3). No direct hand-off: handing ownership to a
 * woken waiter makes every critical section wait until that waiter reaches
 * the head of a ready queue, and with nano-threads retrying timed locks in
 * that queue the mutex fell to one critical section per queue rotation
 * (issue 3: a convoy thousands of times slower, seen as a hang).
 *
 * Except for a starving waiter (issue 4): barging alone lets a nano-thread
 * that unlocks and relocks at once win every time, since under cooperative
 * scheduling nothing preempts it between the two (glibc's futex mutex is
 * no fairer, but there the kernel does preempt the relocker). So, after Go's
 * sync.Mutex "starvation mode": a woken waiter that loses the race again
 * MUTEX_STARVE_LOSSES times, or keeps losing for MUTEX_STARVE_NS, marks its
 * waiter record starving, and an unlock that finds it at the head of the
 * queue hands the mutex over directly (it never becomes free, so neither
 * the relocker nor any newcomer can take it first; newcomers queue behind).
 * The mode is per waiter: the next waiter at the head is starving only if
 * it lost as often itself, so normal barging resumes at once. The cost is
 * one convoy step per starving waiter, and nothing on the uncontended or
 * the normal contended paths (one more test of the woken waiter's record).
 *
 * Normal mutexes are biased (mutex_bias.h): the kernel thread that uses a
 * mutex first changes __state with plain stores, no atomic instruction,
 * until another kernel thread needs it and revokes the bias for good; the
 * bias word is __count, unused by normal mutexes. The owner-aware types
 * are not biased (their owner and count checks cost more than the atomics
 * saved).
 */
#include <errno.h>
#include "sync_core.h"
#include "sync_spin.h"
#include "wait_queue.h"
#include "mutex_internal.h"
#include "mutex_bias.h"

/* Normal mutexes only: the bias word. */
#define BIAS(m) (&(m)->__count)

/* A waiter's record (w->data, under the object lock): STARVING, set by the
 * waiter before it queues again, asks unlock for a hand-off; HANDED, set by
 * unlock, says the waiter owns the mutex when it wakes. */
#define MUTEX_W_STARVING 1u
#define MUTEX_W_HANDED 2u

/* The bounds on how often and for how long a woken waiter may lose the
 * mutex to running lockers before it is handed the mutex: Go's 1 ms, and
 * a count of lost rounds so that the bound holds however fast the rounds
 * go (a relocker that sleeps 50 us inside its critical section loses
 * a waiter 20 rounds per ms). 16 keeps the hand-offs, each a wake-up
 * during which nobody holds the mutex, rare in a tight contended loop
 * (bench/RESULTS.md, "mutex hand-off to starving waiters"). */
#define MUTEX_STARVE_LOSSES 16u
#define MUTEX_STARVE_NS 1000000ull

static unsigned spin_iters = ~0u;

unsigned nth__sync_spin_iters(void)
{
    unsigned s = __atomic_load_n(&spin_iters, __ATOMIC_RELAXED);
    if (s == ~0u) {
        s = nth_num_vps() > 1 ? NTH_SYNC_SPIN_ITERS : 0;
        __atomic_store_n(&spin_iters, s, __ATOMIC_RELAXED);
    }
    return s;
}

int nth_mutexattr_init(nth_mutexattr_t *attr)
{
    if (!attr)
        return EINVAL;
    attr->__type = NTH_MUTEX_DEFAULT;
    attr->__reserved = 0;
    return 0;
}

int nth_mutexattr_destroy(nth_mutexattr_t *attr)
{
    return attr ? 0 : EINVAL;
}

int nth_mutexattr_settype(nth_mutexattr_t *attr, int type)
{
    if (!attr || type < NTH_MUTEX_NORMAL || type > NTH_MUTEX_ERRORCHECK)
        return EINVAL;
    attr->__type = type;
    return 0;
}

int nth_mutexattr_gettype(const nth_mutexattr_t *attr, int *type)
{
    if (!attr || !type)
        return EINVAL;
    *type = attr->__type;
    return 0;
}

int nth_mutex_init(nth_mutex_t *m, const nth_mutexattr_t *attr)
{
    if (!m || (attr && (attr->__type < NTH_MUTEX_NORMAL || attr->__type > NTH_MUTEX_ERRORCHECK)))
        return EINVAL;
    *m = (nth_mutex_t)NTH_MUTEX_INITIALIZER;
    m->__type = attr ? (uint32_t)attr->__type : NTH_MUTEX_DEFAULT;
    return 0;
}

int nth_mutex_destroy(nth_mutex_t *m)
{
    if (!m)
        return EINVAL;
    if (__atomic_load_n(&m->__state, __ATOMIC_ACQUIRE) != 0)
        return EBUSY;
    return 0;
}

static inline int try_fast(nth_mutex_t *m)
{
    uint32_t z = 0;
    return __atomic_compare_exchange_n(&m->__state, &z, 1, 0, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

/* Checks for the owner-aware types before locking: 0 to go on and lock,
 * -1 when a recursive relock was counted, or an error code. */
static int owner_relock(nth_mutex_t *m, nth_t self, int try)
{
    if (__atomic_load_n(&m->__owner, __ATOMIC_RELAXED) != self)
        return 0;
    if (m->__type == NTH_MUTEX_RECURSIVE) {
        if (m->__count == UINT32_MAX)
            return EAGAIN;
        m->__count++;
        return -1;
    }
    return try ? EBUSY : EDEADLK;
}

/* If the queue emptied when a timed waiter left, say so in __state so the
 * owner's unlock can take the fast path again. Under the lock. */
static void mutex_waiter_left(struct nth_waiter *w)
{
    nth_mutex_t *m = (nth_mutex_t *)(void *)((char *)w->olock - offsetof(nth_mutex_t, __lock));
    uint32_t two = 2;
    /* A free mutex (0) stays free: unlock may have skipped w already. */
    if (!m->__head)
        __atomic_compare_exchange_n(&m->__state, &two, 1, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
}

/* A woken waiter lost the race once more: 1 when it has now lost too often
 * or for too long and must be handed the mutex (the clock is read only
 * here, never on a path that takes the mutex). */
static int starving(unsigned *losses, uint64_t *first_loss)
{
    if (++*losses >= MUTEX_STARVE_LOSSES)
        return 1;
    uint64_t now = nth_now_ns();
    if (*losses == 1) {
        *first_loss = now;
        return 0;
    }
    return now - *first_loss >= MUTEX_STARVE_NS;
}

static int lock_slow(nth_mutex_t *m, nth_t self, clockid_t clock, const struct timespec *abs)
{
    for (unsigned i = nth__sync_spin_iters(); i > 0; i--) {
        if (__atomic_load_n(&m->__state, __ATOMIC_RELAXED) == 0 && try_fast(m))
            return 0;
        nth_sync_relax();
    }
    if (abs) {
        int e = nth_check_deadline(clock, abs);
        if (e)
            return e;
    }
    int woken = 0;
    unsigned losses = 0;
    uint64_t first_loss = 0;     /* CLOCK_MONOTONIC ns, read on losses only */
    for (;;) {
        struct nth_waiter w;
        nth_waiter_init(&w, self);
        nth_olock(&m->__lock);
        /* Mark contended; if it was free meanwhile we own it (state 2 costs
         * one harmless trip through unlock's slow path). */
        if (__atomic_exchange_n(&m->__state, 2, __ATOMIC_ACQUIRE) == 0) {
            if (!m->__head)
                __atomic_store_n(&m->__state, 1, __ATOMIC_RELAXED);
            nth_ounlock(&m->__lock);
            return 0;
        }
        if (abs && nth_abs_passed(clock, abs)) {
            if (!m->__head)
                __atomic_store_n(&m->__state, 1, __ATOMIC_RELAXED);
            nth_ounlock(&m->__lock);
            /* A scheduling point even so: the owner may be ready on this VP,
             * and a caller retrying in a loop would otherwise starve it
             * (cooperative scheduling). Returning later is allowed. */
            nth_yield();
            return ETIMEDOUT;
        }
        /* Woken but beaten to it by a running locker: keep our turn, and
         * ask for a hand-off once we have lost too often. */
        if (woken) {
            if (starving(&losses, &first_loss))
                w.data = MUTEX_W_STARVING;
            nth_wq_push_front(&m->__head, &m->__tail, &w);
        } else
            nth_wq_push(&m->__head, &m->__tail, &w);
        if (abs) {
            w.on_timeout = mutex_waiter_left;
            nth_waiter_arm(&w, &m->__lock, &m->__head, &m->__tail, clock, abs);
        }
        nth_ounlock(&m->__lock);
        int s = nth_waiter_block(&w, m, NTH_OBJ_MUTEX);
        nth_waiter_disarm(&w);
        if (s != NTH_W_WOKEN)
            return ETIMEDOUT;
        /* Read after the waker's release of the final state. */
        if (w.data & MUTEX_W_HANDED)
            return 0;         /* unlock kept the mutex locked, for us */
        woken = 1;            /* unlock freed the mutex: try again */
    }
}

/* A normal mutex whose biased fast path failed. Out of line: it reads the
 * kernel thread's bias slot before it may block, never after (the
 * nano-thread may wake on another kernel thread). */
static __attribute__((noinline)) int normal_lock(nth_mutex_t *m, clockid_t clock,
                                                 const struct timespec *abs)
{
    if (nth_bias_settle(BIAS(m), m, 1)) {
        if (nth_bias_fast(BIAS(m), &m->__state, 0, 1, m))
            return 0;
        /* Held by a nano-thread of this kernel thread (or by the caller):
         * we must queue, and queueing is the atomic protocol's. */
        nth_bias_drop(BIAS(m), m);
    }
    if (try_fast(m))
        return 0;
    return lock_slow(m, nth__me(), clock, abs);
}

static __attribute__((noinline)) int lock_common(nth_mutex_t *m, clockid_t clock, const struct timespec *abs)
{
    if (!m)
        return EINVAL;
    if (m->__type == NTH_MUTEX_NORMAL) {
        if (__builtin_expect(nth_bias_fast(BIAS(m), &m->__state, 0, 1, m), 1))
            return 0;
        return normal_lock(m, clock, abs);
    }
    nth_t self = nth__me();
    int e = owner_relock(m, self, 0);
    if (e)
        return e < 0 ? 0 : e;
    if (!try_fast(m) && (e = lock_slow(m, self, clock, abs)) != 0)
        return e;
    __atomic_store_n(&m->__owner, self, __ATOMIC_RELAXED);
    m->__count = 0;
    return 0;
}

int nth_mutex_lock(nth_mutex_t *m)
{
    /* The biased fast path first, with nothing else on it (no frame). */
    if (__builtin_expect(m && m->__type == NTH_MUTEX_NORMAL, 1)) {
        if (__builtin_expect(nth_bias_fast(BIAS(m), &m->__state, 0, 1, m), 1))
            return 0;
        /* Revoked for good: the atomic fast path, no call. Acquire: the
         * revoker's release hands us the former owner's critical sections. */
        if (__atomic_load_n(BIAS(m), __ATOMIC_ACQUIRE) == NTH_BIAS_REVOKED && try_fast(m))
            return 0;
    }
    return lock_common(m, CLOCK_REALTIME, NULL);
}

int nth_mutex_timedlock(nth_mutex_t *m, const struct timespec *abstime)
{
    return nth_mutex_clocklock(m, CLOCK_REALTIME, abstime);
}

int nth_mutex_clocklock(nth_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    if (!abstime)
        return EINVAL;
    return lock_common(m, clock, abstime);
}

int nth_mutex_trylock(nth_mutex_t *m)
{
    if (!m)
        return EINVAL;
    if (m->__type == NTH_MUTEX_NORMAL) {
        if (__builtin_expect(nth_bias_fast(BIAS(m), &m->__state, 0, 1, m), 1))
            return 0;
        /* Still biased to us: it is simply taken, keep the bias. */
        if (nth_bias_settle(BIAS(m), m, 1))
            return nth_bias_fast(BIAS(m), &m->__state, 0, 1, m) ? 0 : EBUSY;
        return try_fast(m) ? 0 : EBUSY;
    }
    nth_t self = nth__me();
    int e = owner_relock(m, self, 1);
    if (e)
        return e < 0 ? 0 : e;
    if (!try_fast(m))
        return EBUSY;
    __atomic_store_n(&m->__owner, self, __ATOMIC_RELAXED);
    m->__count = 0;
    return 0;
}

static void unlock_slow(nth_mutex_t *m)
{
    nth_olock(&m->__lock);
    struct nth_waiter *w = nth_wq_claim(&m->__head, &m->__tail);
    if (w && (w->data & MUTEX_W_STARVING)) {
        /* Hand it over: it stays locked, now w's (2 while others wait, so
         * that w's unlock wakes the next one). w sees HANDED, and our
         * critical section, through nth_waiter_wake's release. */
        w->data |= MUTEX_W_HANDED;
        __atomic_store_n(&m->__state, m->__head ? 2 : 1, __ATOMIC_RELAXED);
    } else {
        /* Free it; a woken waiter sets 2 again when it retries, so the
         * waiters still queued are not forgotten. */
        __atomic_store_n(&m->__state, 0, __ATOMIC_RELEASE);
    }
    nth_ounlock(&m->__lock);
    if (w)
        nth_waiter_wake(w);
}

static __attribute__((noinline)) int normal_unlock(nth_mutex_t *m)
{
    /* Biased to us but not locked (state 2 never coexists with a bias):
     * an unlock of a free mutex, undefined; leave the bias and go on. */
    if (nth_bias_settle(BIAS(m), m, 0))
        nth_bias_drop(BIAS(m), m);
    uint32_t one = 1;
    if (__atomic_compare_exchange_n(&m->__state, &one, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        return 0;
    unlock_slow(m);
    return 0;
}

static __attribute__((noinline)) int unlock_common(nth_mutex_t *m)
{
    if (!m)
        return EINVAL;
    if (m->__type == NTH_MUTEX_NORMAL)
        return normal_unlock(m);
    if (__atomic_load_n(&m->__owner, __ATOMIC_RELAXED) != nth__me() ||
        __atomic_load_n(&m->__state, __ATOMIC_RELAXED) == 0)
        return EPERM;
    if (m->__count > 0) {
        m->__count--;
        return 0;
    }
    __atomic_store_n(&m->__owner, NULL, __ATOMIC_RELAXED);
    uint32_t one = 1;
    if (__builtin_expect(__atomic_compare_exchange_n(&m->__state, &one, 0, 0, __ATOMIC_RELEASE,
                                                     __ATOMIC_RELAXED), 1))
        return 0;
    unlock_slow(m);
    return 0;
}

int nth_mutex_unlock(nth_mutex_t *m)
{
    if (__builtin_expect(m && m->__type == NTH_MUTEX_NORMAL, 1)) {
        if (__builtin_expect(nth_bias_fast(BIAS(m), &m->__state, 1, 0, m), 1))
            return 0;
        uint32_t one = 1;
        if (__atomic_load_n(BIAS(m), __ATOMIC_ACQUIRE) == NTH_BIAS_REVOKED &&
            __atomic_compare_exchange_n(&m->__state, &one, 0, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            return 0;
    }
    return unlock_common(m);
}

int nth__mutex_release(nth_mutex_t *m, uint32_t *depth)
{
    *depth = 0;
    if (m->__type != NTH_MUTEX_NORMAL) {
        if (__atomic_load_n(&m->__owner, __ATOMIC_RELAXED) != nth__me())
            return EPERM;
        *depth = m->__count;
        m->__count = 0;
    }
    return nth_mutex_unlock(m);
}

void nth__mutex_reacquire(nth_mutex_t *m, uint32_t depth)
{
    nth_mutex_lock(m);
    if (m->__type != NTH_MUTEX_NORMAL)
        m->__count = depth;
}
