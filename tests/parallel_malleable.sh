#!/bin/sh
# Malleable regions under a real CPU manager daemon: two applications each
# ask for every CPU; while both run, the daemon gives each a share, and a
# region started with n = 0 gets exactly that many members; the one that
# runs longer sees the team grow back once the other has gone.
set -u
b=${top_builddir:-.}
probe=$b/tests/parallel/malleable_probe
cpumgr=$b/cpumgr/cpumgr
[ -x "$cpumgr" ] || { echo "no cpumgr daemon built: skip"; exit 77; }
cpus=$(nproc)
[ "$cpus" -ge 2 ] || { echo "one CPU: nothing to share, skip"; exit 77; }
seg=/nth-ptest-$$
out=$(mktemp -d)
"$cpumgr" run --foreground --name "$seg" >"$out/daemon" 2>&1 &
dpid=$!
trap 'kill $dpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$out"' EXIT
sleep 0.3
NTH_CPUMGR=$seg; export NTH_CPUMGR
"$probe" "$cpus" 2500 >"$out/a" 2>&1 &
apid=$!
sleep 0.3
"$probe" "$cpus" 1200 >"$out/b" 2>&1
brc=$?
wait $apid
arc=$?
echo "A (2.5 s): $(cat "$out/a")"
echo "B (1.2 s): $(cat "$out/b")"
fail=0
[ $arc -eq 0 ] && [ $brc -eq 0 ] || { echo "FAIL: a probe failed"; fail=1; }
sizes() { sed -n 's/.* sizes \([0-9,]*\) bad.*/\1/p' "$1" | tr ',' ' '; }
has_share() { for s in $(sizes "$1"); do [ "$s" -lt "$cpus" ] && return 0; done; return 1; }
has_all() { for s in $(sizes "$1"); do [ "$s" -eq "$cpus" ] && return 0; done; return 1; }
grep -q "^attached 1 " "$out/a" && grep -q "^attached 1 " "$out/b" || { echo "FAIL: not attached"; fail=1; }
# While both run, each gets a share of the CPUs, and its teams that size.
has_share "$out/a" || { echo "FAIL: A never ran a team smaller than $cpus"; fail=1; }
has_share "$out/b" || { echo "FAIL: B never ran a team smaller than $cpus"; fail=1; }
# A outlives B: its team grows back to every CPU.
has_all "$out/a" || { echo "FAIL: A's team never grew back to $cpus"; fail=1; }
exit $fail
