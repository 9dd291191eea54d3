/*
 * once.c -- pthread_once whose init routine does not return: "if
 * init_routine is a cancellation point and is canceled, the effect on
 * once_control shall be as if pthread_once() was never called"
 * (pthread_once(3p)): the next caller, or one already waiting, runs the
 * routine again. The same for an unwinding that leaves the routine (a C++
 * exception out of std::call_once's callable: glibc's std::call_once is
 * pthread_once, and C++ then runs the callable again); here a forced
 * unwind from C, stopped by a longjmp in the caller, as glibc's own
 * cancellation does.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <unwind.h>
#include "check.h"

static pthread_once_t once_cancel = PTHREAD_ONCE_INIT;
static pthread_once_t once_unwind = PTHREAD_ONCE_INIT;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int runs, started;

/* The first run blocks in a cancellation point until cancelled. */
static void init_block(void)
{
    pthread_mutex_lock(&m);
    int me = ++runs;
    started = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&m);
    if (me == 1)
        for (;;)
            sleep(1);
}

static void *call_once(void *arg)
{
    (void)arg;
    pthread_once(&once_cancel, init_block);
    return NULL;
}

/* ---- an unwinding out of the routine ---- */

static jmp_buf catcher;
static uintptr_t catcher_frame;
static struct _Unwind_Exception exc;
static int unwind_runs;

static _Unwind_Reason_Code stop_at_catcher(int version, _Unwind_Action actions, _Unwind_Exception_Class cls,
                                           struct _Unwind_Exception *e, struct _Unwind_Context *ctx, void *arg)
{
    (void)version; (void)cls; (void)e; (void)arg;
    /* Frames inside the catcher's callees have their CFA below its
     * locals; the first at or above is the catcher's own. */
    if ((actions & _UA_END_OF_STACK) || _Unwind_GetCFA(ctx) >= catcher_frame)
        longjmp(catcher, 1);
    return _URC_NO_REASON;
}

static void init_unwind(void)
{
    if (++unwind_runs == 1) {
        memset(&exc, 0, sizeof exc);
        exc.exception_class = 0x4e54484c4f4e4345ULL;   /* "NTHLONCE" */
        _Unwind_ForcedUnwind(&exc, stop_at_catcher, NULL);
        printf("FAIL: _Unwind_ForcedUnwind returned\n");
        exit(1);
    }
}

/* pthread_once(&once_unwind) that an unwinding leaves: 1 if it did. */
static int once_unwound(void)
{
    volatile int local = 0;
    catcher_frame = (uintptr_t)&local;
    if (setjmp(catcher))
        return 1;
    pthread_once(&once_unwind, init_unwind);
    return local;
}

int main(void)
{
    check_start("once");

    /* A cancelled routine, with a second thread waiting in pthread_once
     * meanwhile: the waiter runs the routine once the first is gone. */
    pthread_t t, w;
    void *rv;
    CHECK(pthread_create(&t, NULL, call_once, NULL) == 0);
    pthread_mutex_lock(&m);
    while (!started)
        pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
    CHECK(pthread_create(&w, NULL, call_once, NULL) == 0);
    for (int i = 0; i < 20; i++)
        sched_yield();   /* let the waiter reach pthread_once (either way is right) */
    CHECK(pthread_cancel(t) == 0);
    CHECK(pthread_join(t, &rv) == 0);
    printf("routine's thread cancelled: %d\n", rv == PTHREAD_CANCELED);
    CHECK(rv == PTHREAD_CANCELED);
    CHECK(pthread_join(w, &rv) == 0);
    printf("waiter returned: %d\n", rv == NULL);
    pthread_once(&once_cancel, init_block);
    printf("routine runs after a cancelled one: %d\n", runs);
    CHECK(runs == 2);

    /* An unwinding out of the routine resets the control the same way. */
    int unwound = once_unwound();
    printf("unwinding left pthread_once: %d\n", unwound);
    CHECK(unwound == 1);
    CHECK(pthread_once(&once_unwind, init_unwind) == 0);
    CHECK(pthread_once(&once_unwind, init_unwind) == 0);
    printf("routine runs after an unwound one: %d\n", unwind_runs);
    CHECK(unwind_runs == 2);
    return check_end("once");
}
