/*
 * symver-stub.c -- a library that exports every symbol of
 * pthread-shim/glibc-symbols.txt exactly the way libnth-pthread.so does
 * (SHIM_EXPORT and libnth-pthread.map), with empty bodies. It lets
 * symbol-binding.sh check the version plan itself, independently of the
 * shim's code: a versioned reference of a binary must bind to it.
 * Never run anything with it preloaded beyond ld.so's binding phase.
 */
#include "symver.h"

#define STUB(sym)                       \
    void nth_shim_##sym(void);          \
    void nth_shim_##sym(void) {}        \
    SHIM_EXPORT(sym)

NTH_SHIM_SYMBOLS(STUB)
