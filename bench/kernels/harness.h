/*
 * harness.h -- the command line, timing, validation and output shared by the
 * LU and SOR kernel programs, so that every build (seq, glibc, openmp, nth)
 * of every kernel behaves the same way for the workload driver.
 *
 *   --size N      problem size (matrix order for LU, grid side for SOR)
 *   --threads N   workers per parallel region; 0 = one per available CPU
 *   --malleable   (nth builds) team size from the CPUs assigned, per region
 *   --runs R      timed runs in this process (default 1)
 *   --json        one JSON object per run on stdout, nothing else
 *   --ref X       (SOR) the sequential Gtotal to validate against, instead of
 *                 computing it in this process before the timed runs
 *   --corrupt     test hook: perturb the result so that validation must fail
 *   --print-cpus  print the CPUs this process may use (hwloc) and exit
 *
 * Exit status: 0 all runs validated; 1 a run failed validation or a resource
 * could not be had; 2 bad usage.
 */
#ifndef NTH_BENCH_HARNESS_H
#define NTH_BENCH_HARNESS_H

/* Result of one validation. */
struct check {
    int ok;          /* 1 = the result is right */
    char json[160];  /* the "check" object's members, e.g. "residual":1.2 */
    char human[96];  /* the same for the table */
};

struct kernel {
    const char *name;     /* JSON "bench": "lu" or "sor" */
    long default_size;
    int takes_ref;        /* accepts --ref */
    /* Allocate for size n (once per process). Returns 0 or ENOMEM. */
    int (*setup)(long n);
    /* Compute the reference once, before the timed runs, unless the user gave
     * one (have_ref); NULL when the kernel validates without one. */
    void (*reference)(int have_ref, double ref);
    /* Generate the input of one run (not timed). */
    void (*generate)(void);
    /* The timed part: the parallel kernel. Returns 0 or a team_run() error. */
    int (*compute)(void);
    /* Validate the result just computed; corrupt = perturb it first. */
    void (*validate)(int corrupt, struct check *c);
    void (*teardown)(void);
};

/* Optional hook for A/B benchmarks that switch something between the runs
 * of one process (bench/trace_lu_ab.c: tracing on and off): called before
 * run `run` (from 0) generates its input; returns the run's arm label,
 * printed in its JSON object as "arm" beside "cpu_s" (the process's CPU
 * time during the timed part, all threads), or NULL (nothing printed).
 * harness.c's weak default returns NULL. */
const char *harness_arm(long run);

/* Optional hook, with harness_arm: called right after run `run`'s timed
 * part, before the validation, to finish what the run left pending so
 * that it does not fall into the next run (bench/trace_lu_ab.c: write the
 * run's trace records). Returns the wall seconds that took, printed as
 * "settle_s" and "settle_cpu_s" (*cpu_s: the process's CPU seconds); the
 * script decides whether to charge them to the run. The weak default does
 * nothing and returns 0. */
double harness_settle(long run, double *cpu_s);

/* The whole program: parse argv, start the team, run, print, exit status. */
int harness_main(int argc, char **argv, const struct kernel *k);

#endif /* NTH_BENCH_HARNESS_H */
