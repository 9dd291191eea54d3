#!/bin/bash
# BLOCKED and OVERHEAD from the runtime's own call sites (states_demo, one VP):
#  - the reader, between nth_blocking_enter and _leave, shows one BLOCKED
#    slice on its own track, ended, then RUN at once (it never left its
#    kernel thread); while it lasts the worker runs (the VP's CPU and queue
#    were lent to a stand-in kernel thread), and each of those RUN slices is
#    also on VP 0's track (the stand-in records on the VP it stands in for),
#    which shows neither the reader nor an overlap meanwhile;
#  - main's nth_create calls show OVERHEAD nested in the user state "phase"
#    that main pushed around them (the slice after each OVERHEAD is "phase"
#    again, at the same time); its join shows OVERHEAD with the SYNCH inside;
#    an ending nano-thread's last slice is OVERHEAD (exit bookkeeping);
#  - every begin has its end (check_json), and the same run as Paraver names
#    both states in the .pcf and has state records of both.
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/states_demo
# NTH_STALL_US=0: the demo's one order needs the worker to run only once the
# reader has entered nth_blocking_enter. Under ThreadSanitizer the reader's
# pthread_create takes 10-20 ms in the kernel, and the stall watchdog's
# stand-in then runs the worker before the reader blocks (not what this
# test is about: tests/sync/test_watchdog covers that).
run() {   # run OUT [early]: the demo traced to OUT; sets rid
    NTH_VPS=1 NTH_STALL_US=0 timeout -s KILL 60 env NTH_TRACE="$1" "$DEMO" ${2:-} > "$1.out" 2> "$1.err" \
        || fail "states_demo ($1) exited $?: $(cat "$1.err")"
    rid=$(sed -n 's/^reader=\([0-9]*\) .*/\1/p' "$1.out")
    [ -n "$rid" ] || fail "states_demo printed no reader id: $(cat "$1.out")"
}
run s.json
check_json s.json
rt=$(tid_of s.json "reader #$rid"); [ -n "$rt" ] || fail "no track for reader #$rid"
mt=$(tid_of s.json "main #1"); [ -n "$mt" ] || fail "no track for main #1"

# The reader's track, in file order: its slices, with their state names and
# their ends in whole ns (ts and dur are exact to the ns).
slices='[.traceEvents[]|select(.tid==$t and .ph=="X")
         |{ph,ts,s:(.args.state // .name),b:(.ts*1000|round),e:((.ts*1000|round)+(.dur*1000|round))}]'
jq -c --argjson t "$rt" "$slices" s.json > reader.ev
nb=$(jq '[.[]|select(.ph=="X" and .s=="BLOCKED")]|length' reader.ev)
[ "$nb" = 1 ] || fail "reader shows $nb BLOCKED slices, expected 1: $(cat reader.ev)"
# the next slice is RUN, beginning when BLOCKED ends
jq -e '(map(.ph=="X" and .s=="BLOCKED")|index(true)) as $i
       | .[$i+1].s=="RUN" and .[$i+1].b==.[$i].e' reader.ev >/dev/null \
    || fail "BLOCKED is not followed by RUN at its end: $(cat reader.ev)"
b=$(jq '.[(map(.ph=="X" and .s=="BLOCKED")|index(true))].ts' reader.ev)
e=$(jq '.[(map(.ph=="X" and .s=="BLOCKED")|index(true))].e / 1000' reader.ev)
# the worker ran while the reader was blocked
wid=$(sed -n 's/.* worker=\([0-9]*\).*/\1/p' s.json.out)
wt=$(tid_of s.json "worker #$wid"); [ -n "$wt" ] || fail "no track for worker #$wid"
ran=$(jq --argjson t "$wt" --argjson b "$b" --argjson e "$e" \
    '[.traceEvents[]|select(.tid==$t and .ph=="X" and (.args.state // .name)=="RUN" and .ts>=$b and .ts<$e)]|length' s.json)
[ "$ran" -ge 1 ] || fail "the worker did not run during the reader's BLOCKED [$b, $e]"
# ... and each of those RUN slices begins a slice of the worker on VP 0's track
# (tid 1), the same instant; VP 0 shows no reader slice beginning inside [b, e).
jq -e --argjson t "$wt" --argjson w "$wid" --argjson b "$b" --argjson e "$e" '
    [.traceEvents[]|select(.tid==1 and .ph=="X" and .args.nano_thread==$w)|.ts] as $vp
    | [.traceEvents[]|select(.tid==$t and .ph=="X" and (.args.state // .name)=="RUN" and .ts>=$b and .ts<$e)|.ts]
    | all(.[]; . as $x | $vp|index($x) != null)' s.json >/dev/null \
    || fail "the worker's RUN slices during the reader's BLOCKED are not on VP 0's track: $(jq -c \
        '[.traceEvents[]|select(.tid==1 and .ph=="X")|{ts,name}]' s.json)"
jq -e --argjson r "$rid" --argjson b "$b" --argjson e "$e" \
    '[.traceEvents[]|select(.tid==1 and .ph=="X" and .args.nano_thread==$r and .ts>$b and .ts<$e)]|length==0' \
    s.json >/dev/null || fail "VP 0 shows the reader running inside its BLOCKED [$b, $e]"
grep -q "warning" s.json.err && fail "converter warnings: $(cat s.json.err)"

# main's track: every OVERHEAD that began inside "phase" returns to "phase".
jq -c --argjson t "$mt" "$slices" s.json > main.ev
jq -e '[range(0; length-2) as $i | select(.[$i].s=="phase" and .[$i+1].s=="OVERHEAD")
        | .[$i+2].s=="phase" and .[$i+2].b==.[$i+1].e] as $n
       | ($n|length) == 2 and all($n[]; .)' main.ev >/dev/null \
    || fail "main's two creates are not OVERHEAD nested in 'phase': $(cat main.ev)"
# the join of the reader: OVERHEAD, then SYNCH naming it, later OVERHEAD again, then RUN
jq -e --arg o "join reader #$rid" '. as $a
       | (map(.s=="SYNCH")|index(true)) as $j
       | $j != null and $a[$j-1].s=="OVERHEAD"
         and ($a[$j+1:]|map(select(.ph=="X"))|map(.s)|index("OVERHEAD")) != null' main.ev >/dev/null \
    || fail "main's join is not OVERHEAD around its SYNCH: $(cat main.ev)"
jq -e --argjson t "$mt" --arg o "join reader #$rid" \
    '[.traceEvents[]|select(.tid==$t and .ph=="X" and (.args.state // .name)=="SYNCH" and .args.object==$o)]|length==1' s.json \
    >/dev/null || fail "main's SYNCH does not name 'join reader #$rid'"
# the reader's last slice is its exit OVERHEAD
jq -e '[.[]|select(.ph=="X")]|last|.s=="OVERHEAD"' reader.ev >/dev/null \
    || fail "reader's last slice is not its exit OVERHEAD: $(cat reader.ev)"

# Paraver: both states named, both recorded on some thread.
run s.prv
grep -q '^4 *BLOCKED$' s.pcf || fail ".pcf does not name BLOCKED"
grep -q '^5 *OVERHEAD$' s.pcf || fail ".pcf does not name OVERHEAD"
for st in 4 5; do
    awk -F: -v s=$st '$1==1 && $8==s {n++} END {exit !(n > 0)}' s.prv || fail ".prv has no state-$st record"
done
# A state named before nth_init (the demo's "early" mode): the name reaches
# both formats, and the trace is still whole.
run e.json early
check_json e.json
jq -e '[.traceEvents[]|select(.ph=="X" and (.args.state // .name)=="prelude")]|length==1' e.json >/dev/null \
    || fail "the state named before nth_init is not 'prelude' in the JSON: $(jq -c \
        '[.traceEvents[]|select(.ph=="X")|(.args.state // .name)]|unique' e.json)"
run e.prv early
grep -q '^17 *prelude$' e.pcf || fail "the .pcf does not name state 17 'prelude': $(grep -n prelude e.pcf)"
exit 0
