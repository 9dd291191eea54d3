# Build fragment for bench/bench: benchmark programs. `make bench-programs`
# builds them all (run-demo.sh); other parts add theirs to bench_programs.
bench_programs = bench/micro
noinst_PROGRAMS += bench/micro
bench_micro_SOURCES = bench/micro.c
bench_micro_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(URCU_CFLAGS) -pthread
# -static: link libnth's archive, to reach the internal context switch.
bench_micro_LDFLAGS = -static -pthread
bench_micro_LDADD = libnth.la $(HWLOC_LIBS) $(URCU_LIBS)

.PHONY: bench-programs
bench-programs: $(bench_programs)

# --- sync part (issue 3): bench/micro-sync ---
bench_programs += bench/micro-sync
noinst_PROGRAMS += bench/micro-sync
bench_micro_sync_SOURCES = bench/micro_sync.c
bench_micro_sync_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) -pthread
bench_micro_sync_LDADD = libnth.la $(HWLOC_LIBS) -lpthread
