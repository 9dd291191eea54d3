/* team_glibc.c -- the glibc pthreads backend: a fixed pool of kernel threads
 * made once by team_start() and reused by every region, as a hand-written
 * pthreads code (and the Java Grande thread version) would do. Workers sleep
 * in pthread_barrier_wait between regions; no spinning, no binding: the
 * kernel scheduler alone decides where they run, which is the point of the
 * comparison in an overloaded mix. */
#include "team.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

static int pool;                 /* workers, caller included; 0 = not started */
static pthread_t *tids;
static pthread_barrier_t start_bar, end_bar; /* all `pool` workers */
static pthread_barrier_t team_bar;           /* the region's n workers */
static int team_bar_n;
static team_fn cur_fn;
static void *cur_arg;
static int cur_n;
static int quit;
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

const char *team_impl(void) { return "glibc"; }

static void *worker(void *p)
{
    int id = (int)(long)p;
    pthread_mutex_lock(&gate);
    pthread_mutex_unlock(&gate);
    for (;;) {
        pthread_barrier_wait(&start_bar);
        /* Written by the caller before start_bar, read-only until end_bar. */
        if (quit)
            return NULL;
        if (id < cur_n)
            cur_fn(id, cur_n, cur_arg);
        pthread_barrier_wait(&end_bar);
    }
}

int team_start(int threads, int malleable)
{
    if (pool || threads < 0 || threads > 4096 || malleable)
        return EINVAL;
    int n = threads ? threads : team_cpus_available();
    tids = calloc((size_t)n, sizeof *tids);
    if (!tids)
        return EAGAIN;
    /* Workers wait at the gate until the barriers exist, sized for the
     * workers that really were created. */
    pthread_mutex_lock(&gate);
    quit = 0;
    int made = 1;
    while (made < n && pthread_create(&tids[made], NULL, worker, (void *)(long)made) == 0)
        made++;
    pthread_barrier_init(&start_bar, NULL, (unsigned)made);
    pthread_barrier_init(&end_bar, NULL, (unsigned)made);
    pthread_barrier_init(&team_bar, NULL, (unsigned)made);
    team_bar_n = made;
    pool = made;
    pthread_mutex_unlock(&gate);
    if (made < n) {
        team_stop();
        return EAGAIN;
    }
    return 0;
}

int team_size(void) { return pool; }

int team_run(int n, team_fn fn, void *arg)
{
    if (!pool || n < 0 || n > pool)
        return EINVAL;
    if (n == 0)
        n = pool;
    if (n != team_bar_n) {
        /* Nobody is inside team_bar between regions, so it may be remade. */
        pthread_barrier_destroy(&team_bar);
        if (pthread_barrier_init(&team_bar, NULL, (unsigned)n))
            return EAGAIN;
        team_bar_n = n;
    }
    cur_fn = fn;
    cur_arg = arg;
    cur_n = n;
    if (pool > 1)
        pthread_barrier_wait(&start_bar);
    fn(0, n, arg);
    if (pool > 1)
        pthread_barrier_wait(&end_bar);
    return 0;
}

void team_barrier(void)
{
    if (cur_n > 1)
        pthread_barrier_wait(&team_bar);
}

void team_stop(void)
{
    if (!pool)
        return;
    quit = 1;
    if (pool > 1)
        pthread_barrier_wait(&start_bar);
    for (int i = 1; i < pool; i++)
        pthread_join(tids[i], NULL);
    pthread_barrier_destroy(&start_bar);
    pthread_barrier_destroy(&end_bar);
    pthread_barrier_destroy(&team_bar);
    free(tids);
    tids = NULL;
    pool = 0;
}
