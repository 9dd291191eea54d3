#!/usr/bin/env bash
# mutex_ab.sh -- two builds of libnth.so side by side in one run, on the
# mutex paths: bench/micro-sync --mutex (uncontended lock/unlock, condvar
# ping-pong on 1 and 2 VPs, 4 threads in a tight contended loop on 2 VPs),
# and under LD_PRELOAD=libnth-pthread.so bench/shim-pingpong mutex (2
# threads, lock/increment/unlock) and sysbench mutex on one mutex (4
# threads), when sysbench is installed. The build is chosen with
# LD_LIBRARY_PATH (micro-sync and the shim load libnth.so.0 dynamically;
# LD_LIBRARY_PATH comes before the shim's RUNPATH). Runs alternate A, B,
# A, B, ...; the table gives each side's median and B/A (above 1: B is
# slower, or for ns figures costs more). Not part of `make check`.
#
# usage: bench/mutex_ab.sh LIBDIR_A LIBDIR_B [REPS]   (from the build tree)
#   e.g. A = a copy of .libs/libnth.so* from before a change, B = .libs
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 LIBDIR_A LIBDIR_B [REPS]" >&2; exit 2; }
a=$1 b=$2 reps=${3:-7}
for d in "$a" "$b"; do
  [ -e "$d/libnth.so.0" ] || { echo "mutex_ab.sh: no libnth.so.0 in $d" >&2; exit 2; }
done
ms=$PWD/bench/.libs/micro-sync pp=$PWD/bench/shim-pingpong shim=$PWD/.libs/libnth-pthread.so
for f in "$ms" "$pp" "$shim"; do
  [ -e "$f" ] || { echo "mutex_ab.sh: no $f (run from the build tree after make)" >&2; exit 2; }
done
work=$(mktemp -d /tmp/nth-mutex-ab.XXXXXX)
trap 'rm -rf "$work"' EXIT

# wall_us LIBDIR cmd...: microseconds for one run under the shim, or "fail".
wall_us() {
  local lib=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  timeout -s KILL 120 env LD_LIBRARY_PATH="$lib" LD_PRELOAD="$shim" "$@" >/dev/null 2>&1 || { echo fail; return; }
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000 ))
}

sb=(sysbench mutex --threads=4 --mutex-num=1 --mutex-locks=200000 --mutex-loops=50 run)
for ((i = 0; i < reps; i++)); do
  for side in A B; do
    lib=$a; [ $side = B ] && lib=$b
    LD_LIBRARY_PATH=$lib timeout -s KILL 300 "$ms" --mutex --no-glibc --json |
      jq -r --arg s $side '"\(.bench)/\(.impl) \($s) \(.value) \(.unit)"' >>"$work/rows"
    echo "shim-pingpong_mutex_2thr/shim $side $(wall_us "$lib" "$pp" mutex 200000) us" >>"$work/rows"
    command -v sysbench >/dev/null &&
      echo "sysbench_mutex_4thr_1mutex/shim $side $(wall_us "$lib" "${sb[@]}") us" >>"$work/rows"
  done
done

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $reps runs per side, A=$a B=$b, load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| %-36s | %12s | %12s | %-12s | %6s |\n' case "A median" "B median" unit "B/A"
printf '|%s|%s|%s|%s|%s|\n' -------------------------------------- -------------- -------------- -------------- --------
grep -v ' fail ' "$work/rows" | awk '
  { k = $1; u[k] = $4; v[k, $2, ++n[k, $2]] = $3; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
  function med(k, s,    c, i, j, t, a) {
    c = n[k, s]; for (i = 1; i <= c; i++) a[i] = v[k, s, i]
    for (i = 2; i <= c; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2 }
  END { for (i = 1; i <= m; i++) { k = order[i]; x = med(k, "A"); y = med(k, "B")
          printf "| %-36s | %12.1f | %12.1f | %-12s | %6.2f |\n", k, x, y, u[k], (x > 0 ? y / x : 0) } }'
fails=$(grep -c ' fail ' "$work/rows")
[ "$fails" = 0 ] || echo "# $fails run(s) failed or ran past 120 s (left out of the medians)"
