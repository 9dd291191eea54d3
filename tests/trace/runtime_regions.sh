#!/bin/bash
# Parallel regions recorded by the runtime (sync_demo regions, one VP): a
# region of 3 shows one slice per member on that member's regions track,
# all with the same region number, members 0, 1, 2 and team 3 in the args;
# member 1's nested region (serialised, a team of one) is a second slice
# inside its first on the same track. Members waiting at the team barrier
# show SYNCH naming it. Well formed (check_json); Paraver names the
# region, member and team events.
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/sync_demo
NTH_VPS=1 timeout -s KILL 60 env NTH_TRACE=r.json "$DEMO" regions > r.out 2> r.err \
    || fail "sync_demo regions exited $?: $(cat r.err)"
check_json r.json
# The region slices, in file order: {tid, ph, ts, region, member, team}.
jq -c '[.traceEvents[]|select(.cat=="region")
        |{tid, ph, ts, end:((.ts * 1000 | round) + (.dur * 1000 | round)), r:.args.region, m:.args.member, n:.args.team}]' r.json > reg.ev
jq -e '[.[]|select(.ph=="X" and .n==3)] as $o
       | ($o|length)==3 and ([$o[].m]|sort)==[0,1,2] and ([$o[].r]|unique|length)==1
         and ([$o[].tid]|unique|length)==3' reg.ev >/dev/null \
    || fail "not one region slice per member 0, 1, 2 of a team of 3: $(cat reg.ev)"
# member 1's track: the outer slice, then the nested one (team 1, member 0,
# another region) beginning and ending inside it
jq -e '([.[]|select(.ph=="X" and .n==3 and .m==1)][0]) as $o
       | [.[]|select(.tid==$o.tid)] as $t
       | ($t|length)==2 and $t[0].ph=="X" and $t[1].ph=="X" and $t[1].n==1 and $t[1].m==0
         and $t[1].r!=$o.r and $t[1].ts>=$t[0].ts and $t[1].end<=$t[0].end' \
    reg.ev >/dev/null || fail "member 1's nested region is not inside its outer one: $(cat reg.ev)"
n=$(jq '[.traceEvents[]|select(.ph=="X" and (.args.state // .name)=="SYNCH" and .args.kind=="team barrier")]|length' r.json)
[ "$n" -ge 1 ] || fail "no member shows SYNCH on the team barrier"

NTH_VPS=1 timeout -s KILL 60 env NTH_TRACE=r.prv "$DEMO" regions > r.out 2> r.err \
    || fail "sync_demo regions (prv) exited $?: $(cat r.err)"
for ty in 60000002 60000005 60000006; do
    grep -q "^0 *$ty " r.pcf || fail ".pcf does not name event type $ty"
done
awk -F: '$1==2 {for (i=7; i<NF; i+=2) if ($i==60000006 && $(i+1)==3 && !($5 in th)) {th[$5]=1; f++}}
         END {exit !(f==3)}' r.prv || fail ".prv: not 3 threads with a team-size event of 3"
# A member's wait for the next region (its switch record carries it, no
# object) still shows its kind: the object-kind event (60000004) = 11, team idle.
awk -F: '$1==2 {for (i=7; i<NF; i+=2) if ($i==60000004 && $(i+1)==11) f=1} END {exit !f}' r.prv ||
    fail ".prv: no object-kind event 'team idle' (60000004 = 11)"
exit 0
