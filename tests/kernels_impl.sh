#!/bin/sh
# Every kernel build names itself in its JSON line as the workload driver
# and bench/RESULTS.md read it (DESIGN.md "Benchmark output"): lu-seq "seq",
# lu-glibc "glibc", lu-openmp "openmp", lu-nth "nth-fixed", lu-nth
# --malleable "nth-malleable", and the same for sor; bench is the kernel's
# name, the params its size and team. kernels_validate.sh checked lu-glibc's
# line only. The malleable run has no cpumgr (NTH_CPUMGR=off): it runs
# alone, which is not what is checked here.
set -u
b=${top_builddir:-.}/bench
command -v jq >/dev/null || { echo "jq missing: scripts/install-deps.sh installs it"; exit 99; }
OMP_WAIT_POLICY=passive; NTH_CPUMGR=off; export OMP_WAIT_POLICY NTH_CPUMGR
fail=0
# one KERNEL PROGRAM IMPL THREADS [OPTIONS]: one JSON line per run, each with these fields
one() {
    k=$1 prog=$2 impl=$3 t=$4; shift 4
    if [ ! -x "$b/$prog" ]; then
        case $prog in *openmp*|*nth*) echo "skip: $prog not built"; return ;; esac
        echo "FAIL: $b/$prog missing"; fail=1; return
    fi
    out=$(timeout -s KILL 60 "$b/$prog" --size 40 --threads "$t" --runs 2 --json "$@" 2>&1); rc=$?
    if [ $rc -ne 0 ] || ! printf '%s\n' "$out" | jq -e -s --arg k "$k" --arg i "$impl" --argjson t "$t" \
        'length == 2 and all(.[]; .bench == $k and .impl == $i and .unit == "s" and .value > 0
         and .params.size == 40 and .params.threads == $t and .check.ok == true)' >/dev/null 2>&1; then
        echo "FAIL ($rc): $prog $* should report impl $impl: $out"; fail=1; return
    fi
    echo "ok: $prog $* -> $impl"
}
for k in lu sor; do
    one $k $k-seq seq 1
    one $k $k-glibc glibc 2
    one $k $k-openmp openmp 2
    one $k $k-nth nth-fixed 2
    one $k $k-nth nth-malleable 2 --malleable
done
exit $fail
