#!/bin/sh
# Standalone kernel times: each build of LU and SOR alone at the given
# thread counts (default 1 2), median of R runs in one process (the programs' own kernel timer),
# and the ratio of every parallel build to the others at the same thread
# count. Builds are taken from what exists in BINDIR (lu-nth etc. later).
# usage: bench/standalone.sh [--json] [BINDIR [LU_SIZE [SOR_SIZE [RUNS [THREADS...]]]]]
# (STANDALONE_INTERLEAVE=1: builds in alternation, see below)
set -eu
json=0
[ "${1:-}" = --json ] && { json=1; shift; }
b=${1:-build/bench}; lu=${2:-1000}; sor=${3:-1500}; runs=${4:-5}
[ $# -gt 4 ] && { shift 4; threads="$*"; } || threads="1 2"
# Standalone means no CPU manager: a daemon on the default segment would
# otherwise share this machine's CPUs out to the libnth programs.
NTH_CPUMGR=off; export NTH_CPUMGR
command -v jq >/dev/null || { echo "standalone.sh: jq is needed" >&2; exit 1; }
[ -x "$b/lu-seq" ] || { echo "standalone.sh: no $b/lu-seq; build first" >&2; exit 1; }
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
ref=$("$b/sor-seq" --size "$sor" --json | jq -r .check.gtotal)
# STANDALONE_INTERLEAVE=1: the builds take turns, one timed run each per
# round (RUNS rounds), so a drift of the machine's load over the minutes of
# the run falls on every build alike instead of on whichever ran last.
rounds=1; per=$runs
[ "${STANDALONE_INTERLEAVE:-0}" = 1 ] && { rounds=$runs; per=1; }
r=0
while [ $r -lt $rounds ]; do
    for k in lu sor; do
        [ $k = lu ] && n=$lu || n=$sor
        extra=; [ $k = sor ] && extra="--ref $ref"
        # shellcheck disable=SC2086
        "$b/$k-seq" --size $n --runs "$per" --json $extra >>"$tmp"
        for impl in glibc openmp nth; do
            [ -x "$b/$k-$impl" ] || continue
            for t in $threads; do
                # shellcheck disable=SC2086
                "$b/$k-$impl" --size $n --threads $t --runs "$per" --json $extra >>"$tmp"
            done
        done
    done
    r=$((r + 1))
done
# One line per (kernel, impl, threads): the median over the runs.
med=$(jq -s -c 'group_by([.bench, .impl, .params.threads])[]
      | {bench: .[0].bench, impl: .[0].impl, unit: "s", params: .[0].params,
         value: (map(.value) | sort | if length % 2 == 1 then .[length/2|floor]
                 else (.[length/2 - 1] + .[length/2]) / 2 end),
         runs: length, ok: all(.check.ok)}' "$tmp")
if [ $json = 1 ]; then printf '%s\n' "$med"; exit 0; fi
printf '%s\n' "$med" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
val = {(r["bench"], r["impl"], r["params"]["threads"]): r["value"] for r in rows}
seq = {r["bench"]: r["value"] for r in rows if r["impl"] == "seq"}
print("%-6s %5s %-14s %7s %11s %8s %9s %10s %6s" % ("kernel", "size", "impl", "threads", "median (s)",
      "speedup", "vs glibc", "vs openmp", "valid"))
for r in rows:
    k, t = r["bench"], r["params"]["threads"]
    ratio = lambda impl: "%.2f" % (val[(k, impl, t)] / r["value"]) if (k, impl, t) in val else "-"
    print("%-6s %5d %-14s %7d %11.4f %8.2f %9s %10s %6s" % (k, r["params"]["size"], r["impl"], t, r["value"],
          seq[k] / r["value"], ratio("glibc"), ratio("openmp"), "ok" if r["ok"] else "WRONG"))
print("(median of %s runs each; ratios > 1 mean this row is faster)" % sys.argv[1])
' "$runs"
