/*
 * test_trace_volume.c -- the records the runtime writes per scheduling
 * operation, against a stated budget: the overhead check CI can run
 * without timing anything (issue 7's < 1 % on LU 1000).
 *
 * bench/trace_cost.sh bounds tracing's cost on LU as (records per run) x
 * (cost of one record); the cost per record is the runtime's own code and
 * changes rarely, the number of records changes with every new hook. So
 * the number is what this test holds: one VP (every count exact, no idle
 * VP or stealing to vary it), tracing on, and per operation
 *   a yield that switches               <= SWITCH_BUDGET slots
 *   an nth_create + nth_join pair       <= CREATE_JOIN_BUDGET slots
 *   a 2-member parallel region          <= REGION_BUDGET slots
 * (a slot is 32 bytes: a record, or 32 bytes of a name). On one VP the
 * counts are exact (yield 1, create+join 11, region 9 today: a member's
 * wait for the next region rides in its switch record, trace9), so the
 * budgets are tight (one record more per region fails the region's): a
 * hook that records more must say so here. REGION_BUDGET is what keeps LU
 * inside the bound: LU 1000 is 1000 such regions of ~65 µs each (quiet
 * machine; ~7.2 slots each on 2 VPs), and a slot costs at most ~34 ns in
 * bench/trace-hook-cost (~16-25 ns to record with its clock read, 7-9 ns
 * to write out): 9 x 34 ns = 0.31 µs, 0.5 % of a region, leaving room
 * for the clock reads and queue counts that write no record. On failure
 * the counts by record type are printed: which hook grew.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <nth.h>
#include "trace_rt.h"

#define SWITCH_BUDGET 1.25
#define CREATE_JOIN_BUDGET 12.0
#define REGION_BUDGET 9.0
#define OPS 400

static char bin_path[64];
static long done;              /* bytes of the file already counted */
static long by_type[NTH_REC_TYPE_MAX + 2];   /* [NTH_REC_TYPE_MAX + 1]: name bytes */

/* Write every buffer to the file, then count the slots written since the
 * last call, by record type. Returns the slot total. */
static long count_new(void)
{
    assert_int_equal(nth_trace_drain_now(), 0);
    FILE *f = fopen(bin_path, "rb");
    assert_non_null(f);
    if (done == 0)
        done = (long)sizeof(struct nth_trace_file_header);
    assert_int_equal(fseek(f, done, SEEK_SET), 0);
    memset(by_type, 0, sizeof by_type);
    long slots = 0;
    struct nth_trace_rec r;
    while (fread(&r, sizeof r, 1, f) == 1) {
        slots++;
        done += (long)sizeof r;
        by_type[r.type <= NTH_REC_TYPE_MAX ? r.type : 0]++;
        if (r.type == NTH_REC_NAME) {
            long extra = (long)(((r.arg & 0xffffu) + sizeof r - 1) / sizeof r);
            assert_int_equal(fseek(f, extra * (long)sizeof r, SEEK_CUR), 0);
            done += extra * (long)sizeof r;
            slots += extra;
            by_type[NTH_REC_TYPE_MAX + 1] += extra;
        }
    }
    fclose(f);
    return slots;
}

/* Fails, printing the counts by type, if slots / ops is over budget. */
static void check_budget(const char *what, long slots, long ops, double budget)
{
    double per = (double)slots / (double)ops;
    printf("# %s: %ld slots for %ld operations = %.2f per operation (budget %.2f):", what, slots, ops, per, budget);
    for (int t = 0; t <= NTH_REC_TYPE_MAX + 1; t++)
        if (by_type[t])
            printf(" %s%d=%ld", t == NTH_REC_TYPE_MAX + 1 ? "name-bytes" : "type", t, by_type[t]);
    printf("\n");
    if (per > budget)
        fail_msg("%s: %.2f trace slots per operation, over the budget of %.2f (see the counts above: "
                 "a hook that records more per operation breaks bench/trace_cost.sh's bound)", what, per, budget);
    /* and something was recorded at all: a test that counts nothing passes nothing */
    assert_true(slots >= ops);
}

static volatile int pong_stop;
static void *pong(void *a)
{
    (void)a;
    while (!pong_stop)
        nth_yield();
    return NULL;
}

static void yield_switch(void **state)
{
    (void)state;
    nth_t p;
    assert_int_equal(nth_create(&p, NULL, pong, NULL), 0);
    nth_yield();                        /* pong started: from here on each yield is a switch pair */
    count_new();
    for (int i = 0; i < OPS; i++)
        nth_yield();
    check_budget("yield (switches)", count_new(), 2L * OPS, SWITCH_BUDGET);
    pong_stop = 1;
    assert_int_equal(nth_join(p, NULL), 0);
}

static void *empty(void *a) { return a; }

static void create_join(void **state)
{
    (void)state;
    count_new();
    for (int i = 0; i < OPS; i++) {
        nth_t t;
        assert_int_equal(nth_create(&t, NULL, empty, NULL), 0);
        assert_int_equal(nth_join(t, NULL), 0);
    }
    check_budget("nth_create + nth_join", count_new(), OPS, CREATE_JOIN_BUDGET);
}

static void member(int id, int n, void *arg) { (void)id; (void)n; (void)arg; }

static void region(void **state)
{
    (void)state;
    assert_int_equal(nth_parallel(2, member, NULL), 0);   /* the team's members made */
    count_new();
    for (int i = 0; i < OPS; i++)
        assert_int_equal(nth_parallel(2, member, NULL), 0);
    check_budget("2-member parallel region", count_new(), OPS, REGION_BUDGET);
}

static int setup(void **state)
{
    (void)state;
    unsetenv("NTH_TRACE_MAIN_PID");   /* this process is the trace's first: its own file name */
    snprintf(bin_path, sizeof bin_path, "/tmp/nth-trace-volume.%ld.bin", (long)getpid());
    nth_config_t cfg;
    nth_config_default(&cfg);
    cfg.vps = 1;
    cfg.stall_us = 0;                 /* no stand-in runs the ready queue meanwhile */
    cfg.cpumgr = "off";
    cfg.trace = bin_path;
    if (nth_init(&cfg) != 0 || !nth_trace_enabled()) {
        fprintf(stderr, "test_trace_volume: cannot start the runtime traced to %s\n", bin_path);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(bin_path);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(yield_switch),
        cmocka_unit_test(create_join),
        cmocka_unit_test(region),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
