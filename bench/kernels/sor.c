/*
 * sor.c -- successive over-relaxation on an N x N grid: the Java Grande SOR
 * kernel (section 2, from SciMark 2.0), omega = 1.25, 100 iterations, grid
 * filled by java.util.Random(10101010).nextDouble() * 1e-6 row by row.
 *
 * The sweep is the JGF thread version's red-black scheme with its row
 * decomposition: the interior rows are cut into per-worker slices of an even
 * number of rows; in phase p of an iteration (p = 0 red, 1 black) a worker
 * walks rows i = ilow + p, ilow + p + 2, ... of its slice and updates the odd
 * columns of row i and the even columns of row i - 1 -- exactly the points of
 * one colour. A point of one colour reads only points of the other, so the
 * updates of a phase commute: whatever the team size and partition, every
 * point gets the same operations in the same order, and Gtotal (the grid sum
 * after the sweeps, taken sequentially) is bit-for-bit the value of a team of
 * one. Validation therefore asks for exact equality with the sequential
 * Gtotal; the build uses -ffp-contract=off so no fused multiply-add can make
 * two builds round differently. The Gtotals are JGF's own reference values
 * (JGFSORBench.JGFvalidate: 0.498574406322512, 1.1234778980135105 and
 * 1.9954895063582696 for 1000, 1500, 2000), reproduced exactly;
 * tests/kernels_jgf.sh checks the first.
 *
 * JGF synchronises neighbouring threads after each phase; here the phases
 * are separated by a team barrier, and each iteration is one parallel
 * region, so a malleable build may change its team size between iterations.
 */
#include "harness.h"
#include "jrandom.h"
#include "team.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SOR_OMEGA 1.25
#define SOR_ITERATIONS 100
#define SOR_SEED 10101010

static long m;           /* grid side (M = N in JGF) */
static double *g;        /* row i at g + i * m */
static double ref_gtotal;
static int have_reference;

static double *row(long i) { return g + i * m; }

struct sweep {
    double omega_over_four, one_minus_omega;
};

/* One phase (p = 0 or 1) of worker id's slice, as in JGF's SORRunner. */
static void phase(const struct sweep *s, int p, int id, int nw)
{
    const long Mm1 = m - 1, Nm1 = m - 1;
    const double w4 = s->omega_over_four, w1 = s->one_minus_omega;
    long tslice = Mm1 / 2;
    long ttslice = (tslice + nw - 1) / nw;
    long slice = ttslice * 2;
    long ilow = id * slice + 1;
    long iupper = (id + 1) * slice + 1;
    if (iupper > Mm1 || id == nw - 1)
        iupper = Mm1 + 1;

    for (long i = ilow + p; i < iupper; i += 2) {
        double *gi = row(i), *gim1 = row(i - 1);
        if (i == 1) {
            const double *gip1 = row(i + 1);
            for (long j = 1; j < Nm1; j += 2)
                gi[j] = w4 * (gim1[j] + gip1[j] + gi[j - 1] + gi[j + 1]) + w1 * gi[j];
        } else if (i == Mm1) {
            const double *gim2 = row(i - 2);
            for (long j = 1; j < Nm1; j += 2)
                if (j + 1 != Nm1)
                    gim1[j + 1] = w4 * (gim2[j + 1] + gi[j + 1] + gim1[j] + gim1[j + 2]) + w1 * gim1[j + 1];
        } else {
            const double *gip1 = row(i + 1), *gim2 = row(i - 2);
            for (long j = 1; j < Nm1; j += 2) {
                gi[j] = w4 * (gim1[j] + gip1[j] + gi[j - 1] + gi[j + 1]) + w1 * gi[j];
                if (j + 1 != Nm1)
                    gim1[j + 1] = w4 * (gim2[j + 1] + gi[j + 1] + gim1[j] + gim1[j + 2]) + w1 * gim1[j + 1];
            }
        }
    }
}

/* The region of one iteration: red phase, team barrier, black phase. */
static void iteration(int id, int nw, void *arg)
{
    phase(arg, 0, id, nw);
    team_barrier();
    phase(arg, 1, id, nw);
}

static void generate(void)
{
    jr_init(SOR_SEED);
    for (long i = 0; i < m; i++) {
        double *gi = row(i);
        for (long j = 0; j < m; j++)
            gi[j] = jr_double() * 1e-6;
    }
}

static double gtotal(void)
{
    double t = 0.0;
    for (long i = 1; i < m - 1; i++)
        for (long j = 1; j < m - 1; j++)
            t += row(i)[j];
    return t;
}

static struct sweep sweep_params(void)
{
    struct sweep s = {SOR_OMEGA * 0.25, 1.0 - SOR_OMEGA};
    return s;
}

static int sor_setup(long size)
{
    m = size;
    g = malloc((size_t)(m * m) * sizeof *g);
    return g ? 0 : ENOMEM;
}

/* The sequential value: the same sweep by a team of one, called directly so
 * that it does not depend on the backend under test. */
static void sor_reference(int given, double value)
{
    if (given) {
        ref_gtotal = value;
    } else {
        struct sweep s = sweep_params();
        generate();
        for (int it = 0; it < SOR_ITERATIONS; it++)
            iteration(0, 1, &s);
        ref_gtotal = gtotal();
    }
    have_reference = 1;
}

static int sor_compute(void)
{
    struct sweep s = sweep_params();
    for (int it = 0; it < SOR_ITERATIONS; it++) {
        int err = team_run(0, iteration, &s);
        if (err)
            return err;
    }
    return 0;
}

static void sor_validate(int corrupt, struct check *c)
{
    if (corrupt)
        row(m / 2)[m / 2] += 1e-9;
    double t = gtotal();
    c->ok = have_reference && t == ref_gtotal;
    snprintf(c->json, sizeof c->json, "\"gtotal\":%.17g,\"ref\":%.17g", t, ref_gtotal);
    snprintf(c->human, sizeof c->human, "Gtotal %.17g (sequential %.17g)", t, ref_gtotal);
}

static void sor_teardown(void)
{
    free(g);
    g = NULL;
}

int main(int argc, char **argv)
{
    static const struct kernel sor = {
        .name = "sor",
        .default_size = 1500,
        .takes_ref = 1,
        .setup = sor_setup,
        .reference = sor_reference,
        .generate = generate,
        .compute = sor_compute,
        .validate = sor_validate,
        .teardown = sor_teardown,
    };
    return harness_main(argc, argv, &sor);
}
