/*
 * schedprio.c -- pthread_setschedparam(3p) and pthread_setschedprio(3p)
 * refuse a priority outside the policy's range (sched_get_priority_min/
 * max) with EINVAL, as glibc does (the kernel's sched_setscheduler(2)),
 * and a refused call changes nothing. Only calls that fail or keep
 * SCHED_OTHER: an accepted real-time policy needs privileges natively.
 */
#include <pthread.h>
#include <sched.h>
#include "check.h"

static void show(pthread_t t)
{
    int pol = -1;
    struct sched_param sp = { .sched_priority = -1 };
    EXPECT("getschedparam", pthread_getschedparam(t, &pol, &sp), 0);
    printf("policy %s priority %d\n", pol == SCHED_OTHER ? "SCHED_OTHER" : "other", sp.sched_priority);
}

int main(void)
{
    check_start("schedprio");
    pthread_t s = pthread_self();
    struct sched_param sp;
    EXPECT("setschedprio(SCHED_OTHER, 200)", pthread_setschedprio(s, 200), EINVAL);
    EXPECT("setschedprio(SCHED_OTHER, -1)", pthread_setschedprio(s, -1), EINVAL);
    EXPECT("setschedprio(SCHED_OTHER, 1)", pthread_setschedprio(s, 1), EINVAL);
    show(s);
    sp.sched_priority = 200;
    EXPECT("setschedparam(SCHED_FIFO, 200)", pthread_setschedparam(s, SCHED_FIFO, &sp), EINVAL);
    sp.sched_priority = sched_get_priority_max(SCHED_RR) + 1;
    EXPECT("setschedparam(SCHED_RR, max+1)", pthread_setschedparam(s, SCHED_RR, &sp), EINVAL);
    sp.sched_priority = sched_get_priority_min(SCHED_FIFO) - 1;
    EXPECT("setschedparam(SCHED_FIFO, min-1)", pthread_setschedparam(s, SCHED_FIFO, &sp), EINVAL);
    sp.sched_priority = 5;
    EXPECT("setschedparam(SCHED_OTHER, 5)", pthread_setschedparam(s, SCHED_OTHER, &sp), EINVAL);
    show(s);
    sp.sched_priority = 0;
    EXPECT("setschedparam(SCHED_OTHER, 0)", pthread_setschedparam(s, SCHED_OTHER, &sp), 0);
    EXPECT("setschedprio(SCHED_OTHER, 0)", pthread_setschedprio(s, 0), 0);
    show(s);
    return check_end("schedprio");
}
