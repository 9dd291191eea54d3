/*
 * iofast.c -- the fast path of the shim's I/O wrappers: a plain POSIX
 * program (compiled with -pthread only, never linked with nthlib) for
 * bench/shim-io.sh, which runs it natively and under two builds of
 * libnth-pthread.so in one run. Each case times N calls in-process
 * (CLOCK_MONOTONIC around the loop) and prints one JSON line:
 *   write_devnull   write(2) of 1 byte to /dev/null (always ready: the
 *                   wrapper's zero-timeout poll, nth_blocking_enter/leave)
 *   read_devzero    read(2) of 1 byte from /dev/zero
 *   write_handler   the same write from inside a signal handler the
 *                   program installed (raised once; the handler loops)
 * usage: iofast IMPL [N]    (IMPL names what runs: native, shim-main, ...)
 * A second thread is created and joined first, so that under the shim the
 * runtime runs and the caller is a nano-thread, as in a threaded program.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long n = 200000;
static int fd_null, fd_zero;
static double handler_ns;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double loop_write(void)
{
    char c = 'x';
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        if (write(fd_null, &c, 1) != 1)
            exit(1);
    return (now_ns() - t0) / (double)n;
}

static double loop_read(void)
{
    char c;
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        if (read(fd_zero, &c, 1) != 1)
            exit(1);
    return (now_ns() - t0) / (double)n;
}

static void on_usr1(int sig)
{
    (void)sig;
    handler_ns = loop_write();
}

static void *nop(void *a)
{
    return a;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: iofast IMPL [N]\n");
        return 2;
    }
    const char *impl = argv[1];
    if (argc > 2 && (n = atol(argv[2])) <= 0) {
        fprintf(stderr, "iofast: N must be a positive number, not '%s'\n", argv[2]);
        return 2;
    }
    fd_null = open("/dev/null", O_WRONLY);
    fd_zero = open("/dev/zero", O_RDONLY);
    if (fd_null < 0 || fd_zero < 0) {
        perror("iofast: open");
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, nop, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    loop_write();                     /* warm-up */
    double w = loop_write(), r = loop_read();
    raise(SIGUSR1);
    printf("{\"bench\":\"write_devnull\",\"impl\":\"%s\",\"value\":%.1f,\"unit\":\"ns/op\",\"params\":{\"n\":%ld}}\n", impl, w, n);
    printf("{\"bench\":\"read_devzero\",\"impl\":\"%s\",\"value\":%.1f,\"unit\":\"ns/op\",\"params\":{\"n\":%ld}}\n", impl, r, n);
    printf("{\"bench\":\"write_handler\",\"impl\":\"%s\",\"value\":%.1f,\"unit\":\"ns/op\",\"params\":{\"n\":%ld}}\n", impl, handler_ns, n);
    return 0;
}
