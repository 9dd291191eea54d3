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
