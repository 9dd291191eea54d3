/*
 * omp.c -- OpenMP parallel-for regions under the shim (issue #4): libgomp's
 * team barrier waits with raw futex system calls, never through a shim
 * call, so each waiting team member holds its kernel thread asleep in the
 * kernel. A trial's 5 regions hung with OMP_NUM_THREADS=4 on 2 VPs and 3 on
 * 1 VP (threads >= VPs + 2): the member that would release the barrier
 * never ran. run-compare.sh runs it with OMP_NUM_THREADS=4 and 8, natively
 * and under the shim with NTH_VPS=1 and 2, and compares.
 *
 * Compiled with -fopenmp (only when the compiler has OpenMP). Each region
 * kind runs ROUNDS times (so the team's barrier is crossed hundreds of
 * times) and checks its result against a sequential computation.
 */
#include <omp.h>
#include "check.h"

#define N 1000
#define ROUNDS 40

static long a[N];

int main(void)
{
    check_start("omp");
    int team = 0;
#pragma omp parallel
    {
#pragma omp single
        team = omp_get_num_threads();
    }
    CHECK(team == omp_get_max_threads());
    printf("team: %d threads\n", team);

    long want = 0;
    for (int i = 0; i < N; i++)
        want += (long)i * 3;

    int bad_sum = 0, bad_static = 0, bad_dynamic = 0, bad_barrier = 0, bad_critical = 0;
    for (int r = 0; r < ROUNDS; r++) {
        long s = 0;
#pragma omp parallel for reduction(+ : s)
        for (int i = 0; i < N; i++)
            s += (long)i * 3;
        bad_sum += s != want;

#pragma omp parallel for schedule(static)
        for (int i = 0; i < N; i++)
            a[i] = (long)i * r;
        for (int i = 0; i < N; i++)
            bad_static += a[i] != (long)i * r;

        s = 0;
#pragma omp parallel for schedule(dynamic, 7) reduction(+ : s)
        for (int i = 0; i < N; i++)
            s += a[i] + 1;
        bad_dynamic += s != (long)N + (long)r * (N - 1) * N / 2;

        /* Explicit barriers between two phases: every member writes its
         * slot, waits, then reads its neighbour's. */
        int seen[64] = { 0 };
#pragma omp parallel
        {
            int me = omp_get_thread_num(), n = omp_get_num_threads();
            if (n <= 64) {
                a[me] = me + r;
#pragma omp barrier
                seen[me] = a[(me + 1) % n] == (me + 1) % n + r;
#pragma omp barrier
            }
        }
        for (int i = 0; i < team && i < 64; i++)
            bad_barrier += !seen[i];

        long c = 0;
#pragma omp parallel for
        for (int i = 0; i < 64; i++) {
#pragma omp critical
            c += i;
        }
        bad_critical += c != 64 * 63 / 2;
    }
    printf("%d rounds of 5 regions: reduction %d bad, static %d bad, dynamic %d bad, "
           "barrier %d bad, critical %d bad\n",
           ROUNDS, bad_sum, bad_static, bad_dynamic, bad_barrier, bad_critical);
    CHECK(bad_sum == 0 && bad_static == 0 && bad_dynamic == 0 && bad_barrier == 0 &&
          bad_critical == 0);
    return check_end("omp");
}
