# Build fragment for tests/cpumgr: policy and placement tables, segment
# checks, the client alone, and multi-process integration with the daemon.
CPUMGR_TEST_LIBS = cpumgr/libcpumgr-core.la $(CMOCKA_LIBS) $(HWLOC_LIBS)

check_PROGRAMS += tests/cpumgr/test_policy tests/cpumgr/test_placement
TESTS += tests/cpumgr/test_policy tests/cpumgr/test_placement
tests_cpumgr_test_policy_SOURCES = tests/cpumgr/test_policy.c
tests_cpumgr_test_policy_CFLAGS = $(TEST_CFLAGS)
tests_cpumgr_test_policy_LDADD = $(CPUMGR_TEST_LIBS)
tests_cpumgr_test_placement_SOURCES = tests/cpumgr/test_placement.c
tests_cpumgr_test_placement_CFLAGS = $(TEST_CFLAGS)
tests_cpumgr_test_placement_LDADD = $(CPUMGR_TEST_LIBS)
check_PROGRAMS += tests/cpumgr/test_accounting
TESTS += tests/cpumgr/test_accounting
tests_cpumgr_test_accounting_SOURCES = tests/cpumgr/test_accounting.c
tests_cpumgr_test_accounting_CFLAGS = $(TEST_CFLAGS)
tests_cpumgr_test_accounting_LDADD = $(CPUMGR_TEST_LIBS)

# client_app links libnth statically: it calls the client's internal
# (hidden) entry points the way the runtime will.
check_PROGRAMS += tests/cpumgr/client_app tests/cpumgr/test_integration
TESTS += tests/cpumgr/test_integration
tests_cpumgr_client_app_SOURCES = tests/cpumgr/client_app.c
tests_cpumgr_client_app_CFLAGS = $(TEST_CFLAGS)
tests_cpumgr_client_app_LDFLAGS = -static
tests_cpumgr_client_app_LDADD = libnth.la $(HWLOC_LIBS) -lrt
tests_cpumgr_test_integration_SOURCES = tests/cpumgr/test_integration.c
tests_cpumgr_test_integration_CFLAGS = $(TEST_CFLAGS)
tests_cpumgr_test_integration_LDADD = $(CPUMGR_TEST_LIBS) -lrt

check_PROGRAMS += tests/cpumgr/test_client
TESTS += tests/cpumgr/test_client
tests_cpumgr_test_client_SOURCES = tests/cpumgr/test_client.c
tests_cpumgr_test_client_CFLAGS = $(TEST_CFLAGS)
tests_cpumgr_test_client_LDFLAGS = -static
tests_cpumgr_test_client_LDADD = libnth.la $(CMOCKA_LIBS) $(HWLOC_LIBS) -lrt

# The client inside the real runtime: rt_app is an nthlib application (VPs,
# counted work items, a non-yielding nano-thread) linked statically to read
# the VP table; test_runtime drives it under a real daemon.
check_PROGRAMS += tests/cpumgr/rt_app tests/cpumgr/test_runtime
TESTS += tests/cpumgr/test_runtime
tests_cpumgr_rt_app_SOURCES = tests/cpumgr/rt_app.c
tests_cpumgr_rt_app_CFLAGS = $(TEST_CFLAGS)
tests_cpumgr_rt_app_LDFLAGS = -static
tests_cpumgr_rt_app_LDADD = libnth.la $(HWLOC_LIBS) $(URCU_LIBS) -lrt
tests_cpumgr_test_runtime_SOURCES = tests/cpumgr/test_runtime.c
tests_cpumgr_test_runtime_CFLAGS = $(TEST_CFLAGS)
tests_cpumgr_test_runtime_LDADD = $(CPUMGR_TEST_LIBS) -lrt

# Dormancy (issue 5): 7 sleeping applications beside a busy one on 2 CPUs
# are dormant, the daemon does not rotate, the busy one keeps both CPUs.
check_PROGRAMS += tests/cpumgr/dormant_app
tests_cpumgr_dormant_app_SOURCES = tests/cpumgr/dormant_app.c
tests_cpumgr_dormant_app_CFLAGS = $(TEST_CFLAGS)
tests_cpumgr_dormant_app_LDADD = libnth.la $(HWLOC_LIBS)
TESTS += tests/cpumgr/dormant.sh
EXTRA_DIST += tests/cpumgr/dormant.sh

# Dormancy under the pthread shim (issue 5, shim-idle-not-dormant): plain
# POSIX programs waiting in read(), waitpid, long timed condvar waits are
# dormant beside a busy application, and wake right. Not instrumented:
# it runs under LD_PRELOAD (tests/shim.mk says why).
check_PROGRAMS += tests/cpumgr/idle_shim_app
tests_cpumgr_idle_shim_app_SOURCES = tests/cpumgr/idle_shim_app.c
tests_cpumgr_idle_shim_app_CPPFLAGS = -D_GNU_SOURCE
tests_cpumgr_idle_shim_app_CFLAGS = $(WARN_CFLAGS) $(AX_PTHREAD_CFLAGS)
tests_cpumgr_idle_shim_app_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_cpumgr_idle_shim_app_LDADD =
TESTS += tests/cpumgr/dormant_shim.sh
EXTRA_DIST += tests/cpumgr/dormant_shim.sh
# pthread_cancel of a timed condvar wait acts during the wait, also when
# the process goes dormant right after (the slices no longer fire then).
TESTS += tests/cpumgr/dormant_cancel.sh
EXTRA_DIST += tests/cpumgr/dormant_cancel.sh

# The command line as a new user meets it: --help, --cpus syntax, files
# checked at start with nothing left behind, --watch MS.
TESTS += tests/cpumgr/cli.sh
EXTRA_DIST += tests/cpumgr/cli.sh

# What a user is told: several daemons on the same CPUs; NTH_CPUMGR naming
# a segment the application may not open, or a directory.
TESTS += tests/cpumgr/messages.sh
EXTRA_DIST += tests/cpumgr/messages.sh

# Between users (as root; else skipped): per-user default segment names,
# mode 0600 keeps another user's application out, --enforce without root.
TESTS += tests/cpumgr/users.sh
EXTRA_DIST += tests/cpumgr/users.sh

# The enforcement pass opens no /proc/PID/task/TID/ file of its clients
# (they would make each client dear to reap), under strace.
TESTS += tests/cpumgr/enforce_no_task_proc.sh
EXTRA_DIST += tests/cpumgr/enforce_no_task_proc.sh

# Issue 5 "no cgroup writes": the daemon and its clients under strace.
TESTS += tests/cpumgr/no_cgroup_writes.sh
EXTRA_DIST += tests/cpumgr/no_cgroup_writes.sh

# Issue 5 "a man page for cpumgr(8) and the API section of nth(3)": every
# page renders with no groff warning.
TESTS += tests/cpumgr/man_pages.sh
EXTRA_DIST += tests/cpumgr/man_pages.sh
