/*
 * sigdefer.c -- what a signal handler's sem_post cannot do itself, done
 * for it by a helper kernel thread: waking the nano-threads that wait on
 * the semaphore (nth_sem_drain).
 *
 * Why: sem_post is async-signal-safe (signal-safety(7), sem_post(3p)), but
 * waking a waiter takes the semaphore's queue lock and the runtime's ready
 * queues, which the code the handler interrupted, on the same kernel
 * thread, may hold: the handler would spin for ever on its own thread's
 * lock. In a handler the post adds its unit lock-free
 * (nth_sem_post_async: at once visible to sem_trywait/sem_wait) and, when
 * nano-threads wait, leaves the semaphore here; the helper, a kernel
 * thread of libc's that runs no nano-thread and blocks every signal, takes
 * the lock -- on another kernel thread, so its holder finishes -- and
 * wakes them.
 *
 * The requests are a fixed array of slots (no allocation in a handler),
 * each a semaphore's address or 0, filled with a CAS; a semaphore already
 * in a slot is not added again (its drain will see the new unit). The
 * helper sleeps on a futex word the handler bumps and wakes (a system
 * call: async-signal-safe). sem_destroy takes its semaphore out
 * (shim_defer_forget), and waits while the helper works on it, so the
 * helper never touches a semaphore after its destroy.
 *
 * The helper exists only in a process that has both installed a signal
 * handler and initialised a semaphore (shim_defer_need, from sigaction
 * and sem_init: no handler runs through the shim's trampoline before the
 * first of those, and no semaphore is posted before its sem_init), and is
 * started again in a fork() child.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "shim.h"

#define SLOTS 256

static uintptr_t slots[SLOTS];   /* a semaphore's address, or 0 (atomic) */
static int bell;                 /* futex word: bumped at each request */
static uintptr_t busy;           /* the semaphore the helper drains now */
static pid_t helper_pid;         /* the process whose helper runs (0: none) */
static int helper_lock;
static int need_bits;            /* 1: a handler was installed; 2: a semaphore made */

static void *helper_main(void *arg)
{
    (void)arg;
    for (;;) {
        int b = __atomic_load_n(&bell, __ATOMIC_SEQ_CST);
        int found = 0;
        for (int i = 0; i < SLOTS; i++) {
            uintptr_t s = __atomic_load_n(&slots[i], __ATOMIC_SEQ_CST);
            if (!s)
                continue;
            /* busy before the slot is emptied: shim_defer_forget, which
             * empties slots first, then sees busy (see the top). */
            __atomic_store_n(&busy, s, __ATOMIC_SEQ_CST);
            if (__atomic_compare_exchange_n(&slots[i], &s, 0, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST)) {
                nth_sem_drain((nth_sem_t *)s);
                found = 1;
            }
            __atomic_store_n(&busy, 0, __ATOMIC_SEQ_CST);
        }
        if (!found)
            syscall(SYS_futex, &bell, FUTEX_WAIT_PRIVATE, b, NULL, NULL, 0);
    }
    return NULL;
}

/* Start the helper in this process if both needs are there. Normal
 * context only. */
static void helper_ensure(void)
{
    if (__atomic_load_n(&need_bits, __ATOMIC_ACQUIRE) != 3)
        return;
    pid_t me = getpid();
    if (__atomic_load_n(&helper_pid, __ATOMIC_ACQUIRE) == me)
        return;
    while (__atomic_exchange_n(&helper_lock, 1, __ATOMIC_ACQUIRE))
        nth_yield();
    if (__atomic_load_n(&helper_pid, __ATOMIC_RELAXED) != me) {
        /* Every signal blocked in it from its first instruction (the
         * creator's mask is inherited): the kernel must never pick it for
         * a process-directed signal, whose handler would then run on no
         * nano-thread. glibc's own signals (32, 33: set*id) stay open. */
        sigset_t all, old;
        sigfillset(&all);
        sigdelset(&all, SIGSEGV);
        sigdelset(&all, SIGBUS);
        syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &old, (size_t)(_NSIG / 8));
        pthread_attr_t a;
        pthread_t t;
        int r = REAL(pthread_attr_init)(&a);
        if (r == 0) {
            REAL(pthread_attr_setdetachstate)(&a, PTHREAD_CREATE_DETACHED);
            REAL(pthread_attr_setstacksize)(&a, 64 * 1024);
            r = REAL(pthread_create)(&t, &a, helper_main, NULL);
            REAL(pthread_attr_destroy)(&a);
        }
        syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, (size_t)(_NSIG / 8));
        if (r == 0) {
            __atomic_store_n(&helper_pid, me, __ATOMIC_RELEASE);
        } else {
            static const char msg[] =
                "nthlib: pthread shim: cannot start the signal helper thread: a sem_post from a "
                "signal handler wakes waiters only at the next sem_post\n";
            (void)!write(2, msg, sizeof msg - 1);
        }
    }
    __atomic_store_n(&helper_lock, 0, __ATOMIC_RELEASE);
}

void shim_defer_need(int what)
{
    __atomic_or_fetch(&need_bits, what, __ATOMIC_ACQ_REL);
    if (!shim_in_handler())      /* sigaction is async-signal-safe too */
        helper_ensure();
}

void shim_defer_fork_child(void)
{
    __atomic_store_n(&helper_lock, 0, __ATOMIC_RELAXED);
    helper_ensure();         /* helper_pid is the parent's: a new one */
}

void shim_defer_drain(nth_sem_t *s)
{
    uintptr_t v = (uintptr_t)s;
    for (;;) {
        for (int i = 0; i < SLOTS; i++)
            if (__atomic_load_n(&slots[i], __ATOMIC_SEQ_CST) == v)
                goto ring;
        for (int i = 0; i < SLOTS; i++) {
            uintptr_t z = 0;
            if (__atomic_compare_exchange_n(&slots[i], &z, v, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST))
                goto ring;
        }
        /* SLOTS semaphores posted from handlers wait for the helper: it
         * empties slots on another kernel thread. */
        syscall(SYS_sched_yield);
    }
ring:
    __atomic_fetch_add(&bell, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &bell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void shim_defer_forget(nth_sem_t *s)
{
    uintptr_t v = (uintptr_t)s;
    int had = 0;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t e = v;
        if (__atomic_compare_exchange_n(&slots[i], &e, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            had = 1;
    }
    if (had)
        nth_sem_drain(s);        /* what the helper would have done */
    while (__atomic_load_n(&busy, __ATOMIC_SEQ_CST) == v)
        syscall(SYS_sched_yield);
}
