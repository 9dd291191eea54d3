# Build fragment for tests/sync: the synchronisation part's unit tests.
# test-timer-queue: the timer queue alone. test-sync-mock: the sync objects
# on tests/sync/mock_core.c (kernel threads standing in for nano-threads),
# so their logic is tested independently of the scheduler.
check_PROGRAMS += tests/sync/test-timer-queue tests/sync/test-sync-mock
TESTS += tests/sync/test-timer-queue tests/sync/test-sync-mock

tests_sync_test_timer_queue_SOURCES = tests/sync/test_timer_queue.c nthlib/timer_queue.c nthlib/timer_queue.h
tests_sync_test_timer_queue_CFLAGS = $(TEST_CFLAGS)
tests_sync_test_timer_queue_LDADD = $(CMOCKA_LIBS)

tests_sync_test_sync_mock_SOURCES = tests/sync/test_sync.c tests/core/child.h tests/sync/mock_core.c $(NTH_SYNC_SOURCES) \
	nthlib/libc_real.c nthlib/libc_real.h
tests_sync_test_sync_mock_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/core -DNTH_TEST_MOCK
tests_sync_test_sync_mock_CFLAGS = $(TEST_CFLAGS) -pthread
tests_sync_test_sync_mock_LDADD = $(CMOCKA_LIBS) -lpthread

# The same semantics on the real runtime (1000 nano-threads on the VPs).
check_PROGRAMS += tests/sync/test-sync
TESTS += tests/sync/test-sync
tests_sync_test_sync_SOURCES = tests/sync/test_sync.c tests/core/child.h
tests_sync_test_sync_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/core
tests_sync_test_sync_CFLAGS = $(TEST_CFLAGS)
tests_sync_test_sync_LDADD = $(TEST_LIBS)

# Blocking system calls: pipe ping-pong on one VP.
check_PROGRAMS += tests/sync/test-blocking
TESTS += tests/sync/test-blocking
tests_sync_test_blocking_SOURCES = tests/sync/test_blocking.c tests/core/child.h
tests_sync_test_blocking_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/core
tests_sync_test_blocking_CFLAGS = $(TEST_CFLAGS)
tests_sync_test_blocking_LDADD = $(TEST_LIBS)

# Alarms of a disabled VP move to a running one (reaches the internal
# nth_vps_set_allowed, hence linked statically like the core's tests).
check_PROGRAMS += tests/sync/test-timer-migration
TESTS += tests/sync/test-timer-migration
tests_sync_test_timer_migration_SOURCES = tests/sync/test_timer_migration.c tests/core/child.h
tests_sync_test_timer_migration_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/core
tests_sync_test_timer_migration_CFLAGS = $(TEST_CFLAGS)
tests_sync_test_timer_migration_LDFLAGS = -static
tests_sync_test_timer_migration_LDADD = $(TEST_LIBS)

# A compute-bound nano-thread does not hold its VP's alarms, nor work
# queued behind it (reads a VP's parked flag: static link).
check_PROGRAMS += tests/sync/test-held-alarms
TESTS += tests/sync/test-held-alarms
tests_sync_test_held_alarms_SOURCES = tests/sync/test_held_alarms.c tests/core/child.h
tests_sync_test_held_alarms_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/core
tests_sync_test_held_alarms_CFLAGS = $(TEST_CFLAGS)
tests_sync_test_held_alarms_LDFLAGS = -static
tests_sync_test_held_alarms_LDADD = $(TEST_LIBS)

# Stall watchdog: a raw read() on one VP, rescued by a stand-in kernel
# thread, and hanging without it (reads internal counters: static link).
check_PROGRAMS += tests/sync/test-watchdog
TESTS += tests/sync/test-watchdog
tests_sync_test_watchdog_SOURCES = tests/sync/test_watchdog.c tests/core/child.h
tests_sync_test_watchdog_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/core
tests_sync_test_watchdog_CFLAGS = $(TEST_CFLAGS)
tests_sync_test_watchdog_LDFLAGS = -static
tests_sync_test_watchdog_LDADD = $(TEST_LIBS)
# The same program under strace: the monitor reads no /proc/self/task/TID/
# file (it would make the process dear to reap).
TESTS += tests/sync/watchdog_no_task_proc.sh
EXTRA_DIST += tests/sync/watchdog_no_task_proc.sh

# Biased normal mutexes: revocation under load, condvar ping-pong across
# it, the owner moving to another VP, a blocking stand-in as the revoker.
check_PROGRAMS += tests/sync/test-mutex-bias
TESTS += tests/sync/test-mutex-bias
tests_sync_test_mutex_bias_SOURCES = tests/sync/test_mutex_bias.c tests/core/child.h
tests_sync_test_mutex_bias_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/core
tests_sync_test_mutex_bias_CFLAGS = $(TEST_CFLAGS)
tests_sync_test_mutex_bias_LDADD = $(TEST_LIBS)

# Alarms fire while VPs are in the kernel inside nth_blocking_enter/leave.
check_PROGRAMS += tests/sync/test-blocking-timers
TESTS += tests/sync/test-blocking-timers
tests_sync_test_blocking_timers_SOURCES = tests/sync/test_blocking_timers.c tests/core/child.h
tests_sync_test_blocking_timers_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/core
tests_sync_test_blocking_timers_CFLAGS = $(TEST_CFLAGS)
tests_sync_test_blocking_timers_LDADD = $(TEST_LIBS)

# Kernel threads that are no VP (libc's pthreads) wait on every kind of
# object against nano-threads, untimed and timed, on 1 and 2 VPs.
check_PROGRAMS += tests/sync/test-foreign
TESTS += tests/sync/test-foreign
tests_sync_test_foreign_SOURCES = tests/sync/test_foreign.c tests/core/child.h
tests_sync_test_foreign_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/core
tests_sync_test_foreign_CFLAGS = $(TEST_CFLAGS) -pthread
tests_sync_test_foreign_LDADD = $(TEST_LIBS) -lpthread

# A waiter on a mutex relocked at once, round after round, by another
# nano-thread (same VP, other VP, and the condvar's reacquire) still gets
# it: the hand-off to a starving waiter (issue 4).
check_PROGRAMS += tests/sync/test-mutex-fair
TESTS += tests/sync/test-mutex-fair
tests_sync_test_mutex_fair_SOURCES = tests/sync/test_mutex_fair.c tests/core/child.h
tests_sync_test_mutex_fair_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/core
tests_sync_test_mutex_fair_CFLAGS = $(TEST_CFLAGS)
tests_sync_test_mutex_fair_LDADD = $(TEST_LIBS)
