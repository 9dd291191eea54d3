# Build fragment for nthlib/cpumgr_client: libnth's side of the CPU manager.
libnth_la_SOURCES += nthlib/cpumgr_client.c nthlib/cpumgr_client.h nthlib/cpumgr_probe.h nthlib/cpumgr_request.h \
	nthlib/cpumgr_rt.c nthlib/cpumgr_wait.c nthlib/cpumgr_wait.h nthlib/cpumgr_reclaim.h nthlib/sched_slice.h
libnth_la_LIBADD += -lrt
dist_man_MANS += doc/nth.3
