# Build fragment for nthlib/sync: synchronisation objects, timer queue,
# sleeping. NTH_SYNC_SOURCES is reused by tests/sync.mk to test the objects
# on a mock core; sync_glue.c plugs them into the real core.
NTH_SYNC_SOURCES = \
	nthlib/olock.h nthlib/wait_queue.h nthlib/sync_core.h nthlib/sync_spin.h \
	nthlib/timer_queue.h nthlib/timer_queue.c nthlib/timeout.c nthlib/wait_gen.c \
	nthlib/mutex_internal.h nthlib/mutex.c nthlib/mutex_bias.h nthlib/mutex_bias.c nthlib/condvar.c nthlib/barrier.c \
	nthlib/rwlock.c nthlib/semaphore.c nthlib/once.c nthlib/key.c nthlib/sleep.c \
	nthlib/foreign.c
libnth_la_SOURCES += $(NTH_SYNC_SOURCES) nthlib/sync_glue.c nthlib/blocking.c
