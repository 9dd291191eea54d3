#!/bin/bash
# Under a cpumgr daemon traced with --trace: the application's "CPUs
# assigned" counter follows its request (1, then 2), the daemon's trace
# shows the grants per application, and `nth-trace merge` puts both on one
# timeline.
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/rt_demo
CPUMGR=$top_builddir/cpumgr/cpumgr
[ "$(nproc)" -ge 2 ] || { echo "needs 2 CPUs"; exit 77; }
seg=/nth-trace-test-$$
"$CPUMGR" run --foreground --name $seg --cpus 0-1 --period 5 --trace d.bin 2>d.err &
dpid=$!
trap 'kill $dpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$work"' EXIT
for i in $(seq 100); do grep -q ready d.err && break; sleep 0.05; done
grep -q ready d.err || fail "daemon not ready: $(cat d.err)"
NTH_VPS=1 NTH_TRACE=app.bin "$DEMO" cpumgr $seg > app.out 2>app.err || fail "rt_demo cpumgr exited $?: $(cat app.err)"
kill -TERM $dpid; wait $dpid; st=$?
[ "$st" = 0 ] || fail "daemon exited $st: $(cat d.err)"
"$TOOL" convert app.bin -o app.json || fail "convert app.bin"
check_json app.json
vals=$(jq -c '[.traceEvents[]|select(.ph=="C" and .name=="CPUs assigned")|.args.cpus]' app.json)
jq -e 'index(1) != null and index(2) != null and (index(1) < (rindex(2)))' <<<"$vals" >/dev/null \
    || fail "CPUs assigned did not go 1 then 2: $vals"
"$TOOL" merge app.bin d.bin -o all.json || fail "merge failed"
check_json all.json
[ "$(jq '[.traceEvents[]|select(.ph=="M" and .name=="process_name")]|length' all.json)" = 2 ] || fail "merge: not two processes"
jq -e '[.traceEvents[]|select(.ph=="M" and .name=="process_name" and (.args.name|test("^cpumgr daemon")))]|length == 1' all.json \
    >/dev/null || fail "merge: no cpumgr daemon process"
apid=$(jq -r '.traceEvents[]|select(.ph=="M" and .name=="process_name" and (.args.name|test("^nthlib process")))|.pid' all.json)
g=$(jq -c --arg p "$apid" '[.traceEvents[]|select(.ph=="C" and (.name|test("^CPUs granted to .*\\(pid " + $p + "\\)$")))|.args.cpus]' all.json)
jq -e 'index(1) != null and index(2) != null' <<<"$g" >/dev/null || fail "daemon grants to pid $apid: $g"
exit 0
