# Build fragment for bench/bench: add sources, programs and tests with +=.

# --- sync part (issue 3): bench/micro-sync ---
noinst_PROGRAMS += bench/micro-sync
bench_micro_sync_SOURCES = bench/micro_sync.c
bench_micro_sync_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) -pthread
bench_micro_sync_LDADD = libnth.la $(HWLOC_LIBS) -lpthread
