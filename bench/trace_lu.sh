#!/bin/bash
# trace_lu.sh -- tracing overhead on LU 1000 (bench/lu-nth), on vs off in
# one run: PAIRS pairs of processes, each pair one untraced and one traced
# (NTH_TRACE=FILE.bin, the runtime's own records: switches, regions,
# creates, ready-queue lengths), the order alternating from pair to pair so
# that drift favours neither; each process times RUNS factorisations
# (lu-nth --runs). Prints, one JSON object per line (DESIGN "Benchmark
# output"): the median time of each side, and the overhead
#   median(on) / median(off) - 1, in %        (target < 1 %)
# with the records per traced factorisation and their rate.
#
# usage: bench/trace_lu.sh [BUILDDIR [PAIRS [RUNS]]]   (default build 10 3)
# TRACE_LU_CONTROL=1: the "traced" side runs untraced too (an A/A run): the
# % it prints is the method's noise floor on this machine at this load.
# The traced runs write only the binary file (no conversion at exit): what
# is measured is the recording, not the JSON writer.
set -euo pipefail
bdir=${1:-build}; pairs=${2:-10}; runs=${3:-3}
lu=$bdir/bench/lu-nth
[ -x "$lu" ] || { echo "trace_lu.sh: $lu not built (make -C $bdir bench/lu-nth)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nth-trace-lu.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/off"; : > "$tmp/on"; : > "$tmp/recs"
one() {   # one on|off
    if [ "$1" = on ] && [ "${TRACE_LU_CONTROL:-0}" = 1 ]; then
        env -u NTH_TRACE timeout -s KILL 300 "$lu" --size 1000 --runs "$runs" --json 2>>"$tmp/err" > "$tmp/out"
        echo 0 >> "$tmp/recs"
    elif [ "$1" = on ]; then
        rm -f "$tmp"/t.bin*
        NTH_TRACE=$tmp/t.bin timeout -s KILL 300 "$lu" --size 1000 --runs "$runs" --json 2>>"$tmp/err" > "$tmp/out"
        # records of this process: file size / 32 minus the 64-byte header
        echo $(( ($(stat -c %s "$tmp"/t.bin) - 64) / 32 )) >> "$tmp/recs"
    else
        env -u NTH_TRACE timeout -s KILL 300 "$lu" --size 1000 --runs "$runs" --json 2>>"$tmp/err" > "$tmp/out"
    fi
    grep -q '"ok":true' "$tmp/out" || { echo "trace_lu.sh: lu-nth failed its check ($1): $(cat "$tmp/out" "$tmp/err")" >&2; exit 1; }
    sed -n 's/.*"value":\([0-9.e+-]*\).*/\1/p' "$tmp/out" >> "$tmp/$1"
}
for ((p = 0; p < pairs; p++)); do
    if ((p % 2)); then one on; one off; else one off; one on; fi
done
med() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
mon=$(med "$tmp/on"); moff=$(med "$tmp/off"); n=$(wc -l < "$tmp/on")
recs=$(med "$tmp/recs")
awk -v on="$mon" -v off="$moff" -v n="$n" -v pairs="$pairs" -v runs="$runs" -v recs="$recs" 'BEGIN {
    p = sprintf("{\"size\":1000,\"pairs\":%d,\"runs_per_process\":%d,\"samples_each\":%d", pairs, runs, n)
    printf "{\"bench\":\"lu_1000\",\"impl\":\"nth\",\"value\":%.6f,\"unit\":\"s\",\"params\":%s}}\n", off, p
    printf "{\"bench\":\"lu_1000\",\"impl\":\"%s\",\"value\":%.6f,\"unit\":\"s\",\"params\":%s,\"records_per_process\":%d}}\n", ENVIRON["TRACE_LU_CONTROL"] == 1 ? "nth-control" : "nth-traced", on, p, recs
    printf "{\"bench\":\"trace_overhead_lu\",\"impl\":\"%s\",", ENVIRON["TRACE_LU_CONTROL"] == 1 ? "control-untraced" : "nth"
    printf "\"value\":%.3f,\"unit\":\"%%\",\"params\":%s,\"records_per_lu\":%.0f,\"records_per_s\":%.0f}}\n", (on / off - 1) * 100, p, recs / runs, recs / runs / on
}'
