#!/bin/bash
# A stand-in kernel thread on loan to VP 0 (trace_sim loan): the nano-thread
# it runs shows on VP 0's track while the VP's own kernel thread sits in the
# kernel; the blocked one is BLOCKED on its own track, not on VP 0's; when it
# comes back VP 0's track is its own again, and the stand-in's late switch
# (the worker reaching its scheduling point after that) leaves it alone.
# Every begin has its end, timestamps non-decreasing (check_json).
. "$top_srcdir/tests/trace/lib.sh"
"$SIM" loan l.json 2>l.err || fail "trace_sim loan exited $?: $(cat l.err)"
check_json l.json
grep -q warning l.err && fail "converter warnings: $(cat l.err)"
vp=$(jq -c '[.traceEvents[]|select(.tid==1 and .ph=="X")|.name]' l.json)
want='["IDLE","main #1","reader #2","IDLE","worker #3","IDLE","worker #3","reader #2","worker #3","main #1"]'
[ "$vp" = "$want" ] || fail "VP 0's track: $vp, expected $want"
rt=$(tid_of l.json "reader #2")
jq -e --argjson t "$rt" '[.traceEvents[]|select(.tid==$t and .ph=="X")|(.args.state // .name)] == ["READY","RUN","BLOCKED","RUN"]' \
    l.json >/dev/null || fail "reader's states: $(jq -c --argjson t "$rt" '[.traceEvents[]|select(.tid==$t and .ph=="X")|(.args.state // .name)]' l.json)"
# the worker ran (its own track) exactly when VP 0's track says so
wt=$(tid_of l.json "worker #3")
jq -e --argjson t "$wt" '[.traceEvents[]|select(.tid==$t and .ph=="X" and (.args.state // .name)=="RUN")|.ts] as $run
    | [.traceEvents[]|select(.tid==1 and .ph=="X" and .name=="worker #3")|.ts] == $run' l.json >/dev/null \
    || fail "worker's RUN slices and VP 0's worker slices differ"
# Paraver: the worker's records are on CPU 1 (VP 0), the .row knows 3 threads
"$SIM" loan l.prv 2>/dev/null || fail "trace_sim loan (prv) exited $?"
awk -F: 'NR > 1 && $1 == 1 && $5 == 3 && $8 == 1 && $2 != 1 { bad = 1 } END { exit bad }' l.prv \
    || fail "worker's RUN state records not on VP 0's CPU"
exit 0
