/*
 * tls_switch.c -- per-nano-thread thread pointers (x86-64): a nano-thread
 * that adopted a thread pointer (nth_tls_adopt; the pthread shim gives
 * each of its threads a TLS block and TCB of glibc's layout) runs with
 * %fs pointing at it, so its __thread data and errno follow it from VP to
 * VP. The switch (sched.c, switch_to) loads the incoming nano-thread's
 * pointer only when it differs from what the kernel thread has loaded;
 * a nano-thread without one, and every VP's idle context, runs on the
 * kernel thread's own (VP 0's idle context, whose kernel thread's own TCB
 * is main's, on one from the enabler's allocator).
 *
 * The runtime's own TLS describes the kernel thread (nth_tls_vp, the
 * biased-locking slot, the trace record state; the shim adds its kernel
 * signal mask and wake-up state): those ranges are "carried", copied from
 * the outgoing TCB into the incoming one before %fs changes, so that
 * whatever runs on the kernel thread, before or after the change, reads
 * this kernel thread's values. Copy first, then load: a signal handler
 * that runs in between reads the same values from either TCB.
 *
 * The field's way (BLT, ULP and Argobots' ABT_tls "per-ULT TLS"): M:N
 * runtimes that must keep glibc's per-thread state per user-level thread
 * switch the thread pointer with each user-level thread.
 */
#include "internal.h"
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <asm/prctl.h>
#endif
#include "mutex_bias.h"
#include "trace_core.h"

int nth_tp_on;

#define CARRY_MAX 16
static struct { ptrdiff_t off; size_t len; } carry[CARRY_MAX];
static int ncarry;
static int use_wrfsbase;
/* errno's offset from the thread pointer (libc's static TLS): the switch
 * saves and restores errno through vp->errno_loc, which must follow the
 * loaded TCB (a nano-thread without a TCB of its own shares its VP's, and
 * keeps its errno by that save and restore, as without TLS switching). */
static ptrdiff_t errno_off;
static nth_tls_alloc_fn vp_tp_alloc;

#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif

static inline char *tp_now(void)
{
#if defined(__x86_64__)
    char *tp;
    __asm__ __volatile__("movq %%fs:0, %0" : "=r"(tp));
    return tp;
#else
    return NULL;
#endif
}

void *nth_tp_current(void)
{
    return tp_now();
}

static int carry_add(const void *addr, size_t len)
{
    char *tp = tp_now();
    size_t static_size = 0, align = 0;
    void (*info)(size_t *, size_t *) = (void (*)(size_t *, size_t *))dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
    if (info)
        info(&static_size, &align);
    /* Static TLS lies below the TCB on x86-64 (TLS_TCB_AT_TP); the TCB
     * itself (glibc's struct pthread) lies above, up to a few KiB. */
    ptrdiff_t off = (const char *)addr - tp;
    if (!len || off < -(ptrdiff_t)(static_size ? static_size : 65536) || off + (ptrdiff_t)len > 4096)
        return EINVAL;
    if (ncarry == CARRY_MAX)
        return ENOSPC;
    carry[ncarry].off = off;
    carry[ncarry].len = len;
    ncarry++;
    return 0;
}

int nth_tls_carry(void *addr, size_t len)
{
    if (__atomic_load_n(&nth_tp_on, __ATOMIC_ACQUIRE))
        return EBUSY;
    return carry_add(addr, len);
}

int nth_tls_enable(nth_tls_alloc_fn alloc)
{
#if !defined(__x86_64__) || defined(NTH_ASAN) || defined(NTH_TSAN)
    /* Sanitizers keep their own per-thread state in TLS and follow the
     * kernel threads: their builds keep TLS per kernel thread. */
    (void)alloc;
    return ENOTSUP;
#else
    static int core_carried;
    if (!alloc)
        return EINVAL;
    if (__atomic_load_n(&nth_tp_on, __ATOMIC_ACQUIRE))
        return 0;
    /* The runtime's TLS, all of it: it describes the kernel thread. */
    if (!core_carried) {
        if (carry_add(&nth_tls_vp, sizeof nth_tls_vp) || carry_add(&nth_bias_me, sizeof nth_bias_me) ||
            nth_trace_tls_carry(carry_add))
            return ENOSPC;
        core_carried = 1;
    }
    use_wrfsbase = (getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE) != 0;
    errno_off = (char *)&errno - tp_now();
    vp_tp_alloc = alloc;
    if (__atomic_load_n(&nth_rt.starting, __ATOMIC_ACQUIRE)) {
        /* Started already (a library's constructor took a lock through
         * the pthread shim before the shim's own constructor ran): fine
         * while main runs on VP 0 with its kernel thread's TCB, which it
         * keeps; VP 0's idle context, not running now, gets its own. Any
         * other nano-thread made so far runs with its VP's. */
        struct nth_vp *vp = nth_vp_self();
        if (!__atomic_load_n(&nth_rt.started, __ATOMIC_ACQUIRE) || !vp || vp != nth_rt.vps[0] ||
            vp->current != &nth_main_thread || vp->tp_loaded != vp->tp_own)
            return EBUSY;
        void *own = alloc();
        if (!own)
            return ENOMEM;
        nth_main_thread.tp = vp->tp_own;
        vp->tp_own = own;
    }
    __atomic_store_n(&nth_tp_on, 1, __ATOMIC_RELEASE);
    return 0;
#endif
}

int nth_tls_adopt(void *tp)
{
    struct nth_vp *vp = nth_vp_self();
    if (!__atomic_load_n(&nth_tp_on, __ATOMIC_ACQUIRE) || !vp || (vp->current->flags & NTH_TF_IDLE))
        return EPERM;
    if (!tp)
        return EINVAL;
    vp->current->tp = tp;
    if (tp != vp->tp_loaded)
        nth_tp_load(vp, tp);
    return 0;
}

void *nth_tls_adopted(void)
{
    struct nth_vp *vp = nth_vp_self();
    if (!vp || (vp->current->flags & NTH_TF_IDLE))
        return NULL;
    return vp->current->tp;
}

void nth_tp_vp0(struct nth_vp *vp)
{
    /* VP 0's kernel thread is main's: its own TCB is main's, which main
     * takes along when it runs elsewhere. Its idle context needs another. */
    nth_main_thread.tp = vp->tp_own;
    void *own = vp_tp_alloc();
    if (!own) {
        static const char msg[] = "nthlib: no memory for VP 0's thread control block; "
                                  "__thread data stays per kernel thread\n";
        (void)!write(2, msg, sizeof msg - 1);
        nth_main_thread.tp = NULL;
        __atomic_store_n(&nth_tp_on, 0, __ATOMIC_RELEASE);
        return;
    }
    vp->tp_own = own;
}

void nth_tp_fork_adopt(struct nth_vp *vp, struct nth_thread *t)
{
    /* As nth_tp_vp0 for main: the kernel thread's own TCB holds the
     * adopted nano-thread's __thread data and errno, so t keeps it; the
     * idle context gets another. Without one, t shares the kernel
     * thread's with the idle context (as a nano-thread without a TCB of
     * its own does); the other nano-threads keep theirs. A TCB recycled
     * with t's unit is dropped (one, in a child). */
    t->tp = NULL;
    if (!__atomic_load_n(&nth_tp_on, __ATOMIC_ACQUIRE))
        return;
    void *own = vp_tp_alloc();
    if (!own)
        return;
    t->tp = vp->tp_own;
    vp->tp_own = own;
}

void nth_tp_load(struct nth_vp *vp, void *tp)
{
#if defined(__x86_64__)
    char *from = vp->tp_loaded, *to = tp;
    for (int i = 0; i < ncarry; i++)
        memcpy(to + carry[i].off, from + carry[i].off, carry[i].len);
    if (use_wrfsbase)
        __asm__ __volatile__("wrfsbase %0" : : "r"(tp) : "memory");
    else
        syscall(SYS_arch_prctl, ARCH_SET_FS, tp);
    vp->tp_loaded = tp;
    vp->errno_loc = (int *)(to + errno_off);
#else
    (void)vp;
    (void)tp;
#endif
}
