# Build fragment for tests/shim: the pthread shim's integration tests.
#
# The programs posix-* are plain POSIX programs: compiled with -pthread only,
# never linked with nthlib and never instrumented with sanitizers (an
# instrumented program cannot take LD_PRELOAD of a library ahead of its
# sanitizer runtime). run-compare.sh runs each natively and under
# LD_PRELOAD=libnth-pthread.so and compares the runs.

shim_posix_cflags = $(WARN_CFLAGS) $(AX_PTHREAD_CFLAGS)
shim_posix_cppflags = -D_GNU_SOURCE

check_PROGRAMS += tests/shim/posix-threads
tests_shim_posix_threads_SOURCES = tests/shim/threads.c tests/shim/check.h
tests_shim_posix_threads_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_threads_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_threads_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_threads_LDADD =

check_PROGRAMS += tests/shim/posix-mutex
tests_shim_posix_mutex_SOURCES = tests/shim/mutex.c tests/shim/check.h
tests_shim_posix_mutex_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_mutex_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_mutex_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_mutex_LDADD =

check_PROGRAMS += tests/shim/posix-cond
tests_shim_posix_cond_SOURCES = tests/shim/cond.c tests/shim/check.h
tests_shim_posix_cond_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_cond_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_cond_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_cond_LDADD =

check_PROGRAMS += tests/shim/posix-rwlock
tests_shim_posix_rwlock_SOURCES = tests/shim/rwlock.c tests/shim/check.h
tests_shim_posix_rwlock_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_rwlock_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_rwlock_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_rwlock_LDADD =

check_PROGRAMS += tests/shim/posix-barrier
tests_shim_posix_barrier_SOURCES = tests/shim/barrier.c tests/shim/check.h
tests_shim_posix_barrier_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_barrier_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_barrier_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_barrier_LDADD =

check_PROGRAMS += tests/shim/posix-spin
tests_shim_posix_spin_SOURCES = tests/shim/spin.c tests/shim/check.h
tests_shim_posix_spin_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_spin_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_spin_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_spin_LDADD =

check_PROGRAMS += tests/shim/posix-keys
tests_shim_posix_keys_SOURCES = tests/shim/keys.c tests/shim/check.h
tests_shim_posix_keys_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_keys_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_keys_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_keys_LDADD =

check_PROGRAMS += tests/shim/posix-sem
tests_shim_posix_sem_SOURCES = tests/shim/sem.c tests/shim/check.h
tests_shim_posix_sem_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_sem_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_sem_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_sem_LDADD =

check_PROGRAMS += tests/shim/posix-signals
tests_shim_posix_signals_SOURCES = tests/shim/signals.c tests/shim/check.h
tests_shim_posix_signals_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_signals_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_signals_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_signals_LDADD =

check_PROGRAMS += tests/shim/posix-sigmask
tests_shim_posix_sigmask_SOURCES = tests/shim/sigmask.c tests/shim/check.h
tests_shim_posix_sigmask_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_sigmask_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_sigmask_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_sigmask_LDADD =

check_PROGRAMS += tests/shim/posix-cancel
tests_shim_posix_cancel_SOURCES = tests/shim/cancel.c tests/shim/check.h
tests_shim_posix_cancel_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_cancel_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_cancel_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_cancel_LDADD =

check_PROGRAMS += tests/shim/posix-blocking
tests_shim_posix_blocking_SOURCES = tests/shim/blocking.c tests/shim/check.h
tests_shim_posix_blocking_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_blocking_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_blocking_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_blocking_LDADD =

check_PROGRAMS += tests/shim/posix-fork
tests_shim_posix_fork_SOURCES = tests/shim/fork.c tests/shim/check.h
tests_shim_posix_fork_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_fork_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_fork_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_fork_LDADD =

check_PROGRAMS += tests/shim/posix-forkrt
tests_shim_posix_forkrt_SOURCES = tests/shim/forkrt.c tests/shim/check.h
tests_shim_posix_forkrt_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_forkrt_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_forkrt_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_forkrt_LDADD =

check_PROGRAMS += tests/shim/posix-forkc11
tests_shim_posix_forkc11_SOURCES = tests/shim/forkc11.c tests/shim/check.h
tests_shim_posix_forkc11_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_forkc11_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_forkc11_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_forkc11_LDADD =

check_PROGRAMS += tests/shim/posix-standinsig
tests_shim_posix_standinsig_SOURCES = tests/shim/standinsig.c tests/shim/check.h
tests_shim_posix_standinsig_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_standinsig_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_standinsig_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_standinsig_LDADD =

check_PROGRAMS += tests/shim/posix-static_init
tests_shim_posix_static_init_SOURCES = tests/shim/static_init.c tests/shim/check.h
tests_shim_posix_static_init_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_static_init_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_static_init_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_static_init_LDADD =

check_PROGRAMS += tests/shim/posix-first_call
tests_shim_posix_first_call_SOURCES = tests/shim/first_call.c tests/shim/check.h
tests_shim_posix_first_call_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_first_call_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_first_call_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_first_call_LDADD =

check_PROGRAMS += tests/shim/posix-errno_migrate
tests_shim_posix_errno_migrate_SOURCES = tests/shim/errno_migrate.c tests/shim/check.h
tests_shim_posix_errno_migrate_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_errno_migrate_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_errno_migrate_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_errno_migrate_LDADD =

check_PROGRAMS += tests/shim/posix-manyread
tests_shim_posix_manyread_SOURCES = tests/shim/manyread.c tests/shim/check.h
tests_shim_posix_manyread_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_manyread_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_manyread_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_manyread_LDADD =
check_PROGRAMS += tests/shim/posix-cancelblk
tests_shim_posix_cancelblk_SOURCES = tests/shim/cancelblk.c tests/shim/check.h
tests_shim_posix_cancelblk_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_cancelblk_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_cancelblk_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_cancelblk_LDADD =
check_PROGRAMS += tests/shim/posix-busy
tests_shim_posix_busy_SOURCES = tests/shim/busy.c tests/shim/check.h
tests_shim_posix_busy_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_busy_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_busy_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_busy_LDADD =

check_PROGRAMS += tests/shim/posix-rdtimers
tests_shim_posix_rdtimers_SOURCES = tests/shim/rdtimers.c tests/shim/check.h
tests_shim_posix_rdtimers_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_rdtimers_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_rdtimers_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_rdtimers_LDADD =
check_PROGRAMS += tests/shim/posix-tls
tests_shim_posix_tls_SOURCES = tests/shim/tls.c tests/shim/check.h
tests_shim_posix_tls_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_tls_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_tls_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_tls_LDADD =

check_PROGRAMS += tests/shim/posix-sigwake
tests_shim_posix_sigwake_SOURCES = tests/shim/sigwake.c tests/shim/check.h
tests_shim_posix_sigwake_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_sigwake_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_sigwake_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_sigwake_LDADD =

check_PROGRAMS += tests/shim/posix-sleepint
tests_shim_posix_sleepint_SOURCES = tests/shim/sleepint.c tests/shim/check.h
tests_shim_posix_sleepint_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_sleepint_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_sleepint_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_sleepint_LDADD =

check_PROGRAMS += tests/shim/posix-sleephook
tests_shim_posix_sleephook_SOURCES = tests/shim/sleephook.c tests/shim/check.h
tests_shim_posix_sleephook_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_sleephook_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_sleephook_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_sleephook_LDADD =

check_PROGRAMS += tests/shim/posix-restart
tests_shim_posix_restart_SOURCES = tests/shim/restart.c tests/shim/check.h
tests_shim_posix_restart_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_restart_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_restart_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_restart_LDADD =

# once: -fexceptions so that the forced unwinding it starts in a pthread_once
# routine can pass its frames (as C++ code's would).
check_PROGRAMS += tests/shim/posix-once
tests_shim_posix_once_SOURCES = tests/shim/once.c tests/shim/check.h
tests_shim_posix_once_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_once_CFLAGS = $(shim_posix_cflags) -fexceptions
tests_shim_posix_once_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_once_LDADD =

check_PROGRAMS += tests/shim/posix-negtime
tests_shim_posix_negtime_SOURCES = tests/shim/negtime.c tests/shim/check.h
tests_shim_posix_negtime_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_negtime_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_negtime_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_negtime_LDADD =

check_PROGRAMS += tests/shim/posix-guard
tests_shim_posix_guard_SOURCES = tests/shim/guard.c tests/shim/check.h
tests_shim_posix_guard_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_guard_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_guard_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_guard_LDADD =

check_PROGRAMS += tests/shim/posix-bigtls
tests_shim_posix_bigtls_SOURCES = tests/shim/bigtls.c tests/shim/check.h
tests_shim_posix_bigtls_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_bigtls_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_bigtls_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_bigtls_LDADD =

check_PROGRAMS += tests/shim/posix-bigframe
tests_shim_posix_bigframe_SOURCES = tests/shim/bigframe.c tests/shim/check.h
tests_shim_posix_bigframe_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_bigframe_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_bigframe_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_bigframe_LDADD =

check_PROGRAMS += tests/shim/posix-setid
tests_shim_posix_setid_SOURCES = tests/shim/setid.c tests/shim/check.h
tests_shim_posix_setid_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_setid_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_setid_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_setid_LDADD =

check_PROGRAMS += tests/shim/posix-cpumask
tests_shim_posix_cpumask_SOURCES = tests/shim/cpumask.c tests/shim/check.h
tests_shim_posix_cpumask_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_cpumask_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_cpumask_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_cpumask_LDADD =

check_PROGRAMS += tests/shim/posix-schedprio
tests_shim_posix_schedprio_SOURCES = tests/shim/schedprio.c tests/shim/check.h
tests_shim_posix_schedprio_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_schedprio_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_schedprio_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_schedprio_LDADD =

# dlctor: dlopens libdlctor.so (from .libs next to it), whose constructor
# makes threads, and opens and closes libdlclose.so, whose constructor and
# destructor do. None is sanitizer-instrumented (see above).
check_PROGRAMS += tests/shim/posix-dlctor
tests_shim_posix_dlctor_SOURCES = tests/shim/dlctor.c tests/shim/check.h
tests_shim_posix_dlctor_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_dlctor_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_dlctor_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_dlctor_LDADD = -ldl
check_LTLIBRARIES += tests/shim/libdlctor.la
tests_shim_libdlctor_la_SOURCES = tests/shim/dlctor-lib.c
tests_shim_libdlctor_la_CFLAGS = $(shim_posix_cflags)
tests_shim_libdlctor_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere $(AX_PTHREAD_CFLAGS)
tests_shim_libdlctor_la_LIBADD =
check_LTLIBRARIES += tests/shim/libdlclose.la
tests_shim_libdlclose_la_SOURCES = tests/shim/dlclose-lib.c
tests_shim_libdlclose_la_CFLAGS = $(shim_posix_cflags)
tests_shim_libdlclose_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere $(AX_PTHREAD_CFLAGS)
tests_shim_libdlclose_la_LIBADD =

# Forced unwinding at pthread_exit and cancellation (pthread-shim/unwind.c):
# C++ programs, a C one with -fexceptions. cxxmixed.c is a C frame without
# -fexceptions (setjmp cleanup buffers) between cxxexit's C++ frames.
if HAVE_CXX
check_PROGRAMS += tests/shim/posix-cxxexit
tests_shim_posix_cxxexit_SOURCES = tests/shim/cxxexit.cpp tests/shim/cxxmixed.c tests/shim/check.h
tests_shim_posix_cxxexit_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_cxxexit_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_cxxexit_CXXFLAGS = $(shim_posix_cflags)
tests_shim_posix_cxxexit_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_cxxexit_LDADD =

check_PROGRAMS += tests/shim/posix-cxxcancel
tests_shim_posix_cxxcancel_SOURCES = tests/shim/cxxcancel.cpp tests/shim/check.h
tests_shim_posix_cxxcancel_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_cxxcancel_CXXFLAGS = $(shim_posix_cflags)
tests_shim_posix_cxxcancel_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_cxxcancel_LDADD =
NTH_SHIM_CXX = yes
else
NTH_SHIM_CXX = no
endif
AM_TESTS_ENVIRONMENT += NTH_SHIM_CXX='$(NTH_SHIM_CXX)'; export NTH_SHIM_CXX;

check_PROGRAMS += tests/shim/posix-cleanupexc
tests_shim_posix_cleanupexc_SOURCES = tests/shim/cleanupexc.c tests/shim/check.h
tests_shim_posix_cleanupexc_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_cleanupexc_CFLAGS = $(shim_posix_cflags) -fexceptions
tests_shim_posix_cleanupexc_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_cleanupexc_LDADD =

# futexbar: threads that wait for each other with raw futex system calls.
check_PROGRAMS += tests/shim/posix-futexbar
tests_shim_posix_futexbar_SOURCES = tests/shim/futexbar.c tests/shim/check.h
tests_shim_posix_futexbar_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_futexbar_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_futexbar_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_futexbar_LDADD =

# omp: libgomp's team barrier waits with raw futexes. Only where the
# compiler has OpenMP (not in a ThreadSanitizer build: configure.ac);
# run-compare.sh says SKIP otherwise.
if HAVE_OPENMP
check_PROGRAMS += tests/shim/posix-omp
tests_shim_posix_omp_SOURCES = tests/shim/omp.c tests/shim/check.h
tests_shim_posix_omp_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_omp_CFLAGS = $(shim_posix_cflags) $(OPENMP_CFLAGS)
tests_shim_posix_omp_LDFLAGS = $(AX_PTHREAD_CFLAGS) $(OPENMP_CFLAGS)
tests_shim_posix_omp_LDADD =
endif

# rbar: Rust std's Barrier (raw futexes), where configure found rustc.
# MAKEFLAGS emptied: rustc looks for make's jobserver, which a recipe
# without '+' does not pass on, and warns.
EXTRA_DIST += tests/shim/rbar.rs
if HAVE_RUSTC
check_SCRIPTS += tests/shim/posix-rbar
CLEANFILES += tests/shim/posix-rbar
tests/shim/posix-rbar: $(srcdir)/tests/shim/rbar.rs
	$(AM_V_GEN)$(MKDIR_P) tests/shim && MAKEFLAGS= $(RUSTC) -O -o $@ $(srcdir)/tests/shim/rbar.rs
endif

# NTH_SHIM_BUILT (pthread-shim/shim.mk) says whether the build makes
# libnth-pthread.so; when it does, the tests fail if the library is missing.
AM_TESTS_ENVIRONMENT += NTH_SHIM_BUILT='$(NTH_SHIM_BUILT)'; export NTH_SHIM_BUILT;

TESTS += tests/shim/run-compare.sh
EXTRA_DIST += tests/shim/run-compare.sh
CLEANFILES += -r tests/shim/compare-out

# A frame that jumps over its thread's guard page: the runtime's line
# naming the thread under the shim (posix-bigframe jump).
TESTS += tests/shim/stackjump.sh
EXTRA_DIST += tests/shim/stackjump.sh

# nthrun's test preloads this probe in place of the shim.
check_LTLIBRARIES += tests/shim/libnthrun-probe.la
tests_shim_libnthrun_probe_la_SOURCES = tests/shim/nthrun-probe.c
tests_shim_libnthrun_probe_la_CFLAGS = $(WARN_CFLAGS)
tests_shim_libnthrun_probe_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
TESTS += tests/shim/nthrun.sh
EXTRA_DIST += tests/shim/nthrun.sh

# Unmodified Debian programs natively and under the shim.
TESTS += tests/shim/real-programs.sh
EXTRA_DIST += tests/shim/real-programs.sh

# The symbol version plan (pthread-shim/glibc-symbols.txt, gen-symver.sh,
# libnth-pthread.map, symver.h): a stub library exporting every listed
# version the shim's way, and a probe binary referencing each of them.
check_LTLIBRARIES += tests/shim/libsymver-stub.la
tests_shim_libsymver_stub_la_SOURCES = tests/shim/symver-stub.c
tests_shim_libsymver_stub_la_CPPFLAGS = -I$(top_srcdir)/pthread-shim
tests_shim_libsymver_stub_la_CFLAGS = $(WARN_CFLAGS)
tests_shim_libsymver_stub_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere \
	-Wl,--version-script=$(top_srcdir)/pthread-shim/libnth-pthread.map
EXTRA_tests_shim_libsymver_stub_la_DEPENDENCIES = $(top_srcdir)/pthread-shim/libnth-pthread.map
check_PROGRAMS += tests/shim/symver-probe
tests_shim_symver_probe_SOURCES = tests/shim/symver-probe.c
tests_shim_symver_probe_CPPFLAGS = -I$(top_srcdir)/pthread-shim
tests_shim_symver_probe_CFLAGS = $(WARN_CFLAGS)
tests_shim_symver_probe_LDFLAGS =
tests_shim_symver_probe_LDADD =
TESTS += tests/shim/symbol-binding.sh
EXTRA_DIST += tests/shim/symbol-binding.sh pthread-shim/glibc-symbols.txt \
	pthread-shim/gen-symver.sh pthread-shim/libnth-pthread.map pthread-shim/symver.h

# The runtime's own tests with the shim preloaded.
TESTS += tests/shim/nthlib-suite.sh
EXTRA_DIST += tests/shim/nthlib-suite.sh
CLEANFILES += -r tests/shim/suite-out

check_PROGRAMS += tests/shim/posix-c11
tests_shim_posix_c11_SOURCES = tests/shim/c11.c tests/shim/check.h
tests_shim_posix_c11_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_c11_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_c11_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_c11_LDADD =

check_PROGRAMS += tests/shim/posix-forkwait
tests_shim_posix_forkwait_SOURCES = tests/shim/forkwait.c tests/shim/check.h
tests_shim_posix_forkwait_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_forkwait_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_forkwait_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_forkwait_LDADD =

# The pthread_atfork(lock, unlock, unlock) pattern under relocking
# contenders: fork's prepare handler must get the lock (issue 4).
check_PROGRAMS += tests/shim/posix-forkrelock
tests_shim_posix_forkrelock_SOURCES = tests/shim/forkrelock.c tests/shim/check.h
tests_shim_posix_forkrelock_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_forkrelock_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_forkrelock_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_forkrelock_LDADD =

check_PROGRAMS += tests/shim/posix-sigwrite
tests_shim_posix_sigwrite_SOURCES = tests/shim/sigwrite.c tests/shim/check.h tests/shim/malloc_count.h
tests_shim_posix_sigwrite_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_sigwrite_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_sigwrite_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_sigwrite_LDADD =

check_PROGRAMS += tests/shim/posix-sigaction
tests_shim_posix_sigaction_SOURCES = tests/shim/sigaction.c tests/shim/check.h
tests_shim_posix_sigaction_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_sigaction_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_sigaction_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_sigaction_LDADD =

check_PROGRAMS += tests/shim/posix-sigjmp
tests_shim_posix_sigjmp_SOURCES = tests/shim/sigjmp.c tests/shim/check.h
tests_shim_posix_sigjmp_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_sigjmp_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_sigjmp_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_sigjmp_LDADD =

# Async-signal-safe calls from handlers under signal storms: sem_post
# (pthread-shim/sigdefer.c), pthread_self and pthread_kill to the caller.
check_PROGRAMS += tests/shim/posix-sigsafe
tests_shim_posix_sigsafe_SOURCES = tests/shim/sigsafe.c tests/shim/check.h tests/shim/malloc_count.h
tests_shim_posix_sigsafe_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_sigsafe_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_sigsafe_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_sigsafe_LDADD =

# The runtime's own calls never reach the shim's waiting wrappers: a
# program linked with libnth.so, run preloaded under an rtld-audit module
# that counts the calls into the shim by caller (rtcalls.sh).
check_PROGRAMS += tests/shim/rtcalls
tests_shim_rtcalls_SOURCES = tests/shim/rtcalls.c
tests_shim_rtcalls_CFLAGS = $(TEST_CFLAGS)
tests_shim_rtcalls_LDADD = $(TEST_LIBS)
check_LTLIBRARIES += tests/shim/librtcalls-audit.la
tests_shim_librtcalls_audit_la_SOURCES = tests/shim/rtcalls-audit.c
tests_shim_librtcalls_audit_la_CFLAGS = $(WARN_CFLAGS)
tests_shim_librtcalls_audit_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
tests_shim_librtcalls_audit_la_LIBADD =
TESTS += tests/shim/rtcalls.sh
EXTRA_DIST += tests/shim/rtcalls.sh

# A process-directed signal reaches a program whose every thread is in an
# untimed wait (sigidle.sh sends it from outside; each case natively and
# under the shim).
check_PROGRAMS += tests/shim/posix-sigidle
tests_shim_posix_sigidle_SOURCES = tests/shim/sigidle.c
tests_shim_posix_sigidle_CPPFLAGS = $(shim_posix_cppflags)
tests_shim_posix_sigidle_CFLAGS = $(shim_posix_cflags)
tests_shim_posix_sigidle_LDFLAGS = $(AX_PTHREAD_CFLAGS)
tests_shim_posix_sigidle_LDADD =
TESTS += tests/shim/sigidle.sh
EXTRA_DIST += tests/shim/sigidle.sh
