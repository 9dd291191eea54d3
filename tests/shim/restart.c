/*
 * restart.c -- signals and cancellation against threads asleep in blocking
 * calls. A handler installed with SA_RESTART that interrupts read, write,
 * waitpid or accept resumes the call (it returns the data, the child, the
 * connection, never -1/EINTR), and so does sem_wait on Linux (signal(7));
 * without SA_RESTART sem_wait returns -1/EINTR (sem_wait(3p)); pthread_cancel ends a thread asleep in poll, ppoll,
 * select, pselect, epoll_wait, read, accept or waitpid (cancellation
 * points, their cleanup handler runs). After signal(7) "Interruption of
 * system calls and library functions by signal handlers", sem_wait(3p),
 * pthread_cancel(3p) and pthreads(7) "Cancellation points".
 */
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "check.h"

static volatile int handled;
static void on_usr1(int sig) { (void)sig; __atomic_add_fetch(&handled, 1, __ATOMIC_SEQ_CST); }

static int pipefd[2], listen_fd;
static struct sockaddr_in addr;
static pid_t child;
static sem_t sem, started;

static void sleep_ms(long ms)
{
    struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&d, NULL);
}

/* Signal t until its handler ran at least once (the signal may come
 * before the call starts: then the call simply was not interrupted). */
static void signal_until_handled(pthread_t t)
{
    int h0 = __atomic_load_n(&handled, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 2000 && __atomic_load_n(&handled, __ATOMIC_SEQ_CST) == h0; i++) {
        pthread_kill(t, SIGUSR1);
        sleep_ms(2);
    }
    sleep_ms(20);                 /* a few more chances to return EINTR wrongly */
    pthread_kill(t, SIGUSR1);
    sleep_ms(20);
}

static pid_t spawn_sleeper(void)
{
    pid_t p = fork();
    if (p == 0) {
        execl("/bin/sleep", "sleep", "60", (char *)NULL);
        _exit(127);
    }
    return p;
}

/* ---- SA_RESTART: the call resumes ---- */

static void *restart_call(void *arg)
{
    int which = (int)(intptr_t)arg;
    sem_post(&started);
    switch (which) {
    case 0: {
        char c = 0;
        ssize_t r = read(pipefd[0], &c, 1);
        return (void *)(intptr_t)(r == 1 && c == 'r');
    }
    case 1: {
        int st;
        pid_t r = waitpid(child, &st, 0);
        return (void *)(intptr_t)(r == child && WIFSIGNALED(st));
    }
    case 2: {
        int fd = accept(listen_fd, NULL, NULL);
        if (fd < 0)
            return (void *)0;
        close(fd);
        return (void *)1;
    }
    }
    return NULL;
}

static void restart_case(int which, const char *name)
{
    pthread_t t;
    if (which == 1)
        child = spawn_sleeper();
    CHECK(pthread_create(&t, NULL, restart_call, (void *)(intptr_t)which) == 0);
    sem_wait(&started);
    signal_until_handled(t);
    switch (which) {
    case 0: CHECK(write(pipefd[1], "r", 1) == 1); break;
    case 1: kill(child, SIGKILL); break;
    case 2: {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(connect(c, (struct sockaddr *)&addr, sizeof addr) == 0);
        close(c);
        break;
    }
    }
    void *res;
    pthread_join(t, &res);
    printf("%s resumed after an SA_RESTART handler: %d\n", name, (int)(intptr_t)res);
    CHECK(res == (void *)1);
}

/* ---- sem_wait: resumed with SA_RESTART, EINTR without ---- */

static volatile int sem_returned;
static void *sem_call(void *arg)
{
    (void)arg;
    sem_post(&started);
    int r = sem_wait(&sem);
    int e = errno;
    __atomic_store_n(&sem_returned, 1, __ATOMIC_SEQ_CST);
    return (void *)(intptr_t)(r == 0 ? 1 : r == -1 && e == EINTR ? 2 : 0);
}

/* ---- cancellation of calls asleep in the kernel ---- */

static void cleanup(void *arg) { *(int *)arg = 1; }

static void *cancel_call(void *arg)
{
    int which = (int)(intptr_t)arg;
    int cleaned = 0;
    pthread_cleanup_push(cleanup, &cleaned);
    sem_post(&started);
    struct pollfd p = { pipefd[0], POLLIN, 0 };
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(pipefd[0], &rs);
    switch (which) {
    case 0: poll(&p, 1, -1); break;
    case 1: ppoll(&p, 1, NULL, NULL); break;
    case 2: select(pipefd[0] + 1, &rs, NULL, NULL, NULL); break;
    case 3: pselect(pipefd[0] + 1, &rs, NULL, NULL, NULL, NULL); break;
    case 4: {
        int ep = epoll_create1(0);
        struct epoll_event ev = { .events = EPOLLIN };
        epoll_ctl(ep, EPOLL_CTL_ADD, pipefd[0], &ev);
        struct epoll_event out;
        epoll_wait(ep, &out, 1, -1);
        break;
    }
    case 5: { char c; (void)!read(pipefd[0], &c, 1); break; }
    case 6: accept(listen_fd, NULL, NULL); break;
    case 7: { int st; waitpid(child, &st, 0); break; }
    }
    pthread_cleanup_pop(0);
    return (void *)(intptr_t)(100 + cleaned);   /* not cancelled */
}

int main(void)
{
    check_start("restart");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    CHECK(pipe(pipefd) == 0);
    sem_init(&sem, 0, 0);
    sem_init(&started, 0, 0);
    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    CHECK(bind(listen_fd, (struct sockaddr *)&addr, sizeof addr) == 0);
    CHECK(getsockname(listen_fd, (struct sockaddr *)&addr, &len) == 0);
    CHECK(listen(listen_fd, 4) == 0);

    restart_case(0, "read");
    restart_case(1, "waitpid");
    restart_case(2, "accept");

    pthread_t t;
    void *res;
    CHECK(pthread_create(&t, NULL, sem_call, NULL) == 0);
    sem_wait(&started);
    signal_until_handled(t);
    sem_post(&sem);
    pthread_join(t, &res);
    printf("sem_wait resumed after an SA_RESTART handler: %d\n", res == (void *)1);
    CHECK(res == (void *)1);

    sa.sa_flags = 0;
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    __atomic_store_n(&sem_returned, 0, __ATOMIC_SEQ_CST);
    CHECK(pthread_create(&t, NULL, sem_call, NULL) == 0);
    sem_wait(&started);
    for (int i = 0; i < 2000 && !__atomic_load_n(&sem_returned, __ATOMIC_SEQ_CST); i++) {
        pthread_kill(t, SIGUSR1);
        sleep_ms(2);
    }
    pthread_join(t, &res);
    printf("sem_wait interrupted by a handler without SA_RESTART returns EINTR: %d\n", res == (void *)2);
    CHECK(res == (void *)2);

    /* A fresh pipe: nothing left in it by the cases above. */
    close(pipefd[0]);
    close(pipefd[1]);
    CHECK(pipe(pipefd) == 0);
    static const char *const names[] = { "poll", "ppoll", "select", "pselect", "epoll_wait",
                                         "read", "accept", "waitpid" };
    child = spawn_sleeper();
    for (int i = 0; i < 8; i++) {
        CHECK(pthread_create(&t, NULL, cancel_call, (void *)(intptr_t)i) == 0);
        sem_wait(&started);
        sleep_ms(10);             /* most often asleep in the call by now */
        pthread_cancel(t);
        pthread_join(t, &res);
        printf("%s cancelled: %d\n", names[i], res == PTHREAD_CANCELED);
        CHECK(res == PTHREAD_CANCELED);
    }
    kill(child, SIGKILL);
    int st;
    waitpid(child, &st, 0);
    return check_end("restart");
}
