/*
 * ops_count.c -- the timed loops of bench/micro (create_join) and
 * bench/micro-sync (condvar_pingpong_1vp/_2vp) alone, for counting
 * instructions per operation under callgrind (no glibc side, no timing).
 * Not built by make; see bench/RESULTS.md (perf3) for the commands:
 *   gcc -O2 -Iinclude -IBUILD -o ops_count bench/ops_count.c -LBUILD/.libs -lnth
 *   LD_LIBRARY_PATH=BUILD/.libs NTH_STALL_US=0 valgrind --tool=callgrind ./ops_count c|p N [vps]
 * The difference of two runs (N=20000 and N=10000) over 10000 is the
 * count per create+join (c) or per ping-pong round trip (p).
 */
#include <nth.h>
#include <stdio.h>
#include <stdlib.h>
#include "pingpong.h"   /* the ping-pong micro-sync times */
static void *empty(void *a) { return a; }
int main(int argc, char **argv)
{
    long n = atol(argv[2]);
    nth_config_t cfg; nth_config_from_env(&cfg); cfg.vps = argc > 3 ? atoi(argv[3]) : 1;
    if (nth_init(&cfg)) return 2;
    if (argv[1][0] == 'c') {
        nth_t t;
        for (long i = 0; i < n; i++) { nth_create(&t, NULL, empty, NULL); nth_join(t, NULL); }
    } else {
        n_pingpong(n, cfg.vps > 1);
    }
    return 0;
}
