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
static void *empty(void *a) { return a; }
static nth_mutex_t nm = NTH_MUTEX_INITIALIZER;
static nth_cond_t nc = NTH_COND_INITIALIZER;
static int n_turn; static long n_rounds;
static void *n_ping(void *p)
{
    int me = (int)(long)p;
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
int main(int argc, char **argv)
{
    long n = atol(argv[2]);
    nth_config_t cfg; nth_config_from_env(&cfg); cfg.vps = argc > 3 ? atoi(argv[3]) : 1;
    if (nth_init(&cfg)) return 2;
    if (argv[1][0] == 'c') {
        nth_t t;
        for (long i = 0; i < n; i++) { nth_create(&t, NULL, empty, NULL); nth_join(t, NULL); }
    } else {
        nth_t a, b; nth_attr_t at; nth_attr_init(&at);
        n_rounds = n;
        nth_attr_setvp(&at, 0);
        nth_create(&a, &at, n_ping, (void *)0);
        nth_attr_setvp(&at, cfg.vps > 1 ? 1 : 0);
        nth_create(&b, &at, n_ping, (void *)1);
        nth_join(a, NULL); nth_join(b, NULL);
    }
    return 0;
}
