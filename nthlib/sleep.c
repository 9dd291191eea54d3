/*
 * sleep.c -- nth_sleep_ns and nth_sleep_until: the sleeping nano-thread
 * waits on an alarm in its VP's timer queue and leaves the VP to others.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "sync_core.h"
#include "wait_queue.h"

static int sleep_alarm(struct nth_alarm *a, uint64_t now)
{
    struct nth_waiter *w = a->arg;
    (void)now;
    if (w->clock == CLOCK_REALTIME && !nth_abs_passed(CLOCK_REALTIME, &w->abs)) {
        a->deadline = nth_abs_to_mono(CLOCK_REALTIME, &w->abs);
        if (a->deadline <= nth_now_ns())
            a->deadline = nth_now_ns() + 1;
        return 1;
    }
    atomic_store_explicit(&w->state, NTH_W_CLAIMED_TIMEOUT, memory_order_relaxed);
    nth__wake_any_fifo(w->t);    /* behind the ready ones, as waiter_alarm's */
    atomic_store_explicit(&w->state, NTH_W_TIMEDOUT, memory_order_release);
    return 0;
}

static int sleep_mono(clockid_t clock, const struct timespec *abs, uint64_t deadline)
{
    nth_t self = nth_self();
    if (!self) {
        /* A kernel thread that is no VP (foreign.c): the kernel times it.
         * libc's call could be a shim's, hence the system call. */
        struct timespec ts = { (time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u) };
        clockid_t c = CLOCK_MONOTONIC;
        if (abs) {
            ts = *abs;
            c = clock;
        }
        while (syscall(SYS_clock_nanosleep, c, TIMER_ABSTIME, &ts, NULL) != 0 && errno == EINTR)
            ;
        return 0;
    }
    struct nth_waiter w;
    nth_waiter_init(&w, self);
    w.clock = clock;
    if (abs)
        w.abs = *abs;
    w.alarm.deadline = deadline;
    w.alarm.fn = sleep_alarm;
    w.alarm.arg = &w;
    nth__sync_arm(&w.alarm);
    nth_waiter_block(&w, &w, NTH_OBJ_SLEEP);   /* SYNCH sleep, not a bare SYNCH */
    /* The alarm is DONE once the state is final; nothing to cancel. */
    while (atomic_load_explicit(&w.alarm.state, memory_order_acquire) != NTH_ALARM_DONE)
        nth_sync_relax();
    return 0;
}

int nth_sleep_ns(uint64_t ns)
{
    uint64_t now = nth_now_ns();
    uint64_t d = now + ns < now ? NTH_TQ_NONE - 1 : now + ns;
    if (ns == 0)
        return nth_yield();
    return sleep_mono(CLOCK_MONOTONIC, NULL, d);
}

int nth_sleep_until(clockid_t clock, const struct timespec *abstime)
{
    int e = nth_check_abs(clock, abstime);
    if (e)
        return e;
    if (nth_abs_passed(clock, abstime))
        return 0;
    return sleep_mono(clock, abstime, nth_abs_to_mono(clock, abstime));
}
