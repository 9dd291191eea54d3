/* harness.c -- see harness.h. */
#include "harness.h"
#include "migrations.h"
#include "team.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The whole process's page faults and context switches so far (every
 * thread: the VPs, the trace writers): counts that say what a run cost the
 * kernel without the noise of a clock. */
struct kcounts {
    long minflt, majflt, nvcsw, nivcsw;
};

static struct kcounts kcounts_now(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru))
        memset(&ru, 0, sizeof ru);
    return (struct kcounts){ ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw };
}

__attribute__((weak)) const char *harness_arm(long run)
{
    (void)run;
    return NULL;
}

__attribute__((weak)) double harness_settle(long run, double *cpu)
{
    (void)run;
    *cpu = 0;
    return 0;
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "%s: expects an integer from %ld to %ld\n", opt, lo, hi);
        return EINVAL;
    }
    *out = v;
    return 0;
}

static void usage(FILE *f, const char *prog, const struct kernel *k)
{
    /* --help comes before --malleable is parsed: name both nth builds */
    const char *impl = team_impl();
    if (!strcmp(impl, "nth-fixed"))
        impl = "nth (nth-fixed; nth-malleable with --malleable)";
    fprintf(f,
            "usage: %s [--size N] [--threads N] [--malleable] [--runs R] [--json [--exit-migrations]]%s [--corrupt] [--print-cpus]\n"
            "  %s kernel, %s build; size defaults to %ld, threads to one per CPU\n"
            "  --exit-migrations: a last JSON line, bench \"migrations_exit\", counts the CPU migrations up to\n"
            "  the end of the process's exit handlers (the runtime's included)\n",
            prog, k->takes_ref ? " [--ref GTOTAL]" : "", k->name, impl, k->default_size);
}

/* --exit-migrations: the process's migrations counted to its end. Printed
 * from an atexit handler registered before team_start(), so it runs after
 * the runtime's own exit handlers (atexit runs them in reverse order of
 * registration): a VP woken or moved while the process ends is counted,
 * which the last run's line, read before exit, cannot show. */
static void print_exit_migrations(void)
{
    printf("{\"bench\":\"migrations_exit\",\"migrations\":%ld,\"migrations_source\":\"%s\"}\n", migr_read(),
           migr_source());
    fflush(stdout);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int harness_main(int argc, char **argv, const struct kernel *k)
{
    long size = k->default_size, threads = 0, runs = 1;
    int json = 0, corrupt = 0, malleable = 0, have_ref = 0, threads_given = 0, exit_migrations = 0;
    double ref = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--size")) {
            if (parse_long(a, v, 3, 100000, &size))
                return 2;
            i++;
        } else if (!strcmp(a, "--threads")) {
            if (parse_long(a, v, 0, 4096, &threads))
                return 2;
            threads_given = 1;
            i++;
        } else if (!strcmp(a, "--runs")) {
            if (parse_long(a, v, 1, 1000000, &runs))
                return 2;
            i++;
        } else if (!strcmp(a, "--ref") && k->takes_ref) {
            char *end;
            if (!v || (ref = strtod(v, &end), *end || end == v)) {
                fprintf(stderr, "--ref: expects a number (the sequential Gtotal)\n");
                return 2;
            }
            have_ref = 1;
            i++;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--exit-migrations")) {
            exit_migrations = 1;
        } else if (!strcmp(a, "--corrupt")) {
            corrupt = 1;
        } else if (!strcmp(a, "--malleable")) {
            malleable = 1;
        } else if (!strcmp(a, "--print-cpus")) {
            printf("%d\n", team_cpus_available());
            return 0;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout, argv[0], k);
            return 0;
        } else {
            fprintf(stderr, "%s: unknown option '%s'\n", argv[0], a);
            usage(stderr, argv[0], k);
            return 2;
        }
    }
    /* The sequential build is a team of one whatever the default says. */
    if (!threads_given && !strcmp(team_impl(), "seq"))
        threads = 1;

    /* Before team_start: the counter covers the threads created after it. */
    if (migr_start())
        return 2;
    if (exit_migrations) {
        if (!json) {
            fprintf(stderr, "%s: --exit-migrations needs --json (it prints a JSON line)\n", argv[0]);
            return 2;
        }
        atexit(print_exit_migrations);
    }
    int err = team_start((int)threads, malleable);
    if (err) {
        fprintf(stderr, "%s: cannot start a team of %ld%s in the %s build: %s\n", argv[0], threads,
                malleable ? " (malleable)" : "", team_impl(), strerror(err));
        return err == EINVAL ? 2 : 1;
    }
    err = k->setup(size);
    if (err) {
        fprintf(stderr, "%s: size %ld: %s\n", argv[0], size, strerror(err));
        team_stop();
        return 1;
    }
    if (k->reference)
        k->reference(have_ref, ref);

    double *times = calloc((size_t)runs, sizeof *times);
    if (!times) {
        fprintf(stderr, "%s: %s\n", argv[0], strerror(ENOMEM));
        k->teardown();
        team_stop();
        return 1;
    }
    int nteam = team_size(), failed = 0;
    /* A malleable team follows the CPUs granted region by region: the size
     * at this instant (often 1 before the daemon's first answer) is no
     * description of the run; the CPUs requested bound it. */
    char tdesc[48];
    if (malleable)
        snprintf(tdesc, sizeof tdesc, "malleable (max %ld)",
                 threads ? threads : (long)team_cpus_available());
    else
        snprintf(tdesc, sizeof tdesc, "%d", nteam);
    if (!json)
        printf("%s  impl=%s  size=%ld  threads=%s  migrations counted by: %s%s%s\n%4s %12s  %-8s %s\n",
               k->name, team_impl(), size, tdesc, migr_source(),
               *migr_why() ? ", " : "", migr_why(), "run", "time (s)", "valid", "check");
    for (long r = 0; r < runs; r++) {
        const char *arm = harness_arm(r);
        k->generate();
        struct kcounts k0 = kcounts_now();
        double c0 = cpu_s(), t0 = now_s();
        err = k->compute();
        double t = now_s() - t0, ct = cpu_s() - c0;
        struct kcounts k1 = kcounts_now();
        double settle_cpu = 0, settle = arm ? harness_settle(r, &settle_cpu) : 0;
        struct kcounts k2 = kcounts_now();
        if (err) {
            fprintf(stderr, "%s: parallel region failed: %s\n", argv[0], strerror(err));
            failed = 1;
            break;
        }
        struct check c;
        memset(&c, 0, sizeof c);
        k->validate(corrupt, &c);
        times[r] = t;
        long mig = migr_read();
        if (!c.ok) {
            failed = 1;
            fprintf(stderr, "%s: run %ld: validation FAILED (%s)\n", argv[0], r + 1, c.human);
        }
        if (json && arm)
            printf("{\"bench\":\"%s\",\"impl\":\"%s\",\"value\":%.6f,\"unit\":\"s\","
                   "\"params\":{\"size\":%ld,\"threads\":%d%s},"
                   "\"check\":{\"ok\":%s,%s},\"migrations\":%ld,\"migrations_source\":\"%s\",\"run\":%ld,\"arm\":\"%s\",\"cpu_s\":%.6f,"
                   "\"settle_s\":%.6f,\"settle_cpu_s\":%.6f,\"t0_mono\":%.9f,"
                   "\"minflt\":%ld,\"majflt\":%ld,\"nvcsw\":%ld,\"nivcsw\":%ld,"
                   "\"settle_minflt\":%ld,\"settle_nvcsw\":%ld,\"settle_nivcsw\":%ld}\n",
                   k->name, team_impl(), t, size, nteam, malleable ? ",\"malleable\":true" : "",
                   c.ok ? "true" : "false", c.json, mig, migr_source(), r, arm, ct, settle, settle_cpu, t0,
                   k1.minflt - k0.minflt, k1.majflt - k0.majflt, k1.nvcsw - k0.nvcsw, k1.nivcsw - k0.nivcsw,
                   k2.minflt - k1.minflt, k2.nvcsw - k1.nvcsw, k2.nivcsw - k1.nivcsw);
        else if (json)
            printf("{\"bench\":\"%s\",\"impl\":\"%s\",\"value\":%.6f,\"unit\":\"s\","
                   "\"params\":{\"size\":%ld,\"threads\":%d%s},"
                   "\"check\":{\"ok\":%s,%s},\"migrations\":%ld,\"migrations_source\":\"%s\"}\n",
                   k->name, team_impl(), t, size, nteam, malleable ? ",\"malleable\":true" : "",
                   c.ok ? "true" : "false", c.json, mig, migr_source());
        else
            printf("%4ld %12.6f  %-8s %s\n", r + 1, t, c.ok ? "ok" : "WRONG", c.human);
        fflush(stdout);
    }
    if (!json && !failed && runs > 1) {
        qsort(times, (size_t)runs, sizeof *times, cmp_double);
        double med = runs % 2 ? times[runs / 2] : (times[runs / 2 - 1] + times[runs / 2]) / 2;
        printf("median %.6f s, best %.6f s over %ld runs\n", med, times[0], runs);
    }
    free(times);
    k->teardown();
    team_stop();
    return failed ? 1 : 0;
}
