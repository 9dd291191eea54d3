#!/usr/bin/env bash
# shim-io.sh -- the fast path of the shim's I/O wrappers (bench/shim/iofast.c:
# write to /dev/null, read from /dev/zero, write from a signal handler),
# natively, under this build's libnth-pthread.so and, when NTH_SHIM_BASE
# names another build of it (say main's), under that one, in one run: REPS
# rounds, the modes alternating within each, medians per case, ratios of
# medians. Not part of `make check` (a noisy shared machine).
#
# usage: bench/shim-io.sh [REPS [N]]   (from the build tree; `make bench-shim-io`)
# environment: NTH_SHIM_LIB (default .libs/libnth-pthread.so), NTH_SHIM_BASE,
#              NTH_VPS
set -uo pipefail
reps=${1:-9}
n=${2:-200000}
lib=${NTH_SHIM_LIB:-$PWD/.libs/libnth-pthread.so}
base=${NTH_SHIM_BASE:-}
prog=$PWD/bench/shim-iofast
[ -f "$lib" ] || { echo "shim-io.sh: no $lib (run from the build tree after make)"; exit 1; }
[ -x "$prog" ] || { echo "shim-io.sh: no $prog (make bench/shim-iofast)"; exit 1; }
[ -z "$base" ] || [ -f "$base" ] || { echo "shim-io.sh: NTH_SHIM_BASE=$base is no file"; exit 1; }
out=$(mktemp /tmp/nth-bench-shimio.XXXXXX)
trap 'rm -f "$out"' EXIT
modes=(native shim)
[ -n "$base" ] && modes+=(base)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, NTH_VPS=${NTH_VPS:-default}, $reps rounds of $n calls, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < reps; r++)); do
  for m in "${modes[@]}"; do
    case $m in
      native) timeout -s KILL 120 "$prog" native "$n" ;;
      shim) timeout -s KILL 120 env LD_PRELOAD="$lib" "$prog" shim "$n" ;;
      base) timeout -s KILL 120 env LD_PRELOAD="$base" "$prog" base "$n" ;;
    esac >>"$out" || echo "shim-io.sh: the $m run $((r + 1)) failed" >&2
  done
done
# medians per (bench, impl), then the table
awk -F'"' '{ b = $4; i = $8; split($11, v, /[:,]/); print b, i, v[2] }' "$out" | sort -k1,1 -k2,2 -k3,3g |
awk '{ k = $1 " " $2; a[k, ++c[k]] = $3; keys[k] = 1 }
     END { for (k in keys) { m = c[k]; med = (m % 2) ? a[k, (m + 1) / 2] : (a[k, m / 2] + a[k, m / 2 + 1]) / 2; print k, med } }' |
sort >"$out.med"
printf '%-15s %10s %10s %10s %11s %12s\n' case native shim base shim/base shim/native
for b in write_devnull read_devzero write_handler; do
  nat=$(awk -v b=$b '$1 == b && $2 == "native" {print $3}' "$out.med")
  sh=$(awk -v b=$b '$1 == b && $2 == "shim" {print $3}' "$out.med")
  ba=$(awk -v b=$b '$1 == b && $2 == "base" {print $3}' "$out.med")
  printf '%-15s %10s %10s %10s %11s %12s\n' "$b" "${nat:--}" "${sh:--}" "${ba:--}" \
    "$( [ -n "$ba" ] && awk -v x="$sh" -v y="$ba" 'BEGIN { printf "%.3f", x / y }' || echo -)" \
    "$(awk -v x="$sh" -v y="$nat" 'BEGIN { printf "%.2f", x / y }')"
done
echo "(ns per call, medians; shim/base above 1: this build's wrappers are slower)"
rm -f "$out.med"
