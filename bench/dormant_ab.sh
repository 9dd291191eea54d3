#!/usr/bin/env bash
# dormant_ab.sh -- the sleeping-applications repro of issue 5 (notes f13t),
# A/B over builds in one run, rounds interleaved.
#   bench/dormant_ab.sh ROUNDS NAME=BUILDDIR [NAME=BUILDDIR ...]
# Per build and round, under a fresh daemon on every CPU (quantum 100 ms):
#   sleepN  N (8, 16) apps each sleeping 1 s in 50 ms steps, started at
#           once: wall time until the last ends (s)
#   busy    a busy app asking for 2 CPUs (6 s of back-to-back regions)
#           beside 7 apps sleeping in 50 ms steps: the share of its region
#           entries at which it had both CPUs, and the CPU-seconds the
#           daemon billed the 7 sleepers meanwhile
# plus, once, the 8 sleepers with NTH_CPUMGR=off (no daemon).
# The app is BUILDDIR/tests/cpumgr/dormant_app, or this tree's
# tests/cpumgr/dormant_app.c compiled against BUILDDIR's libnth.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:?usage: dormant_ab.sh ROUNDS NAME=BUILDDIR...}; shift
tmp=$(mktemp -d /tmp/nth-dormab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
declare -A app cm
names=()
for spec in "$@"; do
  n=${spec%%=*}; b=$(cd "${spec#*=}" && pwd)
  names+=("$n"); cm[$n]=$b/cpumgr/cpumgr
  if [ -x "$b/tests/cpumgr/dormant_app" ]; then app[$n]=$b/tests/cpumgr/dormant_app
  else
    src=$(cd "$b" && cd "$(sed -n 's/^abs_top_srcdir = //p' Makefile)" && pwd)
    gcc -O2 -I"$src/include" "$top/tests/cpumgr/dormant_app.c" -L"$b/.libs" -lnth \
        -Wl,-rpath,"$b/.libs" -o "$tmp/app-$n" || exit 1
    app[$n]=$tmp/app-$n
  fi
done
now() { date +%s.%N; }
sleepers() {  # sleepers NAME N: wall seconds of N apps sleeping 1 s
  local s; s=$(now)
  for _ in $(seq "$2"); do timeout -s KILL 120 "${app[$1]}" sleep 50 20 >/dev/null & done; wait
  echo "$(now) - $s" | bc
}
echo "off: 8 sleepers, no daemon: $(NTH_CPUMGR=off sleepers "${names[0]}" 8) s"
printf "%-6s %-5s %8s %8s %12s %14s\n" round build sleep8_s sleep16_s busy_full busy_sleeper_cpu_s
for r in $(seq "$rounds"); do
  for n in "${names[@]}"; do
    seg=/nth-dormab-$$-$n
    "${cm[$n]}" --name "$seg" >/dev/null 2>&1 || { echo "daemon $n did not start"; exit 1; }
    export NTH_CPUMGR=$seg
    s8=$(sleepers "$n" 8); s16=$(sleepers "$n" 16)
    pids=()
    for _ in $(seq 7); do timeout -s KILL 60 "${app[$n]}" sleep 50 200 >/dev/null & pids+=($!); done
    sleep 0.5
    c0=$("${cm[$n]}" status --name "$seg" | awk 'NR > 2 {s += $NF} END {printf "%.3f", s}')
    b=$(timeout -s KILL 60 "${app[$n]}" busy 6 2)
    c1=$("${cm[$n]}" status --name "$seg" | awk 'NR > 2 {s += $NF} END {printf "%.3f", s}')
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait
    "${cm[$n]}" stop --name "$seg" >/dev/null
    e=$(echo "$b" | sed -n 's/^BUSY entries=\([0-9]*\) full=.*/\1/p')
    f=$(echo "$b" | sed -n 's/.*full=\([0-9]*\)$/\1/p')
    # The sleepers' bill over the busy run: all slots' growth less the
    # busy app's own (it holds at most 2 CPUs for 6 s; its slot is gone
    # from the second reading, so the sum covers the sleepers only).
    printf "%-6s %-5s %8.2f %8.2f %7s/%-5s %14s\n" "$r" "$n" "$s8" "$s16" "$f" "$e" \
      "$(echo "$c1 - $c0" | bc)"
  done
done
