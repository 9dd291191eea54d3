#!/bin/bash
# trace_lu_prof.sh -- where tracing's overhead on LU goes, by function: a
# perf profile (cpu-clock, 9999 Hz) of bench/lu-trace-ab processes, each
# sample given to the run (arm on / off / aa) it fell in, then compared
# per block (bench/trace_lu_prof.py). Unlike a wall-clock A/B, the samples
# in the trace's own functions are a direct, low-noise measure of its CPU
# cost; the other groups (LU's work, the waits) show any indirect cost, at
# the noise of the machine.
#
# With several build directories, their processes alternate (round r runs
# them in turn, the order reversed every other round), so a before/after
# shares the machine's moments. Needs perf (perf record/script; a VM
# without a PMU is fine: cpu-clock is a software event) and python3.
#
# usage: bench/trace_lu_prof.sh OUTDIR ROUNDS BUILDDIR...   (BLOCKS 31, SIZE 1000;
#        TRACE_PROF_BLOCKS, TRACE_PROF_SIZE change them)
# Leaves OUTDIR/<basename of BUILDDIR>/{runsP.jsonl,scriptP.txt} and prints
# trace_lu_prof.py's table for each build.
set -euo pipefail
out=${1:?usage: trace_lu_prof.sh OUTDIR ROUNDS BUILDDIR...}; rounds=${2:?usage: trace_lu_prof.sh OUTDIR ROUNDS BUILDDIR...}; shift 2
(( $# >= 1 )) || { echo "trace_lu_prof.sh: no build directory" >&2; exit 2; }
blocks=${TRACE_PROF_BLOCKS:-31}; size=${TRACE_PROF_SIZE:-1000}
[[ $rounds =~ ^[1-9][0-9]*$ && $blocks =~ ^[1-9][0-9]*$ && $size =~ ^[1-9][0-9]*$ ]] ||
    { echo "trace_lu_prof.sh: ROUNDS, BLOCKS and SIZE must be positive integers" >&2; exit 2; }
command -v perf >/dev/null || { echo "trace_lu_prof.sh: needs perf" >&2; exit 2; }
for b in "$@"; do
    [ -x "$b/bench/lu-trace-ab" ] || { echo "trace_lu_prof.sh: $b/bench/lu-trace-ab not built" >&2; exit 2; }
done
here=$(cd "$(dirname "$0")" && pwd)
builds=("$@")
for ((r = 0; r < rounds; r++)); do
    for b in "${builds[@]}"; do
        d=$out/$(basename "$b"); mkdir -p "$d"; rm -f "$d"/t.bin*
        NTH_TRACE=$d/t.bin timeout -s KILL 600 perf record -q -F 9999 -k CLOCK_MONOTONIC -o "$d/p$r.data" \
            "$b/bench/lu-trace-ab" --size "$size" --runs $((3 * blocks)) --json > "$d/runs$r.jsonl" 2> "$d/err$r.txt" ||
            { echo "trace_lu_prof.sh: $b/bench/lu-trace-ab failed: $(tail -n 3 "$d/err$r.txt")" >&2; exit 1; }
        perf script -i "$d/p$r.data" -F time,ip,sym 2>/dev/null | awk '{print $1, $3}' > "$d/script$r.txt"
        rm -f "$d/p$r.data" "$d/p$r.data.old" "$d"/t.bin*
    done
    mapfile -t builds < <(printf '%s\n' "${builds[@]}" | tac)
done
for b in "$@"; do
    python3 "$here/trace_lu_prof.py" "$out/$(basename "$b")" --symbols 12
done
