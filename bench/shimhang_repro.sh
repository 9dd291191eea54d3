#!/bin/bash
# shimhang_repro.sh -- the notes' f14t repro as a count: nested command
# substitutions (4 bash levels) under nthrun --trace with a cpumgr daemon,
# N runs capped at 10 s each; prints ok / hung (killed at the cap) / other.
# usage: bench/shimhang_repro.sh BUILD_DIR N   (a daemon must be running on
# the segment named by $SEG, default /shimhang-dm:
#   BUILD_DIR/cpumgr/cpumgr --foreground --name /shimhang-dm &)
set -u
B=${1:?usage: shimhang_repro.sh BUILD_DIR N}; N=${2:-20}; SEG=${SEG:-/shimhang-dm}
d=$(mktemp -d "${TMPDIR:-/tmp}/shimhang.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
cmd='x=$(bash -c '\''y=$(bash -c "z=\$(bash -c \"echo deep\"); echo \$z"); echo $y'\''); echo $x'
hung=0; ok=0; other=0
for i in $(seq 1 "$N"); do
  rm -rf "$d/tr"; mkdir "$d/tr"
  out=$(NTH_CPUMGR=$SEG timeout -s KILL 10 "$B/pthread-shim/nthrun" --trace "$d/tr/n.json.gz" -- bash -c "$cmd" 2>/dev/null)
  rc=$?
  if [ $rc = 137 ]; then hung=$((hung+1))
  elif [ $rc = 0 ] && [ "$out" = deep ]; then ok=$((ok+1))
  else other=$((other+1)); echo "run $i: rc=$rc out=$out"; fi
done
echo "$N runs: ok=$ok hung=$hung other=$other"
