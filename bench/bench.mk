# Build fragment for bench/bench: benchmark programs. `make bench-programs`
# builds them all (run-demo.sh); other parts add theirs to bench_programs.
bench_programs = bench/micro
noinst_PROGRAMS += bench/micro
bench_micro_SOURCES = bench/micro.c
bench_micro_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(URCU_CFLAGS) -pthread
# -static: link libnth's archive, to reach the internal context switch.
bench_micro_LDFLAGS = -static -pthread
bench_micro_LDADD = libnth.la $(HWLOC_LIBS) $(URCU_LIBS)


# --- sync part (issue 3): bench/micro-sync ---
bench_programs += bench/micro-sync
noinst_PROGRAMS += bench/micro-sync
bench_micro_sync_SOURCES = bench/micro_sync.c bench/pingpong.h
bench_micro_sync_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) -pthread
bench_micro_sync_LDADD = libnth.la $(HWLOC_LIBS) -lpthread

# ---- LU and SOR kernels (bench/kernels), one source each, one program per
# team backend; the multiprogrammed workload driver and its plots. ----------
# -ffp-contract=off: no fused multiply-add, so every build rounds alike and
# SOR's parallel Gtotal equals the sequential one bit for bit.
# -falign-loops=64: the hot loops (LU's daxpy is 28 bytes) start on a
# 64-byte line in every build, so where they land does not depend on the
# code linked before them. Found chasing a merged build whose lu-nth ran
# LU 1000 2x slower than another build's (0.305 s against 0.13-0.15 s, one
# thread, interleaved) with identical update_columns code, 88% of the time
# in it; its inner loop sat at 0x3ff0, its store across 0x4000. The cause
# was NOT established (a rebuild with the loop at the same address ran
# 0.15 s minutes later); aligning only removes code placement as a factor.
KERNEL_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) -ffp-contract=off -falign-loops=64
KERNEL_LIBS = $(HWLOC_LIBS) -lm
kernel_common = bench/kernels/harness.c bench/kernels/harness.h bench/kernels/migrations.c bench/kernels/migrations.h bench/kernels/jrandom.h \
	bench/kernels/team.h bench/kernels/team_cpus.c
kernel_programs = bench/lu-seq bench/sor-seq bench/lu-glibc bench/sor-glibc
bench_lu_seq_SOURCES = bench/kernels/lu.c bench/kernels/team_seq.c $(kernel_common)
bench_lu_seq_CFLAGS = $(KERNEL_CFLAGS)
bench_lu_seq_LDADD = $(KERNEL_LIBS)
bench_sor_seq_SOURCES = bench/kernels/sor.c bench/kernels/team_seq.c $(kernel_common)
bench_sor_seq_CFLAGS = $(KERNEL_CFLAGS)
bench_sor_seq_LDADD = $(KERNEL_LIBS)
bench_lu_glibc_SOURCES = bench/kernels/lu.c bench/kernels/team_glibc.c $(kernel_common)
bench_lu_glibc_CFLAGS = $(KERNEL_CFLAGS) -pthread
bench_lu_glibc_LDADD = $(KERNEL_LIBS) -lpthread
bench_sor_glibc_SOURCES = bench/kernels/sor.c bench/kernels/team_glibc.c $(kernel_common)
bench_sor_glibc_CFLAGS = $(KERNEL_CFLAGS) -pthread
bench_sor_glibc_LDADD = $(KERNEL_LIBS) -lpthread
if HAVE_OPENMP
kernel_programs += bench/lu-openmp bench/sor-openmp
bench_lu_openmp_SOURCES = bench/kernels/lu.c bench/kernels/team_openmp.c $(kernel_common)
bench_lu_openmp_CFLAGS = $(KERNEL_CFLAGS) $(OPENMP_CFLAGS)
bench_lu_openmp_LDFLAGS = $(AM_LDFLAGS) $(OPENMP_CFLAGS)
bench_lu_openmp_LDADD = $(KERNEL_LIBS)
bench_sor_openmp_SOURCES = bench/kernels/sor.c bench/kernels/team_openmp.c $(kernel_common)
bench_sor_openmp_CFLAGS = $(KERNEL_CFLAGS) $(OPENMP_CFLAGS)
bench_sor_openmp_LDFLAGS = $(AM_LDFLAGS) $(OPENMP_CFLAGS)
bench_sor_openmp_LDADD = $(KERNEL_LIBS)
endif
# libnth builds (team_nth.c on nth_parallel), linked with libnth's archive
# (-static: libtool's "use the .a"), so that bench/lu-nth is the program
# itself and not a libtool wrapper script, whose shell start-up would count
# in the workload's process wall times. One program serves nth-fixed
# (--threads N) and nth-malleable (--malleable: team size from
# nth_cpus_assigned() at every region). tests/kernels_*.sh,
# bench/standalone.sh and bench/workload pick them up by name.
kernel_programs += bench/lu-nth bench/sor-nth
bench_lu_nth_SOURCES = bench/kernels/lu.c bench/kernels/team_nth.c $(kernel_common)
bench_lu_nth_CFLAGS = $(KERNEL_CFLAGS)
bench_lu_nth_LDFLAGS = -static
bench_lu_nth_LDADD = libnth.la $(KERNEL_LIBS)
# lu-nth whose runs alternate tracing on, off and off again in one process
# (bench/trace_lu_ab.sh); it sets libnth's record flag, hence the archive.
bench_programs += bench/lu-trace-ab
noinst_PROGRAMS += bench/lu-trace-ab
bench_lu_trace_ab_SOURCES = bench/kernels/lu.c bench/kernels/team_nth.c bench/trace_lu_ab.c $(kernel_common)
bench_lu_trace_ab_CFLAGS = $(KERNEL_CFLAGS) -I$(top_srcdir)/nthlib
bench_lu_trace_ab_LDFLAGS = -static
bench_lu_trace_ab_LDADD = libnth.la $(KERNEL_LIBS)
# What tracing adds to one empty 2-member region, on/off/A-A in one process
# (bench/trace_regions_ab.c): LU's per-region overhead, magnified.
bench_programs += bench/trace-regions-ab
noinst_PROGRAMS += bench/trace-regions-ab
bench_trace_regions_ab_SOURCES = bench/trace_regions_ab.c
bench_trace_regions_ab_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/nthlib
bench_trace_regions_ab_LDFLAGS = -static
bench_trace_regions_ab_LDADD = libnth.la $(HWLOC_LIBS) $(URCU_LIBS) $(ZLIB_LIBS)
bench_sor_nth_SOURCES = bench/kernels/sor.c bench/kernels/team_nth.c $(kernel_common)
bench_sor_nth_CFLAGS = $(KERNEL_CFLAGS)
bench_sor_nth_LDFLAGS = -static
bench_sor_nth_LDADD = libnth.la $(KERNEL_LIBS)
# Region and barrier overhead of each team backend (bench/regions.sh).
kernel_programs += bench/regions-glibc bench/regions-nth
bench_regions_glibc_SOURCES = bench/kernels/regions.c bench/kernels/team_glibc.c \
	bench/kernels/team.h bench/kernels/team_cpus.c
bench_regions_glibc_CFLAGS = $(KERNEL_CFLAGS) -pthread
bench_regions_glibc_LDADD = $(KERNEL_LIBS) -lpthread
bench_regions_nth_SOURCES = bench/kernels/regions.c bench/kernels/team_nth.c \
	bench/kernels/team.h bench/kernels/team_cpus.c
bench_regions_nth_CFLAGS = $(KERNEL_CFLAGS)
bench_regions_nth_LDFLAGS = -static
bench_regions_nth_LDADD = libnth.la $(KERNEL_LIBS)
if HAVE_OPENMP
kernel_programs += bench/regions-openmp
bench_regions_openmp_SOURCES = bench/kernels/regions.c bench/kernels/team_openmp.c \
	bench/kernels/team.h bench/kernels/team_cpus.c
bench_regions_openmp_CFLAGS = $(KERNEL_CFLAGS) $(OPENMP_CFLAGS)
bench_regions_openmp_LDFLAGS = $(AM_LDFLAGS) $(OPENMP_CFLAGS)
bench_regions_openmp_LDADD = $(KERNEL_LIBS)
endif
noinst_PROGRAMS += $(kernel_programs)
EXTRA_DIST += bench/workload bench/plot.sh bench/standalone.sh bench/regions.sh bench/RESULTS.md bench/highprio.sh \
	bench/workload_ab.sh bench/workload_ab_table.py bench/grant_gaps.py bench/mig_classify.py
bench_programs += $(kernel_programs)

# ---- cpumgr latencies (bench/cpumgr.c): reallocation and bounded reclaim,
# with a real daemon and an nthlib application. ------------------------------
bench_programs += bench/cpumgr-bench
noinst_PROGRAMS += bench/cpumgr-bench
bench_cpumgr_bench_SOURCES = bench/cpumgr.c
bench_cpumgr_bench_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) -I$(top_srcdir)/nthlib
bench_cpumgr_bench_LDFLAGS = -static
bench_cpumgr_bench_LDADD = libnth.la $(HWLOC_LIBS) $(URCU_LIBS) -lrt

# Dead-client reclaim: kill -9 of one of two applications until the other
# holds every CPU (bench/cpumgr_dead.c; --cpumgr PATH, so two daemons can be
# compared A/B). Needs only the segment layout header.
bench_programs += bench/cpumgr-dead
noinst_PROGRAMS += bench/cpumgr-dead
bench_cpumgr_dead_SOURCES = bench/cpumgr_dead.c
bench_cpumgr_dead_CFLAGS = $(AM_CFLAGS)
bench_cpumgr_dead_LDADD = -lrt

# A timer wake-up on a busy CPU, default against short EEVDF slice (the
# cpumgr watcher's and daemon's setting, nthlib/sched_slice.h).
bench_programs += bench/slice-wake
noinst_PROGRAMS += bench/slice-wake
bench_slice_wake_SOURCES = bench/slice_wake.c
bench_slice_wake_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/nthlib -pthread
bench_slice_wake_LDFLAGS = -pthread
bench_slice_wake_LDADD =

# ---- tracing overhead (branch traceint) ------------------------------------
# -static: libnth's archive, to switch the record flag and convert in-process.
bench_programs += bench/trace_overhead
noinst_PROGRAMS += bench/trace_overhead
bench_trace_overhead_SOURCES = bench/trace_overhead.c
bench_trace_overhead_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(URCU_CFLAGS) -I$(top_srcdir)/nthlib -pthread
bench_trace_overhead_LDFLAGS = -static -pthread
bench_trace_overhead_LDADD = libnth.la $(HWLOC_LIBS) $(URCU_LIBS) $(ZLIB_LIBS)
# The record path alone (callgrind-countable): bench/trace_record_cost.c.
bench_programs += bench/trace-record-cost
noinst_PROGRAMS += bench/trace-record-cost
bench_trace_record_cost_SOURCES = bench/trace_record_cost.c
bench_trace_record_cost_LDADD = libnth.la
# Each record-path entry's cost per call, tracing on and off, and the drain's
# per record (bench/trace_hook_cost.c, for bench/trace_cost.sh's bound).
bench_programs += bench/trace-hook-cost
noinst_PROGRAMS += bench/trace-hook-cost
bench_trace_hook_cost_SOURCES = bench/trace_hook_cost.c
bench_trace_hook_cost_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(URCU_CFLAGS) -I$(top_srcdir)/nthlib
bench_trace_hook_cost_LDFLAGS = -static
bench_trace_hook_cost_LDADD = libnth.la $(HWLOC_LIBS) $(URCU_LIBS) $(ZLIB_LIBS)
EXTRA_DIST += bench/trace_cost.sh

# ---- the pthread shim against glibc (bench/shim.sh): a plain pthread
# program, never linked with nthlib, timed natively and under the shim. ----
bench_programs += bench/shim-pingpong
noinst_PROGRAMS += bench/shim-pingpong
bench_shim_pingpong_SOURCES = bench/shim/pingpong.c
bench_shim_pingpong_CFLAGS = $(WARN_CFLAGS) $(AX_PTHREAD_CFLAGS)
bench_shim_pingpong_LDFLAGS = $(AX_PTHREAD_CFLAGS)
bench_shim_pingpong_LDADD =
EXTRA_DIST += bench/shim.sh bench/mutex_ab.sh bench/futex_ab.sh
.PHONY: bench-shim
bench-shim: bench/shim-pingpong libnth-pthread.la
	$(SHELL) $(top_srcdir)/bench/shim.sh $(BENCH_SHIM_REPS)

# The I/O wrappers' fast path (bench/shim-io.sh): write/read that do not
# block, and write from a signal handler, natively and under the shim (and
# under another build of it named by NTH_SHIM_BASE), ratios in one run.
bench_programs += bench/shim-iofast
noinst_PROGRAMS += bench/shim-iofast
bench_shim_iofast_SOURCES = bench/shim/iofast.c
bench_shim_iofast_CFLAGS = $(WARN_CFLAGS) $(AX_PTHREAD_CFLAGS)
bench_shim_iofast_LDFLAGS = $(AX_PTHREAD_CFLAGS)
bench_shim_iofast_LDADD =
EXTRA_DIST += bench/shim-io.sh bench/teambar-ab.sh
.PHONY: bench-shim-io
bench-shim-io: bench/shim-iofast libnth-pthread.la
	$(SHELL) $(top_srcdir)/bench/shim-io.sh $(BENCH_SHIM_IO_REPS)

# The cost of the default thread stack size (bench/shim/stacks.c): N
# threads alive at once with 1 MiB and 8 MiB stacks, natively or under the
# shim (nthrun), ratios between the sizes of one run.
bench_programs += bench/shim-stacks
noinst_PROGRAMS += bench/shim-stacks
bench_shim_stacks_SOURCES = bench/shim/stacks.c
bench_shim_stacks_CFLAGS = $(WARN_CFLAGS) $(AX_PTHREAD_CFLAGS)
bench_shim_stacks_LDFLAGS = $(AX_PTHREAD_CFLAGS)
bench_shim_stacks_LDADD =

# Keep last: the prerequisite list is expanded when this rule is read.
.PHONY: bench-programs
bench-programs: $(bench_programs)

# Placement cost on synthetic topologies of 64-512 PUs (bench/cpumgr_place.c):
# what each rebalance spends choosing CPUs.
bench_programs += bench/cpumgr-place
noinst_PROGRAMS += bench/cpumgr-place
bench_cpumgr_place_SOURCES = bench/cpumgr_place.c
bench_cpumgr_place_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) -I$(top_srcdir)/cpumgr
bench_cpumgr_place_LDADD = cpumgr/libcpumgr-core.la $(HWLOC_LIBS)

# ---- the cost of many VPs (issue 5/runtime): bench/vps_scale.sh compiles
# bench/vps_tiny.c against each build it is given.
EXTRA_DIST += bench/vps_scale.sh bench/vps_tiny.c
