/*
 * cxxmixed.c -- a C frame between C++ frames for cxxexit.cpp: compiled
 * without -fexceptions, so <pthread.h> expands pthread_cleanup_push into a
 * setjmp-based buffer registered with __pthread_register_cancel, which a
 * forced unwind must stop at (its handler runs), then go on from.
 */
#include <pthread.h>

void cxxmixed_c_frame(void (*fn)(void), void (*handler)(void *), void *arg);

void cxxmixed_c_frame(void (*fn)(void), void (*handler)(void *), void *arg)
{
    pthread_cleanup_push(handler, arg);
    fn();
    pthread_cleanup_pop(0);
}
