/*
 * test_accounting.c -- the --accounting CSV (cpumgr(8)): a header line
 * once, then one record of seven fields per application, whatever name the
 * client wrote into its slot (commas, quotes, control bytes), and errors
 * returned as errno values, never a crash.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../cpumgr/accounting.h"

static char path[64];

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/nth-acct-test-%d.csv", (int)getpid());
    unlink(path);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

/* Fields of one line split at commas (the line's newline dropped). */
static int fields(char *line, char **f, int max)
{
    line[strcspn(line, "\n")] = 0;
    int n = 0;
    for (char *save, *t = strtok_r(line, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (n < max)
            f[n++] = t;
        else
            return max + 1;
    return n;
}

static void test_records(void **state)
{
    (void)state;
    int created = 0;
    assert_int_equal(cm_account_check(path, &created), 0);
    assert_int_equal(created, 1);
    /* A hostile name: a comma, a quote and a newline would each make one
     * record two, or shift the fields after the name. */
    assert_int_equal(cm_account(path, "ev,il\"na\nme", 4242, 7, 3, 2500000000u, "dead"), 0);
    assert_int_equal(cm_account(path, "plain", 17, 1, 1, 1000000u, "detach"), 0);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char line[512], *f[8];
    assert_non_null(fgets(line, sizeof line, fp));
    assert_string_equal(line, "end_unix_s,name,pid,priority,request,cpu_seconds,reason\n");
    assert_non_null(fgets(line, sizeof line, fp));
    assert_int_equal(fields(line, f, 7), 7);
    assert_true(atoll(f[0]) > 1000000000LL); /* a Unix time, in seconds */
    assert_null(strpbrk(f[1], ",\"\n"));
    assert_int_equal(strncmp(f[1], "ev", 2), 0);
    assert_string_equal(f[2], "4242");
    assert_string_equal(f[3], "7");
    assert_string_equal(f[4], "3");
    assert_string_equal(f[5], "2.500");
    assert_string_equal(f[6], "dead");
    assert_non_null(fgets(line, sizeof line, fp));
    assert_int_equal(fields(line, f, 7), 7);
    assert_string_equal(f[1], "plain");
    assert_string_equal(f[5], "0.001");
    assert_string_equal(f[6], "detach");
    assert_null(fgets(line, sizeof line, fp)); /* no second header */
    fclose(fp);
    /* A second check of an existing file: not "created" (a daemon that
     * then fails to start must not remove it). */
    assert_int_equal(cm_account_check(path, &created), 0);
    assert_int_equal(created, 0);
}

static void test_errors(void **state)
{
    (void)state;
    int created = 1;
    assert_int_equal(cm_account_check("/nonexistent-dir/x.csv", &created), ENOENT);
    assert_int_equal(created, 0);
    assert_int_equal(cm_account("/nonexistent-dir/x.csv", "a", 1, 1, 1, 0, "stop"), ENOENT);
    assert_int_equal(cm_account(NULL, "a", 1, 1, 1, 0, "stop"), 0); /* no --accounting */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
