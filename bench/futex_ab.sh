#!/usr/bin/env bash
# futex_ab.sh -- two builds of nthlib side by side in one run (runs
# alternating, medians, ratio NEW/OLD; above 1 = NEW slower): the pthread
# shim on bench/shim-pingpong's raw-futex teams (futexteam: teams of 8
# crossing one raw-futex barrier, the stand-in chain's latency), its pipe
# ping-pong (wrapped blocking calls, no stall) and create/join, with
# NTH_VPS=1 and 2; then bench/micro-sync's cases (the blocking hand-off
# around a call that does not block, mutex/condvar fast paths, the raw
# read() stall rescue). Not part of `make check` (a noisy machine).
# usage: bench/futex_ab.sh OLD_BUILD NEW_BUILD [REPS]   (build trees after make)
set -uo pipefail
A=${1:?usage: futex_ab.sh OLD_BUILD NEW_BUILD [REPS]} B=${2:?usage: futex_ab.sh OLD_BUILD NEW_BUILD [REPS]}
reps=${3:-5}
tmp=$(mktemp -d /tmp/nth-futex-ab.XXXXXX); trap 'rm -rf "$tmp"' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
med() { sort -n | awk '{a[NR]=$1} END {print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
wall() { local t0 t1; t0=$(date +%s%N); timeout -s KILL 120 "$@" >/dev/null 2>&1 || { echo fail; return; }; t1=$(date +%s%N); echo $(( (t1-t0)/1000 )); }
pp=$B/bench/shim-pingpong        # NEW's program for both: OLD's may lack futexteam
printf '| %-28s | %-9s | %10s | %10s | %6s |\n' case VPs "OLD ms" "NEW ms" NEW/OLD
for vps in 1 2; do
  for w in "futexteam 20" "pipe 20000" "create 20000"; do
    : > $tmp/ab.a; : > $tmp/ab.b
    for ((i=0;i<reps;i++)); do
      wall env NTH_VPS=$vps LD_PRELOAD=$A/.libs/libnth-pthread.so $pp $w >> $tmp/ab.a
      wall env NTH_VPS=$vps LD_PRELOAD=$B/.libs/libnth-pthread.so $pp $w >> $tmp/ab.b
    done
    a=$(med < $tmp/ab.a) b=$(med < $tmp/ab.b)
    awk -v w="$w" -v v=$vps -v a=$a -v b=$b 'BEGIN{printf "| shim-pingpong %-14s | NTH_VPS=%d | %10.1f | %10.1f | %6.2f |\n", w, v, a/1000, b/1000, b/a}'
  done
done
# micro-sync: the no-block hand-off and the sync fast paths, alternating runs
printf '| %-37s | %10s | %10s | %6s |\n' "micro-sync case (its unit)" OLD NEW NEW/OLD
: > $tmp/ms.a; : > $tmp/ms.b
for ((i=0;i<3;i++)); do
  timeout -s KILL 300 $A/bench/micro-sync --json >> $tmp/ms.a 2>/dev/null
  timeout -s KILL 300 $B/bench/micro-sync --json >> $tmp/ms.b 2>/dev/null
done
for k in $(jq -r .bench $tmp/ms.b | sort -u); do
  a=$(jq -r "select(.bench==\"$k\" and .impl==\"nth\") | .value" $tmp/ms.a | med)
  b=$(jq -r "select(.bench==\"$k\" and .impl==\"nth\") | .value" $tmp/ms.b | med)
  [ -n "$a" ] && [ -n "$b" ] && awk -v k=$k -v a=$a -v b=$b 'BEGIN{printf "| micro-sync %-26s | %10.1f | %10.1f | %6.2f |\n", k, a, b, b/a}'
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
