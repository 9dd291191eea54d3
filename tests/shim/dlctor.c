/*
 * dlctor.c -- dlopen of a library whose constructor creates threads
 * (dlctor-lib.c) while another thread sleeps, then dlopen and dlclose of
 * another (dlclose-lib.c) whose constructor and destructor make threads
 * that lock a mutex, wait on a condition variable, sleep and are joined,
 * several times, while a third thread calls dlsym and dl_iterate_phdr
 * (as a C++ throw does) in a loop. ld.so runs constructors and
 * destructors with its load lock held, recursively, by the kernel thread
 * that called dlopen/dlclose; under the shim the nano-thread running them
 * once resumed on another kernel thread after a join: its unlock there
 * left the lock held, and the next dlsym/dlopen waited for it forever
 * (the shim also once looked up libc's functions at their first call, a
 * dlsym on that path). After dlopen(3p), dlclose(3p), pthread_create(3p).
 */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include "check.h"

/* Asleep while the library loads. */
static void *sleeper(void *arg)
{
    (void)arg;
    usleep(100000);
    return NULL;
}

/* Calls into ld.so from another thread while the libraries load. */
static volatile int stop_probing;
static int probe_phdr(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info;
    (void)size;
    ++*(int *)arg;
    return 0;
}
static void *prober(void *arg)
{
    (void)arg;
    long ok = 1;
    while (!stop_probing) {
        int n = 0;
        dl_iterate_phdr(probe_phdr, &n);
        ok &= n > 0 && dlsym(RTLD_DEFAULT, "printf") != NULL;
        usleep(200);
    }
    return (void *)ok;
}

/* Open and close path (libdlclose.so) rounds times; 1 if every
 * constructor and destructor saw its three workers (sum 6). */
static int open_close(const char *path, int rounds)
{
    int good = 1;
    for (int i = 0; i < rounds; i++) {
        void *h = dlopen(path, RTLD_NOW);
        if (!h) {
            printf("FAIL: %s\n", dlerror());
            return 0;
        }
        int (*ctor_sum)(void) = (int (*)(void))dlsym(h, "dlclose_lib_ctor_sum");
        void (*report_to)(int *) = (void (*)(int *))dlsym(h, "dlclose_lib_report_to");
        int dtor_sum = -1;
        if (!ctor_sum || !report_to) {
            dlclose(h);
            return 0;
        }
        good &= ctor_sum() == 6;
        report_to(&dtor_sum);
        good &= dlclose(h) == 0;
        good &= dtor_sum == 6;
    }
    return good;
}

int main(void)
{
    check_start("dlctor");
    /* The library sits in .libs next to this program (libtool's layout). */
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 64);
    CHECK(n > 0);
    if (n <= 0)
        return check_end("dlctor");
    path[n] = '\0';
    strcpy(strrchr(path, '/') + 1, ".libs/libdlctor.so");

    char path2[PATH_MAX];
    strcpy(path2, path);
    strcpy(strrchr(path2, '/') + 1, "libdlclose.so");

    pthread_t t, p;
    CHECK(pthread_create(&t, NULL, sleeper, NULL) == 0);
    CHECK(pthread_create(&p, NULL, prober, NULL) == 0);
    void *h = dlopen(path, RTLD_NOW);
    printf("dlopen: %s\n", h ? "ok" : "failed");
    if (!h) {
        printf("FAIL: %s\n", dlerror());
        return 1;
    }
    int *sum = dlsym(h, "dlctor_sum"), *calls = dlsym(h, "dlctor_calls_ok");
    int (*ran)(void) = (int (*)(void))dlsym(h, "dlctor_detached_ran");
    CHECK(sum && calls && ran);
    printf("constructor's threads: sum %d, attr calls ok %d\n", sum ? *sum : -1, calls ? *calls : -1);
    CHECK(sum && *sum == 45);
    CHECK(calls && *calls == 11);
    for (int i = 0; i < 5000 && ran && !ran(); i++)
        usleep(1000);
    printf("detached thread ran: %d\n", ran && ran());
    int oc = open_close(path2, 5);
    printf("dlopen/dlclose with threads in constructor and destructor, 5 rounds: %s\n",
           oc ? "ok" : "wrong");
    CHECK(oc);
    stop_probing = 1;
    void *pr = NULL;
    CHECK(pthread_join(p, &pr) == 0);
    printf("dlsym and dl_iterate_phdr meanwhile: %s\n", pr ? "ok" : "wrong");
    CHECK(pr != NULL);
    CHECK(pthread_join(t, NULL) == 0);
    return check_end("dlctor");
}
