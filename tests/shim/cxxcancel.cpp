/*
 * cxxcancel.cpp -- a cancellation acted upon in C++ unwinds the thread's
 * stack as pthread_exit(PTHREAD_CANCELED) does: at a condition variable
 * wait (the mutex relocked first, then released by its RAII owner), in
 * sleep(), at pthread_testcancel(); RAII objects are destroyed, a
 * std::lock_guard's mutex is free afterwards (the finding behind this
 * test: a second thread taking it hung forever), and a cancelled
 * thread's catch (...) { throw; } lets the unwind go on.
 * After pthread_cancel(3p), pthreads(7) "Cancellation points".
 */
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>
#include <mutex>
#include <string>
#include "check.h"

static std::string trail;        /* read after the join */

struct Tracer {
    const char *name;
    explicit Tracer(const char *n) : name(n) {}
    ~Tracer()
    {
        trail += name;
        trail += ' ';
    }
};

/* Unlocks a pthread mutex at scope exit (std::unique_lock over a
 * pthread_mutex_t, as code calling pthread_cond_wait itself writes it). */
struct PthreadLock {
    pthread_mutex_t *m;
    explicit PthreadLock(pthread_mutex_t *mu) : m(mu) { pthread_mutex_lock(m); }
    ~PthreadLock()
    {
        trail += "unlock ";
        pthread_mutex_unlock(m);
    }
};

static sem_t ready;
static std::mutex guarded;
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *in_cond_wait(void *)
{
    std::lock_guard<std::mutex> g(guarded);
    Tracer t("waiter");
    PthreadLock l(&cm);
    sem_post(&ready);
    for (;;)
        pthread_cond_wait(&cv, &cm);  /* cancellation point: relocks cm first */
    return nullptr;
}

static void *in_sleep(void *)
{
    std::lock_guard<std::mutex> g(guarded);
    Tracer t("sleeper");
    sem_post(&ready);
    for (;;)
        sleep(10);
    return nullptr;
}

static void *in_testcancel(void *)
{
    Tracer o("outer");
    try {
        Tracer t("looper");
        sem_post(&ready);
        for (;;)
            pthread_testcancel();
    } catch (...) {
        trail += "caught ";
        throw;
    }
    return nullptr;
}

/* Takes the mutex a cancelled thread's lock_guard held. */
static void *takes_guarded(void *)
{
    std::lock_guard<std::mutex> g(guarded);
    trail += "taken ";
    return nullptr;
}

static void cancel_one(const char *label, void *(*fn)(void *))
{
    trail.clear();
    pthread_t t;
    void *ret = nullptr;
    EXPECT("create", pthread_create(&t, nullptr, fn, nullptr), 0);
    sem_wait(&ready);
    EXPECT("cancel", pthread_cancel(t), 0);
    EXPECT("join", pthread_join(t, &ret), 0);
    CHECK(ret == PTHREAD_CANCELED);
    printf("%s: %s\n", label, trail.c_str());
}

int main(void)
{
    check_start("cxxcancel");
    sem_init(&ready, 0, 0);

    cancel_one("condvar wait", in_cond_wait);
    CHECK(trail == "unlock waiter ");
    CHECK(pthread_mutex_trylock(&cm) == 0);
    pthread_mutex_unlock(&cm);

    cancel_one("sleep", in_sleep);
    CHECK(trail == "sleeper ");

    /* Then a thread takes the mutex both cancelled threads held. */
    trail.clear();
    pthread_t t;
    EXPECT("create", pthread_create(&t, nullptr, takes_guarded, nullptr), 0);
    EXPECT("join", pthread_join(t, nullptr), 0);
    printf("after cancellations: %s\n", trail.c_str());
    CHECK(trail == "taken ");

    cancel_one("testcancel", in_testcancel);
    CHECK(trail == "looper caught outer ");
    return check_end("cxxcancel");
}
