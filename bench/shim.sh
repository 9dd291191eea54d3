#!/usr/bin/env bash
# shim.sh -- wall time of plain pthread programs natively and under
# LD_PRELOAD=libnth-pthread.so, in the same run, as ratios (shim / native;
# above 1 means the shim is slower). Workloads: bench/shim-pingpong
# (create/join loop, the same ending by pthread_exit, contended mutex, condvar ping-pong, pipe ping-pong
# with blocking read/write, a thread asleep in read() beside two computing
# ones, pthread_kill to a thread in sem_wait, two threads yielding, teams of 8
# that cross one raw-futex barrier each) and, when
# installed, pigz -p 4 / xz -T4 / zstd -T4 compressing ~8 MB of generated
# text. Each case runs REPS times per mode, the modes alternating; the
# table gives medians. Not part of `make check` (a noisy shared machine).
#
# usage: bench/shim.sh [REPS]    (from the build tree; `make bench-shim`)
# environment: NTH_SHIM_LIB (default .libs/libnth-pthread.so), NTH_VPS
set -uo pipefail
reps=${1:-5}
lib=${NTH_SHIM_LIB:-$PWD/.libs/libnth-pthread.so}
pp=$PWD/bench/shim-pingpong
[ -f "$lib" ] || { echo "no $lib (run from the build tree after make)"; exit 1; }
[ -x "$pp" ] || { echo "no $pp (make bench/shim-pingpong)"; exit 1; }
work=$(mktemp -d /tmp/nth-bench-shim.XXXXXX)
trap 'rm -rf "$work"' EXIT
awk 'BEGIN { srand(7); for (i = 0; i < 400000; i++)
       printf "%d %s %x\n", i, (rand() < 0.5 ? "alpha" : "beta"), int(rand() * 1e9) }' >"$work/data"

# wall MODE cmd...: seconds (ns resolution) for one run, output discarded;
# "fail" when the command fails or runs past 120 s.
wall() {
  local mode=$1; shift
  local -a pre=()
  [ "$mode" = shim ] && pre=(env LD_PRELOAD="$lib")
  local t0 t1
  t0=$(date +%s%N)
  timeout -s KILL 120 "${pre[@]}" "$@" >/dev/null 2>&1 || { echo fail; return; }
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000 ))     # microseconds
}
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

cases=("create/join x20000|$pp create 20000"
       "create/pthread_exit x20000|$pp exit 20000"
       "mutex 2 threads x200000|$pp mutex 200000"
       "condvar ping-pong x50000|$pp cond 50000"
       "pipe ping-pong x20000|$pp pipe 20000"
       "read() asleep, 2 computing|$pp readcpu 20000"
       "signal to sem_wait x200|$pp semsig 200"
       "yield 2 threads x100000|$pp yield 100000"
       "raw-futex team of 8 x20|$pp futexteam 20")
command -v pigz >/dev/null && cases+=("pigz -p 4 (8 MB)|pigz -p 4 -c $work/data")
command -v xz >/dev/null && cases+=("xz -T4 -1 (8 MB)|xz -T4 -1 --block-size=1MiB -c $work/data")
command -v zstd >/dev/null && cases+=("zstd -T4 (8 MB)|zstd -q -T4 -B1MiB -c $work/data")

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, NTH_VPS=${NTH_VPS:-default}, $reps runs per mode, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| %-28s | %12s | %12s | %11s |\n' workload "native ms" "shim ms" "shim/native"
printf '|%s|%s|%s|%s|\n' ------------------------------ -------------- -------------- -------------
for c in "${cases[@]}"; do
  name=${c%%|*}; cmd=${c#*|}
  : >"$work/n"; : >"$work/s"
  for ((i = 0; i < reps; i++)); do
    # shellcheck disable=SC2086
    wall native $cmd >>"$work/n"
    # shellcheck disable=SC2086
    wall shim $cmd >>"$work/s"
  done
  if grep -q fail "$work/n" "$work/s"; then
    printf '| %-28s | %12s | %12s | %11s |\n' "$name" "-" "-" "failed"; continue
  fi
  n=$(median <"$work/n"); s=$(median <"$work/s")
  awk -v name="$name" -v n="$n" -v s="$s" \
    'BEGIN { printf "| %-28s | %12.1f | %12.1f | %11.2f |\n", name, n / 1000, s / 1000, s / n }'
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
