/*
 * signal.c -- signals and nano-threads, after pthread_kill(3p),
 * pthread_sigmask(3p), sigwait(3p), sigtimedwait(3p), sigpending(3p),
 * sigsuspend(3p) and signal(7), as NthLib did.
 *
 * Each nano-thread has its own signal mask (shim_thread.sigmask) and a
 * queue of pending thread-directed signals (shim_thread.sigq). The kernel
 * only knows kernel threads, so the mask of the nano-thread that runs on a
 * VP is put on that VP's kernel thread: by pthread_sigmask itself, and by
 * the runtime's switch-in hook (nth_switch_hook_set) each time a
 * nano-thread resumes. The hook compares the incoming mask with the one
 * the kernel thread has (kmask, per kernel thread) and makes the system
 * call only when they differ: when every nano-thread has the same mask, a
 * switch costs a call and a compare, and no system call. The hook is
 * installed only once a mask is changed or a signal is queued; before
 * that a switch pays one predictable branch.
 *
 * pthread_kill to the caller raises the signal on its kernel thread at
 * once (queued on the nano-thread when its mask blocks it). To another
 * nano-thread, it queues the signal there and rings its doorbell: a
 * target napping in an interruptible wait (sigwait and relatives,
 * sigsuspend, pause, sleeps, poll and the other polling waits) wakes at
 * once; one in pthread_cond_wait or a timed condvar wait is woken (a
 * spurious wake-up, which pthread_cond_wait(3p) allows: the handler runs
 * and the wait returns 0);
 * one in sem_wait or an untimed pthread_join is interrupted at once
 * (waiting_sem: the handler runs, then sem_wait returns EINTR or goes on
 * with SA_RESTART, the join goes on); other timed waits notice it within a
 * wait slice (SHIM_SLICE_NS); a mutex lock only when it has the mutex. The
 * switch-in hook delivers the queued signals the mask leaves open, with
 * the target's mask on the kernel thread, by raising them there with
 * their siginfo: the handler runs on the target.
 *
 * Process-directed signals (kill, sigqueue, timers): the kernel picks a
 * kernel thread whose mask does not block the signal. Since a VP's kernel
 * thread carries its running nano-thread's mask, the kernel never hands a
 * signal to a VP whose nano-thread blocks it; when every running
 * nano-thread blocks it, it stays pending on the process until a
 * nano-thread that does not block it is switched in (the hook's mask
 * change lets the kernel deliver it then, on that nano-thread) or takes
 * it with sigwait. A VP's idle context blocks every signal (but faults),
 * so no handler runs outside a nano-thread (one that left with siglongjmp
 * would leave the idle context). Untimed waits (sem_wait, joins, condvar
 * and mutex waits) do not resume by themselves, so when every VP is idle
 * the watcher thread (sigwatch.c) takes the signals some nano-thread
 * leaves open and queues each on such a nano-thread as above (or takes
 * the default action itself). Sleeps, sigwait, sigsuspend and poll look
 * at the process's pending set at least once a slice on their own.
 * Limits: a running nano-thread that never reaches a scheduling point
 * receives a thread-directed signal only when it next calls the shim's
 * signal functions or switches.
 *
 * Masks and the queue cover signals 1..64 (Linux's); glibc's internal
 * signals (32, 33) and SIGKILL/SIGSTOP are never blocked.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>          /* NTH_TSAN, for nth_full_fence */
#endif
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "futex_lock.h"
#include "shim.h"

int shim_on_nano(void)
{
    /* A handler may have interrupted the runtime or malloc holding a
     * lock: the calls it makes go to the kernel (sighand.c). */
    if (shim_in_handler())
        return 0;
    /* A stand-in runs a nano-thread whose VP's kernel thread is in a
     * system call; the nano-thread's waits work there as on a VP (its
     * own blocking calls hand the VP on, nth_blocking_enter). */
    return nth_vp_id() >= 0 || nth_on_standin();
}

/* A nano-thread runs on this kernel thread (a VP's, or a stand-in's of the
 * stall watchdog, where nth_vp_id() is -1): its mask is its record's. */
static int on_nano(void)
{
    return nth_self() != NULL;
}

/* ---- masks as 64-bit words ------------------------------------------------ */

#define BIT(sig) (1ULL << ((sig) - 1))
/* The shim's wake-up signal (shim_kwait_*): glibc's SIGCANCEL, which the
 * shim's pthread_cancel leaves unused and programs cannot touch (glibc's
 * sigaction and sigprocmask refuse it). Blocked on every kernel thread
 * that has waited in the kernel, except inside those waits. */
#define KICK_SIG 32
/* Never blocked: SIGKILL, SIGSTOP (the kernel refuses) and glibc's
 * SIGCANCEL/SIGSETXID (glibc's pthread_sigmask drops them too). */
#define UNBLOCKABLE (BIT(SIGKILL) | BIT(SIGSTOP) | BIT(32) | BIT(33))
/* Blocked in the idle context: all but what the kernel must deliver
 * synchronously (a fault there would otherwise kill the process). */
#define IDLE_MASK (~(UNBLOCKABLE | BIT(SIGSEGV) | BIT(SIGBUS) | BIT(SIGFPE) | BIT(SIGILL) | BIT(SIGTRAP)))
/* kmask value for "not known yet": never a real mask (SIGKILL is set). */
#define KMASK_UNKNOWN UINT64_MAX

/* glibc's sigset_t keeps signals 1..64 in its first word, bit sig-1. */
static uint64_t set_bits(const sigset_t *s)
{
    uint64_t b;
    memcpy(&b, s, sizeof b);
    return b;
}

static void bits_set(uint64_t b, sigset_t *s)
{
    sigemptyset(s);
    memcpy(s, &b, sizeof b);
}

/* glibc's sigaddset/sigdelset refuse its internal signals (EINVAL), the
 * wake-up signal among them: set its bit directly. */
static void kick_bit(sigset_t *s, int on)
{
    uint64_t b = set_bits(s);
    b = on ? b | BIT(KICK_SIG) : b & ~BIT(KICK_SIG);
    memcpy(s, &b, sizeof b);
}

/* Just the wake-up signal. */
static sigset_t kick_set(void)
{
    sigset_t k;
    bits_set(BIT(KICK_SIG), &k);
    return k;
}

static int valid_sig(int sig)
{
    return sig >= 1 && sig <= 64 && sig != 32 && sig != 33;
}

/* Set the calling kernel thread's mask like pthread_sigmask, but with the
 * wake-up signal kept blocked (glibc's would open it). */
static int ksigmask(int how, const sigset_t *set, sigset_t *old)
{
    sigset_t k;
    if (set) {
        k = *set;
        kick_bit(&k, how != SIG_UNBLOCK);
    }
    return syscall(SYS_rt_sigprocmask, how, set ? &k : NULL, old, (size_t)(_NSIG / 8)) ? errno : 0;
}

/* libc's functions the hot paths call, looked up once. */
static int (*real_sigmask)(int, const sigset_t *, sigset_t *);
static int (*real_kill)(pthread_t, int);
static int (*real_sigqueue)(pthread_t, int, const union sigval);
static pthread_t (*real_self)(void);

static void real_init(void)
{
    if (__atomic_load_n(&real_self, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&real_sigmask, ksigmask, __ATOMIC_RELAXED);
    __atomic_store_n(&real_kill, REAL(pthread_kill), __ATOMIC_RELAXED);
    __atomic_store_n(&real_sigqueue, REAL(pthread_sigqueue), __ATOMIC_RELAXED);
    __atomic_store_n(&real_self, REAL(pthread_self), __ATOMIC_RELEASE);
}

/* The mask the shim last put on this kernel thread. Per kernel thread on
 * purpose (it describes the kernel thread, not a nano-thread); only read
 * and written in functions that do not switch, so no stale TLS address. */
static __thread uint64_t kmask __attribute__((tls_model("initial-exec"))) = KMASK_UNKNOWN;

/* Put mask m on the calling kernel thread, with a system call only when
 * it differs from what the kernel thread has. */
static __attribute__((noinline)) void kmask_apply(uint64_t m)
{
    if (kmask == m)
        return;
    sigset_t s;
    bits_set(m, &s);
    real_init();
    real_sigmask(SIG_SETMASK, &s, NULL);
    kmask = m;
}

static __attribute__((noinline)) uint64_t kmask_read(void)
{
    if (kmask == KMASK_UNKNOWN) {
        sigset_t s;
        real_init();
        real_sigmask(SIG_BLOCK, NULL, &s);
        return set_bits(&s) & ~UNBLOCKABLE;
    }
    return kmask;
}

void shim_kmask_forget(void)
{
    kmask = KMASK_UNKNOWN;
}

/* ---- the queue of pending thread-directed signals ------------------------ */

/* The queue's lock is taken with every signal blocked on the kernel
 * thread: a handler that calls pthread_kill (async-signal-safe) on the
 * same nano-thread must not spin on a lock its own kernel thread holds.
 * Only the rare paths take it (queueing, taking, delivering). */
static void q_lock(struct shim_thread *st, sigset_t *saved)
{
    sigset_t all;
    sigfillset(&all);
    real_init();
    real_sigmask(SIG_SETMASK, &all, saved);
    while (__atomic_exchange_n(&st->sigq_lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&st->sigq_lock, __ATOMIC_RELAXED))
            ;
}

static void q_unlock(struct shim_thread *st, const sigset_t *saved)
{
    __atomic_store_n(&st->sigq_lock, 0, __ATOMIC_RELEASE);
    real_sigmask(SIG_SETMASK, saved, NULL);
}

/* Recompute the summary bits after a removal (lock held). */
static void q_summary(struct shim_thread *st)
{
    uint64_t p = 0;
    for (int i = 0; i < st->sigq_n; i++)
        p |= BIT(st->sigq[i].sig);
    __atomic_store_n(&st->pending, p, __ATOMIC_RELEASE);
}

/* Queue sig for st as sent by pid/uid: 0, or EAGAIN when a real-time
 * signal finds the queue full (sigqueue(3p)'s resource limit). A standard
 * signal already pending is not queued twice. */
static int q_put_from(struct shim_thread *st, int sig, int code, union sigval value, pid_t pid, uid_t uid)
{
    sigset_t saved;
    int r = 0;
    q_lock(st, &saved);
    int dup = sig < SIGRTMIN && (st->pending & BIT(sig));
    if (!dup) {
        if (st->sigq_n == SHIM_SIGQ_MAX) {
            r = EAGAIN;
        } else {
            struct shim_sigq_entry *e = &st->sigq[st->sigq_n++];
            e->sig = sig;
            e->code = code;
            e->pid = pid;
            e->uid = uid;
            e->value = value;
            __atomic_or_fetch(&st->pending, BIT(sig), __ATOMIC_SEQ_CST);
        }
    }
    q_unlock(st, &saved);
    return r;
}

static int q_put(struct shim_thread *st, int sig, int code, union sigval value)
{
    return q_put_from(st, sig, code, value, getpid(), getuid());
}

int shim_sig_queue_info(struct shim_thread *st, int sig, const siginfo_t *si)
{
    return q_put_from(st, sig, si->si_code, si->si_value, si->si_pid, si->si_uid);
}

/* Take the oldest entry of the lowest-numbered signal in want (the
 * kernel's order: standard signals by number, real-time ones in order
 * within a number): its number, or 0 if none. */
static int q_take(struct shim_thread *st, uint64_t want, struct shim_sigq_entry *out)
{
    if (!(__atomic_load_n(&st->pending, __ATOMIC_ACQUIRE) & want))
        return 0;
    sigset_t saved;
    q_lock(st, &saved);
    int best = -1;
    for (int i = 0; i < st->sigq_n; i++)
        if ((want & BIT(st->sigq[i].sig)) && (best < 0 || st->sigq[i].sig < st->sigq[best].sig))
            best = i;
    int sig = 0;
    if (best >= 0) {
        *out = st->sigq[best];
        sig = out->sig;
        memmove(&st->sigq[best], &st->sigq[best + 1], (size_t)(st->sigq_n - best - 1) * sizeof st->sigq[0]);
        st->sigq_n--;
        q_summary(st);
    }
    q_unlock(st, &saved);
    return sig;
}

static void fill_info(siginfo_t *info, const struct shim_sigq_entry *e)
{
    if (!info)
        return;
    memset(info, 0, sizeof *info);
    info->si_signo = e->sig;
    info->si_code = e->code;
    info->si_pid = e->pid;
    info->si_uid = e->uid;
    info->si_value = e->value;
}

/* Raise on the calling kernel thread, whose mask is st's, every signal
 * queued for st that its mask leaves open: the kernel runs each handler
 * before the raising call returns, on this nano-thread. With the siginfo
 * it was queued with (rt_tgsigqueueinfo: to the caller's own kernel
 * thread the kernel takes any si_code), so that a signal the watcher took
 * for it (sigwatch.c) shows its sender, as natively. */
static void deliver_queued(struct shim_thread *st)
{
    struct shim_sigq_entry e;
    int any = 0;
    while (q_take(st, ~__atomic_load_n(&st->sigmask, __ATOMIC_ACQUIRE), &e)) {
        siginfo_t si;
        fill_info(&si, &e);
        if (syscall(SYS_rt_tgsigqueueinfo, getpid(), (int)syscall(SYS_gettid), e.sig, &si) != 0) {
            if (e.code == SI_QUEUE)
                real_sigqueue(real_self(), e.sig, e.value);
            else
                real_kill(real_self(), e.sig);
        }
        __atomic_or_fetch(&st->sig_delivered, BIT(e.sig), __ATOMIC_RELAXED);
        any = 1;
    }
    if (any)
        __atomic_store_n(&st->sig_unreported, 1, __ATOMIC_RELAXED);
}

/* ---- the switch-in hook ----------------------------------------------------- */

/* Runs on the kernel thread that resumes a nano-thread, with its record. */
static void on_switch_in(void *data)
{
    struct shim_thread *st = data;
    int vp = nth_vp_id();
    if (!st) {
        /* A VP's idle context (or a nano-thread the shim has no record
         * for): nothing may run a handler there. A process-directed
         * signal goes to a nano-thread that leaves it open when it
         * resumes, or, once every VP is idle, to the watcher
         * (sigwatch.c), which queues it on one. */
        kmask_apply(IDLE_MASK);
        shim_sigwatch_idle(vp);
        return;
    }
    shim_sigwatch_busy(vp);
    uint64_t m = __atomic_load_n(&st->sigmask, __ATOMIC_RELAXED);
    kmask_apply(m);
    if (__builtin_expect((__atomic_load_n(&st->pending, __ATOMIC_ACQUIRE) & ~m) != 0, 0))
        deliver_queued(st);
}

static int hook_on;

static void *nudge(void *arg)
{
    (void)arg;
    return NULL;
}

/* From the first mask change or queued signal on: every switch-in puts
 * the incoming nano-thread's mask in place. Until then every kernel
 * thread has the mask every nano-thread has; a VP idle or parked at this
 * moment keeps it until it next switches or parks, so each VP is sent a
 * nano-thread that does nothing: its end resumes the VP's idle context
 * (or a nano-thread), through the hook. */
static void hook_ensure(void)
{
    if (__atomic_load_n(&hook_on, __ATOMIC_ACQUIRE))
        return;
    real_init();
    if (__atomic_exchange_n(&hook_on, 1, __ATOMIC_ACQ_REL))
        return;
    shim_sigwatch_start();       /* before the hook: idle VPs may wake it */
    nth_switch_hook_set(on_switch_in);
    int n = nth_num_vps();
    for (int i = 0; i < n; i++) {
        nth_attr_t a;
        nth_t t;
        nth_attr_init(&a);
        nth_attr_setvp(&a, i);
        nth_attr_setdetached(&a, 1);
        nth_create(&t, &a, nudge, NULL);   /* best effort: ENOMEM leaves it stale */
    }
}

void shim_sig_hook_ensure(void)
{
    hook_ensure();
}

void shim_sig_init(struct shim_thread *st, struct shim_thread *creator)
{
    uint64_t m = creator ? __atomic_load_n(&creator->sigmask, __ATOMIC_RELAXED) : kmask_read();
    __atomic_store_n(&st->sigmask, m, __ATOMIC_RELAXED);
    nth_sem_init(&st->sig_bell, 0);
}

void shim_sig_started(struct shim_thread *st)
{
    nth_switch_data_set(st);
    if (__atomic_load_n(&hook_on, __ATOMIC_ACQUIRE)) {
        shim_sigwatch_busy(nth_vp_id());
        kmask_apply(__atomic_load_n(&st->sigmask, __ATOMIC_RELAXED));
        if (__atomic_load_n(&st->pending, __ATOMIC_ACQUIRE) & ~st->sigmask)
            deliver_queued(st);
    }
}

void shim_nap(clockid_t clock, int64_t until)
{
    if (nth_on_standin()) {
        /* In the kernel, with the VP handed on: the VP this stand-in
         * serves may be stalled outside nth_blocking_enter (glibc's own
         * futex in thrd_join), and then no one fires a nano-thread alarm
         * armed here (it goes to the shared queue, which only a VP outside
         * the kernel or the backstop, when every VP is in
         * nth_blocking_enter, fires): a sigwait, sigsuspend or pause
         * polling for a process-directed signal napped until that VP came
         * back, seconds late. The wake-up signal ends the wait as the
         * doorbell ends a nap (shim_interrupt_waits sends both). */
        int64_t left = until - shim_now(clock);
        sigset_t m;
        if (left <= 0 || shim_kwait_begin(&m, NULL))
            return;
        struct timespec ts = shim_ns_ts(left);
        nth_blocking_enter();
        (void)REAL(ppoll)(NULL, 0, &ts, &m);
        nth_blocking_leave();
        (void)shim_kwait_end();
        return;
    }
    struct timespec ts = shim_ns_ts(until);
    nth_sem_clockwait(&shim_self()->sig_bell, clock, &ts);
}

/* These three peek (shim_self_peek): the I/O wrappers call them, also
 * from signal handlers. A thread with no record has no queued signal. */
int shim_signals(void)
{
    struct shim_thread *self = shim_self_peek();
    if (!self)
        return 0;
    if (__atomic_load_n(&self->pending, __ATOMIC_ACQUIRE) & ~__atomic_load_n(&self->sigmask, __ATOMIC_RELAXED)) {
        kmask_apply(__atomic_load_n(&self->sigmask, __ATOMIC_RELAXED));
        deliver_queued(self);
    }
    if (!__atomic_load_n(&self->sig_unreported, __ATOMIC_RELAXED))
        return 0;
    __atomic_store_n(&self->sig_unreported, 0, __ATOMIC_RELAXED);
    return 1;
}

void shim_signals_begin(void)
{
    struct shim_thread *self = shim_self_peek();
    if (!self)
        return;
    __atomic_store_n(&self->sig_unreported, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&self->sig_delivered, 0, __ATOMIC_RELAXED);
}

/* Sleeps and process-directed signals: a handler the kernel runs on its
 * own (alarm, kill, timers) leaves no trace the shim could see, so while
 * the nano-thread sleeps its mask is "everything", as in sigsuspend: the
 * signal stays pending for the process (or goes to another kernel thread
 * that leaves it open, as natively), each slice looks at what is pending,
 * and a signal the sleeper's own mask leaves open ends the sleep: the mask
 * comes back, the kernel runs the handler here, and the sleep returns
 * EINTR (nanosleep(3p), sleep(3p)). Only a signal with a handler ends it:
 * one ignored by default (SIGCHLD, SIGWINCH, ...) is discarded when the
 * mask comes back, as natively, and the sleep goes on. */
uint64_t shim_sleep_guard_begin(void)
{
    struct shim_thread *self = shim_self();
    /* Before hook_ensure: its first call waits for every idle VP to
     * take the hook (nth_switch_hook_set, up to seconds per VP that gets
     * no CPU), and a handler that interrupts us meanwhile -- alarm(1);
     * sleep(30) -- ran inside this sleep: it must end it, as a handler
     * run in the kernel's nanosleep does. Missed before, the sleep ran its
     * full 30 s (sleepint, 1 run in 20 at load 20). */
    self->sleep_ran0 = __atomic_load_n(&self->handlers_ran, __ATOMIC_RELAXED);
    uint64_t old = __atomic_load_n(&self->sigmask, __ATOMIC_RELAXED);
    hook_ensure();
    __atomic_store_n(&self->sigmask, ~UNBLOCKABLE, __ATOMIC_RELEASE);
    kmask_apply(~UNBLOCKABLE);
    return old;
}

static int has_handler(int sig)
{
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) != 0)
        return 0;
    return (sa.sa_flags & SA_SIGINFO) || (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN);
}

int shim_sleep_guard_check(uint64_t old)
{
    struct shim_thread *self = shim_self();
    uint64_t open = ~old & ~UNBLOCKABLE;
    sigset_t kp;
    REAL(sigpending)(&kp);
    uint64_t p = (set_bits(&kp) | __atomic_load_n(&self->pending, __ATOMIC_ACQUIRE)) & open;
    int ran = __atomic_load_n(&self->handlers_ran, __ATOMIC_RELAXED) != self->sleep_ran0;
    if (!p)
        return ran;
    int handled = 0;
    for (int sig = 1; sig <= 64; sig++)
        if ((p & BIT(sig)) && valid_sig(sig) && has_handler(sig))
            handled = 1;
    /* Open the mask: the kernel runs the pending handlers (or discards
     * the ignored signals) here, then the queued ones are raised. */
    __atomic_store_n(&self->sigmask, old, __ATOMIC_RELEASE);
    kmask_apply(old);
    deliver_queued(self);
    if (!handled && !ran) {
        __atomic_store_n(&self->sigmask, ~UNBLOCKABLE, __ATOMIC_RELEASE);
        kmask_apply(~UNBLOCKABLE);
    }
    return handled || ran;
}

void shim_sleep_guard_end(uint64_t old)
{
    struct shim_thread *self = shim_self();
    __atomic_store_n(&self->sigmask, old, __ATOMIC_RELEASE);
    kmask_apply(old);
}

static int has_restart(int sig, int need_handler)
{
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) != 0)
        return 1;
    if (!(sa.sa_flags & SA_SIGINFO) && (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN))
        return need_handler ? 1 : 0;    /* no handler ran: nothing to restart after */
    return (sa.sa_flags & SA_RESTART) != 0;
}

int shim_signals_restart(void)
{
    struct shim_thread *self = shim_self_peek();
    uint64_t d = self ? __atomic_exchange_n(&self->sig_delivered, 0, __ATOMIC_RELAXED) : 0;
    int known = d != 0;
    if (!known)
        d = ~(self ? __atomic_load_n(&self->sigmask, __ATOMIC_RELAXED) : 0) & ~UNBLOCKABLE;
    for (int sig = 1; sig <= 64; sig++)
        if ((d & BIT(sig)) && valid_sig(sig) && !has_restart(sig, !known))
            return 0;
    return 1;
}

void shim_interrupt_waits(struct shim_thread *st)
{
    __atomic_store_n(&st->cond_wake, 1, __ATOMIC_SEQ_CST);
    /* Before reading where it waits: the waits publish that, then read
     * the flag (nth_cond_wait_interruptible, nth_sem_clockwait_interruptible,
     * shim_kwait_begin). One of us sees the other. */
    nth_full_fence();
    pthread_cond_t *c = __atomic_load_n(&st->waiting_cond, __ATOMIC_SEQ_CST);
    if (c)
        nth_cond_broadcast((nth_cond_t *)c);   /* a spurious wake-up to it */
    sem_t *sem = __atomic_load_n(&st->waiting_sem, __ATOMIC_SEQ_CST);
    if (sem)
        nth_sem_interrupt((nth_sem_t *)sem);
    int tid = __atomic_load_n(&st->ktid, __ATOMIC_SEQ_CST);
    if (tid)
        syscall(SYS_tgkill, getpid(), tid, KICK_SIG);   /* ends its ppoll */
    nth_sem_post(&st->sig_bell);               /* ends an interruptible nap */
}

/* ---- waits in the kernel ---------------------------------------------------- */

/* Per kernel thread, read and written only in functions that do not
 * switch (the TLS address is taken afresh in each). */
static __thread int kick_tid __attribute__((tls_model("initial-exec")));
static __thread volatile sig_atomic_t kick_seen __attribute__((tls_model("initial-exec")));

static void kick_handler(int sig)
{
    (void)sig;
    kick_seen = 1;
}

/* glibc's sigaction refuses SIGCANCEL: the handler goes in with the
 * system call, which on x86-64 needs our own return trampoline. */
#if defined(__x86_64__)
__asm__(".text\n"
        ".p2align 4\n"
        "shim_kick_restorer:\n"
        "\tmovq $15, %rax\n"          /* rt_sigreturn */
        "\tsyscall\n");
void shim_kick_restorer(void) __asm__("shim_kick_restorer") __attribute__((visibility("hidden")));
#define KICK_RESTORER ((void *)shim_kick_restorer)
#define KICK_SA_RESTORER 0x04000000
#else
#define KICK_RESTORER NULL              /* the kernel's (vDSO) trampoline */
#define KICK_SA_RESTORER 0
#endif

struct kernel_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void *restorer;
    uint64_t mask;
};

static void kick_install(void)
{
    static int state;             /* 0 no, 1 being installed, 2 done */
    int s = 0;
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == 2)
        return;
    if (__atomic_compare_exchange_n(&state, &s, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        /* No SA_RESTART: the point is to end the call. */
        struct kernel_sigaction ka = { kick_handler, KICK_SA_RESTORER, KICK_RESTORER, 0 };
        if (syscall(SYS_rt_sigaction, KICK_SIG, &ka, NULL, sizeof ka.mask) != 0) {
            static const char msg[] = "nthlib: pthread shim: cannot install the wake-up signal\n";
            (void)!write(2, msg, sizeof msg - 1);
            abort();
        }
        __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2)
        ;
}

/* The calling kernel thread's id, after arming it: handler installed,
 * wake-up signal blocked outside the waits. */
static __attribute__((noinline)) int kick_arm(void)
{
    if (__builtin_expect(kick_tid != 0, 1))
        return kick_tid;
    kick_install();
    sigset_t k = kick_set();
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &k, NULL, (size_t)(_NSIG / 8));
    kick_tid = (int)syscall(SYS_gettid);
    return kick_tid;
}

/* The kernel-thread state above, for nth_tls_carry (tls.c): with a TCB
 * per thread it must follow the kernel thread, not the nano-thread. */
int shim_sig_tls_carry(void)
{
    return nth_tls_carry(&kmask, sizeof kmask) || nth_tls_carry(&kick_tid, sizeof kick_tid) ||
           nth_tls_carry((void *)&kick_seen, sizeof kick_seen);
}

void shim_kick_forget(void)
{
    kick_tid = 0;                 /* the child's kernel thread has another id */
    kick_seen = 0;
}

static __attribute__((noinline)) int kick_take(void)
{
    int k = kick_seen;
    kick_seen = 0;
    return k;
}

/* Publish the kernel thread, then look for a request (Dekker with
 * shim_interrupt_waits): 0, or EINTR with nothing published. */
static int kwait_publish(struct shim_thread *self)
{
    int tid = kick_arm();
    (void)kick_take();            /* a late kick for an earlier wait */
    __atomic_store_n(&self->cond_wake, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&self->ktid, tid, __ATOMIC_SEQ_CST);
    nth_full_fence();
    uint64_t m = __atomic_load_n(&self->sigmask, __ATOMIC_RELAXED);
    if ((__atomic_load_n(&self->pending, __ATOMIC_SEQ_CST) & ~m) ||
        (__atomic_load_n(&self->cancel_pending, __ATOMIC_SEQ_CST) &&
         self->cancel_state == PTHREAD_CANCEL_ENABLE)) {
        __atomic_store_n(&self->ktid, 0, __ATOMIC_SEQ_CST);
        return EINTR;
    }
    return 0;
}

int shim_kwait_begin(sigset_t *mask, const sigset_t *umask)
{
    struct shim_thread *self = shim_self();
    if (kwait_publish(self))
        return EINTR;
    if (umask) {
        *mask = *umask;
    } else {
        bits_set(__atomic_load_n(&self->sigmask, __ATOMIC_RELAXED), mask);
    }
    kick_bit(mask, 0);
    return 0;
}

int shim_kwait_end(void)
{
    __atomic_store_n(&shim_self()->ktid, 0, __ATOMIC_SEQ_CST);
    return kick_take();
}

void shim_kwait_abandon(void)
{
    struct shim_thread *self = shim_self_peek();
    if (self)
        __atomic_store_n(&self->ktid, 0, __ATOMIC_SEQ_CST);
    (void)kick_take();
}

int shim_kwait_open(void)
{
    struct shim_thread *self = shim_self();
    if (kwait_publish(self))
        return EINTR;
    sigset_t k = kick_set();
    syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &k, NULL, (size_t)(_NSIG / 8));
    return 0;
}

void shim_kwait_close(void)
{
    sigset_t k = kick_set();
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &k, NULL, (size_t)(_NSIG / 8));
    __atomic_store_n(&shim_self()->ktid, 0, __ATOMIC_SEQ_CST);
}

/* ---- sending ------------------------------------------------------------------ */

/* Signals whose default action is to do nothing (signal(7)). */
static int default_ignored(int sig)
{
    return sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH || sig == SIGCONT;
}

/* A live record: not finished, its nano-thread still the one it names. */
static int thread_alive(struct shim_thread *st)
{
    return !__atomic_load_n(&st->done, __ATOMIC_ACQUIRE);
}

static int send(struct shim_thread *st, int sig, int code, union sigval value)
{
    if (!st)
        return ESRCH;
    if (sig == 32 || sig == 33)
        return EINVAL;           /* glibc's own, refused first */
    if (!thread_alive(st)) {
        /* Ended, not yet joined: its ID is valid (pthread_kill(3), glibc
         * 2.34 on, bug 19193): pthread_kill succeeds sending nothing,
         * whatever the number; pthread_sigqueue still says ESRCH. */
        return code == SI_QUEUE ? ESRCH : 0;
    }
    if (sig != 0 && !valid_sig(sig))
        return EINVAL;
    if (sig == 0)
        return 0;
    real_init();
    if (sig == SIGKILL || sig == SIGSTOP)
        return real_kill(real_self(), sig);    /* the whole process, at once */
    if (shim_in_handler() && st == shim_self_in_handler()) {
        /* To the caller from a handler (async-signal-safe: no record made,
         * no queue, no hook): to its kernel thread, as natively; the
         * kernel delivers it when the handler's mask lets it. */
        return code == SI_QUEUE ? real_sigqueue(real_self(), sig, value) : real_kill(real_self(), sig);
    }
    struct shim_thread *self = shim_in_handler() ? shim_self_in_handler() : shim_self();
    if (!(__atomic_load_n(&st->sigmask, __ATOMIC_ACQUIRE) & BIT(sig))) {
        /* Open on the target, no handler: what it does is process-wide
         * (terminate, stop) or nothing; do it now, as the kernel would,
         * rather than when the target next runs (maybe never). */
        struct sigaction sa;
        sigaction(sig, NULL, &sa);
        if (sa.sa_handler == SIG_IGN || (sa.sa_handler == SIG_DFL && default_ignored(sig)))
            return 0;
        if (sa.sa_handler == SIG_DFL && !(kmask_read() & BIT(sig)))
            return real_kill(real_self(), sig);
    }
    if (st == self && !(__atomic_load_n(&self->sigmask, __ATOMIC_RELAXED) & BIT(sig))) {
        /* Open on the caller: handled before this returns (kmask is its). */
        kmask_apply(__atomic_load_n(&self->sigmask, __ATOMIC_RELAXED));
        return code == SI_QUEUE ? real_sigqueue(real_self(), sig, value) : real_kill(real_self(), sig);
    }
    if (shim_in_handler()) {
        /* To another thread from a handler: the queue is safe here (its
         * lock is taken with signals blocked); the hook and the wake-up
         * take locks the interrupted code may hold: the helper's. */
        int r = q_put(st, sig, code, value);
        if (r == 0)
            shim_defer_kick(st);
        return r;
    }
    hook_ensure();
    int r = q_put(st, sig, code, value);
    if (r || st == self)
        return r;
    shim_interrupt_waits(st);   /* the handler, then EINTR (or a 0 from a condvar) */
    return 0;
}

SHIM_DECL(pthread_kill)
int nth_shim_pthread_kill(pthread_t t, int sig)
{
    return send((struct shim_thread *)t, sig, SI_TKILL, (union sigval){ .sival_int = 0 });
}
SHIM_EXPORT(pthread_kill)

SHIM_DECL(pthread_sigqueue)
int nth_shim_pthread_sigqueue(pthread_t t, int sig, const union sigval value)
{
    return send((struct shim_thread *)t, sig, SI_QUEUE, value);
}
SHIM_EXPORT(pthread_sigqueue)

SHIM_DECL(raise)
int nth_shim_raise(int sig)
{
    /* In a handler: to the kernel thread, as natively (its record may
     * not exist, and making one allocates). shim_in_handler first:
     * on_nano (nth_self) starts the runtime when it has not started,
     * which allocates (hwloc): a storm's handler that interrupted malloc
     * corrupted the heap (tests/shim/sigsafe.c). */
    int r = !shim_in_handler() && on_nano() ? nth_shim_pthread_kill((pthread_t)shim_self(), sig)
                         : REAL(raise)(sig) ? errno : 0;
    if (r) {
        errno = r;
        return -1;
    }
    return 0;
}
SHIM_EXPORT(raise)

/* ---- masks -------------------------------------------------------------------- */

SHIM_DECL(pthread_sigmask)
int nth_shim_pthread_sigmask(int how, const sigset_t *restrict set, sigset_t *restrict old)
{
    if (set && how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK)
        return EINVAL;
    if (shim_in_handler()) {
        /* The handler's mask is its kernel thread's, which the kernel
         * puts back when the handler returns: no record to change, no
         * lock (sigprocmask is async-signal-safe). */
        int r = ksigmask(how, set, old);
        if (r == 0 && old)
            bits_set(set_bits(old) & ~UNBLOCKABLE, old);
        return r;
    }
    if (!on_nano())
        return REAL(pthread_sigmask)(how, set, old);
    struct shim_thread *self = shim_self();
    uint64_t cur = __atomic_load_n(&self->sigmask, __ATOMIC_RELAXED);
    if (old)
        bits_set(cur, old);
    if (!set)
        return 0;
    uint64_t b = set_bits(set), m = cur;
    switch (how) {
    case SIG_BLOCK: m |= b; break;
    case SIG_UNBLOCK: m &= ~b; break;
    default: m = b; break;
    }
    m &= ~UNBLOCKABLE;
    if (m != cur)
        hook_ensure();
    __atomic_store_n(&self->sigmask, m, __ATOMIC_RELEASE);
    kmask_apply(m);          /* kernel-pending ones now open run here */
    if (__atomic_load_n(&self->pending, __ATOMIC_ACQUIRE) & ~m)
        deliver_queued(self);
    return 0;
}
SHIM_EXPORT(pthread_sigmask)

SHIM_DECL(sigprocmask)
int nth_shim_sigprocmask(int how, const sigset_t *restrict set, sigset_t *restrict old)
{
    int r = nth_shim_pthread_sigmask(how, set, old);
    if (r) {
        errno = r;
        return -1;
    }
    return 0;
}
SHIM_EXPORT(sigprocmask)

/* Pending for the caller: its own queue, its kernel thread's and the
 * process's. */
SHIM_DECL(sigpending)
int nth_shim_sigpending(sigset_t *set)
{
    if (REAL(sigpending)(set) != 0)
        return -1;
    /* Peek: async-signal-safe, and a thread with no record has nothing
     * queued. */
    struct shim_thread *self = shim_in_handler() ? shim_self_in_handler_peek()
                               : on_nano() ? shim_self_peek() : NULL;
    if (!self)
        return 0;
    uint64_t b = set_bits(set) | __atomic_load_n(&self->pending, __ATOMIC_ACQUIRE);
    memcpy(set, &b, sizeof b);
    return 0;
}
SHIM_EXPORT(sigpending)

/* ---- waiting for signals -------------------------------------------------------- */

/* Wait for one of set's signals, queued on the caller or pending on its
 * kernel thread or the process, until deadline (monotonic ns): its
 * number, or -1 with errno EAGAIN at the deadline. */
static int wait_signal(const sigset_t *set, siginfo_t *info, int64_t deadline)
{
    static const struct timespec zero = { 0, 0 };
    SHIM_HOME_ENTER();
    struct shim_thread *self = shim_self();
    uint64_t want = set_bits(set) & ~UNBLOCKABLE;
    int64_t step = 0;
    for (;;) {
        struct shim_sigq_entry e;
        int sig = q_take(self, want, &e);
        if (sig) {
            fill_info(info, &e);
            return sig;
        }
        int r = REAL(sigtimedwait)(set, info, &zero);
        if (r > 0 || (r < 0 && errno != EAGAIN))
            return SHIM_HOME_RET(r);
        shim_testcancel();
        int64_t now = shim_now(CLOCK_MONOTONIC);
        if (now >= deadline) {
            errno = EAGAIN;
            return SHIM_HOME_RET(-1);
        }
        /* Naps grow to a slice: a process-directed signal is seen by
         * polling; pthread_kill to us rings the doorbell. */
        step = step ? (step < SHIM_SLICE_NS ? step * 2 : step) : 20000;
        /* A process-directed signal pending ends dormancy (the cpumgr
         * watcher looks): the naps are slices. */
        uint64_t prev = shim_slices_begin(CLOCK_MONOTONIC, deadline);
        shim_nap(CLOCK_MONOTONIC, now + step < deadline ? now + step : deadline);
        nth_wait_slices(prev);
    }
}

SHIM_DECL(sigtimedwait)
int nth_shim_sigtimedwait(const sigset_t *restrict set, siginfo_t *restrict info, const struct timespec *restrict tmo)
{
    if (!shim_on_nano())
        return REAL(sigtimedwait)(set, info, tmo);
    if (tmo && shim_check_ts(tmo)) {
        errno = EINVAL;
        return -1;
    }
    int64_t deadline = tmo ? shim_now(CLOCK_MONOTONIC) + shim_ts_ns(tmo) : INT64_MAX;
    return wait_signal(set, info, deadline);
}
SHIM_EXPORT(sigtimedwait)

SHIM_DECL(sigwaitinfo)
int nth_shim_sigwaitinfo(const sigset_t *restrict set, siginfo_t *restrict info)
{
    if (!shim_on_nano())
        return REAL(sigwaitinfo)(set, info);
    return wait_signal(set, info, INT64_MAX);
}
SHIM_EXPORT(sigwaitinfo)

SHIM_DECL(sigwait)
int nth_shim_sigwait(const sigset_t *restrict set, int *restrict sig)
{
    if (!shim_on_nano())
        return REAL(sigwait)(set, sig);
    siginfo_t si;
    int r = wait_signal(set, &si, INT64_MAX);
    if (r < 0)
        return errno;
    *sig = r;
    return 0;
}
SHIM_EXPORT(sigwait)

/* sigsuspend/pause: the nano-thread's mask becomes "everything" while it
 * waits (so no handler runs early, on this or any kernel thread it
 * resumes on), until a signal that mask leaves open is pending for the
 * process, its kernel thread or queued for it; then its mask becomes
 * mask, so the kernel runs the handlers here, and the old one returns. */
SHIM_DECL(sigsuspend)
int nth_shim_sigsuspend(const sigset_t *mask)
{
    if (!shim_on_nano())
        return REAL(sigsuspend)(mask);
    SHIM_HOME_ENTER();
    struct shim_thread *self = shim_self();
    uint64_t old = __atomic_load_n(&self->sigmask, __ATOMIC_RELAXED);
    uint64_t during = set_bits(mask) & ~UNBLOCKABLE, open = ~during & ~UNBLOCKABLE;
    hook_ensure();
    __atomic_store_n(&self->sigmask, ~UNBLOCKABLE, __ATOMIC_RELEASE);
    kmask_apply(~UNBLOCKABLE);
    int64_t step = 0;
    for (;;) {
        sigset_t pending;
        REAL(sigpending)(&pending);
        uint64_t p = set_bits(&pending) | __atomic_load_n(&self->pending, __ATOMIC_ACQUIRE);
        if (p & open)
            break;
        shim_testcancel();
        step = step ? (step < SHIM_SLICE_NS ? step * 2 : step) : 20000;
        uint64_t prev = shim_slices_begin(CLOCK_MONOTONIC, INT64_MAX);  /* as wait_signal's */
        shim_nap(CLOCK_MONOTONIC, shim_now(CLOCK_MONOTONIC) + step);
        nth_wait_slices(prev);
    }
    __atomic_store_n(&self->sigmask, during, __ATOMIC_RELEASE);
    kmask_apply(during);                /* kernel-pending handlers run here */
    deliver_queued(self);
    __atomic_store_n(&self->sigmask, old, __ATOMIC_RELEASE);
    kmask_apply(old);
    __atomic_store_n(&self->sig_unreported, 0, __ATOMIC_RELAXED);
    errno = EINTR;
    return SHIM_HOME_RET(-1);
}
SHIM_EXPORT(sigsuspend)

SHIM_DECL(pause)
int nth_shim_pause(void)
{
    sigset_t cur;
    nth_shim_pthread_sigmask(SIG_BLOCK, NULL, &cur);
    return nth_shim_sigsuspend(&cur);
}
SHIM_EXPORT(pause)
