/* Configuration: NTH_* parsing and its messages, sizes, the cgroup v2
 * cpu.max parser on fixture trees, and the "more VPs than CPUs" notice. */
#include "child.h"
#include "internal.h"
#include <errno.h>
#include <fcntl.h>

/* Run nth_config_from_env with one variable set; capture stderr. */
static int env_case(const char *var, const char *val, nth_config_t *c, char *err, size_t errlen)
{
    char path[] = "/tmp/nth-cfg-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    setenv(var, val, 1);
    int r = nth_config_from_env(c);
    unsetenv(var);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    memset(err, 0, errlen);
    ssize_t n = pread(fd, err, errlen - 1, 0);
    assert_true(n >= 0);
    close(fd);
    unlink(path);
    return r;
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void bad_value(const char *var, const char *val)
{
    nth_config_t c, d;
    char err[512];
    nth_config_default(&d);
    assert_int_equal(env_case(var, val, &c, err, sizeof err), EINVAL);
    assert_int_equal(lines(err), 1);
    assert_non_null(strstr(err, var));
    assert_non_null(strstr(err, val));
    assert_non_null(strstr(err, "accepted values"));
    /* The field keeps its default. */
    assert_int_equal(c.vps, d.vps);
    assert_int_equal(c.bind, d.bind);
    assert_int_equal(c.stack_size, d.stack_size);
    assert_int_equal(c.spin_us, d.spin_us);
    assert_int_equal(c.team_spin_us, d.team_spin_us);
}

/* A numeric variable's message gives its range, LO..HI (NTH_STALL_US once
 * said only "microseconds, 0 = off"). */
static void test_env_bad_ranges(void **s)
{
    (void)s;
    static const char *const vars[][2] = {
        { "NTH_VPS", "x" }, { "NTH_STACK_SIZE", "x" }, { "NTH_SPIN_US", "x" },
        { "NTH_TEAM_SPIN_US", "x" }, { "NTH_STALL_US", "x" }, { "NTH_RECLAIM_US", "x" },
        { "NTH_TRACE_BUFFER", "x" },
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        nth_config_t c;
        char err[512];
        assert_int_equal(env_case(vars[i][0], vars[i][1], &c, err, sizeof err), EINVAL);
        const char *acc = strstr(err, "accepted values: ");
        assert_non_null(acc);
        const char *dots = strstr(acc, "..");
        if (!dots || dots == acc || dots[-1] < '0' || dots[-1] > '9' || dots[2] < '0' || dots[2] > '9')
            fail_msg("%s: no LO..HI range in: %s", vars[i][0], err);
    }
}

static void test_env_bad(void **s)
{
    (void)s;
    bad_value("NTH_VPS", "abc");
    bad_value("NTH_VPS", "-1");
    bad_value("NTH_VPS", "5000");
    bad_value("NTH_BIND", "sometimes");
    bad_value("NTH_STACK_SIZE", "1K");
    bad_value("NTH_STACK_SIZE", "12Q");
    bad_value("NTH_STACK_SIZE", "2G");
    bad_value("NTH_SPIN_US", "fast");
    bad_value("NTH_SPIN_US", "2000000");
    bad_value("NTH_TEAM_SPIN_US", "long");
    bad_value("NTH_TEAM_SPIN_US", "1000001");
    bad_value("NTH_TRACE_BUFFER", "10");
    bad_value("NTH_STALL_US", "soon");
    bad_value("NTH_RECLAIM_US", "10000001");
    bad_value("NTH_MUTEX_BIAS", "off");
    bad_value("NTH_MUTEX_BIAS", "2");
    /* NTH_CPUMGR: "off" or a name as cpumgr --name takes it; a bad one
     * runs the application alone, said once (the client then says nothing). */
    static const char *const bad_seg[] = { "foo", "/", "/a/b", "nth-cpumgr-0", "off/" };
    for (size_t i = 0; i < sizeof bad_seg / sizeof bad_seg[0]; i++) {
        nth_config_t c;
        char err[512];
        bad_value("NTH_CPUMGR", bad_seg[i]);
        assert_int_equal(env_case("NTH_CPUMGR", bad_seg[i], &c, err, sizeof err), EINVAL);
        assert_non_null(strstr(err, "nthlib: NTH_CPUMGR='"));
        assert_string_equal(c.cpumgr, "off");
    }
}

static void test_env_good(void **s)
{
    (void)s;
    nth_config_t c;
    char err[512];
    assert_int_equal(env_case("NTH_VPS", "3", &c, err, sizeof err), 0);
    assert_int_equal(c.vps, 3);
    assert_string_equal(err, "");
    assert_int_equal(env_case("NTH_BIND", "none", &c, err, sizeof err), 0);
    assert_int_equal(c.bind, 0);
    assert_int_equal(env_case("NTH_BIND", "cpu", &c, err, sizeof err), 0);
    assert_int_equal(c.bind, 1);
    assert_int_equal(env_case("NTH_STACK_SIZE", "32K", &c, err, sizeof err), 0);
    assert_int_equal(c.stack_size, 32 * 1024);
    assert_int_equal(env_case("NTH_STACK_SIZE", "1MiB", &c, err, sizeof err), 0);
    assert_int_equal(c.stack_size, 1024 * 1024);
    assert_int_equal(env_case("NTH_STACK_SIZE", "65536", &c, err, sizeof err), 0);
    assert_int_equal(c.stack_size, 65536);
    assert_int_equal(env_case("NTH_SPIN_US", "0", &c, err, sizeof err), 0);
    assert_int_equal(c.spin_us, 0);
    assert_int_equal(env_case("NTH_TEAM_SPIN_US", "250", &c, err, sizeof err), 0);
    assert_int_equal(c.team_spin_us, 250);
    assert_int_equal(env_case("NTH_MUTEX_BIAS", "0", &c, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(env_case("NTH_MUTEX_BIAS", "1", &c, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(env_case("NTH_CPUMGR", "off", &c, err, sizeof err), 0);
    assert_string_equal(c.cpumgr, "off");
    assert_int_equal(env_case("NTH_CPUMGR", "/nth-cpumgr-test", &c, err, sizeof err), 0);
    assert_string_equal(c.cpumgr, "/nth-cpumgr-test");
    assert_string_equal(err, "");
    nth_config_default(&c);
    assert_int_equal(c.vps, 0);
    assert_int_equal(c.bind, 1);
    assert_int_equal(c.stack_size, 64 * 1024);
    assert_int_equal(c.spin_us, 50);
    assert_int_equal(c.team_spin_us, 1000);
    assert_int_equal(nth_config_check(&c), 0);
    c.spin_us = 2000000;
    assert_int_equal(nth_config_check(&c), EINVAL);
    c.spin_us = 50;
    c.team_spin_us = 2000000;
    assert_int_equal(nth_config_check(&c), EINVAL);
}

/* A zero-filled nth_config_t (fresh13 trial): EINVAL with one line naming
 * stack_size and pointing at nth_config_default(); once the runtime runs,
 * EBUSY whatever the config (it was EINVAL, the check came first). */
static void c_zeroed_config(void *a)
{
    (void)a;
    nth_config_t zeroed;
    memset(&zeroed, 0, sizeof zeroed);
    zeroed.vps = 2;
    zeroed.cpumgr = "off";
    CHECK_EQ(nth_init(&zeroed), EINVAL);
    nth_config_t good = child_config_alone(2);
    CHECK_EQ(nth_init(&good), 0);
    CHECK_EQ(nth_init(&zeroed), EBUSY);
    CHECK_EQ(nth_init(&good), EBUSY);
}

static void test_init_zeroed_config(void **s)
{
    (void)s;
    char path[] = "/tmp/nth-cfg-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int st = run_child(c_zeroed_config, NULL, path, 30);
    char err[2048] = {0};
    assert_true(pread(fd, err, sizeof err - 1, 0) >= 0);
    close(fd);
    unlink(path);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("child: wait status %#x: %s", st, err);
    if (lines(err) != 1 || !strstr(err, "nthlib: nth_init: stack_size = 0 is not valid; accepted values: 16384 to ") ||
        !strstr(err, "nth_config_default()"))
        fail_msg("not one line naming stack_size and nth_config_default(): '%s'", err);
}

static void test_parse_size(void **s)
{
    (void)s;
    size_t v;
    assert_int_equal(nth_parse_size("0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(nth_parse_size("16k", &v), 0);
    assert_int_equal(v, 16384);
    assert_int_equal(nth_parse_size("2M", &v), 0);
    assert_int_equal(v, 2u << 20);
    assert_int_equal(nth_parse_size("1GB", &v), 0);
    assert_int_equal(v, 1u << 30);
    assert_int_equal(nth_parse_size("", &v), EINVAL);
    assert_int_equal(nth_parse_size("k", &v), EINVAL);
    assert_int_equal(nth_parse_size("-4K", &v), EINVAL);
    assert_int_equal(nth_parse_size("4 K", &v), EINVAL);
    assert_int_equal(nth_parse_size("4KX", &v), EINVAL);
    assert_int_equal(nth_parse_size("99999999999999999999999", &v), EINVAL);
    assert_int_equal(nth_parse_size("18446744073709551615G", &v), EINVAL);
}

static void test_cpu_max_line(void **s)
{
    (void)s;
    assert_int_equal(nth_cgroup_parse_cpu_max("max 100000\n"), 0);
    assert_int_equal(nth_cgroup_parse_cpu_max("50000 100000\n"), 1);
    assert_int_equal(nth_cgroup_parse_cpu_max("100000 100000"), 1);
    assert_int_equal(nth_cgroup_parse_cpu_max("150000 100000"), 2);
    assert_int_equal(nth_cgroup_parse_cpu_max("400000 100000"), 4);
    assert_int_equal(nth_cgroup_parse_cpu_max(""), -1);
    assert_int_equal(nth_cgroup_parse_cpu_max("abc 100"), -1);
    assert_int_equal(nth_cgroup_parse_cpu_max("100 0"), -1);
    assert_int_equal(nth_cgroup_parse_cpu_max("-5 100"), -1);
    assert_int_equal(nth_cgroup_parse_cpu_max("garbage"), -1);
}

static int cap_of(const char *proc)
{
    const char *top = getenv("top_srcdir");
    char p[4096], root[4096];
    snprintf(p, sizeof p, "%s/tests/core/fixtures/cgroup/%s", top ? top : ".", proc);
    snprintf(root, sizeof root, "%s/tests/core/fixtures/cgroup/root", top ? top : ".");
    return nth_cgroup_cpu_cap(p, root);
}

static void test_cgroup_path(void **s)
{
    (void)s;
    assert_int_equal(cap_of("proc_nested"), 2);       /* tightest: c's 1.5 CPUs */
    assert_int_equal(cap_of("proc_parent_caps"), 1);  /* the parent caps the child */
    assert_int_equal(cap_of("proc_unlimited"), 0);    /* "max" */
    assert_int_equal(cap_of("proc_malformed"), 0);    /* ignored, not fatal */
    assert_int_equal(cap_of("proc_root"), 0);         /* root has no cpu.max */
    assert_int_equal(cap_of("proc_v1"), 0);           /* cgroup v1/hybrid host */
    assert_int_equal(cap_of("does_not_exist"), 0);
}

static void c_oversubscribe(void *a)
{
    (void)a;
    setenv("NTH_VPS", "9", 1);
    CHECK_EQ(nth_init(NULL), 0);
    CHECK_EQ(nth_num_vps(), 9);
}

/* More VPs than CPUs asked by the program's nth_config_t, NTH_VPS unset:
 * the notice must not name NTH_VPS (fresh15: "NTH_VPS=3 is more than the
 * 2 CPUs" with no NTH_VPS set). */
static void c_oversubscribe_cfg(void *a)
{
    (void)a;
    unsetenv("NTH_VPS");
    cpu_set_t cs;
    CHECK_EQ(sched_getaffinity(0, sizeof cs, &cs), 0);
    nth_config_t c;
    nth_config_default(&c);
    c.vps = (unsigned)CPU_COUNT(&cs) + 1;
    CHECK_EQ(nth_init(&c), 0);
    CHECK_EQ(nth_num_vps(), (int)c.vps);
}

static void c_bad_env_lazy(void *a)
{
    (void)a;
    setenv("NTH_SPIN_US", "soon", 1);
    setenv("NTH_VPS", "2", 1);
    CHECK_EQ(nth_num_vps(), 2);   /* lazy start: runs with the default spin */
    CHECK_EQ(nth_rt.cfg.spin_us, 50);
}

static void read_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    memset(buf, 0, len);
    assert_true(read(fd, buf, len - 1) >= 0);
    close(fd);
    unlink(path);
}

static void test_env_at_start(void **s)
{
    (void)s;
    char path[] = "/tmp/nth-start-XXXXXX";
    close(mkstemp(path));
    char err[1024];
    int st = run_child(c_oversubscribe, NULL, path, 30);
    read_file(path, err, sizeof err);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(lines(err), 1);
    assert_non_null(strstr(err, "NTH_VPS=9"));
    char path3[] = "/tmp/nth-start-XXXXXX";
    close(mkstemp(path3));
    st = run_child(c_oversubscribe_cfg, NULL, path3, 30);
    read_file(path3, err, sizeof err);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(lines(err), 1);
    if (strstr(err, "NTH_VPS") || !strstr(err, "nth_config_t.vps="))
        fail_msg("the notice blames NTH_VPS, or does not name the config: %s", err);
    char path2[] = "/tmp/nth-start-XXXXXX";
    close(mkstemp(path2));
    st = run_child(c_bad_env_lazy, NULL, path2, 30);
    read_file(path2, err, sizeof err);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(lines(err), 1);
    assert_non_null(strstr(err, "NTH_SPIN_US='soon'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_bad),
        cmocka_unit_test(test_env_bad_ranges),
        cmocka_unit_test(test_env_good),
        cmocka_unit_test(test_init_zeroed_config),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_cpu_max_line),
        cmocka_unit_test(test_cgroup_path),
        cmocka_unit_test(test_env_at_start),
    };
    child_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
