# Build fragment for cpumgr/: the daemon and its status/stop tool. It
# depends on hwloc and the shared layout header only, never on libnth.
bin_PROGRAMS += cpumgr/cpumgr
noinst_LTLIBRARIES += cpumgr/libcpumgr-core.la
cpumgr_libcpumgr_core_la_SOURCES = cpumgr/policy.c cpumgr/policy.h \
	cpumgr/placement.c cpumgr/placement.h cpumgr/segment.c cpumgr/segment.h \
	cpumgr/accounting.c cpumgr/accounting.h cpumgr/daemon.c cpumgr/daemon.h \
	cpumgr/status.c cpumgr/status.h cpumgr/trace.c cpumgr/trace.h \
	cpumgr/enforce.c cpumgr/enforce.h cpumgr/masks.c cpumgr/masks.h \
	cpumgr/cpulist.c cpumgr/cpulist.h cpumgr/deathwatch.c cpumgr/deathwatch.h \
	cpumgr/others.c cpumgr/others.h cpumgr/group.c cpumgr/group.h
cpumgr_libcpumgr_core_la_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(AX_PTHREAD_CFLAGS)
cpumgr_libcpumgr_core_la_LIBADD = $(HWLOC_LIBS) -lm -lrt $(AX_PTHREAD_CFLAGS)
cpumgr_cpumgr_SOURCES = cpumgr/main.c
cpumgr_cpumgr_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS)
cpumgr_cpumgr_LDADD = cpumgr/libcpumgr-core.la
nthinclude_HEADERS += include/nth/cpumgr_shm.h include/nth/cpumgr_sigbus.h
dist_man_MANS += doc/cpumgr.8
