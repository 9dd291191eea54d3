/*
 * held_alarms_cost.c -- callgrind probe for the switch and timed-wait paths
 * (alarmspin, bench/RESULTS.md), standalone: `held_alarms_cost N yield`
 * makes two nano-threads yield to each other N times; `N timed` makes N
 * condition-variable hand-offs in which main waits with a 1 s deadline
 * (each arms and cancels an alarm). Run with NTH_VPS=1.
 */
#include <nth.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static int n, mode;
static nth_mutex_t m = NTH_MUTEX_INITIALIZER;
static nth_cond_t c = NTH_COND_INITIALIZER;
static int turn;
static void *peer(void *a)
{
    (void)a;
    if (mode == 0) { for (int i = 0; i < n; i++) nth_yield(); return NULL; }
    for (int i = 0; i < n; i++) {
        nth_mutex_lock(&m);
        while (turn != 1) nth_cond_wait(&c, &m);
        turn = 0; nth_cond_signal(&c);
        nth_mutex_unlock(&m);
    }
    return NULL;
}
int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: held_alarms_cost N yield|timed\n");
        return 2;
    }
    n = atoi(argv[1]); mode = strcmp(argv[2], "yield") ? 1 : 0;
    nth_t t; nth_create(&t, NULL, peer, NULL);
    if (mode == 0) for (int i = 0; i < n; i++) nth_yield();
    else for (int i = 0; i < n; i++) {
        struct timespec d; clock_gettime(CLOCK_REALTIME, &d); d.tv_sec += 1;
        nth_mutex_lock(&m);
        turn = 1; nth_cond_signal(&c);
        while (turn != 0) nth_cond_timedwait(&c, &m, &d);
        nth_mutex_unlock(&m);
    }
    nth_join(t, NULL);
    return 0;
}
