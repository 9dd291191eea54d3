/*
 * cxxexit.cpp -- pthread_exit in C++ unwinds the thread's stack (glibc's
 * forced unwind, caught as abi::__forced_unwind): a std::lock_guard
 * releases its mutex and RAII objects are destroyed, newest first, frame
 * by frame; catch (...) { throw; } and catch (abi::__forced_unwind &) {
 * throw; } let it go on; C frames with setjmp-based pthread_cleanup_push
 * buffers (cxxmixed.c, compiled without -fexceptions) run their handlers
 * in place between C++ frames; a catch that does not rethrow ends the
 * process ("FATAL: exception not rethrown", SIGABRT); pthread_exit from
 * main destroys main's objects and lets the other threads finish.
 * After pthread_exit(3p), pthread_cleanup_push(3p) and glibc's nptl/unwind.c.
 */
#include <cxxabi.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <mutex>
#include <string>
#include "check.h"

extern "C" {
/* cxxmixed.c: a C frame with a setjmp-based cleanup buffer that calls fn. */
void cxxmixed_c_frame(void (*fn)(void), void (*handler)(void *), void *arg);
}

static std::string trail;        /* what ran, in order: written by one thread
                                    at a time, read after the join */

struct Tracer {
    const char *name;
    explicit Tracer(const char *n) : name(n) {}
    ~Tracer()
    {
        trail += name;
        trail += ' ';
    }
};

static std::mutex guarded;

static void *holds_lock_guard(void *)
{
    std::lock_guard<std::mutex> lock(guarded);
    Tracer t("local");
    pthread_exit((void *)42);
}

static __attribute__((noinline)) void inner(void)
{
    Tracer a("inner-a");
    Tracer b("inner-b");
    pthread_exit((void *)7);
}

static __attribute__((noinline)) void middle(void)
{
    Tracer m("middle");
    inner();
    trail += "NOT-REACHED ";
}

static void *nested(void *)
{
    Tracer o("outer");
    middle();
    return nullptr;
}

static void *rethrows(void *)
{
    Tracer o("outer");
    try {
        Tracer t("try");
        try {
            Tracer u("inner-try");
            pthread_exit((void *)3);
        } catch (abi::__forced_unwind &) {
            trail += "caught-forced ";
            throw;
        }
    } catch (...) {
        trail += "caught-all ";
        throw;
    }
    return nullptr;
}

static void cleanup_note(void *arg) { trail += (const char *)arg; trail += ' '; }

static void exits_in_cxx(void)
{
    Tracer t("cxx-inner");
    pthread_exit((void *)5);
}

static void c_then_cxx(void)
{
    Tracer m("cxx-middle");
    cxxmixed_c_frame(exits_in_cxx, cleanup_note, (void *)"c-inner-handler");
}

static void *mixed(void *)
{
    Tracer o("cxx-outer");
    pthread_cleanup_push(cleanup_note, (void *)"cxx-handler");
    cxxmixed_c_frame(c_then_cxx, cleanup_note, (void *)"c-outer-handler");
    pthread_cleanup_pop(0);
    return nullptr;
}

static void *swallows(void *)
{
    try {
        pthread_exit(nullptr);
    } catch (...) {
    }
    return nullptr;
}

static void run(const char *label, void *(*fn)(void *), void *want)
{
    trail.clear();
    pthread_t t;
    void *ret = nullptr;
    EXPECT("create", pthread_create(&t, nullptr, fn, nullptr), 0);
    EXPECT("join", pthread_join(t, &ret), 0);
    CHECK(ret == want);
    printf("%s: %s\n", label, trail.c_str());
}

static sem_t main_gone;
static const char *main_name = "cxxexit";

static void *outlives_main(void *)
{
    sem_wait(&main_gone);
    printf("main's objects: %s\n", trail.c_str());
    CHECK(trail == "main-b main-a ");
    exit(check_end(main_name));
}

struct PostOnExit {
    ~PostOnExit() { sem_post(&main_gone); }
};

int main(void)
{
    check_start(main_name);

    run("lock_guard", holds_lock_guard, (void *)42);
    bool free_again = guarded.try_lock();
    printf("mutex free after pthread_exit: %s\n", free_again ? "yes" : "no");
    CHECK(free_again);
    if (free_again)
        guarded.unlock();

    run("nested frames", nested, (void *)7);
    CHECK(trail == "inner-b inner-a middle outer ");

    run("rethrow", rethrows, (void *)3);
    CHECK(trail == "inner-try caught-forced try caught-all outer ");

    run("mixed C and C++ frames", mixed, (void *)5);
    CHECK(trail == "cxx-inner c-inner-handler cxx-middle c-outer-handler cxx-handler cxx-outer ");

    /* A catch that swallows the forced unwind: the process dies. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_t t;
        if (pthread_create(&t, nullptr, swallows, nullptr) == 0)
            pthread_join(t, nullptr);
        _exit(0);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    bool aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
    printf("catch without rethrow: %s\n", aborted ? "SIGABRT" : "no abort");
    CHECK(aborted);

    /* pthread_exit from main: its objects go, the other thread ends it. */
    trail.clear();
    sem_init(&main_gone, 0, 0);
    pthread_t t;
    EXPECT("create", pthread_create(&t, nullptr, outlives_main, nullptr), 0);
    PostOnExit post;
    Tracer a("main-a");
    Tracer b("main-b");
    pthread_exit(nullptr);
}
