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
