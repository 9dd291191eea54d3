/*
 * nthrun-probe.c -- a stand-in for libnth-pthread.so in the nthrun test:
 * when preloaded into a process whose environment has NTHRUN_PROBE set, it
 * says so on stderr, which proves that nthrun's LD_PRELOAD took effect.
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void probe_loaded(void)
{
    if (getenv("NTHRUN_PROBE"))
        fprintf(stderr, "nthrun-probe: loaded\n");
}
