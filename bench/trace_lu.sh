#!/bin/bash
# trace_lu.sh -- tracing overhead on LU 1000 (bench/lu-nth), on vs off in
# one run: PAIRS rounds of processes, each round one untraced and one traced
# process (NTH_TRACE=FILE.bin, the runtime's own records: switches, SYNCH
# objects, regions, creates, ready-queue lengths), the order alternating from
# round to round so that drift favours neither; each process times RUNS
# factorisations (lu-nth --runs). Prints, one JSON object per line (DESIGN
# "Benchmark output"): the median and minimum time of each side, and
#   trace_overhead_lu  value: median over rounds of (on / off - 1) in %, the
#                      paired ratio of the round's two processes (their
#                      median runs), with a distribution-free 95 % confidence
#                      interval of that median (order statistics, sign test);
#                      min_of_n: min(on) / min(off) - 1 over all runs, in %;
#                      records per factorisation and records per second.
# Target: < 1 %.
#
# usage: bench/trace_lu.sh [BUILDDIR [PAIRS [RUNS]]]   (default build 10 3)
# TRACE_LU_CONTROL=1: the "traced" side runs untraced too (an A/A run): the
#   % it prints is the method's noise floor on this machine at this load.
# TRACE_LU_BASE=DIR: a second build (e.g. the commit before a change) whose
#   untraced and traced processes join every round (4 per round, the order
#   rotating), so before and after are measured in the same run; its lines
#   have "build":"base".
# TRACE_LU_CALLGRIND=1: afterwards, instructions of one LU 1000 untraced and
#   traced per build (valgrind --tool=callgrind, NTH_VPS=1 --threads 2 --runs 1:
#   one VP, so no spin whose length depends on timing), load-independent.
# TRACE_LU_PERF=1: each process also runs under `perf stat -e
#   task-clock,cycles:u,instructions:u` (the whole process: start-up, matrix
#   set-up, RUNS factorisations, the trace's flush); afterwards one line per
#   counter: medians of the on and off processes, their ratio, and the median
#   of the rounds' paired ratios ("trace_overhead_lu_perf"). A counter the
#   machine does not expose (cycles:u and instructions:u in many VMs: no PMU)
#   says "not supported" and is left out.
# The traced runs write only the binary file (no conversion at exit): what
# is measured is the recording, not the JSON writer.
set -euo pipefail
bdir=${1:-build}; pairs=${2:-10}; runs=${3:-3}
declare -A dir=([new]=$bdir)
builds=(new)
if [ -n "${TRACE_LU_BASE:-}" ]; then dir[base]=$TRACE_LU_BASE; builds+=(base); fi
for b in "${builds[@]}"; do
    [ -x "${dir[$b]}/bench/lu-nth" ] || { echo "trace_lu.sh: ${dir[$b]}/bench/lu-nth not built (make -C ${dir[$b]} bench/lu-nth)" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nth-trace-lu.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
perf_events=(task-clock cycles:u instructions:u)
for b in "${builds[@]}"; do for s in on off; do : > "$tmp/$b.$s"; : > "$tmp/$b.$s.proc"
    for e in "${perf_events[@]}"; do : > "$tmp/$b.$s.perf.$e"; done; done; : > "$tmp/$b.recs"; done
if [ "${TRACE_LU_PERF:-0}" = 1 ]; then
    command -v perf >/dev/null || { echo "trace_lu.sh: TRACE_LU_PERF=1 needs perf" >&2; exit 2; }
    PERF=(perf stat -x, -o "$tmp/perf" -e "$(IFS=,; echo "${perf_events[*]}")" --)
else
    PERF=()
fi
# perf_keep BUILD SIDE: the counters of the process just run, one file each
perf_keep() {
    [ ${#PERF[@]} -gt 0 ] || return 0
    local e v
    for e in "${perf_events[@]}"; do
        v=$(awk -F, -v e="$e" '$3 == e && $1 ~ /^[0-9.]+$/ {print $1}' "$tmp/perf")
        [ -z "$v" ] || echo "$v" >> "$tmp/$1.$2.perf.$e"
    done
}
med() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
one() {   # one BUILD on|off
    local lu=${dir[$1]}/bench/lu-nth
    if [ "$2" = on ] && [ "${TRACE_LU_CONTROL:-0}" != 1 ]; then
        rm -f "$tmp"/t.bin*
        NTH_TRACE=$tmp/t.bin timeout -s KILL 300 "${PERF[@]}" "$lu" --size 1000 --runs "$runs" --json 2>>"$tmp/err" > "$tmp/out"
        # records of this process: file size / 32 minus the 64-byte header
        echo $(( ($(stat -c %s "$tmp"/t.bin) - 64) / 32 )) >> "$tmp/$1.recs"
    else
        env -u NTH_TRACE timeout -s KILL 300 "${PERF[@]}" "$lu" --size 1000 --runs "$runs" --json 2>>"$tmp/err" > "$tmp/out"
        [ "$2" = off ] || echo 0 >> "$tmp/$1.recs"
    fi
    perf_keep "$1" "$2"
    grep -q '"ok":true' "$tmp/out" || { echo "trace_lu.sh: lu-nth failed its check ($1 $2): $(cat "$tmp/out" "$tmp/err")" >&2; exit 1; }
    sed -n 's/.*"value":\([0-9.e+-]*\).*/\1/p' "$tmp/out" > "$tmp/proc"
    cat "$tmp/proc" >> "$tmp/$1.$2"
    med < "$tmp/proc" >> "$tmp/$1.$2.proc"
}
sides=()
for b in "${builds[@]}"; do sides+=("$b off" "$b on"); done
ns=${#sides[@]}
for ((p = 0; p < pairs; p++)); do
    for ((k = 0; k < ns; k++)); do
        if ((p % 2)); then i=$(( (ns - 1 - k + p / 2) % ns )); else i=$(( (k + p / 2) % ns )); fi
        one ${sides[$i]}
    done
done
label=$([ "${TRACE_LU_CONTROL:-0}" = 1 ] && echo control || echo traced)
for b in "${builds[@]}"; do
    paste "$tmp/$b.on.proc" "$tmp/$b.off.proc" | awk '{print ($1 / $2 - 1) * 100}' | sort -g > "$tmp/$b.ratio"
    awk -v b="$b" -v lab="$label" -v pairs="$pairs" -v runs="$runs" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" \
        -v on="$(med < "$tmp/$b.on")" -v off="$(med < "$tmp/$b.off")" \
        -v onmin="$(sort -g "$tmp/$b.on" | head -n1)" -v offmin="$(sort -g "$tmp/$b.off" | head -n1)" \
        -v n="$(wc -l < "$tmp/$b.on")" -v recs="$(med < "$tmp/$b.recs")" '
    { r[NR] = $1 }
    END {
        m = NR
        med = (m % 2) ? r[(m + 1) / 2] : (r[m / 2] + r[m / 2 + 1]) / 2
        k = int((m + 1) / 2 - 0.98 * sqrt(m)); if (k < 1) k = 1
        p = sprintf("{\"size\":1000,\"pairs\":%d,\"runs_per_process\":%d,\"samples_each\":%d,\"build\":\"%s\",\"load\":\"%s\"", pairs, runs, n, b, load)
        printf "{\"bench\":\"lu_1000\",\"impl\":\"nth\",\"value\":%.6f,\"unit\":\"s\",\"params\":%s},\"min\":%.6f}\n", off, p, offmin
        printf "{\"bench\":\"lu_1000\",\"impl\":\"nth-%s\",\"value\":%.6f,\"unit\":\"s\",\"params\":%s,\"records_per_process\":%d},\"min\":%.6f}\n", lab, on, p, recs, onmin
        printf "{\"bench\":\"trace_overhead_lu\",\"impl\":\"%s\",\"value\":%.3f,\"unit\":\"%%\",\"params\":%s},", lab == "control" ? "control-untraced" : "nth", med, p
        printf "\"ci95\":[%.3f,%.3f],\"min_of_n\":%.3f,\"median_of_all\":%.3f,\"records_per_lu\":%.0f,\"records_per_s\":%.0f}\n", r[k], r[m - k + 1], (onmin / offmin - 1) * 100, (on / off - 1) * 100, recs / runs, recs / runs / on
    }' "$tmp/$b.ratio"
done
if [ ${#PERF[@]} -gt 0 ]; then
    for b in "${builds[@]}"; do for e in "${perf_events[@]}"; do
        on=$tmp/$b.on.perf.$e; off=$tmp/$b.off.perf.$e
        if [ ! -s "$on" ] || [ ! -s "$off" ]; then
            printf '{"bench":"trace_overhead_lu_perf","event":"%s","build":"%s","value":null,"note":"not supported"}\n' "$e" "$b"
            continue
        fi
        paste "$on" "$off" | awk '{print ($1 / $2 - 1) * 100}' | sort -g > "$tmp/pr"
        awk -v e="$e" -v b="$b" -v lab="$label" -v pairs="$pairs" -v runs="$runs" \
            -v load="$(cut -d' ' -f1-3 /proc/loadavg)" -v on="$(med < "$on")" -v off="$(med < "$off")" '
        { r[NR] = $1 }
        END {
            m = NR
            med = (m % 2) ? r[(m + 1) / 2] : (r[m / 2] + r[m / 2 + 1]) / 2
            k = int((m + 1) / 2 - 0.98 * sqrt(m)); if (k < 1) k = 1
            printf "{\"bench\":\"trace_overhead_lu_perf\",\"impl\":\"%s\",\"event\":\"%s\",\"value\":%.3f,\"unit\":\"%%\",", lab, e, (on / off - 1) * 100
            printf "\"params\":{\"size\":1000,\"pairs\":%d,\"runs_per_process\":%d,\"build\":\"%s\",\"load\":\"%s\"},", pairs, runs, b, load
            printf "\"median_on\":%.6g,\"median_off\":%.6g,\"paired_median\":%.3f,\"ci95\":[%.3f,%.3f]}\n", on, off, med, r[k], r[m - k + 1]
        }' "$tmp/pr"
    done; done
fi
[ "${TRACE_LU_CALLGRIND:-0}" = 1 ] || exit 0
command -v valgrind >/dev/null || { echo "trace_lu.sh: valgrind missing: no instruction counts" >&2; exit 0; }
cg() {   # cg BUILD [TRACEFILE]: instructions of one LU 1000 on one VP
    local lu=${dir[$1]}/bench/lu-nth
    if [ -n "${2:-}" ]; then set -- "$1" env NTH_TRACE="$2"; else set -- "$1" env -u NTH_TRACE; fi
    shift
    NTH_VPS=1 timeout -s KILL 600 "$@" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        "$lu" --size 1000 --threads 2 --runs 1 2>&1 >/dev/null | sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
for b in "${builds[@]}"; do
    rm -f "$tmp"/c.bin*
    off=$(cg "$b"); on=$(cg "$b" "$tmp/c.bin")
    recs=$(( ($(stat -c %s "$tmp"/c.bin) - 64) / 32 ))
    awk -v b="$b" -v on="$on" -v off="$off" -v recs="$recs" 'BEGIN {
        printf "{\"bench\":\"trace_overhead_lu_instructions\",\"impl\":\"nth\",\"value\":%.4f,\"unit\":\"%%\",\"params\":{\"size\":1000,\"vps\":1,\"threads\":2,\"build\":\"%s\"},\"untraced\":%.0f,\"traced\":%.0f,\"records\":%d,\"instructions_per_record\":%.0f}\n", (on / off - 1) * 100, b, off, on, recs, (on - off) / recs
    }'
done
