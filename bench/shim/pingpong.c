/*
 * pingpong.c -- a plain pthread program (compiled with -pthread only, never
 * linked with nthlib) for bench/shim.sh, which times it natively and under
 * LD_PRELOAD=libnth-pthread.so. One workload per run:
 *   create N   N pthread_create + pthread_join of an empty thread, in turn
 *   mutex N    2 threads, each N lock / increment / unlock of one mutex
 *   cond N     2 threads pass a turn back and forth N times (mutex + condvar)
 * Prints the final count (a check that the work was done); the script
 * measures wall time around the whole process.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static long n, count;
static int turn;

static void *empty(void *a) { return a; }

static void *locker(void *a)
{
    (void)a;
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&m);
        count++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static void *player(void *a)
{
    int me = (int)(long)a;
    pthread_mutex_lock(&m);
    for (long i = 0; i < n; i++) {
        while (turn != me)
            pthread_cond_wait(&c, &m);
        turn = 1 - me;
        count++;
        pthread_cond_signal(&c);
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (n = atol(argv[2])) <= 0) {
        fprintf(stderr, "usage: %s create|mutex|cond N\n", argv[0]);
        return 2;
    }
    pthread_t t[2];
    if (!strcmp(argv[1], "create")) {
        for (long i = 0; i < n; i++) {
            if (pthread_create(&t[0], NULL, empty, NULL) != 0)
                return 1;
            pthread_join(t[0], NULL);
            count++;
        }
    } else if (!strcmp(argv[1], "mutex") || !strcmp(argv[1], "cond")) {
        void *(*fn)(void *) = argv[1][0] == 'm' ? locker : player;
        for (long i = 0; i < 2; i++)
            if (pthread_create(&t[i], NULL, fn, (void *)i) != 0)
                return 1;
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    } else {
        fprintf(stderr, "unknown workload %s\n", argv[1]);
        return 2;
    }
    printf("%s %ld\n", argv[1], count);
    return 0;
}
