/*
 * mock_core.c -- a stand-in for the runtime core, for testing the sync
 * objects' logic before (and independently of) the real scheduler.
 *
 * Each "nano-thread" is a kernel thread; nth_wait/nth_to_rq are a futex
 * permit with the same semantics as the core's (a wake before the wait is
 * kept; returns may be spurious). A waiting thread fires expired alarms
 * itself and sleeps no longer than the earliest deadline, like a parked VP.
 * Only this test harness uses pthreads; the library under test does not.
 * Its kernel threads come from libc's own pthread functions, as the real
 * core's VPs do (nthlib/libc_real.c): under the pthread shim
 * (tests/shim/nthlib-suite.sh) pthread_create would make nano-threads of
 * the shim's runtime, which the futex waits below would block with their
 * VP, so a waker queued behind a waiter on the same VP never ran.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "nth.h"
#include "sync_core.h"
#include "libc_real.h"

struct nth_thread {
    uint32_t permit;
    pthread_t pt;
    void *(*fn)(void *);
    void *arg;
    void *ret;
    void *specific;
};

static __thread struct nth_thread *self_t;

/* Never traced: the objects' trace hook is a no-op here. */
int nth_trace_on;
void nth__sync_trace_wait(const void *obj, unsigned kind)
{
    (void)obj;
    (void)kind;
}

static void futex_wait(uint32_t *addr, uint32_t val, uint64_t timeout_ns)
{
    struct timespec ts, *tp = NULL;
    if (timeout_ns != UINT64_MAX) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
        ts.tv_nsec = (long)(timeout_ns % 1000000000u);
        tp = &ts;
    }
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, tp, NULL, 0);
}

nth_t nth_self(void)
{
    if (!self_t)
        self_t = calloc(1, sizeof *self_t);
    return self_t;
}

void nth_wait(void)
{
    nth_t me = nth_self();
    for (;;) {
        if (__atomic_exchange_n(&me->permit, 0, __ATOMIC_ACQUIRE))
            return;
        uint64_t next = nth__timers_poll(NULL);
        if (__atomic_exchange_n(&me->permit, 0, __ATOMIC_ACQUIRE))
            return;
        uint64_t now = nth_now_ns();
        /* Poll at least every 2 ms: another thread may arm an earlier
         * alarm meanwhile, and it has no way to shorten our sleep. */
        uint64_t t = next == UINT64_MAX || next - now > 2000000 ? 2000000
                     : next > now ? next - now : 0;
        if (t)
            futex_wait(&me->permit, 0, t);
    }
}

int nth_to_rq(nth_t t)
{
    if (!t)
        return ESRCH;
    __atomic_store_n(&t->permit, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &t->permit, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    return 0;
}

void nth__wake(nth_t t)
{
    nth_to_rq(t);
}

/* Kernel threads have no ready queue to jump. */
void nth__wake_fifo(nth_t t)
{
    nth_to_rq(t);
}

int nth_yield(void)
{
    nth__timers_poll(NULL);
    sched_yield();
    return 0;
}

int nth_num_vps(void) { return 2; }
int nth_vp_id(void) { return 0; }

/* No per-VP queues here: timed waits use the shared fallback queue, which
 * nth_wait above polls. Key destructors are run by trampoline(). */
struct nth_tq *nth__vp_timer_queue(void) { return NULL; }
uint64_t nth__wait_real(void) { return 0; }  /* no slices (nth_wait_slices) here */
/* Every mock thread polls the fallback queue in nth_wait: nothing to do. */
void nth__sync_fallback_armed(uint64_t before) { (void)before; }
void nth__keys_exit_hook_install(void) {}

void **nth__specific_slot(void)
{
    return &nth_self()->specific;
}

/* libc's function name (a test harness: a missing one is fatal). */
static void *libc_fn(const char *name)
{
    void *f = nth_libc_sym(name);
    if (!f)
        abort();
    return f;
}

static void *trampoline(void *p)
{
    struct nth_thread *t = p;
    self_t = t;
    t->ret = t->fn(t->arg);
    nth__keys_exit(&t->specific);
    return NULL;
}

int nth_create(nth_t *t, const nth_attr_t *attr, void *(*fn)(void *), void *arg)
{
    (void)attr;
    struct nth_thread *n = calloc(1, sizeof *n);
    if (!n)
        return EAGAIN;
    n->fn = fn;
    n->arg = arg;
    /* The attribute functions too: the shim's keep their own layout. */
    int (*attr_init)(pthread_attr_t *) = libc_fn("pthread_attr_init");
    int (*attr_setstacksize)(pthread_attr_t *, size_t) = libc_fn("pthread_attr_setstacksize");
    int (*attr_destroy)(pthread_attr_t *) = libc_fn("pthread_attr_destroy");
    pthread_attr_t a;
    attr_init(&a);
    attr_setstacksize(&a, 256 * 1024);
    int e = nth_libc_pthread_create()(&n->pt, &a, trampoline, n);
    attr_destroy(&a);
    if (e) {
        free(n);
        return EAGAIN;
    }
    *t = n;
    return 0;
}

int nth_join(nth_t t, void **ret)
{
    int (*join)(pthread_t, void **) = libc_fn("pthread_join");
    join(t->pt, NULL);
    if (ret)
        *ret = t->ret;
    free(t);
    return 0;
}
