# Build fragment for pthread-shim: libnth-pthread.so, the nthrun launcher.

# "yes" once this fragment builds libnth-pthread.la: from then on the shim
# tests in tests/shim fail, rather than skip, when the library is missing.
NTH_SHIM_BUILT = no

# nthrun: sets NTH_* and LD_PRELOAD, then execs the program.
bin_PROGRAMS += pthread-shim/nthrun
pthread_shim_nthrun_SOURCES = pthread-shim/nthrun.c
pthread_shim_nthrun_CPPFLAGS = $(AM_CPPFLAGS) -DNTH_LIBDIR='"$(libdir)"'
pthread_shim_nthrun_LDADD =
