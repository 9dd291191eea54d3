/*
 * dlclose-lib.c -- the library posix-dlctor opens and closes again and
 * again: both its constructor (run by dlopen) and its destructor (run by
 * dlclose) hold ld.so's load lock while they make threads that lock a
 * mutex, wait on a condition variable, sleep, and are joined. The
 * destructor reports through a pointer the program hands over before
 * dlclose (the library's own memory is gone after it).
 */
#include <pthread.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started, ctor_sum;
static int *report;

static void *worker(void *arg)
{
    struct timespec ts = { 0, 1000000 };
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&mu);
    started++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return arg;
}

/* Three workers; waits (cond) until all have run, joins them: the sum
 * of their values, 1+2+3. */
static int run_workers(void)
{
    pthread_t t[3];
    int n = 0, sum = 0;
    pthread_mutex_lock(&mu);
    started = 0;
    pthread_mutex_unlock(&mu);
    for (long i = 0; i < 3; i++)
        n += pthread_create(&t[n], NULL, worker, (void *)(i + 1)) == 0;
    pthread_mutex_lock(&mu);
    while (started < n)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < n; i++) {
        void *r;
        if (pthread_join(t[i], &r) == 0)
            sum += (int)(long)r;
    }
    return sum;
}

int dlclose_lib_ctor_sum(void)
{
    return ctor_sum;
}

void dlclose_lib_report_to(int *p)
{
    report = p;
}

__attribute__((constructor)) static void lib_init(void)
{
    ctor_sum = run_workers();
}

__attribute__((destructor)) static void lib_fini(void)
{
    int s = run_workers();
    if (report)
        *report = s;
}
