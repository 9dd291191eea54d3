#!/bin/bash
# A real nthlib program traced by NTH_TRACE (the runtime's own call sites,
# not the simulator): tracks per VP and per nano-thread, every begin with its
# end on the same track, timestamps non-decreasing per track (check_json),
# trace ids unique (also across recycled descriptors), a join shows SYNCH naming the joined nano-thread, a
# nano-thread that moves between VPs keeps its slices on its own track, and
# the Paraver output of the same program is consistent with its .row.
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/rt_demo

# One VP: cooperative, so main's join is sure to find "sleeper" not yet run.
NTH_VPS=1 NTH_TRACE=one.json "$DEMO" return > one.out 2>one.err || fail "rt_demo (1 VP) exited $?: $(cat one.err)"
check_json one.json
main=$(tid_of one.json "main #1"); [ -n "$main" ] || fail "no track for main #1"
sl=$(jq -r '.traceEvents[]|select(.ph=="M" and .name=="thread_name" and (.args.name|test("^sleeper #[0-9]+$")))|.args.name' one.json)
[ -n "$sl" ] || fail "no track for the sleeper"
slid=${sl##*#}
n=$(jq --argjson t "$main" --arg o "join $sl" \
    '[.traceEvents[]|select(.ph=="X" and .tid==$t and (.args.state // .name)=="SYNCH" and .args.object==$o)]|length' one.json)
[ "$n" -ge 1 ] || fail "main's track has no SYNCH naming '$sl'"
# the sleeper ran while main waited: its RUN slice lies inside main's SYNCH
jq -e --argjson t "$main" --argjson s "$(tid_of one.json "$sl")" --arg o "join $sl" '
  [.traceEvents[]|select(.tid==$t and .ph!="M")] as $m
  | ($m|map(select(.ph=="X" and .args.object==$o))|.[0]) as $x
  | $x.ts as $b | ((($x.ts * 1000 | round) + ($x.dur * 1000 | round)) / 1000) as $e
  | [.traceEvents[]|select(.tid==$s and .ph=="X" and (.args.state // .name)=="RUN" and .ts>=$b and .ts<=$e)]|length > 0' one.json \
  >/dev/null || fail "the sleeper's RUN is not inside main's join SYNCH"

# Two VPs: the migrant is moved until it has run on both.
NTH_VPS=2 NTH_TRACE=two.json "$DEMO" return > two.out 2>two.err || fail "rt_demo (2 VPs) exited $?: $(cat two.err)"
check_json two.json
grep -q 'moved=1' two.out || fail "the migrant never changed VP: $(cat two.out)"
mid=$(sed -n 's/^migrant=\([0-9]*\) .*/\1/p' two.out)
for v in "VP 0" "VP 1"; do [ -n "$(tid_of two.json "$v")" ] || fail "no track for $v"; done
for t in "main #1" "migrant #$mid"; do [ -n "$(tid_of two.json "$t")" ] || fail "no track for $t"; done
# trace ids unique: one state track per id
jq -e '[.traceEvents[]|select(.ph=="M" and .name=="thread_name" and (.args.name|test("#[0-9]+$")))|.args.name|capture("#(?<id>[0-9]+)$").id]
       | length == (unique|length)' two.json >/dev/null || fail "a trace id names two tracks"
# the migrant ran on both VP tracks, and its states stayed on its own track
nvp=$(jq --argjson id "$mid" '[.traceEvents[]|select(.ph=="X" and .cat=="vp" and .args.nano_thread==$id)|.tid]|unique|length' two.json)
[ "$nvp" = 2 ] || fail "migrant #$mid shows on $nvp VP tracks, expected 2"
mt=$(tid_of two.json "migrant #$mid")
nrun=$(jq --argjson t "$mt" '[.traceEvents[]|select(.ph=="X" and .tid==$t and (.args.state // .name)=="RUN")]|length' two.json)
[ "$nrun" -ge 2 ] || fail "migrant's track has $nrun RUN slices"
jq -e --arg n "migrant #$mid" '[.traceEvents[]|select(.ph=="X" and .cat=="state" and (.tid<8192))]|length == 0' two.json \
    >/dev/null || fail "state slices on a VP track"
# the migrant blocked in nth_wait shows SYNCH, made ready by the waker READY
for st in SYNCH READY; do
    n=$(jq --argjson t "$mt" --arg s $st '[.traceEvents[]|select(.ph=="X" and .tid==$t and (.args.state // .name)==$s)]|length' two.json)
    [ "$n" -ge 1 ] || fail "migrant's track never shows $st"
done
# idle shows on the VP tracks; a ready-queue counter exists
[ "$(jq '[.traceEvents[]|select(.ph=="X" and .cat=="vp" and .name=="IDLE")]|length' two.json)" -ge 1 ] || fail "no IDLE slice"
[ "$(jq '[.traceEvents[]|select(.ph=="C" and (.name|test("^ready queue VP")))]|length' two.json)" -ge 1 ] || fail "no ready-queue counter"
# the user event recorded by the program's leaver is absent in 'return' mode; stats read the same run
"$TOOL" stats two.json.*.bin > stats.txt || fail "nth-trace stats failed"
grep -q "migrant" stats.txt || fail "stats do not name the migrant"

# Paraver of the same program: header counts, .row lists every record's thread.
NTH_VPS=2 NTH_TRACE=p.prv "$DEMO" return > p.out 2>p.err || fail "rt_demo (prv) exited $?: $(cat p.err)"
for f in p.prv p.pcf p.row; do [ -s $f ] || fail "$f missing"; done
hdr=$(head -n1 p.prv)
re='^#Paraver \([0-9]{2}/[0-9]{2}/[0-9]{2} at [0-9]{2}:[0-9]{2}\):([0-9]+)_ns:1\(([0-9]+)\):1:1\(([0-9]+):1\)$'
[[ $hdr =~ $re ]] || fail "bad header: $hdr"
dur=${BASH_REMATCH[1]} ncpu=${BASH_REMATCH[2]} nthr=${BASH_REMATCH[3]}
[ "$ncpu" = 2 ] || fail "header says $ncpu CPUs with NTH_VPS=2"
[ "$nthr" -ge 3 ] || fail "header says $nthr threads; main, sleeper, migrant ran"
[ "$(sed -n 's/^LEVEL THREAD SIZE //p' p.row)" = "$nthr" ] || fail ".row thread count"
[ "$(sed -n '/^LEVEL THREAD/,$p' p.row | grep -c ' #[0-9]* pid ')" = "$nthr" ] || fail ".row does not name every thread"
for n in "main #1" "sleeper #" "migrant #"; do grep -q "^$n" p.row || fail "'$n' not in .row"; done
awk -F: -v dur="$dur" -v ncpu="$ncpu" -v nthr="$nthr" '
    NR == 1 { next }
    $2 < 0 || $2 > ncpu { print "cpu out of range: " $0; bad = 1 }
    $5 < 1 || $5 > nthr { print "thread not in .row: " $0; bad = 1 }
    $6 + 0 < last { print "not sorted: " $0; bad = 1 }
    { last = $6 + 0 }
    $1 == 1 && ($7 + 0 > dur || $7 + 0 < $6 + 0) { print "state end: " $0; bad = 1 }
    END { exit bad }' p.prv || fail "bad Paraver records"

# Trace ids are never reused, though descriptors are: four nano-threads in
# a row (the runtime hands a joined one's descriptor to the next) make four
# tracks with four ids, each the id the nano-thread itself saw.
NTH_VPS=1 NTH_TRACE=rc.json "$DEMO" recycle > rc.out 2>rc.err || fail "rt_demo recycle exited $?: $(cat rc.err)"
check_json rc.json
grep -q '^recycled=1 ' rc.out || echo "note: no descriptor came back ($(cat rc.out)); ids checked all the same"
ids=$(sed -n 's/.* ids=//p' rc.out)
[ "$(tr , '\n' <<<"$ids" | sort -u | wc -l)" = 4 ] || fail "nth_id repeated: $ids"
got=$(jq -r '[.traceEvents[]|select(.ph=="M" and .name=="thread_name" and (.args.name|test("^cycler #[0-9]+$")))
             |.args.name|ltrimstr("cycler #")|tonumber]|sort|map(tostring)|join(",")' rc.json)
[ "$got" = "$(tr , '\n' <<<"$ids" | sort -n | paste -sd,)" ] || fail "cycler tracks $got, ids $ids"
exit 0
