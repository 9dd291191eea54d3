/*
 * dlctor-lib.c -- the library posix-dlctor dlopens: its constructor, run
 * with ld.so's load lock held, creates and joins threads, and between
 * those joins (after which the caller may resume on another kernel thread
 * under the shim) makes the process's first call to each of several
 * pthread_attr functions; it ends with a detached thread made with an
 * attribute, as libraries that start a worker do. Its destructor, run
 * at exit, makes and joins a thread as well.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

int dlctor_sum, dlctor_calls_ok;
static volatile int detached_ran;
static __thread long tl = 5;     /* the module's TLS, new in each thread */

static void *echo(void *arg)
{
    tl += (long)arg;
    return (void *)(tl - 5);
}

static void *detached(void *arg)
{
    (void)arg;
    detached_ran = 1;
    return NULL;
}

int dlctor_detached_ran(void)
{
    return detached_ran;
}

static void spawn_join(long i)
{
    pthread_t t;
    void *r;
    if (pthread_create(&t, NULL, echo, (void *)i) == 0 && pthread_join(t, &r) == 0)
        dlctor_sum += (int)(long)r;
}

__attribute__((constructor)) static void dlctor_init(void)
{
    pthread_attr_t a;
    size_t v;
    int iv, ok = 0;
    struct sched_param sp;
    spawn_join(1);
    ok += pthread_attr_init(&a) == 0;
    spawn_join(2);
    ok += pthread_attr_getstacksize(&a, &v) == 0;
    spawn_join(3);
    ok += pthread_attr_getguardsize(&a, &v) == 0;
    spawn_join(4);
    ok += pthread_attr_getschedpolicy(&a, &iv) == 0;
    spawn_join(5);
    ok += pthread_attr_getschedparam(&a, &sp) == 0;
    spawn_join(6);
    ok += pthread_attr_getinheritsched(&a, &iv) == 0;
    spawn_join(7);
    ok += pthread_attr_getscope(&a, &iv) == 0;
    spawn_join(8);
    ok += pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) == 0;
    spawn_join(9);
    ok += pthread_attr_getdetachstate(&a, &iv) == 0 && iv == PTHREAD_CREATE_DETACHED;
    pthread_t d;
    ok += pthread_create(&d, &a, detached, NULL) == 0;
    ok += pthread_attr_destroy(&a) == 0;
    dlctor_calls_ok = ok;
}

/* Never dlclosed: runs at exit (glibc's _dl_fini, after main returned
 * and printed its last line), where it makes and joins a thread too;
 * silent unless that fails (a hang is the harness's timeout). */
__attribute__((destructor)) static void dlctor_fini(void)
{
    int before = dlctor_sum;
    spawn_join(10);
    if (dlctor_sum != before + 10) {
        printf("FAIL: the exit-time destructor's thread was not joined\n");
        fflush(stdout);
        _exit(1);
    }
}
