# Build fragment for tests/core: unit tests of the runtime core. Each test
# program links libnth statically (-static is libtool's "use the .a of an
# uninstalled library") so it can reach the internal hooks.
core_tests = tests/core/test_create_join tests/core/test_sched \
	tests/core/test_errors tests/core/test_overflow tests/core/test_config \
	tests/core/test_switch_hook tests/core/test_context tests/core/test_move \
	tests/core/test_topology tests/core/test_helper_mask tests/core/test_fork \
	tests/core/test_ldso_pin tests/core/test_stack_rss tests/core/test_vps_scale
check_PROGRAMS += $(core_tests)
TESTS += $(core_tests) tests/core/no_sleeping_waits.sh
dist_check_SCRIPTS += tests/core/no_sleeping_waits.sh
core_test_ldflags = -static
core_test_libs = $(TEST_LIBS) -lm

tests_core_test_create_join_SOURCES = tests/core/test_create_join.c tests/core/child.h
tests_core_test_create_join_CFLAGS = $(TEST_CFLAGS)
tests_core_test_create_join_LDFLAGS = $(core_test_ldflags)
tests_core_test_create_join_LDADD = $(core_test_libs)

# test_ldso_pin dlopens libldso_pin.so (from .libs next to it), whose
# constructor and destructor call back into the program (exported).
tests_core_test_ldso_pin_SOURCES = tests/core/test_ldso_pin.c tests/core/child.h
tests_core_test_ldso_pin_CFLAGS = $(TEST_CFLAGS)
tests_core_test_ldso_pin_LDFLAGS = $(core_test_ldflags) -Wl,--export-dynamic
tests_core_test_ldso_pin_LDADD = $(core_test_libs) -ldl
check_LTLIBRARIES += tests/core/libldso_pin.la
tests_core_libldso_pin_la_SOURCES = tests/core/ldso_pin_lib.c
tests_core_libldso_pin_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere

tests_core_test_fork_SOURCES = tests/core/test_fork.c tests/core/child.h
tests_core_test_fork_CFLAGS = $(TEST_CFLAGS)
tests_core_test_fork_LDFLAGS = $(core_test_ldflags)
tests_core_test_fork_LDADD = $(core_test_libs)

tests_core_test_sched_SOURCES = tests/core/test_sched.c tests/core/child.h
tests_core_test_sched_CFLAGS = $(TEST_CFLAGS)
tests_core_test_sched_LDFLAGS = $(core_test_ldflags)
tests_core_test_sched_LDADD = $(core_test_libs)

tests_core_test_errors_SOURCES = tests/core/test_errors.c tests/core/child.h
tests_core_test_errors_CFLAGS = $(TEST_CFLAGS)
tests_core_test_errors_LDFLAGS = $(core_test_ldflags)
tests_core_test_errors_LDADD = $(core_test_libs)

tests_core_test_overflow_SOURCES = tests/core/test_overflow.c tests/core/child.h
tests_core_test_overflow_CFLAGS = $(TEST_CFLAGS)
tests_core_test_overflow_LDFLAGS = $(core_test_ldflags)
tests_core_test_overflow_LDADD = $(core_test_libs)

tests_core_test_helper_mask_SOURCES = tests/core/test_helper_mask.c tests/core/child.h
tests_core_test_helper_mask_CFLAGS = $(TEST_CFLAGS)
tests_core_test_helper_mask_LDFLAGS = $(core_test_ldflags)
tests_core_test_helper_mask_LDADD = $(core_test_libs)

tests_core_test_config_SOURCES = tests/core/test_config.c tests/core/child.h
tests_core_test_config_CFLAGS = $(TEST_CFLAGS)
tests_core_test_config_LDFLAGS = $(core_test_ldflags)
tests_core_test_config_LDADD = $(core_test_libs)

EXTRA_DIST += tests/core/fixtures

tests_core_test_switch_hook_SOURCES = tests/core/test_switch_hook.c tests/core/child.h
tests_core_test_switch_hook_CFLAGS = $(TEST_CFLAGS)
tests_core_test_switch_hook_LDFLAGS = $(core_test_ldflags)
tests_core_test_switch_hook_LDADD = $(core_test_libs)

# ctx_probe.S holds the probes of every architecture that has them (empty
# elsewhere): the test needs the host's registers, not the switch's choice.
tests_core_test_context_SOURCES = tests/core/test_context.c tests/core/ctx_probe.S tests/core/child.h
# -fexceptions: its forced-unwind case runs cleanup attributes by unwinding.
tests_core_test_context_CFLAGS = $(TEST_CFLAGS) -fexceptions
tests_core_test_context_LDFLAGS = $(core_test_ldflags)
tests_core_test_context_LDADD = $(core_test_libs)

tests_core_test_move_SOURCES = tests/core/test_move.c tests/core/child.h
tests_core_test_move_CFLAGS = $(TEST_CFLAGS)
tests_core_test_move_LDFLAGS = $(core_test_ldflags)
tests_core_test_move_LDADD = $(core_test_libs)

tests_core_test_topology_SOURCES = tests/core/test_topology.c tests/core/child.h
tests_core_test_topology_CFLAGS = $(TEST_CFLAGS)
tests_core_test_topology_LDFLAGS = $(core_test_ldflags)
tests_core_test_topology_LDADD = $(core_test_libs)
tests_core_test_stack_rss_SOURCES = tests/core/test_stack_rss.c tests/core/child.h
tests_core_test_stack_rss_CFLAGS = $(TEST_CFLAGS)
tests_core_test_stack_rss_LDFLAGS = $(core_test_ldflags)
tests_core_test_stack_rss_LDADD = $(core_test_libs)

tests_core_test_vps_scale_SOURCES = tests/core/test_vps_scale.c tests/core/child.h
tests_core_test_vps_scale_CFLAGS = $(TEST_CFLAGS)
tests_core_test_vps_scale_LDFLAGS = $(core_test_ldflags)
tests_core_test_vps_scale_LDADD = $(core_test_libs)
