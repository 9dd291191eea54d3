# Build fragment for tests/trace: a program that drives the tracing hooks as
# the runtime will (trace_sim), the cmocka unit test, and shell tests that
# check the outputs' structure with jq.
check_PROGRAMS += tests/trace/trace_sim tests/trace/test_trace_api tests/trace/malloc_demo
tests_trace_malloc_demo_SOURCES = tests/trace/malloc_demo.c
tests_trace_trace_sim_SOURCES = tests/trace/trace_sim.c
tests_trace_trace_sim_CFLAGS = $(AM_CFLAGS) -pthread
tests_trace_trace_sim_LDADD = libnth_trace_rec.la $(ZLIB_LIBS) -ldl
tests_trace_test_trace_api_SOURCES = tests/trace/test_trace_api.c
tests_trace_test_trace_api_CFLAGS = $(TEST_CFLAGS) -pthread
tests_trace_test_trace_api_LDADD = libnth_trace_rec.la $(CMOCKA_LIBS) $(ZLIB_LIBS) -ldl
# The background writers: SCHED_BATCH idle writer, normal-policy rescuer.
check_PROGRAMS += tests/trace/test_trace_writer
tests_trace_test_trace_writer_SOURCES = tests/trace/test_trace_writer.c
tests_trace_test_trace_writer_CFLAGS = $(TEST_CFLAGS) -pthread
tests_trace_test_trace_writer_LDADD = libnth_trace_rec.la $(CMOCKA_LIBS) $(ZLIB_LIBS) -ldl
TESTS += tests/trace/test_trace_writer
# The trace clock: TSC mapped to CLOCK_MONOTONIC (nthlib/trace_clock.c).
check_PROGRAMS += tests/trace/test_trace_clock
tests_trace_test_trace_clock_SOURCES = tests/trace/test_trace_clock.c
tests_trace_test_trace_clock_CFLAGS = $(TEST_CFLAGS) -pthread
tests_trace_test_trace_clock_LDADD = libnth_trace_rec.la $(CMOCKA_LIBS) $(ZLIB_LIBS) -ldl
TESTS += tests/trace/test_trace_clock
# The same clock with a TSC that jumps (NTH_TRACE_TSC_TEST_HOOK: per kernel
# thread offsets; this build of trace_clock.c is the test's alone).
check_PROGRAMS += tests/trace/test_trace_clock_jump
tests_trace_test_trace_clock_jump_SOURCES = tests/trace/test_trace_clock_jump.c nthlib/trace_clock.c
tests_trace_test_trace_clock_jump_CPPFLAGS = $(AM_CPPFLAGS) -DNTH_TRACE_TSC_TEST_HOOK
tests_trace_test_trace_clock_jump_CFLAGS = $(TEST_CFLAGS) -pthread
tests_trace_test_trace_clock_jump_LDADD = libnth_trace_rec.la $(CMOCKA_LIBS) $(ZLIB_LIBS) -ldl
TESTS += tests/trace/test_trace_clock_jump
TRACE_SH_TESTS = tests/trace/json_structure.sh tests/trace/json_gz.sh tests/trace/paraver.sh \
	tests/trace/exit_paths.sh tests/trace/truncated.sh tests/trace/lost_events.sh \
	tests/trace/merge_stats.sh tests/trace/probes_fortran.sh tests/trace/malloc_counters.sh \
	tests/trace/loan.sh tests/trace/probes_c.sh tests/trace/probes_min_ns.sh tests/trace/probes_shim.sh tests/trace/full_disk.sh \
	tests/trace/nthrun_trace.sh tests/trace/malloc_children.sh tests/trace/prv_stream.sh \
	tests/trace/big_runs.sh
TESTS += tests/trace/test_trace_api $(TRACE_SH_TESTS)
dist_check_SCRIPTS += $(TRACE_SH_TESTS) tests/trace/lib.sh
EXTRA_DIST += tests/trace/check_json.jq tests/trace/probes_demo.f90 tests/wait_bounded.sh

# The runtime traced for real (not the simulator). rt_demo links libnth
# statically, like tests/cpumgr/client_app, to drive the cpumgr client.
check_PROGRAMS += tests/trace/rt_demo
tests_trace_rt_demo_SOURCES = tests/trace/rt_demo.c
tests_trace_rt_demo_CFLAGS = $(TEST_CFLAGS) -I$(top_srcdir)/nthlib
tests_trace_rt_demo_LDFLAGS = -static
tests_trace_rt_demo_LDADD = libnth.la $(HWLOC_LIBS) -lrt -lpthread
TRACE_RT_TESTS = tests/trace/runtime.sh tests/trace/runtime_exit.sh tests/trace/runtime_cpumgr.sh \
	tests/trace/runtime_cpumgr_early.sh \
	tests/trace/env_messages.sh \
	tests/trace/runtime_grouped.sh tests/trace/trace_paths.sh
TESTS += $(TRACE_RT_TESTS)
dist_check_SCRIPTS += $(TRACE_RT_TESTS)

# BLOCKED (nth_blocking_enter/leave) and OVERHEAD (create, join, exit).
check_PROGRAMS += tests/trace/states_demo
tests_trace_states_demo_SOURCES = tests/trace/states_demo.c
tests_trace_states_demo_CFLAGS = $(TEST_CFLAGS) -pthread
tests_trace_states_demo_LDADD = libnth.la -lpthread
TESTS += tests/trace/runtime_states.sh
dist_check_SCRIPTS += tests/trace/runtime_states.sh

# SYNCH naming its object, and parallel regions, from the runtime itself.
check_PROGRAMS += tests/trace/sync_demo
tests_trace_sync_demo_SOURCES = tests/trace/sync_demo.c
tests_trace_sync_demo_CFLAGS = $(TEST_CFLAGS)
tests_trace_sync_demo_LDADD = libnth.la
TESTS += tests/trace/runtime_sync.sh tests/trace/runtime_regions.sh tests/trace/synch_names.sh
dist_check_SCRIPTS += tests/trace/runtime_sync.sh tests/trace/runtime_regions.sh tests/trace/synch_names.sh
# Values of the trace: ts relative with ns kept, stats' sums against the JSON.
TESTS += tests/trace/stats_values.sh
dist_check_SCRIPTS += tests/trace/stats_values.sh

# Names that are not UTF-8 or hold control characters (trace_text.c): valid
# JSON and one-line Paraver names.
check_PROGRAMS += tests/trace/names_demo
tests_trace_names_demo_SOURCES = tests/trace/names_demo.c
tests_trace_names_demo_CFLAGS = $(TEST_CFLAGS)
tests_trace_names_demo_LDADD = libnth.la
TESTS += tests/trace/utf8_names.sh
dist_check_SCRIPTS += tests/trace/utf8_names.sh
EXTRA_DIST += tests/trace/data/fuzz-badutf8.bin

# Records per scheduling operation against a stated budget (issue 7's
# overhead bound without timing, bench/trace_cost.sh). Static: it drains
# the buffers through libnth's hidden nth_trace_drain_now.
check_PROGRAMS += tests/trace/test_trace_volume
tests_trace_test_trace_volume_SOURCES = tests/trace/test_trace_volume.c
tests_trace_test_trace_volume_CFLAGS = $(TEST_CFLAGS) -I$(top_srcdir)/nthlib
tests_trace_test_trace_volume_LDFLAGS = -static
tests_trace_test_trace_volume_LDADD = libnth.la $(HWLOC_LIBS) $(CMOCKA_LIBS) -lrt -lpthread
TESTS += tests/trace/test_trace_volume

# The ready-queue length counts and region numbers tracing keeps: on
# which cache lines, exact under concurrent pushes, unique across VPs.
# Static: nth_rq_* and the trace hooks are libnth's hidden functions.
check_PROGRAMS += tests/trace/test_trace_rq_count
tests_trace_test_trace_rq_count_SOURCES = tests/trace/test_trace_rq_count.c
tests_trace_test_trace_rq_count_CFLAGS = $(TEST_CFLAGS) -I$(top_srcdir)/nthlib
tests_trace_test_trace_rq_count_LDFLAGS = -static
tests_trace_test_trace_rq_count_LDADD = libnth.la $(HWLOC_LIBS) $(CMOCKA_LIBS) -lrt -lpthread
TESTS += tests/trace/test_trace_rq_count
