/*
 * test_topology.c -- what loading the hwloc topology costs a process.
 *
 * Every libnth process loads a topology at start, and the multiprogrammed
 * workload starts a process per kernel run: hwloc's I/O and XML plugins
 * (dlopened by default, with libOpenCL, libX11, libxml2 and ICU behind them)
 * made that 15-25 ms of CPU per process (nthlib/topology.c). They must stay
 * unloaded, and the environment variable that keeps them out must not leak
 * into the program's environment or override the user's own value.
 */
#include "child.h"
#include <dirent.h>

/* 1 if a file of hwloc's plugin directory is mapped in this process. */
static int hwloc_plugin_mapped(char *which, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL);
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char *p = strstr(line, "/hwloc/hwloc_");
        if (p && strstr(p, ".so")) {
            snprintf(which, len, "%s", strrchr(line, ' ') + 1);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

/* Whether this machine has any plugin to load (Debian: libhwloc-plugins). */
static int plugins_installed(void)
{
    static const char *dirs[] = {"/usr/lib/x86_64-linux-gnu/hwloc", "/usr/lib/aarch64-linux-gnu/hwloc",
                                 "/usr/lib64/hwloc", "/usr/lib/hwloc", "/usr/local/lib/hwloc"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        DIR *d = opendir(dirs[i]);
        if (!d)
            continue;
        struct dirent *e;
        int n = 0;
        while ((e = readdir(d)))
            n += strncmp(e->d_name, "hwloc_", 6) == 0;
        closedir(d);
        if (n)
            return 1;
    }
    return 0;
}

static void default_env(void *arg)
{
    (void)arg;
    unsetenv("HWLOC_PLUGINS_BLACKLIST");
    unsetenv("HWLOC_PLUGINS_PATH");
    child_init(0);
    char which[512] = "";
    if (hwloc_plugin_mapped(which, sizeof which)) {
        fprintf(stderr, "hwloc plugin loaded by the runtime: %s", which);
        CHECK(0);
    }
    /* The runtime's setting was for hwloc's init only. */
    CHECK(getenv("HWLOC_PLUGINS_BLACKLIST") == NULL);
    /* The cpumgr client loads a second topology: same rule. */
    CHECK(nth_cpus_assigned() >= 1);
    CHECK(!hwloc_plugin_mapped(which, sizeof which));
    if (!plugins_installed())
        CHILD_SKIP("no hwloc plugin installed here: nothing could have been loaded");
}

static void test_no_io_plugins(void **s)
{
    (void)s;
    assert_child_ok(default_env, NULL);
}

static void user_env(void *arg)
{
    (void)arg;
    CHECK_EQ(setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_gl", 1), 0);
    child_init(0);
    const char *v = getenv("HWLOC_PLUGINS_BLACKLIST");
    CHECK(v != NULL && strcmp(v, "hwloc_gl") == 0);
}

static void test_user_setting_kept(void **s)
{
    (void)s;
    assert_child_ok(user_env, NULL);
}

int main(void)
{
    child_filter();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_io_plugins),
        cmocka_unit_test(test_user_setting_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
