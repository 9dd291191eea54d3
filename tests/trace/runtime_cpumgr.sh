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
# Two CPUs of our affinity mask, not "0-1": a CI runner's cpuset may not
# hold CPU 0 or 1 (the daemon refuses CPUs it may not use).
two=$(taskset -cp $$ 2>/dev/null | sed 's/.*: //' | tr ',' '\n' |
      awk -F- '{ hi = NF > 1 ? $2 : $1; for (c = $1; c <= hi && n < 2; c++) { printf "%s%d", n ? "," : "", c; n++ } }')
[ -n "$two" ] || two=0-1
"$CPUMGR" run --foreground --name $seg --cpus "$two" --period 5 --trace d.bin 2>d.err &
dpid=$!
trap 'kill $dpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$work"' EXIT
# Up to 60 s: an ASan daemon took over 8 s to be ready at load 170.
for i in $(seq 1200); do grep -q ready d.err && break; kill -0 $dpid 2>/dev/null || break; sleep 0.05; done
grep -q ready d.err || fail "daemon not ready: $(cat d.err)"
# 2 VPs: with 1, the default request is 1 CPU (min(VPs, mask)), which the
# process reports as assigned from its claim on, before any grant: its
# wait for 1 then ends at once and the counter has no 1 to show.
NTH_VPS=2 NTH_TRACE=app.bin "$DEMO" cpumgr $seg > app.out 2>app.err &
wait_bounded $! "rt_demo cpumgr" || fail "rt_demo cpumgr exited $?: $(cat app.err)"
kill -TERM $dpid; wait_bounded $dpid "the daemon, after SIGTERM"; st=$?
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

# Paraver, the same two files: the .pcf names both CPU counters as event
# types; the application (appl 1) has records of both, going 1 then 2; the
# daemon (appl 2) says which pid each grant is for.
"$TOOL" merge app.bin d.bin -o all.prv || fail "merge to Paraver failed"
check_prv all.prv
pcf_type() { awk -v n="$1" '/^EVENT_TYPE/ {getline; t=$2; sub(/^[0-9]+ +[0-9]+ +/, ""); if ($0 == n) print t}' all.pcf; }
tcpus=$(pcf_type "CPUs assigned"); [ -n "$tcpus" ] || fail ".pcf has no 'CPUs assigned' event type: $(cat all.pcf)"
tgrant=$(pcf_type "CPUs granted by cpumgr"); [ -n "$tgrant" ] || fail ".pcf has no 'CPUs granted by cpumgr' event type"
tpid=$(pcf_type "cpumgr grant to application (pid)"); [ -n "$tpid" ] || fail ".pcf has no grant pid event type"
series() {   # series APPL TYPE: the values of TYPE in APPL's records, in time order, changes only
    awk -F: -v a="$1" -v t="$2" '$1==2 && $3==a { for (i = 7; i < NF; i += 2) if ($i == t && $(i+1) != last) { printf "%s ", $(i+1); last = $(i+1) } }' all.prv
}
for t in $tcpus $tgrant; do
    v=$(series 1 $t)
    [[ " $v" =~ \ 1\ .*2\  ]] || fail "application's event type $t does not go 1 then 2 in all.prv: '$v'"
done
apppid=$(sed -n 's/^main #1 pid \([0-9]*\)$/\1/p' all.row)
[ -n "$apppid" ] || fail "all.row has no main #1: $(cat all.row)"
[ "$(series 2 $tpid)" = "$apppid " ] || fail "daemon's grants are not all for pid $apppid: '$(series 2 $tpid)'"
[[ " $(series 2 $tgrant)" =~ \ 1\ .*2\  ]] || fail "daemon's grants do not go 1 then 2: '$(series 2 $tgrant)'"
grep -q "^$apppid " all.pcf || fail ".pcf does not name pid $apppid among the grant values"

# nth-trace stats on the daemon's file: no empty nano-thread tables, one line
# saying what it holds, then the time with 1 and with 2 CPUs of the
# application and its number of changes; on both files, a section each.
"$TOOL" stats d.bin > ds.txt || fail "stats d.bin status $?"
grep -q '^no nano-thread states: a cpumgr daemon trace holds its CPU grants, 1 application, ' ds.txt \
    || fail "stats d.bin does not say what it holds: $(cat ds.txt)"
grep -qE '^nano-thread|^VP |^longest' ds.txt && fail "stats d.bin prints nano-thread tables: $(cat ds.txt)"
for k in 1 2; do
    grep -qE "\(pid $apppid\) +$k +[0-9]+\.[0-9]{3} +[0-9.]+%$" ds.txt || fail "stats d.bin: no time with $k CPUs: $(cat ds.txt)"
done
awk -v p="(pid $apppid)" '/^application +changes +mean CPUs/ {t=1; next}
    t && index($0, p) && $(NF-3)+0 >= 2 && $(NF-2)+0 > 0 && $(NF-2)+0 <= 2 {ok=1} END {exit !ok}' ds.txt \
    || fail "stats d.bin: no changes / mean CPUs line: $(cat ds.txt)"
"$TOOL" stats app.bin d.bin > both.txt || fail "stats app.bin d.bin status $?"
[ "$(grep -c '^== .*\.bin ==$' both.txt)" = 2 ] || fail "stats of two files: not two sections: $(cat both.txt)"
grep -q '^main #1 ' both.txt || fail "stats app.bin d.bin: no nano-thread table for the application"
grep -q '^CPUs assigned by cpumgr$' both.txt || fail "stats app.bin: no CPUs assigned table: $(cat both.txt)"
grep -qE "^this process \(pid $apppid\) +2 +[0-9]+\.[0-9]{3} " both.txt || fail "stats app.bin: no time with 2 CPUs"
exit 0
