#!/bin/bash
# The "CPUs assigned" counter of an application whose grant came before its
# trace started (the cpumgr API called before nth_init(): fresh13 trial,
# 5 of 6 runs had an application with no counter, or only a later change).
# A daemon on two CPUs and two clients that each request 1 CPU and wait for
# it before nth_init(): in each of 3 runs, each application's trace starts
# its counter with 1 -- what it was assigned when its trace began, and a
# grant the daemon's own trace shows for its pid -- and `nth-trace stats`
# gives it a "CPUs assigned by cpumgr" section with time on 1 CPU. Then a
# client bound to its grant during nth_init() (the daemon's enforcement)
# still runs on both CPUs of its mask.
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/rt_demo
CPUMGR=$top_builddir/cpumgr/cpumgr
[ "$(nproc)" -ge 2 ] || { echo "needs 2 CPUs"; exit 77; }
seg=/nth-trace-early-$$
# Two CPUs of our affinity mask (runtime_cpumgr.sh: a CI cpuset may lack 0-1).
two=$(taskset -cp $$ 2>/dev/null | sed 's/.*: //' | tr ',' '\n' |
      awk -F- '{ hi = NF > 1 ? $2 : $1; for (c = $1; c <= hi && n < 2; c++) { printf "%s%d", n ? "," : "", c; n++ } }')
[ -n "$two" ] || two=0-1
"$CPUMGR" run --foreground --name $seg --cpus "$two" --period 5 --trace d.bin 2>d.err &
dpid=$!
trap 'kill $dpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$work"' EXIT
for i in $(seq 1200); do grep -q ready d.err && break; kill -0 $dpid 2>/dev/null || break; sleep 0.05; done
grep -q ready d.err || fail "daemon not ready: $(cat d.err)"
for run in 1 2 3; do
    NTH_VPS=2 NTH_TRACE=a$run.bin "$DEMO" cpumgr-early $seg >a$run.out 2>a$run.err &
    pa=$!
    NTH_VPS=2 NTH_TRACE=b$run.bin "$DEMO" cpumgr-early $seg >b$run.out 2>b$run.err &
    pb=$!
    # Bounded (wait_bounded.sh): a hang fails with the client's stacks.
    wait_bounded $pa "run $run: client a" || fail "run $run: client a exited $?: $(cat a$run.err)"
    wait_bounded $pb "run $run: client b" || fail "run $run: client b exited $?: $(cat b$run.err)"
done
# The daemon's --enforce (on by default, 2 ms) may bind every thread of an
# early client to its grant of the moment while nth_init() runs -- it had
# been granted 2 CPUs, then 1, and no runtime followed yet. The runtime
# took that binding for its mask: a topology of 1 CPU ("NTH_VPS=2 is more
# than the 1 CPU this process may use") while the daemon went on granting
# from both, and a later grant of the other CPU alone (after a dormancy)
# left both VPs disabled for good: the ASan suite's hang. The test hook
# binds every thread so just after nth_init()'s rebind; the runtime must
# still see the 2 CPUs of its mask.
NTH_TEST_ENFORCE_AT_INIT=1 NTH_VPS=2 NTH_TRACE=e.bin "$DEMO" cpumgr-early $seg >e.out 2>e.err &
wait_bounded $! "enforced client" || fail "enforced client exited $?: $(cat e.err)"
! grep -q 'more than the' e.err || fail "an enforcement during nth_init() narrowed the runtime to 1 CPU: $(cat e.err)"
kill -TERM $dpid; wait_bounded $dpid "the daemon, after SIGTERM"; st=$?
[ "$st" = 0 ] || fail "daemon exited $st: $(cat d.err)"
"$TOOL" convert d.bin -o d.json || fail "convert d.bin"
for run in 1 2 3; do
    for c in a b; do
        f=$c$run
        grep -qx 'before 1' $f.out && grep -qx 'assigned 1' $f.out \
            || fail "$f: not on 1 CPU from before nth_init() to its end: $(cat $f.out $f.err)"
        "$TOOL" convert $f.bin -o $f.json || fail "convert $f.bin"
        check_json $f.json
        vals=$(jq -c '[.traceEvents[]|select(.ph=="C" and .name=="CPUs assigned")|.args.cpus]' $f.json)
        [ "$(jq '.[0]' <<<"$vals")" = 1 ] || fail "$f: CPUs assigned starts $vals, expected 1 first (granted before the trace began)"
        pid=$(jq -r '[.traceEvents[]|select(.ph=="M" and .name=="process_name")|.pid][0]' $f.json)
        g=$(jq -c --arg p "$pid" '[.traceEvents[]|select(.ph=="C" and (.name|test("^CPUs granted to .*\\(pid " + $p + "\\)$")))|.args.cpus]' d.json)
        # (The daemon may have granted it 2 first, before its request of 1
        # reached the segment: the grant it ran under is among them.)
        jq -e --argjson v "$(jq '.[0]' <<<"$vals")" 'index($v) != null' <<<"$g" >/dev/null \
            || fail "$f (pid $pid): first CPUs assigned $vals, never granted by the daemon: $g"
        "$TOOL" stats $f.bin >$f.stats || fail "stats $f.bin status $?"
        grep -q '^CPUs assigned by cpumgr$' $f.stats || fail "$f: stats has no CPUs assigned section: $(cat $f.stats)"
        grep -qE "^this process \(pid [0-9]+\) +1 +[0-9]+\.[0-9]{3} " $f.stats || fail "$f: stats has no time on 1 CPU: $(cat $f.stats)"
    done
done
exit 0
