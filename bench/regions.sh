#!/bin/sh
# bench/regions.sh BINDIR [THREADS] [ROUNDS] -- parallel-region and barrier
# overhead of the glibc, OpenMP and libnth team backends (bench/kernels/
# regions.c), the builds run in alternation ROUNDS times (default 5), then
# the median of each and the ratios other/nth (> 1: libnth is faster).
# Rows: an empty region, a barrier, and for teams of 2+ a region's start
# (call to last member's start) and join (last member's end to return).
# REGIONS_REPS=R: repetitions per batch (regions.c's --reps, default 2000).
set -eu
bin=${1:?usage: regions.sh BINDIR [THREADS] [ROUNDS]}
threads=${2:-0}
rounds=${3:-5}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
builds="glibc nth"
[ -x "$bin/regions-openmp" ] && builds="glibc openmp nth"
r=0
while [ "$r" -lt "$rounds" ]; do
    for b in $builds; do
        timeout -s KILL 120 "$bin/regions-$b" --threads "$threads" --reps "${REGIONS_REPS:-2000}" \
            --json >>"$tmp"
    done
    r=$((r + 1))
done
python3 - "$tmp" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
med = {}
names = ("region_parallel", "region_barrier", "region_start", "region_join")
for b in names:
    for impl in sorted({r["impl"] for r in rows}):
        v = [r["value"] for r in rows if r["bench"] == b and r["impl"] == impl]
        if v:
            med[b, impl] = statistics.median(v)
threads = rows[0]["params"]["threads"]
print("team of %d, median of %d runs each (ns)" % (threads, len([r for r in rows if r["bench"] == "region_parallel"]) // len({r['impl'] for r in rows})))
print("%-16s %12s %12s %12s %10s %10s" % ("overhead", "glibc", "openmp", "nth", "glibc/nth", "openmp/nth"))
for b in names:
    if not any(k[0] == b for k in med):
        continue
    g, o, n = med.get((b, "glibc")), med.get((b, "openmp")), med.get((b, "nth-fixed"))
    f = lambda x: "%12.1f" % x if x else "%12s" % "-"
    q = lambda x: "%10.2f" % (x / n) if x and n else "%10s" % "-"
    print("%-16s %s %s %s %s %s" % (b, f(g), f(o), f(n), q(g), q(o)))
PY
