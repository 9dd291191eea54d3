#!/bin/sh
# Malleable regions under a real CPU manager daemon: two applications each
# ask for every CPU; while both run, the daemon gives each a share, and a
# region started with n = 0 gets exactly that many members; the one that
# runs longer sees the team grow back once the other has gone.
# Ordered by events, not sleeps (0.3 s sleeps let B start before the
# daemon or A were up on a loaded machine): the daemon answers `status`,
# A says it is attached, then B runs until both have said they ran a team
# smaller than every CPU ("# shared"), then A runs until its team is whole
# again. Every wait is bounded. (B used to end 300 ms after its own share:
# at load 20-30 A ran no region in that window, "A never ran a team
# smaller than 2", though the daemon had shared.)
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
apid= bpid=
trap 'kill $dpid $apid $bpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$out"' EXIT
i=0
until "$cpumgr" status --name "$seg" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -le 600 ] || { echo "FAIL: daemon not ready in 60 s: $(cat "$out/daemon")"; exit 1; }
    kill -0 $dpid 2>/dev/null || { echo "FAIL: daemon exited at start: $(cat "$out/daemon")"; exit 1; }
    sleep 0.1
done
NTH_CPUMGR=$seg; export NTH_CPUMGR
"$probe" "$cpus" 300 "file:$out/stop" >"$out/a" 2>&1 &
apid=$!
i=0
until grep -q "^# attached" "$out/a"; do
    i=$((i + 1))
    [ $i -le 600 ] || { echo "FAIL: A not attached in 60 s: $(cat "$out/a")"; exit 1; }
    kill -0 $apid 2>/dev/null || { echo "FAIL: A ended before attaching: $(cat "$out/a")"; exit 1; }
    sleep 0.1
done
"$probe" "$cpus" 300 "until:$out/stopb" >"$out/b" 2>&1 &
bpid=$!
i=0
until grep -q "^# shared" "$out/a" && grep -q "^# shared" "$out/b"; do
    i=$((i + 1))
    [ $i -le 600 ] || { echo "no share for both in 60 s"; break; }
    kill -0 $bpid 2>/dev/null || { echo "B ended early"; break; }
    sleep 0.1
done
touch "$out/stopb"
wait $bpid
brc=$?
bpid=
touch "$out/stop"
wait $apid
arc=$?
apid=
echo "A: $(tr '\n' ' ' <"$out/a")"
echo "B: $(tr '\n' ' ' <"$out/b")"
fail=0
[ $arc -eq 0 ] && [ $brc -eq 0 ] || { echo "FAIL: a probe failed (A $arc, B $brc)"; fail=1; }
sizes() { sed -n 's/.* sizes \([0-9,]*\) bad.*/\1/p' "$1" | tr ',' ' '; }
has_share() { for s in $(sizes "$1"); do [ "$s" -lt "$cpus" ] && return 0; done; return 1; }
grep -q "^attached 1 " "$out/a" && grep -q "^attached 1 " "$out/b" || { echo "FAIL: not attached"; fail=1; }
# While both run, each gets a share of the CPUs, and its teams that size.
has_share "$out/a" || { echo "FAIL: A never ran a team smaller than $cpus"; fail=1; }
has_share "$out/b" || { echo "FAIL: B never ran a team smaller than $cpus"; fail=1; }
# A outlives B: its team grows back to every CPU (after B is gone, not
# before B came).
grep -q "^# full team after the stop file: 1" "$out/a" || { echo "FAIL: A's team never grew back to $cpus in 30 s after B ended"; fail=1; }
exit $fail
