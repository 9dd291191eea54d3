/*
 * trace_malloc.c -- libnth-malloc.so, preloaded: with NTH_TRACE_MALLOC=1 the
 * trace gets two per-process counter tracks, malloc bytes in use and malloc
 * calls so far.
 *
 * The wrappers call glibc's __libc_* entry points directly, so no dlsym (which
 * itself allocates) is needed and calls made before this library's
 * constructor simply pass through. Bytes in use are glibc's own figure
 * (mallinfo2: every arena's allocated bytes) rather than a running sum: a
 * block allocated before tracing started and freed after it cannot make the
 * count wrong. Sampling keeps the trace small: a sample at most every
 * 100 µs per kernel thread, and at every malloc or free of 64 KiB or more. A
 * per-kernel-thread flag stops the recursion through the recorder's own
 * first allocation.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nth/trace.h"
#include "env_msg.h"
#include "env_names.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

#define SAMPLE_NS 100000u
#define BIG (64u * 1024)

/* Looked up by libnth (dlsym) when tracing starts with NTH_TRACE_MALLOC=1:
 * its presence, and malloc resolving into this library, say the counters
 * will be recorded; otherwise libnth says what to do. Never called. */
void nth_malloc_interposer(void);
void nth_malloc_interposer(void)
{
}

static int enabled;
static uint64_t calls;
static __thread int busy;
static __thread uint64_t last_ns;

static void sample(size_t n, int force)
{
    if (busy || !nth_trace_enabled())
        return;
    busy = 1;
    uint64_t now = nth_trace_clock_ns();
    if (force || n >= BIG || now - last_ns >= SAMPLE_NS) {
        last_ns = now;
        struct mallinfo2 mi = mallinfo2();
        nth_trace_memory(mi.uordblks + mi.hblkhd, __atomic_load_n(&calls, __ATOMIC_RELAXED));
    }
    busy = 0;
}

static inline void count(size_t n)
{
    if (__builtin_expect(enabled, 0)) {
        __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
        sample(n, 0);
    }
}

void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    count(n);
    return p;
}

void *calloc(size_t k, size_t n)
{
    void *p = __libc_calloc(k, n);
    count(k * n);
    return p;
}

void *realloc(void *old, size_t n)
{
    void *p = __libc_realloc(old, n);
    count(n);
    return p;
}

void free(void *p)
{
    size_t n = __builtin_expect(enabled, 0) && p ? malloc_usable_size(p) : 0;
    __libc_free(p);
    if (n)
        sample(n, 0);
}

void *memalign(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    count(n);
    return p;
}

void *aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return 22;   /* EINVAL */
    void *p = memalign(align, n);
    if (!p && n)
        return 12;   /* ENOMEM */
    *out = p;
    return 0;
}

static void memory_fini(void);
static void memory_init(void) __attribute__((constructor));
static void memory_init(void)
{
    const char *v = getenv("NTH_TRACE_MALLOC");
    if (!v)
        return;
    if (strcmp(v, "1") && strcmp(v, "0")) {
        nth_env_bad("NTH_TRACE_MALLOC", v, NTH_TRACE_MALLOC_ACCEPTED);
        /* Said once per process tree: the value is taken as 0, and so it
         * reaches the children (nthrun itself runs with the preload, then
         * execs the program: the line came twice). A constructor runs
         * before main, with no other thread to race setenv(). */
        (void)setenv("NTH_TRACE_MALLOC", "0", 1);
        return;
    }
    if (!strcmp(v, "0"))
        return;
    if (!nth_trace_enabled())
        nth_trace_start_standalone();
    enabled = 1;
    sample(0, 1);
    /* Registered after the trace's own exit handler, so it runs before it. */
    atexit(memory_fini);
}

static void memory_fini(void)
{
    sample(0, 1);   /* the last value, before the trace is written */
}
