/*
 * states_demo -- a real nthlib program for the BLOCKED and OVERHEAD trace
 * states (tests/trace/runtime_states.sh), run with NTH_VPS=1 so that the
 * order below is the only one possible (cooperative scheduling):
 *
 *   main pushes the user state "phase" (NTH_TRACE_STATE_USER), creates
 *   "reader" and "worker" inside it (OVERHEAD nested in "phase"), pops it,
 *   then joins reader (SYNCH, inside the join's OVERHEAD).
 *   reader makes a kernel thread that is no VP the pipe's writer, then reads
 *   the pipe between nth_blocking_enter and nth_blocking_leave: BLOCKED on
 *   its track while the VP runs worker. The writer writes only once worker
 *   has run, so the read cannot return before the VP has moved on.
 *   worker yields until reader is back from the read.
 *
 * Prints "reader=ID worker=ID" on success; exits non-zero on any error.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "nth.h"
#include "nth/trace.h"

#define STATE_PHASE NTH_TRACE_STATE_USER

static int fds[2];
static int worker_ran, reader_back;

static void *writer(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&worker_ran, __ATOMIC_ACQUIRE))
        sched_yield();
    char c = 'x';
    return write(fds[1], &c, 1) == 1 ? NULL : (void *)1;
}

static void *reader(void *arg)
{
    (void)arg;
    pthread_t w;
    if (pthread_create(&w, NULL, writer, NULL))
        return (void *)1;
    char c = 0;
    if (nth_blocking_enter())
        return (void *)2;
    ssize_t n = read(fds[0], &c, 1);
    nth_blocking_leave();
    __atomic_store_n(&reader_back, 1, __ATOMIC_RELEASE);
    void *wr = NULL;
    pthread_join(w, &wr);
    return n == 1 && c == 'x' && !wr ? NULL : (void *)3;
}

static void *worker(void *arg)
{
    (void)arg;
    __atomic_store_n(&worker_ran, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&reader_back, __ATOMIC_ACQUIRE))
        nth_yield();
    return NULL;
}

int main(int argc, char **argv)
{
    /* "early": a name registered before the runtime starts must reach the
     * trace too (the top of main is where programs register them). */
    int early = argc > 1 && strcmp(argv[1], "early") == 0;
    if (early && nth_trace_register_state(STATE_PHASE + 1, "prelude"))
        return 3;
    if (nth_init(NULL) != 0 || pipe(fds) != 0)
        return 2;
    if (early && (nth_trace_state_push(STATE_PHASE + 1) || nth_trace_state_pop()))
        return 3;
    if (nth_trace_register_state(STATE_PHASE, "phase") || nth_trace_state_push(STATE_PHASE))
        return 3;
    nth_attr_t a;
    nth_attr_init(&a);
    nth_t r, w;
    nth_attr_setname(&a, "reader");
    if (nth_create(&r, &a, reader, NULL))
        return 4;
    nth_attr_setname(&a, "worker");
    if (nth_create(&w, &a, worker, NULL))
        return 4;
    nth_trace_state_pop();
    uint64_t rid = nth_id(r), wid = nth_id(w);
    void *rr = (void *)1, *wr = (void *)1;
    if (nth_join(r, &rr) || nth_join(w, &wr) || rr || wr) {
        fprintf(stderr, "states_demo: reader %p worker %p\n", rr, wr);
        return 5;
    }
    printf("reader=%llu worker=%llu\n", (unsigned long long)rid, (unsigned long long)wid);
    return 0;
}
