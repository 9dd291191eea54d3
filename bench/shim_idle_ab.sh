#!/usr/bin/env bash
# shim_idle_ab.sh -- issue 5 "shim-idle-not-dormant": CPU-seconds the
# cpumgr daemon bills an unmodified program under the pthread shim that only
# waits, per second of waiting; A/B over builds in one run, rounds
# interleaved.
#   bench/shim_idle_ab.sh ROUNDS NAME=BUILDDIR [NAME=BUILDDIR ...]
# Per build, round and program: a fresh daemon on CPUs 0-1 (quantum
# 100 ms), the program alone under it (LD_PRELOAD=BUILDDIR's
# libnth-pthread.so), 1 s to settle, then the daemon's CPU-SECONDS for its
# slot over SECS (default 3) s, divided by the seconds. Programs
# (tests/cpumgr/idle_shim_app, a plain POSIX program, of the first build that has it):
#   read   read() on a pipe nobody writes
#   cond   pthread_cond_timedwait, 60 s
#   wait   waitpid for a plain child (sh polling for a file)
# Prints one table line per build and program: mean and range of
# CPU-s billed per second over the rounds.
set -uo pipefail
rounds=${1:?usage: shim_idle_ab.sh ROUNDS NAME=BUILDDIR...}; shift
secs=${SECS:-3}
tmp=$(mktemp -d /tmp/nth-shimidle.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
declare -A cm shim
names=()
for spec in "$@"; do
  n=${spec%%=*}; b=$(cd "${spec#*=}" && pwd)
  names+=("$n"); cm[$n]=$b/cpumgr/cpumgr; shim[$n]=$b/.libs/libnth-pthread.so
  [ -x "${cm[$n]}" ] && [ -f "${shim[$n]}" ] || { echo "no cpumgr or shim in $b" >&2; exit 1; }
  [ -z "${app:-}" ] && [ -x "$b/tests/cpumgr/idle_shim_app" ] && app=$b/tests/cpumgr/idle_shim_app
done
[ -n "${app:-}" ] || { echo "no build has tests/cpumgr/idle_shim_app (make check builds it)" >&2; exit 1; }
modes="read cond wait"
for r in $(seq "$rounds"); do
  for m in $modes; do
    for n in "${names[@]}"; do
      seg=/nth-shimidle-$$-$r
      "${cm[$n]}" --name "$seg" --cpus 0,1 --quantum 100 >/dev/null 2>&1 || { echo "daemon failed" >&2; exit 1; }
      rm -f "$tmp/go"
      case $m in
        read) (for _ in $(seq 600); do [ -e "$tmp/go" ] && break; sleep 0.1; done; echo go) |
                NTH_CPUMGR=$seg LD_PRELOAD=${shim[$n]} "$app" read >/dev/null & p=$! ;;
        cond) NTH_CPUMGR=$seg LD_PRELOAD=${shim[$n]} "$app" cond 60 >/dev/null & p=$! ;;
        wait) NTH_CPUMGR=$seg LD_PRELOAD=${shim[$n]} "$app" wait "$tmp/go" >/dev/null & p=$! ;;
      esac
      pids=("$p")
      sleep 1
      c0=$("${cm[$n]}" status --name "$seg" | awk -v p="$p" 'NR > 2 && $3 == p { print $NF }')
      sleep "$secs"
      c1=$("${cm[$n]}" status --name "$seg" | awk -v p="$p" 'NR > 2 && $3 == p { print $NF }')
      touch "$tmp/go"; kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null
      "${cm[$n]}" stop --name "$seg" >/dev/null 2>&1; rm -f "/dev/shm$seg"
      echo "$n $m $(awk -v a="${c0:-nan}" -v b="${c1:-nan}" -v s="$secs" 'BEGIN { printf "%.3f", (b - a) / s }')" >>"$tmp/res"
    done
  done
done
printf "%-10s %-6s %10s %18s\n" build prog "CPU-s/s" "range (rounds)"
for n in "${names[@]}"; do
  for m in $modes; do
    awk -v n="$n" -v m="$m" '$1 == n && $2 == m { s += $3; k++; if (k == 1 || $3 < lo) lo = $3; if (k == 1 || $3 > hi) hi = $3 }
         END { printf "%-10s %-6s %10.3f %11.3f-%.3f (%d)\n", n, m, s / k, lo, hi, k }' "$tmp/res"
  done
done
