/*
 * rtcalls.c -- a program linked with libnth (shared) whose run exercises
 * the runtime's helper threads, for tests/shim/rtcalls.sh: one VP whose
 * nano-thread waits in a raw read(2) with another nano-thread ready, so
 * the stall monitor sleeps between its checks, reads the VP's kernel
 * thread state from /proc and lends a stand-in, which runs the other
 * nano-thread that writes the pipe. Then a team of 5 on that VP over a
 * few hundred barriers (the monitor watching work queued behind it). Exits 0
 * when all of it ran; the wrapped write at the end is the audit's proof
 * that it records the program's own calls into the shim. RTCALLS_TRACE,
 * if set, is the trace path (the trace writer's exit path is audited too).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "nth.h"

#define DIE(...) do { fprintf(stderr, "rtcalls: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static int pfd[2];

static void *writer(void *arg)
{
    (void)arg;
    /* Raw: the read it ends is raw too, so the stand-in is what runs us. */
    if (syscall(SYS_write, pfd[1], "x", 1) != 1)
        DIE("write to the pipe failed");
    return NULL;
}

static void rounds(int id, int n, void *arg)
{
    (void)id;
    (void)n;
    int *bad = arg;
    for (int r = 0; r < 300; r++)
        if (nth_team_barrier() != 0)
            __atomic_add_fetch(bad, 1, __ATOMIC_RELAXED);
}

int main(void)
{
    alarm(60);
    nth_config_t c;
    nth_config_default(&c);
    c.vps = 1;
    c.stall_us = 1000;
    c.cpumgr = "off";
    c.trace = getenv("RTCALLS_TRACE");   /* nth_init's config does not read NTH_TRACE */
    if (nth_init(&c) != 0)
        DIE("nth_init failed");
    /* The stall: this nano-thread holds its VP in a raw read while the
     * writer waits in that VP's queue; only a stand-in can run it. */
    if (pipe(pfd) != 0)
        DIE("pipe failed");
    nth_t w;
    if (nth_create(&w, NULL, writer, NULL) != 0)
        DIE("nth_create failed");
    char ch;
    if (syscall(SYS_read, pfd[0], &ch, 1) != 1)
        DIE("read from the pipe failed");
    if (nth_join(w, NULL) != 0)
        DIE("nth_join failed");
    int bad = 0;
    if (nth_parallel(5, rounds, &bad) != 0 || bad)
        DIE("the team failed");
    if (write(1, "rtcalls: done\n", 14) != 14)
        DIE("write to stdout failed");
    exit(0);
}
