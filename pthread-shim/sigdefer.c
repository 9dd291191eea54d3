/*
 * sigdefer.c -- what a signal handler's sem_post and pthread_kill cannot
 * do themselves, done for them by a helper kernel thread: waking the
 * nano-threads that wait on the semaphore (nth_sem_drain), and stopping
 * the waits of the thread a signal was queued for (shim_interrupt_waits,
 * after turning the switch-in hook on).
 *
 * Why: sem_post and pthread_kill are async-signal-safe (signal-safety(7)),
 * but waking a waiter takes the semaphore's or condvar's queue lock and
 * the runtime's ready queues, which the code the handler interrupted, on
 * the same kernel thread, may hold: the handler would spin for ever on
 * its own thread's lock; and the hook's first use creates nano-threads
 * (malloc). In a handler the post adds its unit lock-free
 * (nth_sem_post_async: at once visible to sem_trywait/sem_wait) and, when
 * nano-threads wait, leaves the semaphore here; pthread_kill queues the
 * signal (its queue's lock is taken with signals blocked) and leaves the
 * thread here. The helper, a kernel thread of libc's that runs no
 * nano-thread and blocks every signal, takes the locks -- on another
 * kernel thread, so their holder finishes -- and wakes.
 *
 * The requests are a fixed array of slots (no allocation in a handler),
 * each a semaphore's address, or a thread record's with bit 0 set, or 0,
 * filled with a CAS; one already in a slot is not added again (the
 * helper's work, done later, covers the new request). The helper sleeps
 * on a futex word the handler bumps and wakes (a system call:
 * async-signal-safe). sem_destroy and the freeing of a thread record
 * take their object out (shim_defer_forget), and wait while the helper
 * works on it, so the helper never touches freed memory.
 *
 * The helper exists only in a process that has both installed a signal
 * handler and initialised a semaphore or created a thread
 * (shim_defer_need, from sigaction, sem_init and pthread_create: no
 * handler runs through the shim's trampoline before the first of those,
 * no semaphore is posted before its sem_init, no other thread is sent a
 * signal before it exists), and is started again in a fork() child.
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

static uintptr_t slots[SLOTS];   /* a request (see the top), or 0 (atomic) */
#define KICK_TAG ((uintptr_t)1)
static int bell;                 /* futex word: bumped at each request */
static uintptr_t busy;           /* the request the helper works on now */
static pid_t helper_pid;         /* the process whose helper runs (0: none) */
static int helper_lock;
static int need_bits;            /* 1: a handler was installed; 2: a semaphore or thread made */
static int helper_told;          /* 1: the failure to start it was said */

static void run(uintptr_t item)
{
    if (item & KICK_TAG) {
        shim_sig_hook_ensure();
        shim_interrupt_waits((struct shim_thread *)(item & ~KICK_TAG));
    } else {
        nth_sem_drain((nth_sem_t *)item);
    }
}

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
                run(s);
                found = 1;
            }
            __atomic_store_n(&busy, 0, __ATOMIC_SEQ_CST);
        }
        if (!found)
            syscall(SYS_futex, &bell, FUTEX_WAIT_PRIVATE, b, NULL, NULL, 0);
    }
    return NULL;
}

static int start_kthread(void *(*fn)(void *), pthread_t *t, size_t stack_size)
{
    pthread_attr_t a;
    int r = REAL(pthread_attr_init)(&a);
    if (r != 0)
        return r;
    REAL(pthread_attr_setdetachstate)(&a, PTHREAD_CREATE_DETACHED);
    if (stack_size)
        r = REAL(pthread_attr_setstacksize)(&a, stack_size);
    if (r == 0)
        r = REAL(pthread_create)(t, &a, fn, NULL);
    REAL(pthread_attr_destroy)(&a);
    return r;
}

int shim_kthread_start(void *(*fn)(void *), pthread_t *t)
{
    /* 64 KiB is plenty for the shim's helper threads, but glibc puts the
     * static TLS at the top of a thread's stack and refuses (EINVAL) a
     * size that leaves too little room for it: a program with 64 KiB or
     * more of __thread data. Then glibc's default size (RLIMIT_STACK,
     * 8 MiB; mapped lazily, so it costs address space, not memory). */
    int r = start_kthread(fn, t, 64 * 1024);
    return r == 0 ? 0 : start_kthread(fn, t, 0);
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
        pthread_t t;
        int r = shim_kthread_start(helper_main, &t);
        syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, (size_t)(_NSIG / 8));
        if (r == 0) {
            __atomic_store_n(&helper_pid, me, __ATOMIC_RELEASE);
        } else if (!__atomic_exchange_n(&helper_told, 1, __ATOMIC_RELAXED)) {
            /* Once: each later sem_init, sigaction and pthread_create
             * tries again, and would say it again. */
            static const char msg[] =
                "nthlib: pthread shim: cannot start the signal helper thread: a sem_post or "
                "pthread_kill from a signal handler may wake its target late\n";
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
    /* The requests were the parent's threads': their waiters are not in
     * the child (the forking thread waits on nothing). */
    for (int i = 0; i < SLOTS; i++)
        __atomic_store_n(&slots[i], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&busy, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&helper_lock, 0, __ATOMIC_RELAXED);
    helper_ensure();         /* helper_pid is the parent's: a new one */
}

static void defer(uintptr_t v)
{
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
        /* SLOTS requests from handlers wait for the helper: it empties
         * slots on another kernel thread. */
        syscall(SYS_sched_yield);
    }
ring:
    __atomic_fetch_add(&bell, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &bell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void shim_defer_drain(nth_sem_t *s)
{
    defer((uintptr_t)s);
}

void shim_defer_kick(struct shim_thread *st)
{
    defer((uintptr_t)st | KICK_TAG);
}

/* Take v's request back (doing it here: it may still be needed) and wait
 * until the helper is done with it. */
static void forget(uintptr_t v)
{
    int had = 0;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t e = v;
        if (__atomic_compare_exchange_n(&slots[i], &e, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            had = 1;
    }
    if (had && !(v & KICK_TAG))
        run(v);                  /* what the helper would have done */
    while (__atomic_load_n(&busy, __ATOMIC_SEQ_CST) == v)
        syscall(SYS_sched_yield);
}

void shim_defer_forget(nth_sem_t *s)
{
    forget((uintptr_t)s);
}

void shim_defer_forget_thread(struct shim_thread *st)
{
    /* A thread whose record goes is done: no wait of its to stop. */
    forget((uintptr_t)st | KICK_TAG);
}
