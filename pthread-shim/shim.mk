# Build fragment for pthread-shim: libnth-pthread.so, the nthrun launcher.

# libnth-pthread: the POSIX thread API on nano-threads, for LD_PRELOAD or
# for linking ahead of libc. Its exports get glibc's version tags from
# libnth-pthread.map (generated with symver.h by gen-symver.sh from
# glibc-symbols.txt).
lib_LTLIBRARIES += libnth-pthread.la
libnth_pthread_la_SOURCES = \
	pthread-shim/shim.h pthread-shim/symver.h \
	pthread-shim/runtime.c pthread-shim/thread.c pthread-shim/attr.c \
	pthread-shim/cancel.c pthread-shim/mutex.c pthread-shim/sync.c \
	pthread-shim/sem.c pthread-shim/signal.c pthread-shim/sighand.c pthread-shim/blocking.c \
	pthread-shim/tls.c pthread-shim/cpumask.c pthread-shim/unwind.c \
	pthread-shim/sigdefer.c pthread-shim/sigwatch.c
libnth_pthread_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/pthread-shim
# Unwind tables in every function: pthread_exit and cancellation unwind
# through the shim's own frames (unwind.c), whatever the target's default.
libnth_pthread_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -fasynchronous-unwind-tables
libnth_pthread_la_LIBADD = libnth-pthread-once.la libnth.la -ldl
libnth_pthread_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 \
	-Wl,--version-script=$(top_srcdir)/pthread-shim/libnth-pthread.map
EXTRA_libnth_pthread_la_DEPENDENCIES = $(top_srcdir)/pthread-shim/libnth-pthread.map

# pthread_once alone with -fexceptions: a C++ exception that leaves the
# routine runs its cleanup attribute there, as in glibc (once.c). Apart
# because <pthread.h> declares glibc's cancellation-buffer entry points
# (cancel.c) only without -fexceptions.
noinst_LTLIBRARIES += libnth-pthread-once.la
libnth_pthread_once_la_SOURCES = pthread-shim/once.c
libnth_pthread_once_la_CPPFLAGS = $(libnth_pthread_la_CPPFLAGS)
libnth_pthread_once_la_CFLAGS = $(libnth_pthread_la_CFLAGS) -fexceptions

# "yes" since this fragment builds libnth-pthread.la: the shim tests in
# tests/shim fail, rather than skip, when the library is missing.
NTH_SHIM_BUILT = yes

# nthrun: sets NTH_* and LD_PRELOAD, then execs the program (traced: runs it
# as a child and converts the trace it could not write).
bin_PROGRAMS += pthread-shim/nthrun
dist_man_MANS += doc/nthrun.1
pthread_shim_nthrun_SOURCES = pthread-shim/nthrun.c pthread-shim/nthrun_trace.h pthread-shim/nthrun_trace.c \
	nthlib/trace_tool.h
# nth-trace converts what a traced program could not (nthrun_trace.c): found
# as the runtime's fatal-signal path finds it (nthlib/trace_tool.h).
pthread_shim_nthrun_CPPFLAGS = $(AM_CPPFLAGS) -DNTH_LIBDIR='"$(libdir)"' $(NTH_TOOL_CPPFLAGS)
# Never sanitizer-instrumented: it only sets LD_PRELOAD and execs, and an
# instrumented launcher would refuse a preload list its runtime is not first in.
pthread_shim_nthrun_CFLAGS = $(WARN_CFLAGS)
pthread_shim_nthrun_LDFLAGS =
pthread_shim_nthrun_LDADD =
