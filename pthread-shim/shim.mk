# Build fragment for pthread-shim: libnth-pthread.so, the nthrun launcher.

# "yes" once this fragment builds libnth-pthread.la: from then on the shim
# tests in tests/shim fail, rather than skip, when the library is missing.
NTH_SHIM_BUILT = no
