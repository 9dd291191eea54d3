/*
 * Unit tests of the instrumentation API and of the binary-file reader's
 * refusals: error codes, tracing-off behaviour, environment checks.
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
#include "trace_convert.h"
#include "trace_hooks.h"

static void api_off_is_noop(void **st)
{
    (void)st;
    assert_int_equal(nth_trace_enabled(), 0);
    assert_int_equal(nth_trace_state_set(NTH_TRACE_RUN), 0);
    assert_int_equal(nth_trace_state_push(NTH_TRACE_STATE_USER), 0);
    assert_int_equal(nth_trace_state_pop(), 0);
    assert_int_equal(nth_trace_event(1, 2), 0);
}

static void api_rejects_bad_arguments(void **st)
{
    (void)st;
    /* Checked whether tracing is on or not, so that errors show in tests. */
    assert_int_equal(nth_trace_state_set(NTH_TRACE_STATE_MAX + 1), EINVAL);
    assert_int_equal(nth_trace_state_push(NTH_TRACE_STATE_MAX + 1), EINVAL);
    assert_int_equal(nth_trace_event(0, 1), EINVAL);
    assert_int_equal(nth_trace_event(NTH_TRACE_EVENT_RESERVED, 1), EINVAL);
    assert_int_equal(nth_trace_state_set_event(NTH_TRACE_RUN, 0, 1), EINVAL);
    assert_int_equal(nth_trace_state_pop_event(NTH_TRACE_EVENT_RESERVED + 5, 1), EINVAL);
    assert_int_equal(nth_trace_register_state(NTH_TRACE_RUN, "x"), EINVAL);   /* built-in */
    assert_int_equal(nth_trace_register_state(NTH_TRACE_STATE_USER, NULL), EINVAL);
    assert_int_equal(nth_trace_register_state(NTH_TRACE_STATE_USER, ""), EINVAL);
    assert_int_equal(nth_trace_register_event(0, "x"), EINVAL);
    assert_int_equal(nth_trace_register_event_value(7, 1, NULL), EINVAL);
}

static void start_rejects_unknown_suffix(void **st)
{
    (void)st;
    assert_int_equal(nth_trace_start("trace.txt", 0, 0), EINVAL);
    assert_int_equal(nth_trace_start(NULL, 0, 0), EINVAL);
    assert_int_equal(nth_trace_enabled(), 0);
}

static void env_rejects_bad_values(void **st)
{
    (void)st;
    unsetenv("NTH_TRACE");
    setenv("NTH_TRACE_BUFFER", "12Q", 1);
    assert_int_equal(nth_trace_start_from_env(), EINVAL);
    setenv("NTH_TRACE_BUFFER", "1M", 1);
    setenv("NTH_TRACE_FLUSH_MS", "0", 1);
    assert_int_equal(nth_trace_start_from_env(), EINVAL);
    setenv("NTH_TRACE_FLUSH_MS", "250", 1);
    setenv("NTH_TRACE_LIMIT", "-5", 1);
    assert_int_equal(nth_trace_start_from_env(), EINVAL);
    unsetenv("NTH_TRACE_LIMIT");
    assert_int_equal(nth_trace_start_from_env(), 0);   /* valid, NTH_TRACE unset: off */
    assert_int_equal(nth_trace_enabled(), 0);
    unsetenv("NTH_TRACE_BUFFER");
    unsetenv("NTH_TRACE_FLUSH_MS");
}

static void reader_refuses_non_traces(void **st)
{
    (void)st;
    struct nth_tr_file f;
    assert_int_equal(nth_tr_load("/nonexistent/trace.bin", &f, NULL), ENOENT);
    char path[] = "/tmp/nth-trace-junk-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    char junk[200];
    memset(junk, 'x', sizeof junk);
    assert_int_equal(write(fd, junk, sizeof junk), (int)sizeof junk);
    close(fd);
    assert_int_equal(nth_tr_load(path, &f, NULL), EINVAL);
    const char *in[1] = { path };
    assert_int_equal(nth_trace_convert(in, 1, "/tmp/nth-never.txt", NULL, NULL, NULL), EINVAL);
    unlink(path);
}

static void api_on_records_and_finish_converts(void **st)
{
    (void)st;
    char dir[] = "/tmp/nth-trace-api-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char out[256], bin[300];
    snprintf(out, sizeof out, "%s/t.json", dir);
    assert_int_equal(nth_trace_start(out, 0, 0), 0);
    assert_int_equal(nth_trace_start(out, 0, 0), EBUSY);
    assert_int_equal(nth_trace_enabled(), 1);
    assert_int_equal(nth_trace_register_state(NTH_TRACE_STATE_USER, "phase"), 0);
    assert_int_equal(nth_trace_state_push(NTH_TRACE_STATE_USER), 0);
    assert_int_equal(nth_trace_state_pop_event(5, 1), 0);
    assert_int_equal(nth_trace_finish(), 0);
    assert_int_equal(nth_trace_enabled(), 0);
    assert_int_equal(nth_trace_finish(), 0);   /* idempotent */
    snprintf(bin, sizeof bin, "%s.%ld.bin", out, (long)getpid());
    struct nth_tr_file f;
    assert_int_equal(nth_tr_load(bin, &f, stderr), 0);
    assert_int_equal(f.warnings, 0);
    /* push, pop and the event: 3 timed records plus the end mark */
    assert_int_equal(f.nrecs, 4);
    assert_string_equal(nth_tr_name(&f, NTH_NAME_STATE, NTH_TRACE_STATE_USER, 0), "phase");
    nth_tr_free(&f);
    assert_int_equal(access(out, R_OK), 0);
    unlink(out);
    unlink(bin);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(api_off_is_noop),
        cmocka_unit_test(api_rejects_bad_arguments),
        cmocka_unit_test(start_rejects_unknown_suffix),
        cmocka_unit_test(env_rejects_bad_values),
        cmocka_unit_test(reader_refuses_non_traces),
        cmocka_unit_test(api_on_records_and_finish_converts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
