#!/bin/sh
# workload_ab.sh ROUNDS LABEL=BINDIR:CPUMGR[:CPUMGR_ARGS] ... -- the --short
# workload mixes of nth-malleable (and glibc, the same-run reference) for
# each variant in turn, ROUNDS times interleaved (A B C A B C ...), so that
# the machine's load drifts over every variant alike. Prints the driver's
# JSON lines with "variant" and "round" added, then a table of the mix
# figures: per variant, the median over rounds of makespan, efficiency,
# migrations/s, and makespan / glibc's of the same run.
# WORKLOAD_AB_BUILDS=LIST (default nth-malleable,glibc) names the builds each
# round runs; WORKLOAD_AB_SEQ=1 also runs the mixes with the sequential build,
# the efficiency a mix of perfectly sequential instances gets on this machine
# in the same round (columns "eff seq" and "eff/seq": what is the runtime's
# and what the formula's, bench/RESULTS.md "eff"). The table is
# bench/workload_ab_table.py's (it reads these JSON lines, so a saved copy
# can be tabulated again); its eff* column divides every variant of a round
# by one pooled sequential reference.
# Example (bench/RESULTS.md "mig2"):
#   bench/highprio.sh bench/workload_ab.sh 3 base=/tmp/base/build/bench:/tmp/base/build/cpumgr/cpumgr \
#       grace=build/bench:build/cpumgr/cpumgr:'--exit-grace 20'
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: workload_ab.sh ROUNDS LABEL=BINDIR:CPUMGR[:ARGS] ..." >&2; exit 2; }
rounds=$1; shift
builds=${WORKLOAD_AB_BUILDS:-nth-malleable,glibc}
case $builds in *nth-malleable*) ;; *) echo "workload_ab.sh: WORKLOAD_AB_BUILDS must include nth-malleable (got '$builds')" >&2; exit 2;; esac
seqmix=--no-seq-mix
case ${WORKLOAD_AB_SEQ:-0} in 0) ;; 1) seqmix= ;; *) echo "workload_ab.sh: WORKLOAD_AB_SEQ: bad value '$WORKLOAD_AB_SEQ' (accepted: 0, 1)" >&2; exit 2;; esac
case $rounds in ''|*[!0-9]*) echo "workload_ab.sh: ROUNDS: bad value '$rounds' (accepted: a count)" >&2; exit 2;; esac
out=$(mktemp)
trap 'rm -f "$out"' EXIT
r=1
while [ "$r" -le "$rounds" ]; do
    for v in "$@"; do
        label=${v%%=*}; rest=${v#*=}
        bindir=${rest%%:*}; rest=${rest#*:}
        cpumgr=${rest%%:*}; args=
        [ "$rest" != "$cpumgr" ] && args=${rest#*:}
        [ -x "$bindir/lu-nth" ] && [ -x "$cpumgr" ] || { echo "workload_ab.sh: $v: no $bindir/lu-nth or $cpumgr" >&2; exit 2; }
        echo "round $r: $label (load $(cut -d' ' -f1 /proc/loadavg))" >&2
        python3 "$here/workload" --short --json --bindir "$bindir" --cpumgr "$cpumgr" \
            --cpumgr-args "$args" --builds "$builds" --no-sweep $seqmix --no-plot --quiet |
            sed "s/^{/{\"variant\":\"$label\",\"round\":$r,/" | tee -a "$out"
    done
    r=$((r + 1))
done
python3 "$here/workload_ab_table.py" "$out"
