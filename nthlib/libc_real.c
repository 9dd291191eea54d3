/*
 * libc_real.c -- libc's own functions for the runtime (see libc_real.h).
 *
 * dlopen("libc.so.6", RTLD_NOLOAD) returns the handle of the libc already
 * mapped, and dlsym on that handle searches libc only, whatever the
 * position of libnth and of an interposing shim in the lookup order.
 */
#include "config.h"   /* NTH_ASAN, NTH_TSAN */
#include "libc_real.h"
#include "nth.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void *nth_libc_sym(const char *name)
{
#if defined(NTH_ASAN) || defined(NTH_TSAN)
    /* The sanitizer's interceptor, when it has one (pthread_create, and
     * pthread_detach under TSan): it must see the runtime's kernel threads,
     * and calls libc's own function itself. Neither RTLD_NEXT (from a
     * shared libnth it skips the sanitizer runtime, which comes first, and
     * reached libc: a kernel thread TSan never set up faults on its first
     * instrumented call) nor RTLD_DEFAULT (a shim linked before libnth
     * comes first there) would give it. */
    static const char *const prefix[] = { "__interceptor_", "___interceptor_" /* LLVM 17+ */ };
    for (unsigned i = 0; i < sizeof prefix / sizeof prefix[0]; i++) {
        char iname[96];
        int k = snprintf(iname, sizeof iname, "%s%s", prefix[i], name);
        void *f = k > 0 && (size_t)k < sizeof iname ? dlsym(RTLD_DEFAULT, iname) : NULL;
        if (f)
            return f;
    }
#endif
    static void *libc;
    void *h = __atomic_load_n(&libc, __ATOMIC_ACQUIRE);
    if (!h) {
        h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            h = RTLD_NEXT;   /* a libc of another name: the old way */
        __atomic_store_n(&libc, h, __ATOMIC_RELEASE);
    }
    return dlsym(h, name);
}

nth_pthread_create_fn nth_libc_pthread_create(void)
{
    static nth_pthread_create_fn fn;
    nth_pthread_create_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (nth_pthread_create_fn)nth_libc_sym("pthread_create");
        if (!f)
            f = pthread_create;
        __atomic_store_n(&fn, f, __ATOMIC_RELEASE);
    }
    return f;
}

nth_pthread_detach_fn nth_libc_pthread_detach(void)
{
    static nth_pthread_detach_fn fn;
    nth_pthread_detach_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (nth_pthread_detach_fn)nth_libc_sym("pthread_detach");
        if (!f)
            f = pthread_detach;
        __atomic_store_n(&fn, f, __ATOMIC_RELEASE);
    }
    return f;
}

int nth_sys_yield(void)
{
    return (int)syscall(SYS_sched_yield);
}

ssize_t nth_sys_write(int fd, const void *buf, size_t n)
{
    return (ssize_t)syscall(SYS_write, fd, buf, n);
}

ssize_t nth_sys_read(int fd, void *buf, size_t n)
{
    return (ssize_t)syscall(SYS_read, fd, buf, n);
}

void nth_sys_sleep_ns(int64_t ns)
{
    if (ns <= 0)
        return;
    struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
    int e = errno;
    while (syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, &ts) != 0 && errno == EINTR)
        ;
    errno = e;
}

void nth_helper_block_signals(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    sigdelset(&all, 32);      /* glibc's SIGCANCEL, and SIGSETXID: setuid() */
    sigdelset(&all, 33);      /* in a threaded process waits for every thread */
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, old, (size_t)(_NSIG / 8));
}

unsigned long nth_helper_born_open;

struct helper_start {
    void *(*fn)(void *);
    void *arg;
};

static void *helper_trampoline(void *p)
{
    struct helper_start h = *(struct helper_start *)p;
    free(p);
    sigset_t cur;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &cur, (size_t)(_NSIG / 8));
    uint64_t blocked;
    memcpy(&blocked, &cur, sizeof blocked);
    /* Open at birth: anything but SIGKILL, SIGSTOP (bits 8, 18) and glibc's
     * 32 and 33 (bits 31, 32). */
    uint64_t may_be_open = (1ULL << 8) | (1ULL << 18) | (1ULL << 31) | (1ULL << 32);
    if (~blocked & ~may_be_open)
        __atomic_add_fetch(&nth_helper_born_open, 1, __ATOMIC_RELAXED);
    return h.fn(h.arg);
}

int nth_helper_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    struct helper_start *h = malloc(sizeof *h);
    if (!h)
        return ENOMEM;
    h->fn = fn;
    h->arg = arg;
    /* glibc's pthread_create gives the child the caller's mask as it is
     * at the call: block first, put back after. Every signal, glibc's
     * internal ones too: the caller may be a nano-thread about to wait in
     * the kernel, whose pthread shim wake-up signal (SIGCANCEL) must stay
     * blocked until that wait opens it (the helper blocks the others
     * itself). Not SIGSETXID: glibc's pthread_create takes the
     * stack-cache lock, which a set*id() on another thread holds while
     * it waits for every thread (this one too) to run the SIGSETXID
     * handler (NTH_BLOCK_ALL_BUT_SETXID). */
    sigset_t all, old;
    sigfillset(&all);
    uint64_t every = NTH_BLOCK_ALL_BUT_SETXID;
    memcpy(&all, &every, sizeof every);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, (size_t)(_NSIG / 8));
    int e = nth_libc_pthread_create()(th, attr, helper_trampoline, h);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, (size_t)(_NSIG / 8));
    if (e)
        free(h);
    return e;
}

/* The do-nothing kernel thread of nth_libc_threads_prepare. */
static void *prepare_thread(void *arg)
{
    return arg;
}

int nth_libc_threads_prepare(void)
{
    if (!__libc_single_threaded)
        return 0;
    typedef int (*join_fn)(pthread_t, void **);
    join_fn join = (join_fn)nth_libc_sym("pthread_join");
    if (!join)
        join = pthread_join;
    pthread_t th;
    int e = nth_helper_thread_create(&th, NULL, prepare_thread, NULL);
    if (e == 0)
        e = join(th, NULL);
    return e;
}
