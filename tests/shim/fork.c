/*
 * fork.c -- fork() with threads: pthread_atfork handlers in POSIX order
 * (prepare in reverse registration order, parent and child in registration
 * order), the child has exactly the forking thread (same pthread_self) and
 * can create threads and use synchronisation again, fork from a non-main
 * thread, exec, posix_spawn and system(). After fork(3p),
 * pthread_atfork(3p), exec(3p).
 */
#include <pthread.h>
#include <semaphore.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/wait.h>
#include "check.h"

extern char **environ;

static char trail[64];
static void add(const char *s) { strncat(trail, s, sizeof trail - strlen(trail) - 1); }
static pthread_mutex_t guarded = PTHREAD_MUTEX_INITIALIZER;
static void prep_a(void) { add("pA "); }
static void prep_b(void) { add("pB "); pthread_mutex_lock(&guarded); }
static void parent_a(void) { add("Pa "); }
static void parent_b(void) { add("Pb "); pthread_mutex_unlock(&guarded); }
static void child_a(void) { add("Ca "); }
static void child_b(void) { add("Cb "); pthread_mutex_unlock(&guarded); }

static void *plus_one(void *arg) { return (void *)((intptr_t)arg + 1); }

/* In a child: threads, a mutex and a condvar work again. */
static int child_runtime_works(void)
{
    pthread_t t[4];
    void *r;
    int ok = 1;
    for (intptr_t i = 0; i < 4; i++) ok &= pthread_create(&t[i], NULL, plus_one, (void *)i) == 0;
    for (intptr_t i = 0; i < 4; i++) { ok &= pthread_join(t[i], &r) == 0; ok &= r == (void *)(i + 1); }
    ok &= pthread_mutex_lock(&guarded) == 0;
    ok &= pthread_mutex_unlock(&guarded) == 0;
    return ok;
}

static sem_t hold;
static void *idle_thread(void *arg) { sem_wait(&hold); return arg; }

static void *fork_from_thread(void *arg)
{
    (void)arg;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(child_runtime_works() ? 0 : 1);
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) return (void *)-1;
    return (void *)(intptr_t)(WIFEXITED(st) ? WEXITSTATUS(st) : 99);
}

static int exec_child(void)
{
    printf("exec'd program runs threads: %d\n", child_runtime_works());
    fflush(stdout);
    return 5;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "exec-child") == 0)
        return exec_child();
    check_start("fork");
    sem_init(&hold, 0, 0);
    pthread_t other;
    CHECK(pthread_create(&other, NULL, idle_thread, NULL) == 0);   /* not copied */

    EXPECT("atfork(A)", pthread_atfork(prep_a, parent_a, child_a), 0);
    EXPECT("atfork(B)", pthread_atfork(prep_b, parent_b, child_b), 0);
    pthread_t before = pthread_self();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int ok = child_runtime_works();
        printf("child: handlers %s| same pthread_self %d | threads and mutex work %d\n",
               trail, pthread_equal(before, pthread_self()) != 0, ok);
        fflush(stdout);
        _exit(ok && strcmp(trail, "pB pA Ca Cb ") == 0 ? 0 : 1);
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    printf("parent: handlers %s| child status %d\n", trail, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    CHECK(strcmp(trail, "pB pA Pa Pb ") == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* fork from a thread that is not main */
    pthread_t t;
    void *res;
    trail[0] = 0;
    CHECK(pthread_create(&t, NULL, fork_from_thread, NULL) == 0);
    pthread_join(t, &res);
    printf("fork from a non-main thread: child status %d, parent handlers %s\n", (int)(intptr_t)res, trail);
    CHECK(res == NULL);

    /* exec: the new program starts with a fresh thread library */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        execl(argv[0], argv[0], "exec-child", (char *)NULL);
        _exit(127);
    }
    CHECK(waitpid(pid, &st, 0) == pid);
    printf("fork+exec status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 5);

    char *args[] = { argv[0], "exec-child", NULL };
    fflush(stdout);
    CHECK(posix_spawn(&pid, argv[0], NULL, NULL, args, environ) == 0);
    CHECK(waitpid(pid, &st, 0) == pid);
    printf("posix_spawn status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 5);

    st = system("exit 4");
    printf("system status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 4);

    sem_post(&hold);
    pthread_join(other, NULL);
    return check_end("fork");
}
