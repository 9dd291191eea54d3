/*
 * blocking.c -- nth_blocking_enter / nth_blocking_leave: a nano-thread about
 * to make a system call that may block in the kernel moves, with its stack,
 * onto a spare kernel thread, so its VP keeps running the other nano-threads
 * of its ready queue (DESIGN invariant 4). On leave it goes back into its
 * VP's ready queue, and the spare returns to a small cache.
 *
 * This is the nano-thread-moves variant of Go's syscall hand-off: the VP
 * (CPU, ready queue, timer queue) stays on its own kernel thread, so no VP
 * state changes hands; only the calling nano-thread's context is resumed by
 * the spare. The spare runs on the CPU of the VP it serves (hwloc binding).
 *
 * Between enter and leave the nano-thread runs outside the scheduler: only
 * plain system calls and libc are allowed there, no nthlib call but
 * nth_self(), nth_vp_id() (-1) and nth_blocking_leave().
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include "internal.h"
#include "libc_real.h"
#include "sync_core.h"
#include "olock.h"
#include "trace_core.h"

#ifdef NTH_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef NTH_TSAN
void *__tsan_get_current_fiber(void);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

#define SPARE_CACHE_MAX 16
#define SPARE_STACK (128 * 1024)

struct spare {
    struct nth_vp fake;            /* its "VP": id -1, current = the guest */
    struct nth_thread me;          /* the spare's own context */
    int word;                      /* futex: 1 = a guest is waiting */
    struct nth_thread *guest;
    struct nth_vp *home;           /* the guest's VP */
    struct spare *next;            /* cache link */
    const void *stack_bottom;      /* for AddressSanitizer */
    size_t stack_size;
    int cpu;                       /* OS index bound to, -1 none */
    void *tsan_fiber;              /* the spare's own, for ThreadSanitizer */
};

static uint32_t cache_lock;
static struct spare *cache;
static int ncache;

static __thread struct spare *tls_spare __attribute__((tls_model("initial-exec")));

static __attribute__((noinline)) struct spare *my_spare(void)
{
    __asm__ __volatile__("" ::: "memory");
    return tls_spare;
}

static __attribute__((noinline)) int errno_get(void)
{
    __asm__ __volatile__("" ::: "memory");
    return errno;
}

static __attribute__((noinline)) void errno_set(int e)
{
    __asm__ __volatile__("" ::: "memory");
    errno = e;
}

static void bind_like(struct spare *s, struct nth_vp *vp)
{
    if (vp->cpu == s->cpu || !nth_rt.topo)
        return;
    s->cpu = vp->cpu;
    if (vp->cpu < 0 || !nth_rt.cfg.bind)
        return;
    hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(nth_rt.topo, (unsigned)vp->cpu);
    if (pu)
        hwloc_set_cpubind(nth_rt.topo, pu->cpuset, HWLOC_CPUBIND_THREAD);
}

static void *spare_main(void *arg)
{
    struct spare *s = arg;
    tls_spare = s;
    nth_vp_self_set(&s->fake);
#ifdef NTH_TSAN
    s->tsan_fiber = __tsan_get_current_fiber();
#endif
#ifdef NTH_ASAN
    pthread_attr_t a;
    void *lo;
    size_t sz;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstack(&a, &lo, &sz);
        pthread_attr_destroy(&a);
        s->stack_bottom = lo;
        s->stack_size = sz;
    }
#endif
    for (;;) {
        while (__atomic_load_n(&s->word, __ATOMIC_ACQUIRE) == 0)
            nth_futex_wait(&s->word, 0, -1);
        __atomic_store_n(&s->word, 0, __ATOMIC_RELAXED);
        struct nth_thread *g = s->guest;
        bind_like(s, s->home);
        /* Its VP has switched away from it once on_cpu drops. We may
         * share the VP's CPU: after a short spin, let the VP run. */
        for (unsigned n = 0; __atomic_load_n(&g->on_cpu, __ATOMIC_ACQUIRE); n++) {
            if (n < 64)
                nth_cpu_relax();
            else
                nth_sys_yield();
        }
        g->on_cpu = 1;
        s->fake.current = g;
        s->fake.prev = NULL;
#ifdef NTH_ASAN
        __sanitizer_start_switch_fiber(&s->me.asan_fake, g->asan_bottom, g->asan_size);
#endif
#ifdef NTH_TSAN
        __tsan_switch_to_fiber(g->tsan_fiber, 0);
#endif
        nth_ctx_switch(&s->me.ctx, &g->ctx);
#ifdef NTH_ASAN
        __sanitizer_finish_switch_fiber(s->me.asan_fake, NULL, NULL);
#endif
        /* The guest called nth_blocking_leave: its context is saved. */
        struct nth_vp *home = s->home;
        s->fake.current = NULL;
        __atomic_store_n(&g->on_cpu, 0, __ATOMIC_RELEASE);
        nth_thread_set_ready(g);
        nth_sched_enqueue(home, g);
        nth_olock(&cache_lock);
        s->next = cache;
        cache = s;
        ncache++;
        nth_ounlock(&cache_lock);
    }
    return NULL;
}


static struct spare *spare_get(void)
{
    nth_olock(&cache_lock);
    struct spare *s = cache;
    if (s) {
        cache = s->next;
        ncache--;
    }
    nth_ounlock(&cache_lock);
    if (s)
        return s;
    s = aligned_alloc(NTH_CACHELINE, (sizeof *s + NTH_CACHELINE - 1) & ~(size_t)(NTH_CACHELINE - 1));
    if (!s)
        return NULL;
    memset(s, 0, sizeof *s);
    s->fake.id = -1;
    s->fake.cpu = -1;
    /* A guest's nth_to_rq (e.g. a condvar signal) then goes to the global
     * ready queue instead of this VP-less shell. */
    s->fake.disabled = 1;
    s->cpu = -1;
    pthread_attr_t a;
    pthread_t kt;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, SPARE_STACK);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int e = /* libc's: a spare must not become a nano-thread of itself */
    nth_libc_pthread_create()(&kt, &a, spare_main, s);
    pthread_attr_destroy(&a);
    if (e) {
        free(s);
        return NULL;
    }
    return s;
}

int nth_blocking_enter(void)
{
    nth_ensure_started();         /* main becomes a nano-thread on VP 0 */
    struct nth_vp *vp = nth_vp_self();
    if (!vp)
        return 0;                 /* a plain kernel thread: nothing to hand off */
    if (my_spare())
        return EBUSY;             /* already entered */
    struct spare *s = spare_get();
    if (!s)
        return EAGAIN;            /* the call will block this VP */
    struct nth_thread *self = vp->current;
    s->guest = self;
    s->home = vp;
    __atomic_store_n(&s->word, 1, __ATOMIC_RELEASE);
    nth_futex_wake(&s->word, 1);
    /* Leave the VP as if waiting; nothing can enqueue us meanwhile, since
     * our state stays RUNNING (a stray nth_to_rq only sets the permit).
     * We resume on the spare. */
    nth_trace_rt_blocking_enter(self);
    nth_sched_block(vp, NTH_PS_NONE);
    return 0;
}

int nth_blocking_leave(void)
{
    struct spare *s = my_spare();
    if (!s)
        return 0;                 /* enter was a no-op */
    struct nth_thread *self = s->guest;
    int e = errno_get();
    nth_trace_rt_blocking_leave(self);
#ifdef NTH_ASAN
    __sanitizer_start_switch_fiber(&self->asan_fake, s->stack_bottom, s->stack_size);
#endif
#ifdef NTH_TSAN
    __tsan_switch_to_fiber(s->tsan_fiber, 0);
#endif
    nth_ctx_switch(&self->ctx, &s->me.ctx);
    /* Resumed by a VP's nth_sched_switch: finish its switch as it would. */
    struct nth_vp *vp = nth_vp_self();
#ifdef NTH_ASAN
    const void *b;
    size_t sz;
    __sanitizer_finish_switch_fiber(self->asan_fake, &b, &sz);
    /* As the core's switch does: stacks it did not allocate (main's, a VP's
     * own) learn their bounds from the first switch away from them. */
    if (vp->prev && !vp->prev->asan_bottom) {
        vp->prev->asan_bottom = b;
        vp->prev->asan_size = sz;
    }
#endif
    errno_set(e);
    nth_post_switch(vp);
    return 0;
}
