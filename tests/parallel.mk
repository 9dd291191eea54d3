# Build fragment for tests/parallel: parallel regions. Linked statically
# like the core tests; each case runs in a forked child (tests/core/child.h).
check_PROGRAMS += tests/parallel/test_parallel
TESTS += tests/parallel/test_parallel
tests_parallel_test_parallel_SOURCES = tests/parallel/test_parallel.c tests/core/child.h
tests_parallel_test_parallel_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/core
tests_parallel_test_parallel_CFLAGS = $(TEST_CFLAGS) -pthread
tests_parallel_test_parallel_LDFLAGS = -static
tests_parallel_test_parallel_LDADD = $(TEST_LIBS) -lpthread -lm

# Malleable regions under a real cpumgr daemon (two processes share the CPUs).
check_PROGRAMS += tests/parallel/malleable_probe
tests_parallel_malleable_probe_SOURCES = tests/parallel/malleable_probe.c
tests_parallel_malleable_probe_CFLAGS = $(TEST_CFLAGS)
tests_parallel_malleable_probe_LDFLAGS = -static
tests_parallel_malleable_probe_LDADD = libnth.la $(HWLOC_LIBS) $(URCU_LIBS)
dist_check_SCRIPTS += tests/parallel_malleable.sh
TESTS += tests/parallel_malleable.sh
