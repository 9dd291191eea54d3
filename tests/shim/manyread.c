/*
 * manyread.c -- more threads blocked in read() than a program has CPUs,
 * then one thread that is not blocked ends all the reads (POSIX read(2):
 * a read on an empty pipe blocks only its caller).
 *
 * Under the shim a read that would block lends its VP to a stand-in kernel
 * thread, which runs the VP's other threads meanwhile. A thread that the
 * stand-in runs and that blocks in turn must hand the VP on to another
 * stand-in: otherwise, with each VP's kernel thread and its one stand-in
 * in the kernel, main (ready) had no kernel thread left and the program
 * hung for 8 or more readers on 2 VPs (and 3 or more; 2 with one VP).
 * Odd readers end with pthread_exit(): one resumed on a stand-in is still
 * a thread and must end as one (the shim took it for a foreign kernel
 * thread and ended the stand-in's kernel thread with it).
 * Run with 2 VPs and with one (run-compare.sh's shim-vps1 mode).
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include "check.h"

#define READERS 16

static int pipes[READERS][2];
static int started;

static void *reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char c = 0;
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    ssize_t r = read(pipes[i][0], &c, 1);
    void *ok = (void *)(intptr_t)(r == 1 && c == 'a' + i % 26);
    if (i % 2)
        pthread_exit(ok);  /* also after resuming on a stand-in */
    return ok;
}

int main(void)
{
    check_start("manyread");
    pthread_t t[READERS];
    for (int i = 0; i < READERS; i++) {
        CHECK(pipe(pipes[i]) == 0);
        CHECK(pthread_create(&t[i], NULL, reader, (void *)(intptr_t)i) == 0);
    }
    /* Let every reader reach its read (each started before it reads). */
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < READERS)
        sched_yield();
    for (int k = 0; k < 1000; k++)
        sched_yield();
    for (int i = 0; i < READERS; i++) {
        char c = (char)('a' + i % 26);
        CHECK(write(pipes[i][1], &c, 1) == 1);
    }
    int ok = 0;
    for (int i = 0; i < READERS; i++) {
        void *r;
        CHECK(pthread_join(t[i], &r) == 0);
        ok += r != NULL;
    }
    printf("%d of %d readers blocked in read() got their byte\n", ok, READERS);
    CHECK(ok == READERS);
    return check_end("manyread");
}
