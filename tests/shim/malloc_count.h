/*
 * malloc_count.h -- counts this thread's malloc/calloc/realloc calls while
 * `counting` is set: the signal-handler tests (sigwrite.c, sigsafe.c) check
 * that the shim's wrappers allocate nothing inside a handler. Defines the
 * three functions: include it in one file of a program only.
 */
#ifndef NTH_TESTS_SHIM_MALLOC_COUNT_H
#define NTH_TESTS_SHIM_MALLOC_COUNT_H
#include <stddef.h>

static __thread int counting;
static __thread int counted;
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t k, size_t n);
extern void *__libc_realloc(void *p, size_t n);

void *malloc(size_t n)
{
    if (counting)
        counted++;
    return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
    if (counting)
        counted++;
    return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
    if (counting)
        counted++;
    return __libc_realloc(p, n);
}

#endif
