/*
 * spin.c -- spin locks: mutual exclusion, trylock on a held lock, init
 * attributes. After pthread_spin_lock(3p), pthread_spin_init(3p).
 * Also a holder that sleeps while it holds the lock: with one VP the
 * spinner runs on the holder's VP, and must yield it (also while the
 * holder is not ready but asleep on a timer) or the holder never runs
 * again (checked to hang, shim-vps1, with pthread_spin_lock's yield
 * removed: issue 4).
 */
#include <pthread.h>
#include <stdint.h>
#include "check.h"

static pthread_spinlock_t s;
static long counter;
static void *count_up(void *arg)
{
    for (int i = 0; i < 20000; i++) {
        pthread_spin_lock(&s);
        counter++;
        pthread_spin_unlock(&s);
    }
    return arg;
}
static int got_after_sleep;
static void *spin_behind_sleeper(void *arg)
{
    pthread_spin_lock(&s);
    got_after_sleep = 1;
    pthread_spin_unlock(&s);
    return arg;
}
static void *try_other(void *arg) { (void)arg; return (void *)(intptr_t)pthread_spin_trylock(&s); }

/* pthread_spin_init(3p): glibc takes any pshared value (no EINVAL). */
static void test_error_audit(void)
{
    pthread_spinlock_t l;
    EXPECT("spin_init(pshared 42)", pthread_spin_init(&l, 42), 0);
    EXPECT("spin_destroy", pthread_spin_destroy(&l), 0);
}

int main(void)
{
    check_start("spin");
    EXPECT("spin_init(private)", pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE), 0);
    EXPECT("spin_lock", pthread_spin_lock(&s), 0);
    EXPECT("spin_trylock(held)", pthread_spin_trylock(&s), EBUSY);
    pthread_t t;
    void *res;
    CHECK(pthread_create(&t, NULL, try_other, NULL) == 0);
    pthread_join(t, &res);
    printf("trylock from other thread: %s\n", errname((int)(intptr_t)res));
    EXPECT("spin_unlock", pthread_spin_unlock(&s), 0);
    EXPECT("spin_trylock(free)", pthread_spin_trylock(&s), 0);
    EXPECT("spin_unlock", pthread_spin_unlock(&s), 0);

    pthread_t ts[4];
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&ts[i], NULL, count_up, NULL) == 0);
    for (int i = 0; i < 4; i++) pthread_join(ts[i], NULL);
    printf("counter under spin lock: %ld\n", counter);
    CHECK(counter == 80000);

    CHECK(pthread_spin_lock(&s) == 0);
    CHECK(pthread_create(&t, NULL, spin_behind_sleeper, NULL) == 0);
    usleep(20000);             /* the other thread spins on the lock meanwhile */
    CHECK(!got_after_sleep);
    CHECK(pthread_spin_unlock(&s) == 0);
    pthread_join(t, NULL);
    printf("spinner behind a sleeping holder got the lock: %d\n", got_after_sleep);
    EXPECT("spin_destroy", pthread_spin_destroy(&s), 0);
    EXPECT("spin_init(shared)", pthread_spin_init(&s, PTHREAD_PROCESS_SHARED), 0);
    EXPECT("spin_destroy", pthread_spin_destroy(&s), 0);
    test_error_audit();
    return check_end("spin");
}
