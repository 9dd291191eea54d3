# Tests of the LU and SOR kernel programs, the team layer and the workload
# driver (bench/kernels, bench/workload).
check_PROGRAMS += tests/test_team
tests_test_team_SOURCES = tests/test_team.c bench/kernels/team_glibc.c bench/kernels/team_cpus.c bench/kernels/team.h
tests_test_team_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/bench/kernels -DTEAM_IMPL='"glibc"'
tests_test_team_CFLAGS = $(TEST_CFLAGS) -pthread
tests_test_team_LDADD = $(CMOCKA_LIBS) $(HWLOC_LIBS) -lpthread
if HAVE_OPENMP
check_PROGRAMS += tests/test_team_openmp
TESTS += tests/test_team_openmp
tests_test_team_openmp_SOURCES = tests/test_team.c bench/kernels/team_openmp.c bench/kernels/team_cpus.c bench/kernels/team.h
tests_test_team_openmp_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/bench/kernels -DTEAM_IMPL='"openmp"'
tests_test_team_openmp_CFLAGS = $(TEST_CFLAGS) $(OPENMP_CFLAGS)
tests_test_team_openmp_LDFLAGS = $(AM_LDFLAGS) $(OPENMP_CFLAGS)
tests_test_team_openmp_LDADD = $(CMOCKA_LIBS) $(HWLOC_LIBS)
endif
check_PROGRAMS += tests/test_migrations
tests_test_migrations_SOURCES = tests/test_migrations.c bench/kernels/migrations.c bench/kernels/migrations.h
tests_test_migrations_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/bench/kernels
tests_test_migrations_CFLAGS = $(TEST_CFLAGS) -pthread
tests_test_migrations_LDADD = $(CMOCKA_LIBS) -lpthread
dist_check_SCRIPTS += tests/kernels_validate.sh tests/kernels_corrupt.sh tests/kernels_jgf.sh tests/workload_tiny.sh \
	tests/kernels_no_task_proc.sh tests/kernels_impl.sh tests/workload_ab_table.sh tests/grant_gaps.sh tests/mig_classify.sh \
	tests/kernels_exit_migrations.sh
TESTS += tests/test_team tests/kernels_validate.sh tests/kernels_corrupt.sh tests/kernels_jgf.sh tests/workload_tiny.sh \
	tests/test_migrations tests/kernels_no_task_proc.sh tests/kernels_impl.sh tests/workload_ab_table.sh tests/grant_gaps.sh tests/mig_classify.sh \
	tests/kernels_exit_migrations.sh
