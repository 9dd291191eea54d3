#!/bin/bash
# A deterministic schedule (trace_sim) traced to plain JSON: well-formed
# tracks, and what the schedule did is what the trace shows.
. "$top_srcdir/tests/trace/lib.sh"
# The checker itself must see an unclosed slice, a stray end and time going
# back (on the track, and so in the file).
echo '{"traceEvents":[{"ph":"B","ts":2,"pid":1,"tid":1,"name":"a"},{"ph":"E","ts":1,"pid":1,"tid":1},
 {"ph":"E","ts":3,"pid":1,"tid":2},{"ph":"B","ts":4,"pid":1,"tid":3,"name":"b"}]}' > bad.json
[ "$(jq -r -f "$CHECK" bad.json | wc -l)" = 4 ] || fail "check_json.jq misses defects: $(jq -r -f "$CHECK" bad.json)"
# ... and time going back in the file only, each track in order (two
# processes written one after the other).
echo '{"traceEvents":[{"ph":"M","pid":1,"tid":0,"name":"process_name","args":{"name":"p"}},
 {"ph":"B","ts":5,"pid":1,"tid":1,"name":"a"},{"ph":"E","ts":6,"pid":1,"tid":1},
 {"ph":"B","ts":2,"pid":2,"tid":1,"name":"b"},{"ph":"E","ts":7,"pid":2,"tid":1}]}' > unsorted.json
[ "$(jq -r -f "$CHECK" unsorted.json)" = "ts not sorted in the file: 1 times, first at timed event 2 (2 after 6)" ] ||
    fail "check_json.jq misses an unsorted file: $(jq -r -f "$CHECK" unsorted.json)"
# ... and complete (X) events: a child ending 1 ns after its parent, one
# without "dur"; a child ending with its parent, a zero-length slice at a
# parent's end and the next slice beginning at it are well formed.
echo '{"traceEvents":[{"ph":"X","ts":1.000,"dur":5.000,"pid":1,"tid":1,"name":"p"},
 {"ph":"X","ts":2.000,"dur":4.001,"pid":1,"tid":1,"name":"c"},{"ph":"X","ts":7.000,"pid":1,"tid":2,"name":"d"},
 {"ph":"X","ts":10.000,"dur":5.123,"pid":1,"tid":3,"name":"p"},{"ph":"X","ts":14.001,"dur":1.122,"pid":1,"tid":3,"name":"c"},
 {"ph":"X","ts":15.123,"dur":0.000,"pid":1,"tid":3,"name":"z"},{"ph":"X","ts":15.123,"dur":2,"pid":1,"tid":3,"name":"n"}]}' > badx.json
[ "$(jq -r -f "$CHECK" badx.json | grep -c 'X not nested on track 1/1: c\|X without a duration on track 1/2')" = 2 ] &&
    [ "$(jq -r -f "$CHECK" badx.json | wc -l)" = 2 ] || fail "check_json.jq misjudges X events: $(jq -r -f "$CHECK" badx.json)"
"$SIM" return t.json || fail "trace_sim exited $?"
check_json t.json
# every slice is one complete event: no B/E halves
[ "$(jq '[.traceEvents[]|select(.ph=="B" or .ph=="E")]|length' t.json)" = 0 ] &&
    [ "$(jq '[.traceEvents[]|select(.ph=="X")]|length' t.json)" -gt 10 ] || fail "slices are not X events"
main=$(tid_of t.json "main #1"); wb=$(tid_of t.json "worker-b #3")
vp0=$(tid_of t.json "VP 0"); vp1=$(tid_of t.json "VP 1")
[ -n "$main" ] && [ -n "$wb" ] && [ -n "$vp0" ] && [ -n "$vp1" ] || fail "missing track names"
q() { jq -r --argjson t "$1" "$2" t.json; }
# main blocked on the mutex: a SYNCH slice on its own track naming m1
[ "$(q "$main" '[.traceEvents[]|select(.tid==$t and .ph=="X" and (.args.state // .name)=="SYNCH")|.args.object]|join(",")')" = m1 ] \
    || fail "main's SYNCH slice does not name m1"
# main ran on VP 0, then on VP 1 (migrated), yet all its states stay on one track
[ "$(q "$vp0" '[.traceEvents[]|select(.tid==$t and .ph=="X" and .args.nano_thread==1)]|length')" = 1 ] || fail "main not on VP 0"
[ "$(q "$vp1" '[.traceEvents[]|select(.tid==$t and .ph=="X" and .args.nano_thread==1)]|length')" = 1 ] || fail "main not on VP 1"
[ "$(q "$main" '[.traceEvents[]|select(.tid==$t and .ph=="X")|.name]|join(",")')" = "READY,RUN,SYNCH m1,READY,RUN,READY" ] \
    || fail "main's states: $(q "$main" '[.traceEvents[]|select(.tid==$t and .ph=="X")|.name]|join(",")')"
# worker-b: user state nested by push/pop, user events named by registration
[ "$(q "$wb" '[.traceEvents[]|select(.tid==$t and .ph=="X")|.name]|join(",")')" = "READY,RUN,compute,RUN,SYNCH b1,READY,RUN" ] \
    || fail "worker-b's states: $(q "$wb" '[.traceEvents[]|select(.tid==$t and .ph=="X")|.name]|join(",")')"
[ "$(q "$wb" '[.traceEvents[]|select(.tid==$t and .ph=="i" and .name=="iteration")|(.args.value|tostring)+":"+(.args.value_name//"")]|join(",")')" = "7:seven,8:" ] \
    || fail "user events on worker-b"
# counters: cpumgr's assignment 2 then 1; VP 0's ready queue 2 then 1
[ "$(jq -r '[.traceEvents[]|select(.ph=="C" and .name=="CPUs assigned")|.args.cpus]|join(",")' t.json)" = "2,1" ] || fail "CPUs counter"
[ "$(jq -r '[.traceEvents[]|select(.ph=="C" and .name=="ready queue VP 0")|.args.length]|join(",")' t.json)" = "2,1" ] || fail "rq VP 0 counter"
# the parallel region: one slice on main's region track
rt=$(tid_of t.json "main #1 regions")
[ "$(q "$rt" '[.traceEvents[]|select(.tid==$t and .ph=="X")|.name]|join(",")')" = "parallel region 1" ] || fail "region slice"
# timestamps: microseconds with at most 3 decimals, relative to the trace start
grep -qE '"ts":[0-9]+\.[0-9]{3},' t.json || fail "ts not written with 3 decimals"
exit 0
