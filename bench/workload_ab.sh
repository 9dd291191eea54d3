#!/bin/sh
# workload_ab.sh ROUNDS LABEL=BINDIR:CPUMGR[:CPUMGR_ARGS] ... -- the --short
# workload mixes of nth-malleable (and glibc, the same-run reference) for
# each variant in turn, ROUNDS times interleaved (A B C A B C ...), so that
# the machine's load drifts over every variant alike. Prints the driver's
# JSON lines with "variant" and "round" added, then a table of the mix
# figures: per variant, the median over rounds of makespan, efficiency,
# migrations/s, and makespan / glibc's of the same run.
# Example (bench/RESULTS.md "mig2"):
#   bench/highprio.sh bench/workload_ab.sh 3 base=/tmp/base/build/bench:/tmp/base/build/cpumgr/cpumgr \
#       grace=build/bench:build/cpumgr/cpumgr:'--exit-grace 20'
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: workload_ab.sh ROUNDS LABEL=BINDIR:CPUMGR[:ARGS] ..." >&2; exit 2; }
rounds=$1; shift
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
            --cpumgr-args "$args" --builds nth-malleable,glibc --no-sweep --no-seq-mix --no-plot --quiet |
            sed "s/^{/{\"variant\":\"$label\",\"round\":$r,/" | tee -a "$out"
    done
    r=$((r + 1))
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def val(v, r, impl, bench, mix):
    for o in rows:
        if (o["variant"], o["round"], o["impl"], o["bench"]) == (v, r, impl, bench) and \
           o.get("params", {}).get("mix") == mix:
            return o["value"]
    return None
variants = list(dict.fromkeys(o["variant"] for o in rows))
mixes = list(dict.fromkeys(o["params"]["mix"] for o in rows if o["bench"] == "workload_makespan"))
rounds = sorted(set(o["round"] for o in rows))
print("\n%-10s %-11s %8s %8s %10s %12s %10s" % ("variant", "mix", "makespan", "effic.", "migr/s",
      "mig/s glibc", "mk/glibc"))
for v in variants:
    for m in mixes:
        mk = [val(v, r, "nth-malleable", "workload_makespan", m) for r in rounds]
        ef = [val(v, r, "nth-malleable", "workload_efficiency", m) for r in rounds]
        mg = [val(v, r, "nth-malleable", "migrations_per_s", m) for r in rounds]
        gm = [val(v, r, "glibc", "migrations_per_s", m) for r in rounds]
        gk = [val(v, r, "glibc", "workload_makespan", m) for r in rounds]
        rat = [a / b for a, b in zip(mk, gk) if a and b]
        med = lambda x: statistics.median([y for y in x if y is not None]) if any(y is not None for y in x) else float("nan")
        print("%-10s %-11s %8.3f %8.3f %10.1f %12.1f %10.2f   (rounds: migr/s %s)" % (
            v, m, med(mk), med(ef), med(mg), med(gm), med(rat),
            " ".join("%.1f" % y if y is not None else "-" for y in mg)))
PY
