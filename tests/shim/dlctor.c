/*
 * dlctor.c -- dlopen of a library whose constructor creates threads
 * (dlctor-lib.c) while another thread sleeps. ld.so runs constructors with
 * its load lock held, recursively, by the kernel thread that called
 * dlopen; under the shim the nano-thread running the constructor may
 * resume on another kernel thread after a join, and a dlsym made there
 * (the shim once looked up libc's functions at their first call) waited
 * for that lock forever. After dlopen(3p), pthread_create(3p).
 */
#include <dlfcn.h>
#include <limits.h>
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

    pthread_t t;
    CHECK(pthread_create(&t, NULL, sleeper, NULL) == 0);
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
    CHECK(pthread_join(t, NULL) == 0);
    return check_end("dlctor");
}
