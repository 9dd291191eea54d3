/*
 * blocking.c -- sleeps and blocking system calls from threads: sleep,
 * usleep, nanosleep and clock_nanosleep (errors, and the remaining time when
 * a handler interrupts them), pause; pipes with read/write/readv/writev,
 * pread/pwrite/fsync on a file, sockets (send/recv/sendto/recvfrom/sendmsg/
 * recvmsg, accept/accept4/connect), poll/ppoll/select/pselect/epoll_wait/
 * epoll_pwait, wait/waitpid. Threads that wait on each other through these
 * calls must all make progress (run it with one VP under the shim).
 * After nanosleep(3p), clock_nanosleep(3p), poll(3p), select(3p),
 * waitpid(3p), and the Linux man pages for the non-POSIX calls.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include "check.h"

static void on_signal(int sig) { (void)sig; }
static sem_t ready;
static volatile int done;

/* Send SIGUSR1 to t until it reports done; the signal may land before the
 * call starts, so repeat (bounded: a call never interrupted fails). */
static void interrupt_until_done(pthread_t t)
{
    for (int sent = 0; !__atomic_load_n(&done, __ATOMIC_SEQ_CST) && sent < 2000; sent++) {
        pthread_kill(t, SIGUSR1);
        struct timespec ms5 = { 0, 5 * 1000000L };
        nanosleep(&ms5, NULL);
    }
}

static void *interrupted_sleep(void *arg)
{
    int which = (int)(intptr_t)arg;
    struct timespec req = { 10, 0 }, rem = { 0, 0 };
    int ok = 0;
    sem_post(&ready);
    switch (which) {
    case 0: {
        int r = nanosleep(&req, &rem);
        ok = r == -1 && errno == EINTR && (rem.tv_sec > 0 || rem.tv_nsec > 0) && rem.tv_sec <= 10;
        break;
    }
    case 1: {
        int r = clock_nanosleep(CLOCK_MONOTONIC, 0, &req, &rem);
        ok = r == EINTR && (rem.tv_sec > 0 || rem.tv_nsec > 0) && rem.tv_sec <= 10;
        break;
    }
    case 2: {
        struct timespec dl = deadline_ms(CLOCK_MONOTONIC, 10000);
        int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &dl, NULL);
        ok = r == EINTR;
        break;
    }
    case 3: {
        int r = pause();
        ok = r == -1 && errno == EINTR;
        break;
    }
    case 4: {
        unsigned left = sleep(10);
        ok = left > 0 && left <= 10;
        break;
    }
    }
    __atomic_store_n(&done, 1, __ATOMIC_SEQ_CST);
    return (void *)(intptr_t)ok;
}

/* pipes: two threads bounce a counter 1000 times */
static int ab[2], ba[2];
static void *bouncer(void *arg)
{
    (void)arg;
    int v;
    for (;;) {
        if (read(ab[0], &v, sizeof v) != sizeof v) return (void *)-1;
        if (v < 0) return NULL;
        v++;
        if (write(ba[1], &v, sizeof v) != sizeof v) return (void *)-1;
    }
}

static void *stream_echo(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[64];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) send(fd, buf, (size_t)n, 0);
    struct msghdr mh;
    struct iovec iov = { buf, sizeof buf };
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    n = recvmsg(fd, &mh, 0);
    if (n > 0) { iov.iov_len = (size_t)n; sendmsg(fd, &mh, 0); }
    return NULL;
}

static int listen_fd;
static void *acceptor(void *arg)
{
    int use4 = (int)(intptr_t)arg;
    int c = use4 ? accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC) : accept(listen_fd, NULL, NULL);
    if (c < 0) return (void *)-1;
    char buf[16];
    ssize_t n = read(c, buf, sizeof buf);
    if (n > 0) write(c, buf, (size_t)n);
    close(c);
    return NULL;
}

static int wake_fd[2];
static void *waiter(void *arg)
{
    int which = (int)(intptr_t)arg, r = -1;
    sem_post(&ready);
    switch (which) {
    case 0: { struct pollfd p = { wake_fd[0], POLLIN, 0 }; r = poll(&p, 1, -1) == 1 && (p.revents & POLLIN); break; }
    case 1: { struct pollfd p = { wake_fd[0], POLLIN, 0 }; r = ppoll(&p, 1, NULL, NULL) == 1 && (p.revents & POLLIN); break; }
    case 2: { fd_set rs; FD_ZERO(&rs); FD_SET(wake_fd[0], &rs); r = select(wake_fd[0] + 1, &rs, NULL, NULL, NULL) == 1 && FD_ISSET(wake_fd[0], &rs); break; }
    case 3: { fd_set rs; FD_ZERO(&rs); FD_SET(wake_fd[0], &rs); r = pselect(wake_fd[0] + 1, &rs, NULL, NULL, NULL, NULL) == 1; break; }
    case 4: case 5: {
        int ep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event ev = { .events = EPOLLIN, .data.fd = wake_fd[0] }, out;
        epoll_ctl(ep, EPOLL_CTL_ADD, wake_fd[0], &ev);
        int n = which == 4 ? epoll_wait(ep, &out, 1, -1) : epoll_pwait(ep, &out, 1, -1, NULL);
        r = n == 1 && out.data.fd == wake_fd[0];
        close(ep);
        break;
    }
    }
    char b;
    if (read(wake_fd[0], &b, 1) != 1) r = 0;
    return (void *)(intptr_t)r;
}

static pid_t child_pid;
static void *reap(void *arg)
{
    (void)arg;
    int st = 0;
    sem_post(&ready);
    pid_t r = waitpid(child_pid, &st, 0);
    return (void *)(intptr_t)(r == child_pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* nanosleep(2) and clock_nanosleep(2): EINVAL for tv_sec < 0 and
 * tv_nsec >= 1e9, also with TIMER_ABSTIME (issue 4's audit). */
static void test_error_audit(void)
{
    struct timespec neg = { -1, 0 }, big = { 0, 1000000000L };
    EXPECT_ERRNO("nanosleep(tv_sec -1)", nanosleep(&neg, NULL), EINVAL);
    EXPECT_ERRNO("nanosleep(tv_nsec 1e9)", nanosleep(&big, NULL), EINVAL);
    EXPECT("clock_nanosleep(REALTIME, tv_nsec 1e9)", clock_nanosleep(CLOCK_REALTIME, 0, &big, NULL), EINVAL);
    EXPECT("clock_nanosleep(MONOTONIC, ABSTIME, tv_sec -1)",
           clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &neg, NULL), EINVAL);
}

int main(void)
{
    check_start("blocking");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    sem_init(&ready, 0, 0);
    pthread_t t;
    void *res;

    /* sleeps */
    EXPECT("sleep(0)", (int)sleep(0), 0);
    EXPECT_ERRNO("usleep(1000)", usleep(1000), 0);
    struct timespec t0, t1, req = { 0, 10 * 1000000L };
    clock_gettime(CLOCK_MONOTONIC, &t0);
    EXPECT_ERRNO("nanosleep(10ms)", nanosleep(&req, NULL), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("nanosleep slept at least 10ms: %d\n", elapsed_ns(t0, t1) >= 10 * 1000000LL);
    CHECK(elapsed_ns(t0, t1) >= 10 * 1000000LL);
    struct timespec bad = { 0, -1 };
    EXPECT_ERRNO("nanosleep(tv_nsec -1)", nanosleep(&bad, NULL), EINVAL);
    EXPECT("clock_nanosleep(MONOTONIC, 10ms)", clock_nanosleep(CLOCK_MONOTONIC, 0, &req, NULL), 0);
    struct timespec past = { 0, 1 };
    EXPECT("clock_nanosleep(MONOTONIC, ABSTIME in the past)", clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &past, NULL), 0);
    EXPECT("clock_nanosleep(clock 12345)", clock_nanosleep(12345, 0, &req, NULL), EINVAL);
    EXPECT("clock_nanosleep(THREAD_CPUTIME)", clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &req, NULL), EINVAL);
    EXPECT("clock_nanosleep(tv_nsec -1)", clock_nanosleep(CLOCK_REALTIME, 0, &bad, NULL), EINVAL);

    const char *sleeps[] = { "nanosleep", "clock_nanosleep", "clock_nanosleep ABSTIME", "pause", "sleep" };
    for (int i = 0; i < 5; i++) {
        done = 0;
        CHECK(pthread_create(&t, NULL, interrupted_sleep, (void *)(intptr_t)i) == 0);
        sem_wait(&ready);
        interrupt_until_done(t);
        pthread_join(t, &res);
        printf("%s interrupted by a handler (EINTR, remaining time as POSIX says): %d\n", sleeps[i], (int)(intptr_t)res);
        CHECK(res == (void *)1);
    }

    /* pipes between two threads */
    CHECK(pipe(ab) == 0 && pipe(ba) == 0);
    CHECK(pthread_create(&t, NULL, bouncer, NULL) == 0);
    int v = 0, bounced = 1;
    for (int i = 0; i < 1000; i++) {
        int w = v;
        bounced &= write(ab[1], &w, sizeof w) == sizeof w;
        bounced &= read(ba[0], &v, sizeof v) == sizeof v;
    }
    v = -1;
    CHECK(write(ab[1], &v, sizeof v) == sizeof v);
    pthread_join(t, &res);
    printf("pipe ping-pong 1000 round trips: %d\n", bounced && res == NULL);
    CHECK(bounced && res == NULL);
    char x1[3] = "ab", x2[4] = "cde", y1[2], y2[3];
    struct iovec wv[2] = { { x1, 2 }, { x2, 3 } }, rv[2] = { { y1, 2 }, { y2, 3 } };
    CHECK(writev(ab[1], wv, 2) == 5);
    CHECK(readv(ab[0], rv, 2) == 5);
    printf("writev/readv: %.2s%.3s\n", y1, y2);
    close(ab[0]); close(ab[1]); close(ba[0]); close(ba[1]);

    /* files */
    char path[] = "/tmp/nth-shim-blocking-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    CHECK(pwrite(fd, "0123456789", 10, 0) == 10);
    CHECK(pwrite(fd, "XY", 2, 4) == 2);
    char fb[11] = { 0 };
    CHECK(pread(fd, fb, 10, 0) == 10);
    printf("pwrite/pread: %s\n", fb);
    EXPECT_ERRNO("fsync", fsync(fd), 0);
    close(fd);

    /* sockets: stream socketpair with send/recv and sendmsg/recvmsg */
    int sp[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
    CHECK(pthread_create(&t, NULL, stream_echo, (void *)(intptr_t)sp[1]) == 0);
    char sb[16] = { 0 };
    CHECK(send(sp[0], "hello", 5, 0) == 5);
    CHECK(recv(sp[0], sb, sizeof sb, 0) == 5);
    printf("send/recv echo: %s\n", sb);
    memset(sb, 0, sizeof sb);
    CHECK(send(sp[0], "msg", 3, 0) == 3);
    CHECK(recv(sp[0], sb, 3, MSG_WAITALL) == 3);
    printf("sendmsg/recvmsg echo: %s\n", sb);
    pthread_join(t, NULL);
    close(sp[0]); close(sp[1]);
    CHECK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sp) == 0);
    CHECK(sendto(sp[0], "dgram", 5, 0, NULL, 0) == 5);
    memset(sb, 0, sizeof sb);
    CHECK(recvfrom(sp[1], sb, sizeof sb, 0, NULL, NULL) == 5);
    printf("sendto/recvfrom: %s\n", sb);
    close(sp[0]); close(sp[1]);

    /* TCP on loopback: accept and accept4 in a thread, connect here */
    for (int use4 = 0; use4 < 2; use4++) {
        listen_fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = 0 };
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t sl = sizeof sin;
        CHECK(bind(listen_fd, (struct sockaddr *)&sin, sizeof sin) == 0);
        CHECK(listen(listen_fd, 4) == 0);
        CHECK(getsockname(listen_fd, (struct sockaddr *)&sin, &sl) == 0);
        CHECK(pthread_create(&t, NULL, acceptor, (void *)(intptr_t)use4) == 0);
        int c = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(connect(c, (struct sockaddr *)&sin, sizeof sin) == 0);
        memset(sb, 0, sizeof sb);
        CHECK(write(c, "tcp", 3) == 3);
        CHECK(read(c, sb, sizeof sb) == 3);
        pthread_join(t, &res);
        printf("%s + connect echo: %s\n", use4 ? "accept4" : "accept", sb);
        CHECK(res == NULL);
        close(c);
        close(listen_fd);
    }

    /* readiness waits: nothing ready times out, a write wakes the waiter */
    CHECK(pipe(wake_fd) == 0);
    struct pollfd p = { wake_fd[0], POLLIN, 0 };
    EXPECT("poll(empty pipe, 10ms) ready", poll(&p, 1, 10), 0);
    struct timespec ts10 = { 0, 10 * 1000000L };
    EXPECT("ppoll(empty pipe, 10ms) ready", ppoll(&p, 1, &ts10, NULL), 0);
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(wake_fd[0], &rs);
    struct timeval tv = { 0, 10000 };
    EXPECT("select(empty pipe, 10ms) ready", select(wake_fd[0] + 1, &rs, NULL, NULL, &tv), 0);
    FD_ZERO(&rs);
    FD_SET(wake_fd[0], &rs);
    EXPECT("pselect(empty pipe, 10ms) ready", pselect(wake_fd[0] + 1, &rs, NULL, NULL, &ts10, NULL), 0);
    const char *waits[] = { "poll", "ppoll", "select", "pselect", "epoll_wait", "epoll_pwait" };
    for (int i = 0; i < 6; i++) {
        CHECK(pthread_create(&t, NULL, waiter, (void *)(intptr_t)i) == 0);
        sem_wait(&ready);
        CHECK(write(wake_fd[1], "w", 1) == 1);
        pthread_join(t, &res);
        printf("%s woken by a write from another thread: %d\n", waits[i], (int)(intptr_t)res);
        CHECK(res == (void *)1);
    }

    /* wait/waitpid in one thread while another lets the child finish */
    int go[2];
    CHECK(pipe(go) == 0);
    fflush(stdout);
    child_pid = fork();
    if (child_pid == 0) {
        char b;
        close(go[1]);
        _exit(read(go[0], &b, 1) == 1 ? 7 : 8);
    }
    close(go[0]);
    CHECK(pthread_create(&t, NULL, reap, NULL) == 0);
    sem_wait(&ready);
    CHECK(write(go[1], "g", 1) == 1);
    pthread_join(t, &res);
    printf("waitpid in a thread: child status %d\n", (int)(intptr_t)res);
    CHECK(res == (void *)7);
    close(go[1]);
    pid_t c2 = fork();
    if (c2 == 0) _exit(3);
    int st = 0;
    CHECK(wait(&st) == c2);
    printf("wait: child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    EXPECT_ERRNO("waitpid(no children)", waitpid(-1, &st, 0), ECHILD);
    test_error_audit();
    return check_end("blocking");
}
