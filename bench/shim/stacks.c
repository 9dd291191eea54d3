/*
 * stacks.c -- what the size of the default thread stack costs: a plain
 * POSIX program (compiled with -pthread only, never linked with nthlib),
 * run natively or under the shim. For each stack size asked for (with
 * pthread_attr_setstacksize), in one process and alternating, it creates
 * N threads that each touch a little of their stack and wait until all N
 * exist, then releases and joins them, and prints one line per round:
 *   create_ms   creating the N threads (all alive at the end)
 *   join_ms     releasing and joining them
 *   rss_kib     resident memory grown while all N lived (statm)
 *   vm_mib      address space grown while all N lived (statm)
 *   pte_kib     page tables grown (VmPTE: memory too, not counted in RSS)
 *   maps        /proc/self/maps lines grown (the count vm.max_map_count caps)
 * usage: stacks [--json] [N] [ROUNDS] [SIZE_KIB...]
 *   (defaults: 10000 threads, 3 rounds, sizes 1024 and 8192 KiB)
 * Read it as ratios between sizes of the same run (the machine is shared
 * and noisy), never as absolute times.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER;
static int released;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void statm(long *vm_pages, long *rss_pages)
{
    *vm_pages = *rss_pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", vm_pages, rss_pages) != 2)
            *vm_pages = *rss_pages = 0;
        fclose(f);
    }
}

/* VmPTE of /proc/self/status, KiB (0 if absent). */
static long vm_pte(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmPTE: %ld", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

static long maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    long n = 0;
    int c;
    if (!f)
        return 0;
    while ((c = getc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static void *body(void *arg)
{
    (void)arg;
    volatile char frame[512];      /* a small frame, as most threads have */
    frame[0] = frame[sizeof frame - 1] = 1;
    pthread_mutex_lock(&m);
    while (!released)
        pthread_cond_wait(&go, &m);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(int argc, char **argv)
{
    int json = 0, a = 1;
    if (argc > 1 && !strcmp(argv[1], "--json")) {
        json = 1;
        a++;
    }
    long n = argc > a ? atol(argv[a]) : 10000;
    int rounds = argc > a + 1 ? atoi(argv[a + 1]) : 3;
    size_t sizes[8] = { 1024, 8192 };
    int nsizes = 2;
    if (argc > a + 2) {
        nsizes = 0;
        for (int i = a + 2; i < argc && nsizes < 8; i++)
            sizes[nsizes++] = (size_t)atol(argv[i]);
    }
    if (n < 1 || rounds < 1) {
        fprintf(stderr, "usage: stacks [--json] [N] [ROUNDS] [SIZE_KIB...]\n");
        return 2;
    }
    pthread_t *t = calloc((size_t)n, sizeof *t);
    if (!t)
        return 1;
    long pg = sysconf(_SC_PAGESIZE);
    if (!json)
        printf("%8s %6s %5s %10s %10s %10s %10s %8s %8s\n", "stack", "n", "round", "create_ms",
               "join_ms", "rss_kib", "vm_mib", "pte_kib", "maps");
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < nsizes; k++) {
            /* alternate the order each round: neither size always first */
            size_t kib = sizes[r % 2 ? nsizes - 1 - k : k];
            pthread_attr_t at;
            pthread_attr_init(&at);
            if (pthread_attr_setstacksize(&at, kib * 1024) != 0) {
                fprintf(stderr, "stacks: setstacksize %zu KiB refused\n", kib);
                return 1;
            }
            released = 0;
            long vm0, rss0, vm1, rss1;
            statm(&vm0, &rss0);
            long maps0 = maps(), pte0 = vm_pte();
            double t0 = now_ms();
            long made = 0;
            for (; made < n; made++)
                if (pthread_create(&t[made], &at, body, NULL) != 0)
                    break;
            double t1 = now_ms();
            statm(&vm1, &rss1);
            long maps1 = maps(), pte1 = vm_pte();
            pthread_mutex_lock(&m);
            released = 1;
            pthread_cond_broadcast(&go);
            pthread_mutex_unlock(&m);
            for (long i = 0; i < made; i++)
                pthread_join(t[i], NULL);
            double t2 = now_ms();
            pthread_attr_destroy(&at);
            double rss_kib = (double)(rss1 - rss0) * (double)pg / 1024;
            double vm_mib = (double)(vm1 - vm0) * (double)pg / (1024 * 1024);
            if (made < n)
                fprintf(stderr, "stacks: %zu KiB: only %ld of %ld threads created\n", kib, made, n);
            if (json) {
                const char *what[] = { "create", "join", "rss", "vm", "pte", "maps" };
                const char *unit[] = { "ms", "ms", "KiB", "MiB", "KiB", "lines" };
                double v[] = { t1 - t0, t2 - t1, rss_kib, vm_mib, (double)(pte1 - pte0),
                               (double)(maps1 - maps0) };
                for (int w = 0; w < 6; w++)
                    printf("{\"bench\":\"stacks_%s\",\"impl\":\"%s\",\"value\":%.1f,\"unit\":\"%s\","
                           "\"params\":{\"stack_kib\":%zu,\"threads\":%ld,\"round\":%d}}\n",
                           what[w], getenv("LD_PRELOAD") ? "shim" : "glibc", v[w], unit[w], kib,
                           made, r);
            } else {
                printf("%8zu %6ld %5d %10.1f %10.1f %10.0f %10.0f %8ld %8ld\n", kib, made, r,
                       t1 - t0, t2 - t1, rss_kib, vm_mib, pte1 - pte0, maps1 - maps0);
            }
            fflush(stdout);
        }
    }
    free(t);
    return 0;
}
