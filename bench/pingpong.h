/*
 * pingpong.h -- the condvar ping-pong of bench/micro-sync
 * (condvar_pingpong_1vp/_2vp), also run by bench/ops_count.c to count
 * its instructions under callgrind: one copy, so that the count is of the
 * very loop micro-sync times.
 *
 * Two nano-threads take turns under nm: each waits on nc until it is its
 * turn, passes the turn, signals and unlocks; n_rounds round trips each.
 * nm is also the mutex of micro-sync's mutex cases.
 */
#ifndef NTH_BENCH_PINGPONG_H
#define NTH_BENCH_PINGPONG_H

#include <stdint.h>
#include <nth.h>

static nth_mutex_t nm = NTH_MUTEX_INITIALIZER;
static nth_cond_t nc = NTH_COND_INITIALIZER;
static int n_turn;
static long n_rounds;

static void *n_ping(void *p)
{
    int me = (int)(intptr_t)p;
    for (long i = 0; i < n_rounds; i++) {
        nth_mutex_lock(&nm);
        while (n_turn != me)
            nth_cond_wait(&nc, &nm);
        n_turn = !me;
        nth_cond_signal(&nc);
        nth_mutex_unlock(&nm);
    }
    return NULL;
}

/* rounds round trips between a player on VP 0 and one on VP 1 (two_vps)
 * or VP 0 too; returns when both are joined. Not thread-safe (the state
 * above is the program's): one ping-pong at a time. */
static void n_pingpong(long rounds, int two_vps)
{
    nth_t a, b;
    nth_attr_t at;
    n_turn = 0;
    n_rounds = rounds;
    nth_attr_init(&at);
    nth_attr_setvp(&at, 0);
    nth_create(&a, &at, n_ping, (void *)0);
    nth_attr_setvp(&at, two_vps ? 1 : 0);
    nth_create(&b, &at, n_ping, (void *)1);
    nth_join(a, NULL);
    nth_join(b, NULL);
}

#endif
