/*
 * tls.c -- __thread data and errno are per thread (C11 _Thread_local,
 * POSIX errno(3p)), also when a thread blocks, sleeps and yields many
 * times between two CPUs: under the shim a thread may resume on another
 * VP's kernel thread after any of these.
 *  1. Four threads keep counters in __thread variables and check, after
 *     each of many yields and sleeps, that the counters and the addresses
 *     of their variables and of errno are unchanged.
 *  2. Each new thread sees its __thread variables at their initial values
 *     (60 threads in sequence: under the shim they reuse TLS blocks), also
 *     the locale and errno.
 *  3. errno set by a failing call stays the thread's across a blocking
 *     read another thread ends, while that thread sets its own errno.
 *  4. A destructor registered with __cxa_thread_atexit_impl (what C++
 *     thread_local objects use) runs when its thread ends, before join
 *     returns.
 *  5. 20000 threads created and joined in sequence, each with a malloc:
 *     the resident set grows by less than 16 MiB (a TLS block or malloc
 *     cache lost per thread would be 20000 of them).
 *  6. A new thread classifies and converts characters and prints a double
 *     (glibc keeps the ctype tables' pointers in TLS, set when a thread
 *     starts: a new TLS block without them made isalpha, toupper and
 *     printf's %f crash under the shim).
 */
#include <ctype.h>
#include <locale.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include "check.h"

#define NTHREADS 4
#define ROUNDS 400

static __thread int counter = 7;
static __thread char label[16] = "initial";
static __thread long zeroed;

/* 1 ---------------------------------------------------------------------- */

static int bad_value[NTHREADS], bad_addr[NTHREADS];

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    int *cp = &counter, *ep = &errno;
    counter = id * 100000;
    snprintf(label, sizeof label, "thread %d", id);
    for (int i = 0; i < ROUNDS; i++) {
        errno = 1000 + id;
        if (i % 50 == 0) {
            struct timespec ts = { 0, 200000 };
            nanosleep(&ts, NULL);
        } else {
            sched_yield();
        }
        /* spin a little, so that both CPUs are busy and threads move */
        for (volatile int k = 0; k < 2000; k++)
            ;
        if (*cp != id * 100000 + i || errno != 1000 + id)
            bad_value[id]++;
        if (cp != &counter || ep != &errno)
            bad_addr[id]++;
        char want[16];
        snprintf(want, sizeof want, "thread %d", id);
        if (strcmp(label, want))
            bad_value[id]++;
        counter++;
    }
    return NULL;
}

/* 6 ---------------------------------------------------------------------- */

static void *ctype_user(void *arg)
{
    (void)arg;
    char buf[32];
    snprintf(buf, sizeof buf, "%.1f", 1.5);
    int ok = isalpha('a') && !isdigit('a') && toupper('a') == 'A' && tolower('Q') == 'q' &&
             !strcmp(buf, "1.5");
    return ok ? (void *)1 : NULL;
}

/* 2 ---------------------------------------------------------------------- */

static void *fresh(void *arg)
{
    (void)arg;
    int ok = counter == 7 && !strcmp(label, "initial") && zeroed == 0 && errno == 0 &&
             uselocale((locale_t)0) == LC_GLOBAL_LOCALE;
    /* dirty everything for the next thread */
    counter = -1;
    strcpy(label, "used");
    zeroed = 42;
    errno = EINVAL;
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (c)
        uselocale(c);
    return (void *)(intptr_t)ok;
}

/* 3 ---------------------------------------------------------------------- */

static int pfd[2];

static void *reader(void *arg)
{
    (void)arg;
    char c;
    close(-1);                              /* errno = EBADF */
    ssize_t n = read(pfd[0], &c, 1);         /* blocks until the writer writes */
    return (void *)(intptr_t)(n == 1 && errno == EBADF);
}

static void *writer(void *arg)
{
    (void)arg;
    struct timespec ts = { 0, 20000000 };
    nanosleep(&ts, NULL);
    errno = 0;
    (void)!write(-1, "x", 1);                /* errno = EBADF here too... */
    errno = ERANGE;                         /* ...and then something else */
    (void)!write(pfd[1], "x", 1);
    return (void *)(intptr_t)(errno == ERANGE);
}

/* 4 ---------------------------------------------------------------------- */

extern int __cxa_thread_atexit_impl(void (*dtor)(void *), void *obj, void *dso);
extern void *__dso_handle;
static int dtor_ran;

static void dtor(void *obj)
{
    __atomic_store_n((int *)obj, 1, __ATOMIC_SEQ_CST);
}

static void *with_dtor(void *arg)
{
    (void)arg;
    __cxa_thread_atexit_impl(dtor, &dtor_ran, &__dso_handle);
    return NULL;
}

/* 5 ---------------------------------------------------------------------- */

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

static void *small(void *arg)
{
    char *p = malloc(64 + (size_t)(intptr_t)arg % 512);
    if (p)
        p[0] = 1;
    free(p);
    counter++;
    return NULL;
}

int main(void)
{
    check_start("tls");
    /* First: the only thread sure to get a TLS block never used before. */
    pthread_t ct;
    void *cr = NULL;
    CHECK(pthread_create(&ct, NULL, ctype_user, NULL) == 0);
    CHECK(pthread_join(ct, &cr) == 0);
    printf("a new thread's ctype and %%f: %s\n", cr ? "work" : "wrong");
    CHECK(cr != NULL);

    pthread_t t[NTHREADS];

    for (int i = 0; i < NTHREADS; i++)
        CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < NTHREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    int bv = 0, ba = 0;
    for (int i = 0; i < NTHREADS; i++) {
        bv += bad_value[i];
        ba += bad_addr[i];
    }
    printf("per-thread values after yields and sleeps: %s\n", bv ? "changed" : "kept");
    printf("per-thread addresses after yields and sleeps: %s\n", ba ? "changed" : "kept");
    CHECK(bv == 0);
    CHECK(ba == 0);
    CHECK(counter == 7 && !strcmp(label, "initial"));

    int fresh_ok = 0;
    for (int i = 0; i < 60; i++) {
        pthread_t f;
        void *r = NULL;
        CHECK(pthread_create(&f, NULL, fresh, NULL) == 0);
        CHECK(pthread_join(f, &r) == 0);
        fresh_ok += r != NULL;
    }
    printf("new threads with initial __thread values: %d of 60\n", fresh_ok);
    CHECK(fresh_ok == 60);

    CHECK(pipe(pfd) == 0);
    pthread_t rd, wr;
    void *rr = NULL, *wr_ok = NULL;
    CHECK(pthread_create(&rd, NULL, reader, NULL) == 0);
    CHECK(pthread_create(&wr, NULL, writer, NULL) == 0);
    CHECK(pthread_join(rd, &rr) == 0);
    CHECK(pthread_join(wr, &wr_ok) == 0);
    printf("errno kept across a blocking read: %s, %s\n", rr ? "reader yes" : "reader no",
           wr_ok ? "writer yes" : "writer no");
    CHECK(rr && wr_ok);

    pthread_t d;
    CHECK(pthread_create(&d, NULL, with_dtor, NULL) == 0);
    CHECK(pthread_join(d, NULL) == 0);
    printf("thread_local destructor ran before join returned: %s\n",
           __atomic_load_n(&dtor_ran, __ATOMIC_SEQ_CST) ? "yes" : "no");
    CHECK(dtor_ran == 1);

    long before = 0;
    for (int i = 0; i < 20000; i++) {
        if (i == 1000)
            before = rss_kib();
        pthread_t s;
        if (pthread_create(&s, NULL, small, (void *)(intptr_t)i) != 0 || pthread_join(s, NULL) != 0) {
            CHECK(!"create/join");
            break;
        }
    }
    long grew = rss_kib() - before;
    fprintf(stderr, "tls: resident set grew by %ld KiB over 19000 threads\n", grew);
    printf("resident set bounded over 20000 threads: %s\n", grew < 16 * 1024 ? "yes" : "no");
    CHECK(grew < 16 * 1024);
    CHECK(counter == 7);
    return check_end("tls");
}
