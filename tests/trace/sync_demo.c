/*
 * sync_demo -- a real nthlib program whose nano-threads block on every kind
 * of synchronisation object, for tests/trace/runtime_sync.sh and
 * runtime_regions.sh. Run with NTH_VPS=1: cooperative scheduling on one VP
 * makes the order below the only one possible.
 *
 * `sync_demo sync`: main takes a mutex, a second mutex it names "queue
 * lock" (nth_trace_register_object), and a rwlock for writing; it creates
 * six nano-threads and yields until each has blocked: on the mutex, on the
 * named mutex, on a condvar, on a barrier of two, on the rwlock (reading)
 * and on a semaphore at 0 (that one created "unnamed", renamed "swaiter"
 * with nth_setname). It then releases all of them and joins them;
 * the first join blocks main (SYNCH on the join). Prints the objects'
 * addresses and the nano-threads' trace ids, one "key=value" per word.
 *
 * `sync_demo regions`: a region of 3 nano-threads whose members meet at the
 * team barrier; member 1 opens a nested region (serialised: a team of one).
 * Prints "team=3".
 *
 * `sync_demo sleep`: "sleeper" sleeps 2 ms (nth_sleep_ns) while main
 * joins it. Prints "sleeper=ID".
 *
 * Exits non-zero on any error.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "nth.h"
#include "nth/trace.h"

static nth_mutex_t m = NTH_MUTEX_INITIALIZER, named = NTH_MUTEX_INITIALIZER, cm = NTH_MUTEX_INITIALIZER;
static nth_cond_t c = NTH_COND_INITIALIZER;
static nth_rwlock_t rw = NTH_RWLOCK_INITIALIZER;
static nth_barrier_t b;
static nth_sem_t s;
static int flag, blocked;

static void *locker(void *a)
{
    nth_mutex_t *x = a;
    __atomic_add_fetch(&blocked, 1, __ATOMIC_RELAXED);
    if (nth_mutex_lock(x))
        return (void *)1;
    return nth_mutex_unlock(x) ? (void *)2 : NULL;
}

static void *cwaiter(void *a)
{
    (void)a;
    nth_mutex_lock(&cm);
    __atomic_add_fetch(&blocked, 1, __ATOMIC_RELAXED);
    while (!flag)
        if (nth_cond_wait(&c, &cm))
            return (void *)1;
    nth_mutex_unlock(&cm);
    return NULL;
}

static void *bwaiter(void *a)
{
    (void)a;
    __atomic_add_fetch(&blocked, 1, __ATOMIC_RELAXED);
    int r = nth_barrier_wait(&b);
    return r == 0 || r == NTH_BARRIER_SERIAL_THREAD ? NULL : (void *)1;
}

static void *rwaiter(void *a)
{
    (void)a;
    __atomic_add_fetch(&blocked, 1, __ATOMIC_RELAXED);
    if (nth_rwlock_rdlock(&rw))
        return (void *)1;
    return nth_rwlock_unlock(&rw) ? (void *)2 : NULL;
}

static void *swaiter(void *a)
{
    (void)a;
    __atomic_add_fetch(&blocked, 1, __ATOMIC_RELAXED);
    return nth_sem_wait(&s) ? (void *)1 : NULL;
}

static int sync_main(void)
{
    struct { const char *name; void *(*fn)(void *); void *arg; nth_t t; } th[] = {
        { "locker", locker, &m, NULL },   { "named_locker", locker, &named, NULL },
        { "cwaiter", cwaiter, NULL, NULL }, { "bwaiter", bwaiter, NULL, NULL },
        { "rwaiter", rwaiter, NULL, NULL }, { "unnamed", swaiter, NULL, NULL },
    };
    enum { N = sizeof th / sizeof th[0] };
    if (nth_barrier_init(&b, 2) || nth_sem_init(&s, 0) || nth_trace_register_object(&named, "queue lock"))
        return 3;
    if (nth_mutex_lock(&m) || nth_mutex_lock(&named) || nth_rwlock_wrlock(&rw))
        return 4;
    nth_attr_t a;
    nth_attr_init(&a);
    for (int i = 0; i < N; i++) {
        nth_attr_setname(&a, th[i].name);
        if (nth_create(&th[i].t, &a, th[i].fn, th[i].arg))
            return 5;
    }
    /* Renamed after creation (as pthread_setname_np through the shim): the
     * trace shows the new name. */
    if (nth_setname(th[N - 1].t, "swaiter"))
        return 5;
    /* Each runs once and blocks; one VP: they run only while main yields. */
    for (int k = 0; k < 100 && __atomic_load_n(&blocked, __ATOMIC_RELAXED) < N; k++)
        nth_yield();
    nth_yield();
    if (blocked != N)
        return 6;
    nth_mutex_unlock(&m);
    nth_mutex_unlock(&named);
    nth_rwlock_unlock(&rw);
    nth_mutex_lock(&cm);
    flag = 1;
    nth_cond_signal(&c);
    nth_mutex_unlock(&cm);
    int r = nth_barrier_wait(&b);
    if (r != 0 && r != NTH_BARRIER_SERIAL_THREAD)
        return 7;
    nth_sem_post(&s);
    printf("mutex=0x%jx named=0x%jx cond=0x%jx barrier=0x%jx rwlock=0x%jx sem=0x%jx",
           (uintmax_t)(uintptr_t)&m, (uintmax_t)(uintptr_t)&named, (uintmax_t)(uintptr_t)&c,
           (uintmax_t)(uintptr_t)&b, (uintmax_t)(uintptr_t)&rw, (uintmax_t)(uintptr_t)&s);
    for (int i = 0; i < N; i++)
        printf(" %s=%llu", i == N - 1 ? "swaiter" : th[i].name, (unsigned long long)nth_id(th[i].t));
    printf("\n");
    for (int i = 0; i < N; i++) {
        void *ret = (void *)1;
        if (nth_join(th[i].t, &ret) || ret) {
            fprintf(stderr, "sync_demo: %s returned %p\n", th[i].name, ret);
            return 8;
        }
    }
    return 0;
}

static int nested_ok = 1;

static void inner(int id, int n, void *arg)
{
    (void)arg;
    if (id != 0 || n != 1)
        nested_ok = 0;
}

static void body(int id, int n, void *arg)
{
    (void)arg;
    if (n != 3)
        nested_ok = 0;
    nth_team_barrier();
    if (id == 1 && nth_parallel(2, inner, NULL))
        nested_ok = 0;
    nth_team_barrier();
}

static int regions_main(void)
{
    if (nth_parallel(3, body, NULL) || !nested_ok)
        return 9;
    printf("team=3\n");
    return 0;
}

static void *sleeper(void *arg)
{
    return nth_sleep_ns(2000000) ? NULL : arg;
}

/* `sync_demo sleep`: "sleeper" sleeps 2 ms (nth_sleep_ns) while main joins it. */
static int sleep_main(void)
{
    nth_attr_t a;
    nth_t t;
    void *r = NULL;
    if (nth_attr_init(&a) || nth_attr_setname(&a, "sleeper") || nth_create(&t, &a, sleeper, &a))
        return 9;
    unsigned long long id = (unsigned long long)nth_id(t);   /* before the join frees t */
    if (nth_join(t, &r) || r != &a)
        return 9;
    printf("sleeper=%llu\n", id);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2 || nth_init(NULL) != 0)
        return 2;
    if (!strcmp(argv[1], "sync"))
        return sync_main();
    if (!strcmp(argv[1], "regions"))
        return regions_main();
    if (!strcmp(argv[1], "sleep"))
        return sleep_main();
    return 2;
}
