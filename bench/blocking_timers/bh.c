/* bench/blocking_timers/bh.c -- nth_blocking_enter/leave around getppid, N
 * times; argv[1]=1: one timed sleep first (timer queues in use, none queued
 * during the loop). For callgrind (timers9 section of bench/RESULTS.md).
 * build: gcc -O2 -Iinclude -o bh bench/blocking_timers/bh.c -Lbuild/.libs -lnth -Wl,-rpath,$PWD/build/.libs */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "nth.h"
int main(int argc, char **argv)
{
    nth_config_t c; nth_config_default(&c); c.vps = 1; nth_init(&c);
    if (argc > 1 && atoi(argv[1])) nth_sleep_ns(1000);
    long n = argc > 2 ? atol(argv[2]) : 100000;
    for (long i = 0; i < n; i++) { nth_blocking_enter(); getppid(); nth_blocking_leave(); }
    return 0;
}
